// The load balancer pulling a queued task to an idle CPU (Linux 6.1 kernel/sched/fair.c:
// nohz_balancer_kick -> nohz_idle_balance, and newidle_balance). Times derived by hand from
// round_costs() at 1 GHz (1 cycle = 1 ns) with sched.load_balance = 1000: irq entry 300, exit 200,
// sched.tick 500 + irq.timer_handler 400, softirq_round 100, context_switch 2000 + the rq lock's
// local_irq_disable 3 + local_irq_enable 4. HZ = 100: the ticks come at 10, 20, 30 ms.
#include "kernel/cpu.h"
#include "kernel/cpu_test_support.h"
#include "kernel/sched.h"

#include <gtest/gtest.h>

#include <optional>

namespace kdsim::kernel {
namespace {

using engine::PS_PER_MS;
using engine::PS_PER_NS;

KernelCosts costs() {
    KernelCosts k = testing::round_costs();
    k.load_balance = 1000;
    return k;
}

KernelConfig config(Tick sched_latency) {
    KernelConfig c;
    c.hz = 100;
    c.preempt = PreemptModel::FULL;
    c.sched_latency = sched_latency;
    c.sched_feat_ni_random = false; // every newidle balance runs (no dice)
    return c;
}

// Two CPUs of one sched_domain. Tasks "A" and "B" never block; both start queued on CPU 0.
struct TwoCpus {
    struct Opt {
        Tick sched_latency = 100 * PS_PER_MS; // slice 50 ms: the 10 ms tick does not switch A and B
        bool pinned = false;                  // A and B have no cpus_allowed
        bool blocker = false;                 // CPU 1 runs "C", which works 1 ms and blocks for good
    };
    explicit TwoCpus(Opt o) {
        c0.emplace(sim, 0, engine::Clock(1'000'000'000), costs(), config(o.sched_latency));
        c1.emplace(sim, 1, engine::Clock(1'000'000'000), costs(), config(o.sched_latency));
        rd.span = {&*c0, &*c1};
        c0->set_root_domain(&rd, sim.rng("c0"));
        c1->set_root_domain(&rd, sim.rng("c1"));
        a = &c0->create_task("A", SchedPolicy::NORMAL, 0, true, spin(*this, 0));
        b = &c0->create_task("B", SchedPolicy::NORMAL, 0, true, spin(*this, 1));
        if (!o.pinned) a->cpus_allowed = b->cpus_allowed = {&*c0, &*c1};
        if (o.blocker) c1->create_task("C", SchedPolicy::NORMAL, 0, true, work_then_block(*c1));
        c0->boot();
        c1->boot();
    }
    // Spins in 1,000-cycle execs on whichever CPU it is on (cpus_allowed's contract: the CPU is
    // read from the task after every await); records when it first finished one on CPU 1.
    static engine::Task<> spin(TwoCpus& x, int which) {
        TaskStruct* self = which == 0 ? x.a : x.b;
        for (;;) {
            co_await self->cpu->exec(1000, Cat::OTHER);
            if (self->cpu == &*x.c1 && !x.first_on_c1[which]) x.first_on_c1[which] = self->cpu->now();
        }
    }
    static engine::Task<> work_then_block(Cpu& cpu) {
        co_await cpu.exec(1'000'000, Cat::OTHER);
        co_await cpu.block();
    }
    engine::Simulation sim{1};
    std::optional<Cpu> c0, c1;
    RootDomain rd;
    TaskStruct* a = nullptr;
    TaskStruct* b = nullptr;
    Tick first_on_c1[2] = {0, 0};
};

TEST(LoadBalance, TheFirstTickWithTwoRunnableKicksTheIdleCpuWhichPullsTheQueuedTaskInItsSchedSoftirq) {
    TwoCpus x({});
    x.sim.run(12 * PS_PER_MS);
    // CPU 0's tick at 10 ms: entry 300, then scheduler_tick sees nr_running 2 and sends the kick
    // (10,000,300). CPU 1 is in its own tick's hardirq then (10,000,000 + 300 + 900 + 200 =
    // 10,001,400); the call-function IPI follows: entry 300 + exit 200 = 10,001,900; SCHED_SOFTIRQ:
    // round 100 + local_irq_enable 4 + load_balance 1000 = 10,003,004, when B (queued, never ran:
    // not cache-hot) moves; local_irq_disable 3. The softirq's return to idle switches to it:
    // 2,007; its first exec: 1,000 -> 10,006,014.
    EXPECT_EQ(x.b->cpu, &*x.c1);
    EXPECT_EQ(x.b->nr_balance_moves, 1u);
    EXPECT_EQ(x.first_on_c1[1], 10'006'014 * PS_PER_NS);
    EXPECT_EQ(x.a->cpu, &*x.c0); // the running task is never the one pulled
    EXPECT_EQ(x.c0->stats().nohz_kicks, 1u);
    EXPECT_EQ(x.c1->stats().lb_idle, 1u);
    EXPECT_EQ(x.c1->stats().lb_pulled, 1u);
}

TEST(LoadBalance, ATaskThatRanWithinTheMigrationCostIsNotPulledButIsOnceItHasWaitedLonger) {
    // Slice 3 ms: the 10 ms tick switches CPU 0 from A to B (at 10,001,400 ns), so when CPU 1's
    // balance looks (10,003,004) the queued A ran 1.6 us before: cache-hot (500 us), not pulled.
    // At 20 ms B's vruntime (20 ms - 10.0014 ms run) is still below A's (10.0014 ms): B goes on,
    // A has waited 10 ms, and the balance after that tick pulls it.
    TwoCpus x({.sched_latency = 6 * PS_PER_MS});
    x.sim.run(15 * PS_PER_MS);
    EXPECT_EQ(x.c1->stats().lb_idle, 1u);
    EXPECT_EQ(x.a->nr_balance_moves + x.b->nr_balance_moves, 0u);
    EXPECT_EQ(x.a->cpu, &*x.c0);
    x.sim.run(25 * PS_PER_MS);
    EXPECT_EQ(x.c1->stats().lb_idle, 2u);
    EXPECT_EQ(x.a->nr_balance_moves, 1u);
    EXPECT_EQ(x.a->cpu, &*x.c1);
    EXPECT_EQ(x.b->cpu, &*x.c0);
}

TEST(LoadBalance, APinnedTaskIsNeverPulled) {
    TwoCpus x({.pinned = true});
    x.sim.run(100 * PS_PER_MS);
    EXPECT_EQ(x.a->cpu, &*x.c0);
    EXPECT_EQ(x.b->cpu, &*x.c0);
    EXPECT_EQ(x.a->nr_balance_moves + x.b->nr_balance_moves, 0u);
    EXPECT_GE(x.c1->stats().lb_idle, 1u); // the balances ran, and found every task pinned
    EXPECT_EQ(x.c1->stats().lb_pulled, 0u);
}

TEST(LoadBalance, ACpuAboutToIdlePullsAQueuedTaskInNewidleBalanceAndPaysForIt) {
    // C blocks on CPU 1 at 1 ms; schedule() finds nothing and newidle_balance pulls B (queued on
    // CPU 0 behind A, never ran). B pays the balance 1,000 and the switch 2,007 before its first
    // exec of 1,000: 1,000,000 + 4,007 ns.
    TwoCpus x({.blocker = true});
    x.sim.run(2 * PS_PER_MS);
    EXPECT_EQ(x.b->cpu, &*x.c1);
    EXPECT_EQ(x.first_on_c1[1], 1'004'007 * PS_PER_NS);
    EXPECT_EQ(x.c1->stats().lb_newidle, 1u);
    EXPECT_EQ(x.c1->stats().lb_pulled, 1u);
    EXPECT_EQ(x.c0->stats().nohz_kicks, 0u); // no tick yet
}

// CPU 0: "A", allowed on CPUs 0-1 and never blocking, and "P", pinned, which sleeps until 100 us
// before each tick (9.9, 19.9, 29.9 ms), works 200 us and sleeps again. P's wake-up preempts A (its
// vruntime trails A's by sched_latency / 2 = 3 ms, beyond the 1 ms wake-up granularity), so at
// every tick A waits on CPU 0, switched out about 100 us before: cache-hot. CPU 1 is idle.
struct HotEveryTick {
    HotEveryTick() {
        c0.emplace(sim, 0, engine::Clock(1'000'000'000), costs(), config(6 * PS_PER_MS));
        c1.emplace(sim, 1, engine::Clock(1'000'000'000), costs(), config(6 * PS_PER_MS));
        rd.span = {&*c0, &*c1};
        c0->set_root_domain(&rd, sim.rng("c0"));
        c1->set_root_domain(&rd, sim.rng("c1"));
        c0->create_task("P", SchedPolicy::NORMAL, 0, true, periodic(*c0));
        a = &c0->create_task("A", SchedPolicy::NORMAL, 0, true, spin(*this));
        a->cpus_allowed = {&*c0, &*c1};
        c0->boot();
        c1->boot();
    }
    static engine::Task<> periodic(Cpu& cpu) {
        for (Tick k = 1;; ++k) {
            co_await schedule_hrtimeout_range(cpu, k * 10 * PS_PER_MS - 100 * engine::PS_PER_US, 0);
            co_await cpu.exec(200'000, Cat::OTHER);
        }
    }
    static engine::Task<> spin(HotEveryTick& x) {
        for (;;) co_await x.a->cpu->exec(1000, Cat::OTHER);
    }
    engine::Simulation sim{1};
    std::optional<Cpu> c0, c1;
    RootDomain rd;
    TaskStruct* a = nullptr;
};

TEST(LoadBalance, ACacheHotTaskIsPulledOnceCpuIdleBalancesFailedMoreThanCacheNiceTries) {
    // The kicks at 10, 20 and 30 ms each give CPU 1 a CPU_IDLE balance; the first two find A hot and
    // fail (nr_balance_failed 1, then 2); the third, with 2 > cache_nice_tries 1, takes A hot as it is.
    HotEveryTick x;
    x.sim.run(25 * PS_PER_MS);
    EXPECT_EQ(x.c1->stats().lb_idle, 2u);
    EXPECT_EQ(x.a->nr_balance_moves, 0u);
    EXPECT_EQ(x.a->cpu, &*x.c0);
    x.sim.run(35 * PS_PER_MS);
    EXPECT_EQ(x.c1->stats().lb_idle, 3u);
    EXPECT_EQ(x.a->nr_balance_moves, 1u);
    EXPECT_EQ(x.a->cpu, &*x.c1);
}

// CPU 0: "A", allowed on CPUs 0-1, created first, so it runs from boot; and "P", pinned, queued
// behind it. Both never block; the slice is 50 ms (sched_latency 100 ms), so at the ticks of 10,
// 20, 30 and 40 ms A is the running task. Every balance CPU 1 runs then finds CPU 0 with two
// runnable, P pinned and A running: no task to pull, and not all pinned (A's mask has CPU 1), so a
// failure. A does `work` execs of 1,000 cycles (0: forever) of category CRYPTO, then blocks for good.
struct RunningEveryTick {
    struct Opt {
        bool a_pinned = false;
        long work = 0;
        PreemptModel preempt = PreemptModel::FULL;
        bool cond_resched = false; // A calls cond_resched() after each exec (10 cycles unless it switches)
    };
    explicit RunningEveryTick(Opt o) : work(o.work), resched(o.cond_resched) {
        KernelConfig k = config(100 * PS_PER_MS);
        k.preempt = o.preempt;
        c0.emplace(sim, 0, engine::Clock(1'000'000'000), costs(), k);
        c1.emplace(sim, 1, engine::Clock(1'000'000'000), costs(), k);
        rd.span = {&*c0, &*c1};
        c0->set_root_domain(&rd, sim.rng("c0"));
        c1->set_root_domain(&rd, sim.rng("c1"));
        a = &c0->create_task("A", SchedPolicy::NORMAL, 0, true, spin_a(*this));
        p = &c0->create_task("P", SchedPolicy::NORMAL, 0, true, spin_p(*c0));
        if (!o.a_pinned) a->cpus_allowed = {&*c0, &*c1};
        c0->boot();
        c1->boot();
    }
    // The cpus_allowed contract: the CPU is read from the task after every await.
    static engine::Task<> spin_a(RunningEveryTick& x) {
        for (;;) {
            if (x.work && x.done_execs == x.work) {
                x.finished_at = x.a->cpu->now();
                co_await x.a->cpu->block();
            }
            co_await x.a->cpu->exec(1000, Cat::CRYPTO);
            ++x.done_execs;
            if (x.a->cpu == &*x.c1 && !x.first_on_c1) x.first_on_c1 = x.a->cpu->now();
            if (x.resched) co_await cond_resched(*x.a->cpu);
        }
    }
    static engine::Task<> spin_p(Cpu& cpu) {
        for (;;) co_await cpu.exec(1000, Cat::OTHER);
    }
    Cycles crypto_cycles(const Cpu& c) const {
        return c.stats().cycles[static_cast<std::size_t>(CtxKind::TASK)][static_cast<std::size_t>(Cat::CRYPTO)];
    }
    long work = 0;
    bool resched = false;
    long done_execs = 0;
    Tick finished_at = 0;
    Tick first_on_c1 = 0;
    engine::Simulation sim{1};
    std::optional<Cpu> c0, c1;
    RootDomain rd;
    TaskStruct* a = nullptr;
    TaskStruct* p = nullptr;
};

TEST(ActiveBalance, ARunningTaskIsPushedByTheStopperAtTheFourthFailedBalanceThatIsMoreThanCacheNiceTriesPlusTwo) {
    // The balances at 10, 20 and 30 ms fail (nr_balance_failed 1, 2, 3): A runs, P is pinned. A
    // threshold of cache_nice_tries + 1 would push at 30 ms.
    RunningEveryTick x({});
    x.sim.run(35 * PS_PER_MS);
    EXPECT_EQ(x.c1->stats().lb_idle, 3u);
    EXPECT_EQ(x.c0->stats().active_balances, 0u);
    EXPECT_EQ(x.a->cpu, &*x.c0);
    EXPECT_EQ(x.c0->stopper()->nr_switches, 0u);
    // The fourth, at 40 ms, fails too, and 4 > 1 + 2: CPU 1 wakes CPU 0's stopper. A threshold of
    // cache_nice_tries + 3 would push nothing here (and at 50 ms, when A's slice ends, P runs and the
    // queued A, hot but past cache_nice_tries, would be pulled, not pushed).
    // The times: CPU 1's balance decides at 40,003,004 (as the first LoadBalance test at 10 ms); its
    // try_to_wake_up of the stopper: local_irq_save 12 + wakeup 600 + wakeup_activate 400, the
    // reschedule IPI sent at 40,004,016. CPU 0 takes it (entry 300 + exit 200: 40,004,516) from A,
    // which PREEMPT=full preempts there: the stopper's switch 2,007 (40,006,523), local_irq_disable
    // 3, the detach 400 and the attach 400 (40,007,326): A is enqueued on CPU 1, which is idle and
    // gets the reschedule IPI: entry 300 + exit 200 + the switch to A 2,007 = 40,009,833. A first
    // completes the exec it was in when CPU 0's IPI came. A's execs on CPU 0: from boot (no switch:
    // boot makes it current), interrupted by CPU 0's four ticks (1,400 each) until the IPI at
    // 40,004,016: by then 40,004,016 - 4 * 1,400 = 39,998,416 ns of its work were done, so 416 of
    // the exec in flight, 584 left: 40,010,417.
    x.sim.run(45 * PS_PER_MS);
    EXPECT_EQ(x.c1->stats().lb_idle, 4u);
    EXPECT_EQ(x.c0->stats().active_balances, 1u);
    EXPECT_EQ(x.c1->stats().lb_pulled, 0u); // pushed, not pulled
    EXPECT_EQ(x.a->cpu, &*x.c1);
    EXPECT_EQ(x.a->nr_balance_moves, 1u);
    EXPECT_EQ(x.first_on_c1, 40'010'417 * PS_PER_NS);
    EXPECT_EQ(x.c0->stopper()->nr_switches, 1u);
    // The stopper walked cfs_tasks from the tail: P (queued since it was made) first, which its mask
    // keeps on CPU 0, then A.
    EXPECT_EQ(x.p->cpu, &*x.c0);
    EXPECT_EQ(x.p->nr_balance_moves, 0u);
}

TEST(ActiveBalance, APinnedRunningTaskIsNeverPushedAndItsCpuStopperNeverRuns) {
    RunningEveryTick x({.a_pinned = true});
    x.sim.run(200 * PS_PER_MS);
    EXPECT_EQ(x.a->cpu, &*x.c0);
    EXPECT_EQ(x.p->cpu, &*x.c0);
    EXPECT_EQ(x.a->nr_balance_moves + x.p->nr_balance_moves, 0u);
    EXPECT_EQ(x.c0->stats().active_balances, 0u);
    EXPECT_EQ(x.c0->stopper()->nr_switches, 0u);
    EXPECT_GE(x.c1->stats().lb_idle, 1u); // the balances ran, and found every task pinned
}

TEST(ActiveBalance, APushedTaskContinuesItsBodyOnTheNewCpuAndDoesItsWorkExactlyOnce) {
    // 45,000 execs of 1,000 cycles: pushed at 40 ms (as above) with 39,998,416 cycles done on CPU 0
    // (584 of an exec left), the rest on CPU 1 from 40,009,833, before its next tick (50 ms):
    // 45,000,000 - 39,998,416 = 5,001,584 ns of work, done at 45,011,417.
    RunningEveryTick x({.work = 45'000});
    x.sim.run(60 * PS_PER_MS);
    EXPECT_EQ(x.done_execs, 45'000);
    EXPECT_EQ(x.crypto_cycles(*x.c0) + x.crypto_cycles(*x.c1), 45'000'000u);
    EXPECT_EQ(x.crypto_cycles(*x.c0), 39'998'416u);
    EXPECT_EQ(x.a->cpu, &*x.c1);
    EXPECT_EQ(x.finished_at, 45'011'417 * PS_PER_NS);
}

TEST(ActiveBalance, TheSameSeedGivesTheSameRun) {
    RunningEveryTick x({}), y({});
    x.sim.run(100 * PS_PER_MS);
    y.sim.run(100 * PS_PER_MS);
    EXPECT_EQ(x.first_on_c1, y.first_on_c1);
    EXPECT_EQ(x.done_execs, y.done_execs);
    EXPECT_EQ(x.c0->stats().context_switches, y.c0->stats().context_switches);
    EXPECT_EQ(x.c1->stats().context_switches, y.c1->stats().context_switches);
}

TEST(ActiveBalance, UnderVoluntaryTheStopperPreemptsARunningKernelTaskOnlyAtItsCondResched) {
    // PREEMPT_VOLUNTARY: the reschedule IPI's return to kernel code does not preempt. A loops exec
    // 1,000 + cond_resched 10. CPU 1's side is as under full: the IPI sent at 40,004,016, when A's
    // own time is 40,004,016 - 4 * 1,400 = 39,998,416 = 39,602 loops of 1,010 + 396: 396 into an
    // exec. After the IPI (500): 604 left (40,005,120), cond_resched 10 (40,005,130), where it
    // switches: the stopper 2,007, 3 + 400 + 400 (40,007,940), CPU 1's IPI 500 and switch 2,007
    // (40,010,447), then A's next exec: 40,011,447.
    RunningEveryTick x({.preempt = PreemptModel::VOLUNTARY, .cond_resched = true});
    x.sim.run(45 * PS_PER_MS);
    EXPECT_EQ(x.c0->stats().active_balances, 1u);
    EXPECT_EQ(x.a->cpu, &*x.c1);
    EXPECT_EQ(x.first_on_c1, 40'011'447 * PS_PER_NS);
}

TEST(ActiveBalance, UnderVoluntaryAKernelTaskWithoutAPreemptionPointKeepsTheWokenStopperWaiting) {
    // As 6.1: the stopper is runnable on CPU 0 from 40 ms, but A never reaches a preemption point.
    RunningEveryTick x({.preempt = PreemptModel::VOLUNTARY});
    x.sim.run(100 * PS_PER_MS);
    EXPECT_EQ(x.c0->stats().active_balances, 0u);
    EXPECT_EQ(x.c0->stopper()->nr_switches, 0u);
    EXPECT_EQ(x.c0->stopper()->state, TaskState::RUNNABLE);
    EXPECT_EQ(x.a->cpu, &*x.c0);
}

} // namespace
} // namespace kdsim::kernel
