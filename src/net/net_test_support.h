// Shared by the net layer's tests: a device that records what was transmitted, by whom and in
// which context; two machines joined by NICs on a link (NicBench, the NIC tests' own costs; BurstBench,
// a burst of frames into the board's ring; Pair, with a stack on each), a small memory hierarchy, and the iperf3-like task bodies.
#pragma once

#include "mem/config.h"
#include "net/link.h"
#include "net/napi.h"
#include "net/netdevice.h"
#include "net/nic.h"
#include "net/stack.h"
#include "net/tcp.h"

#include <functional>
#include <string>
#include <vector>

namespace kdsim::net::testing {

struct Sent {
    Packet p;
    std::string task;
    std::uint32_t preempt_count;
    engine::Tick at;
};

// A device that records every frame handed to ndo_start_xmit.
class Wire final : public NetDevice {
public:
    Wire() : NetDevice("wire") {}
    engine::Task<> xmit(kernel::Cpu& cpu, const Packet& p) override {
        sent.push_back({p, cpu.current()->comm, cpu.preempt_count(), cpu.now()});
        co_return;
    }
    const NetCosts& costs() const override { return costs_; }
    // skb_segment's work per segment (NetCosts::gso_segment) when the stack segments for it.
    void set_gso_segment(Cycles c) { costs_.gso_segment = c; }
    std::vector<Sent> sent;

private:
    NetCosts costs_{};
};

// Two machines of one 1 GHz CPU each, whose kernel costs nothing (a: CPU 0, b: CPU 1), each with
// its softnet and a NIC (a.eth0, b.eth0), the NICs joined by a 1 Gbit/s link. A bench gives each
// NIC's costs, interrupt vector and ring and the link's latency and queue, and adds what else it
// needs (DMA, tasks) in its own constructor.
struct NicBench {
    struct End {
        NetCosts costs{};
        unsigned vector = 40;
        std::size_t ring = 256;
    };
    engine::Simulation sim{1};
    kernel::Cpu a{sim, 0, engine::Clock(1'000'000'000), kernel::KernelCosts{}, kernel::KernelConfig{}};
    kernel::Cpu b{sim, 1, engine::Clock(1'000'000'000), kernel::KernelCosts{}, kernel::KernelConfig{}};
    Softnet sa{a}, sb{b};
    Nic na, nb;
    Link link;
    NicBench(const End& ea, const End& eb, engine::Tick latency, std::size_t link_queue = 1000)
        : na(sa, ea.vector, ea.costs, "a.eth0", ea.ring), nb(sb, eb.vector, eb.costs, "b.eth0", eb.ring),
          link(sim, 1'000'000'000, latency, link_queue) {
        link.attach(na, nb);
    }
    NicBench(const NicBench&) = delete; // the NICs, the link and the CPUs point at each other
    NicBench& operator=(const NicBench&) = delete;
    // Boots both CPUs, runs the simulation until `until`, and ends both.
    void run(engine::Tick until) {
        a.boot();
        b.boot();
        sim.run(until);
        a.finish();
        b.finish();
    }
    // The cycles `cpu` spent in contexts of kind `k`.
    static Cycles cycles(const kernel::Cpu& cpu, kernel::CtxKind k) {
        Cycles sum = 0;
        for (Cycles c : cpu.stats().cycles[static_cast<std::size_t>(k)]) sum += c;
        return sum;
    }
};

// A NicBench whose CPU 0 sends a burst of small UDP frames (18-byte payload) back to back. The
// board's interrupt reaches CPU 1 200 us after the device raises it, so a burst shorter than that
// on the wire is all on b's ring at its one poll. A bench creates its own tasks (the ring's open)
// before calling run_burst, which creates the sender's.
struct BurstBench : NicBench {
    BurstBench(const End& board, engine::Tick latency) : NicBench({}, board, latency) {
        nb.set_irq_delivery(200 * engine::PS_PER_US);
    }
    // Sends `frames` frames and runs the simulation for 20 ms.
    void run_burst(std::size_t frames) {
        frames_ = frames;
        a.create_task("sender", kernel::SchedPolicy::NORMAL, 0, false, burst());
        NicBench::run(20 * engine::PS_PER_MS);
    }
    // The cycles the board's CPU spent in softirq context.
    Cycles softirq() const { return cycles(b, kernel::CtxKind::SOFTIRQ); }

private:
    std::size_t frames_ = 0;
    engine::Task<> burst() {
        for (std::size_t i = 0; i < frames_; ++i)
            co_await na.xmit(a, transport_packet(FrameKind::UDP_DATA, 18, 28, i, 0));
    }
};

// A small hierarchy of 32-byte lines: per CPU a 32 KiB 4-way L1D (4 cycles), a shared 1 MiB 16-way
// L2 (30 cycles), over a DRAM of 150 ns and 4.25 GB/s.
inline mem::MemoryConfig small_memory() {
    mem::MemoryConfig c;
    c.line = 32;
    c.levels = {{"l1d", 32 * 1024, 4, 4, false, mem::Replacement::LRU}, {"l2", 1024 * 1024, 16, 30, true, mem::Replacement::LRU}};
    c.dram_latency_ns = 150;
    c.dram_bandwidth = 4.25e9;
    c.copy_warm = 0.35;
    return c;
}

// Two machines, one CPU each, joined by NICs on a 1 Gbit/s link with 10 us latency, with a stack
// on each; `lose` drops frames on the wire.
struct Pair : NicBench {
    stats::Findings findings;
    Stack stack_a{na}, stack_b{nb};
    std::function<bool(const Packet&)> lose; // on the wire
    Pair(std::size_t ring_b = 256, std::size_t link_queue = 1000)
        : NicBench({}, {.ring = ring_b}, 10 * engine::PS_PER_US, link_queue) {
        a.set_findings(&findings);
        b.set_findings(&findings);
        link.set_loss([](const Packet& p, void* ctx) {
            auto& self = *static_cast<Pair*>(ctx);
            return self.lose && self.lose(p);
        }, this);
    }
};

inline engine::Task<> writer(TcpSource& src, kernel::Cpu& cpu, kernel::TaskStruct** self, engine::Tick stop) {
    co_await src.send_loop(cpu, **self, stop);
}
inline engine::Task<> reader(TcpSink& sink, kernel::Cpu& cpu, kernel::TaskStruct** self) { co_await sink.read_loop(cpu, **self); }

} // namespace kdsim::net::testing
