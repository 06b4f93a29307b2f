// The tunnels' queues, worked by hand on one CPU of an ARM board before 9283/1 (NEON only where
// !in_interrupt()).
// ESP on the one cryptd (net/tunnel.cpp, crypto/simd.c's rule, crypto/cryptd.c): with gcm behind
// crypto/simd.c, a request made with bottom halves off goes to cryptd; one made in atomic
// context while this SA has requests in cryptd goes there too, to keep their order; one made
// from a preemptible task runs synchronously. cryptd's kworker completes them
// (esp_output_done) with BH off.
// WireGuard receive (drivers/net/wireguard/receive.c): packets go on the decrypt ring and the
// peer's ordered queue; the decrypt kworker napi_schedule()s the peer's NAPI after each packet,
// and wg_packet_rx_poll delivers the decrypted prefix, stopping at a packet still in the ring.
#include "net/tunnel.h"

#include "net/net_test_support.h"

#include "kernel/preempt.h"
#include "kernel/sched.h"
#include "kernel/softirq.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace kdsim::net {
namespace {

using testing::Wire;

crypto::CipherCostTable cipher_table() {
    crypto::CipherCostTable t;
    t.set(crypto::CipherPrim::AES128_CTR, crypto::CipherImpl::CE, {1.0, 30});
    t.set(crypto::CipherPrim::GHASH, crypto::CipherImpl::CE, {1.5, 40});
    t.set(crypto::CipherPrim::CHACHA20, crypto::CipherImpl::ARM, {11.0, 50});
    t.set(crypto::CipherPrim::POLY1305, crypto::CipherImpl::ARM, {4.0, 70});
    return t;
}

struct Harness {
    engine::Simulation sim{1};
    kernel::Cpu cpu;
    std::unique_ptr<arch::SimdUnit> simd;
    Softnet sd;
    Wire wire;
    Stack stack{wire};
    TunnelChannel channel;
    crypto::CipherCostTable table = cipher_table();
    std::unique_ptr<Esp> esp;
    std::unique_ptr<WireGuard> wg;

    // `wrapped`: ESP's gcm behind crypto/simd.c (the kernel's choice here) or its inner driver
    // called directly. Every [tunnel] figure is 0 but simd_wrapper.
    explicit Harness(TunnelKind kind, bool wrapped = true)
        : cpu(sim, 0, engine::Clock(1'000'000'000), kernel::KernelCosts{}, kernel::KernelConfig{}),
          simd(arch::make_simd_unit(cpu, arch::SimdPolicy::ARM32_TASK_ONLY, arch::SimdCosts{})), sd(cpu),
          channel(kind, kind == TunnelKind::ESP ? crypto::AeadAlg::AES_128_GCM : crypto::AeadAlg::CHACHA20_POLY1305, false) {
        TunnelEnv env;
        env.stack = &stack;
        env.cpus.push_back(TunnelCpu{&cpu, simd.get(), &sd});
        env.cipher = &table;
        env.channel = &channel;
        env.costs.simd_wrapper = 70;
        if (kind == TunnelKind::WIREGUARD) {
            env.driver = crypto::AeadDriver::LIB_CHACHAPOLY;
            wg = std::make_unique<WireGuard>(std::move(env));
            return;
        }
        env.driver = crypto::AeadDriver::GCM_TEMPLATE;
        env.driver_async = wrapped; // gcm(aes) behind crypto/simd.c
        env.driver_internal = true;
        esp = std::make_unique<Esp>(std::move(env));
    }
    // A SCHED_FIFO sender: cryptd's kworker (SCHED_NORMAL) runs only once it is done.
    void run(engine::Task<> sender) {
        cpu.create_task("sender", kernel::SchedPolicy::FIFO, 50, true, std::move(sender));
        cpu.boot();
        sim.run(engine::PS_PER_S);
        cpu.finish();
    }
};

Packet segment() {
    Packet p;
    p.kind = FrameKind::TCP_DATA;
    p.len = 1000;
    return p;
}

engine::Task<> three_sends(Harness& h) {
    kernel::Cpu& cpu = h.cpu;
    co_await kernel::local_bh_disable(cpu); // 0: BH off, NEON not usable -> cryptd
    co_await h.esp->xmit(cpu, segment());
    co_await kernel::local_bh_enable(cpu);
    cpu.preempt_count_add(1); // 1: NEON usable, but in_atomic() with 0 in cryptd -> cryptd
    co_await h.esp->xmit(cpu, segment());
    cpu.preempt_count_sub(1);
    co_await h.esp->xmit(cpu, segment()); // 2: preemptible task context -> synchronous
}

TEST(EspCryptd, BhOffAndAtomicWithRequestsQueuedGoToCryptdAPreemptibleTaskEncryptsInPlace) {
    Harness h(TunnelKind::ESP);
    h.run(three_sends(h));
    const TunnelStats& s = h.esp->stats();
    EXPECT_EQ(s.async_crypts, 2u);
    EXPECT_EQ(s.sync_crypts, 1u);
    EXPECT_EQ(s.tx_sent, 3u);
    EXPECT_EQ(h.esp->cryptd().stats().max_qlen, 2u);
    EXPECT_EQ(h.esp->cryptd().stats().worker_runs, 2u); // one request per run
    ASSERT_EQ(h.wire.sent.size(), 3u);
    // the synchronous one leaves first, from the sender; cryptd's two follow in their order,
    // from its kworker, with BH off twice: the completion's and dev_queue_xmit's rcu_read_lock_bh
    EXPECT_EQ(h.wire.sent[0].p.counter, 2u);
    EXPECT_EQ(h.wire.sent[0].task, "sender");
    for (std::size_t i = 1; i < 3; ++i) {
        EXPECT_EQ(h.wire.sent[i].p.counter, i - 1);
        EXPECT_EQ(h.wire.sent[i].task, "kworker/0:cryptd");
        EXPECT_EQ(h.wire.sent[i].preempt_count, 2 * kernel::SOFTIRQ_DISABLE_OFFSET);
    }
}

// One send from a preemptible task, timed (1 GHz: 1 ns per cycle).
engine::Task<> one_send(Harness& h, engine::Tick& took) {
    const engine::Tick t0 = h.sim.now();
    co_await h.esp->xmit(h.cpu, segment());
    took = h.sim.now() - t0;
}

TEST(EspCryptd, TheWrappersSynchronousPathCostsItsSimdWrapperFigureOverCallingTheDriverDirectly) {
    // crypto/simd.c's simd_aead_encrypt stays synchronous in a preemptible task (NEON usable, nothing
    // queued) and hands the request to the inner driver: the same work plus [tunnel].simd_wrapper.
    engine::Tick wrapped = 0, direct = 0;
    Harness a(TunnelKind::ESP, true);
    a.run(one_send(a, wrapped));
    Harness b(TunnelKind::ESP, false);
    b.run(one_send(b, direct));
    EXPECT_EQ(a.esp->stats().sync_crypts, 1u);
    EXPECT_EQ(b.esp->stats().sync_crypts, 1u);
    EXPECT_GT(direct, 0u);
    EXPECT_EQ(wrapped - direct, 70 * engine::PS_PER_NS);
}

engine::Task<> three_task_sends(Harness& h) {
    for (int i = 0; i < 3; ++i) co_await h.esp->xmit(h.cpu, segment());
}

TEST(EspCryptd, WithCryptoSimdDisabledForTestEveryWrappedRequestGoesThroughCryptdAndItsWorkerStillUsesNeon) {
    // crypto/testmgr.c's knob makes crypto_simd_usable() false: the three task-context sends that
    // would run in place all go to cryptd. cryptd's worker calls the inner driver, which does not
    // test the knob: its ctr and ghash passes still run on NEON (2 brackets per request).
    Harness h(TunnelKind::ESP);
    h.simd->set_crypto_simd_disabled_for_test(true);
    h.run(three_task_sends(h));
    const TunnelStats& s = h.esp->stats();
    EXPECT_EQ(s.async_crypts, 3u);
    EXPECT_EQ(s.sync_crypts, 0u);
    EXPECT_EQ(s.tx_sent, 3u);
    EXPECT_EQ(s.aead.simd_steps, 6u);
    EXPECT_EQ(s.aead.scalar_steps, 0u);
    EXPECT_EQ(s.aead.unusable_simd, 0u); // the kworker is a task: may_use_simd() holds
}

engine::Task<> flood(Harness& h, int n) {
    co_await kernel::local_bh_disable(h.cpu);
    for (int i = 0; i < n; ++i) co_await h.esp->xmit(h.cpu, segment());
    co_await kernel::local_bh_enable(h.cpu);
}

TEST(EspCryptd, TheThousandAndFirstQueuedRequestIsRefusedAndItsPacketDropped) {
    // cryptd_max_cpu_qlen 1000; esp's requests carry no CRYPTO_TFM_REQ_MAY_BACKLOG: -ENOSPC.
    Harness h(TunnelKind::ESP);
    h.run(flood(h, 1001));
    const TunnelStats& s = h.esp->stats();
    EXPECT_EQ(s.async_crypts, 1001u);
    EXPECT_EQ(s.ring_drops, 1u);
    EXPECT_EQ(h.esp->cryptd().stats().max_qlen, 1000u);
    EXPECT_EQ(s.tx_sent, 1000u);
    EXPECT_EQ(h.esp->cryptd().stats().refused, 1u);
    EXPECT_EQ(h.esp->cryptd().stats().worker_runs, 1000u);
}

// Outer WireGuard frames as the NIC hands them to the UDP encap handler, from a BH-off task.
engine::Task<> wg_receive(Harness& h, int n) {
    co_await kernel::local_bh_disable(h.cpu);
    for (int i = 0; i < n; ++i) {
        Packet p = segment();
        p.kind = FrameKind::WG_DATA;
        p.inner = FrameKind::TCP_DATA;
        p.inner_len = 1000;
        p.counter = static_cast<std::uint64_t>(i);
        co_await h.wg->rcv(h.cpu, p);
    }
    co_await kernel::local_bh_enable(h.cpu);
}

TEST(WireGuardRx, ThePeerPollDeliversInOrderAndStopsAtThePacketTheWorkerIsStillDecrypting) {
    // 4 packets. The decrypt worker takes one (ptr_ring_consume_bh), decrypts it and schedules
    // the peer's NAPI; NET_RX runs at the next consume's local_bh_enable, when that consume has
    // taken the next packet off the ring but not decrypted it: the poll delivers one packet and
    // stops at the next (3 such waits). After the 4th, the consume finds the ring empty and the
    // poll delivers the last one. 4 polls, none using its weight.
    Harness h(TunnelKind::WIREGUARD);
    h.run(wg_receive(h, 4));
    const TunnelStats& s = h.wg->stats();
    EXPECT_EQ(s.rx_packets, 4u);
    EXPECT_EQ(s.decrypted, 4u);
    EXPECT_EQ(s.delivered, 4u);
    EXPECT_EQ(s.reordered_waits, 3u);
    EXPECT_EQ(h.sd.stats().polls, 4u);
    EXPECT_EQ(h.sd.stats().repolls, 0u);
    EXPECT_EQ(h.sd.stats().processed, 4u);
}

TEST(WireGuardRx, TheDecryptRingHoldsMaxQueuedPacketsAndDropsTheNext) {
    Harness h(TunnelKind::WIREGUARD);
    h.run(wg_receive(h, static_cast<int>(WireGuard::MAX_QUEUED_PACKETS) + 1));
    EXPECT_EQ(h.wg->stats().ring_drops, 1u);
    EXPECT_EQ(h.wg->stats().delivered, WireGuard::MAX_QUEUED_PACKETS);
}

} // namespace
} // namespace kdsim::net
