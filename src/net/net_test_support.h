// Shared by the net layer's tests: a device that records what was transmitted, by whom and in
// which context; two machines joined by NICs on a link, and the iperf3-like task bodies.
#pragma once

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
    engine::Task<> xmit(kernel::Cpu& cpu, Packet p) override {
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

// Two machines, one CPU each, joined by NICs on a 1 Gbit/s link with 10 us latency.
struct Pair {
    engine::Simulation sim{1};
    kernel::Cpu a{sim, 0, engine::Clock(1'000'000'000), kernel::KernelCosts{}, kernel::KernelConfig{}};
    kernel::Cpu b{sim, 1, engine::Clock(1'000'000'000), kernel::KernelCosts{}, kernel::KernelConfig{}};
    stats::Findings findings;
    Softnet sa{a}, sb{b};
    Nic na, nb;
    Link link;
    Stack stack_a{na}, stack_b{nb};
    std::function<bool(const Packet&)> lose; // on the wire
    Pair(std::size_t ring_b = 256, std::size_t link_queue = 1000)
        : na(sa, 40, NetCosts{}, "a.eth0"), nb(sb, 40, NetCosts{}, "b.eth0", ring_b),
          link(sim, 1'000'000'000, 10 * engine::PS_PER_US, link_queue) {
        link.attach(na, nb);
        a.set_findings(&findings);
        b.set_findings(&findings);
        link.set_loss([](const Packet& p, void* ctx) {
            auto& self = *static_cast<Pair*>(ctx);
            return self.lose && self.lose(p);
        }, this);
    }
    void run(engine::Tick until) {
        a.boot();
        b.boot();
        sim.run(until);
        a.finish();
        b.finish();
    }
};

inline engine::Task<> writer(TcpSource& src, kernel::Cpu& cpu, kernel::TaskStruct** self, engine::Tick stop) {
    co_await src.send_loop(cpu, **self, stop);
}
inline engine::Task<> reader(TcpSink& sink, kernel::Cpu& cpu, kernel::TaskStruct** self) { co_await sink.read_loop(cpu, **self); }

} // namespace kdsim::net::testing
