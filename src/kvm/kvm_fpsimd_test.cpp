// KVM's lazy FP/SIMD switch (kvm/kvm.h): the guest's first FP/SIMD use after a vCPU load traps,
// on a 1 GHz clock (1 cycle = 1 ns) with round figures: [kvm] fpsimd_trap 250 (round_kvm), the
// host's [simd] save 60 and restore 140, the MMIO exit to user space 4,600 (world switch 1000 +
// abort decode 400 + put/load 1100 + ioctl 600 + VMM 1500, as in kvm_test.cpp).
#include "kvm/kvm.h"

#include "arch/simd.h"
#include "kernel/cpu_test_support.h"
#include "kvm/kvm_test_support.h"
#include "kvm/vcpu_thread.h"

#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <vector>

namespace kdsim::kvm {
namespace {

using engine::PS_PER_NS;
using engine::Tick;
using kernel::Cat;
using kernel::Cpu;
using testing::round_kvm;

constexpr Cycles TRAP = 250, HOST_SAVE = 60, RESTORE = 140;

// A one-vCPU guest on a core of its own whose kernel has arm64's FP/SIMD unit.
struct FpGuest {
    explicit FpGuest(KvmCosts k = round_kvm(), Tick halt_poll_ns = 0) {
        kernel::KernelConfig cfg;
        cfg.hz = 100; // the first tick at 10 ms, after every test's end
        cpu = std::make_unique<Cpu>(sim, 0, engine::Clock(1'000'000'000), kernel::testing::round_costs(), cfg);
        arch::SimdCosts sc;
        sc.begin = 100;
        sc.end = 50;
        sc.save = 70; // the guest's own fpsimd_save_state (its profile's figure, not the host's)
        sc.restore = 150;
        sc.state_size = 520;
        simd = arch::make_simd_unit(*cpu, arch::SimdPolicy::ARM64_BH_OFF, sc);
        vm = std::make_unique<Vm>(k, kernel::testing::round_costs(), std::vector<Cpu*>{cpu.get()},
                                  std::vector<Cpu*>{}, HostFpsimd{HOST_SAVE, RESTORE}, halt_poll_ns);
    }
    Vcpu& vcpu() { return vm->vcpu(0); }
    Cycles virt(kernel::CtxKind k = kernel::CtxKind::TASK) const {
        return cpu->stats().cycles[static_cast<std::size_t>(k)][static_cast<std::size_t>(Cat::VIRT)];
    }
    void run(Tick until) {
        cpu->boot();
        sim.run(until);
    }
    engine::Simulation sim{1};
    std::unique_ptr<Cpu> cpu;
    std::unique_ptr<arch::SimdUnit> simd;
    std::unique_ptr<Vm> vm;
    std::vector<Tick> seen;
};

engine::Task<> two_brackets(FpGuest& g) {
    for (int i = 0; i < 2; ++i) {
        co_await g.simd->begin();
        co_await g.cpu->exec(1000, Cat::CRYPTO);
        co_await g.simd->end();
        g.seen.push_back(g.cpu->now());
    }
}

// The notes of two_brackets on a guest with figures `k`; `one_trap`: also checks that the run
// trapped once, from the host-owned state, and ended with the WFI's put.
std::vector<Tick> bracket_times(KvmCosts k, bool one_trap = false) {
    FpGuest g(k);
    g.cpu->create_task("crypto", kernel::SchedPolicy::NORMAL, 0, true, two_brackets(g));
    g.run(engine::PS_PER_MS);
    if (one_trap) {
        EXPECT_EQ(g.virt(), TRAP + HOST_SAVE);
        EXPECT_EQ(g.vcpu().stats().fp_traps, 1u);
        EXPECT_EQ(g.vcpu().stats().fp_host_saves, 1u);
        // the task's end leaves the vCPU idle: WFI's put saved the guest's registers
        EXPECT_EQ(g.vcpu().stats().fp_guest_saves, 1u);
        EXPECT_EQ(g.vcpu().fp_state(), FpState::FREE);
    }
    return g.seen;
}

TEST(KvmFpsimd, TheFirstKernelNeonUseAfterTheLoadTrapsOnceAndSavesTheHostsLiveState) {
    // with the trap: one trap of 250 + the host's live state saved first, 60, charged as VIRT;
    // the second bracket finds the registers the guest's
    const std::vector<Tick> lazy = bracket_times(round_kvm(), true);
    KvmCosts off = round_kvm();
    off.fpsimd_trap = 0;
    const std::vector<Tick> eager = bracket_times(off);
    ASSERT_EQ(lazy.size(), 2u);
    ASSERT_EQ(eager.size(), 2u);
    EXPECT_EQ(lazy[0] - eager[0], (TRAP + HOST_SAVE) * PS_PER_NS);
    EXPECT_EQ(lazy[1] - lazy[0], eager[1] - eager[0]); // no second trap
}

TEST(KvmFpsimd, AfterAWfiPutTheNextUseTrapsWithoutSavingTheHostState) {
    FpGuest g;
    Vcpu& v = g.vcpu();
    EXPECT_EQ(v.fpsimd_access(*g.cpu), TRAP + HOST_SAVE);
    EXPECT_EQ(v.fpsimd_access(*g.cpu), 0u); // owned: no trap
    v.wfi(*g.cpu); // kvm_vcpu_block's put saves the guest's registers (uncharged: the guest is idle)
    EXPECT_EQ(v.fp_state(), FpState::FREE);
    EXPECT_EQ(v.stats().fp_guest_saves, 1u);
    // the thread's own state was saved at the first trap: only the trap and the guest's load
    EXPECT_EQ(v.fpsimd_access(*g.cpu), TRAP);
    EXPECT_EQ(v.stats().fp_traps, 2u);
    EXPECT_EQ(v.stats().fp_host_saves, 1u);
}

// Runs `f` when the event fires (the guest CPU is not booted: only the vCPU's hooks act).
struct At final : engine::EventTarget {
    std::function<void()> f;
    void on_event(std::uint64_t) override { f(); }
};

TEST(KvmFpsimd, AHaltEndedByThePollKeepsTheGuestsRegistersLoaded) {
    FpGuest g(round_kvm(), 500 * engine::PS_PER_US);
    Vcpu& v = g.vcpu();
    At halt1, wake1, halt2, wake2;
    halt1.f = [&] { v.wfi(*g.cpu); }; // the first halt: no window yet, blocked at once
    wake1.f = [&] {
        v.irq_delivery(*g.cpu, 8, true); // a halt of 1 us: the window grows to 10 us
        EXPECT_EQ(v.fpsimd_access(*g.cpu), TRAP + HOST_SAVE);
        v.wfi(*g.cpu); // polls: no put yet
    };
    wake2.f = [&] { v.irq_delivery(*g.cpu, 8, true); }; // 1 us into the window: no put, no load
    g.sim.schedule_at(1 * engine::PS_PER_US, &halt1, 0);
    g.sim.schedule_at(2 * engine::PS_PER_US, &wake1, 0);
    g.sim.schedule_at(3 * engine::PS_PER_US, &wake2, 0);
    g.sim.run(engine::PS_PER_MS);
    EXPECT_EQ(v.halt_poll(), 10 * engine::PS_PER_US);
    EXPECT_EQ(v.stats().halt_successful_poll, 1u);
    EXPECT_EQ(v.fp_state(), FpState::GUEST_OWNED);
    EXPECT_EQ(v.stats().fp_guest_saves, 0u);
    EXPECT_EQ(v.fpsimd_access(*g.cpu), 0u);
}

TEST(KvmFpsimd, AWfiWhileTheHostOwnsTheRegistersLeavesThemToIt) {
    FpGuest g;
    Vcpu& v = g.vcpu();
    v.wfi(*g.cpu); // nothing of the guest's to save; the idle task touches no FP state
    EXPECT_EQ(v.fp_state(), FpState::HOST_OWNED);
    EXPECT_EQ(v.stats().fp_guest_saves, 0u);
    EXPECT_EQ(v.fpsimd_access(*g.cpu), TRAP + HOST_SAVE);
}

engine::Task<> mmio_user_then_note(FpGuest& g) {
    co_await g.vcpu().mmio_user();
    g.seen.push_back(g.cpu->now());
}

TEST(KvmFpsimd, AnExitToTheVmmSavesGuestOwnedRegistersAndTheVmmReloadsItsOwn) {
    FpGuest g;
    ASSERT_EQ(g.vcpu().fpsimd_access(*g.cpu), TRAP + HOST_SAVE); // the guest owns them
    g.cpu->create_task("micro-bench", kernel::SchedPolicy::NORMAL, 0, false, mmio_user_then_note(g));
    g.run(engine::PS_PER_MS);
    ASSERT_EQ(g.seen.size(), 1u);
    // 4,600 + the put's save of the guest's registers 60 + the VMM thread's restore on its
    // return to user space 140
    EXPECT_EQ(g.seen[0], (4600 + HOST_SAVE + RESTORE) * PS_PER_NS);
    EXPECT_EQ(g.vcpu().fp_state(), FpState::HOST_OWNED); // the VMM's state is live at the load
    EXPECT_EQ(g.vcpu().fpsimd_access(*g.cpu), TRAP + HOST_SAVE);
}

TEST(KvmFpsimd, AnExitToTheVmmWhileTheHostOwnsTheRegistersCostsNothingMore) {
    FpGuest g;
    g.cpu->create_task("micro-bench", kernel::SchedPolicy::NORMAL, 0, false, mmio_user_then_note(g));
    g.run(engine::PS_PER_MS);
    ASSERT_EQ(g.seen.size(), 1u);
    EXPECT_EQ(g.seen[0], 4600 * PS_PER_NS);
}

TEST(KvmFpsimd, AnExitToTheVmmAfterAWfiPutReloadsTheVmmStateOnly) {
    FpGuest g;
    g.vcpu().fpsimd_access(*g.cpu);
    g.vcpu().wfi(*g.cpu); // FREE: the VMM thread's state is saved, nothing is live
    g.cpu->create_task("micro-bench", kernel::SchedPolicy::NORMAL, 0, false, mmio_user_then_note(g));
    g.run(engine::PS_PER_MS);
    ASSERT_EQ(g.seen.size(), 1u);
    EXPECT_EQ(g.seen[0], (4600 + RESTORE) * PS_PER_NS);
}

TEST(KvmFpsimd, WithoutTheTrapFigureTheSwitchIsNotCharged) {
    KvmCosts k = round_kvm();
    k.fpsimd_trap = 0;
    FpGuest g(k);
    g.cpu->create_task("crypto", kernel::SchedPolicy::NORMAL, 0, true, two_brackets(g));
    g.run(engine::PS_PER_MS);
    ASSERT_EQ(g.seen.size(), 2u);
    EXPECT_EQ(g.virt(), 0u);
    EXPECT_EQ(g.vcpu().stats().fp_traps, 0u);
    EXPECT_EQ(g.vcpu().fpsimd_access(*g.cpu), 0u);
}

// A one-vCPU guest whose thread runs on a host CPU (vcpu_cpus), both with arm64's FP/SIMD unit:
// a host interrupt at `irq_at` raises NET_RX, whose handler runs a kernel_neon_begin/end bracket
// of 500 cycles in the thread's context while it is in KVM_RUN.
struct HostNeon {
    explicit HostNeon(Tick irq_at) : irq(*host, 8) {
        simd_host = arch::make_simd_unit(*host, arch::SimdPolicy::ARM64_BH_OFF, costs(HOST_SAVE));
        simd_guest = arch::make_simd_unit(*guest, arch::SimdPolicy::ARM64_BH_OFF, costs(70));
        vm = std::make_unique<Vm>(round_kvm(), kernel::testing::round_costs(), std::vector<Cpu*>{guest.get()},
                                  std::vector<Cpu*>{host.get()}, HostFpsimd{HOST_SAVE, RESTORE}, 0);
        host->request_irq(8, &raise_net_rx, this, "host-nic");
        host->open_softirq(kernel::NET_RX_SOFTIRQ, &host_neon_bracket, this);
        sim.schedule_at(irq_at, &irq, 0);
    }
    static arch::SimdCosts costs(Cycles save) {
        arch::SimdCosts sc;
        sc.begin = 100;
        sc.end = 50;
        sc.save = save;
        sc.restore = RESTORE;
        sc.state_size = 520;
        return sc;
    }
    static engine::Task<> raise_net_rx(Cpu& cpu, void*) {
        cpu.raise_softirq_irqoff(kernel::NET_RX_SOFTIRQ);
        co_return;
    }
    static engine::Task<> host_neon_bracket(Cpu& cpu, void* ctx) {
        HostNeon& h = *static_cast<HostNeon*>(ctx);
        co_await h.simd_host->begin();
        co_await cpu.exec(500, Cat::CRYPTO);
        co_await h.simd_host->end();
    }
    static kernel::KernelConfig config() {
        kernel::KernelConfig cfg;
        cfg.hz = 100; // the first tick at 10 ms, after the test's end
        return cfg;
    }
    void run() {
        host->boot();
        guest->boot();
        sim.run(engine::PS_PER_MS);
    }
    Cycles cycles(Cpu& c, kernel::CtxKind k, Cat cat) const {
        return c.stats().cycles[static_cast<std::size_t>(k)][static_cast<std::size_t>(cat)];
    }
    Vcpu& vcpu() { return vm->vcpu(0); }
    engine::Simulation sim{1};
    std::unique_ptr<Cpu> host = std::make_unique<Cpu>(sim, 0, engine::Clock(1'000'000'000),
                                                      kernel::testing::round_costs(), config());
    std::unique_ptr<Cpu> guest = std::make_unique<Cpu>(sim, 0, engine::Clock(1'000'000'000),
                                                       kernel::testing::round_costs(), config());
    kernel::testing::IrqAt irq;
    std::unique_ptr<arch::SimdUnit> simd_host, simd_guest;
    std::unique_ptr<Vm> vm;
};

// Guest kernel code: a NEON bracket (unless `first` is false), 10,000 cycles without FP/SIMD
// (the host's interrupt comes in them), then a second bracket.
engine::Task<> bracket_gap_bracket(HostNeon& h, bool first) {
    if (first) {
        co_await h.simd_guest->begin();
        co_await h.guest->exec(1000, Cat::CRYPTO);
        co_await h.simd_guest->end();
    }
    co_await h.guest->exec(10'000, Cat::OTHER);
    co_await h.simd_guest->begin();
    co_await h.guest->exec(1000, Cat::CRYPTO);
    co_await h.simd_guest->end();
}

TEST(KvmFpsimdHostNeon, AHostNeonBracketInTheThreadSavesTheGuestsRegistersAndTheGuestTrapsAgain) {
    // The guest's first bracket traps (250) and saves the VMM thread's live state (60): it owns
    // the registers. The host's softirq at 5 us (between the brackets) saves them for the guest
    // (fpsimd_save through the vCPU's binding: 60, in the host's softirq), which frees them; so
    // the guest's second bracket traps again, this time with nothing of the host's to save.
    HostNeon h(5'000 * PS_PER_NS);
    h.guest->create_task("crypto", kernel::SchedPolicy::NORMAL, 0, true, bracket_gap_bracket(h, true));
    h.run();
    const Vcpu& v = h.vcpu();
    EXPECT_EQ(v.stats().fp_traps, 2u);
    EXPECT_EQ(v.stats().fp_host_saves, 1u);
    EXPECT_EQ(v.stats().fp_host_neon_saves, 1u);
    EXPECT_EQ(h.cycles(*h.guest, kernel::CtxKind::TASK, Cat::VIRT), TRAP + HOST_SAVE + TRAP);
    EXPECT_EQ(h.cycles(*h.host, kernel::CtxKind::SOFTIRQ, Cat::SIMD_SAVE_RESTORE), HOST_SAVE);
}

TEST(KvmFpsimdHostNeon, AHostNeonBracketBeforeTheGuestsFirstUseSavesTheVmmStateSoTheTrapSavesNothing) {
    // The VMM thread's state is live (HOST_OWNED) when the host's softirq runs its bracket: that
    // saves it (60) and frees the registers, so the guest's first trap costs 250 alone.
    HostNeon h(5'000 * PS_PER_NS);
    h.guest->create_task("crypto", kernel::SchedPolicy::NORMAL, 0, true, bracket_gap_bracket(h, false));
    h.run();
    const Vcpu& v = h.vcpu();
    EXPECT_EQ(v.stats().fp_traps, 1u);
    EXPECT_EQ(v.stats().fp_host_saves, 0u);
    EXPECT_EQ(v.stats().fp_host_neon_saves, 1u);
    EXPECT_EQ(h.cycles(*h.guest, kernel::CtxKind::TASK, Cat::VIRT), TRAP);
    EXPECT_EQ(h.cycles(*h.host, kernel::CtxKind::SOFTIRQ, Cat::SIMD_SAVE_RESTORE), HOST_SAVE);
}

TEST(KvmFpsimdHostNeon, AHostNeonBracketAfterTheRegistersWereFreedSavesNothing) {
    // The guest's put at WFI (its task ends before the interrupt) saved its registers: FREE, so
    // the host's bracket finds nothing live to save.
    HostNeon h(20'000 * PS_PER_NS);
    h.guest->create_task("crypto", kernel::SchedPolicy::NORMAL, 0, true, bracket_gap_bracket(h, true));
    h.run();
    const Vcpu& v = h.vcpu();
    EXPECT_EQ(v.stats().fp_host_neon_saves, 0u);
    EXPECT_EQ(v.fp_state(), FpState::FREE);
    EXPECT_EQ(h.cycles(*h.host, kernel::CtxKind::SOFTIRQ, Cat::SIMD_SAVE_RESTORE), 0u);
}

} // namespace
} // namespace kdsim::kvm
