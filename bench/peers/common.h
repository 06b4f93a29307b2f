// Shared definitions of kdsim_peers_bench: the three workloads, the one random generator that
// drives every simulator, and the meter that every model event passes through.
//
// Fairness rules (docs/performance.md, "Peers"; shared research note peers.md section 8.3):
//   * every simulator draws its delays from the same per-entity 64-bit LCG below, never from its
//     own RNG, so the simulated trajectory is the same in all of them;
//   * a "model event" is a timer firing (hold), a packet arrival or departure (queue) or a
//     message delivery (ping-pong), identical in number everywhere; each calls meter_event()
//     exactly once with the simulator's own clock, which feeds the trajectory check (final clock,
//     sum of event times in ns: order independent) and the wall-clock stamps;
//   * timing runs from the first model event to the last, so set-up (initial scheduling, actor
//     creation and start) and teardown are measured apart.
#pragma once

#include <time.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace peers {

enum class Workload { HOLD, QUEUE, PINGPONG };

struct Spec {
    Workload w;
    std::uint64_t n; // hold: timers; queue: streams; ping-pong: unused (2 entities)
    std::uint64_t k; // hold: firings per timer; queue: packets per stream; ping-pong: round trips
};

// Model events a run of `s` produces.
inline std::uint64_t events_of(const Spec& s) {
    switch (s.w) {
    case Workload::HOLD: return s.n * s.k;
    case Workload::QUEUE: return 2 * s.n * s.k; // arrivals + departures
    case Workload::PINGPONG: return 2 * s.k;    // deliveries
    }
    return 0;
}

// ---- the shared random generator ---------------------------------------------------------------

// One 64-bit LCG per entity (Knuth's MMIX constants), seeded by splitmix64 of (run seed, entity),
// so the draws of an entity do not depend on the order in which entities fire.
struct Lcg {
    std::uint64_t s;
    std::uint64_t next() {
        s = s * 6364136223846793005ULL + 1442695040888963407ULL;
        return s;
    }
    // Uniform in [0, n) from the high 32 bits (n < 2^32).
    std::uint64_t below(std::uint64_t n) { return ((next() >> 32) * n) >> 32; }
};

inline constexpr std::uint64_t kSeed = 1;

inline Lcg lcg_for(std::uint64_t entity) {
    std::uint64_t z = kSeed * 0x9e3779b97f4a7c15ULL + (entity + 1) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return Lcg{z ^ (z >> 31)};
}

// hold: U[1 us, 20 us) in ns.
inline std::uint64_t hold_delay_ns(Lcg& r) { return 1000 + r.below(19000); }
// queue: interarrival U[1 us, 221.222 us), mean 111.111 us per stream; 100 streams and a 1 us
// service give a load of 0.9.
inline constexpr std::uint64_t kServiceNs = 1000;
inline std::uint64_t queue_ia_ns(Lcg& r) { return 1000 + r.below(220222); }
// ping-pong: one-way latency.
inline constexpr std::uint64_t kLatencyNs = 10000;

// ---- a FIFO used by every queue model (the same container everywhere) --------------------------

class Fifo {
public:
    Fifo() : buf_(1024), mask_(1023) {}
    bool empty() const { return head_ == tail_; }
    std::size_t size() const { return tail_ - head_; }
    void push(std::uint64_t v) {
        if (tail_ - head_ == buf_.size()) grow();
        buf_[tail_++ & mask_] = v;
    }
    std::uint64_t pop() { return buf_[head_++ & mask_]; }

private:
    void grow() {
        std::vector<std::uint64_t> b(buf_.size() * 2);
        for (std::size_t i = head_; i != tail_; ++i) b[i - head_] = buf_[i & mask_];
        tail_ -= head_;
        head_ = 0;
        buf_.swap(b);
        mask_ = buf_.size() - 1;
    }
    std::vector<std::uint64_t> buf_;
    std::size_t mask_, head_ = 0, tail_ = 0;
};

// ---- the meter -----------------------------------------------------------------------------------

struct Stamp {
    double wall = 0, cpu = 0; // seconds: CLOCK_MONOTONIC, CLOCK_PROCESS_CPUTIME_ID
};
inline Stamp stamp() {
    timespec a{}, b{};
    clock_gettime(CLOCK_MONOTONIC, &a);
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &b);
    return {a.tv_sec + a.tv_nsec * 1e-9, b.tv_sec + b.tv_nsec * 1e-9};
}

struct Meter {
    std::uint64_t total = 0; // events expected
    std::uint64_t count = 0;
    unsigned __int128 sum = 0; // sum of event times in the simulator's unit
    Stamp first, last;
    void reset(std::uint64_t expected) {
        total = expected;
        count = 0;
        sum = 0;
        first = last = Stamp{};
    }
};
inline Meter g_meter;

// Called once per model event with the simulator's current time in its own integer unit.
inline void meter_event(std::uint64_t t) {
    Meter& m = g_meter;
    m.sum += t;
    if (++m.count == 1) [[unlikely]]
        m.first = stamp();
    if (m.count == m.total) [[unlikely]]
        m.last = stamp();
}

// What a case reports; the driver adds the stamps.
struct Outcome {
    std::uint64_t final_ns = 0;  // the simulator's clock after the run, relative to its start
    std::uint64_t sum_div = 1;   // g_meter.sum / sum_div = sum of event times in ns
};

// A case: a simulator (or a style of using one) that runs any Spec it supports.
struct Case {
    std::string name;  // e.g. "ns3-pq"
    std::string label; // longer description for the table
    std::string group; // kdsim | floor | ns-3 | SimGrid
    bool (*supports)(const Spec&);
    Outcome (*run)(const Spec&);
};

// Each translation unit appends its cases.
void add_kdsim_cases(std::vector<Case>& out);
void add_floor_cases(std::vector<Case>& out);
void add_ns3_cases(std::vector<Case>& out);
void add_simgrid_cases(std::vector<Case>& out);
void add_experiment_cases(std::vector<Case>& out); // bench-only queue experiments

} // namespace peers
