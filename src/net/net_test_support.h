// Shared by the net layer's tests: a device that records what was transmitted, by whom and in
// which context.
#pragma once

#include "net/netdevice.h"

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
    std::vector<Sent> sent;

private:
    NetCosts costs_{};
};

} // namespace kdsim::net::testing
