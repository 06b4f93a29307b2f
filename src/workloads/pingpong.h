// An arping-like ping-pong (E4): a user task on one machine sends an ARP request through an
// AF_PACKET socket and blocks until the reply comes back, N round trips back to back; the peer
// machine's kernel answers from NET_RX (arp_process). The round-trip time is measured in user
// space, as arping does (send time to the time recvfrom returns).
#pragma once

#include "net/stack.h"
#include "workloads/config.h"
#include "workloads/workload.h"

namespace kdsim::workloads {

class ArpPingPong final : public Workload {
public:
    ArpPingPong(Env env, ArpPingPongWorkload cfg, net::Stack& stack);
    void start() override;
    bool finite() const override { return true; }
    results::WorkloadResult result() const override;

private:
    static engine::Task<> arping(ArpPingPong& w);
    ArpPingPongWorkload cfg_;
    net::Stack& stack_;
    std::vector<engine::Tick> rtts_;
    engine::Tick started_ = 0, finished_ = 0;
    bool done_ = false;
};

} // namespace kdsim::workloads
