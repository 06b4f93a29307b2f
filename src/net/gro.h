// Generic receive offload (net/core/gro.c dev_gro_receive / napi_gro_complete / napi_gro_flush,
// net/ipv4/af_inet.c inet_gro_receive, net/ipv4/tcp_offload.c tcp_gro_receive, net/core/gro.c
// skb_gro_receive). napi_gro_receive holds TCP data segments per flow; a segment of a held
// flow that continues it (contiguous sequence, no larger than the held skb's gso_size, the
// merged IP datagram under 64 KiB) is appended as a fragment. Anything else ends the held skb:
// a segment that does not continue it completes it (napi_gro_complete -> the stack) and is held
// itself; a segment shorter than gso_size is merged and then completes it; a pure ACK, a UDP
// datagram or a tunnel packet goes up at once ("normal"). At most MAX_GRO_SKBS skbs are held
// (the oldest is completed to make room). The holder flushes them at the end of the poll
// (napi_complete_done), those held since an earlier jiffy when the poll used its whole weight
// (__napi_poll with HZ >= 1000; all of them with a slower tick), or when gro_flush_timeout's
// timer fires.
// A GSO skb from virtio-net (GUEST_TSO4) goes in as its segments: it merges with a held skb of
// the same gso_size, and is held only when it is whole segments (tcp_gro_receive's gso checks).
// Simplified: one list of MAX_GRO_SKBS instead of GRO_HASH_BUCKETS lists of MAX_GRO_SKBS each
// (the same for up to 8 flows); no PSH/FIN flags on data segments (nothing flushes on them);
// gro_normal_list's batching of completed skbs (gro_normal_batch) is not modelled: each goes up
// when completed.
#pragma once

#include "engine/task.h"
#include "kernel/cpu.h"
#include "net/packet.h"

#include <array>
#include <cstdint>

namespace kdsim::net {

// [net] GRO figures, cycles.
struct GroCosts {
    engine::Cycles receive = 0;  // per IP packet: gro_list_prepare, inet_gro_receive, udp4_gro_receive's early flush
    engine::Cycles tcp = 0;      // per TCP segment (data or ACK): tcp4_gro_receive, tcp_gro_receive
    engine::Cycles merge = 0;    // per segment appended to a held skb: skb_gro_receive, the stolen head freed
    engine::Cycles complete = 0; // per completed skb of more than one segment: napi_gro_complete, tcp4_gro_complete
};

struct GroStats {
    std::uint64_t packets = 0;  // packets through napi_gro_receive
    std::uint64_t merged = 0;   // segments appended to a held skb
    std::uint64_t held = 0;     // segments that started a held skb
    std::uint64_t skbs_up = 0;  // held skbs completed and passed up (of one segment or more)
    std::uint64_t segs_up = 0;  // segments in those skbs
};

class Gro {
public:
    static constexpr std::size_t MAX_GRO_SKBS = 8;      // include/net/gro.h
    static constexpr std::uint32_t GRO_MAX_SIZE = 65536; // GRO_LEGACY_MAX_SIZE: IP datagram limit
    static constexpr std::size_t MAX_SEGS = 64;          // > 65536 / 536 (the smallest MSS held)
    // The stack's receive entry for an skb GRO passes up, in NET_RX: the protocol demux and up.
    using Up = engine::Task<> (*)(kernel::Cpu& cpu, void* ctx, const Packet& p);
    // netif_receive_skb's own work, which GRO charges before each `up` (`cycles` nullptr: none).
    // Charged here, not in a coroutine of the device's around `up`: one frame less per skb.
    struct UpCost {
        const engine::Cycles* cycles;
        kernel::Text text; // the kernel code it runs (NONE: no fetch)
    };

    Gro(const GroCosts& costs, Up up, void* ctx, UpCost up_cost = {nullptr, kernel::Text::NONE})
        : costs_(costs), up_(up), ctx_(ctx), up_cost_(up_cost) {}

    // Models: napi_gro_receive(), dev_gro_receive() (net/core/gro.c)
    engine::Task<> napi_gro_receive(kernel::Cpu& cpu, const Packet& p);
    // napi_gro_receive as two steps its caller awaits at once, in order: the protocols'
    // gro_receive cost, then dev_gro_receive's verdict (the kernel's gro_result_t, reduced):
    // HELD, the segment held at once (no coroutine); NORMAL, not for GRO (no TCP data), for the
    // caller to pass up as napi_gro_receive does, in its own frame (netif_receive_skb's UpCost,
    // then `up`); MERGED, the segment continues its flow's held skb and does not end it: the
    // caller awaits gro_merge, then calls skb_gro_receive (no coroutine); REST, the rest of the
    // path as `rest`, to await.
    struct Verdict {
        enum Kind : std::uint8_t { HELD, NORMAL, MERGED, REST } kind;
        engine::Task<> rest;
    };
    kernel::Cpu::ExecAwaiter gro_receive(kernel::Cpu& cpu, const Packet& p) {
        ++st_.packets;
        const bool tcp = p.kind == FrameKind::TCP_DATA || p.kind == FrameKind::TCP_ACK;
        return cpu.exec(costs_.receive + (tcp ? costs_.tcp : 0), kernel::Cat::PROTOCOL, kernel::Text::GRO_RECEIVE);
    }
    Verdict dev_gro_receive(kernel::Cpu& cpu, const Packet& p) {
        if (p.kind != FrameKind::TCP_DATA || p.payload == 0) return {Verdict::NORMAL, {}};
        return dev_gro_receive_data(cpu, p);
    }
    // skb_gro_receive's cost, for a segment merged into a held skb.
    kernel::Cpu::ExecAwaiter gro_merge(kernel::Cpu& cpu) const {
        return cpu.exec(costs_.merge, kernel::Cat::PROTOCOL, kernel::Text::GRO_MERGE);
    }
    // A MERGED segment appended to its flow's held skb, after gro_merge (the slot has not moved:
    // nothing else runs on this NAPI instance meanwhile).
    void skb_gro_receive(const Packet& p) { merge(list_[held_slot(p.flow)], p); }
    // Completes every held skb (flush_old: only those held since an earlier jiffy), oldest first.
    // Models: napi_gro_flush() (net/core/gro.c)
    engine::Task<> napi_gro_flush(kernel::Cpu& cpu, bool flush_old);
    // napi_gro_flush as steps, for a caller that awaits them in its own frame (the driver's poll:
    // one coroutine less per poll that flushes). Takes the oldest held skb (flush_old: of those
    // held before jiffy `now`) out of the list, or gives nullptr. Before the next call the caller
    // passes it up as napi_gro_flush does: gro_complete when it has several segments, then
    // netif_receive_skb's cost (UpCost) and `up`. The skb is given in place, in the slot it was
    // held in, now free: it stays there until a later hold takes that slot (only the NAPI poll,
    // one at a time, holds and takes skbs, and it holds none while it passes one up).
    const Packet* flush_take(std::uint64_t now, bool flush_old) {
        return count_ ? flush_take_oldest(now, flush_old) : nullptr;
    }
    // napi_gro_complete's cost for a completed skb of more than one segment.
    kernel::Cpu::ExecAwaiter gro_complete(kernel::Cpu& cpu) const {
        return cpu.exec(costs_.complete, kernel::Cat::PROTOCOL, kernel::Text::GRO_COMPLETE);
    }
    bool empty() const { return count_ == 0; }
    const GroStats& stats() const { return st_; }

private:
    struct Held {
        Packet skb;                             // the merged skb: first segment's fields, payload summed
        std::array<std::uint64_t, MAX_SEGS> frag_data{}; // each segment's frame in memory
        std::uint32_t count = 0;                // NAPI_GRO_CB(skb)->count
        std::uint32_t gso_size = 0;             // the first segment's payload
        std::uint64_t age = 0;                  // jiffies when it was first held
        std::uint64_t order = 0;                // arrival order: the oldest is flushed first
    };
    using Frags = std::array<std::uint64_t, MAX_SEGS>;
    // dev_gro_receive for a TCP segment with data (the rest is NORMAL, in the caller's code).
    Verdict dev_gro_receive_data(kernel::Cpu& cpu, const Packet& p);
    // dev_gro_receive's path for TCP data it does not hold at once: merge, complete, hold or
    // pass up.
    engine::Task<> receive_rest(kernel::Cpu& cpu, const Packet& p);
    std::size_t held_slot(std::uint32_t flow) const; // MAX_GRO_SKBS: nothing held for the flow
    static bool ends_skb(const Packet& p);           // a GSO skb GRO passes up whole
    // Takes the held skb in slot i out of the list and passes it up.
    engine::Task<> complete(kernel::Cpu& cpu, std::size_t i);
    // complete's first step: the skb out of slot i into `skb` as it goes up, its segments' frames
    // copied to `frag_data` (which must outlive the skb's delivery).
    void take(std::size_t i, Packet& skb, Frags& frag_data);
    // take's in-place form: slot i freed, its skb given its gso fields where it lies (its
    // fragments' frames in the slot's own array) and returned.
    const Packet& release(std::size_t i);
    const Packet* flush_take_oldest(std::uint64_t now, bool flush_old); // flush_take with count_ > 0
    void hold(kernel::Cpu& cpu, const Packet& p);
    static void append_frags(Held& h, const Packet& p);
    // Whether `p` continues the held skb `h` (tcp_gro_receive's flush tests and skb_gro_receive's
    // room), and whether it then ends it (a GSO skb GRO passes up whole, or a short segment).
    static bool continues(const Held& h, const Packet& p);
    static bool ends_merged(const Held& h, const Packet& p);
    void merge(Held& h, const Packet& p); // p appended to h
    // netif_receive_skb's own cost (up_cost_), for the caller to await just before `up_`.
    kernel::Cpu::ExecAwaiter netif_receive_skb(kernel::Cpu& cpu) const {
        if (up_cost_.text == kernel::Text::NONE) return cpu.exec(*up_cost_.cycles, kernel::Cat::PROTOCOL);
        return cpu.exec(*up_cost_.cycles, kernel::Cat::PROTOCOL, up_cost_.text);
    }
    std::size_t oldest() const;

    GroCosts costs_;
    Up up_;
    void* ctx_;
    UpCost up_cost_;
    std::array<Held, MAX_GRO_SKBS> list_{};
    std::array<bool, MAX_GRO_SKBS> used_{};
    std::size_t count_ = 0;
    std::uint64_t next_order_ = 0;
    GroStats st_;
};

} // namespace kdsim::net
