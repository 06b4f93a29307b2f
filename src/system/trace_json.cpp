// Chrome Trace Event Format output of the run trace (see trace_json.h).
#include "system/trace_json.h"

#include "kernel/cpu.h"
#include "kernel/types.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <numeric>
#include <set>
#include <vector>

namespace kdsim::system {

namespace {

using kernel::TraceKind;
using kernel::TraceRecord;

// A JSON string literal.
std::string quoted(std::string_view s) {
    std::string q = "\"";
    for (char c : s) {
        switch (c) {
        case '"': q += "\\\""; break;
        case '\\': q += "\\\\"; break;
        case '\n': q += "\\n"; break;
        case '\t': q += "\\t"; break;
        default:
            if (static_cast<unsigned char>(c) < 0x20) q += fmt::format("\\u{:04x}", static_cast<unsigned>(c));
            else q += c;
        }
    }
    return q + '"';
}

void number(std::string& b, std::uint64_t v) {
    char d[24];
    b.append(d, std::to_chars(d, d + sizeof d, v).ptr);
}

// Picoseconds as microseconds with all six decimals, from integer arithmetic.
void micros(std::string& b, engine::Tick ps) {
    number(b, ps / engine::PS_PER_US);
    char f[7] = {'.', '0', '0', '0', '0', '0', '0'};
    engine::Tick frac = ps % engine::PS_PER_US;
    for (int i = 6; i > 0; --i, frac /= 10) f[i] = static_cast<char>('0' + frac % 10);
    b.append(f, sizeof f);
}

std::string softirq_vectors(std::uint64_t mask, char sep) {
    std::string s;
    for (unsigned nr = 0; nr < kernel::NR_SOFTIRQS; ++nr)
        if (mask >> nr & 1) {
            if (!s.empty()) s += sep;
            s += kernel::softirq_name(nr);
        }
    return s;
}

} // namespace

std::vector<std::uint32_t> nesting_order(const kernel::TraceRecorder& tr) {
    const auto& recs = tr.records();
    std::vector<std::uint32_t> order(recs.size());
    std::iota(order.begin(), order.end(), 0u);
    std::stable_sort(order.begin(), order.end(), [&](std::uint32_t x, std::uint32_t y) {
        const TraceRecord& a = recs[x];
        const TraceRecord& c = recs[y];
        if (a.track != c.track) return a.track < c.track;
        if (a.begin != c.begin) return a.begin < c.begin;
        if (a.end != c.end) return a.end > c.end;
        return a.kind < c.kind;
    });
    return order;
}

void write_trace_json(const kernel::TraceRecorder& tr, const TraceInfo& info,
                      const std::function<void(std::string_view)>& out) {
    const auto& recs = tr.records();
    const auto& tracks = tr.tracks();
    auto pid_of = [&](std::uint16_t t) { return tracks[t].process_index + 1; };
    auto tid_of = [&](std::uint16_t t) { return pid_of(t) * 1000 + tracks[t].cpu; };

    // Everything a record repeats, formatted once: quoted strings, per-CPU event heads, and the
    // name/cat/args head of an exec slice per (category, context).
    std::vector<std::string> str;
    str.reserve(tr.strings().size());
    for (const std::string& x : tr.strings()) str.push_back(quoted(x));
    std::vector<std::string> slice_head, instant_head;
    for (std::uint16_t t = 0; t < tracks.size(); ++t) {
        slice_head.push_back(fmt::format(R"({{"ph":"X","pid":{},"tid":{},"ts":)", pid_of(t), tid_of(t)));
        instant_head.push_back(fmt::format(R"({{"ph":"i","s":"t","pid":{},"tid":{},"ts":)", pid_of(t), tid_of(t)));
    }
    std::vector<std::string> exec_head(256);
    for (unsigned c = 0; c < kernel::CATS; ++c)
        for (unsigned k = 0; k < kernel::CTX_KINDS; ++k)
            exec_head[c | k << 5] = fmt::format(R"(,"name":"{}","cat":"{}","args":{{"cycles":)",
                                                kernel::to_string(static_cast<kernel::Cat>(c)),
                                                kernel::to_string(static_cast<kernel::CtxKind>(k)));

    std::string b;
    b.reserve(1u << 21);
    bool first = true;
    auto next_event = [&] {
        if (!first) b += ",\n";
        first = false;
        if (b.size() >= (1u << 20)) {
            out(b);
            b.clear();
        }
    };

    b += "{\"traceEvents\":[\n";
    std::set<int> named;
    for (std::uint16_t t = 0; t < tracks.size(); ++t) {
        const int pid = pid_of(t);
        if (named.insert(pid).second) {
            next_event();
            b += fmt::format(R"({{"ph":"M","pid":{},"tid":{},"name":"process_name","args":{{"name":{}}}}})", pid,
                             tid_of(t), quoted(tracks[t].process));
            next_event();
            b += fmt::format(R"({{"ph":"M","pid":{},"tid":{},"name":"process_sort_index","args":{{"sort_index":{}}}}})",
                             pid, tid_of(t), pid);
        }
        next_event();
        b += fmt::format(R"({{"ph":"M","pid":{},"tid":{},"name":"thread_name","args":{{"name":"cpu{}"}}}})", pid,
                         tid_of(t), tracks[t].cpu);
        next_event();
        b += fmt::format(R"({{"ph":"M","pid":{},"tid":{},"name":"thread_sort_index","args":{{"sort_index":{}}}}})",
                         pid, tid_of(t), tracks[t].cpu);
    }

    for (std::uint32_t i : nesting_order(tr)) {
        const TraceRecord& r = recs[i];
        next_event();
        const bool instant = r.kind == TraceKind::SWITCH || r.kind == TraceKind::CLOBBER || r.kind == TraceKind::TCP_PROBE;
        b += instant ? instant_head[r.track] : slice_head[r.track];
        micros(b, r.begin);
        if (!instant) {
            b += ",\"dur\":";
            micros(b, r.end - r.begin);
        }
        switch (r.kind) {
        case TraceKind::EXEC:
            b += exec_head[r.sub];
            number(b, r.arg);
            if (r.name) {
                b += ",\"comm\":";
                b += str[r.name];
            }
            b += "}}";
            break;
        case TraceKind::TASK:
            b += ",\"name\":";
            b += str[r.name];
            b += R"(,"cat":"sched","args":{"pid":)";
            number(b, r.arg);
            b += "}}";
            break;
        case TraceKind::SOFTIRQ:
            b += ",\"name\":";
            b += quoted(r.arg ? "softirq " + softirq_vectors(r.arg, '+') : std::string("softirq"));
            b += R"(,"cat":"softirq","args":{"vec":)";
            b += quoted(softirq_vectors(r.arg, ','));
            b += "}}";
            break;
        case TraceKind::HARDIRQ:
        case TraceKind::NMI: {
            const bool nmi = r.kind == TraceKind::NMI;
            const std::string& name = tr.strings()[r.name];
            b += fmt::format(R"(,"name":{},"cat":"{}","args":{{"irq":{},"name":{}}}}})",
                             quoted(fmt::format("{} {}: {}", nmi ? "nmi" : "irq", r.arg, name)), nmi ? "nmi" : "irq",
                             r.arg, str[r.name]);
            break;
        }
        case TraceKind::BRACKET: {
            std::string name = tr.strings()[r.name]; // the begin function: the slice is the whole section
            if (auto at = name.find("_begin"); at != std::string::npos) name.insert(at + 6, "/end");
            b += ",\"name\":";
            b += quoted(name);
            b += R"(,"cat":"simd"})";
            break;
        }
        case TraceKind::IDLE: b += R"(,"name":"idle","cat":"sched"})"; break;
        case TraceKind::SWITCH:
            b += R"(,"name":"sched_switch","cat":"sched","args":{"prev_comm":)";
            b += str[r.name];
            b += ",\"next_comm\":";
            b += str[r.arg];
            b += "}}";
            break;
        case TraceKind::CLOBBER:
            b += R"(,"name":"simd clobber","cat":"simd","args":{"victim":)";
            b += str[r.name];
            b += ",\"culprit\":";
            b += str[r.arg >> 32];
            b += ",\"where\":";
            b += str[r.arg & 0xffffffffu];
            b += "}}";
            break;
        case TraceKind::TCP_PROBE:
            b += fmt::format(R"(,"name":"tcp_probe","cat":"tcp","args":{{"flow":{},"snd_cwnd":{},"ssthresh":{},"ca_state":"{}"}}}})",
                             r.name, r.arg & 0xffffffffu, r.arg >> 32, kernel::TCP_CA_STATE_NAMES[r.sub]);
            break;
        }
    }
    if (tr.dropped()) {
        // A mark on every CPU where the record limit cut the trace.
        for (std::uint16_t t = 0; t < tracks.size(); ++t) {
            next_event();
            b += instant_head[t];
            micros(b, tr.first_dropped_at());
            b += fmt::format(R"(,"name":"trace truncated","cat":"kdsim","args":{{"limit":{},"dropped":{}}}}})",
                             tr.limit(), tr.dropped());
        }
    }
    b += "\n],\n\"displayTimeUnit\":\"ns\",\n\"otherData\":{\"generator\":\"kdsim\",\"scenario\":";
    b += quoted(info.scenario);
    b += fmt::format(R"(,"seed":{},"time_unit":"simulated time","records":{},"record_limit":{},"dropped_records":{},"truncated":{})",
                     info.seed, recs.size(), tr.limit(), tr.dropped(), tr.dropped() ? "true" : "false");
    if (tr.dropped()) {
        b += ",\"truncated_at_us\":";
        micros(b, tr.first_dropped_at());
    }
    const kernel::TraceFilter& f = tr.filter();
    if (f.windowed()) {
        b += ",\"window_from_us\":";
        micros(b, f.from);
        if (f.until != engine::TICK_MAX) {
            b += ",\"window_until_us\":";
            micros(b, f.until);
        }
    }
    if (!info.cpus.empty()) b += ",\"cpus\":" + quoted(info.cpus);
    if (!info.categories.empty()) b += ",\"categories\":" + quoted(info.categories);
    b += "}}\n";
    out(b);
}

} // namespace kdsim::system
