// JSON writer and reader for RunResults. Layout in docs/report-format.md.
//
// Each results struct lists its JSON members once (`Fields<T>::each`); the writer and the reader
// walk the same list, so a member added there is written and read back without further edits.
#include "report/report.h"

#include "report/format.h"
#include "report/rows.h"

#include <fmt/format.h>

#include <cmath>
#include <limits>
#include <stdexcept>
#include <type_traits>

namespace kdsim::report {

using nlohmann::json;

namespace {

// The members every results struct writes and reads, in the order the layout documents them;
// `each(v, s)` calls v(key, member) for each. Members written in a special way are not listed.
template <class T> struct Fields;

template <> struct Fields<results::Metric> {
    static void each(auto& v, auto& m) { v("key", m.key), v("value", m.value), v("unit", m.unit); }
};
template <> struct Fields<results::Finding> {
    static void each(auto& v, auto& f) {
        v("kind", f.kind), v("time_us", f.time_us), v("machine", f.machine), v("cpu", f.cpu), v("victim", f.victim),
            v("culprit", f.culprit), v("where", f.where);
    }
};
template <> struct Fields<results::FindingCount> {
    static void each(auto& v, auto& c) { v("kind", c.kind), v("machine", c.machine), v("count", c.count); }
};
template <> struct Fields<results::SimdResult> {
    static void each(auto& v, auto& s) {
        v("bytes_per_bracket_log2_hist", s.bytes_per_bracket_log2_hist), v("longest_bracket_us", s.longest_bracket_us),
            v("longest_bracket_cycles", s.longest_bracket_cycles), v("longest_bracket_bytes", s.longest_bracket_bytes),
            v("longest_bracket_start_us", s.longest_bracket_start_us), v("longest_bracket_holder", s.longest_bracket_holder);
    } // and "longest_bracket_holder_by_driver", present only when a driver opened brackets
};
template <> struct Fields<results::CpuResult> { // and "derived", written only
    static void each(auto& v, auto& c) {
        v("id", c.id), v("busy_us", c.busy_us), v("idle_us", c.idle_us), v("cycles", c.cycles),
            v("longest_np_span_us", c.longest_np_span_us), v("longest_np_span_start_us", c.longest_np_span_start_us),
            v("longest_np_holder", c.longest_np_holder), v("simd", c.simd);
    }
};
template <> struct Fields<results::MachineResult> { // and "profile_sha256", "profile_file" (a private profile only)
    static void each(auto& v, auto& m) {
        v("name", m.name), v("profile", m.profile), v("arch", m.arch), v("clock_hz", m.clock_hz), v("preempt", m.preempt),
            v("simd_policy", m.simd_policy), v("chunking", m.chunking), v("overrides", m.overrides), v("cpus", m.cpus);
    }
};
template <> struct Fields<results::WorkloadResult> { // and "notes", "data_lost", present only when there are some
    static void each(auto& v, auto& w) {
        v("name", w.name), v("kind", w.kind), v("machine", w.machine), v("cpu", w.cpu), v("metrics", w.metrics);
    }
};
template <> struct Fields<results::Statistic> { // and "value", integral or not
    static void each(auto& v, auto& s) { v("path", s.path), v("unit", s.unit), v("description", s.description); }
};
template <> struct Fields<results::RunResults> { // after "format" and "format_version"
    static void each(auto& v, auto& r) {
        v("scenario", r.scenario), v("scenario_path", r.scenario_path), v("description", r.description), v("seed", r.seed),
            v("mode", r.mode), v("simulated_us", r.simulated_us), v("events", r.events), v("machines", r.machines),
            v("workloads", r.workloads), v("statistics", r.statistics), v("findings", r.findings),
            v("finding_counts", r.finding_counts), v("failed", r.failed), v("failures", r.failures);
    }
};

template <> struct Fields<results::SteadyState> { // the optional "steady_state" list
    static void each(auto& v, auto& e) {
        v("path", e.path), v("unit", e.unit), v("mean", e.mean), v("half_width", e.half_width), v("confidence", e.confidence),
            v("batches", e.batches), v("batch_us", e.batch_us), v("warm_up_us", e.warm_up_us);
    }
};

template <> struct Fields<results::SweepValue> { // the optional "sweep_point" list
    static void each(auto& v, auto& e) { v("key", e.key), v("value", e.value); }
};

template <class T> concept Described = requires { sizeof(Fields<T>); };
template <class T> concept DescribedList = requires { typename T::value_type; } && Described<typename T::value_type>;

// ---- writing -----------------------------------------------------------------------------

// A double as JSON: rounded to a fixed number of significant digits; NaN and infinities, which
// JSON cannot hold, become null (and read back as NaN).
json number(double v) {
    if (!std::isfinite(v)) return nullptr;
    return detail::round_significant(v);
}

template <class T> json write_value(const T& x);

template <class T> json write_object(const T& s) {
    json out = json::object();
    auto v = [&out](const char* key, const auto& member) { out[key] = write_value(member); return 0; };
    Fields<T>::each(v, s);
    return out;
}

template <class T> json write_value(const T& x) {
    if constexpr (std::is_same_v<T, double>) return number(x);
    else if constexpr (Described<T>) return write_object(x);
    else if constexpr (DescribedList<T>) {
        json a = json::array();
        for (const auto& e : x) a.push_back(write_value(e));
        return a;
    } else return json(x);
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

std::string item_path(const std::string& path, std::size_t i) { return fmt::format("{}[{}]", path, i); }

template <class T> void read_value(const json& v, const std::string& path, T& out);

template <class T> void read_object(const json& j, const std::string& path, T& out) {
    auto v = [&](const char* key, auto& m) { read_value(member(j, path, key), join_path(path, key), m); return 0; };
    Fields<T>::each(v, out);
}

// Reads `v` (found at `path`) into `out`, or throws naming the path and what was expected.
template <class T> void read_value(const json& v, const std::string& path, T& out) {
    if constexpr (std::is_same_v<T, std::string>) {
        if (!v.is_string()) fail(path, fmt::format("expected a string, found {}", v.type_name()));
        out = v.get<std::string>();
    } else if constexpr (std::is_same_v<T, double>) {
        if (v.is_null()) out = std::numeric_limits<double>::quiet_NaN();
        else if (!v.is_number()) fail(path, fmt::format("expected a number, found {}", v.type_name()));
        else out = v.get<double>();
    } else if constexpr (std::is_same_v<T, bool>) {
        if (!v.is_boolean()) fail(path, fmt::format("expected true or false, found {}", v.type_name()));
        out = v.get<bool>();
    } else if constexpr (std::is_same_v<T, int>) {
        if (!v.is_number_integer() || v.get<std::int64_t>() < std::numeric_limits<int>::min() ||
            v.get<std::int64_t>() > std::numeric_limits<int>::max())
            fail(path, fmt::format("expected an integer, found {} {}", v.type_name(), v.dump()));
        out = static_cast<int>(v.get<std::int64_t>());
    } else if constexpr (std::is_same_v<T, std::uint64_t>) {
        if (v.is_number_unsigned()) out = v.get<std::uint64_t>();
        else if (v.is_number_integer() && v.get<std::int64_t>() >= 0) out = static_cast<std::uint64_t>(v.get<std::int64_t>());
        else fail(path, fmt::format("expected a non-negative integer, found {} {}", v.type_name(), v.dump()));
    } else if constexpr (Described<T>) {
        read_object(v, path, out);
    } else if constexpr (requires { out.push_back(typename T::value_type{}); }) {
        if (!v.is_array()) fail(path, fmt::format("expected an array, found {}", v.type_name()));
        out.resize(v.size());
        for (std::size_t i = 0; i < v.size(); ++i) read_value(v[i], item_path(path, i), out[i]);
    } else { // a map of names, e.g. cycles by context then category
        if (!v.is_object()) fail(path, fmt::format("expected an object, found {}", v.type_name()));
        for (const auto& [key, e] : v.items()) read_value(e, join_path(path, key), out[key]);
    }
}

} // namespace

json to_json(const results::RunResults& r) {
    json out = write_object(r);
    out["format"] = "kdsim-results";
    out["format_version"] = RESULTS_FORMAT_VERSION;
    for (std::size_t m = 0; m < r.machines.size(); ++m)
        for (std::size_t c = 0; c < r.machines[m].cpus.size(); ++c) {
            out["machines"][m]["cpus"][c]["derived"] = derived_json(r.machines[m].cpus[c], r.machines[m].clock_hz);
            const auto& by = r.machines[m].cpus[c].simd.longest_bracket_holder_by_driver;
            if (by.empty()) continue;
            json a = json::array();
            for (const auto& [driver, holder] : by) a.push_back({{"driver", driver}, {"holder", holder}});
            out["machines"][m]["cpus"][c]["simd"]["longest_bracket_holder_by_driver"] = a;
        }
    for (std::size_t w = 0; w < r.workloads.size(); ++w) {
        if (!r.workloads[w].data_lost.empty()) out["workloads"][w]["data_lost"] = r.workloads[w].data_lost;
        if (r.workloads[w].notes.empty()) continue;
        json notes = json::array();
        for (const auto& [k, v] : r.workloads[w].notes) notes.push_back({{"key", k}, {"text", v}});
        out["workloads"][w]["notes"] = notes;
    }
    for (std::size_t i = 0; i < r.statistics.size(); ++i) {
        const auto& st = r.statistics[i];
        out["statistics"][i]["value"] = st.integral && st.value >= 0 ? json(static_cast<std::uint64_t>(st.value)) : number(st.value);
    }
    for (std::size_t m = 0; m < r.machines.size(); ++m) {
        const auto& mr = r.machines[m];
        if (!mr.profile_sha256.empty()) out["machines"][m]["profile_sha256"] = mr.profile_sha256;
        if (!mr.profile_file.empty()) out["machines"][m]["profile_file"] = mr.profile_file; // a private profile only
    }
    if (!r.steady_state.empty()) out["steady_state"] = write_value(r.steady_state); // only runs stopped by --precision
    if (!r.sweep_point.empty()) out["sweep_point"] = write_value(r.sweep_point); // only a kdsim sweep point's file
    return out;
}

results::RunResults from_json(const json& j) {
    const std::string top;
    std::string format;
    read_value(member(j, top, "format"), "format", format);
    if (format != "kdsim-results") fail("format", "not a kdsim results file");
    std::uint64_t version = 0;
    read_value(member(j, top, "format_version"), "format_version", version);
    if (version != RESULTS_FORMAT_VERSION)
        fail("format_version", fmt::format("version {} is not supported (this build reads {})", version, RESULTS_FORMAT_VERSION));

    results::RunResults r;
    read_object(j, top, r);
    for (std::size_t m = 0; m < r.machines.size(); ++m)
        for (std::size_t c = 0; c < r.machines[m].cpus.size(); ++c) {
            const json& sj = j["machines"][m]["cpus"][c]["simd"];
            if (!sj.contains("longest_bracket_holder_by_driver")) continue;
            const std::string p = fmt::format("machines[{}].cpus[{}].simd.longest_bracket_holder_by_driver", m, c);
            const json& by = sj["longest_bracket_holder_by_driver"];
            if (!by.is_array()) fail(p, fmt::format("expected an array, found {}", by.type_name()));
            for (std::size_t i = 0; i < by.size(); ++i) {
                std::string driver, holder;
                read_value(member(by[i], item_path(p, i), "driver"), join_path(item_path(p, i), "driver"), driver);
                read_value(member(by[i], item_path(p, i), "holder"), join_path(item_path(p, i), "holder"), holder);
                r.machines[m].cpus[c].simd.longest_bracket_holder_by_driver.emplace_back(std::move(driver), std::move(holder));
            }
        }
    for (std::size_t m = 0; m < r.machines.size(); ++m)
        for (auto [key, field] : {std::pair{"profile_sha256", &results::MachineResult::profile_sha256},
                                  std::pair{"profile_file", &results::MachineResult::profile_file}})
            if (j["machines"][m].contains(key))
                read_value(j["machines"][m][key], fmt::format("machines[{}].{}", m, key), r.machines[m].*field);
    for (std::size_t w = 0; w < r.workloads.size(); ++w) {
        const json& wj = j["workloads"][w];
        if (wj.contains("data_lost"))
            read_value(wj["data_lost"], join_path(item_path("workloads", w), "data_lost"), r.workloads[w].data_lost);
        if (!wj.contains("notes")) continue;
        const std::string p = join_path(item_path("workloads", w), "notes");
        const json& notes = member(wj, item_path("workloads", w), "notes");
        if (!notes.is_array()) fail(p, fmt::format("expected an array, found {}", notes.type_name()));
        for (std::size_t i = 0; i < notes.size(); ++i) {
            std::string key, text;
            read_value(member(notes[i], item_path(p, i), "key"), join_path(item_path(p, i), "key"), key);
            read_value(member(notes[i], item_path(p, i), "text"), join_path(item_path(p, i), "text"), text);
            r.workloads[w].notes.emplace_back(std::move(key), std::move(text));
        }
    }
    for (std::size_t i = 0; i < r.statistics.size(); ++i) {
        const std::string p = item_path("statistics", i);
        const json& v = member(j["statistics"][i], p, "value");
        auto& s = r.statistics[i];
        s.integral = v.is_number_integer();
        if (s.integral) {
            std::uint64_t n = 0;
            read_value(v, join_path(p, "value"), n);
            s.value = static_cast<double>(n);
        } else read_value(v, join_path(p, "value"), s.value);
    }
    if (j.contains("steady_state")) read_value(j["steady_state"], "steady_state", r.steady_state);
    if (j.contains("sweep_point")) read_value(j["sweep_point"], "sweep_point", r.sweep_point);
    return r;
}

std::string to_json_text(const results::RunResults& r) {
    // Invalid UTF-8 in a name is replaced (U+FFFD) rather than making the whole file unwritable.
    return to_json(r).dump(2, ' ', false, json::error_handler_t::replace) + "\n";
}

} // namespace kdsim::report
