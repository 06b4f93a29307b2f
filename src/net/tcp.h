// An established TCP bulk stream as Linux runs it (net/ipv4/tcp_output.c, tcp_input.c,
// tcp_timer.c, tcp_recovery.c), reduced to what a bulk transfer exercises.
// Sender: the writer copies into the send queue (up to sndbuf ahead of what was acknowledged) in
// write() calls of 128 KiB holding the socket lock; tcp_write_xmit sends what
// min(cwnd, peer's window) allows, retransmissions first, from the writer (tcp_push), from ACK
// processing in NET_RX, or from release_sock's backlog. Every segment keeps its state in a
// preallocated ring (the retransmit queue's TCPCB_* bits and send time). tcp_ack marks SACKed
// segments, frees what is cumulatively ACKed, samples the RTT (RFC 6298 estimator, Karn's rule),
// and tcp_fastretrans_alert enters recovery on 3 duplicate ACKs / 3 SACKed segments (RFC 6675:
// a hole with 3 SACKed segments above it is lost), retransmits lost holes with PRR reducing cwnd
// to ssthresh; the retransmission timer (RTO, min 200 ms, exponential backoff) marks everything
// lost and restarts from cwnd 1 (tcp_enter_loss). Congestion control: tcp_cc.h.
// Receiver: tcp_rcv_established queues in-order data for the reader and out-of-order data in
// the ofo queue, with SACK blocks in its ACKs (most recent first), ACKs every second full segment
// (at once in quick-ack mode, with an ofo queue or for a duplicate), else within the delayed-ACK
// timeout; the reader copies to user space in order, each byte exactly once (checked: anything
// else is a lost-data finding), and sends a window update when the window had closed.
// A GRO skb (net/gro.h) is taken as the segments it was built from: queued per segment, counted
// in InSegs per segment, and ACKed at once when it holds two or more full segments.
// Under fq (net/sch_fq.h) the socket is SK_PACING_FQ: each skb carries its earliest departure
// time (tcp_wstamp_ns, advanced by len / sk_pacing_rate after each skb but the first 10
// segments), fq holds it until then, and HyStart allows for the pacing. A local drop by the
// qdisc (NET_XMIT_DROP) leaves the skb unsent and enters CWR (tcp_enter_cwr). Under a qdisc
// layer TSQ bounds what the socket has below it: sk_wmem_alloc (skb truesize, released by the
// driver's tx completion) may not exceed max(2 truesize, sk_pacing_rate >> 10) (and 1 MiB,
// tcp_limit_output_bytes, unless SK_PACING_FQ); the tsq tasklet resumes tcp_write_xmit.
// With a memory hierarchy (Stack::memory) the writer's copy (skb_copy_to_page_nocache) reads the
// user buffer and writes the skb's page frags, which lie in a ring the size of the send buffer:
// sk_page_frag's 32 KiB pages (SKB_FRAG_PAGE_ORDER) are freed once their data is ACKed and the
// per-CPU page lists hand the last freed one out first (skb_page_frag_refill), so the next byte
// written reuses the memory of about one send queue earlier; the queue is the send buffer for a
// bulk writer (it sleeps in sk_stream_wait_memory). Each skb's data is its payload's address; a
// GSO skb's payload is taken as one run (an skb crossing the ring's wrap reads past it).
// Not modelled: timestamps (RTT comes from send times), D-SACK and undo, RACK-TLP, internal
// pacing (SK_PACING_NEEDED), TSQ without a qdisc layer, the handshake (the connection is
// established at the start).
#pragma once

#include "engine/task.h"
#include "kernel/cpu.h"
#include "kernel/this_cpu.h"
#include "kernel/timer.h"
#include "net/net_costs.h"
#include "net/stack.h"
#include "net/tcp_cc.h"

#include <array>
#include <cstdint>
#include <stdexcept>
#include <vector>

namespace kdsim::net {

// A Task or none: awaiting it awaits the Task, or does nothing when there is none (a call whose
// path had nothing to await, done when it returned). Not an aggregate: GCC 12 destroys an
// aggregate awaitable's members twice when its await_resume throws (tcp_test.cpp's MaybeTask test).
class [[nodiscard]] MaybeTask {
public:
    MaybeTask() = default;
    MaybeTask(engine::Task<> t) : task(std::move(t)) {} // NOLINT(google-explicit-constructor)
    bool await_ready() const noexcept { return !task.valid(); }
    std::coroutine_handle<> await_suspend(std::coroutine_handle<> h) noexcept {
        return std::move(task).operator co_await().await_suspend(h);
    }
    void await_resume() {
        if (task.valid()) std::move(task).operator co_await().await_resume();
    }

private:
    engine::Task<> task;
};

inline constexpr std::uint32_t TCP_MSS = 1448;       // 1500 - 20 (IP) - 32 (TCP with timestamps)
inline constexpr std::uint32_t TCP_IP_HEADERS = 52;  // IPv4 20 + TCP with timestamps 32
inline constexpr std::uint32_t TCP_FRAME = TCP_MSS + TCP_IP_HEADERS + ETH_HEADER; // 1514
inline constexpr std::uint32_t TCP_ACK_FRAME = 66;
// The MSS of a route with this MTU.
constexpr std::uint32_t tcp_mss_for_mtu(std::uint32_t mtu) { return mtu - TCP_IP_HEADERS; }

// tcp_update_pacing_rate's sk_pacing_rate, bytes/s: `ratio` % (200 in slow start, else 120) of
// segs * mss per smoothed RTT, floor((floor(segs * mss * ratio / 100)) * 1e12 / srtt), srtt in
// picoseconds (> 0). In 64-bit arithmetic when no product overflows, else in 128-bit: the same
// value either way.
std::uint64_t tcp_pacing_rate(std::uint64_t segs, std::uint64_t mss, std::uint64_t ratio, engine::Tick srtt);
// The most segments for which tcp_pacing_rate takes its 64-bit path (no product overflows).
std::uint64_t tcp_pacing_segs_max(std::uint64_t mss, std::uint64_t ratio);
// The largest srtt (ps) at which tcp_pacing_rate(segs, mss, ratio, srtt) >= rate_min (> 0), for
// `segs` up to tcp_pacing_segs_max(mss, ratio): floor(X / rate_min), X the rate's dividend. The
// rate falls as srtt grows and grows with segs: the bound holds at any srtt below and more segs.
engine::Tick tcp_pacing_srtt_max(std::uint64_t segs, std::uint64_t mss, std::uint64_t ratio, std::uint64_t rate_min);
// tcp_tso_autosize's segments from its byte goal `bytes` (at most GSO_MAX_SIZE): bytes / mss, at
// least 2 (tcp_min_tso_segs), at most what a 64 KiB GSO skb less MAX_TCP_HEADER holds, at most
// half the peer's largest window `half_wnd` in segments (at least 1; 0: no bound), at least 1.
// Non-decreasing in `bytes`.
std::uint32_t tcp_tso_segs(std::uint64_t bytes, std::uint32_t mss, std::uint64_t half_wnd);

// include/net/tcp.h timing constants.
inline constexpr engine::Tick TCP_RTO_MIN = 200 * engine::PS_PER_MS;
inline constexpr engine::Tick TCP_RTO_MAX = 120 * engine::PS_PER_S;
inline constexpr engine::Tick TCP_TIMEOUT_INIT = engine::PS_PER_S;
inline constexpr engine::Tick TCP_ATO_MIN = 40 * engine::PS_PER_MS; // HZ / 25: delayed-ACK timeout
inline constexpr std::uint32_t TCP_REORDERING = 3;   // sysctl_tcp_reordering
inline constexpr std::uint32_t TCP_MAX_REORDERING = 300; // sysctl_tcp_max_reordering
inline constexpr std::uint32_t TCP_RETRIES2 = 15;    // sysctl_tcp_retries2
inline constexpr std::uint32_t TCP_MAX_QUICKACKS = 16;

// A power-of-two ring of fixed capacity: the hot path never allocates.
template <class T>
class SegRing {
public:
    explicit SegRing(std::size_t min_capacity) {
        std::size_t c = 1;
        while (c < min_capacity) c <<= 1;
        v_.resize(c);
        mask_ = c - 1;
    }
    bool empty() const { return n_ == 0; }
    std::size_t size() const { return n_; }
    std::size_t capacity() const { return mask_ + 1; }
    T& front() { return v_[head_]; }
    T& operator[](std::size_t i) { return v_[(head_ + i) & mask_]; }
    void push_back(const T& x) {
        if (n_ > mask_) throw std::length_error("tcp: segment ring full"); // a model bug
        v_[(head_ + n_) & mask_] = x;
        ++n_;
    }
    void pop_front() {
        head_ = (head_ + 1) & mask_;
        --n_;
    }

private:
    std::vector<T> v_;
    std::size_t mask_ = 0; // capacity - 1 (v_.size() without its division by sizeof(T))
    std::size_t head_ = 0, n_ = 0;
};

// The per-socket counters of a sender (as nstat's TcpExt figures, per flow).
struct TcpSenderStats {
    std::uint64_t retransmits = 0;      // segments retransmitted (tcpi_total_retrans)
    std::uint64_t fast_retransmits = 0; // of which in fast recovery (TCPFastRetrans)
    std::uint64_t rto = 0;              // retransmission timeouts (TCPTimeouts)
    std::uint64_t recoveries = 0;       // fast recoveries entered (TCPSackRecovery)
    std::uint64_t sack_blocks = 0;      // SACK blocks received (TCPSACKDiscard aside)
    std::uint64_t dupacks = 0;          // duplicate ACKs received
    std::uint64_t reorders = 0;         // reordering seen (tp->reord_seen)
    std::uint64_t lost_retransmits = 0; // retransmissions found lost (TCPLostRetransmit)
    std::uint64_t segments = 0;         // segments sent, retransmissions included
    std::uint64_t skbs = 0;             // skbs handed to IP (a GSO skb holds several segments)
    std::uint64_t softirq_segments = 0; // of which in softirq or with BH disabled
    std::uint64_t backlogged = 0;       // ACKs queued to the socket backlog
    std::uint64_t qdisc_drops = 0;      // skbs the local qdisc dropped (NET_XMIT_DROP: not sent)
    std::uint64_t cwr = 0;              // CWR entered after a local drop (tcp_enter_cwr)
    std::uint64_t tsq_throttled = 0;    // tcp_write_xmit stopped by TSQ (TSQ_THROTTLED set)
};

class TcpSource final : public TcpEndpoint {
public:
    TcpSource(Stack& stack, const TcpCosts& costs, std::uint64_t window_cap, std::uint32_t mss = TCP_MSS,
              std::uint32_t flow = 0, std::uint64_t sndbuf = 0 /* 0: twice the window */,
              CongestionAlgorithm cc = CongestionAlgorithm::CUBIC);
    // No SO_SNDBUF: the send buffer starts at tcp_wmem[1] and grows with cwnd up to tcp_wmem[2]
    // (tcp_sndbuf_expand); no cap on the window but the peer's, whose first advertisement
    // (the SYN-ACK's) is `peer_window`. Call before the run.
    void autotune(const std::array<std::uint64_t, 3>& wmem, std::uint64_t peer_window);
    std::uint64_t sndbuf() const { return sndbuf_; }
    // The sender task's body: writes segments as fast as the window allows until `stop_at`. It
    // starts on `cpu`; a task `self` with several allowed CPUs takes its CPU from itself after
    // every await where it can be preempted or sleep (kernel/this_cpu.h), a pinned one stays.
    engine::Task<> send_loop(kernel::Cpu& cpu, kernel::TaskStruct& self, engine::Tick stop_at);
    engine::Task<> tcp_rcv(kernel::Cpu& cpu, const Packet& p) override;
    void register_stats(const stats::Scope& s) const override;
    void tcp_wfree(kernel::Cpu& cpu, std::uint32_t truesize) override;
    engine::Task<> tcp_tsq_handler(kernel::Cpu& cpu) override;

    std::uint64_t bytes_acked() const { return snd_una_; }
    std::uint64_t bytes_written() const { return write_seq_; }
    std::uint64_t segments_sent() const { return st_.segments; }
    std::uint64_t segments_sent_in_bh() const { return st_.softirq_segments; }
    std::uint64_t backlogged_acks() const { return st_.backlogged; }
    const TcpSenderStats& stats() const { return st_; }
    std::uint32_t cwnd() const { return tp_.cwnd; }
    std::uint32_t ssthresh() const { return tp_.ssthresh; }
    engine::Tick rto() const { return rto_; }
    engine::Tick srtt() const { return srtt_; }
    // The connection was aborted: retransmissions exhausted (tcp_retries2), its data lost.
    bool aborted() const { return aborted_; }
    const CongestionControl& cc() const { return cc_; }

private:
    static constexpr std::uint64_t WRITE_BLOCK = 128 * 1024; // iperf3's default TCP write size
    enum class CaState : std::uint8_t { OPEN, DISORDER, CWR, RECOVERY, LOSS };
    enum : std::uint8_t { SACKED_ACKED = 1, SACKED_RETRANS = 2, LOST = 4, EVER_RETRANS = 0x80 };
    struct TxSeg {
        engine::Tick sent = 0;
        std::uint64_t rexmit_nxt = 0; // snd_nxt when last retransmitted (TCP_SKB_CB(skb)->ack_seq)
        std::uint8_t sacked = 0;      // TCPCB_* bits
    };
    // tcp.cpp (output)
    // tcp_write_xmit's loop at its top: its tests before a send, in their order (TSQ's may set
    // TSQ_THROTTLED). STOP and STOP_CWND end the loop (STOP_CWND: cwnd limited it); RETRANSMIT
    // sends the lost segment `seq`, NEW_DATA an skb of `segs` new segments from `seq`.
    struct XmitStep {
        enum Kind : std::uint8_t { STOP, STOP_CWND, RETRANSMIT, NEW_DATA } kind = STOP;
        std::uint64_t seq = 0, segs = 0;
    };
    // Its first tests inline (most calls end there: the writer's after each MSS and the ACK's
    // after its sends find cwnd full), the others in tcp_write_xmit_step_open.
    XmitStep tcp_write_xmit_step() {
        if (aborted_) return {};
        if (in_flight() >= tp_.cwnd) return {XmitStep::STOP_CWND};
        return tcp_write_xmit_step_open();
    }
    XmitStep tcp_write_xmit_step_open();
    // To be awaited at once: when the loop's first step sends nothing (most calls: an ACK that
    // opens no room) tcp_write_xmit is done when called and there is no Task to await (a run
    // with no await is the same with or without a frame); else the loop's Task from that step.
    MaybeTask tcp_write_xmit(kernel::ThisCpu cpu);
    engine::Task<> tcp_write_xmit_from(kernel::ThisCpu cpu, XmitStep step);
    // The loop's steps around tcp_transmit_skb's two awaits (the tcp_sendmsg exec, ip_output), for
    // tcp_write_xmit_from and for tcp_ack, which runs the loop in its own frame: the step's
    // segments claimed and its skb built; then, `sent` being ip_output's result, the pacing clock
    // advanced, or on NET_XMIT_DROP the claim undone and `step` made STOP (false: the loop ends).
    Packet tcp_write_xmit_skb(kernel::Cpu& cpu, const XmitStep& step);
    bool tcp_write_xmit_sent(kernel::Cpu& cpu, XmitStep& step, const Packet& skb, engine::Tick prior_wstamp, bool sent);
    void tcp_retransmit_claim(kernel::Cpu& cpu, std::uint64_t lost);
    void tcp_retransmit_unclaim(std::uint64_t lost);
    void tcp_new_data_claim(kernel::Cpu& cpu, std::uint64_t seq, std::uint64_t segs);
    void tcp_new_data_unclaim(kernel::Cpu& cpu, std::uint64_t seq, std::uint64_t segs);
    // Whether cwnd limited the flow in this window (inline: called after every tcp_write_xmit loop).
    // Models: tcp_cwnd_validate() (net/ipv4/tcp_output.c)
    void tcp_cwnd_validate(bool cwnd_limited) {
        if (snd_una_ >= cwnd_usage_seq_ || cwnd_limited || packets_out() > max_packets_out_) {
            max_packets_out_ = packets_out();
            cwnd_usage_seq_ = snd_nxt_;
            is_cwnd_limited_ = cwnd_limited;
        }
    }
    // tcp_transmit_skb's steps around its tcp_sendmsg exec and ip_output (tcp_write_xmit_from
    // awaits both): the skb, its owner, and on NET_XMIT_DROP the undo (the segments not sent).
    Packet tcp_transmit_skb_build(kernel::Cpu& cpu, std::uint64_t seq, std::uint32_t segs);
    void tcp_skb_set_owner_w(Packet& p);
    void tcp_transmit_dropped(const Packet& p);
    void tcp_enter_cwr(); // a local drop: cwnd reduced as for ECN (Congestion Window Reduced)
    // TSQ: true when the bytes this socket has in the qdisc and the ring exceed its limit for
    // an skb of `truesize` (then TSQ_THROTTLED: tcp_wfree reschedules the socket).
    bool tcp_small_queue_check(std::uint32_t truesize, unsigned factor);
    // The EDT pacing of SK_PACING_FQ: the next skb's departure after one of `len` bytes left.
    void tcp_update_skb_after_send(std::uint32_t len, engine::Tick prior_wstamp);
    // tcp_tso_autosize's segments per skb (1 without GSO); kept while its inputs stay the same
    // (it is asked for at every MSS written). The inputs' test is inline in tcp.cpp, the goal's
    // computation for new inputs (tcp_size_goal_update) out of line.
    std::uint32_t tcp_size_goal() const;
    // The copy of the next MSS into the send queue: its cycles (and, with a hierarchy, its place).
    Cycles tcp_copy_from_user(kernel::Cpu& cpu);
    // The most payload the send buffer may hold (its ring's size, with a hierarchy).
    std::uint64_t sndbuf_max() const;
    std::uint64_t next_retransmit(); // the lowest lost, not retransmitted segment; UINT64_MAX: none
    engine::Task<> release_sock(kernel::ThisCpu cpu);
    void tcp_rearm_rto(kernel::Cpu& cpu);
    static engine::Task<> tcp_write_timer(kernel::Cpu& cpu, kernel::TimerList& t);
    engine::Task<> tcp_retransmit_timer(kernel::ThisCpu cpu);
    // tcp_input.cpp
    // `rcv`: from tcp_rcv, whose ip_rcv and backlog check come first; else from the backlog.
    engine::Task<> tcp_ack(kernel::ThisCpu cpu, const Packet& p, bool rcv = false);
    int tcp_sacktag_write_queue(const Packet& p, std::uint32_t& newly_sacked, std::optional<engine::Tick>& first_sackt,
                                std::uint64_t& reord);
    void tcp_fastretrans_alert(int flag, bool& rexmit);
    void tcp_mark_lost(); // RFC 6675 IsLost: unsacked segments with >= reordering SACKed above
    void tcp_mark_lost_retrans();
    void tcp_check_sack_reordering(std::uint64_t low_seq, std::uint64_t prior_fack);
    void tcp_enter_recovery();
    void tcp_enter_loss();
    void tcp_cwnd_reduction(std::uint32_t newly_acked_sacked, int flag);
    void tcp_rtt_estimator(engine::Tick rtt);
    void tcp_sndbuf_expand();
    CcClock cc_clock(const kernel::Cpu& cpu) const;
    std::uint64_t pacing_rate() const; // cc_clock's pacing_rate alone (0 before an RTT sample)

    // tcp_size_goal's inputs besides GSO (the pacing rate's, the window's half, the MSS)
    struct SizeGoalKey {
        engine::Tick srtt = 0;
        std::uint64_t half_wnd = 0;
        std::uint32_t segs = 0; // max(cwnd, packets_out)
        std::uint32_t mss = 0;
        bool slow_start = false;
    };
    // The inputs for which the last goal computed holds: its window's half, MSS and slow start,
    // srtt and segs each within [lo, lo + span] (the inputs it was computed from alone, or, for a
    // goal at the most GSO and the window allow, every srtt and segs whose pacing rate gives it).
    struct SizeGoalHeld {
        engine::Tick srtt_lo = 0, srtt_span = 0; // srtt - srtt_lo <= srtt_span
        std::uint64_t half_wnd = 0;
        std::uint32_t segs_lo = 0, segs_span = 0;
        std::uint32_t mss = 0; // 0: nothing computed yet
        bool slow_start = false;
        bool holds(const SizeGoalKey& k) const {
            return k.srtt - srtt_lo <= srtt_span && k.segs - segs_lo <= segs_span && k.half_wnd == half_wnd &&
                   k.mss == mss && k.slow_start == slow_start;
        }
    };
    SizeGoalKey size_goal_key() const;
    mutable SizeGoalHeld size_goal_held_;
    mutable std::uint32_t size_goal_ = 0;
    std::uint32_t tcp_size_goal_update() const; // the goal for size_goal_key(), held

    TxSeg& seg(std::uint64_t seq) { return seg_at(seq / mss_); }
    // The slot of segment number `n` (seq / mss): a run of segments from one division, as
    // (seq + i * mss) / mss is seq / mss + i.
    TxSeg& seg_at(std::uint64_t n) { return rtx_[n & (rtx_.size() - 1)]; }
    std::uint32_t packets_out() const { return static_cast<std::uint32_t>((snd_nxt_ - snd_una_) / mss_); }
    // tcp_packets_in_flight: sent, minus SACKed or lost, plus retransmitted
    std::uint32_t in_flight() const { return packets_out() - (sacked_out_ + lost_out_) + retrans_out_; }

    Stack& stack_;
    TcpCosts costs_;
    std::uint64_t window_cap_;
    std::uint32_t mss_;
    Cycles copy_from_user_mss_; // per_byte(costs_.copy_from_user, mss_): one MSS's copy without a hierarchy
    std::uint32_t flow_;
    std::uint64_t sndbuf_; // bytes of data the send queue may hold
    bool sndbuf_auto_ = false;
    std::uint64_t wmem_max_ = 0;
    std::uint64_t sndbuf_segs_ = 0; // the most skbs tcp_sndbuf_expand sized sndbuf_ for since autotune
    std::uint64_t snd_una_ = 0, snd_nxt_ = 0, write_seq_ = 0, rwnd_;
    std::uint64_t max_window_ = 0; // the largest window the peer advertised (tp->max_window)
    // congestion state
    TcpCwnd tp_;
    CongestionControl cc_;
    CaState ca_state_ = CaState::OPEN;
    std::uint64_t high_seq_ = 0;
    std::uint32_t prior_cwnd_ = 0, prr_delivered_ = 0, prr_out_ = 0;
    bool is_cwnd_limited_ = false;
    std::uint32_t max_packets_out_ = 0;
    std::uint64_t cwnd_usage_seq_ = 0;
    // scoreboard (in segments)
    std::vector<TxSeg> rtx_;
    std::uint32_t sacked_out_ = 0, lost_out_ = 0, retrans_out_ = 0;
    std::uint64_t highest_sack_ = 0; // end of the highest SACKed segment
    std::uint64_t lost_high_ = 0;    // end of the highest segment marked lost
    std::uint64_t rexmit_hint_ = 0;  // no lost, unretransmitted segment below this
    std::uint32_t reordering_ = TCP_REORDERING; // tp->reordering: the duplicate-ACK threshold
    // RTT and the retransmission timer (RFC 6298)
    engine::Tick srtt_ = 0, rttvar_ = 0, rto_ = TCP_TIMEOUT_INIT;
    std::uint32_t backoff_ = 0, retransmits_ = 0; // icsk_backoff, icsk_retransmits
    engine::Tick retrans_stamp_ = 0;               // first retransmission of the episode
    kernel::TimerList rto_timer_;
    bool write_timer_deferred_ = false;            // TCP_WRITE_TIMER_DEFERRED
    bool aborted_ = false;
    bool started_ = false;
    bool owned_ = false; // the writer holds the socket lock
    // pacing (SK_PACING_FQ, set by fq at the first skb) and the EDT clock tcp_wstamp_ns
    bool pacing_fq_ = false, pacing_checked_ = false;
    bool probe_pending_ = false; // the write timer is the zero-window/probe timer after a local drop
    // TSQ (under a qdisc layer, whose driver frees skbs at tx completion): sk_wmem_alloc
    bool tsq_on_ = false, tsq_throttled_ = false, tsq_deferred_ = false;
    std::uint64_t wmem_alloc_ = 0;
    engine::Tick wstamp_ = 0;
    std::uint64_t data_segs_out_ = 0;
    std::vector<Packet> backlog_;
    std::size_t backlog_head_ = 0;
    kernel::TaskStruct* waiter_ = nullptr;
    // with a hierarchy: the writer's buffer, the page-frag ring (placed at the first write), the
    // next write's offset in it, and each queued segment's payload address (as rtx_)
    UserBuffer user_;
    mem::Addr frag_ring_ = 0;
    std::uint64_t frag_off_ = 0;
    std::vector<mem::Addr> seg_data_;
    TcpSenderStats st_;
};

struct TcpReceiverStats {
    std::uint64_t segments = 0;        // data segments received
    std::uint64_t acks = 0;            // ACKs sent
    std::uint64_t delayed_acks = 0;    // of which by the delayed-ACK timer (DelayedACKs)
    std::uint64_t window_updates = 0;
    std::uint64_t ofo_segments = 0;    // queued out of order (TCPOFOQueue)
    std::uint64_t duplicate_segments = 0; // already received (a spurious retransmission)
    std::uint64_t window_drops = 0;    // outside the receive window: dropped at the socket
    std::uint64_t sack_acks = 0;       // ACKs carrying SACK blocks
};

class TcpSink final : public TcpEndpoint {
public:
    TcpSink(Stack& stack, const TcpCosts& costs, std::uint64_t rcvbuf, std::uint32_t flow = 0);
    // No SO_RCVBUF: the buffer starts at tcp_rmem[1] and grows (tcp_rcv_space_adjust) up to
    // tcp_rmem[2]; half of it is advertised (tcp_adv_win_scale = 1). Call before the run.
    void autotune(const std::array<std::uint64_t, 3>& rmem);
    std::uint64_t rcvbuf() const { return rcvbuf_; }
    engine::Task<> tcp_rcv(kernel::Cpu& cpu, const Packet& p) override;
    // The reader task's body (iperf3's server): read and discard until the run ends. Starts on
    // `cpu`; a movable `self` takes its CPU from itself after every await (as send_loop).
    engine::Task<> read_loop(kernel::Cpu& cpu, kernel::TaskStruct& self);
    void register_stats(const stats::Scope& s) const override;
    std::uint64_t bytes_read() const { return bytes_read_; }
    std::uint64_t rcv_nxt() const { return rcv_nxt_; }
    // Bytes held out of order above a hole.
    std::uint64_t ofo_bytes() const;
    std::uint64_t segments() const { return st_.segments; }
    std::uint64_t acks_sent() const { return st_.acks; }
    std::uint64_t window_updates() const { return st_.window_updates; }
    const TcpReceiverStats& stats() const { return st_; }

private:
    struct RxSeg {
        std::uint64_t seq;
        std::uint32_t len;
        mem::Addr data; // the payload's first byte in memory (0: no memory hierarchy)
    };
    engine::Task<> send_ack(kernel::Cpu& cpu);
    // send_ack's skb, the delayed-ACK timer stopped and the ACK counted (the caller sends it):
    // written into `ack`, an ACK skb as ack_skb made it or as an earlier call left it.
    void tcp_build_ack(Packet& ack);
    // An ACK skb's fields that are the same for every ACK of the sink.
    Packet ack_skb() const {
        Packet p{};
        p.kind = FrameKind::TCP_ACK;
        p.flow = flow_;
        return p;
    }
    // Queues the segment (no cycles of its own); true: the ACK goes at once (the caller sends it),
    // else the delayed-ACK timer is armed.
    bool tcp_data_queue(kernel::Cpu& cpu, const Packet& p);
    template <class F>
    void for_each_frag(const Packet& p, std::uint64_t from, F&& f);
    void tcp_ofo_queue(); // moves what now follows rcv_nxt from the ofo queue to the reader's
    void tcp_sack_new_ofo(std::uint64_t start, std::uint64_t end);
    void tcp_sack_remove();
    static engine::Task<> tcp_delack_timer(kernel::Cpu& cpu, kernel::TimerList& t);
    std::uint64_t window() const { return adv_win_ > unread_ ? adv_win_ - unread_ : 0; }
    void tcp_rcv_rtt_measure(kernel::Cpu& cpu);
    // read_loop's copy of `s` to the user buffer, as an exec on `cpu` (its QueuedSkb in no
    // coroutine frame).
    kernel::Cpu::ExecAwaiter copy_exec(kernel::Cpu& cpu, const RxSeg& s) {
        return cpu.exec(stack_.copy_to_user(cpu, QueuedSkb{s.len, s.data}, user_, costs_.copy_to_user_cold), kernel::Cat::COPY,
                        kernel::Text::COPY_TO_USER);
    }
    void tcp_rcv_space_adjust(kernel::Cpu& cpu);

    Stack& stack_;
    TcpCosts costs_;
    std::uint64_t rcvbuf_;
    std::uint64_t adv_win_; // the most the window may be: rcvbuf, or half of it when autotuned
    std::uint32_t flow_;
    // receive-buffer autotuning (DRS)
    bool rcvbuf_auto_ = false;
    std::uint64_t rmem_max_ = 0;
    std::uint32_t advmss_ = 0; // the peer's segment size, from its first segment
    std::uint64_t rcvq_space_ = 0, rcvq_seq_ = 0;
    engine::Tick rcvq_time_ = 0;
    engine::Tick rcv_rtt_est_ = 0, rcv_rtt_time_ = 0;
    std::uint64_t rcv_rtt_seq_ = 0;
    std::uint64_t rcv_nxt_ = 0, unread_ = 0, bytes_read_ = 0;
    std::uint64_t unacked_segments_ = 0;
    std::uint64_t last_window_ = 0;
    std::uint32_t quick_ = 0;  // quick-ack quota (icsk_ack.quick)
    bool first_data_ = true;
    SegRing<RxSeg> queue_;     // in order, not yet read
    UserBuffer user_;
    std::vector<RxSeg> ofo_;   // out of order, sorted by seq, no overlaps
    struct Block {
        std::uint64_t start, end;
    };
    std::array<Block, 4> sack_{}; // selective_acks[], most recent first
    std::size_t nsack_ = 0;
    kernel::TimerList delack_timer_;
    kernel::TaskStruct* reader_ = nullptr;
    TcpReceiverStats st_;
    // tcp_rcv's ACK skb, built in place, and whether an ACK built in it is in flight (until its
    // ip_output has returned; another ACK meanwhile is send_ack's, in a skb of its own).
    Packet ack_;
    bool ack_busy_ = false;
};

} // namespace kdsim::net
