// The execution-context machinery of one CPU, on a 1 GHz clock (1 cycle = 1 ns) with round
// costs, so that every expected time is a sum worked out by hand in the test.
#include "kernel/cpu.h"
#include "kernel/cpu_test_support.h"

#include "kernel/irqflags.h"
#include "kernel/sched.h"
#include "kernel/softirq.h"

#include <gtest/gtest.h>

#include <optional>
#include <stdexcept>
#include <tuple>
#include <vector>

namespace kdsim::kernel {

struct CpuTestAccess {
    // np_mark_due() as kept in np_due_, and as its definition computes it from the fields.
    static bool np_due(const Cpu& c) { return c.np_mark_due(); }
    static bool np_due_by_definition(const Cpu& c) {
        return c.idle_ || (c.depth_ == 1 ? !c.np_quiet_ : !c.np_open_);
    }
    // The dispatch pass's word for a stall and guest mode, and the two fields it stands for.
    static std::uint64_t guest_or_stalled(const Cpu& c) { return c.guest_or_stalled_; }
    static bool in_guest_or_stalled(const Cpu& c) { return c.in_guest_ != nullptr || c.stalled_; }
    // Set while a dispatch runs, and across on_event's completion loop (dispatch<true>).
    static bool in_run(const Cpu& c) { return c.in_run_; }
    // Set across on_event's completion loop only (dispatch<true>'s in-loop exec start relies on it).
    static bool defer_exec(const Cpu& c) { return c.defer_exec_; }
    // The lean exec path's bound as kept in plain_end_, and as its definition computes it.
    static Cycles plain_end(const Cpu& c) { return c.plain_end_; }
    static Cycles plain_end_by_definition(const Cpu& c) {
        return c.tracing() || c.np_due_ || c.pending_irqs_ != 0 ? 0 : c.clock_.ceil_fast_end();
    }
    static std::uint64_t pending_irqs(const Cpu& c) { return c.pending_irqs_; }
    // exec_in_place's `due` of the exec an awaiter last refused, kept for its await_suspend.
    static Tick refused_due(const Cpu& c) { return c.refused_due_; }
    static void set_refused_due(Cpu& c, Tick t) { c.refused_due_ = t; }
};

namespace {

using engine::PS_PER_NS;
using engine::PS_PER_US;

using testing::round_costs;

KernelConfig quiet_config() {
    KernelConfig c;
    c.hz = 100; // first tick at 10 ms, after everything below
    return c;
}

struct Observation {
    Tick time;
    std::uint32_t preempt_count;
    CtxKind ctx;
    std::string current;
};

struct Harness {
    explicit Harness(KernelConfig cfg = quiet_config(), KernelCosts costs = round_costs())
        : cpu(sim, 0, engine::Clock(1'000'000'000), costs, cfg) {}
    engine::Simulation sim{1};
    Cpu cpu;
    std::vector<Observation> seen;
    int reraise = 0; // how many more times the softirq handler raises itself

    void observe() { seen.push_back({cpu.now(), cpu.preempt_count(), cpu.ctx_kind(), cpu.current()->comm}); }
    // A device interrupt at `at` that raises NET_RX (net_rx handles it) and, if given, a kernel
    // thread running `body`; then boot and 5 ms of simulated time.
    void run_with_device_irq_at(Tick at, std::optional<engine::Task<>> body = std::nullopt);
};

engine::Task<> net_rx(Cpu& cpu, void* ctx) {
    auto& h = *static_cast<Harness*>(ctx);
    h.observe();
    if (h.reraise > 0) {
        --h.reraise;
        cpu.raise_softirq_irqoff(NET_RX_SOFTIRQ);
    }
    co_await cpu.exec(1, Cat::OTHER);
}

engine::Task<> device_irq(Cpu& cpu, void*) {
    cpu.raise_softirq_irqoff(NET_RX_SOFTIRQ);
    co_return;
}

using testing::IrqAt;

void Harness::run_with_device_irq_at(Tick at, std::optional<engine::Task<>> body) {
    const unsigned v = Cpu::FIRST_DEVICE_VECTOR;
    cpu.request_irq(v, &device_irq, nullptr, "dev");
    cpu.open_softirq(NET_RX_SOFTIRQ, &net_rx, this);
    if (body) cpu.create_task("kthread", SchedPolicy::NORMAL, 0, true, std::move(*body));
    IrqAt irq(cpu, v);
    sim.schedule_at(at, &irq);
    cpu.boot();
    sim.run(5 * engine::PS_PER_MS);
}

engine::Task<> busy_kthread(Cpu& cpu, Harness& h, Cycles c) {
    co_await cpu.exec(c, Cat::OTHER);
    h.observe();
}

TEST(Softirq, RunsOnIrqExitInServingSoftirqContextAfterTheHandler) {
    // A kernel thread computes for 100 us; a device interrupt at 10 us raises NET_RX.
    // The softirq runs at irq exit: 10 us + irq entry 300 + irq exit 200 + __do_softirq round
    // 100 + local_irq_enable 4 = 10.604 us, with SOFTIRQ_OFFSET set and no HARDIRQ bits.
    // The thread finishes late by everything the interrupt cost: 300 + 200 + 100 + 4 +
    // handler 1 + local_irq_disable 3 = 608 ns -> at 100.608 us.
    Harness h;
    h.run_with_device_irq_at(10 * PS_PER_US, busy_kthread(h.cpu, h, 100'000));
    ASSERT_EQ(h.seen.size(), 2u);
    EXPECT_EQ(h.seen[0].time, 10'604 * PS_PER_NS);
    EXPECT_EQ(h.seen[0].preempt_count, SOFTIRQ_OFFSET);
    EXPECT_EQ(h.seen[0].ctx, CtxKind::SOFTIRQ);
    EXPECT_EQ(h.seen[1].time, 100'608 * PS_PER_NS);
    EXPECT_EQ(h.seen[1].preempt_count, 0u);
    EXPECT_EQ(h.cpu.stats().softirq_runs, 1u);
    EXPECT_EQ(h.cpu.stats().hardirqs, 1u);
}

engine::Task<> five_execs(Cpu& cpu, Harness& h) {
    for (int i = 0; i < 5; ++i) {
        co_await cpu.exec(1000, Cat::OTHER);
        h.observe();
    }
}

TEST(MergedExecs, ExecsTakenInPlaceGiveTheSameTimesAndEventCountAsQueuedOnes) {
    // Five execs of 1 us; a device interrupt at 2.5 us raises NET_RX. The completions at 1 and
    // 2 us come before the interrupt's event: with merging on, the one at 2 us is taken in place
    // of a queued event. The interrupt cuts the third exec after 500 ns; the interrupt and its
    // softirq cost 608 ns (as in RunsOnIrqExitInServingSoftirqContextAfterTheHandler), so the
    // remaining 500 ns end at 3.608 us, and the last two execs at 4.608 and 5.608 us.
    const std::vector<Tick> want{1000 * PS_PER_NS, 2000 * PS_PER_NS, 3608 * PS_PER_NS, 4608 * PS_PER_NS,
                                 5608 * PS_PER_NS};
    std::uint64_t events[2] = {0, 0};
    Cycles other[2] = {0, 0};
    for (int merge = 0; merge < 2; ++merge) {
        Harness h;
        h.sim.set_inline_events(merge == 1);
        h.run_with_device_irq_at(2500 * PS_PER_NS, five_execs(h.cpu, h));
        std::vector<Tick> task_times;
        for (const Observation& o : h.seen)
            if (o.ctx == CtxKind::TASK) task_times.push_back(o.time);
        EXPECT_EQ(task_times, want) << "merging " << (merge ? "on" : "off");
        events[merge] = h.sim.events_processed();
        other[merge] = h.cpu.stats().cycles[static_cast<std::size_t>(CtxKind::TASK)][static_cast<std::size_t>(Cat::OTHER)];
    }
    EXPECT_EQ(events[0], events[1]);
    EXPECT_EQ(other[0], 5000u);
    EXPECT_EQ(other[1], 5000u);
}

engine::Task<> bh_section(Cpu& cpu, Harness& h) {
    co_await local_bh_disable(cpu);     // 4
    co_await raise_softirq(cpu, NET_RX_SOFTIRQ); // save 12 + restore 5
    co_await cpu.exec(1000, Cat::OTHER);
    h.observe();                        // still in the BH-disabled section: not yet run
    co_await local_bh_enable(cpu);      // 14, then the softirq runs here
    h.observe();
}

TEST(Softirq, LocalBhEnableRunsWhatWasRaisedWhileBottomHalvesWereDisabled) {
    // raise_softirq from task context with BH disabled does not wake ksoftirqd (in_interrupt()
    // is true) and nothing runs until local_bh_enable: 4 + 12 + 5 + 1000 = 1021 ns, then
    // bh_enable 14, __do_softirq round 100, local_irq_enable 4 -> handler at 1139 ns, in serving-
    // softirq context on top of the task; the task continues after handler 1 + irq disable 3
    // = 1143 ns.
    Harness h;
    h.cpu.open_softirq(NET_RX_SOFTIRQ, &net_rx, &h);
    h.cpu.create_task("kthread", SchedPolicy::NORMAL, 0, true, bh_section(h.cpu, h));
    h.cpu.boot();
    h.sim.run(5 * engine::PS_PER_MS);
    ASSERT_EQ(h.seen.size(), 3u);
    EXPECT_EQ(h.seen[0].time, 1021 * PS_PER_NS);
    EXPECT_EQ(h.seen[0].preempt_count, SOFTIRQ_DISABLE_OFFSET);
    EXPECT_EQ(h.seen[1].time, 1139 * PS_PER_NS);
    EXPECT_EQ(h.seen[1].ctx, CtxKind::SOFTIRQ);
    EXPECT_EQ(h.seen[1].current, "kthread");
    EXPECT_EQ(h.seen[1].preempt_count, SOFTIRQ_OFFSET);
    EXPECT_EQ(h.seen[2].time, 1143 * PS_PER_NS);
    EXPECT_EQ(h.seen[2].preempt_count, 0u);
    EXPECT_EQ(h.cpu.stats().ksoftirqd_wakeups, 0u);
}

TEST(Softirq, RestartsAtMostTenRoundsThenHandsTheRestToKsoftirqd) {
    // The handler raises NET_RX again on each of its first 14 calls (15 calls in all). The
    // irq-exit invocation runs 10 rounds (MAX_SOFTIRQ_RESTART = 10, so 9 restarts) and then
    // wakes ksoftirqd, which runs the remaining 5 in task context (4 more restarts).
    Harness h;
    h.reraise = 14;
    h.run_with_device_irq_at(10 * PS_PER_US); // nothing but idle and ksoftirqd
    ASSERT_EQ(h.seen.size(), 15u);
    for (int i = 0; i < 10; ++i) {
        EXPECT_EQ(h.seen[i].ctx, CtxKind::SOFTIRQ) << i;
        EXPECT_EQ(h.seen[i].current, "swapper/0") << i;
    }
    for (int i = 10; i < 15; ++i) {
        EXPECT_EQ(h.seen[i].ctx, CtxKind::TASK) << i;
        EXPECT_EQ(h.seen[i].current, "ksoftirqd/0") << i;
        EXPECT_TRUE(in_serving_softirq(h.seen[i].preempt_count)) << i;
    }
    EXPECT_EQ(h.cpu.stats().softirq_runs, 2u);
    EXPECT_EQ(h.cpu.stats().softirq_restarts, 13u);
    EXPECT_EQ(h.cpu.stats().ksoftirqd_wakeups, 1u);
}

engine::Task<> irqs_off_section(Cpu& cpu, Harness& h) {
    co_await local_irq_disable(cpu); // 3 ns
    co_await cpu.exec(20'000, Cat::OTHER);
    co_await local_irq_enable(cpu);  // the pending interrupt is taken here
    h.observe();
}

TEST(Irq, AnInterruptRaisedWhileMaskedIsTakenAtUnmask) {
    // The interrupt fires at 10 us, inside the 20 us IRQs-off section (3 ns .. 20.003 us). It
    // is delivered right after local_irq_enable (4 ns): its softirq runs at 20.007 us + 300 +
    // 200 + 100 + 4 = 20.611 us.
    Harness h;
    h.run_with_device_irq_at(10 * PS_PER_US, irqs_off_section(h.cpu, h));
    ASSERT_EQ(h.seen.size(), 2u);
    EXPECT_EQ(h.seen[0].time, 20'611 * PS_PER_NS);
    // ours, __do_softirq's, and __schedule's when the thread exits and the CPU goes idle
    EXPECT_EQ(h.cpu.stats().irqflag_ops[0], 3u);
    EXPECT_EQ(h.cpu.stats().irqflag_ops[1], 3u);
}

engine::Task<> save_exec_restore(Cpu& cpu, Harness& h, bool masked_before) {
    if (masked_before) co_await local_irq_disable(cpu); // 3
    const bool flags = co_await local_irq_save(cpu);    // 12
    co_await cpu.exec(1000, Cat::OTHER);
    co_await local_irq_restore(cpu, flags);              // 1000 here: the interrupt arrives inside it
    h.observe();
    if (masked_before) co_await local_irq_enable(cpu);  // 4
}

KernelCosts slow_restore_costs() {
    KernelCosts c = round_costs();
    c.local_irq_restore = 1000;
    return c;
}

TEST(Irq, LocalIrqRestoreThatUnmasksTakesAnInterruptRaisedDuringItsOwnCostBeforeTheCallerGoesOn) {
    // save 0..12 ns, exec 12..1012, restore 1012..2012 with IRQs still masked; the interrupt at
    // 1.5 us waits for the mask to clear at 2012 and is taken before the caller continues: its
    // softirq at 2012 + 300 + 200 + 100 + 4 = 2616 ns, the caller at 2012 + 608 = 2620 ns. Its
    // exec cannot be taken in place (the interrupt's event comes first), so the restore goes
    // through Point::IRQ_RESTORE; with in-place events off as well as on.
    for (int merge = 0; merge < 2; ++merge) {
        Harness h(quiet_config(), slow_restore_costs());
        h.sim.set_inline_events(merge == 1);
        h.run_with_device_irq_at(1500 * PS_PER_NS, save_exec_restore(h.cpu, h, false));
        ASSERT_EQ(h.seen.size(), 2u);
        EXPECT_EQ(h.seen[0].ctx, CtxKind::SOFTIRQ);
        EXPECT_EQ(h.seen[0].time, 2616 * PS_PER_NS) << "merging " << merge;
        EXPECT_EQ(h.seen[1].ctx, CtxKind::TASK);
        EXPECT_EQ(h.seen[1].time, 2620 * PS_PER_NS) << "merging " << merge;
        EXPECT_EQ(h.cpu.stats().cycles[static_cast<std::size_t>(CtxKind::TASK)][static_cast<std::size_t>(Cat::IRQ_MASK)],
                  12u + 1000u + 3u + 4u) // save, restore; __schedule's disable/enable when the thread exits
            << "merging " << merge;
    }
}

TEST(Irq, LocalIrqRestoreThatKeepsTheMaskLetsNoInterruptThroughUntilTheEnable) {
    // disable 0..3, save 3..15 (flags: masked), exec 15..1015, restore 1015..2015 keeps the mask:
    // the caller goes on at 2015 ns with the interrupt of 1.5 us still pending, and it is taken at
    // local_irq_enable: 2015 + 4 + 604 = 2623 ns.
    for (int merge = 0; merge < 2; ++merge) {
        Harness h(quiet_config(), slow_restore_costs());
        h.sim.set_inline_events(merge == 1);
        h.run_with_device_irq_at(1500 * PS_PER_NS, save_exec_restore(h.cpu, h, true));
        ASSERT_EQ(h.seen.size(), 2u);
        EXPECT_EQ(h.seen[0].ctx, CtxKind::TASK);
        EXPECT_EQ(h.seen[0].time, 2015 * PS_PER_NS) << "merging " << merge;
        EXPECT_TRUE(h.seen[1].ctx == CtxKind::SOFTIRQ);
        EXPECT_EQ(h.seen[1].time, 2623 * PS_PER_NS) << "merging " << merge;
    }
}

engine::Task<> save_exec_restore_observed(Cpu& cpu, Harness& h, Cycles c) {
    const bool flags = co_await local_irq_save(cpu); // 12
    co_await cpu.exec(c, Cat::OTHER);
    co_await local_irq_restore(cpu, flags);          // 5
    h.observe();
}

engine::Task<> net_rx_save_exec_restore(Cpu& cpu, void* ctx) {
    auto& h = *static_cast<Harness*>(ctx);
    h.observe();
    co_await save_exec_restore_observed(cpu, h, 100);
}

engine::Task<> restore_then_busy(Cpu& cpu, Harness& h) {
    co_await save_exec_restore_observed(cpu, h, 1000);
    co_await cpu.exec(100'000, Cat::OTHER);
    h.observe();
}

TEST(MergedExecs, LocalIrqRestoreTakenInPlaceInTaskAndSoftirqContextGivesTheQueuedTimes) {
    // The restore's exec in place by both of its ways: in task context (the watchdog view's mark
    // is due, IrqRestoreAwaiter asks exec_in_place) and in a softirq (none of exec_in_place's
    // calls is due). The thread: save 0..12, exec ..1012, restore ..1017 ns, then 100 us; the
    // interrupt at 10 us: its softirq handler starts at 10 us + 300 + 200 + 100 + 4 = 10,604 ns
    // and does save 12, exec 100, restore 5: 10,721 ns. The thread ends late by the interrupt's
    // 300 + 200 + 100 + 4 + 117 + local_irq_disable 3 = 724 ns: 1017 + 100,000 + 724 = 101,741 ns.
    // The same times, cycles and event count with in-place events off and on.
    const std::vector<std::pair<CtxKind, Tick>> want{{CtxKind::TASK, 1017 * PS_PER_NS},
                                                     {CtxKind::SOFTIRQ, 10'604 * PS_PER_NS},
                                                     {CtxKind::SOFTIRQ, 10'721 * PS_PER_NS},
                                                     {CtxKind::TASK, 101'741 * PS_PER_NS}};
    std::uint64_t events[2] = {0, 0};
    for (int merge = 0; merge < 2; ++merge) {
        Harness h;
        h.sim.set_inline_events(merge == 1);
        const unsigned v = Cpu::FIRST_DEVICE_VECTOR;
        h.cpu.request_irq(v, &device_irq, nullptr, "dev");
        h.cpu.open_softirq(NET_RX_SOFTIRQ, &net_rx_save_exec_restore, &h);
        h.cpu.create_task("kthread", SchedPolicy::NORMAL, 0, true, restore_then_busy(h.cpu, h));
        IrqAt irq(h.cpu, v);
        h.sim.schedule_at(10 * PS_PER_US, &irq);
        h.cpu.boot();
        h.sim.run(5 * engine::PS_PER_MS);
        std::vector<std::pair<CtxKind, Tick>> got;
        for (const Observation& o : h.seen) got.emplace_back(o.ctx, o.time);
        EXPECT_EQ(got, want) << "merging " << merge;
        const auto& cyc = h.cpu.stats().cycles;
        EXPECT_EQ(cyc[static_cast<std::size_t>(CtxKind::TASK)][static_cast<std::size_t>(Cat::OTHER)], 101'000u);
        EXPECT_EQ(cyc[static_cast<std::size_t>(CtxKind::SOFTIRQ)][static_cast<std::size_t>(Cat::OTHER)], 100u);
        EXPECT_EQ(cyc[static_cast<std::size_t>(CtxKind::TASK)][static_cast<std::size_t>(Cat::IRQ_MASK)],
                  12u + 5u + 3u + 4u) // save, restore; __schedule's disable/enable when the thread exits
            << "merging " << merge;
        events[merge] = h.sim.events_processed();
    }
    EXPECT_EQ(events[0], events[1]);
}

// A hardirq handler in plain steps: observe, 1 us of driver work, a step without an exec,
// observe and raise NET_RX, 500 cycles masked, observe. plain_steps_as_coroutine is the same.
IrqStep plain_steps_irq(Cpu& cpu, void* ctx, unsigned step) {
    auto& h = *static_cast<Harness*>(ctx);
    switch (step) {
    case 0: h.observe(); return {1000, Cat::DRIVER, false};
    case 1: return {0, Cat::DRIVER, false};
    case 2:
        h.observe();
        cpu.raise_softirq_irqoff(NET_RX_SOFTIRQ);
        return {500, Cat::IRQ_MASK, false};
    default: h.observe(); return {0, Cat::DRIVER, true};
    }
}

engine::Task<> plain_steps_as_coroutine(Cpu& cpu, void* ctx) {
    auto& h = *static_cast<Harness*>(ctx);
    h.observe();
    co_await cpu.exec(1000, Cat::DRIVER);
    co_await cpu.exec(0, Cat::DRIVER);
    h.observe();
    cpu.raise_softirq_irqoff(NET_RX_SOFTIRQ);
    co_await cpu.exec(500, Cat::IRQ_MASK);
    h.observe();
}

TEST(MergedExecs, AHardirqHandlerInPlainStepsGivesTheCoroutinesTimesCyclesAndEvents) {
    // A kernel thread computes for 100 us; the interrupt at 10 us. The handler's steps after the
    // entry's 300: 10,300 ns, + 1000 -> 11,300, + 500 -> 11,800; irq exit 200, the softirq round
    // 100, local_irq_enable 4: net_rx at 12,104 ns. The thread ends late by 300 + 1000 + 500 +
    // 200 + 100 + 4 + net_rx's 1 + local_irq_disable 3 = 2,108 ns. The same with the coroutine
    // handler, and with in-place events off and on.
    const std::vector<std::pair<CtxKind, Tick>> want{
        {CtxKind::HARDIRQ, 10'300 * PS_PER_NS}, {CtxKind::HARDIRQ, 11'300 * PS_PER_NS},
        {CtxKind::HARDIRQ, 11'800 * PS_PER_NS}, {CtxKind::SOFTIRQ, 12'104 * PS_PER_NS},
        {CtxKind::TASK, 102'108 * PS_PER_NS}};
    std::uint64_t events[2][2] = {};
    for (int plain = 0; plain < 2; ++plain) {
        for (int merge = 0; merge < 2; ++merge) {
            Harness h;
            h.sim.set_inline_events(merge == 1);
            const unsigned v = Cpu::FIRST_DEVICE_VECTOR;
            if (plain) h.cpu.request_irq(v, &plain_steps_irq, &h, "dev");
            else h.cpu.request_irq(v, &plain_steps_as_coroutine, &h, "dev");
            h.cpu.open_softirq(NET_RX_SOFTIRQ, &net_rx, &h);
            h.cpu.create_task("kthread", SchedPolicy::NORMAL, 0, true, busy_kthread(h.cpu, h, 100'000));
            IrqAt irq(h.cpu, v);
            h.sim.schedule_at(10 * PS_PER_US, &irq);
            h.cpu.boot();
            h.sim.run(5 * engine::PS_PER_MS);
            std::vector<std::pair<CtxKind, Tick>> got;
            for (const Observation& o : h.seen) got.emplace_back(o.ctx, o.time);
            EXPECT_EQ(got, want) << "plain " << plain << " merging " << merge;
            const auto& cyc = h.cpu.stats().cycles[static_cast<std::size_t>(CtxKind::HARDIRQ)];
            EXPECT_EQ(cyc[static_cast<std::size_t>(Cat::DRIVER)], 1000u);
            EXPECT_EQ(cyc[static_cast<std::size_t>(Cat::IRQ_MASK)], 500u);
            EXPECT_EQ(h.cpu.stats().hardirqs, 1u);
            events[plain][merge] = h.sim.events_processed();
        }
    }
    EXPECT_EQ(events[0][0], events[1][0]);
    EXPECT_EQ(events[0][1], events[1][1]);
}

// The softirq frame's steps (Cpu::irq_steps' SOFTIRQ_*): NET_RX's handler computes 1 us, NET_TX's
// 10 ns; one device interrupt raises NET_RX, another observes and raises NET_TX.
engine::Task<> rx_1us(Cpu& cpu, void* ctx) {
    static_cast<Harness*>(ctx)->observe();
    co_await cpu.exec(1000, Cat::OTHER);
}

engine::Task<> tx_10ns(Cpu& cpu, void* ctx) {
    static_cast<Harness*>(ctx)->observe();
    co_await cpu.exec(10, Cat::OTHER);
}

engine::Task<> raise_net_tx_irq(Cpu& cpu, void* ctx) {
    static_cast<Harness*>(ctx)->observe();
    cpu.raise_softirq_irqoff(NET_TX_SOFTIRQ);
    co_return;
}

TEST(Softirq, TheIrqExitSoftirqsStepsTakeTheirMaskPointsAndNestedHardirqsWhereTheCoroutineDid) {
    // A kernel thread computes for 100 us. A at 10 us raises NET_RX: entry 300, exit 200, the
    // softirq from 10,500: round 100, local_irq_enable 4 (10,600 .. 10,604). B, raised at 10,602
    // inside that exec while the mask is still on, is taken at its end (the enable's point, before
    // the first vector): entry to 10,904 (B observes, in SOFTIRQ_OFFSET + HARDIRQ_OFFSET, raises
    // NET_TX), exit to 11,104. NET_RX's handler at 11,104; C (B's vector) at 11,604 cuts its exec
    // after 500: C observes at 11,904, exits at 12,104; the other 500 end at 12,604.
    // local_irq_disable 3 to 12,607; NET_TX is pending and a jiffy has not passed: a restart,
    // round 100 and enable 4 to 12,711, NET_TX's handler at 12,711, 10 to 12,721, disable 3 to
    // 12,724. D (B's vector) at 12,723 waits for the mask: after the frame's pop, on the thread,
    // D observes at 13,024 (HARDIRQ_OFFSET alone) and exits at 13,224; a second softirq run:
    // round and enable to 13,328, NET_TX at 13,328, 10 and disable 3 to 13,341. The thread's
    // 90 us left end at 13,341 + 90,000 = 103,341. The same with in-place events off and on.
    const std::vector<std::tuple<CtxKind, Tick, std::uint32_t>> want{
        {CtxKind::HARDIRQ, 10'904 * PS_PER_NS, SOFTIRQ_OFFSET + HARDIRQ_OFFSET},
        {CtxKind::SOFTIRQ, 11'104 * PS_PER_NS, SOFTIRQ_OFFSET},
        {CtxKind::HARDIRQ, 11'904 * PS_PER_NS, SOFTIRQ_OFFSET + HARDIRQ_OFFSET},
        {CtxKind::SOFTIRQ, 12'711 * PS_PER_NS, SOFTIRQ_OFFSET},
        {CtxKind::HARDIRQ, 13'024 * PS_PER_NS, HARDIRQ_OFFSET},
        {CtxKind::SOFTIRQ, 13'328 * PS_PER_NS, SOFTIRQ_OFFSET},
        {CtxKind::TASK, 103'341 * PS_PER_NS, 0u}};
    std::uint64_t events[2] = {};
    for (int merge = 0; merge < 2; ++merge) {
        Harness h;
        h.sim.set_inline_events(merge == 1);
        const unsigned a = Cpu::FIRST_DEVICE_VECTOR, b = Cpu::FIRST_DEVICE_VECTOR + 1;
        h.cpu.request_irq(a, &device_irq, nullptr, "a");
        h.cpu.request_irq(b, &raise_net_tx_irq, &h, "b");
        h.cpu.open_softirq(NET_RX_SOFTIRQ, &rx_1us, &h);
        h.cpu.open_softirq(NET_TX_SOFTIRQ, &tx_10ns, &h);
        h.cpu.create_task("kthread", SchedPolicy::NORMAL, 0, true, busy_kthread(h.cpu, h, 100'000));
        IrqAt ia(h.cpu, a), ib(h.cpu, b), ic(h.cpu, b), id(h.cpu, b);
        h.sim.schedule_at(10 * PS_PER_US, &ia);
        h.sim.schedule_at(10'602 * PS_PER_NS, &ib);
        h.sim.schedule_at(11'604 * PS_PER_NS, &ic);
        h.sim.schedule_at(12'723 * PS_PER_NS, &id);
        h.cpu.boot();
        h.sim.run(5 * engine::PS_PER_MS);
        std::vector<std::tuple<CtxKind, Tick, std::uint32_t>> got;
        for (const Observation& o : h.seen) got.emplace_back(o.ctx, o.time, o.preempt_count);
        EXPECT_EQ(got, want) << "merging " << merge;
        const CpuStats& st = h.cpu.stats();
        EXPECT_EQ(st.hardirqs, 4u);
        EXPECT_EQ(st.softirq_runs, 2u);
        EXPECT_EQ(st.softirq_restarts, 1u);
        EXPECT_EQ(st.softirq_handled[NET_RX_SOFTIRQ], 1u);
        EXPECT_EQ(st.softirq_handled[NET_TX_SOFTIRQ], 2u);
        EXPECT_EQ(st.ksoftirqd_wakeups, 0u);
        // three rounds' enables and disables; __schedule's disable and enable when the thread exits
        EXPECT_EQ(st.irqflag_ops, (std::array<std::uint64_t, 4>{4u, 4u, 0u, 0u}));
        const auto& soft = st.cycles[static_cast<std::size_t>(CtxKind::SOFTIRQ)];
        EXPECT_EQ(soft[static_cast<std::size_t>(Cat::SOFTIRQ)], 300u);
        EXPECT_EQ(soft[static_cast<std::size_t>(Cat::IRQ_MASK)], 3u * (4u + 3u));
        EXPECT_EQ(soft[static_cast<std::size_t>(Cat::OTHER)], 1000u + 10u + 10u);
        const auto& hard = st.cycles[static_cast<std::size_t>(CtxKind::HARDIRQ)];
        EXPECT_EQ(hard[static_cast<std::size_t>(Cat::IRQ_ENTRY_EXIT)], 4u * 500u);
        EXPECT_EQ(h.cpu.preempt_count(), 0u);
        EXPECT_FALSE(h.cpu.irqs_disabled());
        events[merge] = h.sim.events_processed();
    }
    EXPECT_EQ(events[0], events[1]);
}

engine::Task<> preempt_off_execs(Cpu& cpu, Harness& h) {
    co_await cpu.exec(1000, Cat::OTHER); // 0 .. 1 us, preemptible
    preempt_disable(cpu, "test");
    co_await cpu.exec(2000, Cat::OTHER); // 1 .. 3 us: its mark opens the span
    co_await cpu.exec(3000, Cat::OTHER); // 3 .. 6 us
    co_await preempt_enable(cpu);        // the point at 6 us closes it
    co_await cpu.exec(500, Cat::OTHER);
    h.observe();
}

TEST(MergedExecs, AnExecTakenInPlaceInTaskContextMakesTheWatchdogMarkOfAQueuedOne) {
    // PREEMPT=full. An exec taken in place in task context is one whose mark is due
    // (ExecAwaiter::ready_asked marks, then takes the exec; with the trace on, through
    // exec_in_place_marked_slow). The preemption-off section's span opens at its first exec's
    // start (1 us) and closes at preempt_enable's point (6 us): 5 us held by "test", longer than
    // the exit's switch (2 us). The task observes at 6.5 us. The same with in-place events off
    // and on, with and without the trace, and the same event count either way.
    for (int traced = 0; traced < 2; ++traced) {
        if (traced && !TRACE_COMPILED) continue;
        std::uint64_t events[2] = {0, 0};
        for (int merge = 0; merge < 2; ++merge) {
            KernelConfig cfg = quiet_config();
            cfg.preempt = PreemptModel::FULL;
            Harness h(cfg);
            h.sim.set_inline_events(merge == 1);
            TraceRecorder tr(1000);
            if (traced) h.cpu.set_trace(&tr, tr.add_track("m", 0, 0));
            h.cpu.create_task("kthread", SchedPolicy::NORMAL, 0, true, preempt_off_execs(h.cpu, h));
            h.cpu.boot();
            h.sim.run(5 * engine::PS_PER_MS);
            ASSERT_EQ(h.seen.size(), 1u);
            EXPECT_EQ(h.seen[0].time, 6500 * PS_PER_NS) << "merging " << merge << " trace " << traced;
            const CpuStats& st = h.cpu.stats();
            EXPECT_EQ(st.longest_np_span, 5000 * PS_PER_NS) << "merging " << merge << " trace " << traced;
            EXPECT_EQ(st.longest_np_span_start, 1000 * PS_PER_NS) << "merging " << merge << " trace " << traced;
            EXPECT_NE(st.longest_np_holder.find("preemption disabled by test"), std::string::npos)
                << st.longest_np_holder;
            EXPECT_EQ(st.cycles[static_cast<std::size_t>(CtxKind::TASK)][static_cast<std::size_t>(Cat::OTHER)], 6500u);
            events[merge] = h.sim.events_processed();
        }
        EXPECT_EQ(events[0], events[1]) << "trace " << traced;
    }
}

engine::Task<> execs_between_events(Cpu& cpu, Harness& h) {
    for (int i = 0; i < 4; ++i) {
        co_await cpu.exec(1000, Cat::OTHER);
        h.observe();
    }
}

// Raises nothing: an event that only stands between an exec's start and its end.
struct Bystander final : engine::EventTarget {
    int seen = 0;
    void on_event(std::uint64_t) override { ++seen; }
};

TEST(MergedExecs, AnExecThatCannotBeTakenInPlaceStartsAsItsCoroutineSuspendsWithTheQueuedTimes) {
    // Four execs of 1 us; events of a bystander at 1.5, 2.5 and 3.5 us keep the 2nd, 3rd and 4th
    // from being taken in place, so each starts as the coroutine suspends (its completion then
    // queued behind the bystander's event). Times and cycles are those of queued execs: 1, 2, 3,
    // 4 us, 4000 cycles, and the event count is the same with or without in-place events.
    std::uint64_t events[2] = {0, 0};
    for (int merge = 0; merge < 2; ++merge) {
        Harness h;
        h.sim.set_inline_events(merge == 1);
        h.cpu.create_task("kthread", SchedPolicy::NORMAL, 0, true, execs_between_events(h.cpu, h));
        Bystander b;
        for (int i = 0; i < 3; ++i) h.sim.schedule_at((1500 + 1000 * i) * PS_PER_NS, &b);
        h.cpu.boot();
        h.sim.run(5 * PS_PER_US);
        std::vector<Tick> times;
        for (const Observation& o : h.seen) times.push_back(o.time);
        EXPECT_EQ(times, (std::vector<Tick>{1000 * PS_PER_NS, 2000 * PS_PER_NS, 3000 * PS_PER_NS, 4000 * PS_PER_NS}))
            << "merging " << merge;
        EXPECT_EQ(b.seen, 3);
        EXPECT_EQ(h.cpu.stats().cycles[static_cast<std::size_t>(CtxKind::TASK)][static_cast<std::size_t>(Cat::OTHER)],
                  4000u);
        events[merge] = h.sim.events_processed();
    }
    EXPECT_EQ(events[0], events[1]);
}

// An event between an exec's start and its end that notes whether the CPU's dispatch looks busy.
struct InRunProbe final : engine::EventTarget {
    explicit InRunProbe(const Cpu& c) : cpu(c) {}
    const Cpu& cpu;
    std::vector<bool> in_run;
    void on_event(std::uint64_t) override { in_run.push_back(CpuTestAccess::in_run(cpu)); }
};

TEST(MergedExecs, TheCompletionLoopsInRunIsClearWheneverTheEngineHandlesAnotherEvent) {
    // on_event sets in_run_ once for its completion loop and clears it at both of the loop's ends
    // (nothing left to start, a completion refused): the three probe events at 1.5, 2.5 and 3.5 us,
    // each of which refuses the completion of the exec then running (execs_between_events: 1 us
    // each), see it clear, and the times are those of queued execs (1, 2, 3, 4 us).
    for (int merge = 0; merge < 2; ++merge) {
        Harness h;
        h.sim.set_inline_events(merge == 1);
        h.cpu.create_task("kthread", SchedPolicy::NORMAL, 0, true, execs_between_events(h.cpu, h));
        InRunProbe p(h.cpu);
        for (int i = 0; i < 3; ++i) h.sim.schedule_at((1500 + 1000 * i) * PS_PER_NS, &p);
        h.cpu.boot();
        h.sim.run(5 * PS_PER_US);
        EXPECT_EQ(p.in_run, (std::vector<bool>{false, false, false})) << "merging " << merge;
        EXPECT_FALSE(CpuTestAccess::in_run(h.cpu));
        std::vector<Tick> times;
        for (const Observation& o : h.seen) times.push_back(o.time);
        EXPECT_EQ(times, (std::vector<Tick>{1000 * PS_PER_NS, 2000 * PS_PER_NS, 3000 * PS_PER_NS, 4000 * PS_PER_NS}))
            << "merging " << merge;
    }
}

struct DispatchLog {
    std::vector<std::pair<bool, bool>> seen; // (in_run_, defer_exec_)
    void note(const Cpu& c) { seen.emplace_back(CpuTestAccess::in_run(c), CpuTestAccess::defer_exec(c)); }
};

engine::Task<> dispatch_log_task(Cpu& cpu, DispatchLog& log) {
    log.note(cpu);                       // first run: the boot's dispatch<false>
    co_await cpu.exec(1000, Cat::OTHER); // 0 .. 1 us
    log.note(cpu);                       // resumed by the completion loop's dispatch<true>
    co_await cpu.exec(1000, Cat::OTHER); // 1 .. 2 us, refused at 1.5 us by the probe
    log.note(cpu);                       // the completion event's loop again
}

TEST(MergedExecs, DeferExecIsSetInTheCompletionLoopsDispatchesAndInNoOther) {
    // dispatch<true> starts an exec as deferred without testing defer_exec_: it is set exactly
    // while on_event's loop runs its dispatches, and clear in dispatch<false> (run()), which runs
    // only while in_run_ is clear. The task's first note comes from the boot's dispatch<false>
    // (in_run_ set, defer_exec_ clear), the next two from the completion loop (both set); the probe
    // at 1.5 us sees both clear. In-place events off and on.
    for (int merge = 0; merge < 2; ++merge) {
        Harness h;
        h.sim.set_inline_events(merge == 1);
        DispatchLog log;
        h.cpu.create_task("kthread", SchedPolicy::NORMAL, 0, true, dispatch_log_task(h.cpu, log));
        InRunProbe p(h.cpu);
        h.sim.schedule_at(1500 * PS_PER_NS, &p);
        h.cpu.boot();
        h.sim.run(5 * PS_PER_US);
        using P = std::pair<bool, bool>;
        EXPECT_EQ(log.seen, (std::vector<P>{P{true, false}, P{true, true}, P{true, true}})) << "merging " << merge;
        EXPECT_EQ(p.in_run, (std::vector<bool>{false})) << "merging " << merge;
        EXPECT_FALSE(CpuTestAccess::defer_exec(h.cpu));
    }
}

// Each exec preceded by a stale refused_due_ (7 ps, no exec's end); after each, what it holds.
engine::Task<> refused_due_task(Cpu& cpu, std::vector<Tick>& held) {
    for (int i = 0; i < 3; ++i) {
        CpuTestAccess::set_refused_due(cpu, 7);
        co_await cpu.exec(1000, Cat::OTHER);
        held.push_back(CpuTestAccess::refused_due(cpu));
    }
}

TEST(MergedExecs, AnAwaiterThatRefusesAnExecWritesItsDueAndOneTakenInPlaceWritesNothing) {
    // ExecAwaiter::await_ready writes refused_due_ on every false return, so that its
    // await_suspend never reads a stale one. The first exec (0 .. 1 us) is awaited in the boot's
    // dispatch<false>, outside the completion loop: refused with due 0, queued. The second (1 ..
    // 2 us) in the completion loop: taken in place with in-place events on (7 stays), refused with
    // its end, 2 us, with them off. The third (2 .. 3 us) is refused by the probe's event at
    // 2.5 us: due 3 us. The times are those of queued execs (1, 2, 3 us): no stale 7 ps was used.
    for (int merge = 0; merge < 2; ++merge) {
        Harness h;
        h.sim.set_inline_events(merge == 1);
        std::vector<Tick> held;
        h.cpu.create_task("kthread", SchedPolicy::NORMAL, 0, true, refused_due_task(h.cpu, held));
        InRunProbe p(h.cpu);
        h.sim.schedule_at(2500 * PS_PER_NS, &p);
        h.cpu.boot();
        h.sim.run(5 * PS_PER_US);
        const Tick second = merge == 1 ? 7 : 2000 * PS_PER_NS;
        EXPECT_EQ(held, (std::vector<Tick>{0, second, 3000 * PS_PER_NS})) << "merging " << merge;
        EXPECT_EQ(h.cpu.stats().cycles[static_cast<std::size_t>(CtxKind::TASK)][static_cast<std::size_t>(Cat::OTHER)],
                  3000u);
        EXPECT_EQ(p.in_run.size(), 1u);
    }
}

engine::Task<> masked_section(Cpu& cpu, Harness& h) {
    co_await cpu.exec(1000, Cat::OTHER);                  // 0 .. 1000 ns
    const bool flags = co_await local_irq_save(cpu);      // .. 1012
    co_await cpu.exec(1000, Cat::OTHER);                  // .. 2012
    co_await local_irq_restore(cpu, flags);               // .. 2017, then the pending interrupt
    h.observe();
    co_await cpu.exec(1000, Cat::OTHER);
    h.observe();
}

TEST(MergedExecs, ARestoresExecThatCannotBeTakenInPlaceStartsAsItsCoroutineSuspends) {
    // The device interrupt at 1.5 us waits for the restore; a bystander's event at 2,015 ns stands
    // between the restore's start (2,012) and its end (2,017), so its exec starts as the thread
    // suspends (IrqRestoreAwaiter with ExecAwaiter::due) and the IRQ_RESTORE point follows its
    // end. The point unmasks and the interrupt is taken: entry 300, exit 200, the softirq's round
    // 100 and local_irq_enable 4 (NET_RX observes at 2,621 ns), its exec 1, local_irq_disable 3:
    // the thread goes on at 2,625 ns and ends at 3,625 ns. The same with in-place events off.
    const std::vector<std::pair<CtxKind, Tick>> want{{CtxKind::SOFTIRQ, 2621 * PS_PER_NS},
                                                     {CtxKind::TASK, 2625 * PS_PER_NS},
                                                     {CtxKind::TASK, 3625 * PS_PER_NS}};
    std::uint64_t events[2] = {0, 0};
    for (int merge = 0; merge < 2; ++merge) {
        Harness h;
        h.sim.set_inline_events(merge == 1);
        const unsigned v = Cpu::FIRST_DEVICE_VECTOR;
        h.cpu.request_irq(v, &device_irq, nullptr, "dev");
        h.cpu.open_softirq(NET_RX_SOFTIRQ, &net_rx, &h);
        h.cpu.create_task("kthread", SchedPolicy::NORMAL, 0, true, masked_section(h.cpu, h));
        IrqAt irq(h.cpu, v);
        h.sim.schedule_at(1500 * PS_PER_NS, &irq);
        Bystander b;
        h.sim.schedule_at(2015 * PS_PER_NS, &b);
        h.cpu.boot();
        h.sim.run(5 * engine::PS_PER_MS);
        std::vector<std::pair<CtxKind, Tick>> got;
        for (const Observation& o : h.seen) got.emplace_back(o.ctx, o.time);
        EXPECT_EQ(got, want) << "merging " << merge;
        EXPECT_EQ(b.seen, 1);
        const auto& cyc = h.cpu.stats().cycles;
        EXPECT_EQ(cyc[static_cast<std::size_t>(CtxKind::TASK)][static_cast<std::size_t>(Cat::OTHER)], 3000u);
        EXPECT_EQ(cyc[static_cast<std::size_t>(CtxKind::TASK)][static_cast<std::size_t>(Cat::IRQ_MASK)],
                  12u + 5u + 3u + 4u) // save, restore; __schedule's disable/enable when the thread exits
            << "merging " << merge;
        EXPECT_EQ(h.cpu.stats().hardirqs, 1u);
        events[merge] = h.sim.events_processed();
    }
    EXPECT_EQ(events[0], events[1]);
}

engine::Task<> points_between_execs(Cpu& cpu, Harness& h) {
    co_await cpu.exec(1000, Cat::OTHER); // 0 .. 1000 ns
    co_await cond_resched(cpu);          // .. 1010, nothing to reschedule: the span closes
    h.observe();
    co_await local_bh_disable(cpu);      // .. 1014
    cpu.__raise_softirq_irqoff(NET_RX_SOFTIRQ);
    co_await cpu.exec(1000, Cat::OTHER); // .. 2014
    co_await local_bh_enable(cpu);       // .. 2028, then NET_RX runs in this task's context
    h.observe();
    co_await local_bh_disable(cpu);      // .. 2140
    co_await local_bh_enable(cpu);       // .. 2154, nothing pending
    co_await might_resched(cpu);         // .. 2164: the span closes
    h.observe();
}

TEST(MergedExecs, PointsThatChangeNothingArePassedInPlaceWithTheQueuedTimesAndSpans) {
    // PREEMPT=voluntary, a kernel thread. cond_resched and might_resched whose exec is taken in
    // place, with nothing to reschedule, and local_bh_enable with nothing pending are passed
    // without suspending (Cpu::point_in_place); local_bh_enable with NET_RX pending runs it. By
    // hand: 1000 + 10 = 1010 ns; bh off 4, 1000, bh on 14: 2028; the softirq's round 100, irq
    // enable 4 (the handler observes at 2132), exec 1, irq disable 3: 2136; bh off 4 and on 14,
    // might_resched 10: 2164. The watchdog view: the kernel code's span 0 .. 1010 ns, then one
    // from bh off at 1010 to might_resched at 2164 (1154 ns, kernel code once bh is on again).
    const std::vector<std::pair<CtxKind, Tick>> want{{CtxKind::TASK, 1010 * PS_PER_NS},
                                                     {CtxKind::SOFTIRQ, 2132 * PS_PER_NS},
                                                     {CtxKind::TASK, 2136 * PS_PER_NS},
                                                     {CtxKind::TASK, 2164 * PS_PER_NS}};
    std::uint64_t events[2] = {0, 0};
    for (int merge = 0; merge < 2; ++merge) {
        Harness h;
        h.sim.set_inline_events(merge == 1);
        h.cpu.open_softirq(NET_RX_SOFTIRQ, &net_rx, &h);
        h.cpu.create_task("kthread", SchedPolicy::NORMAL, 0, true, points_between_execs(h.cpu, h));
        h.cpu.boot();
        h.sim.run(5 * engine::PS_PER_MS);
        std::vector<std::pair<CtxKind, Tick>> got;
        for (const Observation& o : h.seen) got.emplace_back(o.ctx, o.time);
        EXPECT_EQ(got, want) << "merging " << merge;
        const CpuStats& st = h.cpu.stats();
        EXPECT_EQ(st.longest_np_span, 1154 * PS_PER_NS) << "merging " << merge;
        EXPECT_EQ(st.longest_np_span_start, 1010 * PS_PER_NS) << "merging " << merge;
        EXPECT_NE(st.longest_np_holder.find("kernel code of kthread"), std::string::npos) << st.longest_np_holder;
        EXPECT_EQ(st.cycles[static_cast<std::size_t>(CtxKind::TASK)][static_cast<std::size_t>(Cat::BH_MASK)], 36u);
        // cond_resched and might_resched, then the switch to idle when the thread ends
        EXPECT_EQ(st.cycles[static_cast<std::size_t>(CtxKind::TASK)][static_cast<std::size_t>(Cat::SCHEDULER)], 10u + 10u + 2000u);
        events[merge] = h.sim.events_processed();
    }
    EXPECT_EQ(events[0], events[1]);
}

// An arch whose return to user mode restores the user state once: 50 cycles at its second call
// (the first is boot's, for the task that starts in user mode), nothing at the others.
struct RestoreAtSecondReturn final : ArchFpu {
    int calls = 0;
    Cycles switch_fpu(Cpu&, TaskStruct&, TaskStruct&) override { return 0; }
    Cycles exit_to_user(Cpu&, TaskStruct&) override { return calls++ == 1 ? 50 : 0; }
};

engine::Task<> two_syscalls(Cpu& cpu, Harness& h) {
    for (int i = 0; i < 2; ++i) {
        co_await syscall_enter(cpu);         // irq_entry_extra 20
        co_await cpu.exec(1000, Cat::OTHER);
        co_await syscall_exit(cpu);          // RETURN_TO_USER, then exception_return_extra 30
        h.observe();
    }
}

TEST(MergedExecs, AReturnToUserModeIsPassedInPlaceUnlessItRestoresTheUserState) {
    // A user task makes two system calls: entry 20, 1000 of work, the return to user mode, the
    // exception return's 30. The first return restores the user state (50 cycles, an exec queued
    // as handle_point queues it), the second restores nothing and is passed without suspending
    // (Cpu::return_to_user_in_place). By hand: 20 + 1000 + 50 + 30 = 1100 ns, then 1100 + 20 +
    // 1000 + 30 = 2150 ns; the same with in-place events off and on.
    std::uint64_t events[2] = {0, 0};
    for (int merge = 0; merge < 2; ++merge) {
        KernelCosts costs = round_costs();
        costs.irq_entry_extra = 20;
        costs.exception_return_extra = 30;
        Harness h(quiet_config(), costs);
        h.sim.set_inline_events(merge == 1);
        RestoreAtSecondReturn fpu;
        h.cpu.set_arch_fpu(&fpu);
        TaskStruct& t = h.cpu.create_task("user", SchedPolicy::NORMAL, 0, false, two_syscalls(h.cpu, h));
        t.in_user = true;
        h.cpu.boot();
        h.sim.run(5 * engine::PS_PER_MS);
        std::vector<Tick> times;
        for (const Observation& o : h.seen) times.push_back(o.time);
        EXPECT_EQ(times, (std::vector<Tick>{1100 * PS_PER_NS, 2150 * PS_PER_NS})) << "merging " << merge;
        EXPECT_EQ(fpu.calls, 3);
        EXPECT_EQ(h.cpu.stats().cycles[static_cast<std::size_t>(CtxKind::TASK)][static_cast<std::size_t>(Cat::SIMD_SAVE_RESTORE)],
                  50u);
        events[merge] = h.sim.events_processed();
    }
    EXPECT_EQ(events[0], events[1]);
}

engine::Task<> rt_probe(Cpu& cpu, Harness& h, Tick at) {
    co_await hrtimer_sleep_until(cpu, at);
    h.observe();
}

engine::Task<> preempt_off_then_cond_resched(Cpu& cpu) {
    preempt_disable(cpu, "test");
    co_await cpu.exec(50'000, Cat::OTHER); // 0 .. 50 us
    co_await preempt_enable(cpu);
    co_await cpu.exec(50'000, Cat::OTHER); // 50 .. 100 us: preemptible only under full
    co_await cond_resched(cpu);
    co_await cpu.exec(10'000, Cat::OTHER);
}

Tick probe_wakeup(PreemptModel model) {
    KernelConfig cfg = quiet_config();
    cfg.preempt = model;
    Harness h(cfg);
    Cpu& cpu = h.cpu;
    cpu.create_task("worker", SchedPolicy::NORMAL, 0, true, preempt_off_then_cond_resched(cpu));
    cpu.create_task("probe", SchedPolicy::FIFO, 90, true, rt_probe(cpu, h, 10 * PS_PER_US));
    cpu.boot();
    h.sim.run(5 * engine::PS_PER_MS);
    return h.seen.empty() ? 0 : h.seen[0].time;
}

TEST(Sched, AnRtWakeupWaitsForTheFirstPreemptionPointThePreemptionModelHonours) {
    // The probe (SCHED_FIFO) runs first at t = 0, arms its timer for 10 us and sleeps; the
    // switch to the worker costs 2007 ns, so the worker starts at 2.007 us. The timer interrupt at
    // 10 us sets need_resched and takes 1900 ns (300 + 400 + 1000 + 200). The worker keeps
    // preemption off for its first 50 us of work; under PREEMPT=full preempt_enable() switches
    // at once and the probe runs after the 2000 ns switch. Under none and voluntary the switch
    // waits for cond_resched() after 50 us more work and its 10 ns call.
    // Each switch also pays __schedule's raw_spin_lock_irq/unlock: 3 + 4 ns.
    const Tick sw = 2007 * PS_PER_NS;
    const Tick start = sw;
    const Tick irq = 1900 * PS_PER_NS;
    const Tick full = start + 50 * PS_PER_US + irq + sw;
    const Tick vol = start + 100 * PS_PER_US + irq + 10 * PS_PER_NS + sw;
    EXPECT_EQ(probe_wakeup(PreemptModel::FULL), full);
    EXPECT_EQ(probe_wakeup(PreemptModel::VOLUNTARY), vol);
    EXPECT_EQ(probe_wakeup(PreemptModel::NONE), vol);
}


engine::Task<> nmi_handler(Cpu& cpu, void* ctx) {
    static_cast<Harness*>(ctx)->observe();
    co_return;
}

TEST(Irq, SoftMaskedInterruptIsRecordedAtOnceAndReplayedAtUnmask) {
    // PowerPC lazy masking: local_irq_disable only sets a flag. The interrupt at 10 us is taken
    // to be recorded (50 cycles charged to the masked section), the CPU hard-disables, and the
    // interrupt is replayed at local_irq_enable: the section ends at 3 + 20'000 + 50 = 20'053 ns,
    // enable 4 -> 20'057, replay 30 + entry 300 + exit 200 + softirq round 100 + irq enable 4
    // -> the softirq runs at 20'691 ns.
    KernelConfig cfg = quiet_config();
    cfg.soft_irq_masking = true;
    KernelCosts costs = round_costs();
    costs.soft_mask_hit = 50;
    costs.soft_mask_replay = 30;
    Harness h(cfg, costs);
    Cpu& cpu = h.cpu;
    unsigned v = Cpu::FIRST_DEVICE_VECTOR;
    cpu.request_irq(v, &device_irq, nullptr, "dev");
    cpu.open_softirq(NET_RX_SOFTIRQ, &net_rx, &h);
    cpu.create_task("kthread", SchedPolicy::NORMAL, 0, true, irqs_off_section(cpu, h));
    IrqAt irq(cpu, v);
    h.sim.schedule_at(10 * PS_PER_US, &irq);
    cpu.boot();
    h.sim.run(5 * engine::PS_PER_MS);
    std::vector<Tick> softirq_at;
    for (const auto& o : h.seen)
        if (o.ctx == CtxKind::SOFTIRQ) softirq_at.push_back(o.time);
    ASSERT_EQ(softirq_at.size(), 1u);
    EXPECT_EQ(softirq_at[0], 20'691 * PS_PER_NS);
    EXPECT_EQ(cpu.soft_masked_irqs(), 1u);
}

Tick nmi_time(bool pseudo_nmi, Tick* ordinary) {
    // IRQs are masked from 3 ns to 20.003 us. An NMI-priority vector and an ordinary one both
    // fire at 10 us. With priority masking (pseudo-NMI) the NMI passes the mask: its handler runs
    // after the entry, at 10.300 us; the ordinary one waits for the unmask. Without it, both wait.
    KernelConfig cfg = quiet_config();
    cfg.pseudo_nmi = pseudo_nmi;
    Harness h(cfg);
    unsigned nmi = Cpu::FIRST_DEVICE_VECTOR, dev = Cpu::FIRST_DEVICE_VECTOR + 1;
    h.cpu.request_nmi(nmi, &nmi_handler, &h, "pmu");
    h.cpu.request_irq(dev, &device_irq, nullptr, "dev");
    h.cpu.open_softirq(NET_RX_SOFTIRQ, &net_rx, &h);
    h.cpu.create_task("kthread", SchedPolicy::NORMAL, 0, true, irqs_off_section(h.cpu, h));
    IrqAt a(h.cpu, nmi), b(h.cpu, dev);
    h.sim.schedule_at(10 * PS_PER_US, &a);
    h.sim.schedule_at(10 * PS_PER_US, &b);
    h.cpu.boot();
    h.sim.run(5 * engine::PS_PER_MS);
    Tick t_nmi = 0;
    *ordinary = 0;
    for (const auto& o : h.seen) {
        if (o.ctx == CtxKind::NMI) {
            t_nmi = o.time;
            EXPECT_TRUE(in_nmi(o.preempt_count));
        } else if (o.ctx == CtxKind::SOFTIRQ) {
            *ordinary = o.time;
        } else if (o.ctx == CtxKind::HARDIRQ && !pseudo_nmi) {
            t_nmi = o.time;
        }
    }
    return t_nmi;
}

TEST(Irq, PriorityMaskingLetsAPseudoNmiThroughWhileOrdinaryInterruptsWait) {
    Tick ordinary = 0;
    EXPECT_EQ(nmi_time(true, &ordinary), 10'300 * PS_PER_NS);
    EXPECT_GT(ordinary, 20 * PS_PER_US);
    EXPECT_GT(nmi_time(false, &ordinary), 20 * PS_PER_US); // masked like any interrupt
}

engine::Task<> long_nmi_handler(Cpu& cpu, void* ctx) {
    static_cast<Harness*>(ctx)->observe();
    co_await cpu.exec(1000, Cat::OTHER);
}

TEST(Irq, ASecondPseudoNmiRaisedDuringAnNmiHandlerWaitsForItsExit) {
    // Two NMI-priority vectors, IRQs masked from 3 ns to 20.003 us (1 GHz: a cycle is a ns). The
    // first fires at 10 us: entry 300, its handler at 10.300 us, 1000 cycles to 11.300 us, exit
    // 200 to 11.500 us. The second fires at 10.500 us, inside the first handler's work: NMIs do
    // not nest, so it waits for the first's exit; its handler runs after its entry, at 11.800 us
    // (nested at the first's next dispatch step it would run at 11.300 + 300 = 11.600 us).
    KernelConfig cfg = quiet_config();
    cfg.pseudo_nmi = true;
    Harness h(cfg);
    unsigned a = Cpu::FIRST_DEVICE_VECTOR, b = Cpu::FIRST_DEVICE_VECTOR + 1;
    h.cpu.request_nmi(a, &long_nmi_handler, &h, "pmu0");
    h.cpu.request_nmi(b, &long_nmi_handler, &h, "pmu1");
    h.cpu.create_task("kthread", SchedPolicy::NORMAL, 0, true, irqs_off_section(h.cpu, h));
    IrqAt ia(h.cpu, a), ib(h.cpu, b);
    h.sim.schedule_at(10 * PS_PER_US, &ia);
    h.sim.schedule_at(10'500 * PS_PER_NS, &ib);
    h.cpu.boot();
    h.sim.run(5 * engine::PS_PER_MS);
    std::vector<Tick> nmi_at;
    for (const auto& o : h.seen)
        if (o.ctx == CtxKind::NMI) nmi_at.push_back(o.time);
    ASSERT_EQ(nmi_at.size(), 2u);
    EXPECT_EQ(nmi_at[0], 10'300 * PS_PER_NS);
    EXPECT_EQ(nmi_at[1], 11'800 * PS_PER_NS);
    EXPECT_EQ(h.cpu.nmis(), 2u);
}

engine::Task<> long_irq_handler(Cpu& cpu, void* ctx) {
    static_cast<Harness*>(ctx)->observe();
    cpu.raise_softirq_irqoff(NET_RX_SOFTIRQ);
    co_await cpu.exec(1000, Cat::OTHER);
}

TEST(Irq, PseudoNmisDuringAHardirqsEntryAndExitStepsRunBetweenThoseStepsExecs) {
    // A hardirq's entry (300 + extra 50) and exit (200 + extra 20) steps are the dispatch loop's
    // (Cpu::irq_steps); an NMI cuts their execs like any other. A kernel thread computes for
    // 100 us; an ordinary interrupt fires at 10 us; NMIs at 10.100 us (in its entry) and 13 us.
    // The entry is cut after 100 ns; the first NMI: entry to 10.450, handler 10.450-11.450, exit
    // to 11.670. The entry's other 200 ns end at 11.870, its extra at 11.920: the handler runs
    // 11.920-12.920, the exit runs from 12.920 and is cut at 13.000 after 80 ns; the second NMI:
    // handler at 13.350, exit to 14.570. The exit's other 120 ns end at 14.690, its extra at
    // 14.710; then NET_RX: round 100 and enable 4, at 14.814 us. The thread ends late by
    // 4.710 + 104 + handler 1 + disable 3 = 4.818 us.
    KernelConfig cfg = quiet_config();
    cfg.pseudo_nmi = true;
    KernelCosts costs = round_costs();
    costs.irq_entry_extra = 50;
    costs.exception_return_extra = 20;
    Harness h(cfg, costs);
    const unsigned nmi = Cpu::FIRST_DEVICE_VECTOR, dev = Cpu::FIRST_DEVICE_VECTOR + 1;
    h.cpu.request_nmi(nmi, &long_nmi_handler, &h, "pmu");
    h.cpu.request_irq(dev, &long_irq_handler, &h, "dev");
    h.cpu.open_softirq(NET_RX_SOFTIRQ, &net_rx, &h);
    h.cpu.create_task("kthread", SchedPolicy::NORMAL, 0, true, busy_kthread(h.cpu, h, 100'000));
    IrqAt d(h.cpu, dev), n1(h.cpu, nmi), n2(h.cpu, nmi);
    h.sim.schedule_at(10 * PS_PER_US, &d);
    h.sim.schedule_at(10'100 * PS_PER_NS, &n1);
    h.sim.schedule_at(13 * PS_PER_US, &n2);
    h.cpu.boot();
    h.sim.run(5 * engine::PS_PER_MS);
    ASSERT_EQ(h.seen.size(), 5u);
    EXPECT_EQ(h.seen[0].ctx, CtxKind::NMI);
    EXPECT_EQ(h.seen[0].time, 10'450 * PS_PER_NS);
    EXPECT_EQ(h.seen[1].ctx, CtxKind::HARDIRQ);
    EXPECT_EQ(h.seen[1].time, 11'920 * PS_PER_NS);
    EXPECT_EQ(h.seen[1].preempt_count, HARDIRQ_OFFSET);
    EXPECT_EQ(h.seen[2].ctx, CtxKind::NMI);
    EXPECT_EQ(h.seen[2].time, 13'350 * PS_PER_NS);
    EXPECT_EQ(h.seen[3].ctx, CtxKind::SOFTIRQ);
    EXPECT_EQ(h.seen[3].time, 14'814 * PS_PER_NS);
    EXPECT_EQ(h.seen[4].ctx, CtxKind::TASK);
    EXPECT_EQ(h.seen[4].time, 104'818 * PS_PER_NS);
    EXPECT_EQ(h.cpu.nmis(), 2u);
    EXPECT_EQ(h.cpu.stats().hardirqs, 1u);
}

// A plain handler whose last step carries both its exec and the end (IrqStep::end with cycles):
// step 0 observes, raises NET_RX and computes 1 us; step 1 observes and returns 500 cycles masked
// with the end. No step is asked for after it (`after_end` counts any).
struct LastExecEnds {
    Harness& h;
    int after_end = 0;
};

IrqStep last_exec_ends_irq(Cpu& cpu, void* ctx, unsigned step) {
    auto& l = *static_cast<LastExecEnds*>(ctx);
    switch (step) {
    case 0:
        l.h.observe();
        cpu.raise_softirq_irqoff(NET_RX_SOFTIRQ);
        return {1000, Cat::DRIVER, false};
    case 1: l.h.observe(); return {500, Cat::IRQ_MASK, true};
    default: ++l.after_end; return {0, Cat::DRIVER, true};
    }
}

TEST(Irq, APlainHandlersStepWithCyclesAndTheEndRunsItsExecThenIrqExitWithoutAnotherStep) {
    // Entry 300 + extra 50, exit 200 + extra 20 (a cycle is a ns). A kernel thread computes for
    // 100 us; the interrupt at 10 us: step 0 at 10,350, step 1 at 11,350, its 500 to 11,850, then
    // irq_exit 200 and the extra 20 to 12,070; NET_RX: round 100, enable 4, at 12,174; its 1 and
    // disable 3: the thread ends late by 2,178 ns, at 102,178.
    // With a pseudo-NMI at 11,600 the last exec is cut after 250 (the frame waits at irq_exit):
    // the NMI's entry 350 to 11,950 (it observes), its 1,000 and exit 220 to 13,170; the exec's
    // other 250 to 13,420, exit 220 to 13,640, NET_RX at 13,744; the thread at 103,748.
    // The same with in-place events off (every exec queued) and on.
    for (int with_nmi = 0; with_nmi < 2; ++with_nmi) {
        const Tick nmi_took = with_nmi ? 1570 * PS_PER_NS : 0; // 350 + 1,000 + 220
        std::vector<std::pair<CtxKind, Tick>> want{{CtxKind::HARDIRQ, 10'350 * PS_PER_NS},
                                                   {CtxKind::HARDIRQ, 11'350 * PS_PER_NS}};
        if (with_nmi) want.emplace_back(CtxKind::NMI, 11'950 * PS_PER_NS);
        want.emplace_back(CtxKind::SOFTIRQ, 12'174 * PS_PER_NS + nmi_took);
        want.emplace_back(CtxKind::TASK, 102'178 * PS_PER_NS + nmi_took);
        std::uint64_t events[2] = {};
        for (int merge = 0; merge < 2; ++merge) {
            KernelConfig cfg = quiet_config();
            cfg.pseudo_nmi = true;
            KernelCosts costs = round_costs();
            costs.irq_entry_extra = 50;
            costs.exception_return_extra = 20;
            Harness h(cfg, costs);
            h.sim.set_inline_events(merge == 1);
            LastExecEnds l{h};
            const unsigned nmi = Cpu::FIRST_DEVICE_VECTOR, dev = Cpu::FIRST_DEVICE_VECTOR + 1;
            h.cpu.request_nmi(nmi, &long_nmi_handler, &h, "pmu");
            h.cpu.request_irq(dev, &last_exec_ends_irq, &l, "dev");
            h.cpu.open_softirq(NET_RX_SOFTIRQ, &net_rx, &h);
            h.cpu.create_task("kthread", SchedPolicy::NORMAL, 0, true, busy_kthread(h.cpu, h, 100'000));
            IrqAt d(h.cpu, dev), n(h.cpu, nmi);
            h.sim.schedule_at(10 * PS_PER_US, &d);
            if (with_nmi) h.sim.schedule_at(11'600 * PS_PER_NS, &n);
            h.cpu.boot();
            h.sim.run(5 * engine::PS_PER_MS);
            std::vector<std::pair<CtxKind, Tick>> got;
            for (const Observation& o : h.seen) got.emplace_back(o.ctx, o.time);
            EXPECT_EQ(got, want) << "nmi " << with_nmi << " merging " << merge;
            EXPECT_EQ(l.after_end, 0);
            const CpuStats& st = h.cpu.stats();
            EXPECT_EQ(st.hardirqs, 1u);
            EXPECT_EQ(h.cpu.nmis(), static_cast<std::uint64_t>(with_nmi));
            EXPECT_EQ(st.softirq_runs, 1u);
            const auto& hard = st.cycles[static_cast<std::size_t>(CtxKind::HARDIRQ)];
            EXPECT_EQ(hard[static_cast<std::size_t>(Cat::DRIVER)], 1000u);
            EXPECT_EQ(hard[static_cast<std::size_t>(Cat::IRQ_MASK)], 500u + 50u + 20u);
            EXPECT_EQ(hard[static_cast<std::size_t>(Cat::IRQ_ENTRY_EXIT)], 300u + 200u);
            EXPECT_EQ(h.cpu.preempt_count(), 0u);
            events[merge] = h.sim.events_processed();
        }
        EXPECT_EQ(events[0], events[1]) << "nmi " << with_nmi;
    }
}

engine::Task<> failing_irq_handler(Cpu&, void*) {
    throw std::runtime_error("handler failed");
    co_return;
}

TEST(Irq, AnExceptionFromAnInterruptHandlerLeavesTheRun) {
    Harness h;
    h.cpu.request_irq(Cpu::FIRST_DEVICE_VECTOR, &failing_irq_handler, nullptr, "dev");
    IrqAt d(h.cpu, Cpu::FIRST_DEVICE_VECTOR);
    h.sim.schedule_at(10 * PS_PER_US, &d);
    h.cpu.boot();
    EXPECT_THROW(h.sim.run(5 * engine::PS_PER_MS), std::runtime_error);
}

engine::Task<> masking_path(Cpu& cpu) {
    // 3 disable/enable pairs and 2 save/restore pairs
    for (int i = 0; i < 3; ++i) {
        co_await local_irq_disable(cpu);
        co_await local_irq_enable(cpu);
    }
    for (int i = 0; i < 2; ++i) {
        bool f = co_await local_irq_save(cpu);
        co_await local_irq_restore(cpu, f);
    }
}

TEST(Irq, AHandBuiltPathReportsExactlyItsMaskingOperationsAndTheirCost) {
    // The path never switches (it runs first and ends): counts are its own 3, 3, 2, 2, plus the
    // one disable/enable pair of __schedule when it exits. Cost charged to irq_mask:
    // 3 x (3 + 4) + 2 x (12 + 5) + (3 + 4) = 62 cycles.
    Harness h;
    h.cpu.create_task("path", SchedPolicy::NORMAL, 0, true, masking_path(h.cpu));
    h.cpu.boot();
    h.sim.run(engine::PS_PER_MS);
    const auto& st = h.cpu.stats();
    EXPECT_EQ(st.irqflag_ops[0], 4u);
    EXPECT_EQ(st.irqflag_ops[1], 4u);
    EXPECT_EQ(st.irqflag_ops[2], 2u);
    EXPECT_EQ(st.irqflag_ops[3], 2u);
    EXPECT_EQ(st.cycles[static_cast<std::size_t>(CtxKind::TASK)][static_cast<std::size_t>(Cat::IRQ_MASK)], 62u);
}

// Two CPUs: `sleeper` blocks on CPU 1 at boot, so CPU 1 idles; `waker` on CPU 0 works 10 us and
// then wakes it (wake_up_process charges nothing itself). Returns when the sleeper resumed.
struct RemoteWake {
    explicit RemoteWake(bool idle_polling) {
        KernelConfig cfg = quiet_config();
        cfg.idle_polling = idle_polling;
        c0.emplace(sim, 0, engine::Clock(1'000'000'000), round_costs(), cfg);
        c1.emplace(sim, 1, engine::Clock(1'000'000'000), round_costs(), cfg);
        sleeper = &c1->create_task("sleeper", SchedPolicy::NORMAL, 0, true, sleep_once(*c1, resumed));
        c0->create_task("waker", SchedPolicy::NORMAL, 0, true, wake_after(*c0, *sleeper, 10'000));
        c0->boot();
        c1->boot();
        sim.run(engine::PS_PER_MS);
    }
    static engine::Task<> sleep_once(Cpu& cpu, Tick& resumed) {
        co_await cpu.block();
        resumed = cpu.now();
    }
    static engine::Task<> wake_after(Cpu& cpu, TaskStruct& t, Cycles work) {
        co_await cpu.exec(work, Cat::OTHER);
        cpu.wake_up_process(t);
    }
    engine::Simulation sim{1};
    std::optional<Cpu> c0, c1;
    TaskStruct* sleeper = nullptr;
    Tick resumed = 0;
};

TEST(Sched, ARemoteWakeupOfAnIdleCpuCostsItAReschedIpiUnlessItsIdleLoopPolls) {
    // wake_up_process: the whole wake-up on the caller (try_to_wake_up's wake_list path, where the
    // idle CPU activates the task in a call-function IPI, is in wakelist_test.cpp).
    // Without polling (arm, arm64, e500 idle in WFI/doze with TIF_POLLING_NRFLAG clear), CPU 1
    // takes the reschedule IPI at 10 us: irq entry 300 + scheduler_ipi (nothing) + irq exit 200,
    // then switches to the sleeper (2000 + the rq lock's irq disable/enable 3 + 4): 12,507 ns.
    // Polling (x86 mwait), the flag write wakes it: the switch alone, 12,007 ns, no interrupt.
    RemoteWake wfi(false);
    EXPECT_EQ(wfi.resumed, 12'507 * PS_PER_NS);
    EXPECT_EQ(wfi.c1->stats().hardirqs, 1u);
    RemoteWake mwait(true);
    EXPECT_EQ(mwait.resumed, 12'007 * PS_PER_NS);
    EXPECT_EQ(mwait.c1->stats().hardirqs, 0u);
}

// Wake-up placement (select_task_rq_fair, select_idle_sibling) of a task allowed on CPUs 0-3 whose
// previous CPU is 2: SCHED_FIFO hogs hold CPUs 2 and 3 from 1 us to past the wake-up at 10 us,
// CPUs 0 and 1 idle. The wake-up comes from `waker`'s CPU; `recent` is p->recent_used_cpu.
// `no_llc`: the kernel has no shared-cache domain (an arm32 kernel without CONFIG_SCHED_MC).
struct Placement {
    Placement(int waker, int recent, bool runner0 = false, bool no_llc = false) {
        for (int i = 0; i < 4; ++i) {
            c[i].emplace(sim, i, engine::Clock(1'000'000'000), round_costs(), quiet_config());
            if (no_llc) c[i]->set_sd_llc_id(i + 1, false);
        }
        sleeper = &c[2]->create_task("sleeper", SchedPolicy::NORMAL, 0, true, sleep_once(*c[2]));
        c[2]->create_task("hog2", SchedPolicy::FIFO, 50, true, nap_then_hog(*c[2]));
        c[3]->create_task("hog3", SchedPolicy::FIFO, 50, true, nap_then_hog(*c[3]));
        sleeper->cpus_allowed = {&*c[0], &*c[1], &*c[2], &*c[3]};
        if (runner0) c[0]->create_task("runner0", SchedPolicy::NORMAL, 0, true, run_then_sleep(*c[0]));
        if (recent >= 0) sleeper->recent_used_cpu = &*c[recent];
        from = &*c[waker];
        sim.schedule_at(10 * PS_PER_US, &wake, 0);
        for (auto& x : c) x->boot();
        sim.run(engine::PS_PER_MS);
    }
    static engine::Task<> sleep_once(Cpu& cpu) { co_await cpu.block(); }
    static engine::Task<> run_then_sleep(Cpu& cpu) {
        co_await cpu.exec(5'000, Cat::OTHER);
        co_await cpu.block();
    }
    static engine::Task<> nap_then_hog(Cpu& cpu) {
        co_await schedule_hrtimeout_range(cpu, 1 * PS_PER_US, 0);
        co_await cpu.exec(100'000, Cat::OTHER);
    }
    struct Wake final : engine::EventTarget {
        explicit Wake(Placement* x) : p(x) {}
        Placement* p;
        void on_event(std::uint64_t) override {
            p->busy_at_wake = !p->c[2]->available_idle() && !p->c[3]->available_idle();
            p->vruntime_before = p->sleeper->vruntime;
            p->from->wake_up_process(*p->sleeper);
            p->vruntime_after = p->sleeper->vruntime;
        }
    };
    int landed() const { return sleeper->cpu->id(); }
    engine::Simulation sim{1};
    std::optional<Cpu> c[4];
    TaskStruct* sleeper = nullptr;
    Cpu* from = nullptr;
    bool busy_at_wake = false;
    Tick vruntime_before = 0, vruntime_after = 0; // the sleeper's, around the wake-up
    Wake wake{this};
};

TEST(Sched, AWakeUpFromABusyCpuScansTheMaskAfterPrevAndWrapsToTheFirstIdleCpu) {
    // the waker (CPU 3) is not idle, so wake_affine keeps prev; prev (2) is busy and no CPU was
    // used before it: select_idle_cpu scans 3 (busy), wraps to 0 (idle)
    Placement p(3, -1);
    EXPECT_TRUE(p.busy_at_wake);
    EXPECT_EQ(p.landed(), 0);
    EXPECT_EQ(p.sleeper->nr_migrations, 1u);
    EXPECT_EQ(p.sleeper->recent_used_cpu, &*p.c[2]); // p->recent_used_cpu = prev
}

TEST(Sched, AWakeUpPrefersTheRecentlyUsedCpuWhenItIsIdle) {
    Placement p(3, 1);
    EXPECT_EQ(p.landed(), 1);
}

TEST(Sched, AWakeUpFromAnIdleCpuOfTheMaskTakesThatCpuWhenPrevIsBusy) {
    // wake_affine_idle: the waking CPU (1) is idle and prev is not, so the target is CPU 1, idle
    Placement p(1, -1);
    EXPECT_EQ(p.landed(), 1);
}

TEST(Sched, WithoutASharedCacheDomainAWakeUpStaysOnItsBusyPrevCpu) {
    // As AWakeUpFromABusyCpuScans...: prev (2) busy, but sd_llc is NULL, so select_idle_sibling
    // returns the target (prev) without scanning for CPU 0's or 1's idleness
    Placement p(3, -1, false, true);
    EXPECT_TRUE(p.busy_at_wake);
    EXPECT_EQ(p.landed(), 2);
    EXPECT_EQ(p.sleeper->nr_migrations, 0u);
}

TEST(Sched, WithoutASharedCacheDomainNeitherTheIdleWakerNorTheRecentlyUsedCpuIsTaken) {
    // wake_affine_idle takes an idle waker only when it shares prev's cache; select_idle_sibling
    // takes the recently used CPU only when it shares the target's: both stay with prev (2)
    Placement idle_waker(1, -1, false, true);
    EXPECT_EQ(idle_waker.landed(), 2);
    Placement recent(3, 1, false, true);
    EXPECT_EQ(recent.landed(), 2);
}

TEST(Sched, AMigratedTaskKeepsItsLagBehindTheMinVruntimeOfItsNewRunqueue) {
    // CPU 0's NORMAL task is its first, so it runs from boot with no switch in front: 5,000 cycles,
    // then it sleeps, and CPU 0's min_vruntime is 5 us. The sleeper is CPU 2's only NORMAL task,
    // so its vruntime is CPU 2's min_vruntime: its lag is 0. Moved to CPU 0 (the scan after prev
    // wraps to it), migrate_task_rq_fair keeps the lag: its vruntime becomes 5 us, whatever it was
    // (place_entity's floor, 5 us - sched_latency / 2, is 0).
    Placement p(3, -1, true);
    ASSERT_EQ(p.landed(), 0);
    EXPECT_NE(p.vruntime_before, 5 * PS_PER_US);
    EXPECT_EQ(p.vruntime_after, 5 * PS_PER_US);
}

struct NpDueLog {
    std::vector<bool> due;
    std::vector<bool> by_definition;
    void note(const Cpu& c) {
        due.push_back(CpuTestAccess::np_due(c));
        by_definition.push_back(CpuTestAccess::np_due_by_definition(c));
    }
};

engine::Task<> np_due_task(Cpu& cpu, NpDueLog& log) {
    log.note(cpu);                       // no span open in task context: due
    co_await cpu.exec(1000, Cat::OTHER); // its mark opens the kthread's KERNEL_CODE span (quiet)
    log.note(cpu);                       // not due
    co_await cpu.exec(1000, Cat::OTHER); // 1 .. 2 us, interrupted at 1.5 us
    log.note(cpu);
}

engine::Task<> np_due_irq(Cpu& cpu, void* ctx) {
    static_cast<NpDueLog*>(ctx)->note(cpu); // hardirq, the span open: not due
    co_return;
}

struct PlainEndLog {
    std::vector<Cycles> kept;
    std::vector<Cycles> by_definition;
    std::vector<std::uint64_t> pending;
    void note(const Cpu& c) {
        kept.push_back(CpuTestAccess::plain_end(c));
        by_definition.push_back(CpuTestAccess::plain_end_by_definition(c));
        pending.push_back(CpuTestAccess::pending_irqs(c));
    }
};

engine::Task<> plain_end_task(Cpu& cpu, PlainEndLog& log) {
    log.note(cpu);                       // task context, no span open: the mark is due
    co_await cpu.exec(1000, Cat::OTHER); // 0 .. 1 us; opens the quiet span
    log.note(cpu);                       // nothing due, nothing pending
    co_await local_irq_disable(cpu);
    co_await cpu.exec(1000, Cat::OTHER); // the interrupt raised at 1.5 us waits: masked
    log.note(cpu);                       // pending
    co_await local_irq_enable(cpu);      // takes it (the handler notes in the hardirq)
    log.note(cpu);                       // back in the task, nothing pending
}

engine::Task<> plain_end_irq(Cpu& cpu, void* ctx) {
    static_cast<PlainEndLog*>(ctx)->note(cpu); // hardirq: its vector no longer pending
    co_return;
}

// The kept-flag tests' run: `task` as a kthread, `handler` on the first device vector raised at
// 1.5 us, the run to 5 us, then one more note (idle), in-place events on when `merge`.
template <class Log>
void run_noting(Harness& h, bool merge, Log& log, IrqHandler handler, engine::Task<> task) {
    h.sim.set_inline_events(merge);
    const unsigned v = Cpu::FIRST_DEVICE_VECTOR;
    h.cpu.request_irq(v, handler, &log, "dev");
    h.cpu.create_task("kthread", SchedPolicy::NORMAL, 0, true, std::move(task));
    IrqAt irq(h.cpu, v);
    h.sim.schedule_at(1500 * PS_PER_NS, &irq);
    h.cpu.boot();
    h.sim.run(5 * PS_PER_US);
    log.note(h.cpu);
}

TEST(MergedExecs, TheLeanExecBoundIsZeroWhileTheMarkIsDueOrAnInterruptIsPending) {
    // plain_end_ equals (tracing || np_due_ || pending_irqs_ != 0) ? 0 : the clock's fast end at
    // each note: task context before any exec (the mark due: 0), after the first exec (the fast
    // end), after a masked exec during which the interrupt was raised (pending: 0), in the
    // hardirq (pending cleared by its entry, the span open: the fast end), back in the task (the
    // fast end), and idle after the task has ended (0). In-place events off and on.
    for (int merge = 0; merge < 2; ++merge) {
        Harness h;
        PlainEndLog log;
        run_noting(h, merge == 1, log, &plain_end_irq, plain_end_task(h.cpu, log));
        ASSERT_EQ(log.kept.size(), 6u) << "merging " << merge;
        EXPECT_EQ(log.kept, log.by_definition) << "merging " << merge;
        const Cycles fast = engine::Clock(1'000'000'000).ceil_fast_end();
        EXPECT_EQ(log.kept, (std::vector<Cycles>{0, fast, 0, fast, fast, 0})) << "merging " << merge;
        EXPECT_NE(log.pending[2], 0u) << "merging " << merge;
        EXPECT_EQ(log.pending[3], 0u) << "merging " << merge;
    }
}

TEST(MergedExecs, TheWatchdogMarksDueFlagFollowsIdleDepthAndTheOpenSpan) {
    // PREEMPT=voluntary. The kept flag (np_due_) equals idle_ || (depth_ == 1 ? !np_quiet_ :
    // !np_open_) at each note: task context before any exec (due), after the first exec opened
    // the quiet span (not due), in the hardirq at 1.5 us with the span open (not due), back in
    // the task, and idle after the task has ended (due). In-place events off and on.
    for (int merge = 0; merge < 2; ++merge) {
        Harness h;
        NpDueLog log;
        run_noting(h, merge == 1, log, &np_due_irq, np_due_task(h.cpu, log));
        ASSERT_EQ(log.due.size(), 5u) << "merging " << merge;
        EXPECT_EQ(log.due, log.by_definition) << "merging " << merge;
        EXPECT_TRUE(log.due[0]) << "merging " << merge;
        EXPECT_FALSE(log.due[1]) << "merging " << merge;
        EXPECT_FALSE(log.due[2]) << "merging " << merge;
        EXPECT_TRUE(log.due[4]) << "merging " << merge;
    }
}

// A guest that runs until `stop_at`; each note keeps the dispatch's word and the two fields.
struct WordGuest final : GuestRun {
    Cpu* cpu = nullptr;
    Tick stop_at = 0;
    std::vector<std::pair<std::uint64_t, bool>> notes;
    int enters = 0, exits = 0;
    void note() { notes.emplace_back(CpuTestAccess::guest_or_stalled(*cpu), CpuTestAccess::in_guest_or_stalled(*cpu)); }
    bool runnable() const override { return cpu->now() < stop_at; }
    void enter(Cpu&) override {
        ++enters;
        note(); // in_guest_ set: 1
    }
    Cycles exit(Cpu&, bool) override {
        ++exits;
        note(); // in_guest_ cleared: 0
        return 0;
    }
    Cycles entry_cost(Cpu&) override { return 0; }
};

engine::Task<> empty_irq(Cpu&, void*) { co_return; }

engine::Task<> word_guest_task(Cpu& cpu, WordGuest& g) {
    co_await cpu.run_guest(g);
    g.note(); // back from the guest: 0
    co_await cpu.exec(1000, Cat::OTHER);
}

// Calls vcpu_stall (arg 0) or vcpu_resume (arg 1) on the CPU and notes the word after it.
struct StallAt final : engine::EventTarget {
    WordGuest& g;
    explicit StallAt(WordGuest& w) : g(w) {}
    void on_event(std::uint64_t arg) override {
        if (arg == 0) g.cpu->vcpu_stall();
        else g.cpu->vcpu_resume();
        g.note();
    }
};

TEST(Dispatch, TheGuestOrStalledWordIsNonzeroExactlyInGuestModeOrAStall) {
    // A kernel thread enters a guest at boot (enter: 1); a device interrupt at 1 us takes the
    // CPU from it (exit: 0) and the thread enters again after it (enter: 1); a stall at 1.5 us
    // while in guest mode (1), its end at 1.7 us (1: still in guest mode); the guest stops being
    // runnable at 2 us and an interrupt at 2 us makes the dispatch look (exit: 0), the thread
    // returns from the await (0) and computes 1 us; a stall at 4 us while idle (1) and its end at
    // 5 us (0). Each note: the word equals the two fields' or. In-place events off and on.
    for (int merge = 0; merge < 2; ++merge) {
        Harness h;
        h.sim.set_inline_events(merge == 1);
        WordGuest g;
        g.cpu = &h.cpu;
        g.stop_at = 2 * PS_PER_US;
        const unsigned v = Cpu::FIRST_DEVICE_VECTOR;
        h.cpu.request_irq(v, &empty_irq, nullptr, "dev");
        h.cpu.create_task("vcpu", SchedPolicy::NORMAL, 0, true, word_guest_task(h.cpu, g));
        IrqAt irq(h.cpu, v);
        StallAt stall(g);
        h.sim.schedule_at(1 * PS_PER_US, &irq);
        h.sim.schedule_at(1500 * PS_PER_NS, &stall, 0);
        h.sim.schedule_at(1700 * PS_PER_NS, &stall, 1);
        h.sim.schedule_at(2 * PS_PER_US, &irq);
        h.sim.schedule_at(4 * PS_PER_US, &stall, 0);
        h.sim.schedule_at(5 * PS_PER_US, &stall, 1);
        h.cpu.boot();
        h.sim.run(6 * PS_PER_US);
        const std::vector<std::pair<std::uint64_t, bool>> want{
            {1, true}, {0, false}, {1, true}, {1, true}, {1, true}, {0, false}, {0, false}, {1, true}, {0, false}};
        EXPECT_EQ(g.notes, want) << "merging " << merge;
        EXPECT_EQ(g.enters, 2) << "merging " << merge;
        EXPECT_EQ(g.exits, 2) << "merging " << merge;
        EXPECT_EQ(h.cpu.stats().hardirqs, 2u) << "merging " << merge;
    }
}

} // namespace
} // namespace kdsim::kernel
