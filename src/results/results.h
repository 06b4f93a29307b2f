// What a run produced, as plain data: the only thing the report layer sees. No engine or model
// types appear here; times are in microseconds (double) or picoseconds (integer, `_ps`),
// cycles are integers, and every metric of a workload carries its unit.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace kdsim::results {

struct Metric {
    std::string key;   // stable, snake_case
    double value = 0;
    std::string unit;  // "us", "cycles", "bytes", "MB/s", "count", ...
};

struct ClobberResult {
    double time_us = 0;
    std::string machine;
    int cpu = 0;
    std::string victim;
    std::string culprit;
    std::string where;
};

struct SimdResult {
    std::uint64_t brackets = 0;
    std::uint64_t begin_end_cycles = 0;
    std::uint64_t saves = 0;
    std::uint64_t restores = 0;
    std::uint64_t save_restore_cycles = 0;
    std::uint64_t bytes = 0;
    // bytes per bracket, bucket k = [2^k, 2^(k+1)) bytes (bucket 0 also holds empty brackets)
    std::vector<std::uint64_t> bytes_per_bracket_log2_hist;
    double longest_bracket_us = 0;
    std::uint64_t longest_bracket_cycles = 0;
    std::uint64_t longest_bracket_bytes = 0;
    double longest_bracket_start_us = 0;
    std::string longest_bracket_holder;
    std::uint64_t fallbacks = 0;
    std::uint64_t kernel_traps = 0;        // SIMD-unavailable exceptions taken from kernel mode
    std::uint64_t kernel_use_warnings = 0; // log lines they printed ("SPE used in kernel")
};

struct CpuResult {
    int id = 0;
    double busy_us = 0;
    double idle_us = 0;
    // cycles by context ("task", "softirq", "hardirq", "nmi") then category ("crypto", ...);
    // only non-zero entries are present
    std::map<std::string, std::map<std::string, std::uint64_t>> cycles;
    std::uint64_t hardirqs = 0;
    std::uint64_t softirq_runs = 0;
    std::uint64_t softirq_restarts = 0;
    std::uint64_t ksoftirqd_wakeups = 0;
    std::uint64_t context_switches = 0;
    std::uint64_t preemptions = 0;
    std::array<std::uint64_t, 4> irqflag_ops{}; // local_irq_disable, enable, save, restore
    std::uint64_t bh_disable_ops = 0;
    double longest_np_span_us = 0;
    double longest_np_span_start_us = 0;
    std::string longest_np_holder;
    std::uint64_t rcu_stall_warnings = 0;
    std::uint64_t rcu_exp_stall_warnings = 0;
    std::uint64_t soft_lockups = 0;
    std::uint64_t simd_clobbers = 0;
    SimdResult simd;
};

struct WorkloadResult {
    std::string name;
    std::string kind;
    std::string machine;
    int cpu = 0;
    std::vector<Metric> metrics;
    std::vector<std::pair<std::string, std::string>> notes; // explanations, e.g. what caused the worst sample
};

struct MachineResult {
    std::string name;
    std::string profile;
    std::string arch;
    std::uint64_t clock_hz = 0;
    std::string preempt;
    std::string simd_policy;
    std::string chunking;
    std::vector<std::string> overrides; // profile figures the scenario replaced
    std::vector<CpuResult> cpus;
};

struct RunResults {
    std::string scenario;      // name
    std::string scenario_path;
    std::string description;
    std::uint64_t seed = 0;
    std::string mode;          // "timing" or "functional"
    double simulated_us = 0;
    std::uint64_t events = 0;
    std::vector<MachineResult> machines;
    std::vector<WorkloadResult> workloads;
    std::vector<ClobberResult> clobbers; // the first few reports
    std::uint64_t clobber_count = 0;
    bool failed = false;                 // an invariant was violated
    std::vector<std::string> failures;   // why
};

} // namespace kdsim::results
