#include "net/link.h"

#include "net/nic.h"

#include <algorithm>
#include <stdexcept>

namespace kdsim::net {

Link::Link(engine::Simulation& sim, std::uint64_t rate_bps, engine::Tick latency, std::size_t queue)
    : sim_(sim), rate_bps_(rate_bps), latency_(latency) {
    for (auto& d : dir_) d.ring.resize(std::max<std::size_t>(queue, 1));
}

void Link::attach(Nic& a, Nic& b) {
    ends_ = {&a, &b};
    dir_[0].to = &b;
    dir_[1].to = &a;
    a.attach(*this);
    b.attach(*this);
}

bool Link::transmit(const Nic& from, const Packet& p) {
    std::size_t d = &from == ends_[0] ? 0 : 1;
    Direction& dir = dir_[d];
    if (dir.count == dir.ring.size()) return false;
    std::uint64_t wire_len = std::max<std::uint64_t>(p.len, 60) + WIRE_OVERHEAD;
    engine::Tick start = std::max(sim_.now(), dir.free_at);
    engine::Tick ser = static_cast<engine::Tick>(static_cast<unsigned __int128>(wire_len * 8) * engine::PS_PER_S / rate_bps_);
    dir.free_at = start + ser;
    dir.ring[(dir.head + dir.count) % dir.ring.size()] = p;
    ++dir.count;
    sim_.schedule_at(dir.free_at + latency_, this, d);
    ++frames_;
    return true;
}

void Link::on_event(std::uint64_t d) {
    Direction& dir = dir_[d];
    Packet p = dir.ring[dir.head];
    dir.head = (dir.head + 1) % dir.ring.size();
    --dir.count;
    if (loss_ && loss_(p, loss_ctx_)) {
        ++lost_;
        return;
    }
    dir.to->receive_from_wire(p);
}

} // namespace kdsim::net
