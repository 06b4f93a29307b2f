// The run trace in the text format of `trace-cmd report -t` (ftrace's per-event lines, times in
// seconds with nanoseconds), for readers used to ftrace and KernelShark:
//
//     <comm>-<pid> [<cpu>] <seconds>: <event>: <fields>
//
// The kernel's own events keep their names and fields: irq_handler_entry/exit, softirq_entry/exit,
// nmi_handler, sched_switch and cpu_idle. kdsim adds kdsim_exec (a piece of work with its cost
// category, context and cycles), simd_begin/simd_end (a kernel-mode SIMD section) and
// simd_clobber. The running task of each line comes from the task slices of its CPU; "<idle>-0"
// when none ran. Where the model does not know a field (a task's priority or state at a switch),
// the field is left out rather than made up. The vectors of one softirq activation share its
// entry and exit times: the model records the activation, not each handler.
//
// A scenario with several machines prefixes every line with the machine's name. Lines are in
// time order, then by CPU; the same trace gives the same bytes.
#pragma once

#include "kernel/trace.h"
#include "system/trace_json.h"

#include <functional>
#include <string_view>

namespace kdsim::system {

// Streams the whole text of `tr` to `out` in pieces of about 1 MiB.
void write_trace_ftrace(const kernel::TraceRecorder& tr, const TraceInfo& info,
                        const std::function<void(std::string_view)>& out);

} // namespace kdsim::system
