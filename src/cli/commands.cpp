#include "cli/commands.h"

#include "report/report.h"
#include "scenario/load.h"
#include "system/system.h"

#include <climits>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>

namespace kdsim::cli {

std::optional<std::string> self_exe() {
    char buf[PATH_MAX];
    const ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
    if (n <= 0) return std::nullopt;
    return std::string(buf, static_cast<std::size_t>(n));
}

namespace fs = std::filesystem;

void add_common_options(CLI::App& app, CommonOptions& o) {
    app.add_option("--seed", o.seed, "Random seed (overrides the scenario's)");
    app.add_option("--mode", o.mode, "timing (default) or functional (really hash/encrypt the bytes)")
        ->check(CLI::IsMember({"timing", "functional"}));
    app.add_option("--root", o.root, "Repository root holding data/ (default: found from the scenario)");
}

namespace {

scenario::LoadOptions load_options(const CommonOptions& c) {
    scenario::LoadOptions lo;
    if (!c.root.empty()) lo.root = c.root;
    lo.seed_override = c.seed;
    if (c.mode == "functional") lo.mode_override = system::Mode::FUNCTIONAL;
    else if (c.mode == "timing") lo.mode_override = system::Mode::TIMING;
    return lo;
}

void print_input_error(const scenario::InputError& e) {
    for (const auto& d : e.diagnostics) std::fprintf(stderr, "%s\n", d.str().c_str());
    std::fprintf(stderr, "kdsim: %zu error(s); nothing was run or written\n", e.diagnostics.size());
}

// Loads and runs one scenario; InputError and ConfigError propagate.
results::RunResults simulate(const std::string& file, const CommonOptions& c) {
    system::ScenarioConfig cfg = scenario::load_scenario(file, load_options(c));
    system::System sys(cfg);
    return sys.run();
}

bool is_json(const std::string& f) { return fs::path(f).extension() == ".json"; }

results::RunResults load_or_run(const std::string& file, const CommonOptions& c) {
    if (!is_json(file)) return simulate(file, c);
    std::ifstream in(file);
    if (!in) throw scenario::InputError({scenario::Diagnostic{file, 0, 0, "", "cannot open file"}});
    try {
        return report::from_json(nlohmann::json::parse(in));
    } catch (const std::exception& e) {
        throw scenario::InputError({scenario::Diagnostic{file, 0, 0, "", std::string("not a kdsim results file: ") + e.what()}});
    }
}

} // namespace

int cmd_run(const RunOptions& o) {
    results::RunResults r;
    std::unique_ptr<system::ScenarioConfig> cfg;
    std::unique_ptr<system::System> sys;
    std::unique_ptr<report::AtomicFile> trace_file;
    try {
        cfg = std::make_unique<system::ScenarioConfig>(scenario::load_scenario(o.scenario, load_options(o.common)));
        sys = std::make_unique<system::System>(*cfg);
        if (!o.trace.empty()) {
            if (!sys->enable_trace(o.trace_limit)) {
                std::fprintf(stderr, "kdsim: --trace: this kdsim was built with KDSIM_TRACE=OFF (no trace hooks)\n"
                                     "kdsim: nothing was run or written\n");
                return EXIT_BAD_INPUT;
            }
            try {
                trace_file = std::make_unique<report::AtomicFile>(o.trace); // a bad path fails before the run
            } catch (const std::runtime_error& e) {
                std::fprintf(stderr, "kdsim: %s\nkdsim: nothing was run or written\n", e.what());
                return EXIT_BAD_INPUT;
            }
        }
        r = sys->run();
    } catch (const scenario::InputError& e) {
        print_input_error(e);
        return EXIT_BAD_INPUT;
    } catch (const system::ConfigError& e) {
        std::fprintf(stderr, "%s: error: %s\nkdsim: nothing was run or written\n", o.scenario.c_str(), e.what());
        return EXIT_BAD_INPUT;
    }
    std::string summary = report::summary_table(r);
    if (o.quiet) {
        auto pos = summary.rfind("RESULT:");
        std::fputs(pos == std::string::npos ? summary.c_str() : summary.c_str() + pos, stdout);
    } else {
        std::fputs(summary.c_str(), stdout);
    }
    try {
        if (!o.json.empty()) report::write_file_atomically(o.json, report::to_json_text(r));
        if (!o.csv.empty()) report::write_file_atomically(o.csv, report::to_csv(r));
        if (trace_file) {
            sys->write_trace([&](std::string_view s) { trace_file->write(s); });
            trace_file->commit();
            if (const kernel::TraceRecorder& t = *sys->trace(); t.dropped())
                std::fprintf(stderr,
                             "kdsim: warning: trace truncated at %.6f us of simulated time: the record limit "
                             "(--trace-limit %zu) was reached and %llu later records were dropped\n",
                             engine::to_us(t.first_dropped_at()), t.limit(),
                             static_cast<unsigned long long>(t.dropped()));
        }
    } catch (const std::runtime_error& e) {
        std::fprintf(stderr, "kdsim: %s\n", e.what());
        return EXIT_BAD_INPUT;
    }
    return r.failed ? EXIT_FINDINGS : EXIT_OK;
}

int cmd_compare(const CompareOptions& o) {
    results::RunResults a, b;
    try {
        a = load_or_run(o.a, o.common);
        b = load_or_run(o.b, o.common);
    } catch (const scenario::InputError& e) {
        print_input_error(e);
        return EXIT_BAD_INPUT;
    } catch (const system::ConfigError& e) {
        std::fprintf(stderr, "error: %s\nkdsim: nothing was run or written\n", e.what());
        return EXIT_BAD_INPUT;
    }
    std::fputs(report::compare_table(a, b).c_str(), stdout);
    if (!o.json.empty()) {
        try {
            report::write_file_atomically(o.json, report::compare_json(a, b).dump(2) + "\n");
        } catch (const std::runtime_error& e) {
            std::fprintf(stderr, "kdsim: %s\n", e.what());
            return EXIT_BAD_INPUT;
        }
    }
    return (a.failed || b.failed) ? EXIT_FINDINGS : EXIT_OK;
}

int cmd_check(const CheckOptions& o) {
    int rc = EXIT_OK;
    for (const std::string& f : o.files) {
        try {
            if (scenario::detect_kind(f) == scenario::FileKind::PROFILE) {
                system::Profile p = scenario::load_profile(f);
                std::printf("%s: ok (profile %s, %s, %.3f GHz)\n", f.c_str(), p.name.c_str(),
                            std::string(arch::to_string(p.arch)).c_str(), static_cast<double>(p.clock_hz) / 1e9);
            } else {
                scenario::LoadOptions lo;
                if (!o.root.empty()) lo.root = o.root;
                system::ScenarioConfig s = scenario::load_scenario(f, lo);
                system::System sys(s); // assembling the model catches the remaining inconsistencies
                std::size_t nw = 0;
                for (const auto& m : s.machines) nw += m.workloads.size();
                std::printf("%s: ok (scenario %s: %zu machine(s), %zu workload(s))\n", f.c_str(), s.name.c_str(),
                            s.machines.size(), nw);
            }
        } catch (const scenario::InputError& e) {
            print_input_error(e);
            rc = EXIT_BAD_INPUT;
        } catch (const system::ConfigError& e) {
            std::fprintf(stderr, "%s: error: %s\n", f.c_str(), e.what());
            rc = EXIT_BAD_INPUT;
        }
    }
    return rc;
}

} // namespace kdsim::cli
