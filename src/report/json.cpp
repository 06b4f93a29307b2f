// JSON writer and reader for RunResults. Layout in docs/report-format.md.
#include "report/report.h"

#include "report/format.h"
#include "report/rows.h"

#include <fmt/format.h>

#include <cmath>
#include <limits>
#include <stdexcept>

namespace kdsim::report {

using nlohmann::json;

namespace {

// A double as JSON: rounded to a fixed number of significant digits; NaN and infinities, which
// JSON cannot hold, become null (and read back as NaN).
json number(double v) {
    if (!std::isfinite(v)) return nullptr;
    return detail::round_significant(v);
}

json simd_json(const results::SimdResult& s) {
    return {
        {"bytes_per_bracket_log2_hist", s.bytes_per_bracket_log2_hist},
        {"longest_bracket_us", number(s.longest_bracket_us)},
        {"longest_bracket_cycles", s.longest_bracket_cycles},
        {"longest_bracket_bytes", s.longest_bracket_bytes},
        {"longest_bracket_start_us", number(s.longest_bracket_start_us)},
        {"longest_bracket_holder", s.longest_bracket_holder},
    };
}

// Figures recomputed from the fields above, for readers that want them ready-made.
json derived_json(const results::CpuResult& c, std::uint64_t clock_hz) {
    json context_us = json::object();
    for (const auto& [context, n] : detail::cycles_by_context(c)) context_us[context] = number(detail::cycles_to_us(n, clock_hz));
    return {
        {"context_us", context_us},
        {"category_cycles", detail::cycles_by_category(c)},
        {"context_cycles", detail::cycles_by_context(c)},
        {"total_cycles", detail::total_cycles(c)},
    };
}

json cpu_json(const results::CpuResult& c, std::uint64_t clock_hz) {
    return {
        {"id", c.id},
        {"busy_us", number(c.busy_us)},
        {"idle_us", number(c.idle_us)},
        {"cycles", c.cycles},
        {"longest_np_span_us", number(c.longest_np_span_us)},
        {"longest_np_span_start_us", number(c.longest_np_span_start_us)},
        {"longest_np_holder", c.longest_np_holder},
        {"simd", simd_json(c.simd)},
        {"derived", derived_json(c, clock_hz)},
    };
}

// ---- reading -----------------------------------------------------------------------------

[[noreturn]] void fail(const std::string& path, const std::string& what) {
    throw std::runtime_error(fmt::format("results JSON: {}: {}", path.empty() ? "(top level)" : path, what));
}

std::string join_path(const std::string& path, std::string_view key) {
    return path.empty() ? std::string(key) : fmt::format("{}.{}", path, key);
}

const json& member(const json& j, const std::string& path, std::string_view key) {
    if (!j.is_object()) fail(path, fmt::format("expected an object, found {}", j.type_name()));
    auto it = j.find(key);
    if (it == j.end()) fail(path, fmt::format("missing key \"{}\"", key));
    return *it;
}

std::string get_string(const json& j, const std::string& path, std::string_view key) {
    const json& v = member(j, path, key);
    if (!v.is_string()) fail(join_path(path, key), fmt::format("expected a string, found {}", v.type_name()));
    return v.get<std::string>();
}

std::uint64_t as_u64(const json& v, const std::string& path) {
    if (v.is_number_unsigned()) return v.get<std::uint64_t>();
    if (v.is_number_integer() && v.get<std::int64_t>() >= 0) return static_cast<std::uint64_t>(v.get<std::int64_t>());
    fail(path, fmt::format("expected a non-negative integer, found {} {}", v.type_name(), v.dump()));
}

std::uint64_t get_u64(const json& j, const std::string& path, std::string_view key) {
    return as_u64(member(j, path, key), join_path(path, key));
}

int get_int(const json& j, const std::string& path, std::string_view key) {
    const json& v = member(j, path, key);
    if (!v.is_number_integer() || v.get<std::int64_t>() < std::numeric_limits<int>::min() ||
        v.get<std::int64_t>() > std::numeric_limits<int>::max())
        fail(join_path(path, key), fmt::format("expected an integer, found {} {}", v.type_name(), v.dump()));
    return static_cast<int>(v.get<std::int64_t>());
}

double get_double(const json& j, const std::string& path, std::string_view key) {
    const json& v = member(j, path, key);
    if (v.is_null()) return std::numeric_limits<double>::quiet_NaN();
    if (!v.is_number()) fail(join_path(path, key), fmt::format("expected a number, found {}", v.type_name()));
    return v.get<double>();
}

bool get_bool(const json& j, const std::string& path, std::string_view key) {
    const json& v = member(j, path, key);
    if (!v.is_boolean()) fail(join_path(path, key), fmt::format("expected true or false, found {}", v.type_name()));
    return v.get<bool>();
}

const json& get_array(const json& j, const std::string& path, std::string_view key) {
    const json& v = member(j, path, key);
    if (!v.is_array()) fail(join_path(path, key), fmt::format("expected an array, found {}", v.type_name()));
    return v;
}

std::string item_path(const std::string& path, std::string_view key, std::size_t i) {
    return fmt::format("{}[{}]", join_path(path, key), i);
}

results::SimdResult read_simd(const json& j, const std::string& p) {
    results::SimdResult s;
    const json& hist = get_array(j, p, "bytes_per_bracket_log2_hist");
    for (std::size_t k = 0; k < hist.size(); ++k)
        s.bytes_per_bracket_log2_hist.push_back(as_u64(hist[k], item_path(p, "bytes_per_bracket_log2_hist", k)));
    s.longest_bracket_us = get_double(j, p, "longest_bracket_us");
    s.longest_bracket_cycles = get_u64(j, p, "longest_bracket_cycles");
    s.longest_bracket_bytes = get_u64(j, p, "longest_bracket_bytes");
    s.longest_bracket_start_us = get_double(j, p, "longest_bracket_start_us");
    s.longest_bracket_holder = get_string(j, p, "longest_bracket_holder");
    return s;
}

results::CpuResult read_cpu(const json& j, const std::string& p) {
    results::CpuResult c;
    c.id = get_int(j, p, "id");
    c.busy_us = get_double(j, p, "busy_us");
    c.idle_us = get_double(j, p, "idle_us");
    const json& cycles = member(j, p, "cycles");
    if (!cycles.is_object()) fail(join_path(p, "cycles"), "expected an object of contexts");
    for (const auto& [context, by_cat] : cycles.items()) {
        std::string cp = join_path(join_path(p, "cycles"), context);
        if (!by_cat.is_object()) fail(cp, "expected an object of categories");
        auto& out = c.cycles[context];
        for (const auto& [category, n] : by_cat.items()) out[category] = as_u64(n, join_path(cp, category));
    }
    c.longest_np_span_us = get_double(j, p, "longest_np_span_us");
    c.longest_np_span_start_us = get_double(j, p, "longest_np_span_start_us");
    c.longest_np_holder = get_string(j, p, "longest_np_holder");
    c.simd = read_simd(member(j, p, "simd"), join_path(p, "simd"));
    return c;
}

results::MachineResult read_machine(const json& j, const std::string& p) {
    results::MachineResult m;
    m.name = get_string(j, p, "name");
    m.profile = get_string(j, p, "profile");
    m.arch = get_string(j, p, "arch");
    m.clock_hz = get_u64(j, p, "clock_hz");
    m.preempt = get_string(j, p, "preempt");
    m.simd_policy = get_string(j, p, "simd_policy");
    m.chunking = get_string(j, p, "chunking");
    const json& overrides = get_array(j, p, "overrides");
    for (std::size_t i = 0; i < overrides.size(); ++i) {
        if (!overrides[i].is_string()) fail(item_path(p, "overrides", i), "expected a string");
        m.overrides.push_back(overrides[i].get<std::string>());
    }
    const json& cpus = get_array(j, p, "cpus");
    for (std::size_t i = 0; i < cpus.size(); ++i) m.cpus.push_back(read_cpu(cpus[i], item_path(p, "cpus", i)));
    return m;
}

results::WorkloadResult read_workload(const json& j, const std::string& p) {
    results::WorkloadResult w;
    w.name = get_string(j, p, "name");
    w.kind = get_string(j, p, "kind");
    w.machine = get_string(j, p, "machine");
    w.cpu = get_int(j, p, "cpu");
    const json& metrics = get_array(j, p, "metrics");
    for (std::size_t i = 0; i < metrics.size(); ++i) {
        std::string mp = item_path(p, "metrics", i);
        w.metrics.push_back({get_string(metrics[i], mp, "key"), get_double(metrics[i], mp, "value"),
                             get_string(metrics[i], mp, "unit")});
    }
    if (j.contains("notes")) {
        const json& notes = get_array(j, p, "notes");
        for (std::size_t i = 0; i < notes.size(); ++i) {
            std::string np = item_path(p, "notes", i);
            w.notes.emplace_back(get_string(notes[i], np, "key"), get_string(notes[i], np, "text"));
        }
    }
    return w;
}

results::Statistic read_statistic(const json& j, const std::string& p) {
    results::Statistic s;
    s.path = get_string(j, p, "path");
    s.unit = get_string(j, p, "unit");
    s.description = get_string(j, p, "description");
    const json& v = member(j, p, "value");
    s.integral = v.is_number_integer();
    s.value = s.integral ? static_cast<double>(as_u64(v, join_path(p, "value"))) : get_double(j, p, "value");
    return s;
}

results::Finding read_finding(const json& j, const std::string& p) {
    results::Finding f;
    f.kind = get_string(j, p, "kind");
    f.time_us = get_double(j, p, "time_us");
    f.machine = get_string(j, p, "machine");
    f.cpu = get_int(j, p, "cpu");
    f.victim = get_string(j, p, "victim");
    f.culprit = get_string(j, p, "culprit");
    f.where = get_string(j, p, "where");
    return f;
}

} // namespace

json to_json(const results::RunResults& r) {
    json machines = json::array();
    for (const auto& m : r.machines) {
        json cpus = json::array();
        for (const auto& c : m.cpus) cpus.push_back(cpu_json(c, m.clock_hz));
        machines.push_back({
            {"name", m.name},
            {"profile", m.profile},
            {"arch", m.arch},
            {"clock_hz", m.clock_hz},
            {"preempt", m.preempt},
            {"simd_policy", m.simd_policy},
            {"chunking", m.chunking},
            {"overrides", m.overrides},
            {"cpus", cpus},
        });
    }
    json workloads = json::array();
    for (const auto& w : r.workloads) {
        json metrics = json::array();
        for (const auto& metric : w.metrics)
            metrics.push_back({{"key", metric.key}, {"value", number(metric.value)}, {"unit", metric.unit}});
        json wl = {{"name", w.name}, {"kind", w.kind}, {"machine", w.machine}, {"cpu", w.cpu}, {"metrics", metrics}};
        if (!w.notes.empty()) {
            json notes = json::array();
            for (const auto& [k, v] : w.notes) notes.push_back({{"key", k}, {"text", v}});
            wl["notes"] = notes;
        }
        workloads.push_back(wl);
    }
    json statistics = json::array();
    for (const auto& st : r.statistics)
        statistics.push_back({{"path", st.path},
                              {"unit", st.unit},
                              {"description", st.description},
                              {"value", st.integral && st.value >= 0 ? json(static_cast<std::uint64_t>(st.value)) : number(st.value)}});
    json findings = json::array();
    for (const auto& f : r.findings)
        findings.push_back({{"kind", f.kind}, {"time_us", number(f.time_us)}, {"machine", f.machine}, {"cpu", f.cpu},
                            {"victim", f.victim}, {"culprit", f.culprit}, {"where", f.where}});
    json finding_counts = json::array();
    for (const auto& c : r.finding_counts)
        finding_counts.push_back({{"kind", c.kind}, {"machine", c.machine}, {"count", c.count}});
    return {
        {"format", "kdsim-results"},
        {"format_version", RESULTS_FORMAT_VERSION},
        {"scenario", r.scenario},
        {"scenario_path", r.scenario_path},
        {"description", r.description},
        {"seed", r.seed},
        {"mode", r.mode},
        {"simulated_us", number(r.simulated_us)},
        {"events", r.events},
        {"machines", machines},
        {"workloads", workloads},
        {"statistics", statistics},
        {"findings", findings},
        {"finding_counts", finding_counts},
        {"failed", r.failed},
        {"failures", r.failures},
    };
}

results::RunResults from_json(const json& j) {
    const std::string top;
    if (!j.is_object()) fail(top, fmt::format("expected an object, found {}", j.type_name()));
    if (get_string(j, top, "format") != "kdsim-results") fail("format", "not a kdsim results file");
    std::uint64_t version = get_u64(j, top, "format_version");
    if (version != RESULTS_FORMAT_VERSION)
        fail("format_version", fmt::format("version {} is not supported (this build reads {})", version, RESULTS_FORMAT_VERSION));

    results::RunResults r;
    r.scenario = get_string(j, top, "scenario");
    r.scenario_path = get_string(j, top, "scenario_path");
    r.description = get_string(j, top, "description");
    r.seed = get_u64(j, top, "seed");
    r.mode = get_string(j, top, "mode");
    r.simulated_us = get_double(j, top, "simulated_us");
    r.events = get_u64(j, top, "events");
    const json& machines = get_array(j, top, "machines");
    for (std::size_t i = 0; i < machines.size(); ++i) r.machines.push_back(read_machine(machines[i], item_path(top, "machines", i)));
    const json& workloads = get_array(j, top, "workloads");
    for (std::size_t i = 0; i < workloads.size(); ++i) r.workloads.push_back(read_workload(workloads[i], item_path(top, "workloads", i)));
    const json& statistics = get_array(j, top, "statistics");
    for (std::size_t i = 0; i < statistics.size(); ++i)
        r.statistics.push_back(read_statistic(statistics[i], item_path(top, "statistics", i)));
    const json& findings = get_array(j, top, "findings");
    for (std::size_t i = 0; i < findings.size(); ++i) r.findings.push_back(read_finding(findings[i], item_path(top, "findings", i)));
    const json& counts = get_array(j, top, "finding_counts");
    for (std::size_t i = 0; i < counts.size(); ++i) {
        const std::string p = item_path(top, "finding_counts", i);
        r.finding_counts.push_back({get_string(counts[i], p, "kind"), get_string(counts[i], p, "machine"), get_u64(counts[i], p, "count")});
    }
    r.failed = get_bool(j, top, "failed");
    const json& failures = get_array(j, top, "failures");
    for (std::size_t i = 0; i < failures.size(); ++i) {
        if (!failures[i].is_string()) fail(item_path(top, "failures", i), "expected a string");
        r.failures.push_back(failures[i].get<std::string>());
    }
    return r;
}

std::string to_json_text(const results::RunResults& r) {
    // Invalid UTF-8 in a name is replaced (U+FFFD) rather than making the whole file unwritable.
    return to_json(r).dump(2, ' ', false, json::error_handler_t::replace) + "\n";
}

} // namespace kdsim::report
