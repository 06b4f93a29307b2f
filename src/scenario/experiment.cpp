#include "scenario/experiment.h"

#include "scenario/toml_reader.h"

#include <array>

namespace kdsim::scenario {

Experiment load_experiment(const std::filesystem::path& manifest) {
    std::vector<Diagnostic> diags;
    detail::Reader rd(manifest.string(), diags);
    toml::table root;
    try {
        root = toml::parse_file(manifest.string());
    } catch (const toml::parse_error& e) {
        rd.error(e.source().begin, "", std::string(e.description()));
        throw InputError(std::move(diags));
    }
    Experiment x;
    x.dir = manifest.parent_path();
    rd.check_keys(root, "", "the manifest", {"experiment", "column", "compare"});
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
    if (const toml::array* cols = rd.array(root, "column", "column", false, "an array of [[column]] tables")) {
        for (std::size_t i = 0; i < cols->size(); ++i) {
            std::string key = detail::index_key("column", i);
            const toml::table* t = cols->get(i)->as_table();
            if (!t) {
                rd.error(*cols->get(i), key, "expected a table, found " + detail::describe(cols->get(i)));
                continue;
            }
            rd.check_keys(*t, key, "[[column]]", {"label", "metric"});
            auto label = rd.string(*t, "label", key + ".label", true);
            auto metric = rd.string(*t, "metric", key + ".metric", true);
            if (label && metric) x.columns.push_back({*label, *metric});
        }
    }
    if (const toml::array* cmps = rd.array(root, "compare", "compare", false, "an array of [[compare]] tables")) {
        for (std::size_t i = 0; i < cmps->size(); ++i) {
            std::string key = detail::index_key("compare", i);
            const toml::table* t = cmps->get(i)->as_table();
            if (!t) {
                rd.error(*cmps->get(i), key, "expected a table, found " + detail::describe(cmps->get(i)));
                continue;
            }
            rd.check_keys(*t, key, "[[compare]]", {"before", "after"});
            auto b = rd.string(*t, "before", key + ".before", true);
            auto a = rd.string(*t, "after", key + ".after", true);
            if (b && !std::filesystem::exists(x.dir / *b)) rd.error(*t, key + ".before", "no such scenario file: " + *b);
            if (a && !std::filesystem::exists(x.dir / *a)) rd.error(*t, key + ".after", "no such scenario file: " + *a);
            if (a && b) x.compares.push_back({*b, *a});
        }
    }
    if (!diags.empty()) throw InputError(std::move(diags));
    return x;
}

} // namespace kdsim::scenario
