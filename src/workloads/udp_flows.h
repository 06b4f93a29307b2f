// 10^6-scale UDP flows: a server with one connected UDP socket per client (a DNS, QUIC or VPN
// concentrator) receiving small datagrams at a low rate per client. The peer machine stands for
// all the clients: each flow sends one datagram every `interval` from its own random phase (a
// keepalive or a query); this machine receives them through its NIC, NAPI and net/ipv4/udp.c
// into the flow's own socket (net/udp_table.h: __udp4_lib_lookup, __udp_enqueue_schedule_skb,
// ep_poll_callback) and one epoll reader task drains the ready sockets.
//
// The sender side is one user task on the peer that walks the flows in time order, like a load
// generator's event loop (one timer queue for all its client sockets): since every flow has the
// same interval, the order of one round (the flows sorted by phase) repeats every round, so the
// walk needs one sorted vector of (phase, flow) and one epoll_wait to the next due datagram —
// not one pending engine event, coroutine or object per flow. That wait's timeout has the kernel's
// slack (ep_poll -> select_estimate_accuracy: at least the task's timer_slack, 50 us by default),
// so a datagram may leave up to the slack late unless another timer interrupt comes first. Each datagram is one sendto() on
// the flow's socket (syscall, copy, [udp] udp_sendmsg, the route's output), sent when due or, if
// the task is behind, as soon as it can (the lag is reported). Per flow the model keeps 16 bytes
// on each side (the phase slot, the socket record): memory grows with flows, time with datagrams.
#pragma once

#include "net/udp_table.h"
#include "workloads/config.h"
#include "workloads/iperf3.h"
#include "workloads/workload.h"

#include <memory>
#include <vector>

namespace kdsim::workloads {

class UdpFlows final : public Workload {
public:
    // `env` and `rx` are the receiver's; the clients send from `peer_cpu` through `tx`'s stack.
    // The flows are first_flow .. first_flow + cfg.flows - 1; datagrams due at or after
    // `stop_at` are not sent. Preconditions (checked by the system): both ends have [udp]
    // figures, cfg.flows >= 1, cfg.interval > 0, the datagram fits the route's MTU.
    UdpFlows(Env env, UdpFlowsWorkload cfg, Iperf3End rx, kernel::Cpu& peer_cpu, Iperf3End tx,
             std::uint32_t first_flow, engine::Tick stop_at);
    void start() override;
    bool finite() const override { return false; }
    results::WorkloadResult result() const override;

private:
    struct Slot {
        engine::Tick phase; // offset of the flow's datagrams within each round
        std::uint32_t flow; // index into the socket table
    };
    static engine::Task<> sender(UdpFlows& w);
    static engine::Task<> reader(UdpFlows& w);
    engine::Task<> send_one(const Slot& s);

    UdpFlowsWorkload cfg_;
    Iperf3End rx_, tx_;
    kernel::Cpu& peer_cpu_;
    std::uint32_t first_flow_;
    engine::Tick stop_at_;
    net::UdpSocketTable table_;
    std::vector<Slot> slots_; // one round, in send order
    kernel::TaskStruct* rx_task_ = nullptr;
    // the sender's position: `rounds_` whole rounds done, then `next_` slots of the current one
    std::uint64_t rounds_ = 0, next_ = 0, sent_ = 0;
    engine::Tick max_lag_ = 0;
};

} // namespace kdsim::workloads
