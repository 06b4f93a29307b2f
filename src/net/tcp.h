// An established TCP bulk stream (net/ipv4/tcp_input.c, tcp_output.c), reduced to what makes a
// bulk transfer run at the speed of its slowest stage: the writer copies into the send queue
// (up to sndbuf ahead of what was acknowledged) in write() calls of 128 KiB holding the socket
// lock; segments leave by tcp_write_xmit, at most the peer's advertised window in flight, either
// from the writer (tcp_push) or from ACK processing (tcp_ack -> tcp_data_snd_check) in NET_RX,
// or from release_sock's backlog when an ACK arrived while the writer owned the socket; the receiver processes each segment in NET_RX
// (ip_rcv, tcp_v4_rcv), queues it for the reader, ACKs every second full segment (the
// quick-ack/delayed-ACK rule for bulk data), and advertises the receive buffer left unread; the
// reader copies to user space and, when the window had closed, sends a window update
// (tcp_cleanup_rbuf). Not modelled: loss and retransmission (the model never drops a segment:
// the window stays below the rx ring), congestion control (slow start, cwnd), SACK, timestamps,
// GRO.
#pragma once

#include "engine/task.h"
#include "kernel/cpu.h"
#include "net/net_costs.h"
#include "net/stack.h"

#include <cstdint>
#include <deque>

namespace kdsim::net {

inline constexpr std::uint32_t TCP_MSS = 1448;       // 1500 - 20 (IP) - 32 (TCP with timestamps)
inline constexpr std::uint32_t TCP_IP_HEADERS = 52;  // IPv4 20 + TCP with timestamps 32
inline constexpr std::uint32_t ETH_HEADER = 14;
inline constexpr std::uint32_t TCP_FRAME = TCP_MSS + TCP_IP_HEADERS + ETH_HEADER; // 1514
inline constexpr std::uint32_t TCP_ACK_FRAME = 66;
// The MSS of a route with this MTU.
constexpr std::uint32_t tcp_mss_for_mtu(std::uint32_t mtu) { return mtu - TCP_IP_HEADERS; }

class TcpSource final : public TcpEndpoint {
public:
    TcpSource(Stack& stack, const TcpCosts& costs, std::uint64_t window_cap, std::uint32_t mss = TCP_MSS,
              std::uint32_t flow = 0, std::uint64_t sndbuf = 0 /* 0: twice the window */);
    // The sender task's body: writes segments as fast as the window allows until `stop_at`.
    engine::Task<> send_loop(kernel::Cpu& cpu, kernel::TaskStruct& self, engine::Tick stop_at);
    engine::Task<> tcp_rcv(kernel::Cpu& cpu, const Packet& p) override;
    std::uint64_t bytes_acked() const { return snd_una_; }
    std::uint64_t segments_sent() const { return segments_; }
    // Segments sent in softirq or with bottom halves disabled (e.g. from a cryptd completion).
    std::uint64_t segments_sent_in_bh() const { return softirq_segments_; }
    std::uint64_t backlogged_acks() const { return backlogged_; }

private:
    static constexpr std::uint64_t WRITE_BLOCK = 128 * 1024; // iperf3's default TCP write size
    // tcp_write_xmit: send queued data while the window allows, in the caller's context.
    engine::Task<> tcp_write_xmit(kernel::Cpu& cpu);
    engine::Task<> tcp_ack(kernel::Cpu& cpu, std::uint64_t ack, std::uint64_t window);
    // release_sock: ACKs queued while the writer held the socket, processed in its context.
    engine::Task<> release_sock(kernel::Cpu& cpu);
    Stack& stack_;
    TcpCosts costs_;
    std::uint64_t window_cap_;
    std::uint32_t mss_;
    std::uint32_t flow_;
    std::uint64_t sndbuf_;
    std::uint64_t snd_una_ = 0, snd_nxt_ = 0, write_seq_ = 0, rwnd_;
    std::uint64_t segments_ = 0, softirq_segments_ = 0, backlogged_ = 0;
    bool owned_ = false; // the writer holds the socket lock
    struct Ack {
        std::uint64_t ack, window;
    };
    std::deque<Ack> backlog_;
    kernel::TaskStruct* waiter_ = nullptr;
};

class TcpSink final : public TcpEndpoint {
public:
    TcpSink(Stack& stack, const TcpCosts& costs, std::uint64_t rcvbuf, std::uint32_t flow = 0);
    engine::Task<> tcp_rcv(kernel::Cpu& cpu, const Packet& p) override;
    // The reader task's body (iperf3's server): read and discard until the run ends.
    engine::Task<> read_loop(kernel::Cpu& cpu, kernel::TaskStruct& self);
    std::uint64_t bytes_read() const { return bytes_read_; }
    std::uint64_t segments() const { return segments_; }
    std::uint64_t acks_sent() const { return acks_; }
    std::uint64_t window_updates() const { return window_updates_; }

private:
    engine::Task<> send_ack(kernel::Cpu& cpu);
    std::uint64_t window() const { return rcvbuf_ > unread_ ? rcvbuf_ - unread_ : 0; }

    Stack& stack_;
    TcpCosts costs_;
    std::uint64_t rcvbuf_;
    std::uint32_t flow_;
    std::uint64_t rcv_nxt_ = 0, unread_ = 0, bytes_read_ = 0;
    std::uint64_t segments_ = 0, acks_ = 0, unacked_segments_ = 0, window_updates_ = 0;
    std::uint64_t last_window_ = 0;
    std::deque<QueuedSkb> queue_; // segments not yet read
    UserBuffer user_;
    kernel::TaskStruct* reader_ = nullptr;
    kernel::Cpu* softirq_cpu_ = nullptr;
};

} // namespace kdsim::net
