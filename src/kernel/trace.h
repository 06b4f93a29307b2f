// The run trace: what the kernel's own tracing would show of a simulated CPU (ftrace's
// irq_handler_entry/exit, softirq_entry/exit, sched_switch, plus each piece of work with its cost
// category), recorded as compact time slices in simulated picoseconds.
//
// Cost: with KDSIM_TRACE=0 (CMake option KDSIM_TRACE=OFF) every hook in the model is discarded at
// compile time (`if constexpr (TRACE_COMPILED)`); compiled in but not requested, a hook is one
// null-pointer test of Cpu::trace_. Recording appends 32-byte records to one growing vector; no
// allocation per record beyond the vector's amortised growth, strings are interned once.
// The JSON writer (Chrome Trace Event Format, opened by Perfetto) is system/trace_json.*.
#pragma once

#include "engine/time.h"

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#ifndef KDSIM_TRACE
#define KDSIM_TRACE 1
#endif

namespace kdsim::kernel {

inline constexpr bool TRACE_COMPILED = KDSIM_TRACE != 0;

// What a record is. Slices have begin < end (or == for instants); their nesting on one CPU is
// task > softirq > hardirq > nmi > simd bracket > idle/exec.
enum class TraceKind : std::uint8_t {
    TASK,        // a task ran: name = comm, arg = pid
    SOFTIRQ,     // a softirq activation (irq exit or local_bh_enable): arg = mask of vectors handled
    HARDIRQ,     // a hardirq activation: name = irq name, arg = vector
    NMI,         // an NMI activation: name = irq name, arg = vector
    BRACKET,     // a kernel-mode SIMD bracket (kernel_fpu_begin .. end): name = the begin function
    IDLE,        // the CPU idled
    EXEC,        // one exec (or the part of it before an interrupt): sub = cat | ctx kind << 5,
                 // name = comm in task context, arg = cycles
    SWITCH,      // instant: sched_switch, name = prev comm, arg = next comm's string id
    CLOBBER,     // instant: SIMD registers found overwritten, name = victim, arg = culprit << 32 | where
    TCP_PROBE,   // instant: tcp:tcp_probe as an ACK reaches a sender's socket (before tcp_ack runs):
                 // name = the flow's number (not a string), arg = snd_ssthresh << 32 | snd_cwnd,
                 // sub = icsk_ca_state (TCP_CA_STATE_NAMES)
};

// enum tcp_ca_state's names (include/net/tcp.h), by value.
inline constexpr const char* TCP_CA_STATE_NAMES[] = {"Open", "Disorder", "CWR", "Recovery", "Loss"};

struct TraceRecord {
    engine::Tick begin = 0;
    engine::Tick end = 0;
    std::uint64_t arg = 0;
    std::uint32_t name = 0;  // interned string id (0 = none)
    std::uint16_t track = 0; // the CPU's track (TraceRecorder::add_track)
    TraceKind kind = TraceKind::EXEC;
    std::uint8_t sub = 0;
};
static_assert(sizeof(TraceRecord) == 32);

// Which records a trace keeps (--trace-from/--trace-until, --trace-categories). A slice is kept
// whole when it overlaps [from, until); an instant when it lies in [from, until). `kinds` has a
// bit per TraceKind; an EXEC record is kept only if its cost category's bit is set in `exec_cats`.
struct TraceFilter {
    engine::Tick from = 0;
    engine::Tick until = engine::TICK_MAX;
    std::uint32_t kinds = ~0u;
    std::uint32_t exec_cats = ~0u;

    bool windowed() const { return from != 0 || until != engine::TICK_MAX; }
    bool keeps(const TraceRecord& r) const {
        if (!(kinds >> static_cast<unsigned>(r.kind) & 1)) return false;
        if (r.kind == TraceKind::EXEC && !(exec_cats >> (r.sub & 31u) & 1)) return false;
        return r.begin < until && (r.end > from || r.begin >= from);
    }
};

// Records the slices of every traced CPU of a run. Of the records `filter` keeps, at most `limit`
// are stored; later ones are counted as dropped (the trace then ends early, and says so).
class TraceRecorder {
public:
    struct Track {
        std::string process; // the machine's name
        int process_index;   // the machine's position in the scenario
        int cpu;
    };

    explicit TraceRecorder(std::size_t limit, TraceFilter filter = {});

    // A CPU's timeline; returns the id its records carry.
    std::uint16_t add_track(std::string process, int process_index, int cpu);
    // The id of `s` in the string table (the same id for equal strings; "" is 0).
    std::uint32_t intern(std::string_view s);
    // intern() for strings with static lifetime, cached by address.
    std::uint32_t intern_static(const char* s);

    void record(const TraceRecord& r) {
        if (!filter_.keeps(r)) return;
        if (records_.size() >= limit_) [[unlikely]] {
            if (dropped_++ == 0) first_dropped_at_ = r.begin;
            return;
        }
        records_.push_back(r);
    }

    const std::vector<TraceRecord>& records() const { return records_; }
    const std::vector<std::string>& strings() const { return strings_; }
    const std::vector<Track>& tracks() const { return tracks_; }
    std::size_t limit() const { return limit_; }
    const TraceFilter& filter() const { return filter_; }
    std::uint64_t dropped() const { return dropped_; }
    // Start time of the first record that did not fit (meaningful when dropped() > 0).
    engine::Tick first_dropped_at() const { return first_dropped_at_; }

private:
    std::size_t limit_;
    TraceFilter filter_;
    std::vector<TraceRecord> records_;
    std::vector<std::string> strings_{""};
    std::unordered_map<std::string, std::uint32_t> ids_;
    std::unordered_map<const char*, std::uint32_t> static_ids_;
    std::vector<Track> tracks_;
    std::uint64_t dropped_ = 0;
    engine::Tick first_dropped_at_ = 0;
};

} // namespace kdsim::kernel
