#include "net/tcp.h"

#include "kernel/irqflags.h"
#include "kernel/preempt.h"
#include "kernel/sched.h"
#include "kernel/softirq.h"

#include <algorithm>
#include <cmath>

namespace kdsim::net {

using kernel::Cat;


TcpSource::TcpSource(Stack& stack, const TcpCosts& costs, std::uint64_t window_cap, std::uint32_t mss,
                     std::uint32_t flow, std::uint64_t sndbuf)
    : stack_(stack), costs_(costs), window_cap_(window_cap), mss_(mss), flow_(flow),
      sndbuf_(sndbuf ? sndbuf : 2 * window_cap), rwnd_(window_cap) {
    stack_.bind_tcp(flow_, *this);
}

// iperf3's writer: write() calls of 128 KiB. tcp_sendmsg holds the socket (lock_sock), copies
// each segment's worth into the send queue, pushes what the window allows, and sleeps in
// sk_stream_wait_memory (releasing the socket) when the send buffer is full.
// Models: tcp_sendmsg() (net/ipv4/tcp.c)
engine::Task<> TcpSource::send_loop(kernel::Cpu& cpu, kernel::TaskStruct& self, engine::Tick stop_at) {
    while (cpu.now() < stop_at) {
        co_await kernel::syscall_enter(cpu);
        owned_ = true; // lock_sock
        for (std::uint64_t written = 0; written < WRITE_BLOCK && cpu.now() < stop_at;) {
            if (write_seq_ - snd_una_ + mss_ > sndbuf_) {
                co_await release_sock(cpu); // sk_wait_event releases the socket while sleeping
                if (write_seq_ - snd_una_ + mss_ > sndbuf_) {
                    waiter_ = &self;
                    co_await cpu.block();
                }
                owned_ = true;
                continue;
            }
            co_await cpu.exec(per_byte(costs_.copy_from_user, mss_), Cat::COPY);
            write_seq_ += mss_;
            written += mss_;
            co_await tcp_write_xmit(cpu); // tcp_push
            co_await kernel::might_resched(cpu);
        }
        co_await release_sock(cpu);
        co_await kernel::syscall_exit(cpu);
    }
}

// tcp_write_xmit: one segment per loop, claimed before any cycle is spent, so that the writer
// and an ACK in softirq never send the same bytes. tcp_sendmsg's figure (skb, headers, IP output)
// is charged where the segment leaves.
// Models: tcp_write_xmit() (net/ipv4/tcp_output.c)
engine::Task<> TcpSource::tcp_write_xmit(kernel::Cpu& cpu) {
    while (snd_nxt_ + mss_ <= write_seq_ && snd_nxt_ - snd_una_ + mss_ <= std::min(window_cap_, rwnd_)) {
        Packet p{};
        p.kind = FrameKind::TCP_DATA;
        p.len = mss_ + TCP_IP_HEADERS + ETH_HEADER;
        p.seq = snd_nxt_;
        p.payload = mss_;
        p.flow = flow_;
        snd_nxt_ += mss_;
        ++segments_;
        if (kernel::in_interrupt(cpu.preempt_count())) ++softirq_segments_; // softirq or BH disabled
        co_await cpu.exec(costs_.tcp_sendmsg, Cat::PROTOCOL);
        co_await stack_.ip_output(cpu, p);
    }
}

// tcp_ack: drop what was acknowledged, take the new window, send what it allows
// (tcp_data_snd_check), wake the writer when the send buffer has room (sk_stream_write_space).
// Models: tcp_ack() (net/ipv4/tcp_input.c)
engine::Task<> TcpSource::tcp_ack(kernel::Cpu& cpu, std::uint64_t ack, std::uint64_t window) {
    co_await cpu.exec(costs_.tcp_ack_rcv, Cat::PROTOCOL);
    if (ack > snd_una_) snd_una_ = ack;
    rwnd_ = window;
    co_await tcp_write_xmit(cpu);
    if (waiter_ && write_seq_ - snd_una_ + mss_ <= sndbuf_) {
        kernel::TaskStruct* t = waiter_;
        waiter_ = nullptr;
        co_await kernel::try_to_wake_up(cpu, *t);
    }
}

// tcp_v4_rcv for an ACK: processed at once, or queued to the socket's backlog while the
// writer owns the socket (sk_add_backlog), to be processed at its release_sock.
engine::Task<> TcpSource::tcp_rcv(kernel::Cpu& cpu, const Packet& p) {
    co_await cpu.exec(costs_.ip_rcv + stack_.frame_read(cpu, p, ETH_HEADER, ETH_HEADER + TCP_IP_HEADERS), Cat::PROTOCOL);
    if (owned_) {
        ++backlogged_;
        backlog_.push_back(Ack{p.ack, p.window});
        co_return;
    }
    co_await tcp_ack(cpu, p.ack, p.window);
}

// Models: release_sock() (net/core/sock.c)
engine::Task<> TcpSource::release_sock(kernel::Cpu& cpu) {
    while (!backlog_.empty()) {
        Ack a = backlog_.front();
        backlog_.pop_front();
        co_await tcp_ack(cpu, a.ack, a.window);
    }
    owned_ = false;
}

TcpSink::TcpSink(Stack& stack, const TcpCosts& costs, std::uint64_t rcvbuf, std::uint32_t flow)
    : stack_(stack), costs_(costs), rcvbuf_(rcvbuf), flow_(flow), last_window_(rcvbuf) {
    stack_.bind_tcp(flow_, *this);
}

// Models: tcp_send_ack() (net/ipv4/tcp_output.c)
engine::Task<> TcpSink::send_ack(kernel::Cpu& cpu) {
    co_await cpu.exec(costs_.tcp_ack_send, Cat::PROTOCOL);
    last_window_ = window();
    ++acks_;
    unacked_segments_ = 0;
    Packet ack{};
    ack.kind = FrameKind::TCP_ACK;
    ack.len = TCP_ACK_FRAME;
    ack.ack = rcv_nxt_;
    ack.window = last_window_;
    ack.flow = flow_;
    co_await stack_.ip_output(cpu, ack);
}

// tcp_v4_rcv -> tcp_rcv_established: queue the data, ACK every second segment, wake the reader.
// Models: tcp_rcv_established() (net/ipv4/tcp_input.c)
engine::Task<> TcpSink::tcp_rcv(kernel::Cpu& cpu, const Packet& p) {
    softirq_cpu_ = &cpu;
    co_await cpu.exec(costs_.ip_rcv + costs_.tcp_v4_rcv + stack_.frame_read(cpu, p, ETH_HEADER, ETH_HEADER + TCP_IP_HEADERS),
                      Cat::PROTOCOL);
    rcv_nxt_ = p.seq + p.payload;
    unread_ += p.payload;
    queue_.push_back(QueuedSkb{p.payload, p.data ? p.data + ETH_HEADER + TCP_IP_HEADERS : 0});
    ++segments_;
    if (++unacked_segments_ >= 2) co_await send_ack(cpu);
    if (reader_) {
        kernel::TaskStruct* t = reader_;
        reader_ = nullptr;
        co_await kernel::try_to_wake_up(cpu, *t); // sock_def_readable
    }
}

// tcp_recvmsg: copy what is queued (up to 128 KiB per call), then tcp_cleanup_rbuf's window
// update when the advertised window had become small.
// Models: tcp_recvmsg() (net/ipv4/tcp.c)
engine::Task<> TcpSink::read_loop(kernel::Cpu& cpu, kernel::TaskStruct& self) {
    for (;;) {
        co_await kernel::syscall_enter(cpu);
        while (queue_.empty()) {
            reader_ = &self;
            co_await cpu.block();
        }
        co_await cpu.exec(costs_.tcp_recvmsg, Cat::PROTOCOL);
        std::uint64_t copied = 0;
        while (!queue_.empty() && copied < 128 * 1024) {
            const QueuedSkb skb = queue_.front();
            const std::uint32_t n = skb.len;
            queue_.pop_front();
            co_await cpu.exec(stack_.copy_to_user(cpu, skb, user_, costs_.copy_to_user_cold), Cat::COPY);
            co_await cpu.exec(costs_.skb_free, Cat::PROTOCOL);
            unread_ -= n;
            bytes_read_ += n;
            copied += n;
        }
        if (last_window_ < 2 * TCP_MSS && window() >= 2 * TCP_MSS) {
            ++window_updates_;
            co_await kernel::local_bh_disable(cpu);
            co_await send_ack(cpu);
            co_await kernel::local_bh_enable(cpu);
        }
        co_await kernel::syscall_exit(cpu);
    }
}

} // namespace kdsim::net
