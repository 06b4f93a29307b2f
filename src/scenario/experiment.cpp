#include "scenario/experiment.h"

#include "scenario/toml_reader.h"

#include <array>
#include <cmath>

namespace kdsim::scenario {

namespace {

// Calls fn(table, key) for each element of the optional array of tables root[name]; an element
// that is not a table is an error at its position ("expected a table").
template <class F>
void for_each_table(detail::Reader& rd, const toml::table& root, std::string_view name, F&& fn) {
    const std::string n(name);
    const toml::array* a = rd.array(root, name, n, false, "an array of [[" + n + "]] tables");
    if (!a) return;
    for (std::size_t i = 0; i < a->size(); ++i) {
        const std::string key = detail::index_key(n, i);
        const toml::table* t = a->get(i)->as_table();
        if (!t) {
            rd.error(*a->get(i), key, "expected a table, found " + detail::describe(a->get(i)));
            continue;
        }
        fn(t, key);
    }
}

// A number > 0 at parent[name] (integer or float).
std::optional<double> positive_number(detail::Reader& rd, const toml::table& parent, std::string_view name,
                                      const std::string& key) {
    const toml::node* n = parent.get(name);
    if (!n) {
        rd.error(parent, key, "expected a number > 0, found nothing");
        return std::nullopt;
    }
    auto v = n->value<double>();
    if (!n->is_number() || !v || !(*v > 0) || !std::isfinite(*v)) {
        rd.error(*n, key, "expected a number > 0, found " + detail::describe(n));
        return std::nullopt;
    }
    return v;
}

// [[published]] and [[ratio]] of a reality case.
void load_published(detail::Reader& rd, const toml::table& root, Experiment& x) {
    for_each_table(rd, root, "published", [&](const toml::table* t, const std::string& key) {
        rd.check_keys(*t, key, "[[published]]",
                      {"figure", "value", "unit", "source", "quote", "scenario", "scenarios", "reduce", "where_zero",
                       "metric", "scale"});
        auto figure = rd.string(*t, "figure", key + ".figure", true);
        auto value = positive_number(rd, *t, "value", key + ".value");
        auto unit = rd.string(*t, "unit", key + ".unit", true);
        auto source = rd.string(*t, "source", key + ".source", true);
        auto quote = rd.string(*t, "quote", key + ".quote", true);
        const bool swept = t->contains("scenarios");
        auto listed_in_experiment = [&](const std::string& f) {
            for (const auto& p : x.scenarios)
                if (p.filename() == f) return true;
            return false;
        };
        std::optional<std::string> sc;
        std::vector<std::string> sweep;
        std::vector<std::string> where_zero;
        if (swept) {
            if (t->contains("scenario"))
                rd.error(*t->get("scenario"), key + ".scenario", "expected either scenario or scenarios, found both");
            if (const toml::array* a = rd.array(*t, "scenarios", key + ".scenarios", true, "a list of scenario files")) {
                for (std::size_t i = 0; i < a->size(); ++i) {
                    const toml::node& n = *a->get(i);
                    auto f = n.value<std::string>();
                    if (!f || !listed_in_experiment(*f))
                        rd.error(n, detail::index_key(key + ".scenarios", i),
                                 "expected one of experiment.scenarios, found " + detail::describe(&n));
                    else sweep.push_back(*f);
                }
                if (a->size() < 2) rd.error(*t->get("scenarios"), key + ".scenarios", "expected at least two scenario files");
            }
            if (rd.choice(*t, "reduce", key + ".reduce", true, {"max"}) && !sweep.empty()) sc = sweep.front();
            if (const toml::array* a = rd.array(*t, "where_zero", key + ".where_zero", false, "a list of results paths"))
                for (std::size_t i = 0; i < a->size(); ++i) {
                    const toml::node& n = *a->get(i);
                    if (auto w = n.value<std::string>()) where_zero.push_back(*w);
                    else rd.error(n, detail::index_key(key + ".where_zero", i), "expected a results path, found " + detail::describe(&n));
                }
        } else {
            sc = rd.string(*t, "scenario", key + ".scenario", true);
            for (const char* k : {"reduce", "where_zero"})
                if (t->contains(k)) rd.error(*t->get(k), key + "." + k, "expected only with scenarios (a sweep), found it with scenario");
        }
        auto metric = rd.string(*t, "metric", key + ".metric", true);
        std::optional<double> scale = 1.0;
        if (t->contains("scale")) scale = positive_number(rd, *t, "scale", key + ".scale");
        if (figure)
            for (const auto& o : x.published)
                if (o.figure == *figure) rd.error(*t, key + ".figure", "expected a figure name not used before, found " + detail::quote(*figure));
        if (sc && !swept && !listed_in_experiment(*sc))
            rd.error(*t->get("scenario"), key + ".scenario", "expected one of experiment.scenarios, found " + detail::quote(*sc));
        if (!(figure && value && unit && source && quote && sc && metric && scale)) return;
        x.published.push_back({*figure, *value, *unit, *source, *quote, *sc, *metric, *scale, std::move(sweep), std::move(where_zero)});
    });
    for_each_table(rd, root, "ratio", [&](const toml::table* t, const std::string& key) {
        rd.check_keys(*t, key, "[[ratio]]", {"label", "numerator", "denominator"});
        auto label = rd.string(*t, "label", key + ".label", true);
        auto num = rd.string(*t, "numerator", key + ".numerator", true);
        auto den = rd.string(*t, "denominator", key + ".denominator", true);
        auto known = [&](const std::optional<std::string>& f, const char* k) {
            if (!f) return false;
            for (const auto& p : x.published)
                if (p.figure == *f) return true;
            rd.error(*t->get(k), key + "." + k, "expected the figure of a [[published]] table, found " + detail::quote(*f));
            return false;
        };
        bool ok = known(num, "numerator") & known(den, "denominator");
        if (label && ok) x.ratios.push_back({*label, *num, *den});
    });
}

} // namespace

Experiment load_experiment(const std::filesystem::path& manifest) {
    std::vector<Diagnostic> diags;
    detail::Reader rd(manifest.string(), diags);
    std::optional<toml::table> parsed;
    if (auto text = detail::read_input_text(manifest, rd)) parsed = detail::parse_toml_text(*text, rd);
    if (!parsed) throw InputError(std::move(diags));
    const toml::table& root = *parsed;
    Experiment x;
    x.dir = manifest.parent_path();
    rd.check_keys(root, "", "the manifest", {"experiment", "column", "breakdown", "compare", "published", "ratio"});
    if (const toml::table* e = rd.table(root, "experiment", "experiment", true, "an [experiment] table")) {
        rd.check_keys(*e, "experiment", "[experiment]", {"id", "title", "question", "expect", "scenarios"});
        if (auto v = rd.string(*e, "id", "experiment.id", true)) x.id = *v;
        if (auto v = rd.string(*e, "title", "experiment.title", true)) x.title = *v;
        if (auto v = rd.string(*e, "question", "experiment.question", false)) x.question = *v;
        if (auto v = rd.choice(*e, "expect", "experiment.expect", false, {"ok", "clobber", "stale"}))
            x.expect = std::array{"ok", "clobber", "stale"}[*v];
        if (const toml::array* a = rd.array(*e, "scenarios", "experiment.scenarios", true, "a list of scenario files")) {
            for (std::size_t i = 0; i < a->size(); ++i) {
                const toml::node& n = *a->get(i);
                std::string key = detail::index_key("experiment.scenarios", i);
                auto s = n.value<std::string>();
                if (!s) {
                    rd.error(n, key, "expected a file name, found " + detail::describe(&n));
                    continue;
                }
                std::filesystem::path p = x.dir / *s;
                if (!std::filesystem::exists(p)) rd.error(n, key, "no such scenario file: " + p.string());
                x.scenarios.push_back(p);
            }
        }
    }
    for_each_table(rd, root, "column", [&](const toml::table* t, const std::string& key) {
        rd.check_keys(*t, key, "[[column]]", {"label", "metric", "per"});
        auto label = rd.string(*t, "label", key + ".label", true);
        auto metric = rd.string(*t, "metric", key + ".metric", true);
        auto per = rd.string(*t, "per", key + ".per", false);
        if (label && metric) x.columns.push_back({*label, *metric, per.value_or("")});
    });
    if (const toml::table* b = rd.table(root, "breakdown", "breakdown", false, "a [breakdown] table")) {
        rd.check_keys(*b, "breakdown", "[breakdown]", {"label", "prefix", "column"});
        ExperimentBreakdown bd;
        if (auto v = rd.string(*b, "label", "breakdown.label", true)) bd.label = *v;
        if (auto v = rd.string(*b, "prefix", "breakdown.prefix", true)) bd.prefix = *v;
        for_each_table(rd, *b, "column", [&](const toml::table* t, const std::string& key) {
            rd.check_keys(*t, "breakdown." + key, "[[breakdown.column]]", {"label", "metric", "per"});
            auto label = rd.string(*t, "label", "breakdown." + key + ".label", true);
            auto metric = rd.string(*t, "metric", "breakdown." + key + ".metric", true);
            auto per = rd.string(*t, "per", "breakdown." + key + ".per", false);
            if (label && metric) bd.columns.push_back({*label, *metric, per.value_or("")});
        });
        x.breakdown = std::move(bd);
    }
    for_each_table(rd, root, "compare", [&](const toml::table* t, const std::string& key) {
        rd.check_keys(*t, key, "[[compare]]", {"before", "after"});
        auto b = rd.string(*t, "before", key + ".before", true);
        auto a = rd.string(*t, "after", key + ".after", true);
        if (b && !std::filesystem::exists(x.dir / *b)) rd.error(*t, key + ".before", "no such scenario file: " + *b);
        if (a && !std::filesystem::exists(x.dir / *a)) rd.error(*t, key + ".after", "no such scenario file: " + *a);
        if (a && b) x.compares.push_back({*b, *a});
    });
    load_published(rd, root, x);
    if (!diags.empty()) throw InputError(std::move(diags));
    return x;
}

} // namespace kdsim::scenario
