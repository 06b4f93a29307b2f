// What a run produced, as plain data: the only thing the report layer sees. No engine or model
// types appear here; times are in microseconds (double) or picoseconds (integer, `_ps`),
// cycles are integers, and every metric of a workload and every statistic carries its unit.
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

// A statistic of the model, as its owner registered it (stats::Registry): where it lives
// ("<machine>/cpu0/softirq/restarts"), its unit, one line saying what it counts, and its value
// (an integer counter when `integral`).
struct Statistic {
    std::string path;
    std::string unit;
    std::string description;
    double value = 0;
    bool integral = true;
};

// A violated invariant, as the model caught it (stats::Finding): kind "simd_clobber",
// "stale_dma_read", "auth_failure", "digest_mismatch" or "lost_data".
struct Finding {
    std::string kind;
    std::string machine;
    int cpu = 0;
    double time_us = 0;
    std::string culprit;
    std::string victim;
    std::string where;
};

// How many findings of a kind a machine had (the records kept are only the first few).
struct FindingCount {
    std::string kind;
    std::string machine;
    std::uint64_t count = 0;
};

// The shape of a CPU's kernel SIMD brackets; their counts are statistics (<machine>/cpu<N>/simd/...).
struct SimdResult {
    // bytes per bracket, bucket k = [2^k, 2^(k+1)) bytes (bucket 0 also holds empty brackets)
    std::vector<std::uint64_t> bytes_per_bracket_log2_hist;
    double longest_bracket_us = 0;
    std::uint64_t longest_bracket_cycles = 0;
    std::uint64_t longest_bracket_bytes = 0;
    double longest_bracket_start_us = 0;
    std::string longest_bracket_holder;
    // per driver that opened brackets (<machine>/cpu<N>/simd/alg/<driver>/...): who held its longest
    std::vector<std::pair<std::string, std::string>> longest_bracket_holder_by_driver;
};

struct CpuResult {
    int id = 0;
    double busy_us = 0;
    double idle_us = 0;
    // cycles by context ("task", "softirq", "hardirq", "nmi") then category ("crypto", ...);
    // only non-zero entries are present
    std::map<std::string, std::map<std::string, std::uint64_t>> cycles;
    double longest_np_span_us = 0;
    double longest_np_span_start_us = 0;
    std::string longest_np_holder;
    SimdResult simd;
};

struct WorkloadResult {
    std::string name;
    std::string kind;
    std::string machine;
    int cpu = 0;
    std::vector<Metric> metrics;
    std::vector<std::pair<std::string, std::string>> notes; // explanations, e.g. what caused the worst sample
    // Empty, or what the workload lost and nothing recovered (UDP datagrams dropped on the way):
    // the verdict says so, and a run is never silent about lost data.
    std::string data_lost;
};

struct MachineResult {
    std::string name;
    std::string profile;
    std::string profile_sha256; // of the profile file's bytes
    std::string profile_file;   // empty for the stock profile; else the private file's path
    std::string arch;
    std::uint64_t clock_hz = 0;
    std::string preempt;
    std::string simd_policy;
    std::string chunking;
    std::vector<std::string> overrides; // profile figures the scenario replaced
    std::vector<CpuResult> cpus;
};

// The steady-state estimate of one rate metric of a run stopped by `kdsim run --precision`: the
// mean of batch means after an MSER-5 warm-up, with its Student-t confidence interval.
// One value a sweep point set: the scenario key and the value as the sweep gave it.
struct SweepValue {
    std::string key;   // "machine[0].nic.rx_buffer"
    std::string value; // "9KiB", "\"1 Gbit/s\""
    bool operator==(const SweepValue&) const = default;
};

struct SteadyState {
    std::string path;        // the metric's path ("workload.iperf3.receiver_mbit_s")
    std::string unit;        // the metric's unit ("Mbit/s")
    double mean = 0;
    double half_width = 0;   // the interval is mean +/- half_width
    double confidence = 0;   // 0.95
    std::uint64_t batches = 0;
    double batch_us = 0;     // simulated time per batch
    double warm_up_us = 0;   // simulated time dropped as warm-up, from 0
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
    std::vector<Statistic> statistics;   // every registered statistic, in registration order
    std::vector<Finding> findings;           // the first few of each kind, per machine
    std::vector<FindingCount> finding_counts; // every finding, per machine and kind (none: not failed)
    bool failed = false;                     // an invariant was violated: there are findings
    std::vector<std::string> failures;       // why, one line per machine and kind
    std::vector<SteadyState> steady_state;   // kdsim run --precision only, else empty
    std::vector<SweepValue> sweep_point;     // kdsim sweep's points only: the values the point set
};

} // namespace kdsim::results
