// virtio-net's offloads (net/virtio.*, net/virtio_offload.*) against counts worked out by hand from
// the kernel's rules: a guest GSO skb with HOST_TSO4 is one chain, one kick decision and one host
// skb, without it ceil(payload / MSS) frames; a host skb of L bytes takes the fewest posted
// mergeable buffers whose lengths add up to L + 12 (virtio_net_hdr_mrg_rxbuf); a fresh ring's
// buffers are 1536 B (12 + GOOD_PACKET_LEN 1518, rounded up to 64), 20 per 32 KiB page_frag
// plus one of 2048 that takes the page's last 512 B; the EWMA of 64 KiB packets grows them to
// PAGE_SIZE.
#include "net/virtio.h"

#include "kernel/cpu_test_support.h"
#include "kernel/sched.h"
#include "net/stack.h"
#include "net/tcp.h"

#include <gtest/gtest.h>

#include <memory>
#include <vector>

namespace kdsim::net {
namespace {

constexpr std::uint32_t MSS = TCP_MSS;

// A guest of one vCPU and its host (1 GHz, the round kernel figures), joined by virtio-net with
// `features`; what each side's stack receives is recorded. The vhost worker runs on host CPU h,
// or with `vhost_unpinned` may also run on h2 (idle unless a test gives it work).
struct Rig {
    explicit Rig(const VirtioFeatures& f = {}, bool vhost_unpinned = false) {
        kvm::KvmCosts k{};
        vm = std::make_unique<kvm::Vm>(k, kernel::testing::round_costs(), std::vector<kernel::Cpu*>{&g});
        NetCosts gc{};
        gc.driver_xmit = 500;
        gc.driver_rx = 1000;
        gc.gso_segment = 300;
        gc.virtio_rx_buf = 450;
        gc.virtio_tx_sg = 50;
        gc.virtio_gso_hdr = 60;
        VirtCosts v{.virq_inject = 2000, .vhost_tx = 2600, .vhost_rx = 2200, .copy_per_byte = 0.5, .tun_xmit = 900,
                    .vhost_desc = 110, .vhost_rx_buf = 450, .vnet_hdr_gso = 120};
        dev = std::make_unique<VirtioNet>(sg, 40, gc, *vm, "guest.eth0", f);
        tap = std::make_unique<Tap>(NetCosts{}, v, "host.tap0");
        tap->set_tso(dev->features().tap_tso());
        std::vector<kernel::Cpu*> affinity;
        if (vhost_unpinned) affinity = {&h, &h2};
        vhost = std::make_unique<Vhost>(h, v, *dev, *tap, "vhost-guest", affinity);
        dev->set_gso(true);
        tap->set_rx_handler(&Rig::got, &host_got);
        dev->set_rx_handler(&Rig::got, &guest_got);
    }
    static engine::Task<> got(kernel::Cpu&, void* ctx, const Packet& p) {
        static_cast<std::vector<Packet>*>(ctx)->push_back(p);
        co_return;
    }
    void run(kernel::Cpu& on, engine::Task<> body) {
        on.create_task("t", kernel::SchedPolicy::NORMAL, 0, false, std::move(body));
        g.boot();
        h.boot();
        h2.boot();
        sim.run(20 * engine::PS_PER_MS);
        g.finish();
        h.finish();
        h2.finish();
    }
    engine::Simulation sim{1};
    kernel::Cpu g{sim, 0, engine::Clock(1'000'000'000), kernel::testing::round_costs(), kernel::KernelConfig{}};
    kernel::Cpu h{sim, 1, engine::Clock(1'000'000'000), kernel::testing::round_costs(), kernel::KernelConfig{}};
    kernel::Cpu h2{sim, 2, engine::Clock(1'000'000'000), kernel::testing::round_costs(), kernel::KernelConfig{}};
    Softnet sg{g};
    std::unique_ptr<kvm::Vm> vm;
    std::unique_ptr<VirtioNet> dev;
    std::unique_ptr<Tap> tap;
    std::unique_ptr<Vhost> vhost;
    std::vector<Packet> host_got, guest_got;
};

// A TCP GSO skb of `payload` bytes from sequence `seq`, gso_size MSS.
Packet gso_skb(std::uint32_t payload, std::uint64_t seq = 0) {
    Packet p = transport_packet(FrameKind::TCP_DATA, payload, TCP_IP_HEADERS, seq, 0);
    p.gso_size = MSS;
    p.gso_segs = (payload + MSS - 1) / MSS;
    return p;
}

engine::Task<> guest_sends(Rig& r, Stack& s, Packet p) { co_await s.dev_queue_xmit(r.g, p); }

TEST(VirtioFeatures, QemuDropsTsoWithoutItsChecksumFeature) {
    VirtioFeatures f;
    f.csum = false;
    f.guest_csum = false;
    const VirtioFeatures n = f.negotiated();
    EXPECT_FALSE(n.host_tso4);
    EXPECT_FALSE(n.host_tso6);
    EXPECT_FALSE(n.guest_tso4);
    EXPECT_FALSE(n.guest_tso6);
    EXPECT_FALSE(n.guest_tso());
    EXPECT_FALSE(n.tap_tso());
    EXPECT_TRUE(n.mrg_rxbuf);
    EXPECT_TRUE(VirtioFeatures{}.negotiated().guest_tso());
    EXPECT_TRUE(VirtioFeatures{}.negotiated().tap_tso());
}

TEST(VirtioFeatures, RxModeIsMergeableElseBigWithGuestTsoElseSmall) {
    VirtioFeatures f;
    EXPECT_EQ(rx_mode(f), VirtioRxMode::MERGEABLE);
    f.mrg_rxbuf = false;
    EXPECT_EQ(rx_mode(f), VirtioRxMode::BIG);
    f.guest_tso4 = f.guest_tso6 = false;
    EXPECT_EQ(rx_mode(f), VirtioRxMode::SMALL);
}

TEST(VirtioFeatures, NamesIndexTheMembersInOrder) {
    VirtioFeatures f;
    for (std::size_t i = 0; i < VirtioFeatures::NAMES.size(); ++i) f[i] = false;
    EXPECT_FALSE(f.csum || f.guest_csum || f.host_tso4 || f.host_tso6 || f.guest_tso4 || f.guest_tso6 || f.mrg_rxbuf);
    EXPECT_EQ(VirtioFeatures::NAMES[2], "host_tso4");
}

// 32768 / 1536 = 21.3: after 20 buffers 2048 B are left, after the 21st 512 < 1536, which it takes.
TEST(MergeableBufs, FreshBuffersAre1536WithThePageFragsHoleInEvery21st) {
    MergeableBufs m;
    for (int page = 0; page < 2; ++page) {
        for (int i = 0; i < 20; ++i) EXPECT_EQ(m.next_len(), 1536u) << "page " << page << " buffer " << i;
        EXPECT_EQ(m.next_len(), 2048u);
    }
}

// ewma_add(64): the first value is taken, then (e * 63 + v) / 64; 64 KiB packets clamp to
// PAGE_SIZE - 12, + 12 = 4096: 8 buffers fill a 32 KiB page exactly.
TEST(MergeableBufs, EwmaOfLargePacketsGrowsBuffersToAPage) {
    MergeableBufs m;
    m.add_packet(1000);
    EXPECT_EQ(m.ewma(), 1000u);
    m.add_packet(2000);
    EXPECT_EQ(m.ewma(), (1000u * 63 + 2000) / 64); // 1015
    EXPECT_EQ(m.next_len(), 1536u);                // still below GOOD_PACKET_LEN
    MergeableBufs big;
    big.add_packet(65000);
    for (int i = 0; i < 16; ++i) EXPECT_EQ(big.next_len(), 4096u);
}

TEST(VirtioTx, AGsoSkbWithHostTsoIsOneChainOneKickAndOneHostSkb) {
    Rig r;
    Stack s(*r.dev);
    const Packet p = gso_skb(65160); // 45 x 1448
    r.run(r.g, guest_sends(r, s, p));
    ASSERT_EQ(r.host_got.size(), 1u);
    EXPECT_EQ(r.host_got[0].gso_segs, 45u);
    EXPECT_EQ(r.host_got[0].payload, 65160u);
    EXPECT_EQ(r.dev->stats().tx_frames, 1u);
    EXPECT_EQ(r.dev->stats().kicks, 1u);
    EXPECT_EQ(r.dev->stats().gso_sw_segs, 0u);
    EXPECT_EQ(r.vhost->stats().tx_frames, 1u);
    EXPECT_EQ(r.vhost->stats().tx_gso_skbs, 1u);
    EXPECT_EQ(r.vhost->stats().tx_gso_segs, 45u);
    EXPECT_EQ(r.vhost->stats().tx_descriptors, 1u + 2u); // header + ceil(65160 / 32768) page frags
}

TEST(VirtioTx, WithoutHostTsoTheGuestSegmentsIntoCeilLenOverMssFrames) {
    VirtioFeatures f;
    f.host_tso4 = false;
    Rig r(f);
    Stack s(*r.dev);
    const Packet p = gso_skb(65536); // 45 x 1448 + 376: 46 segments
    r.run(r.g, guest_sends(r, s, p));
    ASSERT_EQ(r.host_got.size(), 46u);
    std::uint64_t next = 0;
    for (const Packet& q : r.host_got) {
        EXPECT_EQ(q.seq, next);
        EXPECT_EQ(q.gso_segs, 1u);
        next += q.payload;
    }
    EXPECT_EQ(next, 65536u);
    EXPECT_EQ(r.host_got.back().payload, 376u);
    EXPECT_EQ(r.dev->stats().tx_frames, 46u);
    EXPECT_EQ(r.dev->stats().gso_sw_segs, 46u);
    EXPECT_EQ(r.vhost->stats().tx_gso_skbs, 0u);
}

engine::Task<> host_sends(Rig& r, std::vector<Packet> ps) {
    for (const Packet& p : ps) co_await r.tap->xmit(r.h, p);
}

// A frame of `len` bytes as the host's stack hands it to the tap.
Packet host_skb(std::uint32_t len, std::uint64_t seq) {
    Packet p = gso_skb(len - TCP_IP_HEADERS - ETH_HEADER, seq);
    EXPECT_EQ(p.len, len);
    return p;
}

// 20000 + 12 = 20012 B: 13 x 1536 = 19968 is short, 14 x 1536 = 21504 holds it. 19960 + 12 =
// 19972 needs 14 too (the header's 12 B tip it over 13 buffers); 19950 + 12 = 19962 fits 13.
TEST(VirtioRx, AHostSkbTakesTheFewestMergeableBuffersThatHoldItAndItsHeader) {
    for (auto [len, bufs] : {std::pair{20000u, 14u}, std::pair{19960u, 14u}, std::pair{19950u, 13u}}) {
        Rig r;
        EXPECT_EQ(r.dev->rx_buffers_for(len), bufs) << len;
        r.run(r.h, host_sends(r, {host_skb(len, 0)}));
        ASSERT_EQ(r.guest_got.size(), 1u) << len;
        EXPECT_EQ(r.guest_got[0].len, len);
        EXPECT_EQ(r.vhost->stats().rx_buffers, bufs);
        EXPECT_EQ(r.vhost->stats().rx_buffers_max, bufs);
        EXPECT_EQ(r.vhost->stats().rx_gso_skbs, 1u);
        EXPECT_EQ(r.vhost->stats().injections, 1u);
    }
}

// Small buffers (no MRG_RXBUF, no GUEST_TSO4) hold one 1518-byte-class frame: a larger skb
// does not fit one, and the tap has no TSO, so the host's stack must segment first.
TEST(VirtioRx, SmallBuffersHoldOneFrameAndTheTapHasNoTso) {
    VirtioFeatures f;
    f.mrg_rxbuf = false;
    f.guest_tso4 = f.guest_tso6 = false; // either one makes virtnet_probe choose big packets
    Rig r(f);
    EXPECT_EQ(r.dev->rx_mode(), VirtioRxMode::SMALL);
    EXPECT_EQ(r.tap->tso(), TsoKind::NONE);
    EXPECT_EQ(r.dev->rx_buffers_for(1518), 1u); // 1518 + 12 = 1530, the buffer
    EXPECT_EQ(r.dev->rx_buffers_for(1519), 0u);
    VirtioFeatures big;
    big.mrg_rxbuf = false;
    Rig rb(big);
    EXPECT_EQ(rb.dev->rx_mode(), VirtioRxMode::BIG);
    EXPECT_EQ(rb.dev->rx_buffers_for(65000), 1u);
}

// 40 skbs of 1 to 45 segments: each arrives once, whole, in order, and every byte is there; the
// mergeable buffers are refilled as the guest takes them.
TEST(VirtioRx, EveryByteOfAStreamOfHostSkbsArrivesOnceInOrder) {
    Rig r;
    std::vector<Packet> ps;
    std::uint64_t seq = 0;
    for (std::uint32_t i = 0; i < 40; ++i) {
        const std::uint32_t segs = 1 + (i * 7) % 45;
        Packet p = gso_skb(segs * MSS - (i % 3) * 100, seq);
        seq += p.payload;
        ps.push_back(p);
    }
    r.run(r.h, host_sends(r, ps));
    ASSERT_EQ(r.guest_got.size(), ps.size());
    std::uint64_t next = 0;
    for (std::size_t i = 0; i < ps.size(); ++i) {
        EXPECT_EQ(r.guest_got[i].seq, next);
        EXPECT_EQ(r.guest_got[i].payload, ps[i].payload);
        next += r.guest_got[i].payload;
    }
    EXPECT_EQ(next, seq);
    EXPECT_EQ(r.dev->stats().rx_frames, 40u);
    EXPECT_GT(r.vhost->stats().rx_buffers, 40u);
}

// vhost_affinity: the worker starts on host CPU h (id 1) and, unpinned, may also run on h2 (id 2).
// A SCHED_FIFO hog on h sleeps until 5,000 ns and then runs 100,000 cycles (to 105,000 ns at
// 1 GHz); the guest sends one GSO skb at 10,000 ns, whose kick wakes the sleeping worker.
struct HoggedVhost {
    explicit HoggedVhost(bool unpinned) : r({}, unpinned) {
        r.tap->set_rx_handler(&HoggedVhost::arrived, this);
        r.h.create_task("hog", kernel::SchedPolicy::FIFO, 50, false, hog(r.h, *this));
    }
    static engine::Task<> hog(kernel::Cpu& cpu, HoggedVhost& t) {
        co_await kernel::schedule_hrtimeout_range(cpu, 5'000 * engine::PS_PER_NS, 0);
        co_await cpu.exec(100'000, kernel::Cat::OTHER);
        t.hog_done = cpu.now();
        co_await cpu.block();
    }
    static engine::Task<> arrived(kernel::Cpu& cpu, void* ctx, const Packet&) {
        static_cast<HoggedVhost*>(ctx)->arrivals.push_back(cpu.now());
        co_return;
    }
    static engine::Task<> send_later(Rig& r, Stack& s, Packet p) {
        co_await kernel::schedule_hrtimeout_range(r.g, 10'000 * engine::PS_PER_NS, 0);
        co_await s.dev_queue_xmit(r.g, p);
    }
    void run() {
        Stack s(*r.dev);
        r.run(r.g, send_later(r, s, gso_skb(65160)));
    }
    Cycles virt_cycles(const kernel::Cpu& c) const {
        return c.stats().cycles[static_cast<std::size_t>(kernel::CtxKind::TASK)][static_cast<std::size_t>(kernel::Cat::VIRT)];
    }
    Rig r;
    std::vector<engine::Tick> arrivals;
    engine::Tick hog_done = 0;
};

// handle_tx_one's per-skb work for the 45-segment skb: vhost_tx 2,600 + one descriptor beyond two
// (header + two page frags) 110 + the GSO header 120.
constexpr Cycles GSO_SKB_VHOST_TX = 2'600 + 110 + 120;

TEST(VhostAffinity, AWorkerWokenWhileAFifoTaskHoldsItsCpuRunsOnAnIdleCpuOfItsAffinity) {
    // select_task_rq_fair: prev (h) runs the hog, the waker (the guest's vCPU) is outside the mask,
    // so select_idle_sibling's scan finds h2 idle; the skb reaches the host stack long before the
    // hog ends, and all of the worker's VIRT cycles are h2's.
    HoggedVhost t(true);
    t.run();
    ASSERT_EQ(t.arrivals.size(), 1u);
    EXPECT_LT(t.arrivals[0], t.hog_done);
    EXPECT_GT(t.hog_done, 105'000 * engine::PS_PER_NS); // its 100,000 cycles after its wake-up at 5,000 ns
    // and the hog's CPU does none of the worker's work: it ends when it does beside a pinned worker that waits
    HoggedVhost pinned(false);
    pinned.run();
    EXPECT_EQ(t.hog_done, pinned.hog_done);
    EXPECT_EQ(&t.r.vhost->cpu(), &t.r.h2);
    EXPECT_EQ(t.virt_cycles(t.r.h2), GSO_SKB_VHOST_TX);
    EXPECT_EQ(t.virt_cycles(t.r.h), 0u);
}

TEST(VhostAffinity, APinnedWorkerWaitsForTheFifoTaskOnItsCpu) {
    // Without vhost_affinity the worker stays on h: SCHED_FIFO is not preempted by a NORMAL task,
    // so the skb reaches the host stack only after the hog's 100,000 cycles.
    HoggedVhost t(false);
    t.run();
    ASSERT_EQ(t.arrivals.size(), 1u);
    EXPECT_GT(t.arrivals[0], t.hog_done);
    EXPECT_EQ(&t.r.vhost->cpu(), &t.r.h);
    EXPECT_EQ(t.virt_cycles(t.r.h), GSO_SKB_VHOST_TX);
    EXPECT_EQ(t.virt_cycles(t.r.h2), 0u);
}

} // namespace
} // namespace kdsim::net
