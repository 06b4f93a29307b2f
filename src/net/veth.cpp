#include "net/veth.h"

#include "kernel/irqflags.h"

namespace kdsim::net {

using kernel::Cat;

Veth::Veth(const NetCosts& costs, Cycles veth_xmit, std::vector<Backlog*> backlogs, std::string name)
    : NetDevice(std::move(name)), costs_(costs), veth_xmit_(veth_xmit), backlogs_(std::move(backlogs)) {}

void Veth::pair(Veth& a, Veth& b) {
    a.peer_ = &b;
    b.peer_ = &a;
}

// veth_xmit -> veth_forward_skb -> __netif_rx -> enqueue_to_backlog on the calling CPU, under
// rps_lock_irqsave.
// Models: veth_xmit() (drivers/net/veth.c)
engine::Task<> Veth::xmit(kernel::Cpu& cpu, const Packet& p) {
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
