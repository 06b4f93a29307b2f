#include "net/veth.h"

#include "kernel/irqflags.h"

namespace kdsim::net {

using kernel::Cat;

Backlog::Backlog(Softnet& softnet) : softnet_(softnet), ring_(RING) {
    napi_.poll = &Backlog::process_backlog;
    napi_.ctx = this;
    napi_.weight = DEV_RX_WEIGHT;
}

// Models: enqueue_to_backlog() (net/core/dev.c)
bool Backlog::enqueue(const Packet& p, Veth& dev) {
    if (input_queued() > NETDEV_MAX_BACKLOG) {
        ++dropped_;
        return false;
    }
    at(tail_++) = Entry{p, &dev};
    softnet_.napi_schedule_irqoff(napi_); // napi_schedule_rps: a no-op while the backlog is scheduled
    return true;
}

// Models: process_backlog() (net/core/dev.c)
engine::Task<int> Backlog::process_backlog(kernel::Cpu& cpu, void* ctx, int quota) {
    auto& b = *static_cast<Backlog*>(ctx);
    int work = 0;
    for (;;) {
        while (b.head_ < b.split_) {
            const Entry e = b.at(b.head_++);
            co_await cpu.exec(e.dev->process_backlog_cost(), Cat::PROTOCOL);
            co_await e.dev->receive(cpu, e.p);
            if (++work >= quota) co_return work;
        }
        co_await kernel::local_irq_disable(cpu); // rps_lock_irq_disable
        const bool empty = b.split_ == b.tail_;
        if (empty) napi_complete_done(b.napi_); // napi->state = 0
        else b.split_ = b.tail_;                 // skb_queue_splice_tail_init(input_pkt_queue, process_queue)
        co_await kernel::local_irq_enable(cpu);
        if (empty) co_return work;
    }
}

Veth::Veth(const NetCosts& costs, Cycles veth_xmit, Cycles process_backlog, std::vector<Backlog*> backlogs,
           std::string name)
    : NetDevice(std::move(name)), costs_(costs), veth_xmit_(veth_xmit), process_backlog_(process_backlog),
      backlogs_(std::move(backlogs)) {}

void Veth::pair(Veth& a, Veth& b) {
    a.peer_ = &b;
    b.peer_ = &a;
}

// veth_xmit -> veth_forward_skb -> __netif_rx -> enqueue_to_backlog on the calling CPU, under
// rps_lock_irqsave.
// Models: veth_xmit() (drivers/net/veth.c)
engine::Task<> Veth::xmit(kernel::Cpu& cpu, Packet p) {
    co_await cpu.exec(veth_xmit_, Cat::DRIVER);
    Backlog& b = *backlogs_[static_cast<std::size_t>(cpu.id())];
    bool flags = co_await kernel::local_irq_save(cpu);
    const bool ok = b.enqueue(p, *peer_);
    co_await kernel::local_irq_restore(cpu, flags);
    if (ok) {
        ++stats_.tx_frames;
        tap_xmit(cpu, p);
    } else {
        ++stats_.tx_dropped; // veth_xmit's drop: priv->dropped
    }
}

// Models: __netif_receive_skb() (net/core/dev.c)
engine::Task<> Veth::receive(kernel::Cpu& cpu, const Packet& p) {
    ++stats_.rx_frames;
    stats_.rx_bytes += p.len;
    co_await cpu.exec(costs_.netif_receive_skb, Cat::PROTOCOL);
    co_await deliver(cpu, p);
}

} // namespace kdsim::net
