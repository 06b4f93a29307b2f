#include "cli/commands.h"
#include "cli/db_store.h"
#include "cli/pcap.h"
#include "cli/precision.h"
#include "cli/progress.h"
#include "cli/trace_file.h"

#include "report/report.h"
#include "runner/run.h"
#include "scenario/load.h"
#include "scenario/sweep.h"
#include "system/system.h"

#include <fmt/format.h>

#include <charconv>
#include <chrono>
#include <climits>
#include <functional>
#include <memory>
#include <vector>
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

CLI::Validator seed_validator() {
    // The scenario file's `seed` is a TOML integer from 0 to 2^63-1; the command line agrees,
    // and takes decimal digits only (CLI11 alone would wrap "-1" to 2^64-1).
    return CLI::Validator(
        [](std::string& s) -> std::string {
            std::int64_t v = 0;
            auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
            if (s.empty() || s[0] < '0' || s[0] > '9' || ec != std::errc() || end != s.data() + s.size())
                return "expected a whole number from 0 to 9223372036854775807, found \"" + s + "\"";
            return "";
        },
        "SEED");
}

void add_common_options(CLI::App& app, CommonOptions& o) {
    app.add_option("--seed", o.seed, "Random seed, 0 to 9223372036854775807 (overrides the scenario's)")
        ->check(seed_validator());
    app.add_option("--mode", o.mode, "timing (default) or functional (really hash/encrypt the bytes)")
        ->check(CLI::IsMember({"timing", "functional"}));
    app.add_option("--root", o.root, "Repository root holding data/ (default: found from the scenario)");
}

void add_set_option(CLI::App& app, CommonOptions& o) {
    app.add_option("--set", o.set,
                   "KEY=VALUE: set a scenario key or profile figure for this run, e.g. link[0].rate=2.5Gbit/s or "
                   "machine.dut.overrides.dma.inner_inv_line=60 (repeatable; kdsim sweep takes lists)");
}

scenario::LoadOptions load_options(const CommonOptions& c) {
    scenario::LoadOptions lo;
    for (const std::string& a : c.set) {
        scenario::SweepAxis axis = scenario::parse_set_argument(a);
        if (axis.values.size() != 1)
            throw scenario::InputError({scenario::Diagnostic{
                "--set " + a, 0, 0, axis.key,
                fmt::format("expected one value here, found {}; `kdsim sweep` runs every value of a list",
                            axis.values.size())}});
        lo.assignments.push_back(std::move(axis.values.front()));
    }
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

namespace {

bool is_json(const std::string& f) { return fs::path(f).extension() == ".json"; }

results::RunResults load_or_run(const std::string& file, const CommonOptions& c) {
    if (!is_json(file)) return runner::run_scenario(file, load_options(c));
    std::ifstream in(file);
    if (!in) throw scenario::InputError({scenario::Diagnostic{file, 0, 0, "", "cannot open file"}});
    try {
        return report::from_json(nlohmann::json::parse(in));
    } catch (const std::exception& e) {
        throw scenario::InputError({scenario::Diagnostic{file, 0, 0, "", std::string("not a kdsim results file: ") + e.what()}});
    }
}

} // namespace

namespace {

// One output file of a command: opened before the run, filled after it.
struct Output {
    const char* option;
    std::string path;
    std::function<void(report::AtomicFile&)> fill;
    std::unique_ptr<report::AtomicFile> file;
};

// Opens every output given (an empty path: the option was not given), so that a path that
// cannot be written is refused before anything runs. Returns why one was refused, or "".
std::string open_outputs(std::vector<Output>& outs) {
    std::vector<std::pair<fs::path, const char*>> seen;
    for (Output& o : outs) {
        if (o.path.empty()) continue;
        fs::path id = report::output_identity(o.path);
        for (const auto& [other, option] : seen)
            if (other == id) return fmt::format("{} and {} name the same file {}", option, o.option, o.path);
        seen.emplace_back(id, o.option);
        try {
            o.file = std::make_unique<report::AtomicFile>(o.path);
        } catch (const std::runtime_error& e) {
            return fmt::format("{}: {}", o.option, e.what());
        }
    }
    return "";
}

// Fills and publishes the opened outputs: all replaced files or none of them. The files are
// written and made durable first, then the streams (a device, a FIFO, /dev/stdout: they cannot
// be taken back, so a failure before them leaves nothing anywhere), then the files are renamed
// into place. Returns false after printing the error.
bool write_outputs(std::vector<Output>& outs) {
    std::size_t published = 0;
    try {
        for (bool streams : {false, true}) {
            if (streams) std::fflush(stdout); // what was printed comes before what is appended
            for (Output& o : outs)
                if (o.file && o.file->in_place() == streams) {
                    o.fill(*o.file);
                    o.file->close();
                }
        }
        for (Output& o : outs)
            if (o.file) {
                o.file->commit();
                ++published;
            }
    } catch (const std::runtime_error& e) {
        std::fprintf(stderr, "kdsim: %s\n", e.what());
        if (published == 0) std::fprintf(stderr, "kdsim: no output file was written\n");
        return false;
    }
    return true;
}

} // namespace

int cmd_run(const RunOptions& o) {
    results::RunResults r;
    double wall_s = 0;
    std::string steady; // the --precision report
    std::unique_ptr<system::ScenarioConfig> cfg;
    std::unique_ptr<system::System> sys;
    PcapPlan pcap;
    std::vector<Output> outs;
    std::vector<std::unique_ptr<capture::DeviceTap>> taps; // destroyed before the files they write
    outs.push_back({"--json", o.json, [&](report::AtomicFile& f) { f.write(report::to_json_text(r)); }, nullptr});
    outs.push_back({"--csv", o.csv, [&](report::AtomicFile& f) { f.write(report::to_csv(r)); }, nullptr});
    outs.push_back({"--trace", o.trace, [&](report::AtomicFile& f) { write_trace_file(o, *sys, f); }, nullptr});
    try {
        cfg = std::make_unique<system::ScenarioConfig>(scenario::load_scenario(o.scenario, load_options(o.common)));
        sys = std::make_unique<system::System>(*cfg);
        if (std::string why = enable_trace(o, *cfg, *sys); !why.empty()) {
            std::fprintf(stderr, "kdsim: %s\nkdsim: nothing was run or written\n", why.c_str());
            return EXIT_BAD_INPUT;
        }
        const std::size_t first_pcap = outs.size();
        if (!o.pcap.empty()) {
            if (std::string why = pcap.prepare(o.pcap, *sys, *cfg); !why.empty()) {
                std::fprintf(stderr, "kdsim: %s\nkdsim: nothing was run or written\n", why.c_str());
                return EXIT_BAD_INPUT;
            }
            const auto files = pcap.files();
            for (std::size_t i = 0; i < files.size(); ++i)
                outs.push_back({"--pcap", files[i].string(), [&taps, &pcap, i](report::AtomicFile& f) {
                                    if (i < taps.size()) taps[i]->pcap().finish();
                                    else f.write(pcap.esp_sa());
                                }, nullptr});
        }
        if (std::string why = open_outputs(outs); !why.empty()) {
            std::fprintf(stderr, "kdsim: %s\nkdsim: nothing was run or written\n", why.c_str());
            return EXIT_BAD_INPUT;
        }
        if (!o.pcap.empty())
            for (std::size_t i = first_pcap; i < outs.size() - (pcap.has_esp_sa() ? 1 : 0); ++i)
                pcap.attach(i - first_pcap, *outs[i].file, taps);
        if (!o.db.empty())
            if (std::string why = database_refusal(o.db); !why.empty()) {
                std::fprintf(stderr, "kdsim: --db %s: %s\nkdsim: nothing was run or written\n", o.db.c_str(), why.c_str());
                return EXIT_BAD_INPUT;
            }
        std::string why;
        const std::optional<double> precision = o.precision.empty() ? std::nullopt : parse_precision(o.precision, why);
        if (precision && sys->progress().empty()) {
            std::fprintf(stderr, "kdsim: --precision: no workload of %s reports a rate to estimate (iperf3 does)\n"
                                 "kdsim: nothing was run or written\n", o.scenario.c_str());
            return EXIT_BAD_INPUT;
        }
        ProgressLine line(progress_wanted(o.quiet));
        RunProgress progress(line, sys->sim(), cfg->duration.value_or(cfg->max_duration), cfg->duration.has_value());
        const auto t0 = std::chrono::steady_clock::now();
        if (precision) {
            PrecisionRun p = run_to_precision(*sys, *precision);
            steady = steady_state_text(p, *precision);
            r = std::move(p.results);
        } else {
            r = sys->run();
        }
        wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
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
        std::fputs(steady.c_str(), stdout);
    }
    if (std::string why = trace_window_after_run(o, *sys, sys->sim().now()); !why.empty()) {
        std::fprintf(stderr, "kdsim: %s\nkdsim: no output file was written\n", why.c_str());
        return EXIT_BAD_INPUT;
    }
    if (!write_outputs(outs)) return EXIT_BAD_INPUT;
    if (!o.db.empty() && !store_runs(o.db, {db::Entry{&r, run_info("run", o.scenario, wall_s)}})) return EXIT_BAD_INPUT;
    if (!o.trace.empty())
        if (const kernel::TraceRecorder& t = *sys->trace(); t.dropped())
            std::fprintf(stderr,
                         "kdsim: warning: trace truncated at %.6f us of simulated time: the record limit "
                         "(--trace-limit %zu) was reached and %llu later records were dropped\n",
                         engine::to_us(t.first_dropped_at()), t.limit(), static_cast<unsigned long long>(t.dropped()));
    return r.failed ? EXIT_FINDINGS : EXIT_OK;
}

int cmd_compare(const CompareOptions& o) {
    results::RunResults a, b;
    std::vector<Output> outs;
    outs.push_back({"--json", o.json, [&](report::AtomicFile& f) { f.write(report::compare_json(a, b).dump(2) + "\n"); },
                    nullptr});
    if (std::string why = open_outputs(outs); !why.empty()) {
        std::fprintf(stderr, "kdsim: %s\nkdsim: nothing was run or written\n", why.c_str());
        return EXIT_BAD_INPUT;
    }
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
    if (!write_outputs(outs)) return EXIT_BAD_INPUT;
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
