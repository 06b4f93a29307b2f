// The results flattened into rows of (section, machine, cpu, workload, key, value, unit): one
// row per numeric metric. The CSV writer prints these rows and the comparison matches them.
#pragma once

#include "results/results.h"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace kdsim::report::detail {

struct Row {
    std::string section;  // "run", "finding", "machine", "cpu", "cycles", "simd", "statistic", "workload"
    std::string machine;  // empty for section "run"
    std::optional<int> cpu;
    std::string workload; // section "workload" only
    std::string key;
    double value = 0;
    std::optional<std::uint64_t> exact; // set for integer counters, printed without rounding
    std::string unit;

    // What identifies the same metric in another run.
    std::string identity() const;
    // "dut cpu 0", "workload iperf (dut cpu 0)", "run", "machine dut".
    std::string subject() const;
};

// Rows in a fixed order: run, then per machine its own rows and statistics and per CPU the cpu,
// cycles and simd rows and its statistics, then the workloads in their given order, then any
// statistic of a machine the results do not list.
std::vector<Row> flatten(const results::RunResults&);

// Where a statistic's path puts it: "<machine>/cpu<N>/<key>" or "<machine>/<key>".
struct StatPlace {
    std::string machine;
    std::optional<int> cpu;
    std::string key; // the rest of the path
};
StatPlace stat_place(const std::string& path);

// The statistics of one machine's CPU (cpu set) or of the machine outside its CPUs, in order.
std::vector<const results::Statistic*> statistics_of(const results::RunResults&, const std::string& machine,
                                                     std::optional<int> cpu);

// Cycles of one CPU summed over contexts, by category.
std::map<std::string, std::uint64_t> cycles_by_category(const results::CpuResult&);
// Cycles of one CPU summed over categories, by context; "task", "softirq" and "hardirq" are
// always present.
std::map<std::string, std::uint64_t> cycles_by_context(const results::CpuResult&);
std::uint64_t total_cycles(const results::CpuResult&);

// Context names in display order: task, softirq, hardirq, then any other present (e.g. nmi).
std::vector<std::string> context_order(const std::map<std::string, std::uint64_t>& by_context);

} // namespace kdsim::report::detail
