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

#include "mem/memory.h"
#include "net/net_test_support.h"
#include "net/skb_slab.h"
#include "net/tcp.h"

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
    // `csum_partial` and `copy_per_byte`: the checksum's and (without a hierarchy) the copy's
    // cycles per byte.
    explicit Harness(TunnelKind kind, bool wrapped = true, double csum_partial = 0, double copy_per_byte = 0)
        : cpu(sim, 0, engine::Clock(1'000'000'000), kernel::KernelCosts{}, kernel::KernelConfig{}),
          simd(arch::make_simd_unit(cpu, arch::SimdPolicy::ARM32_TASK_ONLY, arch::SimdCosts{})), sd(cpu),
          channel(kind, kind == TunnelKind::ESP ? crypto::AeadAlg::AES_128_GCM : crypto::AeadAlg::CHACHA20_POLY1305, false) {
        TunnelEnv env;
        env.stack = &stack;
        env.cpus.push_back(TunnelCpu{&cpu, simd.get(), &sd});
        env.cipher = &table;
        env.channel = &channel;
        env.costs.simd_wrapper = 70;
        env.costs.csum_partial = csum_partial;
        env.copy_per_byte = copy_per_byte;
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

// WireGuard on a memory hierarchy (one CPU at 1 GHz; 64-byte lines, private 8 KiB 8-way L1, shared
// 64 KiB 8-way L2, no prefetcher: nothing is evicted, each count is distinct lines). A TCP segment
// of 1448 bytes the writer copied into a page frag (frag line-aligned: 23 lines) is encrypted, sent,
// and the same buffer received again as a veth would hand it over.
mem::MemoryConfig small_hierarchy() {
    mem::MemoryConfig c;
    c.levels = {mem::CacheLevelConfig{"l1d", 8 * 1024, 8, 4, false, mem::Replacement::LRU},
                mem::CacheLevelConfig{"l2", 64 * 1024, 8, 20, true, mem::Replacement::LRU}};
    c.dram_latency_ns = 100;
    c.dram_bandwidth = 4e9;
    c.copy_warm = 0.5;
    return c;
}

struct Delivered final : TcpEndpoint {
    std::vector<Packet> got;
    engine::Task<> tcp_rcv(kernel::Cpu&, const Packet& p) override {
        got.push_back(p);
        co_return;
    }
};

// The segment sent; once the kworkers have run (1 ms), the stats noted and the outer frame the
// wire got received again, as the veth hands the same buffer to the peer (BH off, as NET_RX).
engine::Task<> wg_round_trip(Harness& h, Packet seg, const mem::MemorySystem& m, mem::MemoryStats& after_tx) {
    co_await h.wg->xmit(h.cpu, seg);
    co_await kernel::hrtimer_sleep_until(h.cpu, engine::PS_PER_MS);
    after_tx = m.stats();
    if (h.wire.sent.empty()) co_return;
    co_await kernel::local_bh_disable(h.cpu);
    co_await h.wg->rcv(h.cpu, h.wire.sent[0].p);
    co_await kernel::local_bh_enable(h.cpu);
}

TEST(WireGuardMemory, EncryptChecksumsAndPullsANonGsoSegmentIntoASlabHeadAndTheReceiverDecryptsTheSameLinesInPlace) {
    Harness h(TunnelKind::WIREGUARD);
    mem::MemorySystem memory(small_hierarchy(), 1, 1'000'000'000);
    SkbSlab slab(memory, 4096, 8);
    h.stack.set_memory(&memory, 0.5);
    h.stack.set_skb_slab(&slab);
    Delivered sink;
    h.stack.bind_tcp(0, sink);
    // the writer's copy: 23 user-buffer lines from DRAM, 23 frag lines write-allocated (L1 misses 46)
    const mem::Addr frag = memory.alloc(8192, 4096) + 4096;
    UserBuffer ub;
    (void)h.stack.copy_from_user(h.cpu, ub, frag, TCP_MSS, 0.2);
    Packet seg = transport_packet(FrameKind::TCP_DATA, TCP_MSS, TCP_IP_HEADERS, 0, 0); // 1514 bytes
    seg.data = frag - TCP_IP_HEADERS - ETH_HEADER;
    mem::MemoryStats tx;
    h.run(wg_round_trip(h, seg, memory, tx));
    ASSERT_EQ(h.wire.sent.size(), 1u);
    const Packet outer = h.wire.sent[0].p;
    // The head: a 4 KiB slab object, the inner IP header at 268 (MAX_TCP_HEADER 320 less 52), the
    // outer frame 58 bytes before it (Ethernet 14, IP 20, UDP 8, WireGuard 16) at 210.
    const mem::Addr head = outer.data + 58;
    EXPECT_EQ((head - 268) % 4096, 0u);
    EXPECT_EQ(slab.alloc(), head - 268 + 4096); // the first object is still live
    // The segment is one MSS, not GSO: CHECKSUM_PARTIAL. skb_checksum_help reads the 1480 bytes
    // of TCP header and payload [frag - 32, frag + 1448): the line before the frag from DRAM (1
    // miss), the 23 frag lines L1 hits. skb_cow_data then copies the 1500 bytes of IP packet
    // [frag - 52, frag + 1448): 24 hits; it writes object bytes 268..1767, lines 4..27: 24
    // write-allocates. The WireGuard header (bytes 252..267): line 3 write-allocated, line 4 a
    // hit. The AEAD reads the 1504 padded bytes (268..1771: lines 4..27, 24 hits) and writes them
    // and the tag (268..1787: 24 hits). The UDP/IP/Ethernet headers (210..251): line 3, a hit.
    EXPECT_EQ(tx.dram_demand_lines, 23u + 1u);
    EXPECT_EQ(tx.dram_write_allocates, 23u + 24u + 1u);
    EXPECT_EQ(tx.levels[0].misses, 46u + 1u + 24u + 1u);
    EXPECT_EQ(tx.levels[0].hits, 23u + 24u + 1u + 48u + 1u);
    // Received: the outer headers read (lines 3 and 4: 2 hits), the ciphertext and tag read (1520
    // bytes: lines 4..27, 24 hits) and the plaintext written back (1504 bytes: 24 hits), nothing
    // missed; the inner segment delivered from the same buffer.
    const mem::MemoryStats& s = memory.stats();
    ASSERT_EQ(sink.got.size(), 1u);
    EXPECT_EQ(sink.got[0].data, head - ETH_HEADER); // its IP header at the head, its payload behind
    EXPECT_EQ(s.dram_demand_lines, 24u);
    EXPECT_EQ(s.levels[0].misses, tx.levels[0].misses);
    EXPECT_EQ(s.levels[0].hits, tx.levels[0].hits + 2u + 48u);
}


engine::Task<> esp_round_trip(Harness& h, Packet seg, const mem::MemorySystem& m, mem::MemoryStats& after_tx) {
    co_await h.esp->xmit(h.cpu, seg);
    after_tx = m.stats();
    if (h.wire.sent.empty()) co_return;
    co_await kernel::local_bh_disable(h.cpu);
    co_await h.esp->rcv(h.cpu, h.wire.sent[0].p);
    co_await kernel::local_bh_enable(h.cpu);
}

TEST(EspMemory, OutputChecksumsTheSegmentAndEncryptsItsFragsIntoASlabHeadAndTheReceiverDecryptsTheSameLinesInPlace) {
    Harness h(TunnelKind::ESP, false); // the driver called directly: synchronous, in the sender
    mem::MemorySystem memory(small_hierarchy(), 1, 1'000'000'000);
    SkbSlab slab(memory, 4096, 8);
    h.stack.set_memory(&memory, 0.5);
    h.stack.set_skb_slab(&slab);
    Delivered sink;
    h.stack.bind_tcp(0, sink);
    // the writer's copy: 23 user-buffer lines from DRAM, 23 frag lines write-allocated (L1 misses 46)
    const mem::Addr frag = memory.alloc(8192, 4096) + 4096;
    UserBuffer ub;
    (void)h.stack.copy_from_user(h.cpu, ub, frag, TCP_MSS, 0.2);
    Packet seg = transport_packet(FrameKind::TCP_DATA, TCP_MSS, TCP_IP_HEADERS, 0, 0); // 1514 bytes
    seg.data = frag - TCP_IP_HEADERS - ETH_HEADER;
    mem::MemoryStats tx;
    h.run(esp_round_trip(h, seg, memory, tx));
    ASSERT_EQ(h.wire.sent.size(), 1u);
    const Packet outer = h.wire.sent[0].p;
    // The destination: a 4 KiB slab object (x->xfrag's page in the kernel), the inner IP header at
    // 268 (as WireGuard's), the outer frame 50 bytes before it (Ethernet 14, IP 20, ESP 8, IV 8)
    // at 218.
    const mem::Addr head = outer.data + 50;
    EXPECT_EQ((head - 268) % 4096, 0u);
    // xfrm_output's skb_checksum_help reads the 1480 bytes of TCP header and payload [frag - 32,
    // frag + 1448): the line before the frag from DRAM (1 miss), 23 frag lines L1 hits. Nothing is
    // pulled: esp_output_head puts the trailer (object bytes 1768..1771: 1500 + 2 padded to 1504)
    // in x->xfrag: line 27 write-allocated; the outer IP, ESP header and IV (232..267): lines 3
    // and 4 write-allocated. The AEAD reads the 1504 bytes where they lie, [frag - 52, frag +
    // 1452): 24 hits, and writes them and the 16-byte ICV at 268..1787: lines 4 and 27 hits, the
    // 22 between write-allocated. The Ethernet header (218..231): line 3, a hit.
    EXPECT_EQ(tx.dram_demand_lines, 23u + 1u);
    EXPECT_EQ(tx.dram_write_allocates, 23u + 1u + 2u + 22u);
    EXPECT_EQ(tx.levels[0].misses, 46u + 1u + 1u + 2u + 22u);
    EXPECT_EQ(tx.levels[0].hits, 23u + 24u + 2u + 1u);
    // Received: the outer, ESP and IV bytes read (218..267: lines 3 and 4, 2 hits), the ciphertext
    // and ICV read (1520 bytes: lines 4..27, 24 hits) and the plaintext written back (1504: 24 hits),
    // then the CHECKSUM_NONE inner segment's TCP header and payload read by the checksum (bytes
    // 288..1767: lines 4..27, 24 hits), nothing missed; the segment delivered from the same buffer.
    const mem::MemoryStats& s = memory.stats();
    ASSERT_EQ(sink.got.size(), 1u);
    EXPECT_EQ(sink.got[0].data, head - ETH_HEADER);
    EXPECT_EQ(s.dram_demand_lines, 24u);
    EXPECT_EQ(s.levels[0].misses, tx.levels[0].misses);
    EXPECT_EQ(s.levels[0].hits, tx.levels[0].hits + 2u + 48u + 24u);
}

TEST(EspMemory, WithoutAnAddressTheOuterFrameHasNoneAndNothingTouchesTheHierarchy) {
    Harness h(TunnelKind::ESP, false);
    mem::MemorySystem memory(small_hierarchy(), 1, 1'000'000'000);
    h.stack.set_memory(&memory, 0.5);
    mem::MemoryStats tx;
    h.run(esp_round_trip(h, segment(), memory, tx));
    ASSERT_EQ(h.wire.sent.size(), 1u);
    EXPECT_EQ(h.wire.sent[0].p.data, 0u);
    EXPECT_EQ(memory.stats().levels[0].hits + memory.stats().levels[0].misses, 0u);
}


engine::Task<> esp_send_bh_off(Harness& h, Packet seg) {
    co_await kernel::local_bh_disable(h.cpu); // NEON not usable: the request goes to cryptd
    co_await h.esp->xmit(h.cpu, seg);
    co_await kernel::local_bh_enable(h.cpu);
}

TEST(EspMemory, ARequestThroughCryptdTouchesTheSameLinesInItsWorker) {
    // The first test's transmit, its AEAD in cryptd's kworker: the same 72 L1 misses and 50 hits.
    Harness h(TunnelKind::ESP, true);
    mem::MemorySystem memory(small_hierarchy(), 1, 1'000'000'000);
    SkbSlab slab(memory, 4096, 8);
    h.stack.set_memory(&memory, 0.5);
    h.stack.set_skb_slab(&slab);
    const mem::Addr frag = memory.alloc(8192, 4096) + 4096;
    UserBuffer ub;
    (void)h.stack.copy_from_user(h.cpu, ub, frag, TCP_MSS, 0.2);
    Packet seg = transport_packet(FrameKind::TCP_DATA, TCP_MSS, TCP_IP_HEADERS, 0, 0);
    seg.data = frag - TCP_IP_HEADERS - ETH_HEADER;
    h.run(esp_send_bh_off(h, seg));
    ASSERT_EQ(h.wire.sent.size(), 1u);
    EXPECT_EQ(h.esp->stats().async_crypts, 1u);
    EXPECT_EQ(h.wire.sent[0].task, "kworker/0:cryptd");
    EXPECT_EQ(memory.stats().levels[0].misses, 72u);
    EXPECT_EQ(memory.stats().levels[0].hits, 50u);
}

// ---- the transmit path's copy and checksum (skb_segment with features 0, skb_checksum_help) ----

using kernel::Cat;

Cycles task_cycles(const kernel::Cpu& cpu, Cat cat) {
    return cpu.stats().cycles[static_cast<std::size_t>(kernel::CtxKind::TASK)][static_cast<std::size_t>(cat)];
}

// A GSO skb of two 1448-byte segments (a 2962-byte frame: 2896 payload, 52 header, 14 Ethernet).
Packet gso_two(mem::Addr payload) {
    Packet p = transport_packet(FrameKind::TCP_DATA, 2 * TCP_MSS, TCP_IP_HEADERS, 0, 0);
    p.gso_segs = 2;
    p.gso_size = TCP_MSS;
    p.data = payload ? payload - TCP_IP_HEADERS - ETH_HEADER : 0;
    return p;
}

// The sender's work noted as wg_xmit returns (the kworkers, SCHED_NORMAL, run only after the FIFO
// sender blocks), then the workers run.
engine::Task<> wg_send_noting(Harness& h, Packet skb, Cycles& copy, Cycles& protocol, mem::MemoryStats* m,
                              const mem::MemorySystem* memory) {
    co_await h.wg->xmit(h.cpu, skb);
    copy = task_cycles(h.cpu, Cat::COPY);
    protocol = task_cycles(h.cpu, Cat::PROTOCOL);
    if (m) *m = memory->stats();
    co_await kernel::hrtimer_sleep_until(h.cpu, engine::PS_PER_MS);
}

TEST(WireGuardGso, EachSegmentIsCopiedAndChecksummedOnTheSendingTaskBeforeWgXmitReturnsAndTheWorkerAddsNeither) {
    // No hierarchy; every [tunnel] figure 0 but the checksum, 0.25 cycles/byte; the copy 0.5
    // cycles/byte; skb_segment 100 cycles a segment. By hand: skb_segment 2 x 100 = 200 and the
    // checksums 2 x 1448 x 0.25 = 724 (PROTOCOL), the copies 2 x 1448 x 0.5 = 1448 (COPY), all in
    // the sender. The encrypt worker gets two CHECKSUM_NONE linear segments: no skb_checksum_help,
    // no pull: nothing more of either.
    Harness h(TunnelKind::WIREGUARD, true, 0.25, 0.5);
    h.wire.set_gso_segment(100);
    Cycles copy = 0, protocol = 0;
    h.run(wg_send_noting(h, gso_two(0), copy, protocol, nullptr, nullptr));
    EXPECT_EQ(copy, 1448u);
    EXPECT_EQ(protocol, 200u + 724u);
    EXPECT_EQ(task_cycles(h.cpu, Cat::COPY), 1448u);
    EXPECT_EQ(task_cycles(h.cpu, Cat::PROTOCOL), 200u + 724u);
    ASSERT_EQ(h.wire.sent.size(), 2u);
    EXPECT_EQ(h.wg->stats().tx_packets, 2u);
    for (const auto& s : h.wire.sent) EXPECT_EQ(s.p.inner_len, 1514u); // 1448 + 52 + 14
    EXPECT_EQ(h.wire.sent[1].p.seq, 1448u);
}

TEST(WireGuardGso, ANonGsoSegmentIsChecksummedInTheEncryptWorkerNotTheSender) {
    // One MSS (not GSO): CHECKSUM_PARTIAL, so encrypt_packet's skb_checksum_help checksums its
    // 1480 bytes of TCP header and payload in the worker: 1480 x 0.25 = 370 cycles; the sender
    // checksums and copies nothing.
    Harness h(TunnelKind::WIREGUARD, true, 0.25, 0.5);
    Cycles copy = 0, protocol = 0;
    h.run(wg_send_noting(h, transport_packet(FrameKind::TCP_DATA, TCP_MSS, TCP_IP_HEADERS, 0, 0), copy, protocol,
                         nullptr, nullptr));
    EXPECT_EQ(copy, 0u);
    EXPECT_EQ(protocol, 0u);
    EXPECT_EQ(task_cycles(h.cpu, Cat::PROTOCOL), 370u);
    EXPECT_EQ(task_cycles(h.cpu, Cat::COPY), 0u);
    ASSERT_EQ(h.wire.sent.size(), 1u);
}

TEST(WireGuardGso, OnAHierarchyEachSegmentGetsItsOwnSlabHeadAndTheEncryptWorkerPullsNothing) {
    // The writer copied the 2896 bytes into a line-aligned page frag (46 lines; its user buffer's
    // 46 lines from DRAM). skb_segment on the sender: segment 0's 1500 bytes read from [frag - 52,
    // frag + 1448) (the line before the frag from DRAM, the rest cached), segment 1's from
    // [frag + 1396, frag + 2896) (cached), each written at its own slab object's bytes 268..1767
    // (lines 4..27: 24 write-allocates each), the checksum reading them back (cached). DRAM as
    // wg_xmit returns: 46 + 1 demand lines, 46 + 2 x 24 write-allocates. The encrypt worker pulls
    // nothing: per segment the WireGuard header (bytes 252..267) write-allocates line 3, the AEAD
    // works on lines 4..27 in place (cached), the tx worker's headers (210..251) hit line 3: 2
    // write-allocates more, no demand line. The heads are the two first objects: the next
    // allocation is the third.
    Harness h(TunnelKind::WIREGUARD, true, 0.25);
    h.wire.set_gso_segment(100);
    mem::MemorySystem memory(small_hierarchy(), 1, 1'000'000'000);
    SkbSlab slab(memory, 4096, 8);
    h.stack.set_memory(&memory, 0.5);
    h.stack.set_skb_slab(&slab);
    const mem::Addr frag = memory.alloc(3 * 4096, 4096) + 4096;
    UserBuffer ub;
    (void)h.stack.copy_from_user(h.cpu, ub, frag, 2 * TCP_MSS, 0.2);
    Cycles copy = 0, protocol = 0;
    mem::MemoryStats sent;
    h.run(wg_send_noting(h, gso_two(frag), copy, protocol, &sent, &memory));
    EXPECT_EQ(sent.dram_demand_lines, 46u + 1u);
    EXPECT_EQ(sent.dram_write_allocates, 46u + 2u * 24u);
    EXPECT_EQ(memory.stats().dram_demand_lines, 46u + 1u);
    EXPECT_EQ(memory.stats().dram_write_allocates, 46u + 2u * 24u + 2u);
    // each segment's copy costs at least its loop, 1500 x 0.5 = 750; its checksum 1448 x 0.25 =
    // 362 beside skb_segment's 2 x 100
    EXPECT_GE(copy, 2u * 750u);
    EXPECT_GE(protocol, 200u + 2u * 362u);
    ASSERT_EQ(h.wire.sent.size(), 2u);
    const mem::Addr head0 = h.wire.sent[0].p.data + 58, head1 = h.wire.sent[1].p.data + 58;
    EXPECT_EQ((head0 - 268) % 4096, 0u);
    EXPECT_EQ(head1, head0 + 4096);
    EXPECT_EQ(slab.alloc(), head0 - 268 + 2 * 4096);
}

// ---- the receive path's checksum: ESP leaves the inner packet CHECKSUM_NONE, WireGuard does not ----

// PROTOCOL cycles in every context (task, softirq, kworkers) of the CPU.
Cycles protocol_cycles(const kernel::Cpu& cpu) {
    Cycles c = 0;
    for (const auto& ctx : cpu.stats().cycles) c += ctx[static_cast<std::size_t>(Cat::PROTOCOL)];
    return c;
}

// The packet sent, then the wire's outer frame received (BH off, as NET_RX); the kworkers and
// NAPI polls run within the 2 ms that follow. `rx`: the PROTOCOL cycles from the receive on.
engine::Task<> round_trip_noting(Harness& h, Packet p, Cycles& rx) {
    if (h.esp) co_await h.esp->xmit(h.cpu, p);
    else co_await h.wg->xmit(h.cpu, p);
    co_await kernel::hrtimer_sleep_until(h.cpu, engine::PS_PER_MS);
    if (h.wire.sent.empty()) co_return;
    const Cycles before = protocol_cycles(h.cpu);
    co_await kernel::local_bh_disable(h.cpu);
    if (h.esp) co_await h.esp->rcv(h.cpu, h.wire.sent[0].p);
    else co_await h.wg->rcv(h.cpu, h.wire.sent[0].p);
    co_await kernel::local_bh_enable(h.cpu);
    co_await kernel::hrtimer_sleep_until(h.cpu, 2 * engine::PS_PER_MS);
    rx = protocol_cycles(h.cpu) - before;
}

struct RxDifference {
    Cycles tx = 0, rx = 0; // PROTOCOL cycles with csum_partial 0.25 less those with 0
};

RxDifference checksum_difference(TunnelKind kind, const Packet& p) {
    Cycles rx[2] = {0, 0}, total[2] = {0, 0};
    for (int i = 0; i < 2; ++i) {
        Harness h(kind, false, i == 0 ? 0.0 : 0.25); // ESP's driver called directly: synchronous
        Delivered sink;
        h.stack.bind_tcp(0, sink);
        h.run(round_trip_noting(h, p, rx[i]));
        EXPECT_EQ(h.wire.sent.size(), 1u);
        total[i] = protocol_cycles(h.cpu);
        if (kind == TunnelKind::ESP) EXPECT_EQ(h.esp->stats().delivered, 1u);
        else EXPECT_EQ(h.wg->stats().delivered, 1u);
    }
    return RxDifference{(total[1] - rx[1]) - (total[0] - rx[0]), rx[1] - rx[0]};
}

TEST(EspRxChecksum, AnEspReceiverChecksumsTheInnerTcpSegmentsHeaderAndPayloadInSoftware) {
    // One MSS segment (1514-byte frame): 1480 bytes of TCP header and payload. csum_partial 0.25
    // cycles/byte: xfrm_output's skb_checksum_help 1480 x 0.25 = 370 on transmit, and the
    // receiver's verification of the CHECKSUM_NONE inner segment the same 370.
    const RxDifference d =
        checksum_difference(TunnelKind::ESP, transport_packet(FrameKind::TCP_DATA, TCP_MSS, TCP_IP_HEADERS, 0, 0));
    EXPECT_EQ(d.tx, 370u);
    EXPECT_EQ(d.rx, 370u);
}

TEST(EspRxChecksum, AnEspReceiverChecksumsAUdpDatagramToo) {
    // A 1034-byte frame: 1000 bytes of UDP header and payload, 250 cycles each way.
    Packet p;
    p.kind = FrameKind::UDP_DATA;
    p.len = 1034;
    p.payload = 1000 - 8;
    const RxDifference d = checksum_difference(TunnelKind::ESP, p);
    EXPECT_EQ(d.tx, 250u);
    EXPECT_EQ(d.rx, 250u);
}

TEST(EspRxChecksum, AWireGuardReceiverPaysNoChecksumItMarksTheAuthenticatedPacketChecksumUnnecessary) {
    // The same segment over WireGuard: encrypt_packet's skb_checksum_help 370 on transmit, nothing
    // on receive.
    const RxDifference d = checksum_difference(TunnelKind::WIREGUARD,
                                               transport_packet(FrameKind::TCP_DATA, TCP_MSS, TCP_IP_HEADERS, 0, 0));
    EXPECT_EQ(d.tx, 370u);
    EXPECT_EQ(d.rx, 0u);
}

engine::Task<> esp_rcv_bh_off(Harness& h, Packet outer) {
    co_await kernel::local_bh_disable(h.cpu); // NEON not usable: the request goes to cryptd
    co_await h.esp->rcv(h.cpu, outer);
    co_await kernel::local_bh_enable(h.cpu);
}

// Notes each delivered segment's context: the running task and its PROTOCOL cycles so far.
struct DeliveredWhere final : TcpEndpoint {
    std::vector<std::string> tasks;
    engine::Task<> tcp_rcv(kernel::Cpu& cpu, const Packet&) override {
        tasks.push_back(cpu.current()->comm);
        co_return;
    }
};

TEST(EspRxChecksum, ADecryptThroughCryptdIsChecksummedWhereItsCompletionDeliversTheSegment) {
    // The outer frame of a 1514-byte segment (outer IP 20, ESP 8, IV 8, 1500 + 2 padded to 1504,
    // ICV 16) received with BH off: the request goes to cryptd, whose kworker decrypts and
    // completes it; the completion verifies the 1480 bytes (370 cycles at 0.25) and delivers.
    Cycles all[2] = {0, 0};
    for (int i = 0; i < 2; ++i) {
        Harness h(TunnelKind::ESP, true, i == 0 ? 0.0 : 0.25);
        DeliveredWhere sink;
        h.stack.bind_tcp(0, sink);
        const Packet inner = transport_packet(FrameKind::TCP_DATA, TCP_MSS, TCP_IP_HEADERS, 0, 0);
        Packet outer = inner;
        outer.kind = FrameKind::ESP;
        outer.inner = inner.kind;
        outer.inner_len = inner.len;
        outer.len = ETH_HEADER + 20 + 8 + 8 + 1504 + 16;
        h.channel.seal(0, outer, false);
        h.run(esp_rcv_bh_off(h, outer));
        EXPECT_EQ(h.esp->stats().async_crypts, 1u);
        ASSERT_EQ(sink.tasks.size(), 1u);
        EXPECT_EQ(sink.tasks[0], "kworker/0:cryptd");
        all[i] = protocol_cycles(h.cpu);
    }
    EXPECT_EQ(all[1] - all[0], 370u);
}

} // namespace
} // namespace kdsim::net
