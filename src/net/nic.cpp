#include "net/nic.h"

#include "kernel/irqflags.h"
#include "kernel/softirq.h"
#include "net/link.h"

namespace kdsim::net {

using kernel::Cat;

namespace {
constexpr int NAPI_POLL_WEIGHT = 64; // include/linux/netdevice.h
constexpr int NETDEV_BUDGET = 300;   // net.core.netdev_budget
} // namespace

Nic::Nic(kernel::Cpu& cpu, unsigned vector, const NetCosts& costs, std::string name, std::size_t ring)
    : cpu_(cpu), vector_(vector), costs_(costs), name_(std::move(name)), ring_(ring) {
    cpu_.request_irq(vector_, &Nic::rx_irq, this, name_ + "-rx");
    cpu_.open_softirq(kernel::NET_RX_SOFTIRQ, &Nic::net_rx_action, this);
}

void Nic::receive_from_wire(const Packet& p) {
    if (count_ == ring_.size()) {
        ++stats_.rx_dropped;
        return;
    }
    ring_[(head_ + count_) % ring_.size()] = p;
    ++count_;
    if (irq_enabled_) {
        irq_enabled_ = false; // the driver masks the device interrupt until NAPI completes
        cpu_.raise_irq(vector_);
    }
}

// The driver's interrupt handler: ack and mask the device interrupt, napi_schedule().
engine::Task<> Nic::rx_irq(kernel::Cpu& cpu, void* ctx) {
    auto& n = *static_cast<Nic*>(ctx);
    ++n.stats_.irqs;
    co_await cpu.exec(n.costs_.driver_rx_irq, Cat::DRIVER);
    // __napi_schedule: local_irq_save; list_add_tail(poll_list); __raise_softirq_irqoff
    bool flags = co_await kernel::local_irq_save(cpu);
    n.napi_scheduled_ = true;
    cpu.raise_softirq_irqoff(kernel::NET_RX_SOFTIRQ);
    co_await kernel::local_irq_restore(cpu, flags);
}

// net_rx_action: poll the scheduled NAPI instances within netdev_budget.
engine::Task<> Nic::net_rx_action(kernel::Cpu& cpu, void* ctx) {
    auto& n = *static_cast<Nic*>(ctx);
    co_await kernel::local_irq_disable(cpu); // list_splice_init(&sd->poll_list, &list)
    co_await kernel::local_irq_enable(cpu);
    int budget = NETDEV_BUDGET;
    while (n.napi_scheduled_ && budget > 0) {
        int work = co_await n.napi_poll(NAPI_POLL_WEIGHT);
        budget -= work;
        if (work < NAPI_POLL_WEIGHT) {
            // napi_complete_done: off the poll list, device interrupt re-enabled
            n.napi_scheduled_ = false;
            n.irq_enabled_ = true;
            if (n.count_ > 0) { // a frame came in meanwhile: the device raises at once
                n.irq_enabled_ = false;
                cpu.raise_irq(n.vector_);
            }
        }
    }
    if (n.napi_scheduled_) cpu.raise_softirq_irqoff(kernel::NET_RX_SOFTIRQ); // budget spent: time squeeze
    co_await kernel::local_irq_disable(cpu); // splice the rest back, re-raise if needed
    co_await kernel::local_irq_enable(cpu);
}

engine::Task<int> Nic::napi_poll(int weight) {
    ++stats_.polls;
    co_await cpu_.exec(costs_.napi_poll, Cat::DRIVER);
    int done = 0;
    while (done < weight && count_ > 0) {
        Packet p = ring_[head_];
        head_ = (head_ + 1) % ring_.size();
        --count_;
        ++done;
        ++stats_.rx_frames;
        co_await cpu_.exec(costs_.driver_rx, Cat::DRIVER);
        co_await cpu_.exec(costs_.netif_receive_skb, Cat::PROTOCOL);
        if (rx_fn_) co_await rx_fn_(cpu_, rx_ctx_, p);
    }
    co_return done;
}

engine::Task<> Nic::xmit(Packet p) {
    // ndo_start_xmit: the driver's tx ring lock (spin_lock_irqsave), descriptor, doorbell
    bool flags = co_await kernel::local_irq_save(cpu_);
    co_await cpu_.exec(costs_.driver_xmit, Cat::DRIVER);
    ++stats_.tx_frames;
    p.sent = cpu_.now();
    link_->transmit(*this, p);
    co_await kernel::local_irq_restore(cpu_, flags);
}

} // namespace kdsim::net
