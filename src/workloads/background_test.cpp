// softirq_load on the one NAPI and the one cryptd: a 1 GHz CPU with round kernel costs and a
// generic SHA-256 of 10 cycles/byte + 1000 per call, so one 1500-byte packet is 16,000 cycles
// (16 us) and every count below follows from the NAPI and cryptd rules by hand.
#include "workloads/background.h"

#include "kernel/cpu_test_support.h"
#include "kernel/sched.h"
#include "kernel/softirq.h"

#include <gtest/gtest.h>

#include <string>

namespace kdsim::workloads {
namespace {

using kernel::Cat;
using kernel::CtxKind;

constexpr Cycles PACKET = 1500 * 10 + 1000;

struct Harness {
    engine::Simulation sim{1};
    kernel::Cpu cpu;
    std::unique_ptr<arch::SimdUnit> simd;
    crypto::HashCostTable hash;
    Completion completion{sim};
    net::Softnet sd;
    std::unique_ptr<SoftirqLoad> load;

    explicit Harness(SoftirqLoadWorkload cfg)
        : cpu(sim, 0, engine::Clock(1'000'000'000), kernel::testing::round_costs(), config()),
          simd(arch::make_simd_unit(cpu, arch::SimdPolicy::X86_BH_OFF, arch::SimdCosts{})), sd(cpu) {
        hash.set(crypto::HashAlg::SHA256, crypto::HashImpl::GENERIC, crypto::HashCost{{10.0, 1000}, {}});
        cfg.impl = crypto::HashImpl::GENERIC;
        Env env{sim, cpu, *simd, hash, crypto::Chunking{}, false, "m", completion, nullptr};
        load = std::make_unique<SoftirqLoad>(env, cfg, kernel::Cpu::FIRST_DEVICE_VECTOR, sd);
    }
    static kernel::KernelConfig config() {
        kernel::KernelConfig c;
        c.hz = 100;
        return c;
    }
    void run(engine::Tick until = 100 * engine::PS_PER_MS) {
        load->start();
        cpu.boot();
        sim.run(until);
        cpu.finish();
    }
    // A counter the workload registers below machine "m" (after start()).
    double stat(const std::string& path) const {
        stats::Registry reg;
        load->register_stats(stats::Scope(reg, "m"));
        for (const stats::Entry& e : reg.entries())
            if (e.path == path) return e.value();
        ADD_FAILURE() << "no statistic " << path;
        return -1;
    }
    double metric(const std::string& key) const {
        for (const auto& m : load->result().metrics)
            if (m.key == key) return m.value;
        ADD_FAILURE() << "no metric " << key;
        return -1;
    }
    Cycles cycles(CtxKind ctx, Cat c) const {
        return cpu.stats().cycles[static_cast<std::size_t>(ctx)][static_cast<std::size_t>(c)];
    }
};

SoftirqLoadWorkload packets(std::uint64_t count, engine::Tick period, bool cryptd) {
    SoftirqLoadWorkload w;
    w.count = count;
    w.period = period;
    w.cryptd = cryptd;
    return w;
}

// The CPU's softnet counters after the run: net_rx_action calls, polls, repolls.
void expect_softnet(const Harness& h, std::uint64_t actions, std::uint64_t polls, std::uint64_t repolls) {
    EXPECT_EQ(h.sd.stats().net_rx_actions, actions);
    EXPECT_EQ(h.sd.stats().polls, polls);
    EXPECT_EQ(h.sd.stats().repolls, repolls);
}

TEST(SoftirqLoad, EachInterruptsPacketIsHashedOnceByTheNapiPollInNetRx) {
    // 20 packets 100 us apart, each done (16 us) before the next: one net_rx_action and one
    // poll (returning 1, so no repoll) per packet, all hashing in softirq context.
    Harness h(packets(20, 100 * engine::PS_PER_US, false));
    h.run();
    EXPECT_EQ(h.metric("packets_processed"), 20);
    EXPECT_EQ(h.metric("hash_calls"), 20);
    expect_softnet(h, 20, 20, 0);
    EXPECT_EQ(h.cycles(CtxKind::SOFTIRQ, Cat::CRYPTO), 20 * PACKET);
    EXPECT_EQ(h.cycles(CtxKind::TASK, Cat::CRYPTO), 0u);
}

TEST(SoftirqLoad, WithCryptdThePollQueuesEachPacketAndCryptdsKworkerHashesItInTaskContext) {
    Harness h(packets(20, 100 * engine::PS_PER_US, true));
    h.run();
    EXPECT_EQ(h.metric("packets_processed"), 20);
    // each request done before the next arrives: the queue never holds two
    EXPECT_EQ(h.stat("m/workload/nic_rx/cryptd/cpu0/max_qlen"), 1);
    EXPECT_EQ(h.stat("m/workload/nic_rx/cryptd/cpu0/enqueued"), 20);
    EXPECT_EQ(h.stat("m/workload/nic_rx/cryptd/cpu0/worker_runs"), 20);
    // the 20th packet's hash (the child, in the worker) ends this finite run before cryptd's
    // completion of that request: 19 completed
    EXPECT_EQ(h.stat("m/workload/nic_rx/cryptd/cpu0/completed"), 19);
    EXPECT_EQ(h.stat("m/workload/nic_rx/cryptd/cpu0/refused"), 0);
    EXPECT_EQ(h.cycles(CtxKind::TASK, Cat::CRYPTO), 20 * PACKET);
    EXPECT_EQ(h.cycles(CtxKind::SOFTIRQ, Cat::CRYPTO), 0u);
}

engine::Task<> bh_off(kernel::Cpu& cpu, Cycles c) {
    co_await kernel::local_bh_disable(cpu);
    co_await cpu.exec(c, Cat::OTHER);
    co_await kernel::local_bh_enable(cpu);
}

TEST(SoftirqLoad, ABacklogOfAHundredIsPolledAsSixtyFourThenThirtySixInTwoCalls) {
    // A task holds bottom halves off for 1 ms while 100 packets arrive 5 us apart (the first at
    // 5 us). At local_bh_enable one handle_softirqs run: call 1 polls 64 (repoll, NET_RX raised
    // again), a restart, call 2 polls 36 and completes.
    Harness h(packets(100, 5 * engine::PS_PER_US, false));
    h.cpu.create_task("bh-off", kernel::SchedPolicy::FIFO, 50, true, bh_off(h.cpu, 1'000'000));
    h.run();
    EXPECT_EQ(h.metric("max_backlog"), 100);
    EXPECT_EQ(h.metric("packets_processed"), 100);
    expect_softnet(h, 2, 2, 1);
    EXPECT_EQ(h.sd.stats().processed, 100u);
    EXPECT_EQ(h.cpu.stats().softirq_runs, 1u);
    EXPECT_EQ(h.cpu.stats().softirq_restarts, 1u);
}

} // namespace
} // namespace kdsim::workloads
