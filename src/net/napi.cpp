#include "net/napi.h"

#include "kernel/irqflags.h"
#include "kernel/softirq.h"

namespace kdsim::net {

void NapiList::add_tail(NapiStruct& n) {
    n.next = nullptr;
    if (tail) tail->next = &n;
    else head = &n;
    tail = &n;
}

NapiStruct* NapiList::pop_front() {
    NapiStruct* n = head;
    if (!n) return nullptr;
    head = n->next;
    if (!head) tail = nullptr;
    n->next = nullptr;
    return n;
}

void NapiList::splice_tail(NapiList& other) {
    if (other.empty()) return;
    if (tail) tail->next = other.head;
    else head = other.head;
    tail = other.tail;
    other.head = other.tail = nullptr;
}

Softnet::Softnet(kernel::Cpu& cpu) : cpu_(cpu) { cpu_.open_softirq(kernel::NET_RX_SOFTIRQ, &Softnet::net_rx_action, this); }

// Models: ____napi_schedule(), napi_schedule_prep() (net/core/dev.c)
void Softnet::napi_schedule_irqoff(NapiStruct& n) {
    if (n.scheduled) return; // napi_schedule_prep: NAPI_STATE_SCHED already set
    n.scheduled = true;
    poll_list_.add_tail(n);
    if (!in_net_rx_action_) cpu_.__raise_softirq_irqoff(kernel::NET_RX_SOFTIRQ);
}

// Models: napi_schedule() (include/linux/netdevice.h)
engine::Task<> Softnet::napi_schedule(NapiStruct& n) {
    bool flags = co_await kernel::local_irq_save(cpu_);
    napi_schedule_irqoff(n);
    co_await kernel::local_irq_restore(cpu_, flags);
}

// Models: napi_poll(), __napi_poll() (net/core/dev.c)
bool Softnet::napi_poll_done(NapiStruct& n, int work, int& budget) {
    stats_.processed += static_cast<std::uint64_t>(work);
    budget -= work;
    // __napi_poll: an instance that used its whole weight is still owned by net_rx_action
    const bool repoll = work >= n.weight && n.scheduled;
    if (repoll) ++stats_.repolls;
    return repoll;
}

// Models: net_rx_action() (net/core/dev.c)
engine::Task<> Softnet::net_rx_action(kernel::Cpu& cpu, void* ctx) {
    auto& sd = *static_cast<Softnet*>(ctx);
    ++sd.stats_.net_rx_actions;
    // time_after_eq(jiffies, time_limit) as a time: jiffies >= L exactly when now >= L * tick, so
    // the test after each poll needs no division of the clock
    const engine::Tick time_limit = (cpu.jiffies() + BUDGET_JIFFIES) * cpu.tick_period();
    int budget = NETDEV_BUDGET;
    NapiList list, repoll;
    bool squeezed = false;
    for (;;) { // start:
        sd.in_net_rx_action_ = true;
        co_await kernel::local_irq_disable(cpu);
        list.splice_tail(sd.poll_list_);
        co_await kernel::local_irq_enable(cpu);
        while (!list.empty()) {
            NapiStruct& n = *list.pop_front();
            ++sd.stats_.polls; // napi_poll: the instance's poll with its weight
            const int work = n.scheduled ? co_await n.poll(sd.cpu_, n.ctx, n.weight) : 0;
            if (sd.napi_poll_done(n, work, budget)) repoll.add_tail(n);
            if (budget <= 0 || cpu.now() >= time_limit) {
                ++sd.stats_.time_squeeze;
                squeezed = true;
                break;
            }
        }
        if (squeezed || !repoll.empty()) break;
        // every instance completed: poll those scheduled meanwhile, or end
        sd.in_net_rx_action_ = false;
        if (sd.poll_list_.empty()) co_return;
    }
    co_await kernel::local_irq_disable(cpu);
    list.splice_tail(sd.poll_list_);
    list.splice_tail(repoll);
    sd.poll_list_ = list;
    if (!sd.poll_list_.empty()) {
        ++sd.stats_.reraises;
        cpu.__raise_softirq_irqoff(kernel::NET_RX_SOFTIRQ);
    } else {
        sd.in_net_rx_action_ = false;
    }
    co_await kernel::local_irq_enable(cpu);
}

} // namespace kdsim::net
