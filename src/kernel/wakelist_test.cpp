// try_to_wake_up's remote path (Linux 6.1 ttwu_queue_wakelist): who pays which part of a wake-up
// and when the woken task runs. Times derived by hand from round_costs() at 1 GHz (1 cycle = 1 ns):
// sched.wakeup 600 (the waker's part), sched.wakeup_activate 400, irq entry 300, exit 200,
// context_switch 2000 + the rq lock's local_irq_disable 3 + local_irq_enable 4, local_irq_save 12,
// local_irq_restore 5.
#include "kernel/cpu.h"
#include "kernel/cpu_test_support.h"
#include "kernel/sched.h"

#include <gtest/gtest.h>

#include <optional>

namespace kdsim::kernel {
namespace {

using engine::PS_PER_NS;
using testing::round_costs;

KernelConfig quiet(bool idle_polling) {
    KernelConfig c;
    c.hz = 100; // first tick at 10 ms, after everything below
    c.preempt = PreemptModel::FULL; // the hog's kernel code is preempted at the IPI's return
    c.idle_polling = idle_polling;
    return c;
}

Cycles sched_cycles(const Cpu& c, CtxKind kind) {
    return c.stats().cycles[static_cast<std::size_t>(kind)][static_cast<std::size_t>(Cat::SCHEDULER)];
}

// CPU 0's waker works 10 us, then try_to_wake_up()s `sleeper` (and `sleeper2` if given) on CPU 1,
// which blocked at once. CPU 1 idles unless `hog` keeps it busy from the start.
struct RemoteTtwu {
    struct Opt {
        bool idle_polling = false;
        bool hog = false;           // a SCHED_NORMAL task spins on CPU 1
        bool fifo_sleeper = false;  // the sleepers are SCHED_FIFO (they preempt the hog)
        bool two = false;           // wake a second sleeper right after the first
        bool other_llc = false;     // CPU 1 is beyond CPU 0's last-level cache
    };
    explicit RemoteTtwu(Opt o) {
        c0.emplace(sim, 0, engine::Clock(1'000'000'000), round_costs(), quiet(o.idle_polling));
        c1.emplace(sim, 1, engine::Clock(1'000'000'000), round_costs(), quiet(o.idle_polling));
        if (o.other_llc) c1->set_sd_llc_id(1);
        const SchedPolicy pol = o.fifo_sleeper ? SchedPolicy::FIFO : SchedPolicy::NORMAL;
        s1 = &c1->create_task("sleeper", pol, o.fifo_sleeper ? 50 : 0, true, sleep_once(*c1, resumed1));
        if (o.two) s2 = &c1->create_task("sleeper2", pol, o.fifo_sleeper ? 50 : 0, true, sleep_once(*c1, resumed2));
        if (o.hog) c1->create_task("hog", SchedPolicy::NORMAL, 0, true, spin(*c1));
        c0->create_task("waker", SchedPolicy::NORMAL, 0, true, waker(*this));
        c0->boot();
        c1->boot();
        sim.run(engine::PS_PER_MS);
    }
    static engine::Task<> sleep_once(Cpu& cpu, Tick& resumed) {
        co_await cpu.block();
        resumed = cpu.now();
    }
    static engine::Task<> spin(Cpu& cpu) { co_await cpu.exec(100'000, Cat::OTHER); }
    static engine::Task<> waker(RemoteTtwu& x) {
        Cpu& cpu = *x.c0;
        co_await cpu.exec(10'000, Cat::OTHER);
        const Cycles before = sched_cycles(cpu, CtxKind::TASK);
        co_await try_to_wake_up(cpu, *x.s1);
        x.waker_done = cpu.now();
        if (x.s2) co_await try_to_wake_up(cpu, *x.s2);
        x.waker_paid = sched_cycles(cpu, CtxKind::TASK) - before;
    }
    engine::Simulation sim{1};
    std::optional<Cpu> c0, c1;
    TaskStruct* s1 = nullptr;
    TaskStruct* s2 = nullptr;
    Tick resumed1 = 0, resumed2 = 0, waker_done = 0;
    Cycles waker_paid = 0; // the waker's SCHEDULER cycles in its try_to_wake_up calls
};

TEST(Wakelist, AnIdleRemoteCpuActivatesTheTaskInItsCallFunctionIpiAndTheWakerPaysOnlyItsPart) {
    // Waker: 10,000 + irq_save 12 + its part 600 = 10,612: the task goes on CPU 1's wake_list,
    // the IPI leaves; + irq_restore 5: the waker goes on at 10,617 (the whole wake-up on the waker
    // would have ended at 11,017). CPU 1: entry 300 + activation 400 + exit 200 = 11,512, then the
    // switch 2007: 13,519, as when the waker did it all and sent a reschedule IPI.
    RemoteTtwu r({});
    EXPECT_EQ(r.waker_done, 10'617 * PS_PER_NS);
    EXPECT_EQ(r.resumed1, 13'519 * PS_PER_NS);
    EXPECT_EQ(r.c1->irq_count(Cpu::CALL_FUNCTION_SINGLE_VECTOR), 1u);
    EXPECT_EQ(r.c1->irq_count(Cpu::RESCHEDULE_VECTOR), 0u);
    EXPECT_EQ(r.waker_paid, 600u);
    EXPECT_EQ(sched_cycles(*r.c1, CtxKind::HARDIRQ), 400u);
}

TEST(Wakelist, APollingIdleCpuGetsNoIpiAndActivatesTheTaskFromItsIdleLoop) {
    // x86 mwait: the flag write wakes CPU 1 at 10,612; do_idle's flush activates (400) at 11,012,
    // the switch (2007) ends at 13,019: the same as the whole wake-up on the waker and a kick.
    RemoteTtwu r({.idle_polling = true});
    EXPECT_EQ(r.waker_done, 10'617 * PS_PER_NS);
    EXPECT_EQ(r.resumed1, 13'019 * PS_PER_NS);
    EXPECT_EQ(r.c1->stats().hardirqs, 0u);
    EXPECT_EQ(r.waker_paid, 600u);
    // task context on CPU 1: the switch to idle when the sleeper blocks at boot, the activation
    // in the idle task, the switch to the sleeper and, when it ends, to idle again
    EXPECT_EQ(sched_cycles(*r.c1, CtxKind::TASK), 2000u + 400u + 2000u + 2000u);
    EXPECT_EQ(sched_cycles(*r.c1, CtxKind::HARDIRQ), 0u);
}

TEST(Wakelist, ABusyRemoteCpuInTheSameCacheIsActivatedByTheWakerAndSentAReschedIpi) {
    // CPU 1 runs the hog (nr_running 1): ttwu_queue activates on the waker, 600 + 400, at 11,012;
    // the FIFO sleeper preempts, so the reschedule IPI: entry 300 + exit 200 = 11,512, + 2007.
    RemoteTtwu r({.hog = true, .fifo_sleeper = true});
    EXPECT_EQ(r.waker_done, 11'017 * PS_PER_NS);
    EXPECT_EQ(r.resumed1, 13'519 * PS_PER_NS);
    EXPECT_EQ(r.c1->irq_count(Cpu::RESCHEDULE_VECTOR), 1u);
    EXPECT_EQ(r.c1->irq_count(Cpu::CALL_FUNCTION_SINGLE_VECTOR), 0u);
    EXPECT_EQ(r.waker_paid, 1000u);
    EXPECT_EQ(sched_cycles(*r.c1, CtxKind::HARDIRQ), 0u);
}

TEST(Wakelist, ABusyCpuBeyondTheWakersLastLevelCacheStillGetsTheTaskOnItsWakeList) {
    // !cpus_share_cache: queued however busy CPU 1 is. The call-function IPI at 10,612: entry 300,
    // activation 400 (the FIFO sleeper preempts the hog), exit 200: 11,512, then the switch.
    RemoteTtwu r({.hog = true, .fifo_sleeper = true, .other_llc = true});
    EXPECT_EQ(r.waker_done, 10'617 * PS_PER_NS);
    EXPECT_EQ(r.resumed1, 13'519 * PS_PER_NS);
    EXPECT_EQ(r.c1->irq_count(Cpu::CALL_FUNCTION_SINGLE_VECTOR), 1u);
    EXPECT_EQ(r.c1->irq_count(Cpu::RESCHEDULE_VECTOR), 0u);
    EXPECT_EQ(sched_cycles(*r.c1, CtxKind::HARDIRQ), 400u);
}

TEST(Wakelist, ASecondWakeUpQueuedBeforeTheFirstIsActivatedSharesTheOneIpi) {
    // First: queued at 10,612 (IPI). Waker: restore 5, save 12, its part 600: the second is queued
    // at 11,229 while CPU 1 (entry 300 from 10,612, activation 400 until 11,312) still holds the
    // first on the list: no second IPI. CPU 1 activates both: 11,312 + 400 = 11,712, exit 200:
    // 11,912, the switch to the first: 13,919.
    RemoteTtwu r({.two = true});
    EXPECT_EQ(r.c1->irq_count(Cpu::CALL_FUNCTION_SINGLE_VECTOR), 1u);
    EXPECT_EQ(r.resumed1, 13'919 * PS_PER_NS);
    EXPECT_EQ(sched_cycles(*r.c1, CtxKind::HARDIRQ), 800u);
    EXPECT_EQ(r.waker_paid, 1200u);
    EXPECT_GT(r.resumed2, r.resumed1);
}

TEST(Wakelist, ALocalWakeUpStaysWholeOnTheWaker) {
    // ttwu_queue_cond is false for the waker's own CPU: the waker pays 600 + 400 and nothing is queued.
    // The sleeper blocks at boot (the switch to the waker: 2007 ns), the waker works 10 us: 12,007;
    // irq_save 12, 600, 400: 13,019, irq_restore 5: 13,024. No preemption (the sleeper's vruntime
    // does not lead the waker's ~12 us by the 1 ms granularity): the sleeper runs when the waker ends.
    engine::Simulation sim{1};
    Cpu c0(sim, 0, engine::Clock(1'000'000'000), round_costs(), quiet(false));
    Tick resumed = 0, done = 0;
    Cycles paid = 0;
    TaskStruct& s = c0.create_task("sleeper", SchedPolicy::NORMAL, 0, true, RemoteTtwu::sleep_once(c0, resumed));
    struct W {
        static engine::Task<> body(Cpu& cpu, TaskStruct& t, Tick& done, Cycles& paid) {
            co_await cpu.exec(10'000, Cat::OTHER);
            const Cycles before = sched_cycles(cpu, CtxKind::TASK);
            co_await try_to_wake_up(cpu, t);
            paid = sched_cycles(cpu, CtxKind::TASK) - before;
            done = cpu.now();
        }
    };
    c0.create_task("waker", SchedPolicy::NORMAL, 0, true, W::body(c0, s, done, paid));
    c0.boot();
    sim.run(engine::PS_PER_MS);
    EXPECT_EQ(c0.irq_count(Cpu::CALL_FUNCTION_SINGLE_VECTOR), 0u);
    EXPECT_EQ(done, 13'024 * PS_PER_NS);
    EXPECT_EQ(paid, 1000u);
    EXPECT_EQ(resumed, (13'024 + 2007) * PS_PER_NS);
}

} // namespace
} // namespace kdsim::kernel
