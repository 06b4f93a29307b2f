// The terminal summary (SPEC section 3). Layout and an example of each section are in
// docs/report-format.md.
#include "report/report.h"

#include "report/format.h"
#include "report/rows.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <iterator>

namespace kdsim::report {

namespace {

using namespace detail;

constexpr std::size_t WIDTH = 100;
constexpr std::size_t TOP_CATEGORIES = 8;

std::string us_text(double us) { return grouped_fixed(us, 3) + " µs"; }

struct Text {
    std::string out;

    template <typename... T>
    void line(fmt::format_string<T...> f, T&&... args) {
        fmt::format_to(std::back_inserter(out), f, std::forward<T>(args)...);
        out += '\n';
    }
    // "<indent><label padded to width><value>"
    void item(std::size_t indent, std::string_view label, std::size_t width, std::string_view value) {
        out += std::string(indent, ' ');
        out += pad_right(label, width);
        out += value;
        out += '\n';
    }
    void blank() { out += '\n'; }
};

constexpr std::size_t HEAD = 20; // label column of the header and machine blocks
constexpr std::size_t LABEL = 25; // label column of the per-CPU blocks

void header(Text& t, const results::RunResults& r) {
    t.line("kdsim run summary: {}", r.scenario.empty() ? "(unnamed scenario)" : r.scenario);
    t.item(2, "description", HEAD, r.description.empty() ? "(none)" : r.description);
    if (!r.scenario_path.empty()) t.item(2, "scenario file", HEAD, r.scenario_path);
    t.item(2, "seed", HEAD, std::to_string(r.seed));
    t.item(2, "mode", HEAD, r.mode);
    t.item(2, "simulated time", HEAD, us_text(r.simulated_us));
    t.item(2, "events", HEAD, grouped(r.events));
    for (const auto& m : r.machines) {
        if (!m.profile_file.empty())
            t.line("  PRIVATE PROFILE on machine {}: {} is not the stock {}, see below", m.name, m.profile_file, m.profile);
        if (!m.overrides.empty())
            t.line("  PROFILE OVERRIDES on machine {}: {} figure{} replaced, see below", m.name, m.overrides.size(),
                   m.overrides.size() == 1 ? "" : "s");
    }
}

void machine_header(Text& t, const results::MachineResult& m) {
    t.blank();
    t.line("machine {}", m.name);
    if (m.profile_file.empty()) t.item(2, "profile", HEAD, m.profile);
    else t.item(2, "profile", HEAD, fmt::format("{} (PRIVATE: {}, sha256 {})", m.profile, m.profile_file, m.profile_sha256));
    t.item(2, "arch", HEAD, m.arch);
    t.item(2, "clock", HEAD, m.clock_hz ? fmt::format("{} ({} Hz)", frequency(m.clock_hz), grouped(m.clock_hz)) : "unknown");
    t.item(2, "preemption model", HEAD, m.preempt);
    t.item(2, "SIMD policy", HEAD, m.simd_policy);
    t.item(2, "chunking", HEAD, m.chunking);
    if (m.overrides.empty()) {
        t.item(2, "profile overrides", HEAD, m.profile_file.empty() ? "none (stock profile)" : "none");
        return;
    }
    t.line("  PROFILE OVERRIDES: {} profile figure{} replaced by the scenario; these are not the stock values:",
           m.overrides.size(), m.overrides.size() == 1 ? "" : "s");
    for (const auto& o : m.overrides) t.line("    {}", o);
}

void cpu_time(Text& t, const results::MachineResult& m, const results::CpuResult& c) {
    auto by_context = cycles_by_context(c);
    double busy_from_cycles = 0;
    for (const auto& [context, n] : by_context) busy_from_cycles += cycles_to_us(n, m.clock_hz);
    double whole = busy_from_cycles + c.idle_us;

    t.line("    {}{}{}", pad_right("CPU time by context", 22), pad_left("µs", 18), pad_left("share", 10));
    for (const auto& context : context_order(by_context)) {
        std::string value = m.clock_hz ? grouped_fixed(cycles_to_us(by_context[context], m.clock_hz), 3) : "n/a";
        t.line("      {}{}{}", pad_right(context, 20), pad_left(value, 18),
               pad_left(m.clock_hz ? percent(cycles_to_us(by_context[context], m.clock_hz), whole) : "-", 10));
    }
    t.line("      {}{}{}", pad_right("idle", 20), pad_left(grouped_fixed(c.idle_us, 3), 18), pad_left(percent(c.idle_us, whole), 10));
    // busy_us is the model's own clock of busy time; the cycles should add up to it.
    if (m.clock_hz && std::fabs(c.busy_us - busy_from_cycles) > std::max(1.0, 0.005 * c.busy_us))
        t.line("      note: busy_us is {} but the cycles add up to {}", us_text(c.busy_us), us_text(busy_from_cycles));

    auto by_category = cycles_by_category(c);
    std::vector<std::pair<std::string, std::uint64_t>> categories(by_category.begin(), by_category.end());
    std::stable_sort(categories.begin(), categories.end(), [](const auto& x, const auto& y) { return x.second > y.second; });
    double total = static_cast<double>(total_cycles(c));
    t.line("    {}{}{}", pad_right("top cost categories", 22), pad_left("cycles", 18), pad_left("share", 10));
    if (categories.empty()) t.line("      (no cycles recorded)");
    std::uint64_t rest = 0;
    for (std::size_t i = 0; i < categories.size(); ++i) {
        if (i >= TOP_CATEGORIES && categories.size() > TOP_CATEGORIES + 1) {
            rest += categories[i].second;
            continue;
        }
        t.line("      {}{}{}", pad_right(categories[i].first, 20), pad_left(grouped(categories[i].second), 18),
               pad_left(percent(static_cast<double>(categories[i].second), total), 10));
    }
    if (categories.size() > TOP_CATEGORIES + 1)
        t.line("      {}{}{}", pad_right(fmt::format("other ({} categories)", categories.size() - TOP_CATEGORIES), 20),
               pad_left(grouped(rest), 18), pad_left(percent(static_cast<double>(rest), total), 10));
}

void simd(Text& t, const results::CpuResult& c) {
    const auto& s = c.simd;
    if (std::all_of(s.bytes_per_bracket_log2_hist.begin(), s.bytes_per_bracket_log2_hist.end(),
                    [](std::uint64_t n) { return n == 0; })) {
        t.item(4, "SIMD", LABEL + 2, "no kernel SIMD brackets");
        return;
    }
    t.line("    SIMD");
    std::vector<std::string> buckets;
    for (std::size_t k = 0; k < s.bytes_per_bracket_log2_hist.size(); ++k)
        if (s.bytes_per_bracket_log2_hist[k]) buckets.push_back(fmt::format("{}: {}", bucket_label(k), grouped(s.bytes_per_bracket_log2_hist[k])));
    for (const auto& l : wrap(buckets, "      " + pad_right("bytes per bracket", LABEL), std::string(6 + LABEL, ' '), WIDTH))
        t.line("{}", l);
    std::string longest = fmt::format("{} cycles = {}, {} bytes", grouped(s.longest_bracket_cycles),
                                      us_text(s.longest_bracket_us), grouped(s.longest_bracket_bytes));
    t.item(6, "longest bracket", LABEL, longest);
    t.item(6, "  held by", LABEL,
           fmt::format("{}, from {}", s.longest_bracket_holder.empty() ? "(unknown)" : s.longest_bracket_holder,
                       us_text(s.longest_bracket_start_us)));
    for (const auto& [driver, holder] : s.longest_bracket_holder_by_driver)
        t.item(6, "  of " + driver, LABEL, holder.empty() ? "(unknown)" : holder);
}

void preemption(Text& t, const results::CpuResult& c) {
    t.line("    preemption");
    t.item(6, "longest non-preemptible", LABEL, fmt::format("{}, from {}", us_text(c.longest_np_span_us), us_text(c.longest_np_span_start_us)));
    t.item(6, "  held by", LABEL, c.longest_np_holder.empty() ? "(unknown)" : c.longest_np_holder);
}

// Every statistic of one place, generically: the non-zero ones as "path  value unit", the zero
// ones named on wrapped lines.
void statistics(Text& t, std::size_t indent, const std::string& title, const std::vector<const results::Statistic*>& stats) {
    if (stats.empty()) return;
    t.line("{}{}", std::string(indent, ' '), title);
    std::size_t width = LABEL;
    for (const results::Statistic* s : stats) width = std::max(width, columns(stat_place(s->path).key) + 2);
    std::vector<std::string> zero;
    for (const results::Statistic* s : stats) {
        const std::string key = stat_place(s->path).key;
        if (s->value == 0) zero.push_back(key);
        else t.item(indent + 2, key, width, display(s->value) + (s->unit.empty() ? "" : " " + s->unit));
    }
    const std::string pad(indent + 2, ' ');
    if (!zero.empty())
        for (const auto& l : wrap(zero, pad + pad_right("zero:", 7), pad + std::string(7, ' '), WIDTH)) t.line("{}", l);
}

void workloads(Text& t, const results::RunResults& r) {
    t.blank();
    if (r.workloads.empty()) {
        t.line("workloads: none");
        return;
    }
    t.line("workloads");
    for (const auto& w : r.workloads) {
        t.line("  {}: {} on {} cpu {}", w.name, w.kind, w.machine, w.cpu);
        std::size_t key_width = 0;
        for (const auto& metric : w.metrics) key_width = std::max(key_width, columns(metric.key));
        if (w.metrics.empty()) t.line("    (no metrics)");
        for (const auto& metric : w.metrics)
            t.line("    {} = {}{}{}", pad_right(metric.key, key_width), display(metric.value), metric.unit.empty() ? "" : " ", metric.unit);
        for (const auto& [key, text] : w.notes) t.line("    {}: {}", key, text);
    }
}

void invariants(Text& t, const results::RunResults& r) {
    t.blank();
    t.line("invariant violations");
    std::uint64_t total = 0;
    for (const auto& c : r.finding_counts) total += c.count;
    t.item(2, "findings", LABEL,
           r.findings.size() == total ? grouped(total) : fmt::format("{} (first {} shown)", grouped(total), r.findings.size()));
    for (std::size_t i = 0; i < r.findings.size(); ++i) {
        const auto& f = r.findings[i];
        t.line("    #{}  {} at {} on {} cpu {}", i + 1, f.kind, us_text(f.time_us), f.machine, f.cpu);
        if (!f.victim.empty()) t.line("        victim   {}", f.victim);
        if (!f.culprit.empty()) t.line("        culprit  {}", f.culprit);
        if (!f.where.empty()) t.line("        where    {}", f.where);
    }
    if (r.failures.empty()) {
        t.item(2, "failures", LABEL, "none");
    } else {
        t.item(2, "failures", LABEL, grouped(r.failures.size()));
        for (const auto& f : r.failures) t.line("    - {}", f);
    }
    if (!r.failed && (total > 0 || !r.failures.empty()))
        t.line("  note: the run is not marked failed although violations are listed above");

    std::size_t losing = 0;
    for (const auto& w : r.workloads) {
        if (w.data_lost.empty()) continue;
        if (losing++ == 0) t.line("  data lost and not recovered:");
        t.line("    - {} on {}: {}", w.name, w.machine, w.data_lost);
    }
    if (!r.failed) {
        if (losing == 0) t.line("RESULT: OK");
        else
            t.line("RESULT: OK, but {} workload{} lost data that nothing recovered (see \"data lost\" above)", losing,
                   losing == 1 ? "" : "s");
        return;
    }
    std::string reasons;
    for (const auto& f : r.failures) reasons += (reasons.empty() ? "" : "; ") + f;
    if (reasons.empty()) reasons = "no reason recorded";
    t.line("RESULT: FAILED ({})", reasons);
}

} // namespace

std::string summary_table(const results::RunResults& r) {
    Text t;
    header(t, r);
    for (const auto& m : r.machines) {
        machine_header(t, m);
        for (const auto& c : m.cpus) {
            t.blank();
            t.line("  {} cpu {}", m.name, c.id);
            cpu_time(t, m, c);
            simd(t, c);
            preemption(t, c);
            statistics(t, 4, "statistics", statistics_of(r, m.name, c.id));
        }
        const auto own = statistics_of(r, m.name, std::nullopt);
        if (!own.empty()) {
            t.blank();
            statistics(t, 2, m.name + " statistics (devices, tunnels, DMA)", own);
        }
    }
    workloads(t, r);
    invariants(t, r);
    return t.out;
}

} // namespace kdsim::report
