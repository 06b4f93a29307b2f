// The qdisc layer of a device's transmit queue (net/core/dev.c __dev_xmit_skb, net/sched/
// sch_generic.c qdisc_run / __qdisc_run / qdisc_restart / sch_direct_xmit / dev_requeue_skb,
// pfifo_fast, noqueue; sch_fq.h has fq). __dev_queue_xmit enqueues to the root qdisc of the
// device's tx queue (one: a single-queue NIC, TCQ_F_ONETXQUEUE), then runs it on the calling
// CPU unless another run is in progress (qdisc_run_begin): each qdisc_restart dequeues one skb
// and hands it to the driver, at most dev_tx_weight (64) per run; a run that used its quota
// reschedules itself (__netif_schedule: the qdisc on this CPU's softnet output_queue, NET_TX
// raised; net_tx_action runs it). A driver that stops its queue (netif_tx_stop_queue: the ring
// is full) ends the runs; its tx completion wakes it (netif_tx_wake_queue -> __netif_schedule).
// pfifo_fast is bypassed when empty (TCQ_F_CAN_BYPASS: sch_direct_xmit at once). A full qdisc
// drops the skb (qdisc_drop: NET_XMIT_DROP, the skb freed; TCP finds it lost like any other).
// Not modelled: bulk dequeue (try_bulk_dequeue_skb with BQL), multiqueue (mq), the busylock.
#pragma once

#include "engine/task.h"
#include "kernel/cpu.h"
#include "net/config.h"
#include "net/net_costs.h"
#include "net/packet.h"
#include "stats/registry.h"

#include <array>
#include <cstdint>
#include <memory>
#include <vector>

namespace kdsim::net {

// A FIFO that grows (doubling) only past its high-water mark: no allocation per packet.
template <class T>
class Fifo {
public:
    bool empty() const { return n_ == 0; }
    std::size_t size() const { return n_; }
    T& front() { return v_[head_]; }
    const T& front() const { return v_[head_]; }
    const T& back() const { return v_[(head_ + n_ - 1) % v_.size()]; }
    void push_back(const T& x) {
        if (n_ == v_.size()) grow();
        v_[(head_ + n_) % v_.size()] = x;
        ++n_;
    }
    void push_front(const T& x) { // dev_requeue_skb: back at the head
        if (n_ == v_.size()) grow();
        head_ = (head_ + v_.size() - 1) % v_.size();
        v_[head_] = x;
        ++n_;
    }
    T pop_front() {
        T x = v_[head_];
        head_ = (head_ + 1) % v_.size();
        --n_;
        return x;
    }

private:
    void grow() {
        std::vector<T> bigger(std::max<std::size_t>(2 * v_.size(), 16));
        for (std::size_t i = 0; i < n_; ++i) bigger[i] = v_[(head_ + i) % v_.size()];
        v_ = std::move(bigger);
        head_ = 0;
    }
    std::vector<T> v_;
    std::size_t head_ = 0, n_ = 0;
};
using SkbQueue = Fifo<Packet>;

// tc -s qdisc's figures of a qdisc.
struct QdiscStats {
    std::uint64_t bytes = 0, packets = 0; // sent (bstats): handed to the driver
    std::uint64_t drops = 0;              // qdisc_drop: the queue (or the flow) was full
    std::uint64_t requeues = 0;           // skbs given back by a busy driver (dev_requeue_skb)
    std::uint64_t enqueued = 0;           // skbs enqueued (bypassed ones are not)
    std::uint64_t bypassed = 0;           // skbs sent at once past an empty qdisc (TCQ_F_CAN_BYPASS)
    std::uint64_t qlen_hw = 0, backlog_hw = 0; // the most packets and bytes it held at once
};

// A queueing discipline (struct Qdisc and its Qdisc_ops).
class Qdisc {
public:
    virtual ~Qdisc() = default;
    // ->enqueue at `now`: false when dropped (counted; the caller frees the skb).
    virtual bool enqueue(const Packet& p, engine::Tick now) = 0;
    // ->dequeue at `now`: true with the next skb to send in `out`. A pacing qdisc returns false
    // while packets wait for their time; next_wakeup() then says when (its watchdog's expiry).
    virtual bool dequeue(engine::Tick now, Packet& out) = 0;
    virtual engine::Tick next_wakeup() const { return 0; }
    // The cycles of one ->enqueue and of one ->dequeue that returns an skb.
    virtual Cycles enqueue_cost() const = 0;
    virtual Cycles dequeue_cost() const = 0;
    // TCQ_F_CAN_BYPASS: an empty qdisc may be skipped.
    virtual bool can_bypass() const { return false; }
    // The slack of the watchdog hrtimer (qdisc_watchdog_schedule_range_ns).
    virtual engine::Tick timer_slack() const { return 0; }
    virtual const char* kind() const = 0;
    // The qdisc's own figures beside the common ones (fq's flows, throttled, ...).
    virtual void register_own_stats(const stats::Scope&) const {}

    std::size_t qlen() const { return qlen_; }
    std::uint64_t backlog() const { return backlog_; }
    const QdiscStats& stats() const { return st_; }
    void register_stats(const stats::Scope& s) const;

    // The queue's length and backlog (q.qlen, qstats.backlog): what ->enqueue adds and ->dequeue
    // takes, and an skb requeued at the head.
    void backlog_add(const Packet& p);
    void backlog_sub(const Packet& p);
    void account_sent(const Packet& p) {
        st_.bytes += p.len;
        st_.packets += std::max<std::uint32_t>(p.gso_segs, 1);
    }
    void count_requeue() { ++st_.requeues; }
    void count_bypass() { ++st_.bypassed; }
    void count_enqueue() { ++st_.enqueued; }

protected:
    bool drop() {
        ++st_.drops;
        return false;
    }
    QdiscStats st_;

private:
    std::size_t qlen_ = 0;
    std::uint64_t backlog_ = 0;
};

// The qdisc costs of a profile ([net] pfifo_fast_enqueue ... net_tx_action).
struct QdiscCosts {
    Cycles pfifo_fast_enqueue = 0, pfifo_fast_dequeue = 0;
    Cycles fq_enqueue = 0, fq_dequeue = 0;
    Cycles net_tx_action = 0; // per NET_TX_SOFTIRQ run: the output_queue splice, the root lock
    Cycles qdisc_watchdog = 0; // the watchdog hrtimer's callback (hardirq): __netif_schedule
};

// pfifo_fast: three bands, band 0 first; prio2band maps skb->priority (TC_PRIO_CONTROL: band 0,
// best effort: band 1, bulk: band 2); at most txqueuelen packets in all.
// Models: pfifo_fast_enqueue(), pfifo_fast_dequeue() (net/sched/sch_generic.c)
class PfifoFast final : public Qdisc {
public:
    PfifoFast(std::uint32_t limit, const QdiscCosts& c) : limit_(limit), costs_(c) {}
    static constexpr std::array<std::uint8_t, 16> PRIO2BAND{1, 2, 2, 2, 1, 2, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1};
    bool enqueue(const Packet& p, engine::Tick now) override;
    bool dequeue(engine::Tick now, Packet& out) override;
    Cycles enqueue_cost() const override { return costs_.pfifo_fast_enqueue; }
    Cycles dequeue_cost() const override { return costs_.pfifo_fast_dequeue; }
    bool can_bypass() const override { return true; }
    const char* kind() const override { return "pfifo_fast"; }

private:
    std::uint32_t limit_;
    QdiscCosts costs_;
    std::array<SkbQueue, 3> band_;
};

class TxQueue;
class TcpEndpoint;

// The per-CPU softnet output_queue and NET_TX_SOFTIRQ (net_tx_action runs every qdisc on it).
// Models: net_tx_action() (net/core/dev.c)
class NetTx {
public:
    NetTx(kernel::Cpu& cpu, Cycles net_tx_action);
    kernel::Cpu& cpu() { return cpu_; }
    // __netif_schedule's second half: the queue on this CPU's list, NET_TX pending (raised from
    // interrupt context: runs at its exit; else ksoftirqd is woken).
    void schedule(TxQueue& q);
    std::uint64_t runs() const { return runs_; }
    // tcp_wfree's tasklet_schedule of this CPU's tsq_tasklet: the socket's TSQ handler runs in
    // TASKLET_SOFTIRQ (tcp_tasklet_func).
    void tsq_schedule(TcpEndpoint& ep);

private:
    static engine::Task<> net_tx_action(kernel::Cpu& cpu, void* ctx);
    static engine::Task<> tcp_tasklet_func(kernel::Cpu& cpu, void* ctx);
    std::vector<TcpEndpoint*> tsq_, tsq_running_;
    kernel::Cpu& cpu_;
    Cycles cost_;
    std::vector<TxQueue*> output_queue_, running_;
    std::uint64_t runs_ = 0;
};

// What the qdisc layer needs of the device below it.
class TxDriver {
public:
    // Frames the driver's ring can take now (the skb's segments each take one).
    virtual std::size_t tx_room() const = 0;
    // ndo_start_xmit of one skb (validate_xmit_skb's segmentation first when the device needs
    // it), in the caller's context.
    virtual engine::Task<> hard_start_xmit(kernel::Cpu& cpu, const Packet& p) = 0;
    // The driver freed a transmitted skb (napi_consume_skb at tx completion): its destructor.
    virtual void skb_free(kernel::Cpu& cpu, const Packet& p) = 0;

protected:
    ~TxDriver() = default;
};

// A device's tx queue (struct netdev_queue) with its root qdisc.
class TxQueue {
public:
    static constexpr int DEV_TX_WEIGHT = 64; // net.core.dev_weight * dev_weight_tx_bias

    TxQueue(std::unique_ptr<Qdisc> q, Cycles watchdog_cost) : q_(std::move(q)), watchdog_cost_(watchdog_cost) {}
    Qdisc& qdisc() { return *q_; }
    const Qdisc& qdisc() const { return *q_; }
    // The driver below and the per-CPU output queues of the machine (indexed by CPU number).
    void attach(TxDriver& drv, std::vector<NetTx*> per_cpu) {
        drv_ = &drv;
        net_tx_ = std::move(per_cpu);
    }

    // __dev_xmit_skb from __dev_queue_xmit, BH disabled: bypass, or enqueue and qdisc_run.
    // False: the qdisc dropped it (NET_XMIT_DROP).
    engine::Task<bool> dev_xmit_skb(kernel::Cpu& cpu, const Packet& p);
    // qdisc_run: dequeue into the driver while it takes skbs, at most DEV_TX_WEIGHT.
    engine::Task<> qdisc_run(kernel::Cpu& cpu);

    // The driver's flow control (netif_tx_stop_queue / netif_tx_wake_queue); waking from `cpu`'s
    // tx completion schedules the qdisc there.
    void netif_tx_stop_queue() { stopped_ = true; }
    void netif_tx_wake_queue(kernel::Cpu& cpu);
    bool stopped() const { return stopped_; }
    std::uint64_t stops() const { return stops_; }
    void count_stop() { ++stops_; }
    // __netif_schedule: once until net_tx_action takes it (__QDISC_STATE_SCHED).
    void netif_schedule(kernel::Cpu& cpu);
    void clear_scheduled() { scheduled_ = false; }
    void register_stats(const stats::Scope& s) const;
    // The driver's tx completion freed `p` (on `cpu`, in its interrupt).
    void skb_free(kernel::Cpu& cpu, const Packet& p) { drv_->skb_free(cpu, p); }

private:
    // qdisc_restart: one skb from the requeued slot or the qdisc to the driver; false when
    // nothing more can go now.
    engine::Task<bool> qdisc_restart(kernel::Cpu& cpu);
    engine::Task<> run_quota(kernel::Cpu& cpu); // __qdisc_run, the run already ours
    // sch_direct_xmit: to the driver, or back to the head of the queue when it has no room.
    engine::Task<bool> sch_direct_xmit(kernel::Cpu& cpu, const Packet& p);
    void arm_watchdog(kernel::Cpu& cpu);
    static Cycles qdisc_watchdog(kernel::Cpu& cpu, void* ctx, engine::Tick expiry);

    std::unique_ptr<Qdisc> q_;
    Cycles watchdog_cost_;
    TxDriver* drv_ = nullptr;
    std::vector<NetTx*> net_tx_;
    SkbQueue requeued_; // q->gso_skb: an skb the driver gave back
    bool stopped_ = false, running_ = false, scheduled_ = false;
    std::uint64_t stops_ = 0;
    // the watchdog hrtimer: its CPU, handle and expiry (0: not armed)
    kernel::Cpu* wd_cpu_ = nullptr;
    std::uint32_t wd_handle_ = 0;
    engine::Tick wd_expiry_ = 0;
    std::uint64_t watchdog_fired_ = 0, net_tx_runs_ = 0;
};

// The root qdisc `cfg` names (NONE and NOQUEUE have none: nullptr). Throws std::invalid_argument
// when the profile lacks its costs.
std::unique_ptr<Qdisc> make_qdisc(const QdiscConfig& cfg, const QdiscCosts& costs);

} // namespace kdsim::net
