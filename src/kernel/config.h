// The kernel policies of one machine as a scenario sets them ([machine.kernel]): the preemption
// model, HZ, the scheduler's and softirq's limits, the watchdog thresholds. Plain data, so that
// system::MachineConfig can hold it without the model (kernel/cpu.h).
#pragma once

#include "engine/time.h"
#include "kernel/types.h"

#include <cstdint>

namespace kdsim::kernel {

using engine::Tick;

// Kernel policies of one machine (scenario [machine.kernel]); defaults are Linux's.
struct KernelConfig {
    PreemptModel preempt = PreemptModel::VOLUNTARY;
    std::uint32_t hz = 250;
    Tick sched_latency = 6 * engine::PS_PER_MS;         // sysctl_sched_latency
    Tick sched_min_granularity = 750 * engine::PS_PER_US; // sysctl_sched_min_granularity
    Tick sched_wakeup_granularity = 1 * engine::PS_PER_MS;
    Tick sched_migration_cost = 500 * engine::PS_PER_US;  // sysctl_sched_migration_cost (task_hot, avg_idle)
    bool sched_feat_ni_random = true; // NI_RANDOM (kernel/sched/features.h): newidle runs in proportion to its success
    Tick max_softirq_time = 2 * engine::PS_PER_MS;       // MAX_SOFTIRQ_TIME
    std::uint32_t max_softirq_restart = 10;              // MAX_SOFTIRQ_RESTART
    Tick rcu_cpu_stall_timeout = 21 * engine::PS_PER_S;  // CONFIG_RCU_CPU_STALL_TIMEOUT
    Tick rcu_exp_cpu_stall_timeout = 21 * engine::PS_PER_S;
    Tick softlockup_thresh = 20 * engine::PS_PER_S;      // 2 * watchdog_thresh
    // Interrupt-masking mechanism (the costs are in KernelCosts):
    bool soft_irq_masking = false; // PowerPC lazy masking: a flag; arrivals are recorded and replayed
    bool pseudo_nmi = false;       // arm64 GIC priority masking: NMI-priority vectors pass the mask
    // The idle loop keeps TIF_POLLING_NRFLAG set while it waits (x86's mwait idle watches the
    // thread flags): a remote wake-up sets TIF_NEED_RESCHED and sends no IPI (set_nr_if_polling,
    // set_nr_and_not_polling). False: the idle CPU sleeps in WFI/HLT/doze with the flag clear and
    // must be sent a reschedule IPI (arm, arm64 and PowerPC e500 in 6.1).
    bool idle_polling = false;
};

} // namespace kdsim::kernel
