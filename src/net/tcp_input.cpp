// The sending side's ACK processing (net/ipv4/tcp_input.c): tcp_ack with SACK tagging
// (tcp_sacktag_write_queue), tcp_clean_rtx_queue's RTT sample (tcp_rtt_estimator, RFC 6298),
// loss detection and recovery (tcp_fastretrans_alert, RFC 6675 with PRR, tcp_enter_loss after an
// RTO) and congestion control (tcp_cong_control).
#include "net/tcp.h"

#include "kernel/sched.h"

#include <algorithm>
#include <optional>

namespace kdsim::net {

using kernel::Cat;

namespace {
enum : int {
    FLAG_DATA_ACKED = 0x04,       // this ACK acknowledged new data
    FLAG_RETRANS_DATA_ACKED = 0x08, // some of which was retransmitted
    FLAG_DATA_SACKED = 0x20,      // new SACK
    FLAG_WIN_UPDATE = 0x02,
    FLAG_SND_UNA_ADVANCED = 0x400,
};
} // namespace

// tcp_v4_rcv for an ACK: processed at once, or queued to the socket's backlog while the
// writer owns the socket (sk_add_backlog), to be processed at its release_sock. A plain
// function: tcp_ack's Task takes that path first (one coroutine per ACK, not two).
// Models: tcp_v4_rcv() (net/ipv4/tcp_ipv4.c)
engine::Task<> TcpSource::tcp_rcv(kernel::Cpu& cpu, const Packet& p) { return tcp_ack(cpu, p, true); }

// Models: tcp_rtt_estimator() (net/ipv4/tcp_input.c)
void TcpSource::tcp_rtt_estimator(engine::Tick m) {
    // RFC 6298: SRTT <- 7/8 SRTT + 1/8 R', RTTVAR <- 3/4 RTTVAR + 1/4 |SRTT - R'|,
    // RTO <- SRTT + max(4 RTTVAR, TCP_RTO_MIN) (Linux's floor on the variance term), <= RTO_MAX
    if (srtt_ == 0) {
        srtt_ = m;
        rttvar_ = m / 2;
    } else {
        const engine::Tick err = m > srtt_ ? m - srtt_ : srtt_ - m;
        rttvar_ = (3 * rttvar_ + err) / 4;
        srtt_ = (7 * srtt_ + m) / 8;
    }
    rto_ = std::min(srtt_ + std::max(4 * rttvar_, TCP_RTO_MIN), TCP_RTO_MAX); // __tcp_set_rto
}

// Tags the segments each SACK block covers (only above snd_una and below snd_nxt), returns
// FLAG_DATA_SACKED if any was new.
// Models: tcp_sacktag_write_queue() (net/ipv4/tcp_input.c)
int TcpSource::tcp_sacktag_write_queue(const Packet& p, std::uint32_t& newly_sacked, std::optional<engine::Tick>& first_sackt,
                                       std::uint64_t& reord) {
    int flag = 0;
    for (std::size_t i = 0; i < p.sacks; ++i) {
        ++st_.sack_blocks;
        std::uint64_t start = p.ack + p.sack[i].start, end = p.ack + p.sack[i].end;
        start = std::max(start, snd_una_);
        end = std::min(end, snd_nxt_);
        start = (start + mss_ - 1) / mss_ * mss_; // whole segments only
        for (std::uint64_t s = start; s + mss_ <= end; s += mss_) {
            TxSeg& g = seg(s);
            if (g.sacked & SACKED_ACKED) continue;
            // as tcp_sacktag_one() (net/ipv4/tcp_input.c)
            if (g.sacked & LOST) --lost_out_;
            if (g.sacked & SACKED_RETRANS) --retrans_out_;
            else if (!(g.sacked & EVER_RETRANS) && !first_sackt) first_sackt = g.sent;
            if (!(g.sacked & EVER_RETRANS)) reord = std::min(reord, s);
            g.sacked = static_cast<std::uint8_t>((g.sacked & EVER_RETRANS) | SACKED_ACKED);
            ++sacked_out_;
            ++newly_sacked;
            highest_sack_ = std::max(highest_sack_, s + mss_);
            flag |= FLAG_DATA_SACKED;
        }
    }
    return flag;
}

// RFC 6675 IsLost: an unSACKed segment with at least `reordering` SACKed segments above it is
// lost. Walk down from the highest SACK to the reordering-th SACKed segment; every unSACKed
// segment below it is marked (the kernel's tcp_mark_head_lost / tcp_update_scoreboard).
void TcpSource::tcp_mark_lost() {
    if (sacked_out_ < reordering_) return;
    std::uint32_t seen = 0;
    std::uint64_t s = highest_sack_;
    while (s > snd_una_ && seen < reordering_) {
        s -= mss_;
        if (seg(s).sacked & SACKED_ACKED) ++seen;
    }
    if (seen < reordering_) return;
    for (std::uint64_t q = std::max(lost_high_, snd_una_); q < s; q += mss_) {
        TxSeg& g = seg(q);
        if (!(g.sacked & (SACKED_ACKED | LOST))) {
            g.sacked |= LOST;
            ++lost_out_;
        }
    }
    lost_high_ = std::max(lost_high_, s);
}

// A retransmission is lost when a segment first sent after it (above the snd_nxt of that
// moment) has been SACKed: marked for retransmission again.
// (Linux up to 4.3; later kernels find these with RACK.)
// Models: tcp_mark_lost_retrans() (net/ipv4/tcp_input.c)
void TcpSource::tcp_mark_lost_retrans() {
    if (retrans_out_ == 0) return;
    for (std::uint64_t q = snd_una_; q < lost_high_ && q < snd_nxt_; q += mss_) {
        TxSeg& g = seg(q);
        if ((g.sacked & SACKED_RETRANS) && highest_sack_ > g.rexmit_nxt) {
            g.sacked &= static_cast<std::uint8_t>(~SACKED_RETRANS);
            --retrans_out_;
            if (!(g.sacked & LOST)) {
                g.sacked |= LOST;
                ++lost_out_;
            }
            ++st_.lost_retransmits;
            rexmit_hint_ = std::min(rexmit_hint_, q);
        }
    }
}

// A segment never retransmitted was delivered below the highest SACK of before this ACK: the
// network reorders by (prior_fack - low_seq) / mss segments; the duplicate-ACK threshold grows.
// Models: tcp_check_sack_reordering() (net/ipv4/tcp_input.c)
void TcpSource::tcp_check_sack_reordering(std::uint64_t low_seq, std::uint64_t prior_fack) {
    if (low_seq >= prior_fack) return;
    const std::uint64_t metric = prior_fack - low_seq;
    if (metric > static_cast<std::uint64_t>(reordering_) * mss_)
        reordering_ = static_cast<std::uint32_t>(std::min<std::uint64_t>((metric + mss_ - 1) / mss_, TCP_MAX_REORDERING));
    ++st_.reorders;
}

// tcp_init_cwnd_reduction restarts the count toward the next increment (snd_cwnd_cnt): the
// ACKs of before the loss do not grow the reduced window.
// Models: tcp_enter_recovery() (net/ipv4/tcp_input.c)
void TcpSource::tcp_enter_recovery() {
    ++st_.recoveries;
    tp_.cwnd_cnt = 0;
    if (ca_state_ != CaState::CWR) { // already reducing: the CWR's ssthresh stands
        prior_cwnd_ = tp_.cwnd;
        tp_.ssthresh = cc_.ssthresh(tp_);
        prr_delivered_ = prr_out_ = 0;
    }
    high_seq_ = snd_nxt_;
    ca_state_ = CaState::RECOVERY;
}

// After an RTO: ssthresh from the algorithm (unless already reduced in this window), every
// unSACKed segment lost, retransmission marks cleared, cwnd = in flight + 1 (= 1).
// Models: tcp_enter_loss() (net/ipv4/tcp_input.c)
void TcpSource::tcp_enter_loss() {
    if (ca_state_ <= CaState::DISORDER || high_seq_ <= snd_una_ || (ca_state_ == CaState::LOSS && !retransmits_)) {
        prior_cwnd_ = tp_.cwnd;
        tp_.ssthresh = cc_.ssthresh(tp_);
    }
    // tcp_timeout_mark_lost
    lost_out_ = retrans_out_ = 0;
    for (std::uint64_t q = snd_una_; q < snd_nxt_; q += mss_) {
        TxSeg& g = seg(q);
        g.sacked &= static_cast<std::uint8_t>(~SACKED_RETRANS);
        if (!(g.sacked & SACKED_ACKED)) {
            g.sacked |= LOST;
            ++lost_out_;
        }
    }
    lost_high_ = snd_nxt_;
    rexmit_hint_ = snd_una_;
    tp_.cwnd = in_flight() + 1;
    tp_.cwnd_cnt = 0;
    high_seq_ = snd_nxt_;
    ca_state_ = CaState::LOSS;
}

// Proportional rate reduction (RFC 6937): while in recovery, send about one segment per
// 1/beta delivered until in-flight reaches ssthresh, then as many as are delivered.
// Models: tcp_cwnd_reduction() (net/ipv4/tcp_input.c)
void TcpSource::tcp_cwnd_reduction(std::uint32_t newly_acked_sacked, int flag) {
    if (newly_acked_sacked == 0 || prior_cwnd_ == 0) return;
    const auto delta = static_cast<std::int64_t>(tp_.ssthresh) - in_flight();
    prr_delivered_ += newly_acked_sacked;
    std::int64_t sndcnt;
    if (delta < 0) {
        const std::uint64_t dividend = static_cast<std::uint64_t>(tp_.ssthresh) * prr_delivered_ + prior_cwnd_ - 1;
        sndcnt = static_cast<std::int64_t>(dividend / prior_cwnd_) - prr_out_;
    } else {
        sndcnt = std::max<std::int64_t>(static_cast<std::int64_t>(prr_delivered_) - prr_out_, newly_acked_sacked);
        if (flag & FLAG_SND_UNA_ADVANCED) ++sndcnt;
        sndcnt = std::min(delta, sndcnt);
    }
    sndcnt = std::max<std::int64_t>(sndcnt, prr_out_ ? 0 : 1); // force the fast retransmit
    tp_.cwnd = static_cast<std::uint32_t>(std::max<std::int64_t>(in_flight() + sndcnt, 1));
}

// State exits when high_seq is ACKed, then: in recovery, mark lost holes; in Open/Disorder,
// enter recovery when something is lost or `reordering` segments are SACKed (3 dupacks).
// Models: tcp_fastretrans_alert() (net/ipv4/tcp_input.c)
void TcpSource::tcp_fastretrans_alert(int, bool& rexmit) {
    if (snd_una_ >= high_seq_ && (ca_state_ == CaState::RECOVERY || ca_state_ == CaState::LOSS)) {
        if (ca_state_ == CaState::RECOVERY) tp_.cwnd = std::min(tp_.cwnd, tp_.ssthresh); // tcp_end_cwnd_reduction
        ca_state_ = CaState::OPEN;
    }
    if (ca_state_ == CaState::CWR && snd_una_ > high_seq_) { // held until above high_seq is ACKed
        tp_.cwnd = tp_.ssthresh; // tcp_end_cwnd_reduction
        ca_state_ = CaState::OPEN;
    }
    switch (ca_state_) {
    case CaState::RECOVERY:
    case CaState::LOSS:
        tcp_mark_lost();
        rexmit = true;
        return;
    case CaState::OPEN:
    case CaState::DISORDER:
    case CaState::CWR:
        tcp_mark_lost();
        if (lost_out_ == 0 && sacked_out_ < reordering_) { // tcp_time_to_recover
            if (ca_state_ != CaState::CWR) ca_state_ = sacked_out_ ? CaState::DISORDER : CaState::OPEN; // tcp_try_to_open
            return;
        }
        tcp_enter_recovery();
        if (lost_out_ == 0) { // tcp_mark_head_lost(1): the head is the fast retransmission
            TxSeg& g = seg(snd_una_);
            if (!(g.sacked & (SACKED_ACKED | LOST))) {
                g.sacked |= LOST;
                ++lost_out_;
                lost_high_ = std::max(lost_high_, snd_una_ + mss_);
            }
        }
        rexmit = true;
        return;
    }
}

// tcp_ack: SACK tags, cumulative ACK (tcp_clean_rtx_queue) with its RTT sample, the window,
// loss detection, then cwnd (PRR in recovery, else the algorithm's growth when cwnd-limited),
// then send what that allows (tcp_xmit_recovery, tcp_data_snd_check) and wake the writer.
// Models: tcp_ack() (net/ipv4/tcp_input.c)
engine::Task<> TcpSource::tcp_ack(kernel::ThisCpu cpu, const Packet& p, bool rcv) {
    if (rcv) { // tcp_v4_rcv's part: ip_rcv, then the backlog while the writer owns the socket
        co_await cpu->exec(costs_.ip_rcv + stack_.frame_read(cpu, p, ETH_HEADER, ETH_HEADER + TCP_IP_HEADERS), Cat::PROTOCOL,
                           kernel::Text::IP_RCV);
        if (owned_) {
            ++st_.backlogged;
            backlog_.push_back(p);
            co_return;
        }
    }
    // trace_tcp_probe at the top of tcp_rcv_established: the state this ACK finds
    if (cpu->tracing()) {
        cpu->trace_instant(kernel::TraceKind::TCP_PROBE, flow_, std::uint64_t{tp_.ssthresh} << 32 | tp_.cwnd,
                          static_cast<std::uint8_t>(ca_state_)); // CaState is enum tcp_ca_state's order
    }
    co_await cpu->exec(costs_.tcp_ack_rcv + cpu->text(kernel::Text::TCP_V4_RCV), Cat::PROTOCOL, kernel::Text::TCP_ACK);
    if (aborted_ || p.ack > snd_nxt_ || p.ack < snd_una_) co_return; // invalid or old ACK
    int flag = 0;
    if (p.window != rwnd_) flag |= FLAG_WIN_UPDATE;
    rwnd_ = p.window; // tcp_ack_update_window
    max_window_ = std::max(max_window_, rwnd_);
    std::uint32_t newly = 0;
    std::optional<engine::Tick> first_sackt, first_ackt, last_ackt;
    const std::uint64_t prior_fack = std::max(highest_sack_, snd_una_);
    std::uint64_t reord = snd_nxt_;
    if (p.sacks) flag |= tcp_sacktag_write_queue(p, newly, first_sackt, reord);
    // as tcp_clean_rtx_queue() (net/ipv4/tcp_input.c)
    if (p.ack > snd_una_) {
        for (std::uint64_t q = snd_una_, n = snd_una_ / mss_; q < p.ack; q += mss_, ++n) {
            const TxSeg g = seg_at(n);
            if (g.sacked & SACKED_ACKED) --sacked_out_;
            else ++newly;
            if (g.sacked & LOST) --lost_out_;
            if (g.sacked & SACKED_RETRANS) --retrans_out_;
            if (g.sacked & EVER_RETRANS) flag |= FLAG_RETRANS_DATA_ACKED;
            else if (!(g.sacked & SACKED_ACKED)) {
                reord = std::min(reord, q);
                if (!first_ackt) first_ackt = g.sent;
                last_ackt = g.sent;
            }
        }
        snd_una_ = p.ack;
        flag |= FLAG_DATA_ACKED | FLAG_SND_UNA_ADVANCED;
        rexmit_hint_ = std::max(rexmit_hint_, snd_una_);
        if (highest_sack_ < snd_una_) highest_sack_ = snd_una_;
    }
    tcp_check_sack_reordering(reord, prior_fack);
    if (flag & FLAG_DATA_SACKED) tcp_mark_lost_retrans();
    // RTT sample (Karn: none from retransmitted data), from the cumulative ACK or the SACKs
    std::int64_t ca_rtt_us = -1;
    std::optional<engine::Tick> sample;
    if (first_ackt && !(flag & FLAG_RETRANS_DATA_ACKED)) sample = cpu->now() - *first_ackt;
    else if (first_sackt) sample = cpu->now() - *first_sackt;
    if (sample) {
        tcp_rtt_estimator(*sample);
        backoff_ = 0; // RFC 6298: only reset backoff on valid RTT measurement
        ca_rtt_us = static_cast<std::int64_t>((last_ackt ? cpu->now() - *last_ackt : *sample) / engine::PS_PER_US);
    }
    if (flag & FLAG_SND_UNA_ADVANCED) {
        tcp_rearm_rto(cpu);
        retransmits_ = 0;
        if (retrans_out_ == 0) retrans_stamp_ = 0;
    }
    const CcClock clk = cc_clock(cpu);
    cc_.pkts_acked(tp_, clk, ca_rtt_us, snd_una_, snd_nxt_);
    // as tcp_ack_is_dubious() (net/ipv4/tcp_input.c)
    const bool dupack = !(flag & (FLAG_SND_UNA_ADVANCED | FLAG_WIN_UPDATE)) && snd_nxt_ > snd_una_;
    if (dupack) ++st_.dupacks;
    bool rexmit = false;
    if (dupack || (flag & FLAG_DATA_SACKED) || ca_state_ != CaState::OPEN) tcp_fastretrans_alert(flag, rexmit);
    // as tcp_cong_control() (net/ipv4/tcp_input.c)
    if (ca_state_ == CaState::RECOVERY || ca_state_ == CaState::CWR) { // tcp_in_cwnd_reduction
        tcp_cwnd_reduction(newly, flag);
    } else if ((flag & FLAG_DATA_ACKED) && newly) {
        // tcp_is_cwnd_limited: limited in this window, or in slow start below twice the most
        // that was out
        const bool limited = is_cwnd_limited_ || (tp_.in_slow_start() && tp_.cwnd < 2 * max_packets_out_);
        if (limited) cc_.cong_avoid(tp_, clk, newly);
    }
    tcp_sndbuf_expand(); // tcp_new_space
    // tcp_data_snd_check: tcp_write_xmit_from's loop in this frame (the same steps, in their
    // order; one coroutine less per ACK that sends)
    XmitStep step = tcp_write_xmit_step();
    for (; step.kind == XmitStep::RETRANSMIT || step.kind == XmitStep::NEW_DATA; step = tcp_write_xmit_step()) {
        const engine::Tick prior_wstamp = wstamp_;
        Packet skb = tcp_write_xmit_skb(cpu, step);
        co_await cpu->exec(costs_.tcp_sendmsg, Cat::PROTOCOL, kernel::Text::TCP_SENDMSG);
        tcp_skb_set_owner_w(skb);
        const bool sent = co_await stack_.ip_output(cpu, skb);
        if (!tcp_write_xmit_sent(cpu, step, skb, prior_wstamp, sent)) break;
    }
    tcp_cwnd_validate(step.kind == XmitStep::STOP_CWND);
    // tcp_check_space -> sk_stream_write_space: the writer wakes once the free space is at
    // least half of what is queued (sk_stream_wspace >= sk_stream_min_wspace)
    const std::uint64_t queued = write_seq_ - snd_una_;
    if (waiter_ && sndbuf_ >= queued + mss_ && sndbuf_ - queued >= queued / 2) {
        kernel::TaskStruct* t = waiter_;
        waiter_ = nullptr;
        co_await kernel::try_to_wake_up(cpu, *t);
    }
}

} // namespace kdsim::net
