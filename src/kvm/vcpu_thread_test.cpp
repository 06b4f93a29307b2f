// vCPU threads that share a host CPU (kvm/vcpu_thread.h), on a 1 GHz clock (1 cycle = 1 ns) with
// the round figures of kvm_test.cpp, so that every expected time is a sum worked out by hand:
// host and guest kernel figures round_costs() (irq entry 300, exit 200, context switch 2000 with
// the runqueue lock's local_irq_disable 3 + enable 4), [kvm] world switch 1000, IPI 200, list
// register 450, kvm_vcpu_block return 300, vcpu put+load 1100.
#include "kvm/vcpu_thread.h"

#include "kernel/cpu_test_support.h"
#include "kernel/sched.h"
#include "kvm/kvm_test_support.h"
#include "kvm/kvm.h"

#include <gtest/gtest.h>

#include <memory>
#include <vector>

namespace kdsim::kvm {
namespace {

using engine::PS_PER_NS;
using engine::Tick;
using kernel::Cat;
using kernel::Cpu;
using testing::KickAt;
using testing::round_kvm;

constexpr Cycles SWITCH = 2000 + 3 + 4; // the host's context switch with its runqueue lock

// One host CPU and a one-vCPU guest whose thread runs on it; host tasks made by `before` exist
// ahead of the vCPU thread (first in the host's runqueue).
struct Shared {
    template <class F>
    explicit Shared(F before, Tick halt_poll_ns = 0) {
        kernel::KernelConfig cfg;
        cfg.hz = 100; // the first tick at 10 ms, after every test's end
        host = std::make_unique<Cpu>(sim, 0, engine::Clock(1'000'000'000), kernel::testing::round_costs(), cfg);
        guest = std::make_unique<Cpu>(sim, 0, engine::Clock(1'000'000'000), kernel::testing::round_costs(), cfg);
        before(*this);
        vm = std::make_unique<Vm>(round_kvm(), kernel::testing::round_costs(), std::vector<Cpu*>{guest.get()},
                                  std::vector<Cpu*>{host.get()}, HostFpsimd{}, halt_poll_ns);
    }
    Shared() : Shared([](Shared&) {}) {}
    void run(Tick until) {
        host->boot();
        guest->boot();
        sim.run(until);
        host->finish();
        guest->finish();
        vm->finish();
    }
    VcpuThread& thread() { return *vm->vcpu(0).thread(); }
    engine::Simulation sim{1};
    std::unique_ptr<Cpu> host, guest;
    std::unique_ptr<Vm> vm;
    std::vector<Tick> seen;
};

engine::Task<> work_then_note(Cpu& cpu, Cycles c, Shared& s) {
    co_await cpu.exec(c, Cat::OTHER);
    s.seen.push_back(cpu.now());
}

engine::Task<> work_then_sleep(Cpu& cpu, Cycles c, Shared& s) {
    co_await cpu.exec(c, Cat::OTHER);
    s.seen.push_back(cpu.now());
    co_await cpu.block();
}

engine::Task<> noop_handler(Cpu&, void*) { co_return; }

engine::Task<> note_handler(Cpu& cpu, void* ctx) {
    static_cast<Shared*>(ctx)->seen.push_back(cpu.now());
    co_return;
}

TEST(VcpuThread, AGuestExecWaitsForTheHostTaskBeforeItAndTheSwitchToTheThread) {
    // The host runs a task for M = 5,000 cycles first; then it sleeps, the host switches to the
    // vCPU thread (2,007), and the guest's N = 10,000 cycles run: they end at M + switch + N.
    Shared s([](Shared& x) {
        x.host->create_task("hog", kernel::SchedPolicy::NORMAL, 0, false, work_then_sleep(*x.host, 5'000, x));
    });
    s.guest->create_task("guest-work", kernel::SchedPolicy::NORMAL, 0, false, work_then_note(*s.guest, 10'000, s));
    s.run(engine::PS_PER_MS);
    ASSERT_EQ(s.seen.size(), 2u);
    EXPECT_EQ(s.seen[0], 5'000 * PS_PER_NS);
    EXPECT_EQ(s.seen[1], (5'000 + SWITCH + 10'000) * PS_PER_NS);
    EXPECT_EQ(s.thread().stats().steal, (5'000 + SWITCH) * PS_PER_NS); // runnable from the start
    // the guest was busy for its 10,000 cycles and its own switch to its idle task after them:
    // the stall is no busy time
    EXPECT_EQ(s.guest->stats().busy_ticks, (10'000 + SWITCH) * PS_PER_NS);
}

TEST(VcpuThread, AHostInterruptStallsTheRunningGuestForItsHandlerExitAndEntry) {
    // The thread enters at 0; a host interrupt at 3,000 takes 300 entry + 200 exit, and the exit
    // from the guest and the entry back cost 1,000: the guest's 10,000 cycles end 1,500 later.
    Shared s;
    s.host->request_irq(8, &noop_handler, nullptr, "host-nic");
    kernel::testing::IrqAt irq(*s.host, 8);
    s.sim.schedule_at(3'000 * PS_PER_NS, &irq, 0);
    s.guest->create_task("guest-work", kernel::SchedPolicy::NORMAL, 0, false, work_then_note(*s.guest, 10'000, s));
    s.run(engine::PS_PER_MS);
    ASSERT_EQ(s.seen.size(), 1u);
    EXPECT_EQ(s.seen[0], (10'000 + 300 + 200 + 1'000) * PS_PER_NS);
    EXPECT_EQ(s.thread().stats().preempted, 1u);
    EXPECT_EQ(s.thread().stats().steal, 1'500 * PS_PER_NS);
    // the host's time in the guest is the thread's user time (account_guest_time): the guest's
    // 10,000 cycles and its switch to its idle task, after which it is in WFI
    EXPECT_EQ(s.host->stats().cycles[static_cast<std::size_t>(kernel::CtxKind::TASK)][static_cast<std::size_t>(Cat::USER)],
              10'000u + SWITCH);
}

TEST(VcpuThread, AVcpuInWfiBlocksItsThreadAndFreesTheHostCpu) {
    // The guest has nothing to do: the thread blocks at once and the host task behind it runs
    // after one context switch, not at the end of a time slice.
    Shared s;
    s.host->create_task("host-task", kernel::SchedPolicy::NORMAL, 0, false, work_then_sleep(*s.host, 5'000, s));
    s.run(engine::PS_PER_MS);
    ASSERT_EQ(s.seen.size(), 1u);
    EXPECT_EQ(s.seen[0], (SWITCH + 5'000) * PS_PER_NS);
    EXPECT_EQ(s.thread().stats().blocks, 1u);
    EXPECT_EQ(s.thread().stats().steal, 0u);
    EXPECT_EQ(s.thread().state(), VcpuThread::State::BLOCKED);
}

TEST(VcpuThread, AnInterruptForABlockedVcpuWakesItsThroughTheHostScheduler) {
    // The vCPU sleeps in WFI; a kick at 10,000 reaches it after the 200 IPI, wakes the thread, the
    // idle host switches to it (2,007), and the guest's delivery is the rest of the WFI path:
    // 300 kvm_vcpu_block return + 550 load + 500 entry half + 450 list register = 1,800; then the
    // guest's own irq entry, 300, before its handler.
    Shared s;
    s.guest->request_irq(8, &note_handler, &s, "virtio");
    KickAt kick(s.vm->vcpu(0));
    s.sim.schedule_at(10'000 * PS_PER_NS, &kick, 0);
    s.run(engine::PS_PER_MS);
    EXPECT_EQ(s.vm->paths().irq_wfi_thread(false), 1'800u);
    ASSERT_EQ(s.seen.size(), 1u);
    EXPECT_EQ(s.seen[0], (10'000 + 200 + SWITCH + 1'800 + 300) * PS_PER_NS);
    EXPECT_EQ(s.thread().stats().wakeups, 1u);
    EXPECT_EQ(s.thread().stats().steal, SWITCH * PS_PER_NS); // runnable from the wake-up to the entry
    EXPECT_EQ(s.vm->vcpu(0).stats().wfi_wakes, 1u);
}

TEST(VcpuThread, AnInterruptInjectedWhileTheThreadIsOutWaitsForTheEntryWithoutAnExit) {
    // The host task runs 5,000 first; a kick at 1,000 reaches the runnable but waiting vCPU at
    // 1,200: no exit, its list register is written on the entry at 7,007, and the guest's handler
    // starts after 450 + its irq entry 300.
    Shared s([](Shared& x) {
        x.host->create_task("hog", kernel::SchedPolicy::NORMAL, 0, false, work_then_sleep(*x.host, 5'000, x));
    });
    s.guest->request_irq(8, &note_handler, &s, "virtio");
    s.guest->create_task("guest-work", kernel::SchedPolicy::NORMAL, 0, false, work_then_note(*s.guest, 100'000, s));
    KickAt kick(s.vm->vcpu(0));
    s.sim.schedule_at(1'000 * PS_PER_NS, &kick, 0);
    s.run(engine::PS_PER_MS);
    ASSERT_GE(s.seen.size(), 2u);
    EXPECT_EQ(s.seen[1], (5'000 + SWITCH + 450 + 300) * PS_PER_NS);
    EXPECT_EQ(s.vm->vcpu(0).stats().exits[static_cast<std::size_t>(Exit::IRQ)], 0u);
}

// Halt polling on a shared host CPU (kvm_vcpu_halt with kvm_vcpu_can_poll's single_task_running).
// Kvm.ko's cap 500 us. The first halt starts at boot with vcpu->halt_poll_ns 0: the thread blocks.
// A kick at 10,000 wakes it (200 IPI, 2,007 switch, 1,800 WFI path, 300 guest irq entry: the
// handler at 14,307); that halt, 12,207 long, was shorter than the cap, so the window grows to
// halt_poll_ns_grow_start, 10 us, and the guest's next WFI, after its irq exit (200), at 14,507,
// polls until 24,507.
constexpr Tick CAP = 500 * engine::PS_PER_US;
constexpr Tick SECOND_HALT = 14'507;

struct WakeAt final : engine::EventTarget {
    Cpu& cpu;
    kernel::TaskStruct* t = nullptr;
    explicit WakeAt(Cpu& c) : cpu(c) {}
    void on_event(std::uint64_t) override { cpu.wake_up_process(*t); }
};

engine::Task<> sleep_then_work(Cpu& cpu, Cycles c, Shared& s) {
    co_await cpu.block();
    co_await cpu.exec(c, Cat::OTHER);
    s.seen.push_back(cpu.now());
    co_await cpu.block();
}

// The shared set-up of these tests: the guest's virtio interrupt noted in `s.seen`, and a kick at
// 10,000 (the first halt's wake-up, which grows the window) and one at `second_ns`.
struct PolledGuest {
    template <class F>
    explicit PolledGuest(F before) : s(before, CAP) {
        s.guest->request_irq(8, &note_handler, &s, "virtio");
    }
    PolledGuest() : PolledGuest([](Shared&) {}) {}
    void kicks(Tick second_ns) {
        s.sim.schedule_at(10'000 * PS_PER_NS, &first, 0);
        s.sim.schedule_at(second_ns * PS_PER_NS, &second, 0);
    }
    Shared s;
    KickAt first{s.vm->vcpu(0)}, second{s.vm->vcpu(0)};
};

TEST(VcpuThreadHaltPoll, AnInterruptWhileTheThreadPollsNeedsNoIpiNoWakeUpAndNoSwitch) {
    // The second kick, at 20,000, finds the thread polling: no IPI, and the delivery is the poll
    // loop's: 5 spin + 300 kvm_vcpu_halt return + 500 entry half + 450 list register = 1,255,
    // then the guest's irq entry 300.
    PolledGuest g;
    Shared& s = g.s;
    g.kicks(20'000);
    s.run(engine::PS_PER_MS);
    EXPECT_EQ(s.vm->paths().irq_poll_wake(false), 1'255u);
    ASSERT_EQ(s.seen.size(), 2u);
    EXPECT_EQ(s.seen[0], 14'307 * PS_PER_NS);
    EXPECT_EQ(s.seen[1], (20'000 + 1'255 + 300) * PS_PER_NS);
    EXPECT_EQ(s.thread().stats().wakeups, 1u); // the first kick's only
    // polled: this halt's 5,493, then the next halt's whole 10 us window (from 21,755, after the
    // guest's irq exit; nothing comes), after which the thread blocks
    EXPECT_EQ(s.thread().stats().polled, (20'000 - SECOND_HALT + 10'000) * PS_PER_NS);
    EXPECT_EQ(s.thread().stats().blocks, 2u); // at boot and after the last window
    EXPECT_EQ(s.vm->vcpu(0).stats().halt_attempted_poll, 1u);
    EXPECT_EQ(s.vm->vcpu(0).stats().halt_successful_poll, 1u);
    EXPECT_EQ(s.vm->vcpu(0).halt_poll(), 10 * engine::PS_PER_US); // covered by the poll: kept
}

TEST(VcpuThreadHaltPoll, APollThatRunsOutBlocksTheThreadAtTheEndOfItsWindow) {
    // The thread polls from 14,507 to 24,507 and blocks; a kick at 40,000 takes the wake-up path
    // again: 200 IPI, 2,007 switch, 1,800, 300. That halt, 27,700 long, was longer than the
    // window and shorter than the cap: the window doubles.
    PolledGuest g;
    Shared& s = g.s;
    g.kicks(40'000);
    s.run(engine::PS_PER_MS);
    ASSERT_EQ(s.seen.size(), 2u);
    EXPECT_EQ(s.seen[1], (40'000 + 200 + SWITCH + 1'800 + 300) * PS_PER_NS);
    // polled: this halt's whole 10 us, then the next halt's whole (doubled) 20 us window
    EXPECT_EQ(s.thread().stats().polled, 30 * engine::PS_PER_US);
    EXPECT_EQ(s.thread().stats().wakeups, 2u);
    EXPECT_EQ(s.thread().stats().blocks, 3u); // at boot, at 24,507, after the last window
    EXPECT_EQ(s.vm->vcpu(0).stats().halt_attempted_poll, 1u);
    EXPECT_EQ(s.vm->vcpu(0).stats().halt_successful_poll, 0u);
    EXPECT_EQ(s.vm->vcpu(0).halt_poll(), 20 * engine::PS_PER_US);
    // the host CPU was busy for the polls, the thread's time in KVM (virt), not guest (user) time:
    // 30,000 cycles at 1 GHz, and no other host work of the thread is virt here (no host
    // interrupt, no preemption)
    EXPECT_GE(s.host->stats().busy_ticks, 30 * engine::PS_PER_US);
    EXPECT_EQ(s.host->stats().cycles[static_cast<std::size_t>(kernel::CtxKind::TASK)][static_cast<std::size_t>(Cat::VIRT)],
              30'000u);
}

TEST(VcpuThreadHaltPoll, ATaskWokenOnTheHostCpuEndsThePollAndRunsAfterOneSwitch) {
    // A host task sleeps from boot (the thread's first entry waits for its switch, 2,007, so the
    // first kick's handler comes at 14,307 as in the other tests: the thread is woken at 10,200
    // either way). Woken at 16,000 while the thread polls, it ends the poll at once
    // (single_task_running() is false): the thread blocks, without being preempted first, and
    // the task runs after one switch. The kick at 30,000 then wakes the blocked thread.
    kernel::TaskStruct* sleeper = nullptr;
    PolledGuest g([&sleeper](Shared& x) {
        sleeper = &x.host->create_task("sleeper", kernel::SchedPolicy::NORMAL, 0, false, sleep_then_work(*x.host, 5'000, x));
    });
    Shared& s = g.s;
    WakeAt wake(*s.host);
    wake.t = sleeper;
    g.kicks(30'000);
    s.sim.schedule_at(16'000 * PS_PER_NS, &wake, 0);
    s.run(engine::PS_PER_MS);
    ASSERT_EQ(s.seen.size(), 3u);
    EXPECT_EQ(s.seen[0], 14'307 * PS_PER_NS);
    EXPECT_EQ(s.seen[1], (16'000 + SWITCH + 5'000) * PS_PER_NS);
    EXPECT_EQ(s.seen[2], (30'000 + 200 + SWITCH + 1'800 + 300) * PS_PER_NS);
    // polled: 1,493 until the task's wake-up, then the next halt's whole window, doubled to 20 us
    // (that halt, 32,207 - 14,507 = 17,700, outlasted the 10 us window)
    EXPECT_EQ(s.thread().stats().polled, (16'000 - SECOND_HALT + 20'000) * PS_PER_NS);
    EXPECT_EQ(s.thread().stats().preempted, 0u);
    EXPECT_EQ(s.thread().stats().blocks, 3u); // at boot (after the task's switch), at 16,000, after the last window
    EXPECT_EQ(s.vm->vcpu(0).stats().halt_attempted_poll, 1u);
    EXPECT_EQ(s.vm->vcpu(0).stats().halt_successful_poll, 0u);
}

// vcpu_affinity: a one-vCPU guest whose thread starts on host CPU 0 and may run on CPUs 0 and 1
// (`unpinned`; else pinned to 0). With `hog`, a SCHED_FIFO task on CPU 0 sleeps from the start
// until an hrtimer at 5,000 wakes it, and runs 100,000 cycles. The guest is in WFI (its thread blocked) from the
// start, and a kick at 10,000 wakes it.
struct TwoHosts {
    TwoHosts(bool unpinned, bool hog) {
        kernel::KernelConfig cfg;
        cfg.hz = 100; // the first tick at 10 ms, after every test's end
        host0 = std::make_unique<Cpu>(sim, 0, engine::Clock(1'000'000'000), kernel::testing::round_costs(), cfg);
        host1 = std::make_unique<Cpu>(sim, 1, engine::Clock(1'000'000'000), kernel::testing::round_costs(), cfg);
        guest = std::make_unique<Cpu>(sim, 0, engine::Clock(1'000'000'000), kernel::testing::round_costs(), cfg);
        if (hog) host0->create_task("hog", kernel::SchedPolicy::FIFO, 50, false, sleep_then_run(*host0, *this));
        std::vector<Cpu*> affinity;
        if (unpinned) affinity = {host0.get(), host1.get()};
        vm = std::make_unique<Vm>(round_kvm(), kernel::testing::round_costs(), std::vector<Cpu*>{guest.get()},
                                  std::vector<Cpu*>{host0.get()}, HostFpsimd{}, 0, affinity);
        guest->request_irq(8, &note, this, "virtio");
        kick = std::make_unique<KickAt>(vm->vcpu(0));
        sim.schedule_at(10'000 * PS_PER_NS, kick.get(), 0);
    }
    static engine::Task<> sleep_then_run(Cpu& cpu, TwoHosts& h) {
        co_await kernel::schedule_hrtimeout_range(cpu, 5'000 * PS_PER_NS, 0);
        co_await cpu.exec(100'000, Cat::OTHER);
        h.hog_done = cpu.now();
        co_await cpu.block();
    }
    static engine::Task<> note(Cpu& cpu, void* ctx) {
        static_cast<TwoHosts*>(ctx)->guest_irq.push_back(cpu.now());
        co_return;
    }
    void run() {
        host0->boot();
        host1->boot();
        guest->boot();
        sim.run(engine::PS_PER_MS);
        host0->finish();
        host1->finish();
        guest->finish();
        vm->finish();
    }
    VcpuThread& thread() { return *vm->vcpu(0).thread(); }
    engine::Simulation sim{1};
    std::unique_ptr<Cpu> host0, host1, guest;
    std::unique_ptr<Vm> vm;
    std::unique_ptr<KickAt> kick;
    std::vector<Tick> guest_irq;
    Tick hog_done = 0;
};

// The delivery on an idle host CPU, as in AnInterruptForABlockedVcpuWakesItsThroughTheHostScheduler:
// the kick's 200, the switch to the thread, the rest of the WFI path 1,800, the guest's irq entry 300.
constexpr Tick IDLE_DELIVERY = 10'000 + 200 + SWITCH + 1'800 + 300;
// Woken on another idle host CPU, that CPU first takes the reschedule IPI (arm64 idles in WFI, not
// polling): its irq entry 300 and exit 200.
constexpr Tick REMOTE_IDLE_DELIVERY = IDLE_DELIVERY + 300 + 200;

TEST(VcpuThreadAffinity, AThreadWokenWhileAFifoTaskHasItsCpuRunsOnAnIdleCpuOfItsAffinity) {
    // select_idle_sibling: prev (CPU 0) runs the hog, the recently used CPU is prev itself, so the
    // scan of the mask from prev + 1 finds CPU 1 idle; the thread runs there after its IPI.
    TwoHosts h(true, true);
    h.run();
    ASSERT_EQ(h.guest_irq.size(), 1u);
    EXPECT_EQ(h.guest_irq[0], REMOTE_IDLE_DELIVERY * PS_PER_NS);
    EXPECT_LT(h.guest_irq[0], h.hog_done); // long before the hog ends
    EXPECT_EQ(h.thread().task().nr_migrations, 1u);
    EXPECT_EQ(&h.thread().host(), h.host1.get());
    EXPECT_EQ(h.thread().task().cpu, h.host1.get());
}

TEST(VcpuThreadAffinity, APinnedThreadWaitsForTheFifoTaskOnItsCpu) {
    // The same kick, the thread pinned to CPU 0: it waits until the hog blocks, then the switch.
    TwoHosts h(false, true);
    h.run();
    ASSERT_EQ(h.guest_irq.size(), 1u);
    ASSERT_GT(h.hog_done, 0u);
    EXPECT_EQ(h.guest_irq[0], h.hog_done + (SWITCH + 1'800 + 300) * PS_PER_NS);
    EXPECT_EQ(h.thread().task().nr_migrations, 0u);
    EXPECT_EQ(&h.thread().host(), h.host0.get());
}

TEST(VcpuThreadAffinity, AThreadWhosePreviousCpuIsIdleStaysThere) {
    // No hog: CPU 0 is idle at the kick, and select_idle_sibling keeps prev.
    TwoHosts h(true, false);
    h.run();
    ASSERT_EQ(h.guest_irq.size(), 1u);
    EXPECT_EQ(h.guest_irq[0], IDLE_DELIVERY * PS_PER_NS);
    EXPECT_EQ(h.thread().task().nr_migrations, 0u);
    EXPECT_EQ(&h.thread().host(), h.host0.get());
}

} // namespace
} // namespace kdsim::kvm

namespace kdsim::kvm {
namespace {

// The host's load balancer and a queued vCPU thread (Cpu::load_balance): host CPUs 0 and 1 form one
// sched_domain; a SCHED_FIFO host task spins on CPU 0 from the start, so the vCPU thread, allowed on
// both and started on CPU 0, waits there runnable and never runs; the guest never idles. The host
// runs HZ = 100 (its first tick at 10 ms), the guest HZ = 50 (its first at 20 ms, after the test).
struct QueuedThread {
    QueuedThread() {
        kernel::KernelConfig host_cfg, guest_cfg;
        host_cfg.hz = 100;
        guest_cfg.hz = 50;
        kernel::KernelCosts k = kernel::testing::round_costs();
        k.load_balance = 1000;
        host0 = std::make_unique<Cpu>(sim, 0, engine::Clock(1'000'000'000), k, host_cfg);
        host1 = std::make_unique<Cpu>(sim, 1, engine::Clock(1'000'000'000), k, host_cfg);
        guest = std::make_unique<Cpu>(sim, 0, engine::Clock(1'000'000'000), k, guest_cfg);
        rd.span = {host0.get(), host1.get()};
        host0->set_root_domain(&rd, sim.rng("host0"));
        host1->set_root_domain(&rd, sim.rng("host1"));
        host0->create_task("hog", kernel::SchedPolicy::FIFO, 50, false, spin(*host0));
        guest->create_task("guest-spin", kernel::SchedPolicy::NORMAL, 0, false, note_each(*guest, *this));
        vm = std::make_unique<Vm>(round_kvm(), k, std::vector<Cpu*>{guest.get()}, std::vector<Cpu*>{host0.get()},
                                  HostFpsimd{}, 0, std::vector<Cpu*>{host0.get(), host1.get()});
    }
    static engine::Task<> spin(Cpu& cpu) {
        for (;;) co_await cpu.exec(1000, Cat::OTHER);
    }
    static engine::Task<> note_each(Cpu& cpu, QueuedThread& q) {
        for (;;) {
            co_await cpu.exec(1000, Cat::OTHER);
            if (q.first_guest_exec == 0) q.first_guest_exec = cpu.now();
        }
    }
    void run(Tick until) {
        host0->boot();
        host1->boot();
        guest->boot();
        sim.run(until);
    }
    VcpuThread& thread() { return *vm->vcpu(0).thread(); }
    engine::Simulation sim{1};
    std::unique_ptr<Cpu> host0, host1, guest;
    kernel::RootDomain rd;
    std::unique_ptr<Vm> vm;
    Tick first_guest_exec = 0;
};

TEST(VcpuThreadBalance, AQueuedThreadIsPulledByTheIdleHostCpuAndEntersItsGuestThere) {
    // Host CPU 0's tick at 10 ms kicks CPU 1 (two runnable: the hog and the thread); CPU 1 takes
    // the call-function IPI after its own tick (10,001,400 + 300 + 200), and its SCHED_SOFTIRQ
    // (round 100, local_irq_enable 4, load_balance 1000) pulls the thread, which never ran (not
    // cache-hot), at 10,003,004; local_irq_disable 3, the switch 2,007, the entry into the guest
    // (nothing owed: it never left it), the guest task's first exec 1,000 -> 10,006,014.
    QueuedThread q;
    q.run(12 * engine::PS_PER_MS);
    EXPECT_EQ(q.thread().task().nr_balance_moves, 1u);
    EXPECT_EQ(q.thread().task().cpu, q.host1.get());
    EXPECT_EQ(&q.thread().host(), q.host1.get());
    EXPECT_EQ(q.first_guest_exec, 10'006'014 * PS_PER_NS);
}

} // namespace
} // namespace kdsim::kvm
