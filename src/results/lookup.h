// Finding figures in a run's results by name or path: shared by the experiment tables of the CLI
// and the tests that check experiment claims.
#pragma once

#include "results/results.h"

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kdsim::results {

// The metric `key` of workload `workload` (any machine), if present.
inline std::optional<double> find_metric(const RunResults& r, std::string_view workload, std::string_view key) {
    for (const auto& w : r.workloads)
        if (w.name == workload)
            for (const auto& m : w.metrics)
                if (m.key == key) return m.value;
    return std::nullopt;
}

// The statistic at `path` ("dut/netdev/eth0/rx_dropped"), if registered.
inline std::optional<double> find_statistic(const RunResults& r, std::string_view path) {
    for (const auto& s : r.statistics)
        if (s.path == path) return s.value;
    return std::nullopt;
}

// Findings of `kind` ("simd_clobber", ...) counted over every machine.
inline std::uint64_t finding_count(const RunResults& r, std::string_view kind) {
    std::uint64_t n = 0;
    for (const auto& c : r.finding_counts)
        if (c.kind == kind) n += c.count;
    return n;
}

// The kept records of `kind`, in order.
inline std::vector<const Finding*> findings_of(const RunResults& r, std::string_view kind) {
    std::vector<const Finding*> out;
    for (const auto& f : r.findings)
        if (f.kind == kind) out.push_back(&f);
    return out;
}

// Whether `path` matches `pattern`, component by component; a `*` component matches any one.
inline bool path_matches(std::string_view pattern, std::string_view path) {
    for (;;) {
        const std::size_t a = pattern.find('/'), b = path.find('/');
        const std::string_view p = pattern.substr(0, a), q = path.substr(0, b);
        if (p != "*" && p != q) return false;
        if (a == std::string_view::npos || b == std::string_view::npos) return a == b;
        pattern.remove_prefix(a + 1);
        path.remove_prefix(b + 1);
    }
}

// Resolves a path against one run's results, summing every match of its `*` components. A first
// component "@<workload>" stands for the machine that workload runs on.
//   a statistic ("boot/cpu0/simd/brackets", "host/cpu*/softnet/time_squeeze");
//   a CPU's own figures "<machine>/cpu<N>/<f>", f one of busy_us, idle_us, longest_np_span_us,
//     cycles/<category> (summed over contexts), cycles/<context>/<category>, simd/longest_bracket_us,
//     simd/longest_bracket_bytes;
//   "workload.<name>.<key>"; "run.simulated_us", "run.events", "run.findings.<kind>" (every
//   machine's) and "run.clobbers" (= run.findings.simd_clobber).
// Nothing when no figure matches.
inline std::optional<double> resolve(const RunResults& r, std::string_view path) {
    if (path == "run.clobbers") return static_cast<double>(finding_count(r, "simd_clobber"));
    if (path.rfind("run.findings.", 0) == 0) return static_cast<double>(finding_count(r, path.substr(13)));
    if (path == "run.simulated_us") return r.simulated_us;
    if (path == "run.events") return static_cast<double>(r.events);
    if (path.rfind("workload.", 0) == 0) {
        std::string_view rest = path.substr(9);
        const std::size_t dot = rest.find('.');
        if (dot == std::string_view::npos) return std::nullopt;
        return find_metric(r, rest.substr(0, dot), rest.substr(dot + 1));
    }
    std::string named;
    if (path.rfind('@', 0) == 0) {
        const std::size_t slash = path.find('/');
        const std::string_view workload = path.substr(1, slash == std::string_view::npos ? slash : slash - 1);
        for (const auto& w : r.workloads)
            if (w.name == workload) named = w.machine + std::string(path.substr(workload.size() + 1));
        if (named.empty()) return std::nullopt;
        path = named;
    }
    std::optional<double> sum;
    auto take = [&](std::string_view figure, double v) {
        if (path_matches(path, figure)) sum = sum.value_or(0) + v;
    };
    for (const auto& s : r.statistics) take(s.path, s.value);
    for (const auto& m : r.machines)
        for (const auto& c : m.cpus) {
            const std::string cpu = m.name + "/cpu" + std::to_string(c.id) + "/";
            take(cpu + "busy_us", c.busy_us);
            take(cpu + "idle_us", c.idle_us);
            take(cpu + "longest_np_span_us", c.longest_np_span_us);
            take(cpu + "simd/longest_bracket_us", c.simd.longest_bracket_us);
            take(cpu + "simd/longest_bracket_bytes", static_cast<double>(c.simd.longest_bracket_bytes));
            std::map<std::string, std::uint64_t> by_category;
            for (const auto& [context, cats] : c.cycles)
                for (const auto& [category, n] : cats) by_category[category] += n;
            for (const auto& [category, n] : by_category) take(cpu + "cycles/" + category, static_cast<double>(n));
            for (const auto& [context, cats] : c.cycles)
                for (const auto& [category, n] : cats) take(cpu + "cycles/" + context + "/" + category, static_cast<double>(n));
        }
    return sum;
}

// The sum of the " + "-separated paths of `expr` (an experiment column's metric), each resolved
// as resolve() does; nothing when one of them is missing.
inline std::optional<double> resolve_sum(const RunResults& r, std::string_view expr) {
    double sum = 0;
    for (std::size_t at = 0;;) {
        const std::size_t plus = expr.find(" + ", at);
        std::optional<double> v = resolve(r, expr.substr(at, plus == std::string_view::npos ? plus : plus - at));
        if (!v) return std::nullopt;
        sum += *v;
        if (plus == std::string_view::npos) return sum;
        at = plus + 3;
    }
}

// An experiment column's cell: resolve_sum(metric), divided by resolve_sum(per) when `per` is not
// empty; nothing when a path is missing or the divisor is 0.
inline std::optional<double> resolve_ratio(const RunResults& r, std::string_view metric, std::string_view per) {
    std::optional<double> v = resolve_sum(r, metric);
    if (!v || per.empty()) return v;
    std::optional<double> d = resolve_sum(r, per);
    if (!d || *d == 0) return std::nullopt;
    return *v / *d;
}

} // namespace kdsim::results
