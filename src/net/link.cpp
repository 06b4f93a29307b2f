#include "net/link.h"

#include "net/nic.h"

#include <algorithm>
#include <numeric>
#include <stdexcept>

namespace kdsim::net {

Link::Link(engine::Simulation& sim, std::uint64_t rate_bps, engine::Tick latency, std::size_t queue)
    : queue_(std::max<std::size_t>(queue, 1)), sim_(sim), rate_bps_(rate_bps), latency_(latency) {
    if (rate_bps_ > 0) {
        const std::uint64_t g = std::gcd(engine::PS_PER_S, rate_bps_);
        wire_num_ = engine::PS_PER_S / g;
        wire_den_ = rate_bps_ / g;
        wire_max_bits_ = UINT64_MAX / wire_num_;
    }
    std::size_t cap = 1;
    while (cap < queue_) cap <<= 1;
    Packet empty{};
    empty.len = 0;
    for (auto& d : dir_) {
        d.ring.resize(cap);
        d.departs.resize(cap);
        d.seqs.resize(cap);
        d.mask = cap - 1;
        d.wire = wire_time(empty);
    }
}

void Link::attach(Nic& a, Nic& b) {
    ends_ = {&a, &b};
    dir_[0].to = &b;
    dir_[1].to = &a;
    a.attach(*this);
    b.attach(*this);
}

bool Link::transmit(const Nic& from, const Packet& p, engine::Tick ready) {
    return push(from, ready, [&](Packet& s) { s = p; }) != nullptr;
}

const Packet* Link::transmit_segment(const Nic& from, const Packet& p, std::uint32_t i, engine::Tick ready) {
    if (p.gso_segs <= 1) return push(from, ready, [&](Packet& s) { s = p; });
    return push(from, ready, [&](Packet& s) {
        s = p;
        gso_segment_in_place(s, i);
    });
}

template <class Fill> const Packet* Link::push(const Nic& from, engine::Tick ready, Fill fill) {
    std::size_t d = &from == ends_[0] ? 0 : 1;
    Direction& dir = dir_[d];
    while (dir.departed < dir.count && dir.departs[(dir.head + dir.departed) & dir.mask] <= sim_.now()) ++dir.departed;
    if (dir.count - dir.departed >= queue_) return nullptr;
    if (dir.count == dir.mask + 1) { // more frames on the wire than ever: a larger ring, in order
        const std::size_t cap = dir.mask + 1;
        std::vector<Packet> ring(2 * cap);
        std::vector<engine::Tick> departs(2 * cap);
        std::vector<std::uint64_t> seqs(2 * cap);
        for (std::size_t i = 0; i < dir.count; ++i) {
            ring[i] = dir.ring[(dir.head + i) & dir.mask];
            departs[i] = dir.departs[(dir.head + i) & dir.mask];
            seqs[i] = dir.seqs[(dir.head + i) & dir.mask];
        }
        dir.ring = std::move(ring);
        dir.departs = std::move(departs);
        dir.seqs = std::move(seqs);
        dir.mask = 2 * cap - 1;
        dir.head = 0;
    }
    engine::Tick start = std::max({sim_.now(), dir.free_at, ready});
    const std::size_t slot = (dir.head + dir.count) & dir.mask;
    Packet& p = dir.ring[slot];
    fill(p);
    if (p.len != dir.wire_len) { // the same length crosses in the same time: computed once per length change
        dir.wire_len = p.len;
        dir.wire = wire_time(p);
    }
    dir.free_at = start + dir.wire;
    dir.departs[slot] = dir.free_at;
    // The arrival's event: now for the only frame in flight; else its place among equal times
    // now, the event itself once the frame ahead of it has arrived (on_event).
    if (dir.count == 0) sim_.schedule_at(dir.free_at + latency_, this, d);
    else dir.seqs[slot] = sim_.reserve_seq();
    ++dir.count;
    ++frames_;
    return &p;
}

engine::Tick Link::wire_time(const Packet& p) const {
    const std::uint64_t bits = (std::max<std::uint64_t>(p.len, 60) + WIRE_OVERHEAD) * 8;
    if (bits <= wire_max_bits_) [[likely]] return bits * wire_num_ / wire_den_; // the same quotient in 64 bits
    return static_cast<engine::Tick>(static_cast<unsigned __int128>(bits) * engine::PS_PER_S / rate_bps_);
}

std::size_t Link::room(const Nic& from) const {
    const Direction& dir = dir_[&from == ends_[0] ? 0 : 1];
    std::size_t left = dir.departed;
    while (left < dir.count && dir.departs[(dir.head + left) & dir.mask] <= sim_.now()) ++left;
    const std::size_t held = dir.count - left;
    return held >= queue_ ? 0 : queue_ - held;
}

engine::Tick Link::room_at(const Nic& from, std::size_t n) const {
    const Direction& dir = dir_[&from == ends_[0] ? 0 : 1];
    std::size_t held = 0, first = dir.departed; // frames not yet departed, from the oldest
    for (std::size_t i = dir.departed; i < dir.count; ++i) {
        if (dir.departs[(dir.head + i) & dir.mask] > sim_.now()) break;
        first = i + 1;
    }
    held = dir.count - first;
    if (held + n <= queue_) return sim_.now();
    const std::size_t must_leave = held + n - queue_; // the oldest of them must have departed
    return dir.departs[(dir.head + first + must_leave - 1) & dir.mask];
}

void Link::on_event(std::uint64_t d) {
    Direction& dir = dir_[d];
    // Read in place, not copied: only a transmit on this direction takes the freed slot again (or
    // grows the ring), and what runs below reads the frame before it can run one (the receiving
    // NIC stores the frame, then raises its interrupt).
    const Packet& p = dir.ring[dir.head];
    dir.head = (dir.head + 1) & dir.mask;
    --dir.count;
    if (dir.departed) --dir.departed;
    if (dir.count) sim_.schedule_at_seq(dir.departs[dir.head] + latency_, this, d, dir.seqs[dir.head]);
    if (loss_ && loss_(p, loss_ctx_)) {
        ++lost_;
        return;
    }
    dir.to->receive_from_wire(p);
}

} // namespace kdsim::net
