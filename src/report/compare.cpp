// Comparison of two runs: matched metrics with B/A ratios, and the attribution of the change in
// cycles to cost categories, which answers "why is B faster than A".
#include "report/report.h"

#include "report/format.h"
#include "report/rows.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <iterator>
#include <map>
#include <set>
#include <unordered_map>

namespace kdsim::report {

namespace {

using namespace detail;
using nlohmann::json;

constexpr std::size_t WIDTH = 100;
constexpr std::size_t TOP_CATEGORIES = 8;

struct Matched {
    const Row* a;
    const Row* b;
};

struct Matching {
    std::vector<Row> rows_a, rows_b;
    std::vector<Matched> both; // in A's order
    std::vector<const Row*> only_a, only_b;
};

// The identity of each row, with a suffix when the same identity occurs again (a workload
// that reports one key twice), so that the n-th occurrence in A meets the n-th in B.
std::vector<std::string> occurrence_keys(const std::vector<Row>& rows) {
    std::unordered_map<std::string, int> seen;
    std::vector<std::string> keys;
    keys.reserve(rows.size());
    for (const auto& row : rows) {
        std::string id = row.identity();
        int n = seen[id]++;
        keys.push_back(n == 0 ? id : fmt::format("{}\x1f#{}", id, n));
    }
    return keys;
}

Matching match(const results::RunResults& a, const results::RunResults& b) {
    Matching m{flatten(a), flatten(b), {}, {}, {}};
    auto keys_a = occurrence_keys(m.rows_a);
    auto keys_b = occurrence_keys(m.rows_b);
    std::unordered_map<std::string, std::size_t> index_b;
    for (std::size_t i = 0; i < keys_b.size(); ++i) index_b.emplace(keys_b[i], i);
    std::vector<bool> used_b(m.rows_b.size(), false);
    for (std::size_t i = 0; i < keys_a.size(); ++i) {
        auto it = index_b.find(keys_a[i]);
        if (it == index_b.end()) {
            m.only_a.push_back(&m.rows_a[i]);
        } else {
            m.both.push_back({&m.rows_a[i], &m.rows_b[it->second]});
            used_b[it->second] = true;
        }
    }
    for (std::size_t i = 0; i < m.rows_b.size(); ++i)
        if (!used_b[i]) m.only_b.push_back(&m.rows_b[i]);
    return m;
}

std::string label(const Row& row) {
    if (row.section == "cycles") return "cycles " + row.key;
    if (row.section == "simd") return "simd " + row.key;
    return row.key;
}

// ---- attribution -------------------------------------------------------------------------

struct CategoryChange {
    std::string category;
    std::uint64_t a = 0, b = 0;
    double delta() const { return static_cast<double>(b) - static_cast<double>(a); }
};

struct Attribution {
    std::string machine;
    std::uint64_t total_a = 0, total_b = 0;
    std::vector<CategoryChange> contexts;   // task, softirq, hardirq, others
    std::vector<CategoryChange> categories; // largest |change| first
};

void add_cycles(const results::MachineResult& m, std::map<std::string, std::uint64_t>& by_category,
                std::map<std::string, std::uint64_t>& by_context, std::uint64_t& total) {
    for (const auto& c : m.cpus) {
        for (const auto& [k, n] : cycles_by_category(c)) by_category[k] += n;
        for (const auto& [k, n] : cycles_by_context(c)) by_context[k] += n;
        total += total_cycles(c);
    }
}

std::vector<Attribution> attribute(const results::RunResults& a, const results::RunResults& b) {
    std::vector<Attribution> out;
    for (const auto& ma : a.machines) {
        auto mb = std::find_if(b.machines.begin(), b.machines.end(), [&](const auto& m) { return m.name == ma.name; });
        if (mb == b.machines.end()) continue;
        Attribution at{ma.name, 0, 0, {}, {}};
        std::map<std::string, std::uint64_t> cat_a, cat_b, ctx_a{{"task", 0}, {"softirq", 0}, {"hardirq", 0}}, ctx_b = ctx_a;
        add_cycles(ma, cat_a, ctx_a, at.total_a);
        add_cycles(*mb, cat_b, ctx_b, at.total_b);

        std::map<std::string, std::uint64_t> ctx_all = ctx_a;
        ctx_all.insert(ctx_b.begin(), ctx_b.end());
        for (const auto& context : context_order(ctx_all)) at.contexts.push_back({context, ctx_a[context], ctx_b[context]});

        std::set<std::string> names;
        for (const auto& [k, n] : cat_a) names.insert(k);
        for (const auto& [k, n] : cat_b) names.insert(k);
        for (const auto& k : names) at.categories.push_back({k, cat_a[k], cat_b[k]});
        std::stable_sort(at.categories.begin(), at.categories.end(),
                         [](const auto& x, const auto& y) { return std::fabs(x.delta()) > std::fabs(y.delta()); });
        out.push_back(std::move(at));
    }
    return out;
}

double total_delta(const Attribution& at) { return static_cast<double>(at.total_b) - static_cast<double>(at.total_a); }

std::string share_of_change(const CategoryChange& c, const Attribution& at) {
    double total = total_delta(at);
    if (total == 0) return "-";
    return fmt::format("{:.1f}%", 100.0 * c.delta() / total);
}

template <typename... T>
void line(std::string& out, fmt::format_string<T...> f, T&&... args) {
    fmt::format_to(std::back_inserter(out), f, std::forward<T>(args)...);
    out += '\n';
}

void attribution_text(std::string& out, const Attribution& at) {
    out += '\n';
    line(out, "attribution: machine {}, cycles summed over all CPUs and contexts", at.machine);
    line(out, "  total cycles  A {}  B {}  change {}  B/A {}", grouped(at.total_a), grouped(at.total_b),
         signed_difference(at.total_a, at.total_b), ratio_text(static_cast<double>(at.total_a), static_cast<double>(at.total_b)));

    const auto* top = at.categories.empty() || at.categories.front().delta() == 0 ? nullptr : &at.categories.front();
    if (at.total_a == at.total_b && top == nullptr) {
        line(out, "  no cycle category changed");
        return;
    }
    if (at.total_a == at.total_b)
        line(out, "  B spends as many cycles as A");
    else if (at.total_a == 0)
        line(out, "  B spends more cycles than A");
    else
        line(out, "  B spends {:.1f}% {} cycles than A", 100.0 * std::fabs(total_delta(at)) / static_cast<double>(at.total_a),
             at.total_b < at.total_a ? "fewer" : "more");
    if (top)
        line(out, "  largest change: {}, {} cycles ({} of the change)", top->category, signed_difference(top->a, top->b),
             share_of_change(*top, at));

    std::size_t name_width = 20;
    for (const auto& c : at.categories) name_width = std::max(name_width, columns(c.category) + 2);
    std::size_t shown = std::min(TOP_CATEGORIES, at.categories.size());
    line(out, "  {}{}{}{}", pad_right("by context", name_width + 2), pad_left("A cycles", 15), pad_left("B cycles", 15), pad_left("change", 15));
    for (const auto& c : at.contexts)
        line(out, "    {}{}{}{}", pad_right(c.category, name_width), pad_left(grouped(c.a), 15), pad_left(grouped(c.b), 15),
             pad_left(signed_difference(c.a, c.b), 15));
    line(out, "  {}{}{}{}{}{}{}", pad_right("by category", name_width + 2), pad_left("A cycles", 15), pad_left("share", 7),
         pad_left("B cycles", 15), pad_left("share", 7), pad_left("change", 15), pad_left("of change", 11));
    for (std::size_t i = 0; i < shown; ++i) {
        const auto& c = at.categories[i];
        if (c.delta() == 0) break;
        line(out, "    {}{}{}{}{}{}{}", pad_right(c.category, name_width), pad_left(grouped(c.a), 15),
             pad_left(percent(static_cast<double>(c.a), static_cast<double>(at.total_a)), 7), pad_left(grouped(c.b), 15),
             pad_left(percent(static_cast<double>(c.b), static_cast<double>(at.total_b)), 7),
             pad_left(signed_difference(c.a, c.b), 15), pad_left(share_of_change(c, at), 11));
    }
    std::size_t changed = std::count_if(at.categories.begin(), at.categories.end(), [](const auto& c) { return c.delta() != 0; });
    if (changed > shown) line(out, "    ({} more categories changed; see compare JSON)", changed - shown);
}

// ---- header ------------------------------------------------------------------------------

void run_line(std::string& out, char which, const results::RunResults& r) {
    line(out, "  {}  {}, seed {}, {}{}", which == 'A' ? "A (before)" : "B (after) ", r.scenario, r.seed, r.mode,
         r.scenario_path.empty() ? "" : ", " + r.scenario_path);
    for (const auto& m : r.machines)
        if (!m.overrides.empty()) {
            line(out, "     PROFILE OVERRIDES in {}, machine {}:", which, m.name);
            for (const auto& o : m.overrides) line(out, "       {}", o);
        }
    if (r.failed) line(out, "     run {} FAILED", which);
}

json row_identity(const Row& row) {
    return {{"section", row.section}, {"machine", row.machine}, {"cpu", row.cpu ? json(*row.cpu) : json(nullptr)},
            {"workload", row.workload}, {"key", row.key}, {"unit", row.unit}};
}

json row_value(const Row& row) {
    if (row.exact) return *row.exact;
    if (!std::isfinite(row.value)) return nullptr;
    return round_significant(row.value);
}

json run_json(const results::RunResults& r) {
    json overrides = json::object();
    for (const auto& m : r.machines)
        if (!m.overrides.empty()) overrides[m.name] = m.overrides;
    return {{"scenario", r.scenario}, {"scenario_path", r.scenario_path}, {"seed", r.seed}, {"mode", r.mode},
            {"failed", r.failed}, {"overrides", overrides}};
}

} // namespace

std::string compare_table(const results::RunResults& a, const results::RunResults& b) {
    Matching m = match(a, b);
    std::string out;
    line(out, "kdsim comparison: B/A is after / before");
    run_line(out, 'A', a);
    run_line(out, 'B', b);

    std::size_t label_width = 24, unit_width = 6;
    for (const auto& [ra, rb] : m.both) {
        label_width = std::max(label_width, std::min<std::size_t>(columns(label(*ra)), 40));
        unit_width = std::max(unit_width, std::min<std::size_t>(columns(ra->unit), 10));
    }
    constexpr std::size_t VALUE = 16, RATIO = 9;
    // Metrics that are zero in both runs are named on one wrapped line per subject, not tabulated.
    std::vector<std::string> zeros;
    auto flush_zeros = [&] {
        if (zeros.empty()) return;
        for (const auto& l : wrap(zeros, "  zero in both: ", "    ", WIDTH)) line(out, "{}", l);
        zeros.clear();
    };
    std::string subject;
    for (const auto& [ra, rb] : m.both) {
        if (ra->subject() != subject) {
            flush_zeros();
            subject = ra->subject();
            out += '\n';
            line(out, "{}{}{}{}", pad_right(subject, 2 + label_width + 1 + unit_width), pad_left("A", VALUE), pad_left("B", VALUE),
                 pad_left("B/A", RATIO));
        }
        if (ra->value == 0 && rb->value == 0 && ra->unit == rb->unit) {
            zeros.push_back(label(*ra));
            continue;
        }
        std::string unit = ra->unit == rb->unit ? ra->unit : ra->unit + "|" + rb->unit;
        std::string ratio = ra->unit == rb->unit ? ratio_text(ra->value, rb->value) : "units?";
        line(out, "  {} {}{}{}{}", pad_right(label(*ra), label_width), pad_right(unit, unit_width),
             pad_left(display(ra->value, 9), VALUE), pad_left(display(rb->value, 9), VALUE), pad_left(ratio, RATIO));
    }
    flush_zeros();
    auto list_only = [&](const std::vector<const Row*>& rows, char which) {
        if (rows.empty()) return;
        out += '\n';
        line(out, "only in {} ({} metric{}):", which, rows.size(), rows.size() == 1 ? "" : "s");
        for (const Row* row : rows) line(out, "  {}: {} = {} {}", row->subject(), label(*row), display(row->value, 9), row->unit);
    };
    list_only(m.only_a, 'A');
    list_only(m.only_b, 'B');

    for (const auto& at : attribute(a, b)) attribution_text(out, at);
    return out;
}

json compare_json(const results::RunResults& a, const results::RunResults& b) {
    Matching m = match(a, b);
    json metrics = json::array();
    for (const auto& [ra, rb] : m.both) {
        json row = row_identity(*ra);
        if (ra->unit != rb->unit) row["unit_b"] = rb->unit;
        row["a"] = row_value(*ra);
        row["b"] = row_value(*rb);
        bool ratio_defined = ra->unit == rb->unit && ra->value != 0 && std::isfinite(rb->value / ra->value);
        row["ratio"] = ratio_defined ? json(round_significant(rb->value / ra->value)) : json(nullptr);
        metrics.push_back(std::move(row));
    }
    json only_a = json::array(), only_b = json::array();
    for (const Row* row : m.only_a) only_a.push_back(row_identity(*row));
    for (const Row* row : m.only_b) only_b.push_back(row_identity(*row));

    json attribution = json::array();
    for (const auto& at : attribute(a, b)) {
        auto change = [&](const CategoryChange& c, const char* name_key) {
            json j = {{name_key, c.category}, {"a_cycles", c.a}, {"b_cycles", c.b},
                      {"delta_cycles", static_cast<std::int64_t>(c.b) - static_cast<std::int64_t>(c.a)}};
            return j;
        };
        json contexts = json::array(), categories = json::array();
        for (const auto& c : at.contexts) contexts.push_back(change(c, "context"));
        for (const auto& c : at.categories) {
            json j = change(c, "category");
            auto share = [](std::uint64_t part, std::uint64_t whole) {
                return whole ? json(round_significant(100.0 * static_cast<double>(part) / static_cast<double>(whole))) : json(nullptr);
            };
            j["a_share_percent"] = share(c.a, at.total_a);
            j["b_share_percent"] = share(c.b, at.total_b);
            double total = total_delta(at);
            j["share_of_change_percent"] = total != 0 ? json(round_significant(100.0 * c.delta() / total)) : json(nullptr);
            categories.push_back(std::move(j));
        }
        attribution.push_back({{"machine", at.machine}, {"total_cycles_a", at.total_a}, {"total_cycles_b", at.total_b},
                               {"delta_cycles", static_cast<std::int64_t>(at.total_b) - static_cast<std::int64_t>(at.total_a)},
                               {"contexts", contexts}, {"categories", categories}});
    }
    return {{"format", "kdsim-compare"}, {"format_version", RESULTS_FORMAT_VERSION}, {"a", run_json(a)}, {"b", run_json(b)},
            {"metrics", metrics}, {"only_in_a", only_a}, {"only_in_b", only_b}, {"attribution", attribution}};
}

} // namespace kdsim::report
