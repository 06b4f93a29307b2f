#include "net/gro.h"

#include "net/tcp.h"

namespace kdsim::net {

using kernel::Cat;

std::size_t Gro::oldest() const {
    std::size_t best = MAX_GRO_SKBS;
    for (std::size_t i = 0; i < MAX_GRO_SKBS; ++i)
        if (used_[i] && (best == MAX_GRO_SKBS || list_[i].order < list_[best].order)) best = i;
    return best;
}

// napi_gro_complete: an skb of several segments gets its gso fields (tcp4_gro_complete); then
// the normal receive path. The slot is free again before the stack runs.
// Models: napi_gro_complete() (net/core/gro.c)
engine::Task<> Gro::complete(kernel::Cpu& cpu, std::size_t i) {
    Held h = list_[i];
    used_[i] = false;
    --count_;
    ++st_.skbs_up;
    st_.segs_up += h.count;
    if (h.count > 1) {
        co_await cpu.exec(costs_.complete, Cat::PROTOCOL);
        h.skb.gso_segs = h.count;
        h.skb.gso_size = h.gso_size;
        h.skb.frag_data = h.frag_data.data();
    }
    co_await up_(cpu, ctx_, h.skb);
}

void Gro::hold(kernel::Cpu& cpu, const Packet& p) {
    std::size_t i = 0;
    while (used_[i]) ++i;
    Held& h = list_[i];
    used_[i] = true;
    ++count_;
    ++st_.held;
    h.skb = p;
    h.skb.gso_segs = 1;
    h.skb.frag_data = nullptr;
    h.frag_data[0] = p.data;
    h.count = 1;
    h.gso_size = p.payload; // dev_gro_receive: skb_shinfo(skb)->gso_size = skb_gro_len(skb)
    h.age = cpu.jiffies();
    h.order = next_order_++;
}

engine::Task<> Gro::napi_gro_receive(kernel::Cpu& cpu, const Packet& p) {
    ++st_.packets;
    const bool tcp = p.kind == FrameKind::TCP_DATA || p.kind == FrameKind::TCP_ACK;
    co_await cpu.exec(costs_.receive + (tcp ? costs_.tcp : 0), Cat::PROTOCOL);
    // only TCP segments with data are held: a pure ACK is flushed (len < mss), a UDP datagram
    // without a GRO socket and a tunnel packet go the normal way
    if (p.kind != FrameKind::TCP_DATA || p.payload == 0) {
        co_await up_(cpu, ctx_, p);
        co_return;
    }
    std::size_t i = 0;
    while (i < MAX_GRO_SKBS && !(used_[i] && list_[i].skb.flow == p.flow)) ++i;
    if (i < MAX_GRO_SKBS) { // tcp_gro_receive found the flow's held skb
        Held& h = list_[i];
        const bool fits = p.payload <= h.gso_size;                  // flush |= (len - 1) >= mss
        const bool next = h.skb.seq + h.skb.payload == p.seq;       // flush |= seq != th2->seq + len(p)
        const bool room = TCP_IP_HEADERS + h.skb.payload + p.payload < GRO_MAX_SIZE && h.count < MAX_SEGS; // skb_gro_receive: -E2BIG
        if (fits && next && room) {
            co_await cpu.exec(costs_.merge, Cat::PROTOCOL);
            // the slot may not have moved: nothing else runs on this NAPI instance meanwhile
            h.frag_data[h.count++] = p.data;
            h.skb.payload += p.payload;
            h.skb.len += p.payload;
            h.skb.corrupt = h.skb.corrupt || p.corrupt;
            ++st_.merged;
            if (p.payload < h.gso_size) co_await complete(cpu, i); // flush = len < mss
            co_return;
        }
        co_await complete(cpu, i); // pp = p: the held skb goes up, this segment is held anew
    }
    if (count_ == MAX_GRO_SKBS) co_await complete(cpu, oldest()); // gro_flush_oldest
    hold(cpu, p);
}

engine::Task<> Gro::napi_gro_flush(kernel::Cpu& cpu, bool flush_old) {
    const std::uint64_t now = cpu.jiffies();
    for (;;) {
        std::size_t i = MAX_GRO_SKBS, seen = 0;
        // oldest first (__napi_gro_flush_chain walks the list from its tail)
        for (std::size_t j = 0; j < MAX_GRO_SKBS; ++j) {
            if (!used_[j] || (flush_old && list_[j].age == now)) continue;
            ++seen;
            if (i == MAX_GRO_SKBS || list_[j].order < list_[i].order) i = j;
        }
        if (!seen) co_return;
        co_await complete(cpu, i);
    }
}

} // namespace kdsim::net
