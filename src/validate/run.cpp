// kdsim validate: calibrates (or takes a profile), runs every configuration for real and as its
// simulated twin, prints the comparison, writes it as JSON, and decides the exit status.
#include "validate/validate.h"

#include "calibrate/calibrate.h"
#include "report/report.h"
#include "scenario/load.h"
#include "validate/compare.h"
#include "validate/configs.h"
#include "validate/datapath.h"
#include "validate/twin.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <map>
#include <stdexcept>

namespace kdsim::validate {

namespace fs = std::filesystem;

namespace {

// scenarios/validate at or above the working directory or the binary, or in the source tree.
std::optional<fs::path> find_twins(const std::string& exe) {
    return calibrate::find_in_tree(fs::path("scenarios") / "validate", exe, true);
}

struct Progress {
    std::chrono::steady_clock::time_point t0 = std::chrono::steady_clock::now();
    double elapsed() const { return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(); }
};

// `exe calibrate [--quick] [--round-profiles] --out file`, its output on our stderr. Returns its
// exit status.
int spawn_calibrate(const std::string& exe, bool quick, bool round_profiles, const fs::path& out) {
    std::fflush(stdout);
    std::fflush(stderr);
    pid_t pid = fork();
    if (pid < 0) throw std::runtime_error("fork failed");
    if (pid == 0) {
        dup2(2, 1); // the calibration summary is progress here: keep validate's stdout for its table
        std::vector<const char*> argv = {exe.c_str(), "calibrate", "--out", out.c_str()};
        if (quick) argv.push_back("--quick");
        if (round_profiles) argv.push_back("--round-profiles");
        argv.push_back(nullptr);
        execv(exe.c_str(), const_cast<char* const*>(argv.data()));
        _exit(127);
    }
    int status = 0;
    while (waitpid(pid, &status, 0) < 0) {
    }
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
}

void sleep_s(double s) {
    timespec ts{static_cast<time_t>(s), static_cast<long>((s - std::floor(s)) * 1e9)};
    while (nanosleep(&ts, &ts) != 0) {
    }
}

// Steal time of these CPUs so far (/proc/stat, USER_HZ ticks converted to ms): the time the
// hypervisor ran something else while our vCPUs wanted to run. 0 where the kernel does not say.
double steal_ms(const std::vector<int>& cpus) {
    FILE* f = std::fopen("/proc/stat", "r");
    if (!f) return 0;
    char line[512];
    double ticks = 0;
    while (std::fgets(line, sizeof line, f)) {
        int id = -1;
        unsigned long long v[8] = {};
        if (std::sscanf(line, "cpu%d %llu %llu %llu %llu %llu %llu %llu %llu", &id, &v[0], &v[1], &v[2], &v[3], &v[4],
                        &v[5], &v[6], &v[7]) == 9)
            for (int c : cpus)
                if (c == id) ticks += static_cast<double>(v[7]);
    }
    std::fclose(f);
    const long hz = sysconf(_SC_CLK_TCK);
    return hz > 0 ? ticks * 1000.0 / static_cast<double>(hz) : 0;
}

struct Measured {
    std::vector<double> values;
    void add(double v) { values.push_back(v); }
};

} // namespace

int run(const Options& o) {
#if !defined(__x86_64__) || !defined(__linux__)
    std::fprintf(stderr, "kdsim validate: only x86-64 Linux is supported\n");
    return 2;
#else
    // ---- bad input first: nothing is measured or written
    if (o.max_error && !(std::isfinite(*o.max_error) && *o.max_error >= 0)) {
        std::fprintf(stderr, "kdsim validate: --max-error: expected a percentage >= 0, found %g; nothing was run\n",
                     *o.max_error);
        return 2;
    }
    if (o.calibrations < 1 || (o.calibrations > 1 && !o.profile.empty())) {
        std::fprintf(stderr, "kdsim validate: --calibrations: expected a count >= 1, and none with --profile (a given "
                             "profile is not calibrated); found %d%s; nothing was run\n",
                     o.calibrations, o.profile.empty() ? "" : " with --profile");
        return 2;
    }
    if (!o.out.empty())
        if (std::string why = report::check_writable(o.out); !why.empty()) {
            std::fprintf(stderr, "kdsim validate: cannot write %s: %s; nothing was run or written\n", o.out.c_str(),
                         why.c_str());
            return 2;
        }
    const auto& all = configurations();
    for (const std::string& name : o.only) {
        bool known = false;
        for (const Config& c : all) known = known || c.name == name;
        if (!known) {
            std::string names;
            for (const Config& c : all) names += (names.empty() ? "" : ", ") + c.name;
            std::fprintf(stderr, "kdsim validate: --only: unknown configuration '%s'; the configurations are: %s\n",
                         name.c_str(), names.c_str());
            return 2;
        }
    }
    std::optional<fs::path> twins;
    if (!o.scenarios.empty()) {
        std::error_code ec;
        if (!fs::is_directory(o.scenarios, ec)) {
            std::fprintf(stderr, "kdsim validate: --scenarios: %s is not a directory; nothing was run\n",
                         o.scenarios.c_str());
            return 2;
        }
        twins = fs::path(o.scenarios);
    } else {
        twins = find_twins(o.exe);
    }
    system::Profile profile;
    std::string profile_origin;
    if (!o.profile.empty()) {
        try {
            profile = scenario::load_profile(o.profile);
        } catch (const scenario::InputError& e) {
            for (const auto& d : e.diagnostics) std::fprintf(stderr, "%s\n", d.str().c_str());
            std::fprintf(stderr, "kdsim validate: --profile %s is not a valid profile; nothing was run\n",
                         o.profile.c_str());
            return 2;
        }
        if (profile.arch != arch::Arch::X86_64) {
            std::fprintf(stderr, "kdsim validate: --profile %s is for %s; this machine is x86_64\n", o.profile.c_str(),
                         std::string(arch::to_string(profile.arch)).c_str());
            return 2;
        }
        profile_origin = "given: " + o.profile;
    }

    Progress prog;
    calibrate::CpuFeatures cpu = calibrate::detect_cpu();
    std::vector<int> cpus = calibrate::allowed_cpus();
    std::fprintf(stderr, "kdsim validate%s: %s, CPUs", o.quick ? " --quick" : "", cpu.model.c_str());
    for (int c : cpus) std::fprintf(stderr, " %d", c);
    std::fprintf(stderr, "\n");

    // ---- the profile: calibrate now unless one was given. One calibration: the range profiles
    // are its [memory] rounds' (calibrate --round-profiles); N: the N calibrations' profiles.
    std::vector<system::Profile> range_profiles;
    std::string range_over = "none (a given profile)";
    if (o.profile.empty()) {
        std::string t = (fs::temp_directory_path() / "kdsim-validate-XXXXXX").string();
        std::vector<char> buf(t.begin(), t.end());
        buf.push_back('\0');
        char* dir = mkdtemp(buf.data());
        if (!dir) throw std::runtime_error("cannot create a temporary directory for the calibrated profile");
        const int n = o.calibrations;
        for (int i = 0; i < n; ++i) {
            fs::path cal = fs::path(dir) / (n == 1 ? std::string("calibrated.toml") : fmt::format("calibrated-{}.toml", i + 1));
            std::fprintf(stderr, "[%6.1fs] calibrating this machine%s: %s calibrate%s%s --out %s\n", prog.elapsed(),
                         n == 1 ? "" : fmt::format(" ({} of {})", i + 1, n).c_str(), o.exe.c_str(),
                         o.quick ? " --quick" : "", n == 1 ? " --round-profiles" : "", cal.c_str());
            int rc = spawn_calibrate(o.exe, o.quick, n == 1, cal);
            if (rc != 0) {
                std::error_code ec;
                fs::remove_all(dir, ec);
                std::fprintf(stderr, "kdsim validate: the calibration failed (exit status %d); nothing was compared\n", rc);
                return 3;
            }
            std::vector<fs::path> files = {cal};
            if (n == 1)
                for (int k = 1; fs::exists(calibrate::round_profile_path(cal, k)); ++k)
                    files.push_back(calibrate::round_profile_path(cal, k));
            for (std::size_t f = 0; f < files.size(); ++f) {
                try {
                    system::Profile p = scenario::load_profile(files[f]);
                    if (i == 0 && f == 0) profile = p;
                    if (n > 1 || f > 0) range_profiles.push_back(std::move(p));
                } catch (const scenario::InputError& e) {
                    for (const auto& d : e.diagnostics) std::fprintf(stderr, "%s\n", d.str().c_str());
                    std::error_code ec;
                    fs::remove_all(dir, ec);
                    std::fprintf(stderr, "kdsim validate: internal error: the calibrated profile %s does not load\n",
                                 files[f].filename().c_str());
                    return 3;
                }
            }
        }
        std::error_code ec;
        fs::remove_all(dir, ec);
        profile_origin = std::string("measured now by kdsim calibrate") + (o.quick ? " --quick" : "") +
                         (n > 1 ? fmt::format(", {} times (the first's name)", n) : std::string());
        range_over = n > 1 ? fmt::format("the {} calibrations' profiles", n)
                           : fmt::format("the profile and its {} [memory] rounds' profiles", range_profiles.size());
    }

    std::fprintf(stderr, "[%6.1fs] TSC frequency (3 x 50 ms)\n", prog.elapsed());
    const calibrate::TscInfo tsc = calibrate::measure_tsc(3, 0.05);
    const double hz = tsc.hz;
    const bool two_cpus = cpus.size() >= 2;
    const int cpu_a = cpus.empty() ? 0 : cpus[0];
    const int cpu_b = two_cpus ? cpus[1] : cpu_a;
    const std::vector<int> used_cpus = two_cpus ? std::vector<int>{cpu_a, cpu_b} : std::vector<int>{cpu_a};
    const bool fifo = fifo_permitted();
    if (!fifo)
        std::fprintf(stderr, "kdsim validate: warning: SCHED_FIFO is not permitted; the hashing thread's brackets are "
                             "preemptible and the probe rows are not compared\n");

    std::vector<const Config*> chosen;
    for (const Config& c : all) {
        if (!o.only.empty()) {
            bool want = false;
            for (const auto& n : o.only) want = want || n == c.name;
            if (!want) continue;
        } else if (o.quick && !c.quick) {
            continue;
        }
        chosen.push_back(&c);
    }

    std::vector<Row> rows;
    nlohmann::json jconfigs = nlohmann::json::array();
    std::vector<std::string> findings;        // violated invariants of the real runs: exit 1
    std::vector<std::string> internal_errors; // real runs that could not be done: exit 3
    std::size_t no_twin = 0;
    // ---- the real runs, round-robin: the first repeat of every configuration, then the second, ...
    // so that each configuration's repeats are spread over the whole measurement and its spread
    // also shows the host's drift over that time (back-to-back repeats hide it: docs/validation.md).
    struct RealRuns {
        nlohmann::json jruns = nlohmann::json::array();
        std::map<std::string, Measured> meas;
        std::string skipped, failed;
        int repeats = 0;
    };
    std::vector<RealRuns> real(chosen.size());
    std::vector<int> repeats;
    for (std::size_t ci = 0; ci < chosen.size(); ++ci) {
        real[ci].repeats = o.quick ? 1 : (chosen[ci]->kind == Kind::HASH ? 3 : 5);
        if (!two_cpus) real[ci].skipped = "not run: needs two CPUs (the device or timer thread runs beside the measured CPU)";
        repeats.push_back(real[ci].repeats);
    }
    auto measure_once = [&](const Config& c, int rep, RealRuns& st) {
        const bool hash = c.kind == Kind::HASH;
        const int repeats = st.repeats;
        try {
            if (!hash) {
                RxConfig rc = c.rx;
                if (o.quick) rc.pool = 1024;
                RxRun rr;
                rr.warmup_s = o.quick ? 0.02 : 0.05;
                rr.window_s = o.quick ? 0.1 : 0.3;
                rr.cpu_rx = cpu_a;
                rr.cpu_device = cpu_b;
                rr.fifo_priority = fifo ? 50 : 0;
                sleep_s(0.1); // leave the RT bandwidth (sched_rt_runtime_us) room to refill
                const double st0 = steal_ms(used_cpus);
                RxResult x = run_rx(rc, rr, cpu, hz);
                const double steal = steal_ms(used_cpus) - st0;
                st.meas[M_THROUGHPUT].add(x.pps);
                st.meas[M_PAYLOAD].add(x.payload_mbit_s);
                st.meas[M_CYCLES_PER_PACKET].add(x.cycles_per_packet);
                st.meas[M_LONGEST_BRACKET].add(x.longest_bracket_us);
                std::fprintf(stderr,
                             "[%6.1fs] %-34s %d/%d: %.0f packets/s, %.0f Mbit/s, %.0f cycles/packet, longest "
                             "decrypt %.2f us (median %.0f cycles); host steal %.0f ms\n",
                             prog.elapsed(), c.name.c_str(), rep + 1, repeats, x.pps, x.payload_mbit_s,
                             x.cycles_per_packet, x.longest_bracket_us, x.median_bracket_cycles, steal);
                st.jruns.push_back({{"packets_per_s", x.pps},
                                    {"payload_mbit_s", x.payload_mbit_s},
                                    {"cycles_per_packet", x.cycles_per_packet},
                                    {"longest_bracket_us", x.longest_bracket_us},
                                    {"median_bracket_cycles", x.median_bracket_cycles},
                                    {"window_s", x.window_s},
                                    {"window_packets", x.window_packets},
                                    {"produced", x.produced},
                                    {"decrypted", x.decrypted},
                                    {"auth_failures", x.auth_failures},
                                    {"ring_drops", x.ring_drops},
                                    {"queue_drops", x.queue_drops},
                                    {"lines_flushed", x.lines_flushed},
                                    {"softirq_rounds", x.rounds},
                                    {"napi_polls", x.polls},
                                    {"time_squeeze", x.squeezes},
                                    {"interrupts", x.interrupts},
                                    {"worker_wakeups", x.worker_wakeups},
                                    {"conserved", x.conserved},
                                    {"host_steal_ms", steal}});
                if (x.auth_failures)
                    findings.push_back(fmt::format("{}: {} packet(s) failed authentication", c.name, x.auth_failures));
                if (!x.conserved)
                    findings.push_back(fmt::format("{}: packets not conserved: produced {} != decrypted {} + "
                                                   "auth failures {} + dropped {}",
                                                   c.name, x.produced, x.decrypted, x.auth_failures,
                                                   x.ring_drops + x.queue_drops));
            } else {
                HashConfig hc = c.hash;
                if (o.quick) hc.passes = c.quick_passes;
                HashRunOpts ho;
                ho.cpu = cpu_a;
                ho.cpu_timer = cpu_b;
                sleep_s(0.25); // leave the RT bandwidth (sched_rt_runtime_us) room to refill
                const double st0 = steal_ms(used_cpus);
                HashResult x = run_hash(hc, ho, cpu, hz);
                const double steal = steal_ms(used_cpus) - st0;
                st.meas[M_THROUGHPUT].add(x.mb_per_s);
                st.meas[M_LONGEST_BRACKET].add(x.longest_bracket_us);
                st.meas[M_PROBE_P50].add(x.probe_p50_us);
                st.meas[M_PROBE_P99].add(x.probe_p99_us);
                st.meas[M_PROBE_MAX].add(x.probe_max_us);
                std::fprintf(stderr,
                             "[%6.1fs] %-34s %d/%d: %.0f MB/s, %llu brackets, longest %.1f us, %llu yields, "
                             "probe p50/p99/max %.1f/%.1f/%.1f us (%zu samples; p50s: need_resched raised %.1f us "
                             "after the boundary, acted on after %.1f us, the probe ran %.1f us after the yield); "
                             "host steal %.0f ms%s\n",
                             prog.elapsed(), c.name.c_str(), rep + 1, repeats, x.mb_per_s,
                             static_cast<unsigned long long>(x.brackets), x.longest_bracket_us,
                             static_cast<unsigned long long>(x.yields), x.probe_p50_us, x.probe_p99_us,
                             x.probe_max_us, x.probe_latency_us.size(), x.flag_lag_p50_us, x.resched_seen_p50_us,
                             x.yield_wait_p50_us, steal, x.fifo ? "" : " (SCHED_OTHER)");
                st.jruns.push_back({{"mb_per_s", x.mb_per_s},
                                    {"bytes", x.bytes},
                                    {"buffers", x.buffers},
                                    {"elapsed_s", x.elapsed_s},
                                    {"brackets", x.brackets},
                                    {"yields", x.yields},
                                    {"xsaves", x.xsaves},
                                    {"xrstors", x.xrstors},
                                    {"longest_bracket_us", x.longest_bracket_us},
                                    {"probe_samples", x.probe_latency_us.size()},
                                    {"probe_p50_us", x.probe_p50_us},
                                    {"probe_p99_us", x.probe_p99_us},
                                    {"probe_max_us", x.probe_max_us},
                                    {"need_resched_lag_p50_us", x.flag_lag_p50_us},
                                    {"need_resched_seen_p50_us", x.resched_seen_p50_us},
                                    {"yield_wait_p50_us", x.yield_wait_p50_us},
                                    {"yield_wait_p99_us", x.yield_wait_p99_us},
                                    {"sched_fifo", x.fifo},
                                    {"host_steal_ms", steal}});
                if (!x.digest_check.empty()) findings.push_back(c.name + ": " + x.digest_check);
            }
        } catch (const std::exception& e) {
            st.failed = std::string("the real run failed: ") + e.what();
        }
    };
    for (const auto& [ci, rep] : round_robin(repeats))
        if (real[ci].skipped.empty() && real[ci].failed.empty()) measure_once(*chosen[ci], rep, real[ci]);

    for (std::size_t ci = 0; ci < chosen.size(); ++ci) {
        const Config& c = *chosen[ci];
        nlohmann::json jc;
        jc["name"] = c.name;
        jc["kind"] = to_string(c.kind);
        jc["description"] = c.description;
        std::vector<std::string> notes;
        RealRuns& st = real[ci];
        const nlohmann::json& jruns = st.jruns;
        const std::map<std::string, Measured>& meas = st.meas;
        const bool hash = c.kind == Kind::HASH;
        const std::string& skipped = st.skipped;
        const std::string& failed = st.failed;
        if (!skipped.empty()) notes.push_back(skipped);
        if (!failed.empty()) {
            notes.push_back(failed);
            internal_errors.push_back(c.name + ": " + failed);
        }

        // ---- the simulated twin, with the profile and with each range profile
        Prediction pred;
        std::vector<Prediction> range_preds;
        if (!twins) {
            pred.reason = "no scenarios/validate folder found at or above the working directory or the binary (give --scenarios)";
        } else {
            fs::path file = *twins / (c.name + ".toml");
            std::error_code ec;
            fs::path rel = file.lexically_relative(fs::current_path(ec));
            if (!ec && !rel.empty() && *rel.begin() != "..") file = rel; // shorter in the table
            std::fprintf(stderr, "[%6.1fs] %-34s simulating %s\n", prog.elapsed(), c.name.c_str(), file.c_str());
            pred = simulate_twin(c, file, {}, profile);
            if (!range_profiles.empty())
                std::fprintf(stderr, "[%6.1fs] %-34s simulating it with %zu more profiles (%s)\n", prog.elapsed(),
                             c.name.c_str(), range_profiles.size(), range_over.c_str());
            for (std::size_t k = 0; k < range_profiles.size(); ++k) {
                range_preds.push_back(simulate_twin(c, file, {}, range_profiles[k]));
                if (!range_preds.back().ok)
                    notes.push_back(fmt::format("range profile {} has no twin: {}", k + 1, range_preds.back().reason));
            }
        }
        if (!pred.ok) {
            ++no_twin;
            notes.push_back("no simulated twin: " + pred.reason);
        }
        const bool probe_ok = hash && fifo;
        if (hash && !fifo) notes.push_back("SCHED_FIFO not permitted: the real brackets were preemptible, probe rows not compared");
        jc["twin"] = {{"scenario", pred.scenario},
                      {"status", pred.ok ? "ok" : "missing"},
                      {"reason", pred.reason},
                      {"simulated_s", pred.simulated_s},
                      {"wall_s", pred.wall_s}};
        jc["predicted"] = pred.values;
        jc["predicted_range_profiles"] = nlohmann::json::array();
        for (const auto& rp : range_preds) jc["predicted_range_profiles"].push_back(rp.values);
        jc["runs"] = jruns;
        jc["notes"] = notes;
        jconfigs.push_back(std::move(jc));

        struct Spec {
            const char* key;
            const char* unit;
            std::optional<double> goal;
            bool compare = true;
        };
        std::vector<Spec> specs;
        if (hash)
            specs = {{M_THROUGHPUT, "MB/s", 10.0},
                     {M_LONGEST_BRACKET, "us", std::nullopt},
                     {M_PROBE_P50, "us", std::nullopt, probe_ok},
                     {M_PROBE_P99, "us", 20.0, probe_ok},
                     {M_PROBE_MAX, "us", std::nullopt, probe_ok}};
        else
            specs = {{M_THROUGHPUT, "packets/s", 10.0},
                     {M_PAYLOAD, "Mbit/s", std::nullopt},
                     {M_CYCLES_PER_PACKET, "cycles", std::nullopt},
                     {M_LONGEST_BRACKET, "us", std::nullopt}};
        std::string note;
        for (const auto& n : notes) note += (note.empty() ? "" : "; ") + n;
        for (const Spec& sp : specs) {
            Row r;
            r.config = c.name;
            r.metric = sp.key;
            r.unit = sp.unit;
            r.goal_pct = sp.goal;
            r.note = note;
            if (auto it = meas.find(sp.key); it != meas.end() && !it->second.values.empty()) {
                calibrate::Stats st = calibrate::summarize(it->second.values);
                r.measured = st.median;
                r.spread = st.spread;
                r.repeats = static_cast<int>(st.n);
            }
            if (auto it = pred.values.find(sp.key); pred.ok && sp.compare && it != pred.values.end()) {
                std::vector<double> others;
                for (const auto& rp : range_preds)
                    if (auto jt = rp.values.find(sp.key); rp.ok && jt != rp.values.end()) others.push_back(jt->second);
                // N calibrations: the range is theirs alone (the first is among them)
                set_predictions(r, o.calibrations > 1 ? std::nullopt : std::optional<double>(it->second), others);
            }
            rows.push_back(std::move(r));
        }
    }

    // ---- output
    Verdict v = evaluate(rows, o.max_error);
    std::printf("kdsim validate%s: %s, TSC %.3f GHz, %zu CPUs; profile %s (%s)\n", o.quick ? " --quick" : "",
                cpu.model.c_str(), hz / 1e9, cpus.size(), profile.name.c_str(), profile_origin.c_str());
    std::printf("measured: median of the repeats (spread = IQR / median); predicted: the twin in scenarios/validate/, "
                "the centre of its range over %s (width = (high - low) / centre); error = (predicted - measured) / "
                "measured\n\n",
                range_over.c_str());
    std::fputs(format_table(rows).c_str(), stdout);
    std::printf("\n%zu metric(s) compared in %zu configuration(s), %zu without a simulated twin; %zu of %zu within "
                "the issue's goals (throughput ±10%%, probe p99 ±20%%: the error within the goal and the prediction "
                "range no wider than it); %zu more with the error within the goal but the range wider (WIDE)\n",
                v.compared, chosen.size(), no_twin, v.goal_met, v.with_goal, v.too_wide);
    for (const auto& f : findings) std::printf("FINDING: %s\n", f.c_str());
    for (const auto& f : internal_errors) std::printf("ERROR: %s\n", f.c_str());
    if (o.max_error) {
        if (v.exceeded()) {
            std::printf("%zu error(s) above --max-error %g%%:\n", v.over.size(), *o.max_error);
            for (const auto& s : v.over) std::printf("  %s\n", s.c_str());
        } else {
            std::printf("every compared error is within --max-error %g%%\n", *o.max_error);
        }
    }
    const int status = !internal_errors.empty() ? 3 : (!findings.empty() || v.exceeded()) ? 1 : 0;

    if (!o.out.empty()) {
        nlohmann::json j;
        j["tool"] = "kdsim validate";
        j["date"] = calibrate::utc_now("%Y-%m-%d %H:%M UTC");
        j["quick"] = o.quick;
        j["max_error_pct"] = o.max_error ? nlohmann::json(*o.max_error) : nlohmann::json(nullptr);
        j["cpu"] = {{"model", cpu.model},
                    {"vendor", cpu.vendor},
                    {"tsc_hz", hz},
                    {"cpus", cpus},
                    {"sched_fifo_permitted", fifo}};
        j["profile"] = {{"name", profile.name},
                        {"origin", profile_origin},
                        {"clock_hz", profile.clock_hz},
                        {"range_over", range_over},
                        {"range_profiles", range_profiles.size()}};
        j["configurations"] = jconfigs;
        j["rows"] = rows_json(rows);
        j["summary"] = {{"compared", v.compared},
                        {"with_goal", v.with_goal},
                        {"goal_met", v.goal_met},
                        {"goal_met_but_range_wider", v.too_wide},
                        {"without_twin", no_twin},
                        {"above_max_error", v.over},
                        {"findings", findings},
                        {"internal_errors", internal_errors}};
        j["exit_status"] = status;
        try {
            report::write_file_atomically(o.out, j.dump(2) + "\n");
        } catch (const std::exception& e) {
            std::fprintf(stderr, "kdsim validate: %s\n", e.what());
            return 2;
        }
    }
    return status;
#endif
}

} // namespace kdsim::validate
