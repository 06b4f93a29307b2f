// KVM's exits and deliveries on a 1 GHz clock (1 cycle = 1 ns) with round figures, so that every
// expected time is a sum worked out by hand from the figures in this file.
#include "kvm/kvm.h"

#include "kernel/cpu_test_support.h"
#include "kvm/kvm_test_support.h"

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

// A guest of `n` vCPUs; the host's kernel figures are round_costs() (irq entry 300, exit 200,
// timer_handler 400, wakeup 600 + wakeup_activate 400, context_switch 2000), the guest's the same.
struct Guest {
    explicit Guest(int n, std::uint32_t hz = 100, Tick halt_poll_ns = 0) {
        kernel::KernelConfig cfg;
        cfg.hz = hz; // hz 100: the first tick at 10 ms
        for (int i = 0; i < n; ++i)
            cpus.push_back(std::make_unique<Cpu>(sim, i, engine::Clock(1'000'000'000), kernel::testing::round_costs(), cfg));
        std::vector<Cpu*> v;
        for (auto& c : cpus) v.push_back(c.get());
        vm = std::make_unique<Vm>(round_kvm(), kernel::testing::round_costs(), v, std::vector<Cpu*>{}, HostFpsimd{},
                                  halt_poll_ns);
    }
    void run(Tick until) {
        for (auto& c : cpus) c->boot();
        sim.run(until);
    }
    engine::Simulation sim{1};
    std::vector<std::unique_ptr<Cpu>> cpus;
    std::unique_ptr<Vm> vm;
    std::vector<Tick> seen; // when the guest's handler started
};

engine::Task<> handler(Cpu& cpu, void* ctx) {
    static_cast<Guest*>(ctx)->seen.push_back(cpu.now());
    co_return;
}

engine::Task<> spin(Cpu& cpu) { co_await cpu.exec(50'000'000, Cat::OTHER); }

std::uint64_t exits(Vm& vm, int i, Exit e) { return vm.vcpu(i).stats().exits[static_cast<std::size_t>(e)]; }

TEST(KvmPaths, MmioReadToUserSpaceIsRoundTripDecodePutLoadIoctlAndVmm) {
    Guest g(1);
    // 1000 world switch + 400 abort decode + 1100 put/load + 600 ioctl out and in + 1500 VMM
    EXPECT_EQ(g.vm->paths().mmio_user(), 4600u);
    // 1000 + 400 decode + 150 vGIC register handler
    EXPECT_EQ(g.vm->paths().mmio_vgic(), 1550u);
    // 1000 + 400 + 300 eventfd_signal, + 1000 host wakeup (600 + 400 activation) when it wakes the vhost worker
    EXPECT_EQ(g.vm->paths().mmio_ioeventfd(false), 1700u);
    EXPECT_EQ(g.vm->paths().mmio_ioeventfd(true), 2700u);
}

TEST(KvmPaths, DeliveryToARunningVcpuIsExitHostIrqAndListRegister) {
    Guest g(1);
    // 1000 round trip + 300 host irq entry + 200 host irq exit + 450 list register
    EXPECT_EQ(g.vm->paths().irq_running(false), 1950u);
    // the virtual timer adds kvm_arch_timer_handler's injection, 400
    EXPECT_EQ(g.vm->paths().irq_running(true), 2350u);
}

TEST(KvmPaths, WakeFromWfiIsHostIrqSwitchBlockReturnLoadAndEntryHalf) {
    Guest g(1);
    // 300 + 200 host irq, 2000 context switch, 300 kvm_vcpu_block return, 550 load (half of 1100),
    // 500 entry (half of 1000), 450 list register
    EXPECT_EQ(g.vm->paths().irq_wfi(false), 4300u);
    // the timer's wake-up comes from the host's hrtimer: + 400 expiry + 1000 try_to_wake_up + 400 injection
    EXPECT_EQ(g.vm->paths().irq_wfi(true), 6100u);
}

engine::Task<> do_mmio_user(Vcpu& v, Guest& g) {
    co_await v.mmio_user();
    g.seen.push_back(v.cpu().now());
}

TEST(KvmVcpu, AnMmioReadToUserSpaceTakesItsPathOnTheVcpu) {
    Guest g(1);
    g.cpus[0]->create_task("micro-bench", kernel::SchedPolicy::NORMAL, 0, false, do_mmio_user(g.vm->vcpu(0), g));
    g.run(engine::PS_PER_MS);
    ASSERT_EQ(g.seen.size(), 1u);
    EXPECT_EQ(g.seen[0], 4600 * PS_PER_NS);
    EXPECT_EQ(exits(*g.vm, 0, Exit::MMIO_USER), 1u);
}

TEST(KvmVcpu, AKickReachesARunningVcpuAfterTheIpiAndItsExit) {
    Guest g(1);
    g.cpus[0]->request_irq(8, &handler, &g, "virtio");
    g.cpus[0]->create_task("spin", kernel::SchedPolicy::NORMAL, 0, false, spin(*g.cpus[0]));
    KickAt kick(g.vm->vcpu(0));
    g.sim.schedule_at(10'000 * PS_PER_NS, &kick, 0);
    g.run(engine::PS_PER_MS);
    ASSERT_EQ(g.seen.size(), 1u);
    // 10,000 + 200 IPI + 1,950 delivery + 300 the guest's irq entry
    EXPECT_EQ(g.seen[0], 12'450 * PS_PER_NS);
    EXPECT_EQ(exits(*g.vm, 0, Exit::IRQ), 1u);
    EXPECT_EQ(g.vm->vcpu(0).stats().wfi_wakes, 0u);
}

TEST(KvmVcpu, AKickWakesAnIdleVcpuFromWfi) {
    Guest g(1);
    g.cpus[0]->request_irq(8, &handler, &g, "virtio");
    KickAt kick(g.vm->vcpu(0));
    g.sim.schedule_at(10'000 * PS_PER_NS, &kick, 0);
    g.run(engine::PS_PER_MS);
    ASSERT_EQ(g.seen.size(), 1u);
    // 10,000 + 200 IPI + 4,300 wake-up from WFI + 300 the guest's irq entry
    EXPECT_EQ(g.seen[0], 14'800 * PS_PER_NS);
    EXPECT_EQ(g.vm->vcpu(0).stats().wfi_wakes, 1u);
    EXPECT_EQ(exits(*g.vm, 0, Exit::WFI), 1u);
}

TEST(KvmVcpu, TheGuestTickIsAVirtualTimerExitWhileRunningAndAWakeWhenIdle) {
    Guest g(2); // hz 100: one tick per vCPU at 10 ms in 15 ms
    g.cpus[0]->create_task("spin", kernel::SchedPolicy::NORMAL, 0, false, spin(*g.cpus[0]));
    g.run(15 * engine::PS_PER_MS);
    const auto virt = [&](int i) {
        return g.cpus[static_cast<std::size_t>(i)]->stats().cycles[static_cast<std::size_t>(kernel::CtxKind::HARDIRQ)]
                                                                  [static_cast<std::size_t>(Cat::VIRT)];
    };
    EXPECT_EQ(virt(0), 2350u); // running: irq_running(vtimer)
    EXPECT_EQ(virt(1), 6100u); // idle: irq_wfi(vtimer)
    EXPECT_EQ(g.vm->vcpu(0).stats().vtimer, 1u);
    EXPECT_EQ(g.vm->vcpu(1).stats().wfi_wakes, 1u);
}

engine::Task<> send(Vcpu& from, Vcpu& to, Guest& g) {
    co_await from.send_sgi(to, 8);
    g.seen.push_back(from.cpu().now());
}

TEST(KvmVcpu, AnSgiTrapsOnTheSenderAndKicksTheTarget) {
    Guest g(2);
    g.cpus[1]->request_irq(8, &handler, &g, "sgi");
    g.cpus[1]->create_task("spin", kernel::SchedPolicy::NORMAL, 0, false, spin(*g.cpus[1]));
    g.cpus[0]->create_task("sender", kernel::SchedPolicy::NORMAL, 0, false, send(g.vm->vcpu(0), g.vm->vcpu(1), g));
    g.run(engine::PS_PER_MS);
    ASSERT_EQ(g.seen.size(), 2u);
    // the kick leaves at 500 (exit half) + 600 (sgi_trap) = 1,100; the sender is back in at +500
    // the target: 1,100 + 200 IPI + 1,950 delivery + 300 irq entry = 3,550
    EXPECT_EQ(g.seen[0], 1'600 * PS_PER_NS);
    EXPECT_EQ(g.seen[1], 3'550 * PS_PER_NS);
    EXPECT_EQ(exits(*g.vm, 0, Exit::SYSREG), 1u);
    EXPECT_EQ(exits(*g.vm, 1, Exit::IRQ), 1u);
}

TEST(KvmPaths, AWakeByTheHaltPollIsOneIterationTheHaltReturnTheEntryHalfAndTheListRegister) {
    Guest g(1);
    // 5 poll iteration + 300 halt return + 500 entry half + 450 list register
    EXPECT_EQ(g.vm->paths().irq_poll_wake(false), 1255u);
    EXPECT_EQ(g.vm->paths().irq_poll_wake(true), 1655u); // + 400 the timer's injection
}

// The guest's handler runs 300 (its irq entry) after the delivery; it returns to WFI 200 (irq
// exit) after it starts.
TEST(KvmHaltPoll, AShortHaltGrowsTheWindowAndAKickInsideItNeedsNoIpiAndNoWakeUp) {
    Guest g(1, 100, 500 * engine::PS_PER_US);
    g.cpus[0]->request_irq(8, &handler, &g, "virtio");
    KickAt k1(g.vm->vcpu(0)), k2(g.vm->vcpu(0)), k3(g.vm->vcpu(0));
    g.sim.schedule_at(10'000 * PS_PER_NS, &k1, 0);
    g.sim.schedule_at(30'000 * PS_PER_NS, &k2, 0);
    g.sim.schedule_at(45'000 * PS_PER_NS, &k3, 0);
    g.run(engine::PS_PER_MS);
    ASSERT_EQ(g.seen.size(), 3u);
    // the first halt (0 to 10.2 us) had no window: IPI 200 + WFI wake 4,300 + irq entry 300; it
    // was shorter than the 500 us cap, so the window grows to halt_poll_ns_grow_start, 10 us
    EXPECT_EQ(g.seen[0], 14'800 * PS_PER_NS);
    // back in WFI at 15.0 us; the kick at 30 us comes after the 10 us window: blocked, the same
    // path; the window doubles to 20 us
    EXPECT_EQ(g.seen[1], 34'800 * PS_PER_NS);
    // back in WFI at 35.0 us; the kick at 45 us is inside the 20 us window: no IPI, the poll wake
    // 1,255 + irq entry 300
    EXPECT_EQ(g.seen[2], 46'555 * PS_PER_NS);
    const VcpuStats& st = g.vm->vcpu(0).stats();
    EXPECT_EQ(st.halt_attempted_poll, 2u);
    EXPECT_EQ(st.halt_successful_poll, 1u);
    EXPECT_EQ(g.vm->vcpu(0).halt_poll(), 20 * engine::PS_PER_US); // a covered halt keeps it
}

TEST(KvmHaltPoll, AHaltLongerThanTheCapResetsTheWindow) {
    Guest g(1, 100, 500 * engine::PS_PER_US);
    g.cpus[0]->request_irq(8, &handler, &g, "virtio");
    KickAt k1(g.vm->vcpu(0)), k2(g.vm->vcpu(0));
    g.sim.schedule_at(10'000 * PS_PER_NS, &k1, 0);
    g.sim.schedule_at(1'000'000 * PS_PER_NS, &k2, 0); // a halt of 985 us > 500 us
    g.run(2 * engine::PS_PER_MS);
    ASSERT_EQ(g.seen.size(), 2u);
    EXPECT_EQ(g.seen[1], (1'000'000 + 200 + 4'300 + 300) * PS_PER_NS); // the window ran out: blocked
    EXPECT_EQ(g.vm->vcpu(0).stats().halt_attempted_poll, 1u);
    EXPECT_EQ(g.vm->vcpu(0).stats().halt_successful_poll, 0u);
    EXPECT_EQ(g.vm->vcpu(0).halt_poll(), 0u);
}

TEST(KvmHaltPoll, WithAZeroCapNoHaltPolls) {
    Guest g(1); // halt_poll_ns 0
    g.cpus[0]->request_irq(8, &handler, &g, "virtio");
    KickAt k1(g.vm->vcpu(0)), k2(g.vm->vcpu(0));
    g.sim.schedule_at(10'000 * PS_PER_NS, &k1, 0);
    g.sim.schedule_at(20'000 * PS_PER_NS, &k2, 0);
    g.run(engine::PS_PER_MS);
    ASSERT_EQ(g.seen.size(), 2u);
    EXPECT_EQ(g.seen[1], (20'000 + 200 + 4'300 + 300) * PS_PER_NS);
    EXPECT_EQ(g.vm->vcpu(0).stats().halt_attempted_poll, 0u);
    EXPECT_EQ(g.vm->vcpu(0).halt_poll(), 0u);
}

} // namespace
} // namespace kdsim::kvm
