#include "report/rows.h"

#include "report/format.h"

#include <fmt/format.h>

#include <algorithm>

namespace kdsim::report::detail {

std::string Row::identity() const {
    return fmt::format("{}\x1f{}\x1f{}\x1f{}\x1f{}", section, machine, cpu ? std::to_string(*cpu) : "",
                       workload, key);
}

std::string Row::subject() const {
    if (section == "run") return "run";
    if (section == "finding") return "findings of " + machine;
    if (section == "machine" || (section == "statistic" && !cpu)) return "machine " + machine;
    if (section == "workload") return fmt::format("workload {} ({} cpu {})", workload, machine, cpu.value_or(0));
    return fmt::format("{} cpu {}", machine, cpu.value_or(0));
}

namespace {

struct RowSink {
    std::vector<Row>& rows;
    std::string section;
    std::string machine;
    std::optional<int> cpu;
    std::string workload;

    void count(std::string key, std::uint64_t v, std::string unit) {
        rows.push_back({section, machine, cpu, workload, std::move(key), static_cast<double>(v), v, std::move(unit)});
    }
    void real(std::string key, double v, std::string unit) {
        rows.push_back({section, machine, cpu, workload, std::move(key), v, std::nullopt, std::move(unit)});
    }
};

void statistic_rows(std::vector<Row>& rows, const std::vector<const results::Statistic*>& stats) {
    for (const results::Statistic* st : stats) {
        StatPlace p = stat_place(st->path);
        RowSink sink{rows, "statistic", p.machine, p.cpu, ""};
        if (st->integral && st->value >= 0) sink.count(p.key, static_cast<std::uint64_t>(st->value), st->unit);
        else sink.real(p.key, st->value, st->unit);
    }
}

} // namespace

StatPlace stat_place(const std::string& path) {
    StatPlace p;
    const std::size_t slash = path.find('/');
    if (slash == std::string::npos) return {path, std::nullopt, ""};
    p.machine = path.substr(0, slash);
    p.key = path.substr(slash + 1);
    const std::size_t next = p.key.find('/');
    if (next != std::string::npos && next > 3 && p.key.compare(0, 3, "cpu") == 0 &&
        std::all_of(p.key.begin() + 3, p.key.begin() + static_cast<std::ptrdiff_t>(next), [](char c) { return c >= '0' && c <= '9'; }) &&
        next - 3 < 9) {
        p.cpu = std::stoi(p.key.substr(3, next - 3));
        p.key = p.key.substr(next + 1);
    }
    return p;
}

std::vector<const results::Statistic*> statistics_of(const results::RunResults& r, const std::string& machine,
                                                     std::optional<int> cpu) {
    std::vector<const results::Statistic*> out;
    for (const auto& st : r.statistics) {
        if (st.path.size() <= machine.size() || st.path.compare(0, machine.size(), machine) != 0 || st.path[machine.size()] != '/')
            continue;
        if (stat_place(st.path).cpu == cpu) out.push_back(&st);
    }
    return out;
}

std::vector<Row> flatten(const results::RunResults& r) {
    std::vector<Row> rows;
    RowSink run{rows, "run", "", std::nullopt, ""};
    run.real("simulated_us", r.simulated_us, "us");
    run.count("events", r.events, "count");
    run.count("failed", r.failed ? 1 : 0, "bool");
    for (const auto& f : r.finding_counts) RowSink{rows, "finding", f.machine, std::nullopt, ""}.count(f.kind, f.count, "count");

    for (const auto& m : r.machines) {
        RowSink machine{rows, "machine", m.name, std::nullopt, ""};
        machine.count("clock_hz", m.clock_hz, "Hz");
        statistic_rows(rows, statistics_of(r, m.name, std::nullopt));
        for (const auto& c : m.cpus) {
            RowSink cpu{rows, "cpu", m.name, c.id, ""};
            cpu.real("busy_us", c.busy_us, "us");
            cpu.real("idle_us", c.idle_us, "us");
            cpu.real("longest_np_span_us", c.longest_np_span_us, "us");
            cpu.real("longest_np_span_start_us", c.longest_np_span_start_us, "us");

            RowSink cycles{rows, "cycles", m.name, c.id, ""};
            for (const auto& [context, by_cat] : c.cycles)
                for (const auto& [category, n] : by_cat) cycles.count(context + "." + category, n, "cycles");

            const auto& s = c.simd;
            RowSink simd{rows, "simd", m.name, c.id, ""};
            simd.real("longest_bracket_us", s.longest_bracket_us, "us");
            simd.count("longest_bracket_cycles", s.longest_bracket_cycles, "cycles");
            simd.count("longest_bracket_bytes", s.longest_bracket_bytes, "bytes");
            simd.real("longest_bracket_start_us", s.longest_bracket_start_us, "us");
            for (std::size_t k = 0; k < s.bytes_per_bracket_log2_hist.size(); ++k)
                simd.count("bytes_per_bracket_" + bucket_key(k), s.bytes_per_bracket_log2_hist[k], "brackets");
            statistic_rows(rows, statistics_of(r, m.name, c.id));
        }
    }

    for (const auto& w : r.workloads) {
        RowSink sink{rows, "workload", w.machine, w.cpu, w.name};
        for (const auto& metric : w.metrics) sink.real(metric.key, metric.value, metric.unit);
    }
    std::vector<const results::Statistic*> elsewhere; // of machines the results do not list
    for (const auto& st : r.statistics) {
        const std::string machine = stat_place(st.path).machine;
        if (std::none_of(r.machines.begin(), r.machines.end(), [&](const auto& m) { return m.name == machine; }))
            elsewhere.push_back(&st);
    }
    statistic_rows(rows, elsewhere);
    return rows;
}

std::map<std::string, std::uint64_t> cycles_by_category(const results::CpuResult& c) {
    std::map<std::string, std::uint64_t> out;
    for (const auto& [context, by_cat] : c.cycles)
        for (const auto& [category, n] : by_cat) out[category] += n;
    return out;
}

std::map<std::string, std::uint64_t> cycles_by_context(const results::CpuResult& c) {
    std::map<std::string, std::uint64_t> out{{"task", 0}, {"softirq", 0}, {"hardirq", 0}};
    for (const auto& [context, by_cat] : c.cycles)
        for (const auto& [category, n] : by_cat) out[context] += n;
    return out;
}

std::uint64_t total_cycles(const results::CpuResult& c) {
    std::uint64_t total = 0;
    for (const auto& [context, by_cat] : c.cycles)
        for (const auto& [category, n] : by_cat) total += n;
    return total;
}

std::vector<std::string> context_order(const std::map<std::string, std::uint64_t>& by_context) {
    std::vector<std::string> order{"task", "softirq", "hardirq"};
    for (const auto& [context, n] : by_context)
        if (context != "task" && context != "softirq" && context != "hardirq") order.push_back(context);
    return order;
}

} // namespace kdsim::report::detail
