// NAPI and the per-CPU softnet data (net/core/dev.c): a device or a tunnel peer schedules its
// napi_struct on the current CPU's poll list (napi_schedule: local_irq_save, list_add_tail,
// __raise_softirq_irqoff(NET_RX_SOFTIRQ)); net_rx_action polls the list in order, each
// instance at most `weight` packets per call, within netdev_budget packets and
// netdev_budget_usecs; an instance that used its whole weight goes to the tail; when the
// budget or the time runs out with work left, the softirq is re-raised and time_squeeze
// counted (/proc/net/softnet_stat column 3).
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
    bool scheduled = false;
    NapiStruct* next = nullptr;
};

struct SoftnetStats {
    std::uint64_t net_rx_actions = 0;
    std::uint64_t polls = 0;
    std::uint64_t processed = 0;
    std::uint64_t time_squeeze = 0;
};

class Softnet {
public:
    static constexpr int NETDEV_BUDGET = 300; // net.core.netdev_budget
    // net.core.netdev_budget_usecs defaults to 2 * USEC_PER_SEC / HZ: two ticks.

    // Registers net_rx_action as this CPU's NET_RX_SOFTIRQ handler.
    explicit Softnet(kernel::Cpu& cpu);
    kernel::Cpu& cpu() { return cpu_; }

    // ____napi_schedule with interrupts already off; no-op if already scheduled.
    void napi_schedule_irqoff(NapiStruct& n);
    // napi_schedule: local_irq_save around the above.
    engine::Task<> napi_schedule(NapiStruct& n);
    const SoftnetStats& stats() const { return stats_; }

private:
    static engine::Task<> net_rx_action(kernel::Cpu& cpu, void* ctx);

    kernel::Cpu& cpu_;
    NapiStruct* head_ = nullptr;
    NapiStruct* tail_ = nullptr;
    SoftnetStats stats_;
};

// napi_complete_done: the instance leaves the poll list state; the driver re-enables its
// interrupt afterwards.
inline void napi_complete_done(NapiStruct& n) { n.scheduled = false; }

} // namespace kdsim::net
