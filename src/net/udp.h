// A UDP stream as iperf3 -u runs it (net/ipv4/udp.c): the sender writes one datagram per
// sendto() at a paced rate (its pacing timer sleeps between bursts, like iperf3's); each
// datagram goes through udp_sendmsg and the route's output. The receiver queues datagrams to
// the socket in NET_RX (udp_queue_rcv_skb) while the receive buffer has room, counting a drop
// otherwise (UDP RcvbufErrors), and its reader copies them out one recvfrom() at a time.
#pragma once

#include "engine/task.h"
#include "kernel/cpu.h"
#include "kernel/this_cpu.h"
#include "net/net_costs.h"
#include "net/stack.h"

#include <algorithm>
#include <cstdint>
#include <deque>

namespace kdsim::net {

inline constexpr std::uint32_t UDP_IP_HEADERS = 28; // IPv4 20 + UDP 8

class UdpSource final : public TcpEndpoint {
public:
    UdpSource(Stack& stack, const UdpCosts& costs, const NetCosts& net, double copy_from_user, std::uint32_t length,
              std::uint64_t bitrate, std::uint32_t flow);
    // The sender task's body until `stop_at`, starting on `cpu`. A task `self` with several
    // allowed CPUs takes its CPU from itself after every await (kernel/this_cpu.h); none: pinned.
    engine::Task<> send_loop(kernel::Cpu& cpu, engine::Tick stop_at, kernel::TaskStruct* self = nullptr);
    engine::Task<> tcp_rcv(kernel::Cpu&, const Packet&) override { co_return; } // nothing comes back
    std::uint64_t datagrams() const { return sent_; }
    std::uint64_t bytes() const { return sent_ * length_; }

private:
    Stack& stack_;
    UdpCosts costs_;
    NetCosts net_;
    double copy_from_user_;
    std::uint32_t length_;
    std::uint64_t bitrate_;
    std::uint32_t flow_;
    std::uint64_t sent_ = 0;
    // ip_make_skb's copy of the datagram into a new linear skb (its headers then written), with
    // `p.data` set to the frame: on the hierarchy, the copy's lines; else copy_from_user per byte.
    Cycles ip_append_data(kernel::Cpu& cpu, Packet& p);
    // with a hierarchy: the writer's buffer and the ring of skb heads (placed at the first datagram)
    UserBuffer user_;
    mem::Addr heads_ = 0;
    std::size_t head_size_ = 0, head_count_ = 0, head_next_ = 0;

public:
    // The datagram's skb head: the power-of-two kmalloc class (kmalloc_large's pages beyond 8 KiB)
    // of LL_RESERVED_SPACE (16) + 15 + the IP and UDP headers + `length` + skb_shared_info (320).
    static std::size_t head_size(std::uint32_t length);
    // The heads a socket cycles through: as many as its send buffer (wmem_default, 212,992 bytes)
    // holds, at least one.
    static std::size_t head_ring(std::uint32_t length) { return std::max<std::size_t>(1, SNDBUF / head_size(length)); }
    static constexpr std::size_t SNDBUF = 212992;
    static constexpr std::uint32_t LL_RESERVED = 16; // LL_RESERVED_SPACE of an Ethernet device (hh_len)
};

class UdpSink final : public TcpEndpoint {
public:
    UdpSink(Stack& stack, const UdpCosts& costs, const NetCosts& net, double copy_to_user, std::uint64_t rcvbuf,
            std::uint32_t flow);
    engine::Task<> tcp_rcv(kernel::Cpu& cpu, const Packet& p) override; // udp_rcv
    // The reader task's body, starting on `cpu`; a movable `self` as UdpSource::send_loop.
    engine::Task<> read_loop(kernel::Cpu& cpu, kernel::TaskStruct& self);
    std::uint64_t datagrams() const { return received_; }
    std::uint64_t bytes_read() const { return bytes_read_; }
    std::uint64_t rcvbuf_drops() const { return drops_; }
    // What iperf3's receiver reports as Lost: the gaps in the sequence numbers of the datagrams
    // read (highest read + 1 - read). Dropped anywhere, and never recovered: UDP does not
    // retransmit. A datagram still in flight at the end is not counted, as in iperf3.
    std::uint64_t datagrams_missing() const { return read_ ? max_seq_read_ + 1 - read_ : 0; }
    std::uint64_t datagrams_expected() const { return read_ ? max_seq_read_ + 1 : 0; }

private:
    struct Datagram {
        QueuedSkb skb;
        std::uint64_t seq; // iperf3's datagram number (the source's count when sent)
    };
    Stack& stack_;
    UdpCosts costs_;
    NetCosts net_;
    double copy_to_user_;
    std::uint64_t rcvbuf_;
    std::uint64_t queued_bytes_ = 0, received_ = 0, bytes_read_ = 0, drops_ = 0, read_ = 0, max_seq_read_ = 0;
    std::deque<Datagram> queue_;
    UserBuffer user_;
    kernel::TaskStruct* reader_ = nullptr;
};

} // namespace kdsim::net
