#include "report/rows.h"

#include "report/format.h"

#include <fmt/format.h>

namespace kdsim::report::detail {

std::string Row::identity() const {
    return fmt::format("{}\x1f{}\x1f{}\x1f{}\x1f{}", section, machine, cpu ? std::to_string(*cpu) : "",
                       workload, key);
}

std::string Row::subject() const {
    if (section == "run") return "run";
    if (section == "machine") return "machine " + machine;
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

} // namespace

std::vector<Row> flatten(const results::RunResults& r) {
    std::vector<Row> rows;
    RowSink run{rows, "run", "", std::nullopt, ""};
    run.real("simulated_us", r.simulated_us, "us");
    run.count("events", r.events, "count");
    run.count("clobber_count", r.clobber_count, "count");
    run.count("failed", r.failed ? 1 : 0, "bool");

    for (const auto& m : r.machines) {
        RowSink machine{rows, "machine", m.name, std::nullopt, ""};
        machine.count("clock_hz", m.clock_hz, "Hz");
        for (const auto& c : m.cpus) {
            RowSink cpu{rows, "cpu", m.name, c.id, ""};
            cpu.real("busy_us", c.busy_us, "us");
            cpu.real("idle_us", c.idle_us, "us");
            cpu.count("hardirqs", c.hardirqs, "count");
            cpu.count("softirq_runs", c.softirq_runs, "count");
            cpu.count("softirq_restarts", c.softirq_restarts, "count");
            cpu.count("ksoftirqd_wakeups", c.ksoftirqd_wakeups, "count");
            cpu.count("context_switches", c.context_switches, "count");
            cpu.count("preemptions", c.preemptions, "count");
            for (std::size_t i = 0; i < 4; ++i)
                cpu.count(std::string(IRQFLAG_OP_NAMES[i]) + "_ops", c.irqflag_ops[i], "count");
            cpu.count("bh_disable_ops", c.bh_disable_ops, "count");
            cpu.real("longest_np_span_us", c.longest_np_span_us, "us");
            cpu.real("longest_np_span_start_us", c.longest_np_span_start_us, "us");
            cpu.count("rcu_stall_warnings", c.rcu_stall_warnings, "count");
            cpu.count("rcu_exp_stall_warnings", c.rcu_exp_stall_warnings, "count");
            cpu.count("soft_lockups", c.soft_lockups, "count");
            cpu.count("simd_clobbers", c.simd_clobbers, "count");

            RowSink cycles{rows, "cycles", m.name, c.id, ""};
            for (const auto& [context, by_cat] : c.cycles)
                for (const auto& [category, n] : by_cat) cycles.count(context + "." + category, n, "cycles");

            const auto& s = c.simd;
            RowSink simd{rows, "simd", m.name, c.id, ""};
            simd.count("brackets", s.brackets, "count");
            simd.count("begin_end_cycles", s.begin_end_cycles, "cycles");
            simd.count("saves", s.saves, "count");
            simd.count("restores", s.restores, "count");
            simd.count("save_restore_cycles", s.save_restore_cycles, "cycles");
            simd.count("bytes", s.bytes, "bytes");
            simd.real("longest_bracket_us", s.longest_bracket_us, "us");
            simd.count("longest_bracket_cycles", s.longest_bracket_cycles, "cycles");
            simd.count("longest_bracket_bytes", s.longest_bracket_bytes, "bytes");
            simd.real("longest_bracket_start_us", s.longest_bracket_start_us, "us");
            simd.count("fallbacks", s.fallbacks, "count");
            simd.count("kernel_traps", s.kernel_traps, "count");
            simd.count("kernel_use_warnings", s.kernel_use_warnings, "count");
            for (std::size_t k = 0; k < s.bytes_per_bracket_log2_hist.size(); ++k)
                simd.count("bytes_per_bracket_" + bucket_key(k), s.bytes_per_bracket_log2_hist[k], "brackets");
        }
    }

    for (const auto& w : r.workloads) {
        RowSink sink{rows, "workload", w.machine, w.cpu, w.name};
        for (const auto& metric : w.metrics) sink.real(metric.key, metric.value, metric.unit);
    }
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
