// A veth pair between two network namespaces of one machine (drivers/net/veth.c) and the per-CPU
// backlog that carries its frames (net/core/dev.c), as Linux 6.1 runs them with GRO and XDP off
// on the veth (no veth NAPI: rq->napi is NULL) and RPS off:
//
// veth_xmit (ndo_start_xmit, in the sender's context under dev_queue_xmit's rcu_read_lock_bh)
// -> veth_forward_skb -> __dev_forward_skb (skb_scrub_packet for the netns crossing,
// eth_type_trans with the peer as skb->dev) -> __netif_rx -> netif_rx_internal ->
// enqueue_to_backlog(skb, smp_processor_id()): the frame goes on the input_pkt_queue of the
// TRANSMITTING CPU's softnet_data under rps_lock_irqsave; when that queue was empty the CPU's
// backlog napi_struct is scheduled (____napi_schedule, NET_RX raised). A queue already holding
// netdev_max_backlog (1000) frames drops (sd->dropped; veth counts priv->dropped, the sender's
// tx drop). So the peer's receive path runs in NET_RX on the sending CPU, at the
// local_bh_enable that ends the sender's dev_queue_xmit (or in ksoftirqd).
//
// process_backlog (net/backlog.h) then hands each frame to the stack of skb->dev's namespace.
#pragma once

#include "engine/task.h"
#include "kernel/cpu.h"
#include "net/backlog.h"
#include "net/napi.h"
#include "net/netdevice.h"

#include <cstdint>
#include <string>
#include <vector>

namespace kdsim::net {

// One end of a veth pair: its peer is the other end, in another namespace of the same machine.
// The machine's backlogs, one per CPU, are shared by every veth of the machine.
class Veth final : public NetDevice {
public:
    // `veth_xmit` is the profile's [net] figure of that name.
    Veth(const NetCosts& costs, Cycles veth_xmit, std::vector<Backlog*> backlogs, std::string name);
    // Joins two ends (each becomes the other's peer).
    static void pair(Veth& a, Veth& b);
    engine::Task<> xmit(kernel::Cpu& cpu, const Packet& p) override;
    const NetCosts& costs() const override { return costs_; }
    // process_backlog's delivery of one frame to this end's stack (__netif_receive_skb).
    engine::Task<> receive(kernel::Cpu& cpu, const Packet& p);
    engine::Task<> backlog_receive(kernel::Cpu& cpu, const Packet& p) override { return receive(cpu, p); }

private:
    NetCosts costs_;
    Cycles veth_xmit_;
    std::vector<Backlog*> backlogs_; // by CPU id
    Veth* peer_ = nullptr;
};

} // namespace kdsim::net
