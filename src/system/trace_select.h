// What a run trace keeps, as a user asks for it on the command line: the kinds of record and cost
// categories (--trace-categories) and the CPUs (--trace-cpus). The time window needs no parsing
// here: it is two durations. Errors name the option and list what would have been accepted.
#pragma once

#include "kernel/trace.h"

#include <string>
#include <string_view>
#include <vector>

namespace kdsim::system {

// The names --trace-categories accepts: sched (task slices, idle, sched_switch), softirq, irq,
// nmi, simd (kernel-mode SIMD sections and register clobbers), exec (every piece of work), and
// exec:<category> (the work of one cost category, e.g. exec:crypto). Sets `f.kinds` and
// `f.exec_cats` from the comma-separated `list` (empty: leaves `f` as it is); returns "" or why the
// list is refused.
std::string parse_trace_categories(std::string_view list, kernel::TraceFilter& f);

// The CPUs a trace follows. Each comma-separated item is `N`, `N-M` (those CPUs of every machine),
// `MACHINE` (all its CPUs) or `MACHINE:N[-M]`. An empty spec selects every CPU.
struct TraceCpus {
    struct Item {
        std::string machine; // "" = every machine
        int first = 0, last = -1; // last < 0: every CPU
    };
    std::vector<Item> items;

    bool all() const { return items.empty(); }
    bool selects(std::string_view machine, int cpu) const;
};

// Everything a run's trace is asked to keep. The texts are the options as given, echoed in the
// trace's metadata ("" when not given).
struct TraceRequest {
    std::size_t limit = 5'000'000;
    kernel::TraceFilter filter;
    TraceCpus cpus;
    std::string cpus_text, categories_text;
};

// Parses `spec`; returns "" or why it is refused. Names and CPU numbers are checked against the
// scenario by check_trace_cpus().
std::string parse_trace_cpus(std::string_view spec, TraceCpus& out);

// Why `cpus` names something the scenario does not have (a machine, or a CPU no named machine
// has), or "". `machines` holds each machine's name and CPU count.
std::string check_trace_cpus(const TraceCpus& cpus, const std::vector<std::pair<std::string, int>>& machines);

} // namespace kdsim::system
