// --trace-categories and --trace-cpus (see trace_select.h).
#include "system/trace_select.h"

#include "kernel/types.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>

namespace kdsim::system {

namespace {

using kernel::TraceKind;

constexpr std::uint32_t bit(TraceKind k) { return 1u << static_cast<unsigned>(k); }

struct KindGroup {
    std::string_view name;
    std::uint32_t kinds;
};
constexpr KindGroup GROUPS[] = {
    {"sched", bit(TraceKind::TASK) | bit(TraceKind::IDLE) | bit(TraceKind::SWITCH)},
    {"softirq", bit(TraceKind::SOFTIRQ)},
    {"irq", bit(TraceKind::HARDIRQ)},
    {"nmi", bit(TraceKind::NMI)},
    {"simd", bit(TraceKind::BRACKET) | bit(TraceKind::CLOBBER)},
    {"exec", bit(TraceKind::EXEC)},
    {"tcp", bit(TraceKind::TCP_PROBE)},
};

std::string accepted_categories() {
    std::string s;
    for (const KindGroup& g : GROUPS) s += fmt::format("{}, ", g.name);
    s += "exec:<category> with <category> one of ";
    for (unsigned c = 0; c < kernel::CATS; ++c)
        s += fmt::format("{}{}", c ? ", " : "", kernel::to_string(static_cast<kernel::Cat>(c)));
    return s;
}

// The comma-separated, trimmed items of `list` (empty items kept, so that they can be refused).
std::vector<std::string_view> items_of(std::string_view list) {
    std::vector<std::string_view> out;
    for (std::size_t at = 0;;) {
        const std::size_t comma = list.find(',', at);
        std::string_view item = list.substr(at, comma == std::string_view::npos ? std::string_view::npos : comma - at);
        while (!item.empty() && item.front() == ' ') item.remove_prefix(1);
        while (!item.empty() && item.back() == ' ') item.remove_suffix(1);
        out.push_back(item);
        if (comma == std::string_view::npos) return out;
        at = comma + 1;
    }
}

bool parse_int(std::string_view s, int& v) {
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    return ec == std::errc() && p == s.data() + s.size() && v >= 0;
}

bool is_cpu_range(std::string_view s) { return !s.empty() && s.front() >= '0' && s.front() <= '9'; }

} // namespace

std::string parse_trace_categories(std::string_view list, kernel::TraceFilter& f) {
    if (list.empty()) return {};
    std::uint32_t kinds = 0, cats = 0;
    for (std::string_view item : items_of(list)) {
        if (item.starts_with("exec:")) {
            const std::string_view name = item.substr(5);
            unsigned c = 0;
            while (c < kernel::CATS && kernel::to_string(static_cast<kernel::Cat>(c)) != name) ++c;
            if (c == kernel::CATS)
                return fmt::format("--trace-categories: unknown cost category '{}'; expected {}", name,
                                   accepted_categories());
            kinds |= bit(TraceKind::EXEC);
            cats |= 1u << c;
            continue;
        }
        const KindGroup* g = nullptr;
        for (const KindGroup& x : GROUPS)
            if (x.name == item) g = &x;
        if (!g)
            return fmt::format("--trace-categories: unknown category '{}'; expected {}", item, accepted_categories());
        kinds |= g->kinds;
        if (g->kinds & bit(TraceKind::EXEC)) cats = ~0u;
    }
    f.kinds = kinds;
    f.exec_cats = cats ? cats : ~0u;
    return {};
}

bool TraceCpus::selects(std::string_view machine, int cpu) const {
    if (all()) return true;
    for (const Item& i : items)
        if ((i.machine.empty() || i.machine == machine) && (i.last < 0 || (cpu >= i.first && cpu <= i.last)))
            return true;
    return false;
}

std::string parse_trace_cpus(std::string_view spec, TraceCpus& out) {
    out.items.clear();
    if (spec.empty()) return {};
    for (std::string_view item : items_of(spec)) {
        TraceCpus::Item it;
        std::string_view range;
        if (const std::size_t colon = item.find(':'); colon != std::string_view::npos) {
            it.machine = std::string(item.substr(0, colon));
            range = item.substr(colon + 1);
            if (it.machine.empty() || range.empty()) item = {};
        } else if (is_cpu_range(item)) {
            range = item;
        } else {
            it.machine = std::string(item);
        }
        if (item.empty())
            return fmt::format("--trace-cpus: empty item in '{}'; expected N, N-M, MACHINE or MACHINE:N-M", spec);
        if (!range.empty()) {
            const std::size_t dash = range.find('-');
            const bool ok = dash == std::string_view::npos
                                ? parse_int(range, it.first) && parse_int(range, it.last)
                                : parse_int(range.substr(0, dash), it.first) && parse_int(range.substr(dash + 1), it.last);
            if (!ok || it.last < it.first)
                return fmt::format("--trace-cpus: '{}' is not a CPU number or range N-M with N <= M", range);
        }
        out.items.push_back(std::move(it));
    }
    return {};
}

std::string check_trace_cpus(const TraceCpus& cpus, const std::vector<std::pair<std::string, int>>& machines) {
    std::string names;
    int most = 0;
    for (const auto& [name, n] : machines) {
        names += fmt::format("{}{} ({} CPUs)", names.empty() ? "" : ", ", name, n);
        most = std::max(most, n);
    }
    for (const TraceCpus::Item& i : cpus.items) {
        if (i.machine.empty()) {
            if (i.first >= most)
                return fmt::format("--trace-cpus: no machine has CPU {}; the machines are {}", i.first, names);
            continue;
        }
        auto m = std::find_if(machines.begin(), machines.end(), [&](const auto& x) { return x.first == i.machine; });
        if (m == machines.end())
            return fmt::format("--trace-cpus: no machine is named '{}'; the machines are {}", i.machine, names);
        if (i.last >= m->second)
            return fmt::format("--trace-cpus: machine {} has CPUs 0-{}, not {}", i.machine, m->second - 1, i.last);
    }
    return {};
}

} // namespace kdsim::system
