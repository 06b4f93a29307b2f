// The sending side's output path and retransmission timer (net/ipv4/tcp.c tcp_sendmsg,
// tcp_output.c tcp_write_xmit / tcp_xmit_retransmit_queue / tcp_transmit_skb, tcp_timer.c
// tcp_write_timer / tcp_retransmit_timer); ACK processing is in tcp_input.cpp.
#include "net/tcp.h"

#include "kernel/irqflags.h"
#include "kernel/preempt.h"
#include "kernel/sched.h"
#include "kernel/softirq.h"
#include "net/sch_fq.h"

#include <algorithm>
#include <limits>
#include <stdexcept>

namespace kdsim::net {

using kernel::Cat;

TcpSource::TcpSource(Stack& stack, const TcpCosts& costs, std::uint64_t window_cap, std::uint32_t mss,
                     std::uint32_t flow, std::uint64_t sndbuf, CongestionAlgorithm cc)
    : stack_(stack), costs_(costs), window_cap_(window_cap), mss_(mss),
      copy_from_user_mss_(per_byte(costs.copy_from_user, mss)), flow_(flow),
      sndbuf_(sndbuf ? sndbuf : 2 * window_cap), rwnd_(window_cap), cc_(cc) {
    std::size_t slots = 1;
    while (slots < sndbuf_ / mss_ + 2) slots <<= 1;
    rtx_.resize(slots);
    max_window_ = rwnd_;
    backlog_.reserve(256);
    rto_timer_.function = &TcpSource::tcp_write_timer;
    rto_timer_.data = this;
    stack_.bind_tcp(flow_, *this);
}

namespace {
// The memory one MSS-sized skb takes from the send buffer (tcp_sndbuf_expand's per_mss:
// roundup_pow_of_two(SKB_TRUESIZE(mss + MAX_TCP_HEADER)) = 4096 for a 1448-byte MSS).
constexpr std::uint64_t PER_MSS_TRUESIZE = 4096;
// An skb's truesize beyond its payload: SKB_TRUESIZE(MAX_TCP_HEADER) on x86-64, 320 bytes of
// head + SKB_DATA_ALIGN(sizeof(struct sk_buff)) 256 + SKB_DATA_ALIGN(sizeof(skb_shared_info)) 320.
constexpr std::uint32_t SKB_OVERHEAD = 896;
constexpr std::uint64_t TCP_LIMIT_OUTPUT_BYTES = 1 << 20; // net.ipv4.tcp_limit_output_bytes
} // namespace

void TcpSource::autotune(const std::array<std::uint64_t, 3>& wmem, std::uint64_t peer_window) {
    sndbuf_auto_ = true;
    window_cap_ = UINT64_MAX;
    rwnd_ = max_window_ = peer_window;
    wmem_max_ = wmem[2];
    sndbuf_ = std::max<std::uint64_t>(wmem[1] * mss_ / PER_MSS_TRUESIZE, mss_);
    std::size_t slots = 1;
    while (slots < wmem_max_ / PER_MSS_TRUESIZE + 2) slots <<= 1;
    rtx_.assign(std::max(slots, rtx_.size()), TxSeg{});
    sndbuf_segs_ = 0;
    tcp_sndbuf_expand(); // tcp_init_buffer_space
}

// The send buffer follows cwnd: twice max(cwnd, TCP_INIT_CWND, reordering + 1) skbs.
// Models: tcp_sndbuf_expand() (net/ipv4/tcp_input.c)
void TcpSource::tcp_sndbuf_expand() {
    if (!sndbuf_auto_) return;
    const std::uint64_t nr_segs = std::max({tp_.cwnd, TCP_INIT_CWND, reordering_ + 1});
    // sndmem grows with nr_segs and sndbuf_ only grows after autotune: no more segments, no change
    if (nr_segs <= sndbuf_segs_) return;
    sndbuf_segs_ = nr_segs;
    const std::uint64_t sndmem = std::min(2 * nr_segs * PER_MSS_TRUESIZE, wmem_max_);
    sndbuf_ = std::max(sndbuf_, sndmem * mss_ / PER_MSS_TRUESIZE);
}

void TcpSource::register_stats(const stats::Scope& s) const {
    s.counter("segments_sent", st_.segments, "count", "segments sent, retransmissions included")
        .counter("skbs_sent", st_.skbs, "count", "skbs handed to IP (a GSO skb carries several segments)")
        .counter("retransmits", st_.retransmits, "count", "segments retransmitted (tcpi_total_retrans)")
        .counter("fast_retransmits", st_.fast_retransmits, "count", "of which in fast recovery (TCPFastRetrans)")
        .counter("rto", st_.rto, "count", "retransmission timeouts (TCPTimeouts)")
        .counter("recoveries", st_.recoveries, "count", "SACK fast recoveries entered (TCPSackRecovery)")
        .counter("sack_blocks", st_.sack_blocks, "count", "SACK blocks received")
        .counter("dupacks", st_.dupacks, "count", "duplicate ACKs received")
        .counter("reorders", st_.reorders, "count", "reordering seen: a segment never retransmitted delivered below a SACK")
        .counter("lost_retransmits", st_.lost_retransmits, "count", "retransmissions found lost (TCPLostRetransmit)")
        .counter("hystart_train_detect", cc_.hystart().train_detect, "count",
                 "slow-start exits by HyStart's ACK-train test (TCPHystartTrainDetect)")
        .counter("hystart_train_cwnd", cc_.hystart().train_cwnd, "segments",
                 "sum of the cwnds the ACK-train test exited at (TCPHystartTrainCwnd)")
        .counter("hystart_delay_detect", cc_.hystart().delay_detect, "count",
                 "slow-start exits by HyStart's delay-increase test (TCPHystartDelayDetect)")
        .counter("hystart_delay_cwnd", cc_.hystart().delay_cwnd, "segments",
                 "sum of the cwnds the delay test exited at (TCPHystartDelayCwnd)")
        .value("reordering", [this] { return static_cast<double>(reordering_); }, "segments",
               "tp->reordering (the duplicate-ACK threshold) at the end of the run")
        .counter("acks_backlogged", st_.backlogged, "count", "ACKs queued to the socket backlog (socket owned)")
        .value("cwnd", [this] { return static_cast<double>(tp_.cwnd); }, "segments", "snd_cwnd at the end of the run")
        .value("ssthresh", [this] { return static_cast<double>(std::min<std::uint32_t>(tp_.ssthresh, 1u << 30)); },
               "segments", "snd_ssthresh at the end of the run")
        .value("sndbuf", [this] { return static_cast<double>(sndbuf_); }, "bytes",
               "data the send buffer may hold at the end of the run (sk_sndbuf net of skb overhead)")
        .value("srtt_us", [this] { return engine::to_us(srtt_); }, "us", "smoothed RTT at the end of the run")
        .value("rto_us", [this] { return engine::to_us(rto_); }, "us", "retransmission timeout at the end of the run");
    if (stack_.has_qdisc()) // under a qdisc layer
        s.counter("qdisc_drops", st_.qdisc_drops, "count", "skbs the local qdisc dropped (NET_XMIT_DROP): left unsent")
            .counter("cwr", st_.cwr, "count", "Congestion Window Reduced entered after a local drop (tcp_enter_cwr)")
            .counter("tsq_throttled", st_.tsq_throttled, "count",
                     "times TSQ stopped tcp_write_xmit: the socket's bytes below it over the limit")
            .value("paced", [this] { return pacing_fq_ ? 1.0 : 0.0; }, "bool",
                   "1: the socket is SK_PACING_FQ (fq paces it by its EDT timestamps)");
}

std::uint64_t tcp_pacing_rate(std::uint64_t segs, std::uint64_t mss, std::uint64_t ratio, engine::Tick srtt) {
    std::uint64_t bytes = 0, scaled = 0;
    if (!__builtin_mul_overflow(segs, mss, &bytes) && !__builtin_mul_overflow(bytes, ratio, &bytes) &&
        !__builtin_mul_overflow(bytes / 100, engine::PS_PER_S, &scaled))
        return scaled / srtt;
    return static_cast<std::uint64_t>(static_cast<unsigned __int128>(segs) * mss * ratio / 100 * engine::PS_PER_S / srtt);
}

std::uint64_t tcp_pacing_segs_max(std::uint64_t mss, std::uint64_t ratio) {
    // segs * mss * ratio <= 100 * floor(UINT64_MAX / 1e12): then neither product overflows
    return 100 * (UINT64_MAX / engine::PS_PER_S) / (mss * ratio);
}

engine::Tick tcp_pacing_srtt_max(std::uint64_t segs, std::uint64_t mss, std::uint64_t ratio, std::uint64_t rate_min) {
    // floor(X / srtt) >= rate_min  <=>  X >= rate_min * srtt  <=>  srtt <= floor(X / rate_min)
    return segs * mss * ratio / 100 * engine::PS_PER_S / rate_min;
}

std::uint32_t tcp_tso_segs(std::uint64_t bytes, std::uint32_t mss, std::uint64_t half_wnd) {
    constexpr std::uint64_t GSO_MAX_SIZE = 65536, MAX_TCP_HEADER = 320;
    std::uint64_t segs = std::max<std::uint64_t>(bytes / mss, 2);
    segs = std::min(segs, (GSO_MAX_SIZE - 1 - MAX_TCP_HEADER) / mss);
    if (half_wnd > 0) segs = std::min(segs, std::max<std::uint64_t>(half_wnd / mss, 1));
    return static_cast<std::uint32_t>(std::max<std::uint64_t>(segs, 1));
}

// tcp_update_pacing_rate: 200% of cwnd * mss / srtt in slow start, 120% after
std::uint64_t TcpSource::pacing_rate() const {
    if (!srtt_) return 0;
    return tcp_pacing_rate(std::max(tp_.cwnd, packets_out()), mss_, tp_.in_slow_start() ? 200 : 120, srtt_);
}

CcClock TcpSource::cc_clock(const kernel::Cpu& cpu) const {
    CcClock c;
    c.jiffies = static_cast<std::uint32_t>(cpu.jiffies());
    c.hz = static_cast<std::uint32_t>(engine::PS_PER_S / cpu.tick_period());
    c.now_us = cpu.now() / engine::PS_PER_US;
    c.pacing_fq = pacing_fq_;
    // HyStart, the rate's one reader, runs only in slow start before it found its exit (pkts_acked's
    // test, on this tp_ and cc_ unchanged): no division for it elsewhere (most ACKs).
    if (tp_.in_slow_start() && !cc_.cubic().found) c.pacing_rate = pacing_rate();
    return c;
}

// iperf3's writer: write() calls of 128 KiB. tcp_sendmsg holds the socket (lock_sock), copies
// each segment's worth into the send queue, pushes what the window allows, and sleeps in
// sk_stream_wait_memory (releasing the socket) when the send buffer is full. A movable writer
// reads its CPU (`cpu`, a ThisCpu of its task) at each use: the copy's caches, the backlog's ACK
// processing in release_sock and the CPU statistics are those of the CPU it runs on then.
// Models: tcp_sendmsg() (net/ipv4/tcp.c)
engine::Task<> TcpSource::send_loop(kernel::Cpu& start, kernel::TaskStruct& self, engine::Tick stop_at) {
    const kernel::ThisCpu cpu = kernel::ThisCpu::of(self, start);
    if (!started_) {
        started_ = true;
        cc_.init(cc_clock(cpu), snd_nxt_); // tcp_init_transfer
    }
    while (cpu->now() < stop_at && !aborted_) {
        co_await kernel::syscall_enter(cpu);
        owned_ = true; // lock_sock
        for (std::uint64_t written = 0; written < WRITE_BLOCK && cpu->now() < stop_at && !aborted_;) {
            if (write_seq_ - snd_una_ + mss_ > sndbuf_) {
                co_await tcp_write_xmit(cpu); // sk_stream_wait_memory: tcp_push what was copied
                co_await release_sock(cpu); // sk_wait_event releases the socket while sleeping
                if (write_seq_ - snd_una_ + mss_ > sndbuf_) {
                    waiter_ = &self;
                    co_await cpu->block();
                }
                owned_ = true;
                continue;
            }
            co_await cpu->exec(tcp_copy_from_user(cpu), Cat::COPY);
            write_seq_ += mss_;
            written += mss_;
            // an skb is pushed when it holds size_goal bytes (tcp_push_one), the rest at the end
            if (write_seq_ - snd_nxt_ >= std::uint64_t{tcp_size_goal()} * mss_ || written >= WRITE_BLOCK)
                co_await tcp_write_xmit(cpu);
            co_await kernel::might_resched(cpu);
        }
        co_await tcp_write_xmit(cpu); // tcp_push
        co_await release_sock(cpu);
        co_await kernel::syscall_exit(cpu);
    }
}

namespace {
constexpr std::uint64_t FRAG_PAGE = 32 * 1024;  // SKB_FRAG_PAGE_ORDER's page
constexpr std::uint64_t FRAG_LEAD = 4096;       // the ring starts past address 0 and its first headers
constexpr std::uint64_t FRAG_TAIL = 64 * 1024;  // an skb read past the wrap (at most GSO_MAX_SIZE)
std::uint64_t round_up(std::uint64_t n, std::uint64_t a) { return (n + a - 1) / a * a; }
} // namespace

std::uint64_t TcpSource::sndbuf_max() const {
    return sndbuf_auto_ ? std::max(sndbuf_, wmem_max_ * mss_ / PER_MSS_TRUESIZE) : sndbuf_;
}

// Without a hierarchy, the profile's copy_from_user per byte (as before issue 12's sender side).
// With one, the next MSS goes at the ring's next offset, wrapping at the send buffer's size (in
// whole pages) of the moment.
// (skb_page_frag_refill, skb_copy_to_page_nocache)
// Models: tcp_sendmsg_locked() (net/ipv4/tcp.c)
Cycles TcpSource::tcp_copy_from_user(kernel::Cpu& cpu) {
    mem::MemorySystem* m = stack_.memory();
    if (!m) return copy_from_user_mss_;
    const std::uint64_t max = round_up(sndbuf_max(), FRAG_PAGE);
    if (frag_ring_ == 0) {
        frag_ring_ = m->alloc(FRAG_LEAD + max + FRAG_TAIL, 4096) + FRAG_LEAD;
        // the ring's SKB_FRAG_PAGE_ORDER pages, for a driver's mapping (page_placement.h)
        if (PagePlacement* pp = stack_.page_placement()) pp->add(frag_ring_, max + FRAG_TAIL, FRAG_PAGE);
        seg_data_.assign(rtx_.size(), 0);
    }
    const std::uint64_t ring = std::min(max, round_up(std::max<std::uint64_t>(sndbuf_, mss_), FRAG_PAGE));
    if (frag_off_ + mss_ > ring) frag_off_ = 0;
    const mem::Addr dst = frag_ring_ + frag_off_;
    frag_off_ += mss_;
    seg_data_[(write_seq_ / mss_) & (seg_data_.size() - 1)] = dst;
    return stack_.copy_from_user(cpu, user_, dst, mss_, costs_.copy_from_user);
}

std::uint64_t TcpSource::next_retransmit() {
    rexmit_hint_ = std::max(rexmit_hint_, snd_una_);
    // __tcp_retransmit_skb: nothing beyond the peer's window, except the head (a window probe)
    const std::uint64_t wnd_end = snd_una_ + std::min(window_cap_, rwnd_);
    for (; rexmit_hint_ < lost_high_; rexmit_hint_ += mss_) {
        if (rexmit_hint_ != snd_una_ && rexmit_hint_ + mss_ > wnd_end) break;
        const std::uint8_t s = seg(rexmit_hint_).sacked;
        if ((s & LOST) && !(s & (SACKED_ACKED | SACKED_RETRANS))) return rexmit_hint_;
    }
    return std::numeric_limits<std::uint64_t>::max();
}

// The tests at the top of tcp_write_xmit's loop, before a send, after cwnd's (tcp.h).
TcpSource::XmitStep TcpSource::tcp_write_xmit_step_open() {
    const std::uint64_t lost = ca_state_ >= CaState::RECOVERY ? next_retransmit() : std::numeric_limits<std::uint64_t>::max();
    if (lost != std::numeric_limits<std::uint64_t>::max()) {
        // as tcp_xmit_retransmit_queue() (net/ipv4/tcp_output.c)
        if (tcp_small_queue_check(mss_ + SKB_OVERHEAD, 1)) return {};
        return {XmitStep::RETRANSMIT, lost};
    }
    const std::uint64_t wnd = std::min(window_cap_, rwnd_);
    if (snd_nxt_ + mss_ > write_seq_ || snd_nxt_ + mss_ - snd_una_ > wnd) return {};
    // one skb of up to size_goal segments, as cwnd (tcp_cwnd_test), the peer's window
    // (tcp_mss_split_point) and what was written allow (tso_fragment cuts the rest off)
    const std::uint64_t segs = std::min({std::uint64_t{tcp_size_goal()}, std::uint64_t{tp_.cwnd - in_flight()},
                                         (write_seq_ - snd_nxt_) / mss_, (snd_una_ + wnd - snd_nxt_) / mss_});
    if (tcp_small_queue_check(static_cast<std::uint32_t>(segs * mss_ + SKB_OVERHEAD), 0)) return {};
    return {XmitStep::NEW_DATA, snd_nxt_, segs};
}

// tcp_write_xmit, preceded by tcp_xmit_retransmit_queue: one segment per loop while
// tcp_packets_in_flight < cwnd, lost segments first, then new data the peer's window allows.
// Each segment is claimed before any cycle is spent, so that the writer and an ACK in softirq
// never send the same bytes.
// Models: tcp_write_xmit() (net/ipv4/tcp_output.c)
MaybeTask TcpSource::tcp_write_xmit(kernel::ThisCpu cpu) {
    const XmitStep step = tcp_write_xmit_step();
    if (step.kind == XmitStep::STOP || step.kind == XmitStep::STOP_CWND) {
        tcp_cwnd_validate(step.kind == XmitStep::STOP_CWND);
        return {};
    }
    return tcp_write_xmit_from(cpu, step);
}

engine::Task<> TcpSource::tcp_write_xmit_from(kernel::ThisCpu cpu, XmitStep step) {
    for (; step.kind == XmitStep::RETRANSMIT || step.kind == XmitStep::NEW_DATA; step = tcp_write_xmit_step()) {
        // tcp_transmit_skb, its awaits in this frame (one coroutine less per skb sent)
        const engine::Tick prior_wstamp = wstamp_;
        Packet skb = tcp_write_xmit_skb(cpu, step);
        co_await cpu->exec(costs_.tcp_sendmsg, Cat::PROTOCOL, kernel::Text::TCP_SENDMSG);
        tcp_skb_set_owner_w(skb);
        const bool sent = co_await stack_.ip_output(cpu, skb);
        if (!tcp_write_xmit_sent(cpu, step, skb, prior_wstamp, sent)) break;
    }
    tcp_cwnd_validate(step.kind == XmitStep::STOP_CWND);
}

Packet TcpSource::tcp_write_xmit_skb(kernel::Cpu& cpu, const XmitStep& step) {
    const std::uint32_t segs = step.kind == XmitStep::RETRANSMIT ? 1 : static_cast<std::uint32_t>(step.segs);
    if (step.kind == XmitStep::RETRANSMIT) tcp_retransmit_claim(cpu, step.seq);
    else tcp_new_data_claim(cpu, step.seq, step.segs);
    return tcp_transmit_skb_build(cpu, step.seq, segs);
}

bool TcpSource::tcp_write_xmit_sent(kernel::Cpu& cpu, XmitStep& step, const Packet& skb, engine::Tick prior_wstamp,
                                    bool sent) {
    if (sent) {
        tcp_update_skb_after_send(skb.len - ETH_HEADER, prior_wstamp);
        return true;
    }
    tcp_transmit_dropped(skb);
    if (step.kind == XmitStep::RETRANSMIT) tcp_retransmit_unclaim(step.seq);
    else tcp_new_data_unclaim(cpu, step.seq, step.segs);
    step.kind = XmitStep::STOP;
    return false;
}

// The lost segment `lost` marked retransmitted before it is sent (tcp_xmit_retransmit_queue).
void TcpSource::tcp_retransmit_claim(kernel::Cpu& cpu, std::uint64_t lost) {
    TxSeg& s = seg(lost);
    s.sacked |= SACKED_RETRANS | EVER_RETRANS;
    s.rexmit_nxt = snd_nxt_;
    ++retrans_out_;
    ++st_.retransmits;
    if (ca_state_ == CaState::RECOVERY) ++st_.fast_retransmits;
    if (!retrans_stamp_) retrans_stamp_ = cpu.now();
    if (ca_state_ == CaState::RECOVERY) ++prr_out_;
    if (lost == snd_una_) tcp_rearm_rto(cpu); // the head's retransmission restarts the timer
}

// The qdisc dropped the retransmission: the segment is still lost, to retransmit.
void TcpSource::tcp_retransmit_unclaim(std::uint64_t lost) {
    TxSeg& s = seg(lost);
    if (!(s.sacked & SACKED_RETRANS)) return; // (SACKed meanwhile)
    s.sacked &= static_cast<std::uint8_t>(~SACKED_RETRANS);
    --retrans_out_;
    --st_.retransmits;
    if (ca_state_ == CaState::RECOVERY) {
        --st_.fast_retransmits;
        --prr_out_;
    }
    rexmit_hint_ = std::min(rexmit_hint_, lost);
}

// `segs` new segments from `seq` claimed (snd_nxt advanced) before any cycle is spent.
void TcpSource::tcp_new_data_claim(kernel::Cpu& cpu, std::uint64_t seq, std::uint64_t segs) {
    if (packets_out() == 0 && ca_state_ == CaState::OPEN) cc_.on_tx_start(cc_clock(cpu), static_cast<std::uint32_t>(cpu.jiffies()));
    for (std::uint64_t i = 0, n = seq / mss_; i < segs; ++i) seg_at(n + i) = TxSeg{};
    snd_nxt_ += segs * mss_;
    if (ca_state_ == CaState::RECOVERY || ca_state_ == CaState::CWR) prr_out_ += static_cast<std::uint32_t>(segs);
    if (!kernel::timer_pending(rto_timer_)) tcp_rearm_rto(cpu);
}

// The qdisc dropped the new skb: it stays in the write queue (tcp_event_new_data_sent not
// called), unless later data was sent meanwhile (from another context): then it is a hole loss
// recovery fills.
void TcpSource::tcp_new_data_unclaim(kernel::Cpu& cpu, std::uint64_t seq, std::uint64_t segs) {
    if (snd_nxt_ != seq + segs * mss_) return;
    snd_nxt_ = seq;
    if (ca_state_ == CaState::RECOVERY || ca_state_ == CaState::CWR) prr_out_ -= static_cast<std::uint32_t>(segs);
    if (packets_out() == 0) { // no ACK will come: tcp_check_probe_timer (ICSK_TIME_PROBE0)
        probe_pending_ = true;
        kernel::mod_timer(cpu, rto_timer_, cpu.now() + rto_);
    }
}

// tcp_transmit_skb (awaited in tcp_write_xmit_from's frame): stamps the skb's segments and
// hands it to IP; tcp_sendmsg's figure (skb, headers, IP output) is charged once per skb. An skb
// of several segments is a GSO skb (gso_size = mss, gso_segs = segs). skb->tstamp is
// tcp_wstamp_ns (EDT); fq, when it first sees the socket, makes it SK_PACING_FQ. A drop by the
// local qdisc enters CWR. This is its part before the tcp_sendmsg exec.
// Models: __tcp_transmit_skb() (net/ipv4/tcp_output.c)
Packet TcpSource::tcp_transmit_skb_build(kernel::Cpu& cpu, std::uint64_t seq, std::uint32_t segs) {
    for (std::uint64_t i = 0, n = seq / mss_; i < segs; ++i) seg_at(n + i).sent = cpu.now();
    Packet p = transport_packet(FrameKind::TCP_DATA, segs * mss_, TCP_IP_HEADERS, seq, flow_);
    if (!seg_data_.empty()) // the frame convention: the payload follows the headers
        p.data = seg_data_[(seq / mss_) & (seg_data_.size() - 1)] - TCP_IP_HEADERS - ETH_HEADER;
    if (segs > 1) {
        p.gso_segs = segs;
        p.gso_size = mss_;
    }
    wstamp_ = std::max(wstamp_, cpu.now());
    p.tstamp = wstamp_;
    st_.segments += segs;
    ++st_.skbs;
    data_segs_out_ += segs;
    if (kernel::in_interrupt(cpu.preempt_count())) st_.softirq_segments += segs; // softirq or BH disabled
    return p;
}

// After the tcp_sendmsg exec, before ip_output: fq_classify's first look, skb_set_owner_w.
void TcpSource::tcp_skb_set_owner_w(Packet& p) {
    if (!pacing_checked_) { // fq_classify: a pacing fq makes its sockets SK_PACING_FQ
        pacing_checked_ = true;
        const Qdisc* q = stack_.qdisc_for(p);
        const auto* fq = dynamic_cast<const Fq*>(q);
        pacing_fq_ = fq && fq->pacing();
        tsq_on_ = q != nullptr;
    }
    if (tsq_on_) p.truesize = p.payload + SKB_OVERHEAD; // skb_set_owner_w
    wmem_alloc_ += p.truesize;
}

// ip_output returned NET_XMIT_DROP: kfree_skb of the clone, the skb not sent; CWR.
void TcpSource::tcp_transmit_dropped(const Packet& p) {
    wmem_alloc_ -= p.truesize; // kfree_skb of the dropped clone: tcp_wfree
    st_.segments -= p.gso_segs;
    --st_.skbs;
    data_segs_out_ -= p.gso_segs;
    ++st_.qdisc_drops;
    tcp_enter_cwr();
}

// Models: tcp_update_skb_after_send() (net/ipv4/tcp_output.c)
void TcpSource::tcp_update_skb_after_send(std::uint32_t len, engine::Tick prior_wstamp) {
    if (!pacing_fq_ || data_segs_out_ < 10) return; // sch_fq did not pace the first 10 MSS
    const std::uint64_t rate = pacing_rate();
    if (rate == 0) return;
    std::uint64_t len_ns = std::uint64_t{len} * 1'000'000'000 / rate;
    const std::uint64_t credit = (wstamp_ - prior_wstamp) / engine::PS_PER_NS;
    len_ns -= std::min(len_ns / 2, credit); // OS jitter
    wstamp_ += len_ns * engine::PS_PER_NS;
}

// Models: tcp_small_queue_check() (net/ipv4/tcp_output.c)
bool TcpSource::tcp_small_queue_check(std::uint32_t truesize, unsigned factor) {
    if (!tsq_on_) return false;
    const std::uint64_t rate = pacing_rate(); // 0 before an RTT sample: ~0UL
    std::uint64_t limit = rate ? std::max<std::uint64_t>(2ULL * truesize, rate >> 10) : ~std::uint64_t{0} >> 1;
    if (!pacing_fq_) limit = std::min<std::uint64_t>(limit, TCP_LIMIT_OUTPUT_BYTES);
    limit <<= factor;
    if (wmem_alloc_ <= limit) return false;
    if (packets_out() == 0) return false; // the rtx queue empty: always send
    if (!tsq_throttled_) ++st_.tsq_throttled;
    tsq_throttled_ = true;
    return true;
}

// Models: tcp_wfree() (net/ipv4/tcp_output.c)
void TcpSource::tcp_wfree(kernel::Cpu& cpu, std::uint32_t truesize) {
    wmem_alloc_ -= truesize;
    if (!tsq_throttled_) return;
    tsq_throttled_ = false;
    stack_.tsq_schedule(cpu, *this);
}

// Deferred to release_sock while the writer owns the socket (TCP_TSQ_DEFERRED).
// Models: tcp_tsq_handler() (net/ipv4/tcp_output.c)
engine::Task<> TcpSource::tcp_tsq_handler(kernel::Cpu& cpu) {
    if (owned_) tsq_deferred_ = true;
    else co_await tcp_write_xmit(cpu);
}

// Models: tcp_enter_cwr(), tcp_init_cwnd_reduction() (net/ipv4/tcp_input.c)
void TcpSource::tcp_enter_cwr() {
    if (ca_state_ >= CaState::CWR) return;
    ++st_.cwr;
    high_seq_ = snd_nxt_;
    prior_cwnd_ = tp_.cwnd;
    prr_delivered_ = prr_out_ = 0;
    tp_.ssthresh = cc_.ssthresh(tp_);
    ca_state_ = CaState::CWR;
}

inline TcpSource::SizeGoalKey TcpSource::size_goal_key() const {
    return {srtt_, std::min(window_cap_, max_window_) / 2, std::max(tp_.cwnd, packets_out()), mss_, tp_.in_slow_start()};
}

// The segments of one skb: 1 without GSO; else tcp_tso_autosize's pacing-rate goal (the bytes of
// 1 ms at sk_pacing_rate, plus gso_max_size >> (min RTT in units of 512 us: tcp_tso_rtt_log 9),
// at most gso_max_size = 64 KiB, at least tcp_min_tso_segs = 2), bounded by the 64 KiB less
// MAX_TCP_HEADER a GSO skb may hold and by half the peer's largest window
// (tcp_bound_to_half_wnd). The smoothed RTT stands in for the minimum RTT.
// Models: tcp_tso_autosize() (net/ipv4/tcp_output.c)
inline std::uint32_t TcpSource::tcp_size_goal() const {
    if (!stack_.can_gso()) return 1;
    if (size_goal_held_.holds(size_goal_key())) [[likely]] return size_goal_;
    return tcp_size_goal_update();
}

// The goal for size_goal_key(), held for these inputs; a goal at its ceiling (the goal of GSO_MAX_SIZE
// bytes) also for every srtt in [1, srtt_max] and segs in [segs, segs_max]: there the pacing
// rate's bytes alone, at least ceiling * mss, give the ceiling (tcp_tso_segs does not decrease).
std::uint32_t TcpSource::tcp_size_goal_update() const {
    const SizeGoalKey key = size_goal_key();
    constexpr std::uint64_t GSO_MAX_SIZE = 65536;
    std::uint64_t bytes = pacing_rate() >> 10; // sk_pacing_shift
    const std::uint64_t r = engine::to_us(srtt_) > 0 ? static_cast<std::uint64_t>(engine::to_us(srtt_)) >> 9 : 0;
    if (r < 32) bytes += GSO_MAX_SIZE >> r;
    size_goal_ = tcp_tso_segs(std::min(bytes, GSO_MAX_SIZE), mss_, key.half_wnd);
    SizeGoalHeld held{key.srtt, 0, key.half_wnd, key.segs, 0, key.mss, key.slow_start};
    const std::uint32_t ceiling = tcp_tso_segs(GSO_MAX_SIZE, mss_, key.half_wnd);
    const std::uint64_t ratio = key.slow_start ? 200 : 120; // pacing_rate's
    const std::uint64_t segs_max = std::min<std::uint64_t>(tcp_pacing_segs_max(mss_, ratio), UINT32_MAX);
    if (size_goal_ == ceiling && key.segs <= segs_max) {
        const engine::Tick srtt_max = tcp_pacing_srtt_max(key.segs, mss_, ratio, std::uint64_t{ceiling} * mss_ << 10);
        if (key.srtt >= 1 && key.srtt <= srtt_max) {
            held.srtt_lo = 1;
            held.srtt_span = srtt_max - 1;
            held.segs_span = static_cast<std::uint32_t>(segs_max - key.segs);
        }
    }
    size_goal_held_ = held;
    return size_goal_;
}

// Models: tcp_rearm_rto() (net/ipv4/tcp_input.c)
void TcpSource::tcp_rearm_rto(kernel::Cpu& cpu) {
    if (snd_nxt_ == snd_una_) kernel::del_timer(rto_timer_);
    else kernel::mod_timer(cpu, rto_timer_, cpu.now() + rto_);
}

// Models: release_sock() (net/core/sock.c)
engine::Task<> TcpSource::release_sock(kernel::ThisCpu cpu) {
    while (backlog_head_ < backlog_.size()) {
        const Packet a = backlog_[backlog_head_++];
        co_await tcp_ack(cpu, a);
    }
    backlog_.clear();
    backlog_head_ = 0;
    if (write_timer_deferred_) { // tcp_release_cb
        write_timer_deferred_ = false;
        co_await tcp_retransmit_timer(cpu);
    }
    if (tsq_deferred_) { // tcp_release_cb: tcp_tsq_write
        tsq_deferred_ = false;
        co_await tcp_write_xmit(cpu);
    }
    owned_ = false;
}

// The retransmission timer in TIMER_SOFTIRQ: deferred to release_sock while the writer owns
// the socket.
// Models: tcp_write_timer() (net/ipv4/tcp_timer.c)
engine::Task<> TcpSource::tcp_write_timer(kernel::Cpu& cpu, kernel::TimerList& t) {
    auto& s = *static_cast<TcpSource*>(t.data);
    co_await cpu.exec(s.costs_.tcp_ack_rcv, Cat::PROTOCOL);
    if (s.owned_) s.write_timer_deferred_ = true;
    else co_await s.tcp_retransmit_timer(cpu);
}

// RTO: after tcp_retries2 timeouts' worth of time the connection is aborted (tcp_write_err);
// else everything unSACKed is lost (tcp_enter_loss), the head is retransmitted and the timeout
// doubles, up to TCP_RTO_MAX.
// Models: tcp_retransmit_timer() (net/ipv4/tcp_timer.c)
engine::Task<> TcpSource::tcp_retransmit_timer(kernel::ThisCpu cpu) {
    if (probe_pending_) { // the probe timer after a local drop: tcp_probe_timer -> tcp_write_wakeup
        probe_pending_ = false;
        if (snd_nxt_ == snd_una_ && !aborted_) {
            co_await tcp_write_xmit(cpu);
            co_return;
        }
    }
    if (snd_nxt_ == snd_una_ || aborted_) co_return;
    // tcp_write_timeout / retransmits_timed_out: ((2 << 9) - 1) * 200 ms + (15 - 9) * 120 s
    if (retrans_stamp_) {
        const engine::Tick limit = 1023 * TCP_RTO_MIN + (TCP_RETRIES2 - 9) * TCP_RTO_MAX;
        if (cpu->now() - retrans_stamp_ >= limit) {
            aborted_ = true;
            cpu->report_finding(stats::FindingKind::LOST_DATA, "the network: every retransmission was lost",
                               "TCP flow " + std::to_string(flow_) + ": " + std::to_string(write_seq_ - snd_una_) +
                                   " bytes written, never acknowledged; the connection timed out (tcp_retries2)",
                               "tcp_write_timeout");
            kernel::del_timer(rto_timer_);
            if (waiter_) {
                kernel::TaskStruct* w = waiter_;
                waiter_ = nullptr;
                co_await kernel::try_to_wake_up(cpu, *w); // the writer sees ETIMEDOUT
            }
            co_return;
        }
    }
    ++st_.rto;
    tcp_enter_loss();
    cc_.on_loss_state(cc_clock(cpu), snd_nxt_);
    ++retransmits_;
    ++backoff_;
    rto_ = std::min(rto_ << 1, TCP_RTO_MAX);
    kernel::mod_timer(cpu, rto_timer_, cpu->now() + rto_);
    co_await tcp_write_xmit(cpu); // the head first: it is the lowest lost segment
}

} // namespace kdsim::net
