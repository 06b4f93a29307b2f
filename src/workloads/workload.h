// The interface every workload implements, and what it gets from the machine it runs on.
// A workload creates its tasks, timers or interrupt sources when started and reports its own
// metrics; a finite one (a list of modules to load) tells its Completion when it is done, so a
// run can end when all finite work has ended.
#pragma once

#include "arch/simd.h"
#include "crypto/hash_costs.h"
#include "crypto/shash.h"
#include "engine/simulation.h"
#include "kernel/cpu.h"
#include "results/results.h"

#include <cstdint>
#include <string>
#include <vector>

namespace kdsim::workloads {

using engine::Cycles;
using engine::Tick;

// Counts unfinished finite workloads; stops the simulation when the last one ends.
class Completion {
public:
    explicit Completion(engine::Simulation& sim) : sim_(sim) {}
    void add() { ++remaining_; }
    void done() {
        if (remaining_ > 0 && --remaining_ == 0) sim_.stop();
    }
    int remaining() const { return remaining_; }

private:
    engine::Simulation& sim_;
    int remaining_ = 0;
};

struct Env {
    engine::Simulation& sim;
    kernel::Cpu& cpu;
    arch::SimdUnit& simd;
    const crypto::HashCostTable& hash;
    crypto::Chunking chunking;
    bool functional = false;
    std::string machine;
    Completion& completion;
    crypto::HashCache* cache = nullptr; // this CPU's cache state for hash code and tables
};

class Workload {
public:
    explicit Workload(Env env) : env_(env) {}
    virtual ~Workload() = default;
    Workload(const Workload&) = delete;
    Workload& operator=(const Workload&) = delete;

    virtual void start() = 0;
    virtual bool finite() const = 0;
    virtual results::WorkloadResult result() const = 0;
    // Registers the counters of model objects the workload owns (a cryptd of its own) under
    // its machine's scope, once, after start(); most own none.
    virtual void register_stats(const stats::Scope& machine) const { (void)machine; }
    // At the end of the run, before the results are collected: checks the workload's own
    // end-to-end invariants and reports any violation as a finding; most have none.
    virtual void check_at_end() {}
    // The cumulative amounts behind the workload's main rate metrics, now: for each, the metric's
    // key and the amount so far in the metric's unit times seconds (receiver_mbit_s: the megabits
    // read), so that its increase over an interval divided by the interval's length is the rate
    // in that interval (kdsim run --precision). Most workloads have none.
    struct Progress {
        std::string key;
        double amount = 0;
    };
    virtual void progress(std::vector<Progress>& out) const { (void)out; }

protected:
    results::WorkloadResult base_result(const std::string& name, const std::string& kind) const {
        results::WorkloadResult r;
        r.name = name;
        r.kind = kind;
        r.machine = env_.machine;
        r.cpu = env_.cpu.id();
        return r;
    }
    // The process of a finite workload (SCHED_NORMAL, starting in user mode): the run waits for
    // the workload (Completion) until it calls env_.completion.done().
    void start_finite_process(std::string comm, engine::Task<> body) {
        env_.completion.add();
        user_task(std::move(comm), kernel::SchedPolicy::NORMAL, 0, std::move(body));
    }
    // A process of the workload on its CPU, starting in user mode.
    kernel::TaskStruct& user_task(std::string comm, kernel::SchedPolicy policy, int rt_priority, engine::Task<> body) {
        kernel::TaskStruct& t = env_.cpu.create_task(std::move(comm), policy, rt_priority, false, std::move(body));
        t.in_user = true;
        return t;
    }
    static void add(results::WorkloadResult& r, std::string key, double value, std::string unit) {
        r.metrics.push_back(results::Metric{std::move(key), value, std::move(unit)});
    }
    Env env_;
};

// Nearest-rank percentile of a sample set (sorted copy); 0 for an empty set.
engine::Tick percentile(std::vector<engine::Tick> samples, double p);

} // namespace kdsim::workloads
