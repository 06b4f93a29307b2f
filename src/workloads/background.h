// Workloads that run alongside the work under study:
//  - SimdUser: a user task computing with SIMD registers without pause, so the kernel always
//    has live user state to save; it checks at every step that its registers still hold its
//    data (what a user program would notice as corrupted floating-point results).
//  - Cyclictest: rt-tests' cyclictest, one thread: SCHED_FIFO, clock_nanosleep(TIMER_ABSTIME)
//    to each period boundary; the latency is the wake-up time seen back in user space minus
//    the programmed expiry.
//  - SoftirqLoad: a device whose interrupt schedules its NAPI instance on the CPU's softnet
//    (net/napi.h); net_rx_action polls it, and the poll takes up to a weight's worth of the
//    packets that arrived and hashes each packet-sized buffer (an IPsec-like HMAC) through the
//    arch glue, so it uses SIMD when may_use_simd() allows and falls back otherwise. Arrivals
//    are periodic with an optional uniform random jitter (the run's only randomness besides
//    sampled inputs). With `cryptd`, the poll instead hands each packet to cryptd
//    (crypto/cryptd.h: per-CPU queue, one request per work item run by the CPU's kworker), so
//    the hashing runs in task context where the preemption model and the per-bracket byte limit
//    decide latency. This load charges no cryptd or workqueue overhead figures (they are
//    [tunnel] figures, which the profiles it runs on do not have), as before cryptd was shared.
#pragma once

#include "crypto/cryptd.h"
#include "kernel/sched.h"
#include "net/napi.h"
#include "workloads/config.h"
#include "crypto/digest.h"
#include "workloads/workload.h"

namespace kdsim::workloads {

class SimdUser final : public Workload {
public:
    SimdUser(Env env, SimdUserWorkload cfg) : Workload(env), cfg_(std::move(cfg)) {}
    void start() override;
    bool finite() const override { return false; }
    results::WorkloadResult result() const override;

private:
    static engine::Task<> body(SimdUser& w);
    SimdUserWorkload cfg_;
    kernel::TaskStruct* task_ = nullptr;
    std::uint64_t steps_ = 0;
    std::uint64_t corrupted_steps_ = 0;
};

class Cyclictest final : public Workload {
public:
    Cyclictest(Env env, CyclictestWorkload cfg) : Workload(env), cfg_(std::move(cfg)) {}
    void start() override;
    bool finite() const override { return cfg_.loops > 0; }
    results::WorkloadResult result() const override;
    const std::vector<engine::Tick>& samples() const { return samples_; }

private:
    static engine::Task<> body(Cyclictest& w);
    static engine::Cycles expire(kernel::Cpu& cpu, void* ctx, engine::Tick expiry);
    CyclictestWorkload cfg_;
    kernel::TaskStruct* task_ = nullptr;
    std::vector<engine::Tick> samples_;
    engine::Tick worst_ = 0;    // the largest sample so far
    engine::Tick worst_at_ = 0;
    std::string state_at_expiry_; // what held the CPU when this period's timer fired
    std::string worst_cause_;
};

class SoftirqLoad final : public Workload, public engine::EventTarget {
public:
    SoftirqLoad(Env env, SoftirqLoadWorkload cfg, unsigned vector, net::Softnet& softnet);
    ~SoftirqLoad() override;
    void start() override;
    bool finite() const override { return cfg_.count > 0; }
    results::WorkloadResult result() const override;
    void register_stats(const stats::Scope& machine) const override;
    void on_event(std::uint64_t arg) override; // the device raises its interrupt

private:
    static engine::Task<> irq_handler(kernel::Cpu& cpu, void* ctx);
    static engine::Task<int> napi_poll(kernel::Cpu& cpu, void* ctx, int budget);
    static engine::Task<int> cryptd_hash_digest(kernel::Cpu& cpu, void* ctx, std::uint64_t arg);
    static engine::Task<> cryptd_complete(kernel::Cpu& cpu, void* ctx, std::uint64_t arg, int err);
    engine::Task<> process_packet();
    SoftirqLoadWorkload cfg_;
    unsigned vector_;
    net::Softnet& softnet_;
    net::NapiStruct napi_;
    crypto::HashImpl impl_;
    engine::Rng rng_;      // arrival jitter
    engine::Rng data_rng_; // packet bytes in functional mode (its own stream: timing must not depend on the mode)
    crypto::ShashStats stats_;
    std::vector<std::uint8_t> buf_;
    std::uint64_t raised_ = 0;
    std::uint64_t backlog_ = 0;
    std::uint64_t max_backlog_ = 0;
    std::uint64_t processed_ = 0;
    std::uint64_t clobbered_calls_ = 0;
    bool done_ = false;
    std::unique_ptr<crypto::Cryptd> cryptd_; // cryptd mode
    crypto::CryptdTfm tfm_;
};

} // namespace kdsim::workloads
