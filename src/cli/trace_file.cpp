// --trace and its window, CPU and category options (see trace_file.h).
#include "cli/trace_file.h"

#include "engine/time.h"
#include "report/gzip.h"
#include "scenario/load.h"

#include <fmt/format.h>

#include <optional>

namespace kdsim::cli {

namespace {

std::string show(engine::Tick t) { return fmt::format("{} us", engine::to_us(t)); }

bool ftrace_format(const RunOptions& o) {
    if (o.trace_format != "auto") return o.trace_format == "ftrace";
    std::string_view p = o.trace;
    if (report::gzip_path(p)) p.remove_suffix(3);
    return p.ends_with(".txt");
}

} // namespace

std::string enable_trace(const RunOptions& o, const system::ScenarioConfig& cfg, system::System& sys) {
    if (o.trace.empty()) {
        for (const auto& [name, value] : {std::pair{"--trace-from", &o.trace_from}, {"--trace-until", &o.trace_until},
                                         {"--trace-cpus", &o.trace_cpus}, {"--trace-categories", &o.trace_categories}})
            if (!value->empty()) return fmt::format("{} needs --trace FILE", name);
        return {};
    }
    system::TraceRequest req;
    req.limit = o.trace_limit;
    for (const auto& [name, text, at] : {std::tuple{"--trace-from", &o.trace_from, &req.filter.from},
                                         std::tuple{"--trace-until", &o.trace_until, &req.filter.until}}) {
        if (text->empty()) continue;
        const std::optional<engine::Tick> t = scenario::parse_duration(*text);
        if (!t) return fmt::format("{} '{}': expected a simulated time such as 100ms or 1.5 s", name, *text);
        *at = *t;
    }
    const engine::Tick end = cfg.duration.value_or(cfg.max_duration);
    if (req.filter.from >= end)
        return fmt::format("--trace-from {}: the window starts after the run, which ends at {} at the latest",
                           o.trace_from, show(end));
    if (req.filter.until <= req.filter.from)
        return fmt::format("--trace-until {}: the window must end after it starts ({})", o.trace_until,
                           o.trace_from.empty() ? "0" : o.trace_from);
    if (std::string why = system::parse_trace_categories(o.trace_categories, req.filter); !why.empty()) return why;
    if (std::string why = system::parse_trace_cpus(o.trace_cpus, req.cpus); !why.empty()) return why;
    if (std::string why = system::check_trace_cpus(req.cpus, sys.machine_cpus()); !why.empty()) return why;
    req.cpus_text = o.trace_cpus;
    req.categories_text = o.trace_categories;
    if (!sys.enable_trace(req)) return "--trace: this kdsim was built with KDSIM_TRACE=OFF (no trace hooks)";
    return {};
}

std::string trace_window_after_run(const RunOptions& o, const system::System& sys, engine::Tick end) {
    if (!sys.trace() || end > sys.trace()->filter().from || o.trace_from.empty()) return {};
    return fmt::format("--trace-from {}: the run ended at {}, before the window starts", o.trace_from, show(end));
}

void write_trace_file(const RunOptions& o, const system::System& sys, report::AtomicFile& f) {
    std::optional<report::GzipWriter> gz;
    if (report::gzip_path(o.trace)) gz.emplace([&](std::string_view s) { f.write(s); });
    auto out = [&](std::string_view s) {
        if (gz) gz->write(s);
        else f.write(s);
    };
    if (ftrace_format(o)) sys.write_trace_ftrace(out);
    else sys.write_trace(out);
    if (gz) gz->finish();
}

} // namespace kdsim::cli
