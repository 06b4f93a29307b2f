// The receiving side (net/ipv4/tcp_input.c tcp_rcv_established, tcp_data_queue,
// tcp_data_queue_ofo, tcp_sack_new_ofo_skb, __tcp_ack_snd_check; tcp_timer.c tcp_delack_timer;
// tcp.c tcp_recvmsg, tcp_cleanup_rbuf).
#include "net/tcp.h"

#include "kernel/irqflags.h"
#include "kernel/sched.h"
#include "kernel/softirq.h"

#include <algorithm>

namespace kdsim::net {

using kernel::Cat;

TcpSink::TcpSink(Stack& stack, const TcpCosts& costs, std::uint64_t rcvbuf, std::uint32_t flow)
    : stack_(stack), costs_(costs), rcvbuf_(rcvbuf), adv_win_(rcvbuf), flow_(flow), last_window_(rcvbuf),
      queue_(rcvbuf / 536 + 2), ack_(ack_skb()) {
    ofo_.reserve(rcvbuf / 536 + 2);
    delack_timer_.function = &TcpSink::tcp_delack_timer;
    delack_timer_.data = this;
    stack_.bind_tcp(flow_, *this);
}

void TcpSink::autotune(const std::array<std::uint64_t, 3>& rmem) {
    rcvbuf_auto_ = true;
    rcvbuf_ = rmem[1];
    rmem_max_ = rmem[2];
    adv_win_ = last_window_ = rcvbuf_ / 2;
    rcvq_space_ = std::min<std::uint64_t>(adv_win_, TCP_INIT_CWND * std::uint64_t{TCP_MSS}); // tcp_init_buffer_space
    queue_ = SegRing<RxSeg>(rmem_max_ / 2 / 536 + 2);
    ofo_.reserve(rmem_max_ / 2 / 536 + 2);
}

// Receiver-side RTT without timestamps: the time to receive one window's worth of data.
// Models: tcp_rcv_rtt_measure() (net/ipv4/tcp_input.c)
void TcpSink::tcp_rcv_rtt_measure(kernel::Cpu& cpu) {
    if (rcv_rtt_seq_ && rcv_nxt_ < rcv_rtt_seq_) return;
    if (rcv_rtt_seq_) {
        const engine::Tick sample = cpu.now() - rcv_rtt_time_;
        rcv_rtt_est_ = rcv_rtt_est_ ? std::min(rcv_rtt_est_, sample) : sample; // win_dep: the minimum
    }
    rcv_rtt_seq_ = rcv_nxt_ + std::max<std::uint64_t>(window(), advmss_);
    rcv_rtt_time_ = cpu.now();
}

// Dynamic right-sizing: once per receiver RTT, if the reader copied more than in the previous
// RTT, the buffer grows to twice (2 x copied + 16 MSS, plus twice the growth), up to tcp_rmem[2].
// Models: tcp_rcv_space_adjust() (net/ipv4/tcp_input.c)
void TcpSink::tcp_rcv_space_adjust(kernel::Cpu& cpu) {
    if (!rcvbuf_auto_ || rcv_rtt_est_ == 0) return;
    if (cpu.now() - rcvq_time_ < rcv_rtt_est_) return;
    const std::uint64_t copied = bytes_read_ - rcvq_seq_;
    if (copied > rcvq_space_) {
        std::uint64_t rcvwin = 2 * copied + 16 * static_cast<std::uint64_t>(advmss_);
        const std::uint64_t grow = rcvwin * (copied - rcvq_space_) / rcvq_space_;
        rcvwin += 2 * grow;
        const std::uint64_t rcvbuf = std::min(2 * rcvwin, rmem_max_); // tcp_space_from_win
        if (rcvbuf > rcvbuf_) {
            rcvbuf_ = rcvbuf;
            adv_win_ = rcvbuf / 2; // window_clamp = tcp_win_from_space(rcvbuf)
        }
    }
    rcvq_space_ = copied;
    rcvq_seq_ = bytes_read_;
    rcvq_time_ = cpu.now();
}

void TcpSink::register_stats(const stats::Scope& s) const {
    s.counter("segments_received", st_.segments, "count", "data segments received")
        .counter("acks_sent", st_.acks, "count", "ACKs sent")
        .counter("delayed_acks", st_.delayed_acks, "count", "of which sent by the delayed-ACK timer (DelayedACKs)")
        .counter("sack_acks", st_.sack_acks, "count", "ACKs carrying SACK blocks")
        .counter("ofo_segments", st_.ofo_segments, "count", "segments queued out of order (TCPOFOQueue)")
        .counter("duplicate_segments", st_.duplicate_segments, "count", "segments received again (already queued or read)")
        .counter("window_drops", st_.window_drops, "count", "segments outside the receive window, dropped at the socket")
        .counter("window_updates", st_.window_updates, "count", "window updates sent by the reader (tcp_cleanup_rbuf)")
        .value("rcvbuf", [this] { return static_cast<double>(rcvbuf_); }, "bytes", "sk_rcvbuf at the end of the run");
}

std::uint64_t TcpSink::ofo_bytes() const {
    std::uint64_t n = 0;
    for (const RxSeg& s : ofo_) n += s.len;
    return n;
}

// Models: tcp_send_ack() (net/ipv4/tcp_output.c)
engine::Task<> TcpSink::send_ack(kernel::Cpu& cpu) {
    Packet ack = ack_skb();
    tcp_build_ack(ack);
    co_await cpu.exec(costs_.tcp_ack_send, Cat::PROTOCOL, kernel::Text::TCP_SEND_ACK);
    co_await stack_.ip_output(cpu, ack);
}

// __tcp_send_ack's skb: the ACK of what arrived in order, the window, the SACK blocks.
// Every field that differs from ack_skb's is written: `ack` ends as the same skb whatever an
// earlier call left in it.
void TcpSink::tcp_build_ack(Packet& ack) {
    if (kernel::timer_pending(delack_timer_)) kernel::del_timer(delack_timer_); // inet_csk_clear_xmit_timer(ICSK_TIME_DACK)
    last_window_ = window();
    ++st_.acks;
    unacked_segments_ = 0;
    if (quick_) --quick_; // tcp_dec_quickack_mode
    ack.ack = rcv_nxt_;
    ack.window = last_window_;
    // tcp_build_sack: the blocks, most recent first
    const std::size_t n = std::min(nsack_, TCP_MAX_SACKS);
    for (std::size_t i = 0; i < n; ++i)
        ack.sack[i] = SackBlock{static_cast<std::uint32_t>(sack_[i].start - rcv_nxt_),
                                static_cast<std::uint32_t>(sack_[i].end - rcv_nxt_)};
    for (std::size_t i = n; i < ack.sacks; ++i) ack.sack[i] = SackBlock{}; // the last ACK's, zero again
    ack.sacks = static_cast<std::uint8_t>(n);
    ack.len = TCP_ACK_FRAME;
    if (n) {
        ++st_.sack_acks;
        ack.len += 2 + 8 * ack.sacks; // the SACK option (with NOP padding)
    }
}

// The delayed ACK is due: send it, unless nothing is left to ACK.
// Models: tcp_delack_timer() (net/ipv4/tcp_timer.c)
engine::Task<> TcpSink::tcp_delack_timer(kernel::Cpu& cpu, kernel::TimerList& t) {
    auto& s = *static_cast<TcpSink*>(t.data);
    if (s.unacked_segments_ == 0) co_return;
    ++s.st_.delayed_acks;
    co_await s.send_ack(cpu);
}

// Models: tcp_sack_new_ofo_skb() (net/ipv4/tcp_input.c)
void TcpSink::tcp_sack_new_ofo(std::uint64_t start, std::uint64_t end) {
    for (std::size_t i = 0; i < nsack_; ++i) {
        Block& b = sack_[i];
        if (start <= b.end && end >= b.start) { // extends block i: it moves to the front
            Block merged{std::min(start, b.start), std::max(end, b.end)};
            for (std::size_t j = i; j > 0; --j) sack_[j] = sack_[j - 1];
            sack_[0] = merged;
            // tcp_sack_maybe_coalesce: the grown block may now touch others
            for (std::size_t j = 1; j < nsack_;) {
                if (sack_[j].start <= sack_[0].end && sack_[j].end >= sack_[0].start) {
                    sack_[0].start = std::min(sack_[0].start, sack_[j].start);
                    sack_[0].end = std::max(sack_[0].end, sack_[j].end);
                    for (std::size_t k = j; k + 1 < nsack_; ++k) sack_[k] = sack_[k + 1];
                    --nsack_;
                } else {
                    ++j;
                }
            }
            return;
        }
    }
    const std::size_t n = std::min(nsack_ + 1, sack_.size());
    for (std::size_t j = n - 1; j > 0; --j) sack_[j] = sack_[j - 1];
    sack_[0] = Block{start, end};
    nsack_ = n;
}

// Models: tcp_sack_remove() (net/ipv4/tcp_input.c)
void TcpSink::tcp_sack_remove() {
    for (std::size_t j = 0; j < nsack_;) {
        if (sack_[j].start <= rcv_nxt_) {
            for (std::size_t k = j; k + 1 < nsack_; ++k) sack_[k] = sack_[k + 1];
            --nsack_;
        } else {
            ++j;
        }
    }
}

// Models: tcp_ofo_queue() (net/ipv4/tcp_input.c)
void TcpSink::tcp_ofo_queue() {
    std::size_t n = 0;
    while (n < ofo_.size() && ofo_[n].seq <= rcv_nxt_) {
        const RxSeg s = ofo_[n++];
        if (s.seq + s.len <= rcv_nxt_) continue; // covered already
        const std::uint64_t skip = rcv_nxt_ - s.seq;
        queue_.push_back(RxSeg{rcv_nxt_, static_cast<std::uint32_t>(s.len - skip), s.data ? s.data + skip : 0});
        unread_ += s.len - skip;
        rcv_nxt_ = s.seq + s.len;
    }
    ofo_.erase(ofo_.begin(), ofo_.begin() + static_cast<std::ptrdiff_t>(n));
}

// The payload of `p` from sequence `from` on, one RxSeg per segment it was built from (a GRO
// skb's fragments lie in their own rx buffers), in order.
template <class F>
void TcpSink::for_each_frag(const Packet& p, std::uint64_t from, F&& f) {
    const std::uint32_t segs = std::max<std::uint32_t>(p.gso_segs, 1);
    const std::uint64_t end = p.seq + p.payload;
    for (std::uint32_t i = 0; i < segs; ++i) {
        const std::uint64_t s0 = p.seq + std::uint64_t{i} * (segs > 1 ? p.gso_size : 0);
        const std::uint64_t s1 = i + 1 < segs ? s0 + p.gso_size : end;
        if (s1 <= from) continue;
        const std::uint64_t frame = segs > 1 && p.frag_data ? p.frag_data[i] : p.data;
        const std::uint64_t skip = from > s0 ? from - s0 : 0;
        f(RxSeg{s0 + skip, static_cast<std::uint32_t>(s1 - s0 - skip), frame ? frame + ETH_HEADER + TCP_IP_HEADERS + skip : 0});
    }
}

// In-window data: in order to the reader's queue (pulling what the ofo queue now continues),
// out of order into the ofo queue with a SACK block; a duplicate or out-of-window segment is
// dropped. Whether the ACK goes at once (true: tcp_rcv sends it) or is delayed is
// __tcp_ack_snd_check's rule. A plain function: it spends no cycles of its own.
// Models: tcp_data_queue() (net/ipv4/tcp_input.c)
bool TcpSink::tcp_data_queue(kernel::Cpu& cpu, const Packet& p) {
    const std::uint64_t start = p.seq, end = p.seq + p.payload;
    const std::uint32_t segs = std::max<std::uint32_t>(p.gso_segs, 1);
    const std::uint32_t seg_size = segs > 1 ? p.gso_size : p.payload; // tcp_measure_rcv_mss: gso_size of a GRO skb
    bool now = false;
    if (!advmss_) advmss_ = seg_size;
    if (first_data_) { // tcp_event_data_recv on the first data: tcp_incr_quickack
        first_data_ = false;
        quick_ = static_cast<std::uint32_t>(std::min<std::uint64_t>(rcvbuf_ / (2 * seg_size), TCP_MAX_QUICKACKS));
    }
    if (end <= rcv_nxt_) { // tcp_send_dupack: a retransmission of what we have
        ++st_.duplicate_segments;
        now = true;
    } else if (end > rcv_nxt_ + window()) {
        ++st_.window_drops; // tcp_sequence fails / no receive memory: dropped
        now = true;
    } else if (start <= rcv_nxt_) {
        tcp_rcv_rtt_measure(cpu);
        const bool had_ofo = !ofo_.empty();
        for_each_frag(p, rcv_nxt_, [this](const RxSeg& f) { queue_.push_back(f); });
        unread_ += end - rcv_nxt_;
        rcv_nxt_ = end;
        if (had_ofo) {
            tcp_ofo_queue();
            tcp_sack_remove();
            now = true; // a hole was filled: ACK at once
        }
        unacked_segments_ += segs; // a GRO skb of 2 or more full segments is ACKed at once
    } else {
        // as tcp_data_queue_ofo() (net/ipv4/tcp_input.c)
        auto it = std::lower_bound(ofo_.begin(), ofo_.end(), start, [](const RxSeg& s, std::uint64_t x) { return s.seq < x; });
        const bool dup = (it != ofo_.end() && it->seq == start) || (it != ofo_.begin() && std::prev(it)->seq + std::prev(it)->len >= end);
        if (dup) {
            ++st_.duplicate_segments;
        } else {
            ++st_.ofo_segments;
            for_each_frag(p, start, [this, &it](const RxSeg& f) { it = std::next(ofo_.insert(it, f)); });
        }
        tcp_sack_new_ofo(start, end);
        unacked_segments_ += segs;
        now = true;
    }
    if (now || quick_ || !ofo_.empty() || unacked_segments_ >= 2) return true;
    if (!kernel::timer_pending(delack_timer_)) kernel::mod_timer(cpu, delack_timer_, cpu.now() + TCP_ATO_MIN);
    return false;
}

// tcp_v4_rcv -> tcp_rcv_established: queue the data, ACK, wake the reader.
// Models: tcp_rcv_established() (net/ipv4/tcp_input.c)
engine::Task<> TcpSink::tcp_rcv(kernel::Cpu& cpu, const Packet& p) {
    co_await cpu.exec(costs_.ip_rcv + costs_.tcp_v4_rcv + stack_.frame_read(cpu, p, ETH_HEADER, ETH_HEADER + TCP_IP_HEADERS) +
                          cpu.text(kernel::Text::IP_RCV),
                      Cat::PROTOCOL, kernel::Text::TCP_V4_RCV);
    st_.segments += std::max<std::uint32_t>(p.gso_segs, 1); // InSegs counts a GRO skb's segments
    const std::uint64_t before = rcv_nxt_;
    if (tcp_data_queue(cpu, p)) {
        if (ack_busy_) {
            co_await send_ack(cpu);
        } else { // send_ack, its awaits in this frame (one coroutine less per ACK), in ack_
            ack_busy_ = true;
            tcp_build_ack(ack_);
            co_await cpu.exec(costs_.tcp_ack_send, Cat::PROTOCOL, kernel::Text::TCP_SEND_ACK);
            co_await stack_.ip_output(cpu, ack_);
            ack_busy_ = false;
        }
    }
    if (rcv_nxt_ > before && reader_) { // sock_def_readable
        kernel::TaskStruct& t = *reader_;
        reader_ = nullptr;
        // kernel::try_to_wake_up's steps, its awaits in this frame (one coroutine less per wake-up)
        const bool flags = co_await kernel::local_irq_save(cpu);
        co_await cpu.exec(cpu.costs().wakeup, Cat::SCHEDULER, kernel::Text::WAKEUP);
        if (!cpu.ttwu_queue_wakelist(t)) {
            co_await cpu.exec(cpu.costs().wakeup_activate, Cat::SCHEDULER, kernel::Text::WAKEUP_ACTIVATE);
            cpu.ttwu_do_activate(t);
        }
        co_await kernel::local_irq_restore(cpu, flags);
    }
}

// tcp_recvmsg: copy what is queued in order (up to 128 KiB per call), each byte once: a
// segment that does not start where the last one ended is a lost-data finding. Then
// tcp_cleanup_rbuf's window update when the advertised window had become small (bottom halves
// off: the ACK goes out on the CPU the reader is on).
// Models: tcp_recvmsg() (net/ipv4/tcp.c)
engine::Task<> TcpSink::read_loop(kernel::Cpu& start, kernel::TaskStruct& self) {
    const kernel::ThisCpu cpu = kernel::ThisCpu::of(self, start); // a movable reader: its CPU at each use
    for (;;) {
        co_await kernel::syscall_enter(cpu);
        while (queue_.empty()) {
            reader_ = &self;
            co_await cpu->block();
        }
        co_await cpu->exec(costs_.tcp_recvmsg, Cat::PROTOCOL, kernel::Text::TCP_RECVMSG);
        std::uint64_t copied = 0;
        while (!queue_.empty() && copied < 128 * 1024) {
            const RxSeg s = queue_.front();
            queue_.pop_front();
            if (s.seq != bytes_read_)
                cpu->report_finding(stats::FindingKind::LOST_DATA, "TCP receive queue",
                                   "TCP flow " + std::to_string(flow_) + ": bytes " + std::to_string(bytes_read_) + ".." +
                                       std::to_string(s.seq) + " not delivered in order exactly once (next segment at " +
                                       std::to_string(s.seq) + ")",
                                   "tcp_recvmsg");
            co_await copy_exec(cpu, s);
            co_await cpu->exec(costs_.skb_free, Cat::PROTOCOL);
            stack_.skb_data_free(s.data); // tcp_eat_recv_skb -> __kfree_skb: a slab head goes back
            unread_ -= s.len;
            bytes_read_ = s.seq + s.len;
            copied += s.len;
        }
        tcp_rcv_space_adjust(cpu);
        if (last_window_ < 2 * TCP_MSS && window() >= 2 * TCP_MSS) {
            ++st_.window_updates;
            co_await kernel::local_bh_disable(cpu);
            co_await send_ack(cpu);
            co_await kernel::local_bh_enable(cpu);
        }
        // kernel::syscall_exit's steps, its awaits in this frame (one coroutine less per read):
        // the return to user mode, then the exception return on the CPU the reader is on after it
        co_await cpu->point(kernel::Point::RETURN_TO_USER);
        co_await cpu->exec(cpu->costs().exception_return_extra, Cat::IRQ_MASK);
    }
}

} // namespace kdsim::net
