#include "net/gro.h"

#include "net/tcp.h"

#include <algorithm>

namespace kdsim::net {

using kernel::Cat;

namespace {
// A frame of one segment's data in memory: its one fragment, or its linear data.
std::uint64_t plain_frag(const Packet& p) { return p.frag_data ? p.frag_data[0] : p.data; }
} // namespace

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
    Frags frag_data;
    Packet skb;
    take(i, skb, frag_data);
    if (skb.gso_segs > 1) co_await gro_complete(cpu);
    if (up_cost_.cycles) co_await netif_receive_skb(cpu);
    co_await up_(cpu, ctx_, skb);
}

void Gro::take(std::size_t i, Packet& skb, Frags& frag_data) {
    // the skb out of the slot, with the `count` fragment addresses in use (not all MAX_SEGS)
    const Held& held = list_[i];
    skb = held.skb;
    const std::uint32_t count = held.count;
    std::copy_n(held.frag_data.begin(), count, frag_data.begin());
    used_[i] = false;
    --count_;
    ++st_.skbs_up;
    st_.segs_up += count;
    if (count > 1) { // (a held skb's own gso_segs is 1)
        skb.gso_segs = count;
        skb.gso_size = held.gso_size;
        skb.frag_data = frag_data.data();
    }
}

// Inline in its two callers: dev_gro_receive holds most segments, without a call.
[[gnu::always_inline]] inline void Gro::hold(kernel::Cpu& cpu, const Packet& p) {
    std::size_t i = 0;
    while (used_[i]) ++i;
    Held& h = list_[i];
    used_[i] = true;
    ++count_;
    ++st_.held;
    // (p's fields read before the copy: the compiler cannot know that p is not a held skb)
    const bool plain = p.gso_segs <= 1;
    const std::uint64_t frame = plain_frag(p);
    // dev_gro_receive: skb_shinfo(skb)->gso_size = skb_gro_len(skb), or the GSO skb's own
    const std::uint32_t gso_size = plain ? p.payload : p.gso_size;
    h.skb = p;
    h.skb.gso_segs = 1;
    h.skb.frag_data = nullptr;
    if (plain) {
        h.frag_data[0] = frame;
        h.count = 1;
    } else {
        h.count = 0;
        append_frags(h, p);
    }
    h.gso_size = gso_size;
    h.age = cpu.jiffies();
    h.order = next_order_++;
}

const Packet& Gro::release(std::size_t i) {
    Held& held = list_[i];
    const std::uint32_t count = held.count;
    used_[i] = false;
    --count_;
    ++st_.skbs_up;
    st_.segs_up += count;
    if (count > 1) { // as take's
        held.skb.gso_segs = count;
        held.skb.gso_size = held.gso_size;
        held.skb.frag_data = held.frag_data.data();
    }
    return held.skb;
}

// Each segment's frame in memory: a GSO skb (from virtio) is one buffer, its segments in a row.
void Gro::append_frags(Held& h, const Packet& p) {
    if (p.gso_segs <= 1) { // a plain frame: the loop's one turn
        h.frag_data[h.count++] = plain_frag(p);
        return;
    }
    const std::uint32_t segs = std::max<std::uint32_t>(p.gso_segs, 1);
    for (std::uint32_t k = 0; k < segs; ++k)
        h.frag_data[h.count++] = p.frag_data ? p.frag_data[k] : (p.data ? p.data + std::uint64_t{k} * p.gso_size : 0);
}

engine::Task<> Gro::napi_gro_receive(kernel::Cpu& cpu, const Packet& p) {
    co_await gro_receive(cpu, p);
    Verdict v = dev_gro_receive(cpu, p);
    if (v.kind == Verdict::REST) {
        co_await std::move(v.rest);
    } else if (v.kind == Verdict::MERGED) {
        co_await gro_merge(cpu);
        skb_gro_receive(p);
    } else if (v.kind == Verdict::NORMAL) {
        if (up_cost_.cycles) co_await netif_receive_skb(cpu);
        co_await up_(cpu, ctx_, p);
    }
}

// Only TCP segments with data are held: a pure ACK is flushed (len < mss), a UDP datagram
// without a GRO socket and a tunnel packet go the normal way (NORMAL). A segment GSO does not
// split (ends false), of a flow nothing is held for, with a slot free: receive_rest would hold it
// with no await, so it is held here (no coroutine for it).
// A segment that continues its flow's held skb without ending it: receive_rest would await the
// merge's cost and append it, nothing else; the caller does the same (MERGED, no coroutine).
Gro::Verdict Gro::dev_gro_receive_data(kernel::Cpu& cpu, const Packet& p) {
    const std::size_t i = held_slot(p.flow);
    if (i == MAX_GRO_SKBS) {
        if (!ends_skb(p) && count_ < MAX_GRO_SKBS) {
            hold(cpu, p);
            return {Verdict::HELD, {}};
        }
    } else if (continues(list_[i], p) && !ends_merged(list_[i], p)) {
        return {Verdict::MERGED, {}};
    }
    return {Verdict::REST, receive_rest(cpu, p)};
}

std::size_t Gro::held_slot(std::uint32_t flow) const {
    if (count_ == 0) return MAX_GRO_SKBS; // (the walk would find no used slot)
    std::size_t i = 0;
    while (i < MAX_GRO_SKBS && !(used_[i] && list_[i].skb.flow == flow)) ++i;
    return i;
}

// A GSO skb (virtio-net with GUEST_TSO4) counts as its segments (NAPI_GRO_CB(skb)->count =
// gso_segs) and merges only with a held skb of its gso_size; it ends its skb unless it is
// whole segments (tcp_gro_receive: flush = len != count * gso_size).
// (one of more than MAX_SEGS segments, which the model's list cannot hold, goes up whole too)
bool Gro::ends_skb(const Packet& p) {
    const std::uint32_t segs = std::max<std::uint32_t>(p.gso_segs, 1);
    return segs > 1 && (p.payload != segs * p.gso_size || segs > MAX_SEGS);
}

bool Gro::continues(const Held& h, const Packet& p) {
    const std::uint32_t segs = std::max<std::uint32_t>(p.gso_segs, 1);
    const bool fits = segs > 1 ? p.gso_size == h.gso_size : p.payload <= h.gso_size; // flush |= (len - 1) >= mss
    const bool next = h.skb.seq + h.skb.payload == p.seq;       // flush |= seq != th2->seq + len(p)
    const bool room = TCP_IP_HEADERS + h.skb.payload + p.payload < GRO_MAX_SIZE && h.count + segs <= MAX_SEGS; // skb_gro_receive: -E2BIG
    return fits && next && room;
}

bool Gro::ends_merged(const Held& h, const Packet& p) {
    return ends_skb(p) || (p.gso_segs <= 1 && p.payload < h.gso_size); // flush = len < mss
}

void Gro::merge(Held& h, const Packet& p) {
    append_frags(h, p);
    h.skb.payload += p.payload;
    h.skb.len += p.payload;
    h.skb.corrupt = h.skb.corrupt || p.corrupt;
    st_.merged += std::max<std::uint32_t>(p.gso_segs, 1);
}

engine::Task<> Gro::receive_rest(kernel::Cpu& cpu, const Packet& p) {
    const bool ends = ends_skb(p);
    const std::size_t i = held_slot(p.flow);
    if (i < MAX_GRO_SKBS) { // tcp_gro_receive found the flow's held skb
        Held& h = list_[i];
        if (continues(h, p)) {
            co_await gro_merge(cpu);
            // the slot may not have moved: nothing else runs on this NAPI instance meanwhile
            merge(h, p);
            if (ends_merged(h, p)) co_await complete(cpu, i);
            co_return;
        }
        co_await complete(cpu, i); // pp = p: the held skb goes up, this segment is held anew
    }
    if (ends) { // out_check_final flushes it: the normal path, whole
        if (up_cost_.cycles) co_await netif_receive_skb(cpu);
        co_await up_(cpu, ctx_, p);
        co_return;
    }
    if (count_ == MAX_GRO_SKBS) co_await complete(cpu, oldest()); // gro_flush_oldest
    hold(cpu, p);
}

engine::Task<> Gro::napi_gro_flush(kernel::Cpu& cpu, bool flush_old) {
    const std::uint64_t now = flush_old ? cpu.jiffies() : 0; // (read by flush_old only)
    while (const Packet* skb = flush_take(now, flush_old)) {
        if (skb->gso_segs > 1) co_await gro_complete(cpu);
        if (up_cost_.cycles) co_await netif_receive_skb(cpu);
        co_await up_(cpu, ctx_, *skb);
    }
}

const Packet* Gro::flush_take_oldest(std::uint64_t now, bool flush_old) {
    // oldest first (__napi_gro_flush_chain walks the list from its tail); the walk ends at the
    // last used slot (the slots after it hold nothing)
    if (count_ == 1 && !flush_old) { // the one used slot is the oldest
        std::size_t j = 0;
        while (!used_[j]) ++j;
        return &release(j);
    }
    std::size_t i = MAX_GRO_SKBS;
    for (std::size_t j = 0, left = count_; left > 0; ++j) {
        if (!used_[j]) continue;
        --left;
        if (flush_old && list_[j].age == now) continue;
        if (i == MAX_GRO_SKBS || list_[j].order < list_[i].order) i = j;
    }
    if (i == MAX_GRO_SKBS) return nullptr;
    return &release(i);
}

} // namespace kdsim::net
