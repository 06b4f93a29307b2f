// The sweep definition (scenario/sweep.h): --set arguments, seed lists, the [sweep] table, and
// the expansion into points.
#include "scenario/sweep.h"

#include "scenario/toml_reader.h"

#include <fmt/format.h>

#include <charconv>

namespace kdsim::scenario {

namespace {

InputError bad(const std::string& origin, const std::string& key, std::string message) {
    return InputError({Diagnostic{origin, 0, 0, key, std::move(message)}});
}

std::optional<std::uint64_t> seed_number(std::string_view s) {
    std::int64_t v = 0;
    auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (s.empty() || s[0] < '0' || s[0] > '9' || ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
    return static_cast<std::uint64_t>(v);
}

std::string trim(std::string_view s) {
    std::size_t b = s.find_first_not_of(" \t"), e = s.find_last_not_of(" \t");
    return b == std::string_view::npos ? std::string() : std::string(s.substr(b, e - b + 1));
}

} // namespace

SweepAxis parse_set_argument(std::string_view arg) {
    const std::string origin = fmt::format("--set {}", arg);
    std::size_t eq = arg.find('=');
    if (eq == std::string_view::npos)
        throw bad(origin, "", "expected KEY=VALUE[,VALUE...], e.g. machine[0].nic.rx_buffer=1536B,9KiB; found no '='");
    SweepAxis axis;
    axis.key = trim(arg.substr(0, eq));
    if (axis.key.empty()) throw bad(origin, "", "expected a scenario key before '='");
    std::string_view rest = arg.substr(eq + 1);
    if (trim(rest).empty()) throw bad(origin, axis.key, "expected one or more values after '=', found none (an empty grid)");
    for (std::size_t start = 0;;) {
        std::size_t comma = rest.find(',', start);
        std::string v = trim(rest.substr(start, comma == std::string_view::npos ? std::string_view::npos : comma - start));
        if (v.empty()) throw bad(origin, axis.key, "an empty value between commas");
        axis.values.push_back(Assignment{axis.key, v, fmt::format("{} (value {})", origin, v)});
        if (comma == std::string_view::npos) break;
        start = comma + 1;
    }
    return axis;
}

std::optional<std::vector<std::uint64_t>> parse_seeds(std::string_view text, std::string& why) {
    std::vector<std::uint64_t> out;
    std::string t = trim(text);
    if (std::size_t dots = t.find(".."); dots != std::string::npos) {
        auto lo = seed_number(trim(std::string_view(t).substr(0, dots)));
        auto hi = seed_number(trim(std::string_view(t).substr(dots + 2)));
        if (!lo || !hi || *hi < *lo) {
            why = fmt::format("expected a range FIRST..LAST of seeds from 0 to 9223372036854775807 with FIRST <= LAST, "
                              "found \"{}\"", t);
            return std::nullopt;
        }
        if (*hi - *lo >= MAX_SWEEP_POINTS) {
            why = fmt::format("at most {} seeds, found {}..{}", MAX_SWEEP_POINTS, *lo, *hi);
            return std::nullopt;
        }
        for (std::uint64_t s = *lo;; ++s) {
            out.push_back(s);
            if (s == *hi) break;
        }
        return out;
    }
    for (std::size_t start = 0;;) {
        std::size_t comma = t.find(',', start);
        std::string one = trim(std::string_view(t).substr(start, comma == std::string::npos ? std::string::npos : comma - start));
        auto s = seed_number(one);
        if (!s) {
            why = fmt::format("expected seeds such as 3, 1..5 or 1,2,7 (each 0 to 9223372036854775807), found \"{}\"", t);
            return std::nullopt;
        }
        out.push_back(*s);
        if (out.size() > MAX_SWEEP_POINTS) {
            why = fmt::format("at most {} seeds", MAX_SWEEP_POINTS);
            return std::nullopt;
        }
        if (comma == std::string::npos) break;
        start = comma + 1;
    }
    return out;
}

namespace detail {

std::optional<SweepSpec> read_sweep_table(const toml::table& root, Reader& r) {
    const toml::table* s = r.table(root, "sweep", "sweep", false, "a table [sweep]");
    if (!s) return std::nullopt;
    const std::size_t errors = r.errors();
    r.check_keys(*s, "sweep", "[sweep]", {"combine", "seeds", "set"});
    SweepSpec spec;
    if (auto c = r.choice(*s, "combine", "sweep.combine", false, {"grid", "list"})) spec.list = *c == 1;
    if (const toml::node* n = s->get("seeds")) {
        std::string text, why;
        if (n->is_string()) {
            text = n->as_string()->get();
        } else if (const toml::array* a = n->as_array(); a && !a->empty()) {
            for (const toml::node& e : *a) {
                if (!e.is_integer()) text = "not an integer";
                else text += (text.empty() ? "" : ",") + std::to_string(e.as_integer()->get());
            }
        }
        if (auto seeds = parse_seeds(text, why)) spec.seeds = std::move(*seeds);
        else r.error(*n, "sweep.seeds",
                     fmt::format("expected a range \"1..5\" or a non-empty array of integers from 0 to "
                                 "9223372036854775807, found {}", describe(n)));
    }
    const toml::table* set = r.table(*s, "set", "sweep.set", true,
                                     "a table [sweep.set] of \"key\" = [values] (e.g. \"link[0].rate\" = [\"1 Gbit/s\"])");
    if (set && set->empty()) r.error(*set, "sweep.set", "expected one or more \"key\" = [values], found an empty table (an empty grid)");
    if (set)
        for (auto&& [k, v] : *set) {
            std::string key = join_key("sweep.set", k.str());
            const toml::array* a = v.as_array();
            if (!a || a->empty()) {
                r.error(v, key, fmt::format("expected a non-empty array of values, found {}{}", describe(&v),
                                            a ? " (an empty grid)" : ""));
                continue;
            }
            SweepAxis axis{std::string(k.str()), {}};
            for (const toml::node& e : *a) {
                std::string text;
                if (const auto* str = e.as_string()) text = toml_string(str->get()); // quoted: it stays a string
                else if (const auto* i = e.as_integer()) text = std::to_string(i->get());
                else if (const auto* f = e.as_floating_point()) text = fmt::format("{}", f->get());
                else if (const auto* b = e.as_boolean()) text = b->get() ? "true" : "false";
                else {
                    r.error(e, key, fmt::format("expected a string, number or boolean, found {}", describe(&e)));
                    continue;
                }
                const auto& at = e.source().begin;
                axis.values.push_back(Assignment{axis.key, text, fmt::format("{}:{}:{}", r.file(), at.line, at.column)});
            }
            spec.axes.push_back(std::move(axis));
        }
    if (r.errors() != errors) return std::nullopt;
    return spec;
}

} // namespace detail

std::optional<SweepSpec> read_sweep(const std::filesystem::path& file, const std::optional<std::string>& text) {
    std::vector<Diagnostic> out;
    detail::Reader r(detail::display_path(file), out);
    auto root = text ? detail::parse_input_text(*text, r) : detail::parse_file(file, r);
    if (!root) throw InputError(std::move(out));
    auto spec = detail::read_sweep_table(*root, r);
    if (!out.empty()) throw InputError(std::move(out));
    return spec;
}

std::vector<SweepPoint> expand_sweep(const SweepSpec& spec, const std::string& origin) {
    if (spec.axes.empty()) throw bad(origin, "", "nothing to sweep: give --set KEY=VALUES or a [sweep] table (an empty grid)");
    std::size_t rows = 1;
    for (std::size_t i = 0; i < spec.axes.size(); ++i) {
        const SweepAxis& a = spec.axes[i];
        if (a.values.empty()) throw bad(origin, a.key, "no values (an empty grid)");
        for (std::size_t j = 0; j < i; ++j)
            if (spec.axes[j].key == a.key) throw bad(origin, a.key, "swept twice: give its values once");
        if (spec.list) {
            if (a.values.size() != spec.axes[0].values.size())
                throw bad(origin, a.key,
                          fmt::format("a list takes the i-th value of every key together, so every key needs as many "
                                      "values: {} has {}, {} has {}",
                                      spec.axes[0].key, spec.axes[0].values.size(), a.key, a.values.size()));
            rows = a.values.size();
        } else {
            if (a.values.size() > MAX_SWEEP_POINTS / rows)
                throw bad(origin, "", fmt::format("more than {} points", MAX_SWEEP_POINTS));
            rows *= a.values.size();
        }
    }
    const std::size_t seeds = spec.seeds.empty() ? 1 : spec.seeds.size();
    if (seeds > MAX_SWEEP_POINTS / rows)
        throw bad(origin, "", fmt::format("{} combinations x {} seeds is more than {} points", rows, seeds, MAX_SWEEP_POINTS));
    std::vector<SweepPoint> points;
    points.reserve(rows * seeds);
    for (std::size_t row = 0; row < rows; ++row) {
        SweepPoint p;
        std::size_t rest = row;
        p.set.resize(spec.axes.size());
        for (std::size_t i = spec.axes.size(); i-- > 0;) { // the last axis varies fastest
            const auto& vals = spec.axes[i].values;
            std::size_t k = spec.list ? row : rest % vals.size();
            if (!spec.list) rest /= vals.size();
            p.set[i] = vals[k];
        }
        for (std::size_t s = 0; s < seeds; ++s) {
            if (!spec.seeds.empty()) p.seed = spec.seeds[s];
            points.push_back(p);
        }
    }
    return points;
}

} // namespace kdsim::scenario
