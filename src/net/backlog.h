// The per-CPU backlog of received frames (net/core/dev.c: softnet_data.input_pkt_queue,
// .process_queue and the .backlog napi_struct), as Linux 6.1 runs it with RPS off. Any device
// whose frames go through netif_rx puts them here: a veth end (veth_xmit -> __netif_rx, on the
// transmitting CPU) or a NIC whose driver receives in its interrupt handler (the 3.0 FEC's
// fec_enet_rx -> netif_rx, on the interrupted CPU).
//
// enqueue_to_backlog (the caller holds rps_lock_irqsave: interrupts off): a frame goes on
// input_pkt_queue unless it already holds more than netdev_max_backlog (1000) frames, then it is
// dropped (sd->dropped); when the queue was empty the backlog napi_struct is scheduled
// (____napi_schedule, NET_RX raised).
//
// process_backlog (the backlog's poll, weight dev_rx_weight 64): takes frames off process_queue,
// each through __netif_receive_skb to skb->dev's stack; when process_queue is empty it takes the
// input_pkt_queue's frames over with local_irq_disable held (skb_queue_splice_tail_init), or,
// with none, clears the napi state and stops.
#pragma once

#include "engine/task.h"
#include "kernel/cpu.h"
#include "net/napi.h"
#include "net/netdevice.h"

#include <cstdint>
#include <vector>

namespace kdsim::net {

// One CPU's backlog.
class Backlog {
public:
    static constexpr std::size_t NETDEV_MAX_BACKLOG = 1000; // net.core.netdev_max_backlog
    static constexpr int DEV_RX_WEIGHT = 64;                 // net.core.dev_weight

    // `process_backlog`: the profile's [net] figure, charged per frame before __netif_receive_skb.
    Backlog(Softnet& softnet, Cycles process_backlog);
    // enqueue_to_backlog on this CPU (called with interrupts off by the caller's rps_lock_irqsave):
    // false when the input queue is full and the frame is dropped. `dev`: skb->dev, whose
    // backlog_receive process_backlog calls.
    bool enqueue(const Packet& p, NetDevice& dev);
    std::size_t input_queued() const { return tail_ - split_; }
    std::size_t queued() const { return tail_ - head_; } // input_pkt_queue + process_queue
    const std::uint64_t& dropped() const { return dropped_; }

private:
    static engine::Task<int> process_backlog(kernel::Cpu& cpu, void* ctx, int quota);
    struct Entry {
        Packet p;
        NetDevice* dev = nullptr;
    };
    // One ring: [head_, split_) is process_queue, [split_, tail_) is input_pkt_queue; each holds
    // at most NETDEV_MAX_BACKLOG + 1 frames (the kernel's test is qlen <= max before the add).
    static constexpr std::size_t RING = 2048;
    Entry& at(std::uint64_t i) { return ring_[i % RING]; }
    Softnet& softnet_;
    Cycles process_backlog_;
    NapiStruct napi_;
    std::vector<Entry> ring_;
    std::uint64_t head_ = 0, split_ = 0, tail_ = 0;
    std::uint64_t dropped_ = 0;
};

} // namespace kdsim::net
