// `kdsim run --trace` and its options: what the trace keeps (window, CPUs, categories), checked
// against the scenario before anything runs, and how the file is written (Perfetto JSON or
// ftrace text, gzip-compressed for a *.gz path).
#pragma once

#include "cli/commands.h"
#include "report/output_file.h"
#include "system/system.h"

#include <string>

namespace kdsim::cli {

// Turns the trace on as `o` asks. Returns why the options are refused (a window that holds
// nothing of the run, a CPU or machine the scenario lacks, an unknown category, a trace option
// without --trace, a build without trace hooks), or "".
std::string enable_trace(const RunOptions& o, const system::ScenarioConfig& cfg, system::System& sys);

// After the run, which ended at `end`: why the trace window holds nothing of it (the run ended
// before --trace-from, as a run that ends with its workloads can), or "".
std::string trace_window_after_run(const RunOptions& o, const system::System& sys, engine::Tick end);

// Writes the recorded trace into `f` in the format `o` asks for.
void write_trace_file(const RunOptions& o, const system::System& sys, report::AtomicFile& f);

} // namespace kdsim::cli
