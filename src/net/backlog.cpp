#include "net/backlog.h"

#include "kernel/irqflags.h"

namespace kdsim::net {

using kernel::Cat;

Backlog::Backlog(Softnet& softnet, Cycles process_backlog)
    : softnet_(softnet), process_backlog_(process_backlog), ring_(RING) {
    napi_.poll = &Backlog::process_backlog;
    napi_.ctx = this;
    napi_.weight = DEV_RX_WEIGHT;
}

// Models: enqueue_to_backlog() (net/core/dev.c)
bool Backlog::enqueue(const Packet& p, NetDevice& dev) {
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
            co_await cpu.exec(b.process_backlog_, Cat::PROTOCOL, kernel::Text::PROCESS_BACKLOG);
            co_await e.dev->backlog_receive(cpu, e.p);
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

} // namespace kdsim::net
