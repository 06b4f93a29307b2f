// trace-cmd report text output of the run trace (see trace_ftrace.h).
#include "system/trace_ftrace.h"

#include "kernel/cpu.h"
#include "kernel/types.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>
#include <tuple>
#include <vector>

namespace kdsim::system {

namespace {

using kernel::TraceKind;
using kernel::TraceRecord;

enum Phase : std::uint8_t { END = 0, INSTANT = 1, BEGIN = 2 };

// One line to print: an edge of record `rec` (or the record itself, for instants).
struct Line {
    engine::Tick t;
    std::uint16_t track;
    Phase phase;
    std::int64_t order; // among lines of one CPU at one time: ends innermost first, begins outermost first
    std::uint8_t sub;   // a softirq vector
    std::uint32_t rec;
};

// The task that ran on a CPU over [begin, end), from its TASK slices.
struct Run {
    engine::Tick begin, end;
    std::uint32_t name;
    std::uint64_t pid;
};

std::string seconds(engine::Tick ps) {
    return fmt::format("{}.{:09}", ps / engine::PS_PER_S, ps % engine::PS_PER_S / 1000);
}

} // namespace

void write_trace_ftrace(const kernel::TraceRecorder& tr, const TraceInfo& info,
                        const std::function<void(std::string_view)>& out) {
    const auto& recs = tr.records();
    const auto& tracks = tr.tracks();
    const auto& str = tr.strings();

    const std::vector<std::uint32_t> order = nesting_order(tr); // the outer slice first

    std::vector<std::vector<Run>> runs(tracks.size());
    std::vector<Line> lines;
    lines.reserve(recs.size() * 2);
    for (std::size_t pos = 0; pos < order.size(); ++pos) {
        const std::uint32_t i = order[pos];
        const TraceRecord& r = recs[i];
        const auto o = static_cast<std::int64_t>(pos);
        switch (r.kind) {
        case TraceKind::TASK: runs[r.track].push_back(Run{r.begin, r.end, r.name, r.arg}); break;
        case TraceKind::SWITCH:
        case TraceKind::CLOBBER:
        case TraceKind::TCP_PROBE: lines.push_back(Line{r.begin, r.track, INSTANT, o, 0, i}); break;
        case TraceKind::SOFTIRQ:
            for (unsigned v = 0; v < kernel::NR_SOFTIRQS; ++v)
                if (r.arg >> v & 1) {
                    lines.push_back(Line{r.begin, r.track, BEGIN, o, static_cast<std::uint8_t>(v), i});
                    lines.push_back(Line{r.end, r.track, END, -o, static_cast<std::uint8_t>(kernel::NR_SOFTIRQS - v), i});
                }
            break;
        case TraceKind::NMI: lines.push_back(Line{r.end, r.track, END, -o, 0, i}); break;
        case TraceKind::EXEC: lines.push_back(Line{r.begin, r.track, BEGIN, o, 0, i}); break;
        default:
            lines.push_back(Line{r.begin, r.track, BEGIN, o, 0, i});
            lines.push_back(Line{r.end, r.track, END, -o, 0, i});
        }
    }
    std::sort(lines.begin(), lines.end(), [](const Line& a, const Line& b) {
        return std::tuple(a.t, a.track, a.phase, a.order, a.sub) < std::tuple(b.t, b.track, b.phase, b.order, b.sub);
    });

    // The task on `track` at time t: for a line that begins something, the one running from t on;
    // for one that ends something, the one that ran up to t.
    auto running = [&](std::uint16_t track, engine::Tick t, bool ending) -> const Run* {
        const auto& rs = runs[track];
        auto it = std::upper_bound(rs.begin(), rs.end(), t, [&](engine::Tick x, const Run& r) {
            return ending ? x <= r.begin : x < r.begin;
        });
        if (it == rs.begin()) return nullptr;
        --it;
        return (ending ? t <= it->end : t < it->end) ? &*it : nullptr;
    };
    auto pid_at = [&](std::uint16_t track, engine::Tick t, bool ending, std::uint32_t name) -> std::uint64_t {
        const Run* r = running(track, t, ending);
        return r && r->name == name ? r->pid : 0;
    };

    std::set<int> machines;
    int cpus = 0;
    for (const auto& k : tracks) {
        machines.insert(k.process_index);
        cpus = std::max(cpus, k.cpu + 1);
    }
    const bool several = machines.size() > 1;

    std::string b;
    b.reserve(1u << 21);
    b += fmt::format("# kdsim run trace of {}, seed {}, in simulated time ('trace-cmd report -t' format)\n",
                     info.scenario, info.seed);
    b += "# kdsim_exec, simd_begin, simd_end and simd_clobber are kdsim's own events\n";
    const kernel::TraceFilter& f = tr.filter();
    if (f.windowed())
        b += fmt::format("# window: slices overlapping [{}, {}) s\n", seconds(f.from),
                         f.until == engine::TICK_MAX ? std::string("end") : seconds(f.until));
    if (!info.cpus.empty()) b += fmt::format("# cpus: {}\n", info.cpus);
    if (!info.categories.empty()) b += fmt::format("# categories: {}\n", info.categories);
    b += fmt::format("cpus={}\n", cpus);

    for (const Line& l : lines) {
        const TraceRecord& r = recs[l.rec];
        const auto& track = tracks[l.track];
        const bool ending = l.phase == END;
        const Run* task = running(l.track, l.t, ending || r.kind == TraceKind::SWITCH); // a switch shows prev
        if (several) b += fmt::format("{}: ", track.process);
        const std::string comm = task ? str[task->name] : std::string("<idle>");
        b += fmt::format("{:>16}-{:<5} [{:03}] {}: ", comm, task ? task->pid : 0, track.cpu, seconds(l.t));
        switch (r.kind) {
        case TraceKind::HARDIRQ:
            b += ending ? fmt::format("irq_handler_exit: irq={} ret=handled\n", r.arg)
                        : fmt::format("irq_handler_entry: irq={} name={}\n", r.arg, str[r.name]);
            break;
        case TraceKind::SOFTIRQ: {
            const unsigned v = ending ? kernel::NR_SOFTIRQS - l.sub : l.sub;
            b += fmt::format("{}: vec={} [action={}]\n", ending ? "softirq_exit" : "softirq_entry", v,
                             kernel::softirq_name(v));
            break;
        }
        case TraceKind::NMI:
            b += fmt::format("nmi_handler: handler={} delta_ns={} handled=1\n", str[r.name], (r.end - r.begin) / 1000);
            break;
        case TraceKind::IDLE:
            b += fmt::format("cpu_idle: state={} cpu_id={}\n", ending ? 4294967295u : 1u, track.cpu);
            break;
        case TraceKind::BRACKET: {
            std::string func = str[r.name];
            if (ending)
                if (auto at = func.rfind("_begin"); at != std::string::npos) func.replace(at, 6, "_end");
            b += fmt::format("{}: func={}\n", ending ? "simd_end" : "simd_begin", func);
            break;
        }
        case TraceKind::EXEC:
            b += fmt::format("kdsim_exec: cat={} ctx={} cycles={} dur_ns={}\n",
                             kernel::to_string(static_cast<kernel::Cat>(r.sub & 31u)),
                             kernel::to_string(static_cast<kernel::CtxKind>(r.sub >> 5)), r.arg,
                             (r.end - r.begin) / 1000);
            break;
        case TraceKind::SWITCH: {
            const auto next = static_cast<std::uint32_t>(r.arg);
            b += fmt::format("sched_switch: prev_comm={} prev_pid={} ==> next_comm={} next_pid={}\n", str[r.name],
                             pid_at(l.track, l.t, true, r.name), str[next], pid_at(l.track, l.t, false, next));
            break;
        }
        case TraceKind::CLOBBER:
            b += fmt::format("simd_clobber: victim={} culprit={} where={}\n", str[r.name], str[r.arg >> 32],
                             str[r.arg & 0xffffffffu]);
            break;
        case TraceKind::TCP_PROBE:
            b += fmt::format("tcp_probe: flow={} snd_cwnd={} ssthresh={} ca_state={}\n", r.name, r.arg & 0xffffffffu,
                             r.arg >> 32, kernel::TCP_CA_STATE_NAMES[r.sub]);
            break;
        case TraceKind::TASK: break;
        }
        if (b.size() >= (1u << 20)) {
            out(b);
            b.clear();
        }
    }
    if (tr.dropped())
        b += fmt::format("# trace truncated at {} s: the record limit ({}) was reached and {} later records were "
                         "dropped\n",
                         seconds(tr.first_dropped_at()), tr.limit(), tr.dropped());
    out(b);
}

} // namespace kdsim::system
