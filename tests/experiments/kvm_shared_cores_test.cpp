// scenarios/kvm-shared-cores (docs/kvm.md, "vCPU threads on shared host CPUs"): vCPU threads
// placed by vcpu_cpus on host CPUs apart from the vhost worker or on its CPU, checked on the
// shipped scenarios: every byte delivered once; a host CPU's guest time is its vCPU's busy time;
// a vCPU thread on the vhost worker's CPU waits for it (steal) and the transfer slows; unpinned
// threads leave it.
#include "helpers.h"

#include <gtest/gtest.h>

namespace kdsim {
namespace {

using namespace testing; // run_scenario, metric, stat (helpers.h)

results::RunResults run(const std::string& stem) {
    return testing::run_scenario("scenarios/kvm-shared-cores/" + stem + ".toml");
}

TEST(KvmSharedCores, EveryRunDeliversEveryByteOnce) {
    for (const char* s : {"g2h-dedicated", "g2h-separate", "g2h-vcpu0-with-vhost", "g2h-vcpu1-with-vhost",
                          "g2h-both-with-vhost", "g2h-unpinned", "g2h-vhost-unpinned"}) {
        auto r = run(s);
        EXPECT_FALSE(r.failed) << s;
        EXPECT_EQ(metric(r, "iperf3", "bytes_lost"), 0) << s;
        EXPECT_GT(metric(r, "iperf3", "receiver_mbit_s"), 0) << s;
    }
}

// With the vCPU threads alone on host CPUs 2 and 3, those CPUs' user time is exactly their guests'
// time in guest mode: the guest CPUs' busy time (the same 1.8 GHz clock), to rounding. The
// threads' halt polling is theirs, in KVM (virt), not the guests'.
TEST(KvmSharedCores, AThreadsHostCpuSpendsInTheGuestWhatTheGuestCpuIsBusy) {
    auto r = run("g2h-separate");
    for (int i = 0; i < 2; ++i) {
        const std::string g = "guest/cpu" + std::to_string(i), h = "host/cpu" + std::to_string(i + 2);
        const double guest_cycles = stat(r, g + "/busy_us") * 1'800.0;
        EXPECT_GT(guest_cycles, 0);
        EXPECT_NEAR(stat(r, h + "/cycles/user"), guest_cycles, guest_cycles * 1e-4) << i;
        EXPECT_EQ(stat(r, "guest/kvm/vcpu" + std::to_string(i) + "/thread/host_cpu"), i + 2);
    }
    // the default model has no threads and no steal
    auto d = run("g2h-dedicated");
    EXPECT_FALSE(results::resolve(d, "guest/kvm/vcpu0/thread/steal_us").has_value());
}

// The sender's vCPU (vCPU 1) on the vhost worker's CPU waits for vhost to yield: its steal grows
// from the wake-up switches alone (under 1 ms in 100 ms) to several ms, the host CPU switches
// between them, and the transfer slows; apart, the threads cost little against the default.
TEST(KvmSharedCores, AVcpuThreadOnTheVhostCpuStealsAndSlowsTheTransfer) {
    auto sep = run("g2h-separate");
    auto shared = run("g2h-vcpu1-with-vhost");
    auto dedicated = run("g2h-dedicated");
    const double steal_sep = stat(sep, "guest/kvm/vcpu1/thread/steal_us");
    const double steal_shared = stat(shared, "guest/kvm/vcpu1/thread/steal_us");
    EXPECT_LT(steal_sep, 1'000);
    EXPECT_GT(steal_shared, 10 * steal_sep);
    // the host CPU switches between them: away from the thread at each of its blocks, to it after
    // each of its wake-ups (the last may come after the run's end)
    EXPECT_GE(stat(shared, "host/cpu1/sched/context_switches"),
              stat(shared, "guest/kvm/vcpu1/thread/blocks") + stat(shared, "guest/kvm/vcpu1/thread/wakeups") - 1);
    EXPECT_GT(stat(shared, "guest/kvm/vcpu1/thread/wakeups"), 100);
    EXPECT_LT(metric(shared, "iperf3", "receiver_mbit_s"), 0.9 * metric(sep, "iperf3", "receiver_mbit_s"));
    EXPECT_GT(metric(sep, "iperf3", "receiver_mbit_s"), 0.95 * metric(dedicated, "iperf3", "receiver_mbit_s"));
}

// vcpu_affinity: both threads start on the vhost worker's CPU 1 but may run on any host CPU. At
// each wake-up from kvm_vcpu_block the host's select_task_rq_fair leaves CPU 1 when vhost has it
// (prev busy: the first idle CPU of the mask after it), and keeps a thread where it is once its
// CPU is idle at its wake-ups. So the threads end apart from vhost and from each other, each moved
// at least once, and the transfer is that of the separate placement, not the shared one.
TEST(KvmSharedCores, UnpinnedThreadsStartedOnTheVhostCpuLeaveItAtTheirWakeUps) {
    auto unpinned = run("g2h-unpinned");
    auto both = run("g2h-both-with-vhost");
    auto sep = run("g2h-separate");
    const double cpu0 = stat(unpinned, "guest/kvm/vcpu0/thread/host_cpu");
    const double cpu1 = stat(unpinned, "guest/kvm/vcpu1/thread/host_cpu");
    EXPECT_NE(cpu0, 1);
    EXPECT_NE(cpu1, 1);
    EXPECT_NE(cpu0, cpu1);
    EXPECT_GE(stat(unpinned, "guest/kvm/vcpu0/thread/migrations"), 1);
    EXPECT_GE(stat(unpinned, "guest/kvm/vcpu1/thread/migrations"), 1);
    EXPECT_GT(metric(unpinned, "iperf3", "receiver_mbit_s"), 0.95 * metric(sep, "iperf3", "receiver_mbit_s"));
    EXPECT_GT(metric(unpinned, "iperf3", "receiver_mbit_s"), 1.1 * metric(both, "iperf3", "receiver_mbit_s"));
    // pinned threads have no migration counter
    EXPECT_FALSE(results::resolve(both, "guest/kvm/vcpu0/thread/migrations").has_value());
}

// vhost_affinity: both vCPU threads pinned to host CPU 1, where the vhost worker starts and may
// leave. The guest's kicks come from CPU 1, where a vCPU thread runs, so at each wake-up the
// worker's previous CPU is busy and select_idle_sibling takes the first idle CPU after it; the
// worker ends off CPU 1, having moved at least once, and the transfer beats the all-pinned
// both-with-vhost, whose worker shares CPU 1 with both threads. Pinned workers have no counters.
TEST(KvmSharedCores, AnUnpinnedVhostWorkerLeavesTheVcpuThreadsCpu) {
    auto vhost_unpinned = run("g2h-vhost-unpinned");
    auto both = run("g2h-both-with-vhost");
    EXPECT_NE(stat(vhost_unpinned, "host/vhost/guest/host_cpu"), 1);
    EXPECT_GE(stat(vhost_unpinned, "host/vhost/guest/migrations"), 1);
    EXPECT_GT(metric(vhost_unpinned, "iperf3", "receiver_mbit_s"), 1.1 * metric(both, "iperf3", "receiver_mbit_s"));
    EXPECT_FALSE(results::resolve(both, "host/vhost/guest/migrations").has_value());
}

} // namespace
} // namespace kdsim
