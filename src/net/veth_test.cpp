// A veth pair and the per-CPU backlog (net/veth.h), worked by hand at 1 GHz (a cycle is a
// nanosecond) with the kernel's own costs at zero: a frame sent on a CPU is received by the
// peer's stack in NET_RX on that same CPU, at the local_bh_enable that ends the send; the input
// queue takes netdev_max_backlog + 1 frames and drops the rest; every frame is either received,
// in order, or counted as dropped.
#include "net/veth.h"

#include "kernel/irqflags.h"
#include "kernel/softirq.h"
#include "net/stack.h"

#include <gtest/gtest.h>

#include <memory>
#include <vector>

namespace kdsim::net {
namespace {

struct Rx {
    int cpu;
    kernel::CtxKind ctx;
    engine::Tick at;
    std::uint64_t seq;
};

// The receiving socket: records where and when each datagram arrived.
struct Sink final : TcpEndpoint {
    std::vector<Rx> got;
    engine::Task<> tcp_rcv(kernel::Cpu& cpu, const Packet& p) override {
        got.push_back({cpu.id(), cpu.ctx_kind(), cpu.now(), p.seq});
        co_return;
    }
};

constexpr Cycles DEV_QUEUE_XMIT = 30, VETH_XMIT = 100, PROCESS_BACKLOG = 50, NETIF_RECEIVE_SKB = 20;

struct Harness {
    engine::Simulation sim{1};
    std::vector<std::unique_ptr<kernel::Cpu>> cpus;
    std::vector<std::unique_ptr<Softnet>> sd;
    std::vector<std::unique_ptr<Backlog>> backlog;
    std::unique_ptr<Veth> a, b;
    std::unique_ptr<Stack> sa, sb;
    Sink sink;

    Harness() {
        NetCosts c{};
        c.dev_queue_xmit = DEV_QUEUE_XMIT;
        c.netif_receive_skb = NETIF_RECEIVE_SKB;
        std::vector<Backlog*> bl;
        for (int i = 0; i < 2; ++i) {
            cpus.push_back(std::make_unique<kernel::Cpu>(sim, i, engine::Clock(1'000'000'000), kernel::KernelCosts{},
                                                         kernel::KernelConfig{}));
            sd.push_back(std::make_unique<Softnet>(*cpus.back()));
            backlog.push_back(std::make_unique<Backlog>(*sd.back(), PROCESS_BACKLOG));
            bl.push_back(backlog.back().get());
        }
        a = std::make_unique<Veth>(c, VETH_XMIT, bl, "host.veth0");
        b = std::make_unique<Veth>(c, VETH_XMIT, bl, "ns.veth1");
        Veth::pair(*a, *b);
        sa = std::make_unique<Stack>(*a);
        sb = std::make_unique<Stack>(*b);
        sb->bind_tcp(0, sink);
    }
    static Packet datagram(std::uint64_t seq) {
        Packet p = transport_packet(FrameKind::UDP_DATA, 1000, 28, seq, 0);
        return p;
    }
    static Cycles softirq_cycles(const kernel::Cpu& cpu) {
        Cycles sum = 0;
        for (Cycles c : cpu.stats().cycles[static_cast<std::size_t>(kernel::CtxKind::SOFTIRQ)]) sum += c;
        return sum;
    }
    void run(int cpu, engine::Task<> sender) {
        cpus[static_cast<std::size_t>(cpu)]->create_task("sender", kernel::SchedPolicy::NORMAL, 0, true, std::move(sender));
        for (auto& c : cpus) c->boot();
        sim.run(engine::PS_PER_S);
        for (auto& c : cpus) c->finish();
    }
};

engine::Task<> send_one(Harness& h, kernel::Cpu& cpu) { co_await h.sa->dev_queue_xmit(cpu, Harness::datagram(7)); }

// n datagrams with bottom halves off throughout, so that none is received before the last is queued.
engine::Task<> send_burst(Harness& h, kernel::Cpu& cpu, int n) {
    co_await kernel::local_bh_disable(cpu);
    for (int i = 0; i < n; ++i) co_await h.sa->dev_queue_xmit(cpu, Harness::datagram(static_cast<std::uint64_t>(i)));
    co_await kernel::local_bh_enable(cpu);
}

TEST(Veth, AFrameIsReceivedInNetRxOnTheSendingCpuAtTheEndOfItsSend) {
    Harness h;
    h.run(1, send_one(h, *h.cpus[1]));
    ASSERT_EQ(h.sink.got.size(), 1u);
    EXPECT_EQ(h.sink.got[0].cpu, 1);
    EXPECT_EQ(h.sink.got[0].ctx, kernel::CtxKind::SOFTIRQ);
    // dev_queue_xmit 30 + veth_xmit 100, then at local_bh_enable: process_backlog 50 + demux 20
    EXPECT_EQ(h.sink.got[0].at, (DEV_QUEUE_XMIT + VETH_XMIT + PROCESS_BACKLOG + NETIF_RECEIVE_SKB) * engine::PS_PER_NS);
    EXPECT_EQ(h.a->stats().tx_frames, 1u);
    EXPECT_EQ(h.b->stats().rx_frames, 1u);
    EXPECT_EQ(h.b->stats().rx_bytes, 1000u + 28 + 14);
    EXPECT_EQ(h.sd[0]->stats().polls, 0u); // CPU 0's backlog never ran
    EXPECT_EQ(h.sd[1]->stats().polls, 1u);
}

TEST(Veth, TheInputQueueTakesNetdevMaxBacklogPlusOneFramesAndDropsTheRestOfABurst) {
    Harness h;
    h.run(0, send_burst(h, *h.cpus[0], 1100));
    // enqueue_to_backlog admits a frame while the queue holds at most 1000: 1001 in, 99 dropped
    EXPECT_EQ(h.sink.got.size(), 1001u);
    EXPECT_EQ(h.a->stats().tx_frames, 1001u);
    EXPECT_EQ(h.a->stats().tx_dropped, 99u);
    EXPECT_EQ(h.backlog[0]->dropped(), 99u);
    EXPECT_EQ(h.b->stats().rx_frames, 1001u);
    // every sent frame is received or dropped, received in the order sent
    EXPECT_EQ(h.sink.got.size() + h.a->stats().tx_dropped, 1100u);
    for (std::size_t i = 0; i < h.sink.got.size(); ++i) EXPECT_EQ(h.sink.got[i].seq, i);
    // process_backlog with weight 64: 15 full polls (960) and one of 41 that completes
    EXPECT_EQ(h.sd[0]->stats().polls, 16u);
    EXPECT_EQ(h.sd[0]->stats().processed, 1001u);
    EXPECT_EQ(h.sd[0]->stats().repolls, 15u);
    EXPECT_EQ(h.backlog[0]->input_queued(), 0u);
}

TEST(Veth, FramesSentOnTwoCpusAreReceivedEachOnItsOwnCpu) {
    Harness h;
    h.cpus[0]->create_task("sender0", kernel::SchedPolicy::NORMAL, 0, true, send_burst(h, *h.cpus[0], 10));
    h.run(1, send_burst(h, *h.cpus[1], 20));
    int on0 = 0, on1 = 0;
    for (const Rx& r : h.sink.got) (r.cpu == 0 ? on0 : on1)++;
    EXPECT_EQ(on0, 10);
    EXPECT_EQ(on1, 20);
    EXPECT_EQ(h.sd[0]->stats().processed, 10u);
    EXPECT_EQ(h.sd[1]->stats().processed, 20u);
}

// The receive path's pass-through functions return the Task of the path they pick; a frame no
// path takes gets one that does nothing, at no cost. With bottom halves off the three frames are
// queued first (3 x (30 + 100) = 390 ns); each is then received for process_backlog 50 +
// __netif_receive_skb 20: a datagram of an unbound flow (ip_local_deliver finds no socket), an
// ESP frame on a stack without a tunnel (no handler), then the bound flow's at 390 + 3 x 70 = 600.
engine::Task<> send_unclaimed_then_bound(Harness& h, kernel::Cpu& cpu) {
    co_await kernel::local_bh_disable(cpu);
    co_await h.sa->dev_queue_xmit(cpu, transport_packet(FrameKind::UDP_DATA, 1000, 28, 1, 5)); // flow 5: no socket
    Packet esp = Harness::datagram(9);
    esp.kind = FrameKind::ESP;
    co_await h.sa->dev_queue_xmit(cpu, esp);
    co_await h.sa->dev_queue_xmit(cpu, Harness::datagram(2));
    co_await kernel::local_bh_enable(cpu);
}

TEST(Veth, FramesNoProtocolTakesCostOnlyTheirDemuxAndTheNextFrameIsReceivedAfterThem) {
    Harness h;
    h.run(0, send_unclaimed_then_bound(h, *h.cpus[0]));
    ASSERT_EQ(h.sink.got.size(), 1u);
    EXPECT_EQ(h.sink.got[0].seq, 2u);
    EXPECT_EQ(h.sink.got[0].at, 600 * engine::PS_PER_NS);
    EXPECT_EQ(h.b->stats().rx_frames, 3u);
    EXPECT_EQ(h.sd[0]->stats().processed, 3u);
}

// A device with no receive hook (no stack bound to it) hands the frame to no one: the receive
// ends after process_backlog 50 + __netif_receive_skb 20, and the softirq is done at 130 + 70.
TEST(Veth, ADeviceWithoutAReceiveHookTakesTheFrameAndDeliversItNowhere) {
    Harness h;
    h.b->set_rx_handler(nullptr, nullptr);
    h.run(0, send_one(h, *h.cpus[0]));
    EXPECT_TRUE(h.sink.got.empty());
    EXPECT_EQ(h.b->stats().rx_frames, 1u);
    EXPECT_EQ(h.sd[0]->stats().processed, 1u);
    EXPECT_EQ(Harness::softirq_cycles(*h.cpus[0]), PROCESS_BACKLOG + NETIF_RECEIVE_SKB);
}

} // namespace
} // namespace kdsim::net
