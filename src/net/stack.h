// The part of a machine's network stack a link-layer ping-pong crosses: dev_queue_xmit, the
// ARP responder (net/ipv4/arp.c arp_rcv -> arp_process -> arp_send_dst) and one bound AF_PACKET
// socket (net/packet/af_packet.c packet_rcv / packet_recvmsg), as arping uses. Receive runs in
// NET_RX context from the NIC's NAPI poll; queueing to the socket takes the queue's
// spin_lock_irqsave and wakes the reader (sock_def_readable -> __wake_up, whose wait-queue lock
// and try_to_wake_up's pi_lock are irqsave locks too).
#pragma once

#include "engine/task.h"
#include "kernel/cpu.h"
#include "net/nic.h"

#include <cstdint>
#include <vector>

namespace kdsim::net {

// A TCP endpoint bound on a stack: receives its segments in NET_RX context.
class TcpEndpoint {
public:
    virtual ~TcpEndpoint() = default;
    virtual engine::Task<> tcp_rcv(kernel::Cpu& cpu, const Packet& p) = 0;
};

class Stack {
public:
    explicit Stack(Nic& nic);

    // __dev_queue_xmit on the calling CPU: rcu_read_lock_bh, qdisc, the driver.
    engine::Task<> dev_queue_xmit(kernel::Cpu& cpu, Packet p);

    // The bound AF_PACKET socket: receives ARP replies.
    // packet_recvmsg: blocks the calling task until a frame is queued; returns it.
    engine::Task<Packet> packet_recvmsg(kernel::Cpu& cpu);

    Nic& nic() { return nic_; }
    void bind_tcp(TcpEndpoint& ep) { tcp_ = &ep; }
    std::uint64_t arp_replies_sent() const { return arp_replies_; }

private:
    static engine::Task<> netif_receive(kernel::Cpu& cpu, void* ctx, const Packet& p);
    engine::Task<> arp_rcv(const Packet& p);
    engine::Task<> packet_rcv(const Packet& p);

    Nic& nic_;
    std::vector<Packet> sk_queue_;
    kernel::TaskStruct* waiter_ = nullptr;
    TcpEndpoint* tcp_ = nullptr;
    std::uint64_t arp_replies_ = 0;
};

} // namespace kdsim::net
