// A full-duplex Ethernet link between two NICs: each direction serialises frames at the link
// rate (frame + preamble, SFD and inter-frame gap) and delivers them after the propagation and
// PHY latency. The sender's queue (txqueuelen and the NIC) holds the frames waiting for the wire
// or being serialised; a frame that has left the sender while it propagates takes no room in it.
// Frames in flight live in a ring per direction that grows (doubling) only when more are on the
// wire than ever before: no allocation per packet. They arrive in the order they were sent, so
// each direction keeps one engine event pending, for its oldest frame's arrival; that event
// schedules the next frame's, with the sequence number taken when the next frame was sent, so
// every arrival sorts among the events at its time as it would with one event per frame.
#pragma once

#include "engine/simulation.h"
#include "net/packet.h"

#include <array>
#include <cstdint>
#include <vector>

namespace kdsim::net {

class Nic;

class Link final : public engine::EventTarget {
public:
    // rate in bits per second, latency in picoseconds; `queue`: frames each direction's sender
    // holds (waiting for the wire or being serialised) before its queue overflows.
    Link(engine::Simulation& sim, std::uint64_t rate_bps, engine::Tick latency, std::size_t queue = 1000);
    void attach(Nic& a, Nic& b);
    // The NIC `from` puts a frame on the wire now, or when the wire is free, and not before
    // `ready` (the device has fetched the whole frame: a store-and-forward MAC behind a slow DMA
    // port); false when the direction's queue is full and the frame is dropped.
    bool transmit(const Nic& from, const Packet& p, engine::Tick ready = 0);
    // transmit of segment i of `p` (p itself when it is no GSO skb), built in the wire's queue
    // in place: the frame queued, or nullptr when the full queue dropped it.
    const Packet* transmit_segment(const Nic& from, const Packet& p, std::uint32_t i, engine::Tick ready);
    // When the last frame `from` queued has left its end of the wire (the device is done with it).
    engine::Tick departs(const Nic& from) const { return dir_[&from == ends_[0] ? 0 : 1].free_at; }
    void on_event(std::uint64_t arg) override;
    // The driver's view of its tx ring (the frames `from`'s direction holds before the wire):
    // free slots now, and when at least `n` will be free (now if already).
    std::size_t room(const Nic& from) const;
    engine::Tick room_at(const Nic& from, std::size_t n) const;
    std::size_t queue() const { return queue_; }
    // How long `p` takes to cross the wire (serialised at the link's rate, with its overhead).
    engine::Tick wire_time(const Packet& p) const;

    std::uint64_t frames() const { return frames_; }
    // Loss on the wire (a netem-like pattern): `lost(p, ctx)` true discards the frame after
    // it crossed the wire, before the receiving NIC sees it.
    using LossFn = bool (*)(const Packet& p, void* ctx);
    void set_loss(LossFn fn, void* ctx) {
        loss_ = fn;
        loss_ctx_ = ctx;
    }
    std::uint64_t frames_lost() const { return lost_; }

private:
    static constexpr std::uint32_t WIRE_OVERHEAD = 24; // preamble + SFD 8, IFG 12, FCS 4
    // Queues the frame `fill` writes into its slot, or drops it (nullptr) when the queue is full.
    template <class Fill> const Packet* push(const Nic& from, engine::Tick ready, Fill fill);
    struct Direction {
        Nic* to = nullptr;
        engine::Tick free_at = 0;
        std::vector<Packet> ring;          // a power of two long
        std::vector<engine::Tick> departs; // when each frame has left the sender (serialised)
        std::vector<std::uint64_t> seqs;   // each frame's arrival event's sequence number (not the head's)
        std::size_t mask = 0;              // ring.size() - 1
        std::size_t head = 0, count = 0;
        std::size_t departed = 0; // of the `count` from head on, those known to have left the sender
        std::uint32_t wire_len = 0; // the last frame's length and its wire_time (at first a 0-byte frame's)
        engine::Tick wire = 0;
    };
    std::size_t queue_;
    engine::Simulation& sim_;
    std::uint64_t rate_bps_;
    // wire_time in 64 bits: bits * PS_PER_S / rate_bps_ = bits * wire_num_ / wire_den_ (both
    // divided by their gcd), exact while bits <= wire_max_bits_ (the product fits)
    std::uint64_t wire_num_ = 1, wire_den_ = 1, wire_max_bits_ = 0;
    engine::Tick latency_;
    std::array<Direction, 2> dir_;
    std::array<Nic*, 2> ends_{};
    std::uint64_t frames_ = 0;
    LossFn loss_ = nullptr;
    void* loss_ctx_ = nullptr;
    std::uint64_t lost_ = 0;
};

} // namespace kdsim::net
