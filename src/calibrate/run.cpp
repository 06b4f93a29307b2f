// kdsim calibrate: orchestrates the measurements, prints progress and a summary, assembles the
// profile (measured figures + the figures user space cannot measure, copied from a base profile)
// and writes it atomically after `kdsim check`'s loader has accepted it.
#include "calibrate/calibrate.h"
#include "calibrate/ciphers.h"
#include "calibrate/primitives.h"

#include "report/report.h"
#include "scenario/figures.h"
#include "scenario/load.h"

#include <fmt/format.h>
#include <openssl/crypto.h>

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <map>
#include <set>
#include <sstream>
#include <stdexcept>

namespace kdsim::calibrate {

namespace fs = std::filesystem;

namespace {

struct Progress {
    int step = 0, total = 0;
    std::chrono::steady_clock::time_point t0 = std::chrono::steady_clock::now();
    void next(const std::string& what) {
        ++step;
        double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        std::fprintf(stderr, "[%2d/%d %6.1fs] %s\n", step, total, s, what.c_str());
    }
};

std::string toml_escape(const std::string& s) {
    std::string o;
    for (char c : s) {
        switch (c) {
        case '"': o += "\\\""; break;
        case '\\': o += "\\\\"; break;
        case '\n': o += "\\n"; break;
        case '\t': o += "\\t"; break;
        default:
            if (static_cast<unsigned char>(c) < 0x20) o += fmt::format("\\u{:04x}", static_cast<unsigned>(c));
            else o += c;
        }
    }
    return o;
}

std::string host_name() {
    char buf[256] = {};
    if (gethostname(buf, sizeof buf - 1) != 0 || !buf[0]) return "host";
    std::string s;
    for (char c : std::string(buf))
        s += (std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.') ? c : '-';
    return s;
}

// A line of the profile: key = { value, unit, source }.
struct Fig {
    std::string value; // already formatted
    std::string unit;
    std::string source;
};

struct Ctx {
    std::string cpu;
    std::string date;
    std::string measured_prefix() const { return "measured by kdsim calibrate on " + cpu + ", " + date; }
    std::string src(const Measured& m, const std::string& how) const {
        std::string s = fmt::format("{}, median of {}, spread {:.1f}%", measured_prefix(), m.stats.n,
                                    m.stats.spread * 100);
        if (m.noisy)
            s += fmt::format(" (NOISY: spread {:.1f}% after {} repeats, above the {:.0f}% bound)", m.stats.spread * 100,
                             m.attempts, m.bound * 100);
        return s + "; " + how;
    }
};

std::string int_value(double v) { return fmt::format("{}", static_cast<long long>(std::llround(std::max(0.0, v)))); }

fs::path find_base(const std::string& base, const std::string& exe) {
    fs::path p(base);
    std::error_code ec;
    if (p.extension() == ".toml" || fs::is_regular_file(p, ec)) return p;
    if (auto found = find_in_tree(fs::path("data") / "profiles" / (base + ".toml"), exe, false)) return *found;
    throw std::invalid_argument("cannot find base profile '" + base +
                                "': no data/profiles/" + base + ".toml at or above the working directory or the "
                                "kdsim binary (give a path to a profile file)");
}

// The profile name the loader demands for a file under data/profiles, else calibrated/<host>.
std::string profile_name_for(const fs::path& out) {
    return scenario::profile_name_from_path(out).value_or("calibrated/" + host_name());
}

} // namespace

fs::path round_profile_path(const fs::path& out, int k) {
    fs::path p = out;
    return p.replace_filename(fmt::format("{}.round{}.toml", out.stem().string(), k));
}

int run(const Options& o) {
    const fs::path out(o.out);
    if (std::string why = report::check_writable(out); !why.empty()) {
        std::fprintf(stderr, "kdsim calibrate: cannot write %s: %s; nothing was measured or written\n",
                     o.out.c_str(), why.c_str());
        return 2;
    }
    fs::path base_path;
    std::map<std::string, scenario::RawFigure> base;
    try {
        base_path = find_base(o.base, o.exe);
        (void)scenario::load_profile(base_path); // the base must itself be a valid profile
        base = scenario::read_raw_figures(base_path);
    } catch (const scenario::InputError& e) {
        for (const auto& d : e.diagnostics) std::fprintf(stderr, "%s\n", d.str().c_str());
        std::fprintf(stderr, "kdsim calibrate: the base profile is invalid; nothing was measured or written\n");
        return 2;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "kdsim calibrate: %s; nothing was measured or written\n", e.what());
        return 2;
    }
    if (base["profile.arch"].source != "x86_64") {
        std::fprintf(stderr, "kdsim calibrate: base profile %s is for arch %s; this machine is x86_64\n",
                     base_path.string().c_str(), base["profile.arch"].source.c_str());
        return 2;
    }
    const std::string base_name = base["profile.name"].source;

    CpuFeatures cpu = detect_cpu();
    Ctx ctx{cpu.model, utc_now("%Y-%m-%d")};
    std::vector<int> cpus = allowed_cpus();
    const int cpu_a = cpus.empty() ? 0 : cpus.front();
    std::optional<int> cpu_b;
    if (cpus.size() > 1) cpu_b = cpus[1];
    if (!pin_to_cpu(cpu_a)) std::fprintf(stderr, "kdsim calibrate: warning: cannot pin to CPU %d\n", cpu_a);

    const int samples = o.quick ? 11 : 31;
    const std::vector<std::size_t> hash_sizes =
        o.quick ? std::vector<std::size_t>{16, 256, 4096, 65536}
                : std::vector<std::size_t>{16, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384, 32768, 65536};

    // The [memory] rounds (primitives.h): the device-written lines and the cold copy, each round on
    // regions of its own, all made here, before the first round; the rounds spread over the run
    // (before the hashes, after them, after the ciphers, after the hierarchy, at the end).
    const int n_rounds = o.quick ? 3 : 5;
    const std::vector<int> round_after = o.quick ? std::vector<int>{0, 3, 4} : std::vector<int>{0, 1, 2, 3, 4};
    const std::vector<CacheLevelInfo> cache_levels = read_cache_levels(cpu_a);
    std::vector<DeviceLinesRegions> round_regions(static_cast<std::size_t>(n_rounds));
    std::vector<CopyBuffers> round_copies;
    for (int k = 0; k < n_rounds; ++k) round_copies.emplace_back(copy_working_set(cache_levels));
    std::vector<MemoryRound> mem_rounds;

    Progress prog;
    prog.total = 1 + 15 + 6 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + n_rounds;
    auto memory_rounds_at = [&](int where) {
        for (int w : round_after) {
            if (w != where) continue;
            const std::size_t k = mem_rounds.size();
            prog.next(fmt::format("[memory] round {}/{}: {}, then memcpy of {} MiB between cold buffers", k + 1,
                                  n_rounds,
                                  cpu_b ? fmt::format("lines written by CPU {} with non-temporal stores, read on CPU {}",
                                                      *cpu_b, cpu_a)
                                        : std::string("lines written with non-temporal stores, read back (one CPU only)"),
                                  round_copies[k].bytes >> 20));
            MemoryRound m;
            m.at_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - prog.t0).count();
            m.dev = measure_device_lines(cpu_b, samples, &round_regions[k]);
            pin_to_cpu(cpu_a);
            m.copy = measure_copy(round_copies[k], std::max(3, samples / 2));
            std::fprintf(stderr, "        DRAM chase %.1f cycles/load, copy %.3f cycles/byte\n", m.dev.chase.stats.median,
                         m.copy.stats.median);
            mem_rounds.push_back(std::move(m));
        }
    };
    std::fprintf(stderr, "kdsim calibrate%s: %s (%s), pinned to CPU %d; %d samples per figure\n",
                 o.quick ? " --quick" : "", cpu.model.c_str(), cpu.vendor.c_str(), cpu_a, samples);

    prog.next("TSC frequency against CLOCK_MONOTONIC (3 x 100 ms)");
    TscInfo tsc = measure_tsc(3, 0.1);
    std::fprintf(stderr, "        TSC %.6f GHz (spread %.3f%%)%s%s\n", tsc.hz / 1e9, tsc.stats.spread * 100,
                 tsc.invariant ? ", invariant (constant_tsc nonstop_tsc)" : ", NOT flagged invariant",
                 tsc.cpuid_hz > 0 ? fmt::format(", CPUID 0x15 says {:.6f} GHz", tsc.cpuid_hz / 1e9).c_str()
                                  : ", CPUID 0x15 states no frequency");
    memory_rounds_at(0);

    // ---- hashes
    struct HashOut {
        std::string alg, impl;
        HashRun run;
        std::size_t n = 0;
    };
    std::vector<HashOut> hashes;
    std::vector<std::string> unavailable;
    for (const char* alg : HASH_ALGS) {
        for (const char* impl : HASH_IMPLS) {
            prog.next(fmt::format("{} {} (OPENSSL_ia32cap={})", alg, impl, ia32cap_mask(impl)));
            if (auto why = hash_unavailable(cpu, alg, impl)) {
                std::fprintf(stderr, "        unavailable: %s %s: %s; omitted from the profile\n", alg, impl,
                             why->c_str());
                unavailable.push_back(fmt::format("{}.{}: {}", alg, impl, *why));
                continue;
            }
            // Several child processes (full run): the per-call cost at small sizes moves between
            // processes by more than within one (memory layout); take the median of the runs and
            // count the between-run range into the spread.
            const int runs = o.quick ? 1 : 3;
            std::vector<HashRun> rs;
            for (int i = 0; i < runs; ++i) rs.push_back(spawn_hash_measurement(o.exe, alg, impl, hash_sizes, samples, cpu_a));
            HashOut h{alg, impl, combine_runs(rs)};
            h.n = h.run.points.front().cycles.stats.n;
            std::fprintf(stderr, "        %.3f cycles/byte, %.0f cycles/call (64 KiB: %.0f cycles)\n",
                         h.run.fit.slope, h.run.fit.intercept, h.run.points.back().cycles.stats.median);
            hashes.push_back(std::move(h));
        }
    }
    memory_rounds_at(1);
    // ---- ciphers and AEADs (ciphers.h): one child process per primitive and implementation
    CipherPlan plan;
    plan.exe = o.exe;
    // The hash sizes and the packet payloads the datapaths encrypt most: WireGuard's default MTU
    // (1420) and TCP's MSS over a 1500-byte MTU with and without timestamps (1448, 1460); the curve
    // is interpolated between measured sizes and a call's cost is not a line between them.
    plan.sizes = hash_sizes;
    for (std::size_t n : {std::size_t{64}, std::size_t{512}, std::size_t{1420}, std::size_t{1448}, std::size_t{1460}})
        if (std::find(plan.sizes.begin(), plan.sizes.end(), n) == plan.sizes.end()) plan.sizes.push_back(n);
    std::sort(plan.sizes.begin(), plan.sizes.end());
    plan.samples = samples;
    plan.runs = o.quick ? 1 : 3;
    plan.cpu = cpu_a;
    std::vector<CipherMeasurement> ciphers = measure_ciphers(
        cpu, plan, &unavailable,
        [&](const std::string& prim) {
            prog.next(fmt::format("{} ({})", prim, fmt::join(std::begin(CIPHER_IMPLS), std::end(CIPHER_IMPLS), ", ")));
        },
        [&](const CipherMeasurement& c) {
            std::fprintf(stderr, "        %-7s %.3f cycles/byte, %.0f cycles/call (64 KiB: %.0f cycles)%s\n",
                         c.impl.c_str(), c.run.fit.slope, c.run.fit.intercept, c.run.points.back().cycles.stats.median,
                         c.named ? "" : fmt::format(" - OpenSSL's {} path, no [cipher] name: a comment only", c.path).c_str());
        });
    for (auto& u : unavailable)
        if (u.rfind("cipher.", 0) == 0) std::fprintf(stderr, "        unavailable: %s\n", u.c_str());

    // Did the masks take effect? Distinct code paths must differ in speed.
    std::vector<std::string> verification;
    auto verify = [&](const std::string& what, const std::vector<std::pair<std::string, double>>& v) {
        for (std::size_t i = 0; i + 1 < v.size(); ++i)
            for (std::size_t j = i + 1; j < v.size(); ++j) {
                double a = v[i].second, b = v[j].second;
                double diff = std::fabs(a - b) / std::min(a, b);
                std::string line = fmt::format("{}: {} vs {} at 64 KiB: {:.0f} vs {:.0f} cycles ({:+.1f}%)", what,
                                               v[i].first, v[j].first, a, b, (b - a) / a * 100);
                if (diff < 0.03) {
                    line += " - NOT distinguishable: the mask may not have taken effect";
                    std::fprintf(stderr, "kdsim calibrate: warning: %s\n", line.c_str());
                }
                verification.push_back(line);
            }
    };
    for (const char* alg : HASH_ALGS) {
        std::vector<std::pair<std::string, double>> v;
        for (auto& h : hashes)
            if (h.alg == alg) v.emplace_back(h.impl, h.run.points.back().cycles.stats.median);
        verify(alg, v);
    }
    for (const char* prim : CIPHER_PRIMS) {
        std::vector<std::pair<std::string, double>> v;
        for (auto& c : ciphers)
            if (c.prim == prim) v.emplace_back(c.named ? c.impl : c.path + " (" + c.impl + " mask)",
                                               c.run.points.back().cycles.stats.median);
        verify(prim, v);
    }

    memory_rounds_at(2);
    // ---- XSAVE
    prog.next("SIMD state save/restore (XSAVEOPT/XRSTOR of the XCR0 components)");
    XsaveResult xs = measure_xsave(cpu, samples);
    std::fprintf(stderr, "        XCR0 0x%llx, %u bytes: %s %.0f cycles, XRSTOR %.0f cycles\n",
                 static_cast<unsigned long long>(cpu.xcr0), xs.state_size, xs.save_insn.c_str(),
                 xs.save.stats.median, xs.restore.stats.median);

    // ---- cache flush
    prog.next(cpu.clflushopt ? "CLFLUSHOPT per line (dirty and clean lines) and re-read"
                             : "CLFLUSH per line (dirty and clean lines) and re-read");
    std::vector<std::size_t> flush_sizes =
        o.quick ? std::vector<std::size_t>{1536, 4096, 9216} : std::vector<std::size_t>{1536, 2048, 4096, 6144, 9216};
    auto flush = measure_flush(cpu, flush_sizes, samples);

    const std::vector<std::size_t> memcpy_sizes =
        o.quick ? std::vector<std::size_t>{64, 512, 1500, 9000}
                : std::vector<std::size_t>{64, 128, 256, 512, 1024, 1500, 4096, 9000};
    prog.next("memcpy 64..9000 bytes (hot source)");
    auto mc = measure_memcpy(memcpy_sizes, samples);

    prog.next("memory hierarchy (pointer chase per cache level and beyond)");
    const std::size_t chase_line = cpu.cache_line ? cpu.cache_line : 64;
    auto hier = measure_hierarchy(cache_levels, chase_line, samples, false);
    hier.copy_bytes = round_copies.front().bytes;
    memory_rounds_at(3);

    prog.next(cpu_b ? fmt::format("futex ping-pong (CPU {} alone, CPU {} <-> CPU {})", cpu_a, cpu_a, *cpu_b)
                    : std::string("futex ping-pong (one CPU only)"));
    auto fx = measure_futex(cpu_a, cpu_b, samples, o.quick);
    pin_to_cpu(cpu_a);

    prog.next("timer-signal delivery");
    auto sig = measure_signals(tsc.hz, samples);
    memory_rounds_at(4);
    round_copies.clear();
    round_regions.clear();

    prog.next("assembling and checking the profile");
    // Split of the same-CPU handoff (see docs/calibration.md):
    //   handoff = wake syscall (no waiter) + wait syscall (EAGAIN path) + wakeup + context switch
    //   wakeup  = extra cost of a FUTEX_WAKE that finds a sleeper (waker side, other CPU)
    double sys_base = fx.wake_nowaiter.stats.median + fx.wait_eagain.stats.median;
    double wakeup = std::max(0.0, fx.wake_waiter_local.stats.median - fx.wake_nowaiter.stats.median);
    double cswitch = fx.handoff_same_cpu.stats.median - sys_base - wakeup;
    bool cswitch_clamped = cswitch < 0;
    cswitch = std::max(0.0, cswitch);

    // ---- the profile text
    const std::string cmd = std::string("kdsim calibrate") + (o.quick ? " --quick" : "") + " --base " + o.base;
    std::string t;
    t += fmt::format("# Calibrated profile written by `{}` on {} ({}), {}.\n", cmd, cpu.model, host_name(), ctx.date);
    t += fmt::format("# Every cycle figure is in TSC cycles at {:.6f} GHz (the TSC frequency measured against\n"
                     "# CLOCK_MONOTONIC; cpu.clock). Measured figures say \"measured by kdsim calibrate\"; the\n"
                     "# figures user space cannot measure are copied from {} and say so. See docs/calibration.md.\n",
                     tsc.hz / 1e9, base_name);
    for (auto& u : unavailable) t += "# unavailable (omitted): " + u + "\n";
    t += "\n[profile]\n";
    t += fmt::format("name = \"{}\"\n", toml_escape(profile_name_for(out)));
    t += "arch = \"x86_64\"\n";
    t += fmt::format("description = \"{}\"\n",
                     toml_escape(fmt::format("{} measured by kdsim calibrate{} on {}: TSC {:.3f} GHz, hashes and ciphers "
                                             "through OpenSSL {}, XSAVE state {} B; kernel-only figures from {}",
                                             cpu.model, o.quick ? " --quick" : "", ctx.date, tsc.hz / 1e9,
                                             OpenSSL_version(OPENSSL_VERSION_STRING), xs.state_size, base_name)));

    std::map<std::string, Fig> measured;
    {
        Measured tm;
        tm.stats = tsc.stats;
        tm.bound = 0.01;
        tm.noisy = tsc.stats.spread > 0.01;
        measured["cpu.clock"] = {int_value(tsc.hz), "Hz",
                                 ctx.src(tm, fmt::format("TSC ticks over 3 x 100 ms of CLOCK_MONOTONIC{}{}; all cycle "
                                                         "figures of this profile are TSC cycles",
                                                         tsc.invariant ? ", invariant TSC" : ", TSC not flagged invariant",
                                                         tsc.cpuid_hz > 0 ? fmt::format(", CPUID 0x15 {:.0f} Hz", tsc.cpuid_hz) : ""))};
    }
    measured["cpu.cache_line"] = {std::to_string(cpu.cache_line ? cpu.cache_line : 64), "bytes",
                                  ctx.measured_prefix() + ": read from CPUID.01H:EBX[15:8] (CLFLUSH line size) x 8"};
    // The local wake-up's whole cost (the waker's part and the activation) is what is measured; the
    // activation is copied from the base and the waker's part is the rest.
    const double activate = base.count("sched.wakeup_activate") ? base.at("sched.wakeup_activate").value : 0.0;
    measured["sched.wakeup"] = {
        int_value(std::max(0.0, wakeup - activate)), "cycles",
        ctx.src(fx.wake_waiter_local,
                fmt::format("FUTEX_WAKE that wakes a SCHED_BATCH thread sleeping on the same CPU (no wakeup "
                            "preemption), timed on the waker ({:.0f} cycles), minus a FUTEX_WAKE finding no waiter "
                            "({:.0f}): try_to_wake_up + enqueue on the local runqueue ({:.0f}), minus "
                            "sched.wakeup_activate as copied from the base ({:.0f})",
                            fx.wake_waiter_local.stats.median, fx.wake_nowaiter.stats.median, wakeup, activate))};
    measured["sched.context_switch"] = {
        int_value(cswitch), "cycles",
        ctx.src(fx.handoff_same_cpu,
                fmt::format("futex ping-pong between two SCHED_BATCH threads pinned to one CPU (each handoff = one waking "
                            "FUTEX_WAKE + one blocking FUTEX_WAIT and its switch): {:.0f} cycles per handoff minus the "
                            "two futex syscalls' base cost ({:.0f} wake without waiter + {:.0f} wait EAGAIN) minus "
                            "sched.wakeup ({:.0f}){}",
                            fx.handoff_same_cpu.stats.median, fx.wake_nowaiter.stats.median,
                            fx.wait_eagain.stats.median, wakeup, cswitch_clamped ? "; negative, clamped to 0" : ""))};
    measured["simd.state_size"] = {
        std::to_string(xs.state_size), "bytes",
        ctx.measured_prefix() + fmt::format(": CPUID 0xD.0:EBX, standard-format XSAVE area for XCR0 0x{:x} "
                                            "(compacted XSAVES area for XCR0|XSS: {} B, CPUID 0xD.1:EBX)",
                                            cpu.xcr0, xs.compact_size)};
    measured["simd.save"] = {
        int_value(xs.save.stats.median), "cycles",
        ctx.src(xs.save, fmt::format("{} of all XCR0 components (0x{:x}) right after the state was modified (YMM "
                                     "written), fenced RDTSC/RDTSCP bracket minus its empty cost; the kernel uses "
                                     "XSAVES (kernel-only)", xs.save_insn, cpu.xcr0))};
    measured["simd.restore"] = {
        int_value(xs.restore.stats.median), "cycles",
        ctx.src(xs.restore, fmt::format("XRSTOR of all XCR0 components (0x{:x}) from a standard-format area, fenced "
                                        "bracket minus its empty cost; the kernel uses XRSTORS (kernel-only)",
                                        cpu.xcr0))};
    for (auto& h : hashes) {
        // The per-byte figure is fixed by the largest sizes, the per-call one by the smallest:
        // each carries the spread of that end.
        Measured m = h.run.points.back().cycles, mc = h.run.points.front().cycles;
        m.bound = mc.bound = 0.05;
        m.noisy = m.stats.spread > m.bound;
        mc.noisy = mc.stats.spread > mc.bound;
        std::string how = fmt::format("OpenSSL {} EVP init/update/final forced to its {} code with OPENSSL_ia32cap={}; "
                                      "weighted least-squares fit of cycles(len) = per_call + per_byte x len over {} "
                                      "sizes {}..{} B{}",
                                      OpenSSL_version(OPENSSL_VERSION_STRING), h.impl, ia32cap_mask(h.impl), h.run.points.size(),
                                      h.run.points.front().len, h.run.points.back().len,
                                      o.quick ? "" : "; median of 3 child processes, spread includes their range");
        std::string key = "hash." + h.alg + "." + h.impl;
        measured[key + ".cycles_per_byte"] = {fmt::format("{:.4f}", std::max(0.0, h.run.fit.slope)), "cycles/byte",
                                              ctx.src(m, how + fmt::format(" (spread at {} B)", h.run.points.back().len))};
        std::string call_how = how;
        if (h.run.fit.intercept < 0) call_how += fmt::format("; fitted intercept {:.0f} < 0, written as 0", h.run.fit.intercept);
        measured[key + ".cycles_per_call"] = {int_value(h.run.fit.intercept), "cycles",
                                              ctx.src(mc, call_how + fmt::format(" (spread at {} B)", h.run.points.front().len))};
    }

    auto copied = [&](const std::string& key) -> std::optional<Fig> {
        auto it = base.find(key);
        if (it == base.end() || it->second.unit.empty()) return std::nullopt;
        const auto& f = it->second;
        std::string v = f.integral ? int_value(f.value) : fmt::format("{}", f.value);
        return Fig{v, f.unit, "not measured by kdsim calibrate; from " + base_name + ": " + f.source};
    };
    auto emit = [&](const std::string& key, const Fig& f) {
        auto dot = key.rfind('.');
        t += fmt::format("{} = {{ value = {}, unit = \"{}\", source = \"{}\" }}\n", key.substr(dot + 1), f.value,
                         f.unit, toml_escape(f.source));
    };
    int n_measured = 0, n_copied = 0, n_coherent = 0;
    auto section = [&](const std::string& sec, const std::vector<std::string>& keys, const std::string& extra = "") {
        t += "\n[" + sec + "]\n" + extra;
        for (auto& k : keys) {
            std::string key = sec + "." + k;
            if (auto it = measured.find(key); it != measured.end()) {
                emit(key, it->second);
                ++n_measured;
            } else if (auto f = copied(key)) {
                emit(key, *f);
                ++n_copied;
            } else {
                throw std::runtime_error("base profile " + base_name + " lacks " + key);
            }
        }
    };
    section("cpu", {"clock", "cache_line"});
    section("sched", {"context_switch", "wakeup", "wakeup_activate", "tick", "cond_resched", "load_balance"});
    // a guest (CPUID.1:ECX bit 31, hypervisor present): the timer interrupt's delivery through the
    // hypervisor = the timer signal's round trip less what a bare kernel would spend in it (the
    // signal's delivery, handler and sigreturn: the self-signal; the interrupt's entry, handler and
    // exit: the base's [irq] figures, which the model charges on its own)
    std::vector<std::string> irq_keys = {"entry", "exit", "timer_handler", "softirq_round"};
    if ((cpu.leaf1_ecx >> 31) & 1u) {
        auto base_value = [&](const char* k) {
            auto it = base.find(std::string("irq.") + k);
            return it == base.end() ? 0.0 : it->second.value;
        };
        const double bare = base_value("entry") + base_value("timer_handler") + base_value("exit");
        const double rt = sig.timer_round_trip.stats.median, self = sig.self_signal.stats.median;
        measured["irq.guest_timer_delivery"] = {
            int_value(std::max(0.0, rt - self - bare)), "cycles",
            fmt::format("{}: a guest (CPUID hypervisor bit): the round trip of a periodic POSIX timer's signal to a "
                        "spinning thread, {:.0f} TSC cycles (spread {:.1f}%), less a signal to itself (tgkill, handler, sigreturn) "
                        "{:.0f} and the bare kernel's timer interrupt of {} (irq.entry + timer_handler + exit) {:.0f}: "
                        "the vCPU's exit on the host timer, the injection and the re-entry",
                        ctx.measured_prefix(), rt, sig.timer_round_trip.stats.spread * 100, self, base_name, bare)};
        irq_keys.emplace_back("guest_timer_delivery");
    }
    section("irq", irq_keys);
    section("irqflags", {"local_irq_disable", "local_irq_enable", "local_irq_save", "local_irq_restore"});
    section("bh", {"local_bh_disable", "local_bh_enable"});
    {
        std::vector<std::string> simd = {"state_size", "begin", "end", "save", "restore"};
        for (const char* opt : {"unavailable_trap", "kernel_use_warning"})
            if (base.count(std::string("simd.") + opt)) simd.emplace_back(opt);
        section("simd", simd, "unit = \"x86-fpu\"\n");
    }
    for (auto& h : hashes) {
        std::string sec = "hash." + h.alg + "." + h.impl;
        section(sec, {"cycles_per_byte", "cycles_per_call"});
    }
    // [cipher.<prim>.<impl>] (ciphers.h): the named measurements, generic first.
    t += cipher_tables_toml(ciphers, cpu.model, ctx.date, o.quick);
    int n_cipher = 0;
    for (auto& c : ciphers) n_cipher += c.named ? 2 : 0;
    n_measured += n_cipher;
    // Optional sections of the base ([net], [irqmask.*]): copied whole, marked as not measured.
    std::map<std::string, std::vector<std::string>> optional_secs;
    for (auto& [key, f] : base) {
        if (f.unit.empty()) continue;
        if (key.rfind("net.", 0) == 0 || key.rfind("irqmask.", 0) == 0) {
            auto dot = key.rfind('.');
            optional_secs[key.substr(0, dot)].push_back(key.substr(dot + 1));
        }
    }
    for (auto& [sec, keys] : optional_secs) section(sec, keys);
    // [dma] (when the loader and the base have it): x86 DMA is cache-coherent, so the per-line
    // maintenance figures are 0; the measured CLFLUSHOPT cost is a stand-in, documented only.
    if (auto it = base.find("dma.coherent"); it != base.end() && it->second.is_bool) {
        t += std::string("\n[dma]\ncoherent = ") + (it->second.value != 0 ? "true" : "false") + "\n";
        for (auto& [key, f] : base) {
            if (key.rfind("dma.", 0) != 0 || f.unit.empty()) continue;
            std::string k = key.substr(4);
            bool per_line = k.find("_line") != std::string::npos || k == "outer_sync" || k == "barrier";
            if (per_line && it->second.value != 0) {
                emit(key, Fig{"0", f.unit,
                              "kdsim calibrate: x86 DMA is cache-coherent (devices snoop the CPU caches), dma-direct does "
                              "no cache maintenance, so 0; the CLFLUSHOPT cost measured on this machine is a stand-in "
                              "for non-coherent maintenance, given in docs/calibration.md and in the '# measured:' comments at the end "
                              "of this file"});
                ++n_coherent;
            } else if (auto c = copied(key)) {
                emit(key, *c);
                ++n_copied;
            }
        }
    }

    // Notes: measured, not profile keys (kdsim's [dma] schema is fixed, and the loader has no copy or
    // signal section): a "# measured:" comment block in the profile, the same lines on stdout.
    std::vector<std::string> notes;
    auto pct = [](const Measured& m) {
        return fmt::format("spread {:.1f}%{}", m.stats.spread * 100, m.noisy ? " NOISY" : "");
    };
    const std::string fl = flush.insn;
    for (auto& p : flush.points)
        notes.push_back(fmt::format("{} {} B ({} lines), per line (+ MFENCE): dirty {:.1f} cycles ({}), clean {:.1f} "
                                    "cycles ({}); re-read from memory after it {:.1f} cycles/line ({})",
                                    fl, p.size, p.lines, p.dirty.stats.median, pct(p.dirty), p.clean.stats.median,
                                    pct(p.clean), p.reread.stats.median, pct(p.reread)));
    if (flush.points.size() >= 2) {
        auto fit = [](const LineFit& f) { return fmt::format("{:.0f} cycles/call + {:.1f} cycles/line", f.intercept, f.slope); };
        notes.push_back(fmt::format("{} fit over {}..{} B: dirty lines {}; clean lines {}; re-read from memory {}", fl,
                                    flush.points.front().size, flush.points.back().size, fit(flush.dirty_fit),
                                    fit(flush.clean_fit), fit(flush.reread_fit)));
    }
    for (auto& p : mc.points)
        notes.push_back(fmt::format("memcpy {} B (hot source): {:.0f} cycles = {:.3f} cycles/byte ({})", p.len,
                                    p.cycles.stats.median, p.cycles.stats.median / static_cast<double>(p.len),
                                    pct(p.cycles)));
    if (mc.points.size() >= 2)
        notes.push_back(fmt::format("memcpy fit {}..{} B: {:.4f} cycles/byte + {:.0f} cycles/call", mc.points.front().len,
                                    mc.points.back().len, mc.fit.slope, mc.fit.intercept));
    notes.push_back(fmt::format("futex syscall base: FUTEX_WAKE without waiter {:.0f} cycles, FUTEX_WAIT EAGAIN {:.0f} cycles",
                                fx.wake_nowaiter.stats.median, fx.wait_eagain.stats.median));
    notes.push_back(fmt::format("FUTEX_WAKE of a sleeper on the same CPU {:.0f} cycles ({})",
                                fx.wake_waiter_local.stats.median, pct(fx.wake_waiter_local)));
    notes.push_back(fmt::format("futex handoff on one CPU {:.0f} cycles ({})", fx.handoff_same_cpu.stats.median,
                                pct(fx.handoff_same_cpu)));
    if (fx.cross_cpu)
        notes.push_back(fmt::format("wake-up latency (futex handoff between two CPUs) {:.0f} cycles = {:.2f} us "
                                    "({}); waker-side FUTEX_WAKE of a sleeper {:.0f} cycles",
                                    fx.handoff_cross_cpu.stats.median, fx.handoff_cross_cpu.stats.median / tsc.hz * 1e6,
                                    pct(fx.handoff_cross_cpu), fx.wake_waiter.stats.median));
    notes.push_back(fmt::format("signal delivery to self (tgkill -> handler -> sigreturn) {:.0f} cycles ({})",
                                sig.self_signal.stats.median, pct(sig.self_signal)));
    notes.push_back(fmt::format("timer signal round trip (periodic POSIX timer, {:.0f} us, SIGALRM to a spinning thread: "
                                "interrupt + delivery + handler + sigreturn) {:.0f} cycles = {:.2f} us ({}): {:.0f} "
                                "before the handler's first instruction, {:.0f} after it",
                                sig.period_us, sig.timer_round_trip.stats.median,
                                sig.timer_round_trip.stats.median / tsc.hz * 1e6, pct(sig.timer_round_trip),
                                sig.timer_to_handler.stats.median, sig.handler_to_thread.stats.median));
    notes.push_back(fmt::format("POSIX timer (SIGEV_SIGNAL) expiry -> handler entry {:.0f} cycles = {:.2f} us ({})",
                                sig.timer_latency.stats.median, sig.timer_latency.stats.median / tsc.hz * 1e6,
                                pct(sig.timer_latency)));
    for (auto& n : cipher_unnamed_notes(ciphers)) notes.push_back(n);
    // [flush]: the user-space stand-in for non-coherent DMA sync that rx_flood (kdsim validate's
    // flush twins) charges: flushing lines another writer just dirtied, then reading them back.
    if (flush.points.size() >= 2) {
        const std::string src = ctx.measured_prefix() + ": " + fl + " of a just-written buffer + MFENCE, and the re-read " +
                                "of its lines from memory, least-squares fit over " + std::to_string(flush.points.front().size) +
                                ".." + std::to_string(flush.points.back().size) + " B";
        t += "\n# [flush]: user-space stand-in for non-coherent DMA sync (rx_flood, kdsim validate)\n[flush]\n";
        // split: a model with a memory hierarchy takes the re-read from it and only the flush from here
        t += fmt::format("per_call = {{ value = {}, unit = \"cycles\", source = \"{} (intercept of the flush)\" }}\n",
                         int_value(std::max(0.0, flush.dirty_fit.intercept)), toml_escape(src));
        t += fmt::format("reread_per_call = {{ value = {}, unit = \"cycles\", source = \"{} (intercept of the re-read)\" }}\n",
                         int_value(std::max(0.0, flush.reread_fit.intercept)), toml_escape(src));
        t += fmt::format("dirty_line = {{ value = {:.3f}, unit = \"cycles\", source = \"{} (slope of the flush)\" }}\n",
                         std::max(0.0, flush.dirty_fit.slope), toml_escape(src));
        t += fmt::format("reread_line = {{ value = {:.3f}, unit = \"cycles\", source = \"{} (slope of the re-read)\" }}\n",
                         std::max(0.0, flush.reread_fit.slope), toml_escape(src));
    }
    std::string memory_summary; // the [memory] tables, for the summary on stdout
    const std::size_t memory_at = t.size();
    std::vector<std::string> round_tables; // per round: its own [memory] tables ("" when inconsistent)
    {
        std::string problem;
        std::string mt = hier.levels.empty() ? std::string()
                                             : memory_tables(hier, mem_rounds, tsc.hz, chase_line, ctx.measured_prefix(), problem);
        if (mt.empty())
            notes.push_back("no [memory] tables: " + (hier.levels.empty() ? std::string("neither sysfs nor CPUID lists a cache level")
                                                                         : problem));
        t += mt;
        memory_summary = mt;
        if (o.round_profiles && !mt.empty())
            for (std::size_t k = 0; k < mem_rounds.size(); ++k) {
                std::string p;
                round_tables.push_back(memory_tables(hier, std::vector<MemoryRound>{mem_rounds[k]}, tsc.hz, chase_line,
                                                     ctx.measured_prefix() + fmt::format(" (round {} of {} alone)", k + 1,
                                                                                         mem_rounds.size()),
                                                     p));
                if (round_tables.back().empty())
                    std::fprintf(stderr, "kdsim calibrate: round %zu's [memory] figures alone are inconsistent (%s): no "
                                         "profile for that round\n", k + 1, p.c_str());
            }
    }
    const std::size_t memory_len = memory_summary.size();
    t += "\n# Measured, not profile keys (kdsim's [dma] schema is fixed; no copy or signal section), TSC cycles;\n"
         "# medians of the samples, spread = IQR / median (docs/calibration.md):\n";
    for (auto& n : notes) t += "# measured: " + n + "\n";
    t += "# Masking verification (distinct OpenSSL code paths must differ in speed):\n";
    for (auto& v : verification) t += "#   " + v + "\n";

    // Check with the loader `kdsim check` uses before anything is written.
    fs::path tmp = fs::temp_directory_path() / fmt::format("kdsim-calibrate-{}.toml", static_cast<long>(getpid()));
    try {
        report::write_file_atomically(tmp, t);
        (void)scenario::load_profile(tmp);
        fs::remove(tmp);
    } catch (const scenario::InputError& e) {
        for (const auto& d : e.diagnostics) std::fprintf(stderr, "%s\n", d.str().c_str());
        std::fprintf(stderr, "kdsim calibrate: internal error: the assembled profile (kept at %s) does not load\n",
                     tmp.string().c_str());
        return 3;
    }
    try {
        report::write_file_atomically(out, t);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "kdsim calibrate: cannot write the profile: %s; nothing was written\n", e.what());
        return 2;
    }
    for (std::size_t k = 0; k < round_tables.size(); ++k) {
        if (round_tables[k].empty()) continue;
        const std::string rt = fmt::format("# Round {} of {} of the [memory] measurements alone (the profile {} has their "
                                           "medians); every other figure as there.\n",
                                           k + 1, round_tables.size(), out.filename().string()) +
                               t.substr(0, memory_at) + round_tables[k] + t.substr(memory_at + memory_len);
        const fs::path rp = round_profile_path(out, static_cast<int>(k + 1));
        try {
            report::write_file_atomically(tmp, rt);
            (void)scenario::load_profile(tmp);
            fs::remove(tmp);
            report::write_file_atomically(rp, rt);
        } catch (const scenario::InputError& e) {
            for (const auto& d : e.diagnostics) std::fprintf(stderr, "%s\n", d.str().c_str());
            std::fprintf(stderr, "kdsim calibrate: internal error: round %zu's profile (kept at %s) does not load\n", k + 1,
                         tmp.string().c_str());
            return 3;
        } catch (const std::exception& e) {
            std::fprintf(stderr, "kdsim calibrate: cannot write %s: %s\n", rp.string().c_str(), e.what());
            return 2;
        }
    }

    // ---- summary on stdout
    std::printf("kdsim calibrate: %s, TSC %.3f GHz, %s\n", cpu.model.c_str(), tsc.hz / 1e9, ctx.date.c_str());
    std::printf("%-48s %14s  %s\n", "figure", "value", "spread");
    for (auto& [k, f] : measured) {
        std::string sp;
        auto pos = f.source.find("spread ");
        if (pos != std::string::npos) sp = f.source.substr(pos + 7, f.source.find_first_of(";(", pos) - pos - 7);
        std::printf("%-48s %14s  %s%s\n", k.c_str(), (f.value + " " + (f.unit == "cycles/byte" ? "c/B" : f.unit)).c_str(),
                    sp.c_str(), f.source.find("NOISY") != std::string::npos ? "  NOISY" : "");
    }
    for (auto& c : ciphers) {
        if (!c.named) continue;
        const auto& b = c.run.points.back().cycles;
        const auto& f = c.run.points.front().cycles;
        std::printf("%-48s %14s  %.1f%%%s\n", fmt::format("cipher.{}.{}.cycles_per_byte", c.prim, c.impl).c_str(),
                    fmt::format("{:.4f} c/B", std::max(0.0, c.run.fit.slope)).c_str(), b.stats.spread * 100,
                    b.noisy || b.stats.spread > 0.05 ? "  NOISY" : "");
        std::printf("%-48s %14s  %.1f%%%s\n", fmt::format("cipher.{}.{}.cycles_per_call", c.prim, c.impl).c_str(),
                    fmt::format("{} cycles", int_value(c.run.fit.intercept)).c_str(), f.stats.spread * 100,
                    f.noisy || f.stats.spread > 0.05 ? "  NOISY" : "");
    }
    { // each [memory] figure as "memory: <table>.<key> = <value> <unit>"
        std::istringstream in(memory_summary);
        std::string line, table;
        while (std::getline(in, line)) {
            if (line.rfind("[memory", 0) == 0) table = line.substr(1, line.size() - 2);
            const auto v = line.find("{ value = "), u = line.find(", unit = \"");
            if (v == std::string::npos || u == std::string::npos) continue;
            const std::string unit = line.substr(u + 10, line.find('"', u + 10) - u - 10);
            std::string rounds; // "rounds a / b / c, range x%[, ROUNDS DISAGREE]"
            if (auto m = line.find("each on fresh regions: "); m != std::string::npos) {
                const auto e = line.find(" of the median", m);
                rounds = "  (rounds " + line.substr(m + 23, e - m - 23) + ")";
                if (line.find("ROUNDS DISAGREE") != std::string::npos) rounds += "  ROUNDS DISAGREE";
            }
            std::printf("memory: %s.%s = %s %s%s\n", table.c_str(), line.substr(0, line.find(' ')).c_str(),
                        line.substr(v + 10, u - v - 10).c_str(), unit.c_str(), rounds.c_str());
        }
    }
    for (auto& u : unavailable) std::printf("unavailable: %s\n", u.c_str());
    for (auto& n : notes) std::printf("measured: %s\n", n.c_str());
    std::printf("masking verified by speed: %zu pairs of distinct OpenSSL code paths compared at 64 KiB\n",
                verification.size());
    for (auto& v : verification) std::printf("  %s\n", v.c_str());
    std::printf("wrote %s: %d measured figures, %d copied from %s (not measurable from user space)%s\n",
                o.out.c_str(), n_measured, n_copied, base_name.c_str(),
                n_coherent ? fmt::format(", {} [dma] per-line figures 0 (coherent x86)", n_coherent).c_str() : "");
    return 0;
}

} // namespace kdsim::calibrate
