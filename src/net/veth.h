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
// process_backlog (the backlog's poll, weight dev_rx_weight 64): takes frames off process_queue,
// each through __netif_receive_skb to the stack of skb->dev's namespace; when process_queue is
// empty it takes the input_pkt_queue's frames over with local_irq_disable held
// (skb_queue_splice_tail_init), or, with none, clears the napi state and stops.
#pragma once

#include "engine/task.h"
#include "kernel/cpu.h"
#include "net/napi.h"
#include "net/netdevice.h"

#include <cstdint>
#include <string>
#include <vector>

namespace kdsim::net {

class Veth;

// One CPU's backlog (softnet_data.input_pkt_queue, .process_queue and .backlog).
class Backlog {
public:
    static constexpr std::size_t NETDEV_MAX_BACKLOG = 1000; // net.core.netdev_max_backlog
    static constexpr int DEV_RX_WEIGHT = 64;                 // net.core.dev_weight

    explicit Backlog(Softnet& softnet);
    // enqueue_to_backlog on this CPU (called with interrupts off by the caller's rps_lock_irqsave):
    // false when the input queue is full and the frame is dropped.
    bool enqueue(const Packet& p, Veth& dev);
    std::size_t input_queued() const { return tail_ - split_; }
    const std::uint64_t& dropped() const { return dropped_; }

private:
    static engine::Task<int> process_backlog(kernel::Cpu& cpu, void* ctx, int quota);
    struct Entry {
        Packet p;
        Veth* dev = nullptr;
    };
    // One ring: [head_, split_) is process_queue, [split_, tail_) is input_pkt_queue; each holds
    // at most NETDEV_MAX_BACKLOG + 1 frames (the kernel's test is qlen <= max before the add).
    static constexpr std::size_t RING = 2048;
    Entry& at(std::uint64_t i) { return ring_[i % RING]; }
    Softnet& softnet_;
    NapiStruct napi_;
    std::vector<Entry> ring_;
    std::uint64_t head_ = 0, split_ = 0, tail_ = 0;
    std::uint64_t dropped_ = 0;
};

// One end of a veth pair: its peer is the other end, in another namespace of the same machine.
// The machine's backlogs, one per CPU, are shared by every veth of the machine.
class Veth final : public NetDevice {
public:
    // `veth_xmit` and `process_backlog` are the profile's [net] figures of that name.
    Veth(const NetCosts& costs, Cycles veth_xmit, Cycles process_backlog, std::vector<Backlog*> backlogs,
         std::string name);
    // Joins two ends (each becomes the other's peer).
    static void pair(Veth& a, Veth& b);
    engine::Task<> xmit(kernel::Cpu& cpu, Packet p) override;
    const NetCosts& costs() const override { return costs_; }
    // process_backlog's delivery of one frame to this end's stack (__netif_receive_skb).
    engine::Task<> receive(kernel::Cpu& cpu, const Packet& p);
    Cycles process_backlog_cost() const { return process_backlog_; }

private:
    NetCosts costs_;
    Cycles veth_xmit_, process_backlog_;
    std::vector<Backlog*> backlogs_; // by CPU id
    Veth* peer_ = nullptr;
};

} // namespace kdsim::net
