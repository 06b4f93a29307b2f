#include "net/napi.h"

#include "kernel/irqflags.h"
#include "kernel/softirq.h"

namespace kdsim::net {

Softnet::Softnet(kernel::Cpu& cpu) : cpu_(cpu) { cpu_.open_softirq(kernel::NET_RX_SOFTIRQ, &Softnet::net_rx_action, this); }

void Softnet::napi_schedule_irqoff(NapiStruct& n) {
    if (n.scheduled) return; // napi_schedule_prep: NAPI_STATE_SCHED already set
    n.scheduled = true;
    n.next = nullptr;
    if (tail_) tail_->next = &n;
    else head_ = &n;
    tail_ = &n;
    cpu_.__raise_softirq_irqoff(kernel::NET_RX_SOFTIRQ);
}

engine::Task<> Softnet::napi_schedule(NapiStruct& n) {
    bool flags = co_await kernel::local_irq_save(cpu_);
    napi_schedule_irqoff(n);
    co_await kernel::local_irq_restore(cpu_, flags);
}

engine::Task<> Softnet::net_rx_action(kernel::Cpu& cpu, void* ctx) {
    auto& sd = *static_cast<Softnet*>(ctx);
    ++sd.stats_.net_rx_actions;
    const engine::Tick time_limit = cpu.now() + 2 * cpu.tick_period();
    int budget = NETDEV_BUDGET;
    // list_splice_init(&sd->poll_list, &list) under local_irq_disable
    co_await kernel::local_irq_disable(cpu);
    NapiStruct* list = sd.head_;
    NapiStruct* list_tail = sd.tail_;
    sd.head_ = sd.tail_ = nullptr;
    co_await kernel::local_irq_enable(cpu);
    while (list) {
        if (budget <= 0 || cpu.now() >= time_limit) {
            ++sd.stats_.time_squeeze;
            break;
        }
        NapiStruct* n = list;
        list = n->next;
        if (!list) list_tail = nullptr;
        n->next = nullptr;
        ++sd.stats_.polls;
        int work = co_await n->poll(cpu, n->ctx, n->weight);
        sd.stats_.processed += static_cast<std::uint64_t>(work);
        budget -= work;
        if (n->scheduled && work >= n->weight) { // napi_poll: still scheduled, rotate to the tail
            if (list_tail) list_tail->next = n;
            else list = n;
            list_tail = n;
        }
    }
    // what is left goes back in front of newly scheduled instances; re-raise if any
    co_await kernel::local_irq_disable(cpu);
    if (list) {
        list_tail->next = sd.head_;
        if (!sd.head_) sd.tail_ = list_tail;
        sd.head_ = list;
    }
    if (sd.head_) cpu.__raise_softirq_irqoff(kernel::NET_RX_SOFTIRQ);
    co_await kernel::local_irq_enable(cpu);
}

} // namespace kdsim::net
