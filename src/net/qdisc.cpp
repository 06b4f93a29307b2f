// The qdisc layer: __dev_xmit_skb, qdisc_run, net_tx_action, the watchdog, pfifo_fast (qdisc.h).
#include "net/qdisc.h"

#include "kernel/irqflags.h"
#include "net/sch_fq.h"
#include "net/stack.h"

#include <stdexcept>

namespace kdsim::net {

using kernel::Cat;

void Qdisc::backlog_add(const Packet& p) {
    ++qlen_;
    backlog_ += p.len;
    st_.qlen_hw = std::max<std::uint64_t>(st_.qlen_hw, qlen_);
    st_.backlog_hw = std::max(st_.backlog_hw, backlog_);
}

void Qdisc::backlog_sub(const Packet& p) {
    --qlen_;
    backlog_ -= p.len;
}

void Qdisc::register_stats(const stats::Scope& s) const {
    s.counter("sent_bytes", st_.bytes, "bytes", "bytes the qdisc handed to the driver (tc -s qdisc: Sent ... bytes)")
        .counter("sent_packets", st_.packets, "count", "packets (segments) in them (tc -s qdisc: pkt)")
        .counter("dropped", st_.drops, "count", "skbs the qdisc dropped: its limit or the flow's was reached")
        .counter("requeues", st_.requeues, "count", "skbs the driver gave back (no room in its ring): dev_requeue_skb")
        .counter("enqueued", st_.enqueued, "count", "skbs enqueued")
        .counter("bypassed", st_.bypassed, "count", "skbs sent at once past the empty qdisc (TCQ_F_CAN_BYPASS)")
        .counter("qlen_max", st_.qlen_hw, "count", "the most skbs the qdisc held at once")
        .counter("backlog_max", st_.backlog_hw, "bytes", "the most bytes the qdisc held at once")
        .value("backlog_end", [this] { return static_cast<double>(backlog_); }, "bytes", "bytes queued at the end of the run");
    register_own_stats(s);
}

bool PfifoFast::enqueue(const Packet& p, engine::Tick) {
    if (qlen() >= limit_) return drop();
    band_[PRIO2BAND[p.priority & 15]].push_back(p);
    return true;
}

bool PfifoFast::dequeue(engine::Tick, Packet& out) {
    for (SkbQueue& b : band_)
        if (!b.empty()) {
            out = b.pop_front();
            return true;
        }
    return false;
}

std::unique_ptr<Qdisc> make_qdisc(const QdiscConfig& cfg, const QdiscCosts& costs) {
    switch (cfg.kind) {
    case QdiscKind::PFIFO_FAST: return std::make_unique<PfifoFast>(cfg.txqueuelen, costs);
    case QdiscKind::FQ: return std::make_unique<Fq>(cfg.fq, costs);
    case QdiscKind::NONE:
    case QdiscKind::NOQUEUE: break;
    }
    return nullptr;
}

NetTx::NetTx(kernel::Cpu& cpu, Cycles net_tx_action) : cpu_(cpu), cost_(net_tx_action) {
    cpu_.open_softirq(kernel::NET_TX_SOFTIRQ, &NetTx::net_tx_action, this);
    cpu_.open_softirq(kernel::TASKLET_SOFTIRQ, &NetTx::tcp_tasklet_func, this);
}

void NetTx::tsq_schedule(TcpEndpoint& ep) {
    tsq_.push_back(&ep);
    cpu_.raise_softirq_irqoff(kernel::TASKLET_SOFTIRQ);
}

// Models: tcp_tasklet_func() (net/ipv4/tcp_output.c)
engine::Task<> NetTx::tcp_tasklet_func(kernel::Cpu& cpu, void* ctx) {
    auto& self = *static_cast<NetTx*>(ctx);
    co_await kernel::local_irq_disable(cpu);
    self.tsq_running_.swap(self.tsq_);
    co_await kernel::local_irq_enable(cpu);
    for (TcpEndpoint* ep : self.tsq_running_) co_await ep->tcp_tsq_handler(cpu);
    self.tsq_running_.clear();
}

void NetTx::schedule(TxQueue& q) {
    output_queue_.push_back(&q);
    cpu_.raise_softirq_irqoff(kernel::NET_TX_SOFTIRQ);
}

// The output_queue is taken whole with interrupts off; each qdisc leaves the SCHED state and
// is run under its root lock.
engine::Task<> NetTx::net_tx_action(kernel::Cpu& cpu, void* ctx) {
    auto& self = *static_cast<NetTx*>(ctx);
    ++self.runs_;
    co_await kernel::local_irq_disable(cpu);
    self.running_.swap(self.output_queue_);
    co_await kernel::local_irq_enable(cpu);
    co_await cpu.exec(self.cost_, Cat::PROTOCOL);
    for (TxQueue* q : self.running_) {
        q->clear_scheduled();
        co_await q->qdisc_run(cpu);
    }
    self.running_.clear();
}

void TxQueue::netif_schedule(kernel::Cpu& cpu) {
    if (scheduled_) return;
    scheduled_ = true;
    net_tx_.at(static_cast<std::size_t>(cpu.id()))->schedule(*this);
}

void TxQueue::netif_tx_wake_queue(kernel::Cpu& cpu) {
    if (!stopped_) return;
    stopped_ = false;
    netif_schedule(cpu);
}

// Models: __dev_xmit_skb() (net/core/dev.c)
engine::Task<bool> TxQueue::dev_xmit_skb(kernel::Cpu& cpu, const Packet& p) {
    Qdisc& q = *q_;
    if (q.can_bypass() && q.qlen() == 0 && !running_) { // qdisc_run_begin on an empty qdisc
        running_ = true;
        q.count_bypass();
        if (co_await sch_direct_xmit(cpu, p)) co_await run_quota(cpu);
        running_ = false;
        co_return true;
    }
    const bool queued = q.enqueue(p, cpu.now());
    co_await cpu.exec(q.enqueue_cost(), Cat::PROTOCOL);
    if (!queued) co_return false; // qdisc_drop: kfree_skb, NET_XMIT_DROP
    q.backlog_add(p);
    q.count_enqueue();
    co_await qdisc_run(cpu);
    co_return true;
}

// Models: qdisc_run() (include/net/pkt_sched.h)
engine::Task<> TxQueue::qdisc_run(kernel::Cpu& cpu) {
    if (running_) co_return; // qdisc_run_begin failed: the CPU running it will dequeue this too
    running_ = true;
    co_await run_quota(cpu);
    running_ = false;
}

// Models: __qdisc_run() (net/sched/sch_generic.c)
engine::Task<> TxQueue::run_quota(kernel::Cpu& cpu) {
    int quota = DEV_TX_WEIGHT;
    while (co_await qdisc_restart(cpu)) {
        if (--quota <= 0) { // the quota used: the rest from NET_TX
            netif_schedule(cpu);
            break;
        }
    }
}

// Models: qdisc_restart(), dequeue_skb() (net/sched/sch_generic.c)
engine::Task<bool> TxQueue::qdisc_restart(kernel::Cpu& cpu) {
    if (stopped_) co_return false; // TCQ_F_ONETXQUEUE: nothing is dequeued for a stopped queue
    Packet p;
    if (!requeued_.empty()) {
        p = requeued_.pop_front();
        q_->backlog_sub(p);
    } else {
        const bool got = q_->dequeue(cpu.now(), p);
        if (!got) {
            arm_watchdog(cpu);
            co_return false;
        }
        q_->backlog_sub(p);
        co_await cpu.exec(q_->dequeue_cost(), Cat::PROTOCOL);
    }
    co_return co_await sch_direct_xmit(cpu, p);
}

// A driver without room for the skb's frames returns NETDEV_TX_BUSY: the skb goes back to the
// head (dev_requeue_skb), and the queue is scheduled again.
// Models: sch_direct_xmit(), dev_requeue_skb() (net/sched/sch_generic.c)
engine::Task<bool> TxQueue::sch_direct_xmit(kernel::Cpu& cpu, const Packet& p) {
    const std::size_t frames = std::max<std::uint32_t>(p.gso_segs, 1); // each segment a frame
    if (stopped_ || drv_->tx_room() < frames) {
        requeued_.push_front(p);
        q_->backlog_add(p);
        q_->count_requeue();
        netif_schedule(cpu);
        co_return false;
    }
    q_->account_sent(p);
    co_await drv_->hard_start_xmit(cpu, p);
    co_return !stopped_;
}

// fq's dequeue found every flow waiting: its watchdog fires at the earliest flow's time, on this
// CPU, within the qdisc's slack; the same expiry is not armed twice.
// Models: qdisc_watchdog_schedule_range_ns() (net/sched/sch_api.c)
void TxQueue::arm_watchdog(kernel::Cpu& cpu) {
    const engine::Tick at = q_->next_wakeup();
    if (at == 0 || (wd_expiry_ == at && wd_cpu_)) return;
    if (wd_cpu_) wd_cpu_->hrtimer_cancel(wd_handle_);
    wd_cpu_ = &cpu;
    wd_expiry_ = at;
    wd_handle_ = cpu.hrtimer_start_range(std::max(at, cpu.now()), q_->timer_slack(), &TxQueue::qdisc_watchdog, this);
}

// Models: qdisc_watchdog() (net/sched/sch_api.c)
Cycles TxQueue::qdisc_watchdog(kernel::Cpu& cpu, void* ctx, engine::Tick) {
    auto& self = *static_cast<TxQueue*>(ctx);
    self.wd_cpu_ = nullptr;
    self.wd_expiry_ = 0;
    ++self.watchdog_fired_;
    self.netif_schedule(cpu);
    return self.watchdog_cost_;
}

void TxQueue::register_stats(const stats::Scope& s) const {
    q_->register_stats(s);
    s.counter("queue_stops", stops_, "count", "times the driver stopped the tx queue (its ring full: netif_tx_stop_queue)")
        .counter("watchdog", watchdog_fired_, "count", "expiries of the qdisc's watchdog hrtimer (a paced packet due)");
}

} // namespace kdsim::net
