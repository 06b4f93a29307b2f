// NAPI and the per-CPU softnet data (net/core/dev.c, as of Linux 6.8+).
//
// ____napi_schedule (interrupts off) puts a napi_struct on the CPU's poll_list and raises
// NET_RX_SOFTIRQ unless net_rx_action is running on this CPU (sd->in_net_rx_action: it will
// find the instance itself). net_rx_action: budget = netdev_budget (300), time_limit = jiffies
// + usecs_to_jiffies(netdev_budget_usecs) with netdev_budget_usecs = 2 * USEC_PER_SEC / HZ, i.e.
// two jiffies. It splices the poll_list into a local list and polls each instance ONCE
// (napi_poll -> __napi_poll -> n->poll(n, n->weight), weight NAPI_POLL_WEIGHT 64, not capped by
// what is left of the budget); an instance that used its whole weight goes on a repoll list, one
// that did less has called napi_complete_done. After each poll: if budget <= 0 or
// time_after_eq(jiffies, time_limit), time_squeeze is counted (/proc/net/softnet_stat column
// 3) and the loop stops. When the local list empties: with nothing to repoll, instances
// scheduled meanwhile are spliced in and polled (goto start); otherwise the loop stops. What is
// left (unpolled, newly scheduled, then the repoll list) goes back on the poll_list and
// NET_RX_SOFTIRQ is raised again, so handle_softirqs' restart limits (2 ms, 10 restarts,
// need_resched) and the ksoftirqd hand-off act between polls of a busy instance.
#pragma once

#include "engine/task.h"
#include "kernel/cpu.h"

#include <cstdint>

namespace kdsim::net {

struct NapiStruct {
    // The driver's poll: processes at most `budget` packets, returns how many. When it did
    // less than `budget` it must call napi_complete_done() before returning.
    using Poll = engine::Task<int> (*)(kernel::Cpu& cpu, void* ctx, int budget);
    Poll poll = nullptr;
    void* ctx = nullptr;
    int weight = 64; // NAPI_POLL_WEIGHT
    bool scheduled = false; // NAPI_STATE_SCHED
    NapiStruct* next = nullptr;
};

struct SoftnetStats {
    std::uint64_t net_rx_actions = 0; // calls of net_rx_action
    std::uint64_t polls = 0;          // napi_poll calls
    std::uint64_t processed = 0;      // packets the polls returned
    std::uint64_t repolls = 0;        // polls that used their whole weight (the instance stays scheduled)
    std::uint64_t time_squeeze = 0;   // net_rx_action stopped by the budget or the time limit
    std::uint64_t reraises = 0;       // net_rx_action left work and raised NET_RX_SOFTIRQ again
};

// A list of napi_structs linked through `next` (list_head in the kernel).
struct NapiList {
    NapiStruct* head = nullptr;
    NapiStruct* tail = nullptr;
    bool empty() const { return !head; }
    void add_tail(NapiStruct& n);
    NapiStruct* pop_front();
    void splice_tail(NapiList& other); // `other` ends up empty
};

class Softnet {
public:
    static constexpr int NETDEV_BUDGET = 300;         // net.core.netdev_budget
    static constexpr std::uint64_t BUDGET_JIFFIES = 2; // usecs_to_jiffies(net.core.netdev_budget_usecs)

    // Registers net_rx_action as this CPU's NET_RX_SOFTIRQ handler.
    explicit Softnet(kernel::Cpu& cpu);
    kernel::Cpu& cpu() { return cpu_; }

    // ____napi_schedule with interrupts already off; no-op if already scheduled
    // (napi_schedule_prep).
    void napi_schedule_irqoff(NapiStruct& n);
    // napi_schedule: local_irq_save around the above.
    engine::Task<> napi_schedule(NapiStruct& n);
    const SoftnetStats& stats() const { return stats_; }
    // Registers /proc/net/softnet_stat's figures for this CPU under `s` (<machine>/cpu<N>/softnet).
    void register_stats(const stats::Scope& s) const {
        s.counter("net_rx_actions", stats_.net_rx_actions, "count", "net_rx_action runs")
            .counter("polls", stats_.polls, "count", "NAPI instance polls")
            .counter("processed", stats_.processed, "count", "packets the polls processed")
            .counter("time_squeeze", stats_.time_squeeze, "count", "net_rx_action runs that ran out of budget or time with work left");
    }

private:
    static engine::Task<> net_rx_action(kernel::Cpu& cpu, void* ctx);
    // napi_poll's accounting after the instance's poll (net_rx_action awaits the poll itself, in
    // its frame) did `work`: the budget spent; true when the instance must be repolled.
    bool napi_poll_done(NapiStruct& n, int work, int& budget);

    kernel::Cpu& cpu_;
    NapiList poll_list_;
    bool in_net_rx_action_ = false;
    SoftnetStats stats_;
};

// The instance leaves the poll list state; the driver re-enables its interrupt afterwards.
// Models: napi_complete_done() (net/core/dev.c)
inline void napi_complete_done(NapiStruct& n) { n.scheduled = false; }

} // namespace kdsim::net
