// `kdsim experiments`: runs each reference experiment's scenarios (scenarios/<eN>/ with its
// experiment.toml), prints every run's summary, one table with a row per scenario and the
// manifest's columns, and the before/after comparisons; then checks what the manifest expects
// of every run (no invariant violated, or — for the unsafe set — a clobber caught).
#include "cli/commands.h"
#include "cli/reality.h"

#include "report/report.h"
#include "results/lookup.h"
#include "scenario/experiment.h"
#include "scenario/load.h"
#include "system/system.h"

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <map>

namespace kdsim::cli {

namespace fs = std::filesystem;

namespace {

std::optional<double> cpu_field(const results::CpuResult& c, const std::string& f) {
    static const std::map<std::string, double results::CpuResult::*> dbl = {
        {"busy_us", &results::CpuResult::busy_us},
        {"idle_us", &results::CpuResult::idle_us},
        {"longest_np_span_us", &results::CpuResult::longest_np_span_us}};
    static const std::map<std::string, std::uint64_t results::CpuResult::*> u64 = {
        {"hardirqs", &results::CpuResult::hardirqs},
        {"softirq_runs", &results::CpuResult::softirq_runs},
        {"softirq_restarts", &results::CpuResult::softirq_restarts},
        {"ksoftirqd_wakeups", &results::CpuResult::ksoftirqd_wakeups},
        {"context_switches", &results::CpuResult::context_switches},
        {"preemptions", &results::CpuResult::preemptions},
        {"rcu_stall_warnings", &results::CpuResult::rcu_stall_warnings},
        {"rcu_exp_stall_warnings", &results::CpuResult::rcu_exp_stall_warnings},
        {"soft_lockups", &results::CpuResult::soft_lockups},
        {"simd_clobbers", &results::CpuResult::simd_clobbers}};
    static const std::map<std::string, std::uint64_t results::SimdResult::*> simd = {
        {"brackets", &results::SimdResult::brackets},
        {"begin_end_cycles", &results::SimdResult::begin_end_cycles},
        {"saves", &results::SimdResult::saves},
        {"restores", &results::SimdResult::restores},
        {"save_restore_cycles", &results::SimdResult::save_restore_cycles},
        {"bytes", &results::SimdResult::bytes},
        {"longest_bracket_cycles", &results::SimdResult::longest_bracket_cycles},
        {"longest_bracket_bytes", &results::SimdResult::longest_bracket_bytes},
        {"fallbacks", &results::SimdResult::fallbacks},
        {"kernel_traps", &results::SimdResult::kernel_traps},
        {"kernel_use_warnings", &results::SimdResult::kernel_use_warnings}};
    if (auto it = dbl.find(f); it != dbl.end()) return c.*(it->second);
    static const std::map<std::string, std::size_t> irqflag = {{"disable", 0}, {"enable", 1}, {"save", 2}, {"restore", 3}};
    if (f.rfind("irqflag_ops.", 0) == 0)
        if (auto it = irqflag.find(f.substr(12)); it != irqflag.end()) return static_cast<double>(c.irqflag_ops[it->second]);
    if (f.rfind("cycles.", 0) == 0) { // a category summed over contexts
        std::string cat = f.substr(7);
        double sum = 0;
        for (const auto& [ctx, cats] : c.cycles)
            if (auto it = cats.find(cat); it != cats.end()) sum += static_cast<double>(it->second);
        return sum;
    }
    if (auto it = u64.find(f); it != u64.end()) return static_cast<double>(c.*(it->second));
    if (f == "simd.longest_bracket_us") return c.simd.longest_bracket_us;
    if (f.rfind("simd.", 0) == 0)
        if (auto it = simd.find(f.substr(5)); it != simd.end()) return static_cast<double>(c.simd.*(it->second));
    if (f == "simd.begin_end_cycles_per_bracket")
        return c.simd.brackets ? static_cast<double>(c.simd.begin_end_cycles) / static_cast<double>(c.simd.brackets) : 0;
    return std::nullopt;
}

// Resolves a manifest metric path against one run's results:
//   cpu<N>.<field>, cpu<N>.simd.<field> (of the first machine), machine.<name>.cpu<N>.<field>,
//   workload.<name>.<key>, run.<clobbers|simulated_us|events>
std::optional<double> lookup(const results::RunResults& r, const std::string& path) {
    if (path.rfind("machine.", 0) == 0) {
        std::string rest = path.substr(8);
        auto dot = rest.find('.');
        if (dot == std::string::npos || rest.compare(dot + 1, 3, "cpu") != 0) return std::nullopt;
        const std::string name = rest.substr(0, dot), cpu = rest.substr(dot + 1);
        auto dot2 = cpu.find('.');
        if (dot2 == std::string::npos) return std::nullopt;
        int id = -1;
        std::from_chars(cpu.data() + 3, cpu.data() + dot2, id);
        for (const auto& m : r.machines)
            if (m.name == name)
                for (const auto& c : m.cpus)
                    if (c.id == id) return cpu_field(c, cpu.substr(dot2 + 1));
        return std::nullopt;
    }
    if (path == "run.clobbers") return static_cast<double>(r.clobber_count);
    if (path == "run.simulated_us") return r.simulated_us;
    if (path == "run.events") return static_cast<double>(r.events);
    if (path.rfind("workload.", 0) == 0) {
        std::string rest = path.substr(9);
        auto dot = rest.find('.');
        if (dot == std::string::npos) return std::nullopt;
        return results::find_metric(r, rest.substr(0, dot), rest.substr(dot + 1));
    }
    if (path.rfind("cpu", 0) == 0 && !r.machines.empty()) {
        auto dot = path.find('.');
        int id = -1;
        std::from_chars(path.data() + 3, path.data() + dot, id);
        for (const auto& c : r.machines[0].cpus)
            if (c.id == id) return cpu_field(c, path.substr(dot + 1));
    }
    return std::nullopt;
}

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

std::string experiment_table(const scenario::Experiment& x, const std::vector<std::pair<std::string, results::RunResults>>& runs) {
    std::vector<std::vector<std::string>> rows;
    std::vector<std::string> head{"scenario"};
    for (const auto& c : x.columns) head.push_back(c.label);
    head.push_back("verdict");
    rows.push_back(head);
    for (const auto& [name, r] : runs) {
        std::vector<std::string> row{name};
        for (const auto& c : x.columns) row.push_back(fmt_value(lookup(r, c.metric)));
        row.push_back(r.failed ? "FAILED" : "ok");
        rows.push_back(row);
    }
    std::vector<std::size_t> w(head.size(), 0);
    for (const auto& row : rows)
        for (std::size_t i = 0; i < row.size(); ++i) w[i] = std::max(w[i], row[i].size());
    std::string out;
    for (std::size_t k = 0; k < rows.size(); ++k) {
        for (std::size_t i = 0; i < rows[k].size(); ++i) {
            std::string cell = rows[k][i];
            if (i == 0) cell += std::string(w[i] - cell.size(), ' ');
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

    scenario::LoadOptions lo;
    if (!o.common.root.empty()) lo.root = o.common.root;
    lo.seed_override = o.common.seed;
    if (o.common.mode == "functional") lo.mode_override = system::Mode::FUNCTIONAL;
    else if (o.common.mode == "timing") lo.mode_override = system::Mode::TIMING;

    std::vector<std::string> verdicts;
    bool all_ok = true;
    for (const auto& x : exps) {
        std::printf("\n==================================================================================\n");
        std::printf("%s  %s\n", x.id.c_str(), x.title.c_str());
        if (!x.question.empty()) std::printf("Question: %s\n", x.question.c_str());
        std::printf("==================================================================================\n");
        std::vector<std::pair<std::string, results::RunResults>> runs;
        for (const auto& sc : x.scenarios) {
            results::RunResults r;
            try {
                system::ScenarioConfig cfg = scenario::load_scenario(sc, lo);
                system::System sys(cfg);
                r = sys.run();
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
        if (!x.published.empty()) std::fputs(reality_table(x, runs, lookup).c_str(), stdout);
        bool ok = true;
        for (const auto& [n, r] : runs) {
            bool stale = false;
            for (const auto& f : r.failures) stale = stale || f.find("stale DMA read") != std::string::npos;
            bool run_ok = x.expect == "ok" ? !r.failed : x.expect == "clobber" ? (r.failed && r.clobber_count > 0)
                                                                               : (r.failed && stale);
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
    return all_ok ? EXIT_OK : EXIT_FINDINGS;
}

} // namespace kdsim::cli
