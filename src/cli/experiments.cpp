// `kdsim experiments`: runs each reference experiment's scenarios (scenarios/<eN>/ with its
// experiment.toml), prints every run's summary, one table with a row per scenario and the
// manifest's columns, and the before/after comparisons; then checks what the manifest expects
// of every run (no invariant violated, or — for the unsafe set — a clobber caught).
#include "cli/commands.h"
#include "cli/db_store.h"
#include "cli/reality.h"

#include "report/report.h"
#include "results/lookup.h"
#include "runner/run.h"
#include "scenario/experiment.h"
#include "scenario/load.h"
#include "system/system.h"

#include <algorithm>
#include <chrono>
#include <deque>
#include <cstdio>
#include <map>

namespace kdsim::cli {

namespace fs = std::filesystem;

namespace {

using runner::column_value;

std::string fmt_value(std::optional<double> v) {
    if (!v) return "-";
    char buf[64];
    double x = *v;
    if (x == static_cast<double>(static_cast<long long>(x)) && std::abs(x) < 1e15)
        std::snprintf(buf, sizeof buf, "%lld", static_cast<long long>(x));
    else if (std::abs(x) >= 100)
        std::snprintf(buf, sizeof buf, "%.1f", x);
    else
        std::snprintf(buf, sizeof buf, "%.3g", x);
    return buf;
}

// The rows laid out as a text table: the first column left-aligned, the others right-aligned.
std::string layout(const std::vector<std::vector<std::string>>& rows, std::size_t left_columns) {
    std::vector<std::size_t> w(rows[0].size(), 0);
    for (const auto& row : rows)
        for (std::size_t i = 0; i < row.size(); ++i) w[i] = std::max(w[i], row[i].size());
    std::string out;
    for (std::size_t k = 0; k < rows.size(); ++k) {
        for (std::size_t i = 0; i < rows[k].size(); ++i) {
            std::string cell = rows[k][i];
            if (i < left_columns) cell += std::string(w[i] - cell.size(), ' ');
            else cell = std::string(w[i] - cell.size(), ' ') + cell;
            out += cell + (i + 1 < rows[k].size() ? "  " : "");
        }
        out += "\n";
        if (k == 0) {
            std::size_t total = 0;
            for (std::size_t i = 0; i < w.size(); ++i) total += w[i] + (i + 1 < w.size() ? 2 : 0);
            out += std::string(total, '-') + "\n";
        }
    }
    return out;
}

using Runs = std::vector<std::pair<std::string, results::RunResults>>;

std::string experiment_table(const scenario::Experiment& x, const Runs& runs) {
    std::vector<std::vector<std::string>> rows;
    std::vector<std::string> head{"scenario"};
    for (const auto& c : x.columns) head.push_back(c.label);
    head.push_back("verdict");
    rows.push_back(head);
    for (const auto& [name, r] : runs) {
        std::vector<std::string> row{name};
        for (const auto& c : x.columns) row.push_back(fmt_value(column_value(r, c)));
        row.push_back(r.failed ? "FAILED" : "ok");
        rows.push_back(row);
    }
    return layout(rows, 1);
}

// The breakdown table: per scenario, one row per name registered under the prefix, in name
// order (runs register them in the order they first occur, which differs between scenarios).
std::string breakdown_table(const scenario::ExperimentBreakdown& b, const Runs& runs) {
    std::vector<std::vector<std::string>> rows;
    std::vector<std::string> head{"scenario", b.label};
    for (const auto& c : b.columns) head.push_back(c.label);
    rows.push_back(head);
    const std::string prefix = b.prefix + "/";
    for (const auto& [name, r] : runs) {
        std::vector<std::string> names;
        for (const auto& st : r.statistics) {
            if (st.path.rfind(prefix, 0) != 0) continue;
            std::string n = st.path.substr(prefix.size(), st.path.find('/', prefix.size()) - prefix.size());
            if (std::find(names.begin(), names.end(), n) == names.end()) names.push_back(n);
        }
        std::sort(names.begin(), names.end());
        for (const auto& n : names) {
            std::vector<std::string> row{name, n};
            for (const auto& c : b.columns)
                row.push_back(fmt_value(column_value(
                    r, {c.label, prefix + n + "/" + c.metric, c.per.empty() ? "" : prefix + n + "/" + c.per})));
            rows.push_back(row);
        }
    }
    return layout(rows, 2);
}

} // namespace

int cmd_experiments(const ExperimentsOptions& o) {
    std::vector<fs::path> manifests;
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(o.dir, ec))
        if (e.is_directory() && fs::exists(e.path() / "experiment.toml")) manifests.push_back(e.path() / "experiment.toml");
    if (ec || manifests.empty()) {
        std::fprintf(stderr, "%s: error: no experiments found (expected <dir>/<eN>/experiment.toml)\n", o.dir.c_str());
        return EXIT_BAD_INPUT;
    }
    std::sort(manifests.begin(), manifests.end());
    std::vector<scenario::Experiment> exps;
    try {
        for (const auto& m : manifests) {
            std::string dirname = m.parent_path().filename().string();
            if (!o.only.empty() && std::find(o.only.begin(), o.only.end(), dirname) == o.only.end()) continue;
            exps.push_back(scenario::load_experiment(m));
        }
    } catch (const scenario::InputError& e) {
        for (const auto& d : e.diagnostics) std::fprintf(stderr, "%s\n", d.str().c_str());
        return EXIT_BAD_INPUT;
    }
    if (!o.out.empty()) {
        fs::create_directories(o.out, ec);
        if (std::string why = report::check_writable(fs::path(o.out) / "x.json"); !why.empty()) {
            std::fprintf(stderr, "kdsim: --out %s: %s\nkdsim: nothing was run or written\n", o.out.c_str(), why.c_str());
            return EXIT_BAD_INPUT;
        }
    }

    if (!o.db.empty())
        if (std::string why = database_refusal(o.db); !why.empty()) {
            std::fprintf(stderr, "kdsim: --db %s: %s\nkdsim: nothing was run or written\n", o.db.c_str(), why.c_str());
            return EXIT_BAD_INPUT;
        }

    scenario::LoadOptions lo;
    if (!o.common.root.empty()) lo.root = o.common.root;
    lo.seed_override = o.common.seed;
    if (o.common.mode == "functional") lo.mode_override = system::Mode::FUNCTIONAL;
    else if (o.common.mode == "timing") lo.mode_override = system::Mode::TIMING;

    std::vector<std::string> verdicts;
    bool all_ok = true;
    std::deque<results::RunResults> kept; // the runs to store with --db (a deque: entries point into it)
    std::vector<db::Entry> stored;
    for (const auto& x : exps) {
        std::printf("\n==================================================================================\n");
        std::printf("%s  %s\n", x.id.c_str(), x.title.c_str());
        if (!x.question.empty()) std::printf("Question: %s\n", x.question.c_str());
        std::printf("==================================================================================\n");
        std::vector<std::pair<std::string, results::RunResults>> runs;
        for (const auto& sc : x.scenarios) {
            results::RunResults r;
            double wall_s = 0;
            try {
                system::ScenarioConfig cfg = scenario::load_scenario(sc, lo);
                system::System sys(cfg);
                const auto t0 = std::chrono::steady_clock::now();
                r = sys.run();
                wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
            } catch (const scenario::InputError& e) {
                for (const auto& d : e.diagnostics) std::fprintf(stderr, "%s\n", d.str().c_str());
                return EXIT_BAD_INPUT;
            } catch (const system::ConfigError& e) {
                std::fprintf(stderr, "%s: error: %s\n", sc.string().c_str(), e.what());
                return EXIT_BAD_INPUT;
            }
            if (!o.brief) {
                std::printf("\n--- %s ---\n", sc.filename().string().c_str());
                std::fputs(report::summary_table(r).c_str(), stdout);
            }
            if (!o.out.empty())
                report::write_file_atomically(fs::path(o.out) / (x.id + "-" + sc.stem().string() + ".json"),
                                              report::to_json_text(r));
            if (!o.db.empty()) {
                kept.push_back(r);
                stored.push_back(db::Entry{&kept.back(), run_info("experiments", sc.string(), wall_s, x.id)});
            }
            runs.emplace_back(sc.stem().string(), std::move(r));
        }
        for (const auto& p : x.compares) {
            auto find = [&](const std::string& file) -> const results::RunResults* {
                std::string stem = fs::path(file).stem().string();
                for (const auto& [n, r] : runs)
                    if (n == stem) return &r;
                return nullptr;
            };
            const results::RunResults* b = find(p.before);
            const results::RunResults* a = find(p.after);
            if (!a || !b) continue;
            std::printf("\n--- %s: before %s -> after %s ---\n", x.id.c_str(), p.before.c_str(), p.after.c_str());
            std::fputs(report::compare_table(*b, *a).c_str(), stdout);
        }
        std::printf("\n%s results (one row per scenario):\n", x.id.c_str());
        std::fputs(experiment_table(x, runs).c_str(), stdout);
        if (x.breakdown) {
            std::printf("\n%s results (one row per scenario and %s):\n", x.id.c_str(), x.breakdown->label.c_str());
            std::fputs(breakdown_table(*x.breakdown, runs).c_str(), stdout);
        }
        if (!x.published.empty()) std::fputs(reality_table(x, runs, [](const results::RunResults& r, const std::string& path) { return results::resolve_sum(r, path); }).c_str(), stdout);
        bool ok = true;
        for (const auto& [n, r] : runs) {
            bool run_ok = x.expect == "ok" ? !r.failed : x.expect == "clobber" ? results::finding_count(r, "simd_clobber") > 0
                                                                               : results::finding_count(r, "stale_dma_read") > 0;
            if (!run_ok) {
                ok = false;
                verdicts.push_back(x.id + ": " + n + (x.expect == "ok" ? " violated an invariant" : " was not caught"));
            }
        }
        std::printf("%s: %s (%s)\n", x.id.c_str(), ok ? "as expected" : "NOT AS EXPECTED",
                    x.expect == "ok"        ? "every run free of invariant violations"
                    : x.expect == "clobber" ? "every unsafe run must be caught with a clobber report"
                                            : "every unsafe run must be caught with a stale-read report");
        all_ok = all_ok && ok;
    }
    std::printf("\nSUMMARY: %zu experiment(s); %s\n", exps.size(), all_ok ? "all as expected" : "some NOT as expected");
    for (const auto& v : verdicts) std::printf("  %s\n", v.c_str());
    if (!o.db.empty() && !store_runs(o.db, stored)) return EXIT_BAD_INPUT;
    return all_ok ? EXIT_OK : EXIT_FINDINGS;
}

} // namespace kdsim::cli
