// kdsim_peers_bench: the same three workloads in kdsim's engine, a bare priority-queue floor,
// ns-3 (all five schedulers) and SimGrid (s4u actors; kernel timers), interleaved repetitions in
// one process, medians of events/s, kdsim/peer ratios and a trajectory check.
//
//   taskset -c 1 kdsim_peers_bench [--reps=5] [--workloads=hold1e3,hold1e5,queue,pingpong]
//                                  [--cases=kdsim-cb,ns3-pq,...]
//   kdsim_peers_bench --one=CASE --workload=hold|queue|pingpong --n=N --k=K
//       runs one case once and prints its events, trajectory and peak RSS (for callgrind:
//       bench/peers_callgrind.sh differences two K)
//   kdsim_peers_bench --list
//
// Method and results: docs/performance.md, section "Against ns-3 and SimGrid".

#include "common.h"

#include <sched.h>
#include <sys/resource.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <string_view>
#include <vector>

using namespace peers;

namespace {

struct Config {
    std::string name;
    Spec spec;
};

const std::vector<Config>& standard_configs() {
    static const std::vector<Config> c = {
        {"hold1e3", {Workload::HOLD, 1'000, 1'000}},
        {"hold1e5", {Workload::HOLD, 100'000, 10}},
        {"queue", {Workload::QUEUE, 100, 2'000}},
        {"pingpong", {Workload::PINGPONG, 2, 200'000}},
    };
    return c;
}

const char* workload_name(Workload w) {
    switch (w) {
    case Workload::HOLD: return "hold";
    case Workload::QUEUE: return "queue";
    case Workload::PINGPONG: return "pingpong";
    }
    return "?";
}

struct Sample {
    double rate = 0;     // model events per wall second, first to last event
    double cpu_frac = 0; // process CPU time / wall time over the same span
    double setup_ms = 0; // from the case's start to its first model event
    std::uint64_t events = 0, final_ns = 0, checksum_ns = 0;
};

Sample run_once(const Case& c, const Spec& s) {
    const std::uint64_t expected = events_of(s);
    g_meter.reset(expected);
    const Stamp start = stamp();
    const Outcome o = c.run(s);
    const Meter& m = g_meter;
    Sample x;
    x.events = m.count;
    x.final_ns = o.final_ns;
    x.checksum_ns = static_cast<std::uint64_t>(m.sum / o.sum_div);
    x.setup_ms = (m.first.wall - start.wall) * 1e3;
    const double wall = m.last.wall - m.first.wall;
    if (m.count == expected && expected > 1 && wall > 0) {
        x.rate = static_cast<double>(expected - 1) / wall;
        x.cpu_frac = (m.last.cpu - m.first.cpu) / wall;
    }
    return x;
}

double median(std::vector<double> v) {
    if (v.empty()) return 0;
    std::sort(v.begin(), v.end());
    const std::size_t n = v.size();
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

std::vector<std::string> split(std::string_view s) {
    std::vector<std::string> out;
    while (!s.empty()) {
        auto p = s.find(',');
        out.emplace_back(s.substr(0, p));
        if (p == std::string_view::npos) break;
        s.remove_prefix(p + 1);
    }
    return out;
}

bool contains(const std::vector<std::string>& v, const std::string& x) {
    return v.empty() || std::find(v.begin(), v.end(), x) != v.end();
}

std::string affinity() {
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof set, &set) != 0) return "?";
    std::string s;
    for (int i = 0; i < CPU_SETSIZE; ++i)
        if (CPU_ISSET(i, &set)) {
            if (!s.empty()) s += ',';
            s += std::to_string(i);
        }
    return s;
}

long max_rss_kib() {
    rusage ru{};
    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_maxrss;
}

int usage(const char* argv0) {
    std::fprintf(stderr,
                 "usage: %s [--reps=R] [--workloads=hold1e3,hold1e5,queue,pingpong] [--cases=a,b,...]\n"
                 "       %s --one=CASE --workload=hold|queue|pingpong --n=N --k=K\n"
                 "       %s --list\n",
                 argv0, argv0, argv0);
    return 2;
}

struct Stats {
    std::vector<Sample> samples;
};


} // namespace

int main(int argc, char** argv) {
    std::vector<Case> cases;
    add_kdsim_cases(cases);
    add_floor_cases(cases);
    add_ns3_cases(cases);
    add_simgrid_cases(cases);
    add_experiment_cases(cases);

    int reps = 5;
    std::vector<std::string> want_workloads, want_cases;
    std::string one, one_workload;
    std::uint64_t one_n = 0, one_k = 0;
    for (int i = 1; i < argc; ++i) {
        std::string_view a = argv[i];
        auto val = [&](std::string_view key) -> const char* {
            return a.substr(0, key.size()) == key ? argv[i] + key.size() : nullptr;
        };
        if (const char* v = val("--reps=")) reps = std::atoi(v);
        else if (const char* v = val("--workloads=")) want_workloads = split(v);
        else if (const char* v = val("--cases=")) want_cases = split(v);
        else if (const char* v = val("--one=")) one = v;
        else if (const char* v = val("--workload=")) one_workload = v;
        else if (const char* v = val("--n=")) one_n = std::strtoull(v, nullptr, 10);
        else if (const char* v = val("--k=")) one_k = std::strtoull(v, nullptr, 10);
        else if (a == "--list") {
            for (const auto& c : cases) std::printf("%-15s %-8s %s\n", c.name.c_str(), c.group.c_str(), c.label.c_str());
            return 0;
        } else return usage(argv[0]);
    }
    if (const char* l = std::getenv("NS_LOG"); l && *l)
        std::fprintf(stderr, "warning: NS_LOG is set (%s): ns-3 logging is on, its figures are not comparable\n", l);

    // ---- one case, once (callgrind, RSS) ----
    if (!one.empty()) {
        auto it = std::find_if(cases.begin(), cases.end(), [&](const Case& c) { return c.name == one; });
        if (it == cases.end()) {
            std::fprintf(stderr, "unknown case '%s' (see --list)\n", one.c_str());
            return 2;
        }
        Spec s{};
        if (one_workload == "hold") s = {Workload::HOLD, one_n ? one_n : 1000, one_k ? one_k : 1000};
        else if (one_workload == "queue") s = {Workload::QUEUE, one_n ? one_n : 100, one_k ? one_k : 2000};
        else if (one_workload == "pingpong") s = {Workload::PINGPONG, 2, one_k ? one_k : 200'000};
        else return usage(argv[0]);
        if (!it->supports(s)) {
            std::fprintf(stderr, "case %s does not run this workload/size\n", one.c_str());
            return 2;
        }
        Sample x = run_once(*it, s);
        std::printf("case=%s workload=%s n=%llu k=%llu events=%llu final_ns=%llu checksum_ns=%llu "
                    "setup_ms=%.1f Mev_per_s=%.3f max_rss_kib=%ld\n",
                    one.c_str(), workload_name(s.w), (unsigned long long)s.n, (unsigned long long)s.k,
                    (unsigned long long)x.events, (unsigned long long)x.final_ns,
                    (unsigned long long)x.checksum_ns, x.setup_ms, x.rate / 1e6, max_rss_kib());
        return x.events == events_of(s) ? 0 : 1;
    }

    // ---- the interleaved benchmark ----
    std::vector<Config> configs;
    for (const auto& c : standard_configs())
        if (contains(want_workloads, c.name)) configs.push_back(c);
    std::vector<const Case*> chosen;
    for (const auto& c : cases)
        if (contains(want_cases, c.name)) chosen.push_back(&c);
    if (configs.empty() || chosen.empty() || reps < 1) return usage(argv[0]);

    std::printf("kdsim_peers_bench: %d interleaved repetitions; CPU affinity {%s}%s\n", reps, affinity().c_str(),
                affinity().find(',') != std::string::npos ? "  (not pinned: run under taskset -c 1)" : "");
    std::fflush(stdout);

    std::map<std::pair<std::string, std::string>, Stats> stats; // (config, case)
    for (int r = 0; r < reps; ++r) {
        for (const auto& cfg : configs) {
            // Rotate the order of the cases each repetition so that no case always follows the same one.
            for (std::size_t j = 0; j < chosen.size(); ++j) {
                const Case& c = *chosen[(j + r) % chosen.size()];
                if (!c.supports(cfg.spec)) continue;
                Sample x = run_once(c, cfg.spec);
                stats[{cfg.name, c.name}].samples.push_back(x);
                std::fprintf(stderr, "rep %d %-8s %-15s %8.3f M ev/s  setup %8.1f ms\n", r + 1, cfg.name.c_str(),
                             c.name.c_str(), x.rate / 1e6, x.setup_ms);
            }
        }
    }

    // ---- the table ----
    // Medians per (config, case): wall rate (the headline) and CPU-time rate (events per second
    // of this process's CPU time: what the case costs when another process shares the core).
    int notes = 0;
    std::map<std::pair<std::string, std::string>, double> med_wall, med_cpu;
    for (const auto& [key, st] : stats) {
        std::vector<double> w, c;
        for (const auto& x : st.samples) {
            w.push_back(x.rate);
            c.push_back(x.cpu_frac > 0 ? x.rate / x.cpu_frac : 0);
        }
        med_wall[key] = median(w);
        med_cpu[key] = median(c);
    }
    auto ratio = [](char* b, std::size_t n, double num, double den) {
        if (num > 0 && den > 0) std::snprintf(b, n, "%.2fx", num / den);
        else std::snprintf(b, n, "-");
    };
    for (const auto& cfg : configs) {
        const Spec& s = cfg.spec;
        std::printf("\n== %s: %s N=%llu K=%llu, %llu model events ==\n", cfg.name.c_str(), workload_name(s.w),
                    (unsigned long long)s.n, (unsigned long long)s.k, (unsigned long long)events_of(s));
        std::printf("%-15s %8s %15s %8s %5s %9s %8s %8s %8s %12s %20s  %s\n", "case", "wall", "[min-max]", "cpu",
                    "cpu%", "setup ms", "cb/case", "cb/case", "co/case", "final ns", "sum of times ns",
                    "trajectory");
        std::printf("%-15s %8s %15s %8s %5s %9s %8s %8s %8s\n", "", "M ev/s", "M ev/s", "M ev/s", "", "", "wall",
                    "cpu", "cpu");
        const Sample* ref = nullptr;
        std::string ref_name;
        for (const Case* c : chosen)
            if (auto it = stats.find({cfg.name, c->name}); it != stats.end() && !ref) {
                ref = &it->second.samples.front();
                ref_name = c->name;
            }
        auto get = [&](auto& m, const char* name) {
            auto it = m.find({cfg.name, name});
            return it == m.end() ? 0.0 : it->second;
        };
        const double cb_w = get(med_wall, "kdsim-cb"), cb_c = get(med_cpu, "kdsim-cb"),
                     co_c = get(med_cpu, "kdsim-coro");
        for (const Case* c : chosen) {
            auto it = stats.find({cfg.name, c->name});
            if (it == stats.end()) continue;
            const auto& xs = it->second.samples;
            std::vector<double> rates, cpu, setup;
            for (const auto& x : xs) {
                rates.push_back(x.rate);
                cpu.push_back(x.cpu_frac);
                setup.push_back(x.setup_ms);
            }
            const double mw = med_wall[{cfg.name, c->name}], mc = med_cpu[{cfg.name, c->name}];
            char range[64], r_w[32], r_c[32], r_co[32];
            std::snprintf(range, sizeof range, "[%.3g-%.3g]", *std::min_element(rates.begin(), rates.end()) / 1e6,
                          *std::max_element(rates.begin(), rates.end()) / 1e6);
            ratio(r_w, sizeof r_w, cb_w, mw);
            ratio(r_c, sizeof r_c, cb_c, mc);
            ratio(r_co, sizeof r_co, co_c, mc);
            // Trajectory: identical across repetitions and equal to the reference case's.
            std::string traj = "ok";
            for (const auto& x : xs) {
                if (x.events != ref->events || x.final_ns != ref->final_ns || x.checksum_ns != ref->checksum_ns) {
                    char b[200];
                    const double rel =
                        (static_cast<double>(x.checksum_ns) - static_cast<double>(ref->checksum_ns)) /
                        static_cast<double>(ref->checksum_ns);
                    std::snprintf(b, sizeof b, "NOTE: vs %s: final %+lld ns, sum %+.2g rel.%s", ref_name.c_str(),
                                  (long long)x.final_ns - (long long)ref->final_ns, rel,
                                  x.events != ref->events ? ", EVENT COUNT DIFFERS" : "");
                    traj = b;
                    ++notes;
                    break;
                }
            }
            const Sample& x0 = xs.front();
            std::printf("%-15s %8.3f %15s %8.3f %4.0f%% %9.1f %8s %8s %8s %12llu %20llu  %s\n", c->name.c_str(),
                        mw / 1e6, range, mc / 1e6, 100 * median(cpu), median(setup), r_w, r_c, r_co,
                        (unsigned long long)x0.final_ns, (unsigned long long)x0.checksum_ns, traj.c_str());
        }
    }
    std::printf(
        "\nwall: median over repetitions of model events per wall second, first to last model event (set-up\n"
        "excluded, its median shown apart); [min-max] of the same. cpu: median of model events per second of\n"
        "this process's CPU time over the same span. cpu%%: CPU time / wall time (below ~95%%: the process was\n"
        "descheduled, the wall figure is pessimistic). cb/case, co/case: kdsim-cb (callbacks) or kdsim-coro\n"
        "(coroutines) median / this case's median. trajectory: events, final clock and sum of event times in\n"
        "ns, every repetition, against the first case listed (%s).\n",
        chosen.front()->name.c_str());

    // ---- the goals ----
    auto best_of = [&](auto& m, const std::string& cfg, const std::string& prefix, std::string& who) {
        double best = 0;
        for (const Case* c : chosen)
            if (c->name.rfind(prefix, 0) == 0 && m.count({cfg, c->name}) && m[{cfg, c->name}] > best) {
                best = m[{cfg, c->name}];
                who = c->name;
            }
        return best;
    };
    std::printf("\nGoals (issue 6), from the medians above (wall | cpu):\n");
    for (const char* cfg : {"hold1e3", "hold1e5"}) {
        for (const char* style : {"kdsim-cb", "kdsim-coro"}) {
            if (!med_wall.count({cfg, style})) continue;
            const double kw = med_wall[{cfg, style}], kc = med_cpu[{cfg, style}];
            std::string ww, wc;
            const double bw = best_of(med_wall, cfg, "ns3-", ww), bc = best_of(med_cpu, cfg, "ns3-", wc);
            if (bw > 0)
                std::printf("  %s %-10s / fastest ns-3 = %5.2fx (%s) | %5.2fx (%s)   goal >= 3x: %s | %s\n", cfg,
                            style, kw / bw, ww.c_str(), kc / bc, wc.c_str(), kw / bw >= 3 ? "met" : "MISSED",
                            kc / bc >= 3 ? "met" : "MISSED");
            if (med_wall.count({cfg, "sg-actors"})) {
                const double sw = med_wall[{cfg, "sg-actors"}], sc = med_cpu[{cfg, "sg-actors"}];
                std::printf("  %s %-10s / SimGrid actors = %5.1fx | %5.1fx   goal >= 10x: %s | %s\n", cfg, style,
                            kw / sw, kc / sc, kw / sw >= 10 ? "met" : "MISSED", kc / sc >= 10 ? "met" : "MISSED");
            }
            if (std::string(cfg) == "hold1e3")
                std::printf("  %s %-10s = %.1f | %.1f M ev/s   goal >= 20 M ev/s: %s | %s\n", cfg, style, kw / 1e6,
                            kc / 1e6, kw >= 20e6 ? "met" : "MISSED", kc >= 20e6 ? "met" : "MISSED");
        }
    }
    if (notes) std::printf("\n%d case(s) with a NOTE on the trajectory check (see above).\n", notes);
    return 0;
}
