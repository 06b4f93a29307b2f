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

} // namespace
} // namespace kdsim::kernel
