// The run trace as Chrome's Trace Event Format (JSON), which Perfetto (ui.perfetto.dev) and
// chrome://tracing open: one process per simulated machine, one thread per CPU ("cpu0", ...),
// complete events ("X") for task, softirq, hardirq, NMI, SIMD-bracket, idle and exec slices,
// nested on each CPU, and instant events ("i") for sched_switch and SIMD register clobbers —
// what ftrace's irq, softirq and sched events would show of the same kernel.
//
// It lives in system, not report: it reads the model's trace records (kernel/trace.h), and the
// report layer sees only plain results. The CLI writes its output through report's atomic
// writer. Deterministic: records are ordered by (CPU, begin, longer first, nesting rank) and
// times are printed from integer picoseconds (microseconds with 6 decimals), so the same run
// gives the same bytes.
#pragma once

#include "kernel/trace.h"

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace kdsim::system {

struct TraceInfo {
    std::string scenario;
    std::uint64_t seed = 0;
    std::string cpus, categories; // --trace-cpus and --trace-categories as given ("" = all)
};

// The indices of `tr`'s records in the order both trace writers print them: per CPU by begin
// time, a longer (enclosing) slice before the slices that start with it, then by kind (nesting
// rank). Stable, so equal records keep their recording order.
std::vector<std::uint32_t> nesting_order(const kernel::TraceRecorder& tr);

// Streams the whole JSON document of `tr` to `out` in pieces of about 1 MiB.
void write_trace_json(const kernel::TraceRecorder& tr, const TraceInfo& info,
                      const std::function<void(std::string_view)>& out);

} // namespace kdsim::system
