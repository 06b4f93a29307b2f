// Whole-model tests on hand-built machines with round-number costs, so that every expected
// count and cycle figure can be worked out by hand from the mechanism (reasoning given with
// each test).
#include "system/system.h"

#include "devices/dma_test_support.h"

#include "results/lookup.h"

#include <gtest/gtest.h>

namespace kdsim::system {
namespace {

using crypto::HashAlg;
using crypto::HashImpl;
using workloads::CyclictestWorkload;
using workloads::HashListWorkload;
using workloads::SoftirqLoadWorkload;

// A 1 GHz CPU (1 cycle = 1 ns) with distinct round costs.
Profile test_profile(arch::Arch a) {
    Profile p;
    p.name = "test/1ghz";
    p.arch = a;
    p.clock_hz = 1'000'000'000;
    p.cache_line = 64;
    p.kernel = devices::round_kernel_costs();
    p.simd = arch::SimdCosts{.begin = 100, .end = 50, .save = 250, .restore = 450, .state_size = 832, .unavailable_trap = {}, .kernel_use_warning = {}};
    for (HashAlg alg : {HashAlg::SHA1, HashAlg::SHA256, HashAlg::SHA512}) {
        p.hash.set(alg, HashImpl::GENERIC, crypto::HashCost{{10.0, 1000}, {}});
        p.hash.set(alg, a == arch::Arch::X86_64 ? HashImpl::AVX2 : HashImpl::NEON, crypto::HashCost{{2.0, 200}, {}});
    }
    return p;
}

ScenarioConfig one_machine(arch::Arch a, arch::SimdPolicy pol, crypto::Chunking ch) {
    ScenarioConfig s;
    s.name = "test";
    s.seed = 7;
    MachineConfig m;
    m.name = "m";
    m.profile = test_profile(a);
    m.cpus = 1;
    m.simd_policy = pol;
    m.chunking = ch;
    m.kernel.hz = 100; // 10 ms ticks: none fall inside the short runs below unless stated
    s.machines.push_back(std::move(m));
    return s;
}

// A statistic of machine m's CPU 0 ("simd/brackets"), which must be registered.
double cpu0_stat(const results::RunResults& r, const std::string& key) {
    auto v = results::find_statistic(r, "m/cpu0/" + key);
    if (!v) ADD_FAILURE() << "no statistic m/cpu0/" << key;
    return v.value_or(-1);
}

double metric(const results::RunResults& r, const std::string& wl, const std::string& key) {
    auto v = results::find_metric(r, wl, key);
    if (!v) ADD_FAILURE() << "no metric " << wl << "." << key;
    return v.value_or(-1);
}

// A kernel thread ("cryptomgr") hashing three 10'000-byte buffers back to back with SHA-256 under
// the chunking `ch`, alone on the x86 test machine.
results::RunResults three_buffers(crypto::Chunking ch) {
    auto s = one_machine(arch::Arch::X86_64, arch::SimdPolicy::X86_PREEMPT, ch);
    HashListWorkload w;
    w.alg = HashAlg::SHA256;
    w.sizes = {10'000, 10'000, 10'000};
    w.cond_resched_between = false;
    s.machines[0].workloads.push_back(w);
    System sys(s);
    return sys.run();
}

TEST(Chunking, FixedLimitEntersOneBracketPerChunkAndPaysBeginEndEachTime) {
    // A kernel thread hashes 3 buffers of 10'000 bytes with at most 4096 bytes per bracket:
    // 4096 + 4096 + 1808 -> 3 brackets per buffer, 9 in all. A kthread has no user state, so
    // begin/end cost exactly 9 x (100 + 50) = 1350 cycles. Bytes per bracket: six brackets in
    // [4096, 8192) and three in [1024, 2048).
    const auto r = three_buffers({crypto::ChunkPolicy::FIXED, 4096});
    const auto& simd = r.machines[0].cpus[0].simd;
    EXPECT_EQ(cpu0_stat(r, "simd/brackets"), 9);
    EXPECT_EQ(cpu0_stat(r, "simd/begin_end_cycles"), 1350);
    EXPECT_EQ(cpu0_stat(r, "simd/saves"), 0);
    ASSERT_GE(simd.bytes_per_bracket_log2_hist.size(), 13u);
    EXPECT_EQ(simd.bytes_per_bracket_log2_hist[12], 6u);
    EXPECT_EQ(simd.bytes_per_bracket_log2_hist[10], 3u);
    EXPECT_EQ(cpu0_stat(r, "simd/bytes"), 30'000);
    EXPECT_EQ(metric(r, "cryptomgr", "completed"), 1);
    EXPECT_FALSE(r.failed);
}

TEST(Chunking, ConditionalYieldWithNothingRunnableKeepsOneBracketPerBuffer) {
    // With need_resched never set, the yield policy never ends its bracket early: one bracket
    // per buffer, each spanning the whole 10'000 bytes: 2 cycles/byte x 10'000 + 200 per call
    // + begin 100 + end 50 = 20'350 cycles = 20.35 us at 1 GHz.
    const auto r = three_buffers({crypto::ChunkPolicy::YIELD, 4096});
    const auto& simd = r.machines[0].cpus[0].simd;
    EXPECT_EQ(cpu0_stat(r, "simd/brackets"), 3);
    EXPECT_EQ(cpu0_stat(r, "simd/begin_end_cycles"), 450);
    EXPECT_EQ(simd.longest_bracket_bytes, 10'000u);
    EXPECT_EQ(simd.longest_bracket_cycles, 20'350u);
}

TEST(Probe, WakeupLatencyOnAnIdleCpuIsTheSumOfTheWakeupPathCosts) {
    // The probe sleeps to period boundaries on an otherwise idle CPU. Each wake-up: irq entry
    // 300 + hrtimer expiry 400 + try_to_wake_up 1000 + irq exit 200 + context switch 2000 +
    // __schedule's irq disable/enable 3 + 4 = 3907 cycles = 3.907 us at 1 GHz. Its user FPU state is still in the registers when it
    // returns (fpregs_state_valid): the only XRSTOR happened when the task first started, before
    // its first sleep, so no sample pays it.
    auto s = one_machine(arch::Arch::X86_64, arch::SimdPolicy::X86_PREEMPT, {});
    s.machines[0].kernel.hz = 100;
    CyclictestWorkload c;
    c.period = 1'300 * engine::PS_PER_US; // never on a 10 ms tick boundary within 20 loops
    c.loops = 20;
    s.machines[0].workloads.push_back(c);
    System sys(s);
    auto r = sys.run();
    EXPECT_DOUBLE_EQ(metric(r, "cyclictest", "latency_min_us"), 3.907);
    EXPECT_DOUBLE_EQ(metric(r, "cyclictest", "latency_p50_us"), 3.907);
    EXPECT_DOUBLE_EQ(metric(r, "cyclictest", "latency_max_us"), 3.907);
    EXPECT_EQ(metric(r, "cyclictest", "samples"), 20);
    EXPECT_EQ(cpu0_stat(r, "simd/restores"), 1);
}

struct ClobberCase {
    const char* name;
    arch::Arch arch;
    arch::SimdPolicy policy;
    bool expect_clobbers;
};

class SoftirqInsideTaskBracket : public ::testing::TestWithParam<ClobberCase> {};

// A kernel thread hashes long buffers in one bracket each while a device interrupt every
// 20 us raises NET_RX, whose handler hashes 1500 bytes and may use SIMD if the policy allows
// (else the generic code: 16 us per packet, still below the arrival period). The interrupts
// certainly land inside the thread's brackets (each lasts ~200 us).
TEST_P(SoftirqInsideTaskBracket, OnlyPoliciesThatLetSoftirqNestClobberTheTaskRegisters) {
    const ClobberCase& c = GetParam();
    auto s = one_machine(c.arch, c.policy, {crypto::ChunkPolicy::NONE, 0});
    HashListWorkload w;
    w.alg = HashAlg::SHA256;
    w.sizes = std::vector<std::uint64_t>(20, 100'000);
    s.machines[0].workloads.push_back(w);
    SoftirqLoadWorkload l;
    l.period = 20 * engine::PS_PER_US;
    l.bytes = 1500;
    s.machines[0].workloads.push_back(l);
    s.mode = Mode::FUNCTIONAL;
    System sys(s);
    auto r = sys.run();
    EXPECT_EQ(metric(r, "cryptomgr", "completed"), 1);
    EXPECT_GT(metric(r, "nic_rx", "packets_processed"), 100);
    if (c.expect_clobbers) {
        EXPECT_GT(results::finding_count(r, "simd_clobber"), 0u);
        EXPECT_TRUE(r.failed);
        const auto clobbers = results::findings_of(r, "simd_clobber");
        ASSERT_FALSE(clobbers.empty());
        EXPECT_EQ(clobbers[0]->machine, "m");
        EXPECT_NE(clobbers[0]->victim.find("cryptomgr"), std::string::npos) << clobbers[0]->victim;
        EXPECT_NE(clobbers[0]->culprit.find("softirq NET_RX"), std::string::npos) << clobbers[0]->culprit;
        // the clobbered hashes fail to verify: each call hashed with clobbered registers fed
        // corrupted bytes to the digest, so one typed finding (the only record of it) per call
        const double clobbered = metric(r, "cryptomgr", "clobbered_calls") + metric(r, "nic_rx", "clobbered_calls");
        EXPECT_GT(clobbered, 0);
        EXPECT_EQ(static_cast<double>(results::finding_count(r, "digest_mismatch")), clobbered);
        const auto digests = results::findings_of(r, "digest_mismatch");
        ASSERT_FALSE(digests.empty());
        EXPECT_NE(digests[0]->where.find("sha256"), std::string::npos) << digests[0]->where;
        EXPECT_GE(digests[0]->time_us, clobbers[0]->time_us); // found at the digest's end, after the clobber
    } else {
        EXPECT_EQ(results::finding_count(r, "simd_clobber"), 0u);
        EXPECT_FALSE(r.failed) << (r.failures.empty() ? "" : r.failures[0]);
        // every digest was checked, and every one verified
        EXPECT_GT(metric(r, "cryptomgr", "digests_checked"), 0);
        EXPECT_GT(metric(r, "nic_rx", "digests_checked"), 0);
        EXPECT_EQ(results::finding_count(r, "digest_mismatch"), 0u);
    }
}

INSTANTIATE_TEST_SUITE_P(
    Policies, SoftirqInsideTaskBracket,
    ::testing::Values(ClobberCase{"x86_preempt", arch::Arch::X86_64, arch::SimdPolicy::X86_PREEMPT, false},
                      ClobberCase{"x86_bh_off", arch::Arch::X86_64, arch::SimdPolicy::X86_BH_OFF, false},
                      ClobberCase{"x86_unsafe", arch::Arch::X86_64, arch::SimdPolicy::X86_UNSAFE_NO_INUSE, true},
                      ClobberCase{"arm32_task_only", arch::Arch::ARM32, arch::SimdPolicy::ARM32_TASK_ONLY, false},
                      ClobberCase{"arm32_softirq", arch::Arch::ARM32, arch::SimdPolicy::ARM32_SOFTIRQ, false},
                      ClobberCase{"arm32_unsafe", arch::Arch::ARM32, arch::SimdPolicy::ARM32_UNSAFE_SOFTIRQ_NO_BH, true},
                      ClobberCase{"arm64_bh_off", arch::Arch::ARM64, arch::SimdPolicy::ARM64_BH_OFF, false}),
    [](const auto& info) { return std::string(info.param.name); });

// CONFIG_SCHED_MC: an ARM32 machine's kernel has no shared-cache domain unless the scenario says
// sched_mc = true (arch/arm/Kconfig's default, Debian's armmp config); the other arches have one
// unless it says false. cpus_share_cache() is what the wakelist and the placement ask.
TEST(SchedTopology, Arm32CpusShareNoCacheByDefaultAndTheOthersShareOne) {
    auto share = [](arch::Arch a, arch::SimdPolicy pol, std::optional<bool> sched_mc) {
        auto s = one_machine(a, pol, {});
        s.machines[0].cpus = 2;
        s.machines[0].sched_mc = sched_mc;
        System sys(s);
        EXPECT_TRUE(sys.cpus_share_cache("m", 1, 1)); // a CPU and itself, always
        return sys.cpus_share_cache("m", 0, 1);
    };
    EXPECT_FALSE(share(arch::Arch::ARM32, arch::SimdPolicy::ARM32_TASK_ONLY, std::nullopt));
    EXPECT_TRUE(share(arch::Arch::ARM32, arch::SimdPolicy::ARM32_TASK_ONLY, true));
    EXPECT_TRUE(share(arch::Arch::ARM64, arch::SimdPolicy::ARM64_BH_OFF, std::nullopt));
    EXPECT_FALSE(share(arch::Arch::ARM64, arch::SimdPolicy::ARM64_BH_OFF, false));
    EXPECT_TRUE(share(arch::Arch::X86_64, arch::SimdPolicy::X86_PREEMPT, std::nullopt));
}

} // namespace
} // namespace kdsim::system
