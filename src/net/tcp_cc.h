// TCP congestion control as the kernel's tcp_congestion_ops run it, cwnd in segments:
// Reno (net/ipv4/tcp_cong.c: tcp_reno_cong_avoid, tcp_reno_ssthresh) and CUBIC
// (net/ipv4/tcp_cubic.c: bictcp_update with beta 717/1024, bic_scale 41 (C = 0.4), fast
// convergence and TCP friendliness; HyStart with ACK-train and delay detection), on top of
// tcp_slow_start and tcp_cong_avoid_ai. Time is the kernel's: jiffies for CUBIC's epoch,
// microseconds for RTT samples and HyStart. The integer arithmetic is the kernel's.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace kdsim::net {

enum class CongestionAlgorithm : std::uint8_t { CUBIC, RENO };
// "cubic", "reno".
std::string_view to_string(CongestionAlgorithm a);
std::optional<CongestionAlgorithm> congestion_algorithm_named(std::string_view name);
inline constexpr std::string_view CONGESTION_ALGORITHMS = "cubic, reno";

inline constexpr std::uint32_t TCP_INIT_CWND = 10;            // include/net/tcp.h (RFC 6928)
inline constexpr std::uint32_t TCP_INFINITE_SSTHRESH = 0x7fffffff;

// The congestion state of a sender that the algorithm reads and writes (struct tcp_sock's).
struct TcpCwnd {
    std::uint32_t cwnd = TCP_INIT_CWND;
    std::uint32_t ssthresh = TCP_INFINITE_SSTHRESH;
    std::uint32_t cwnd_cnt = 0; // snd_cwnd_cnt
    std::uint32_t cwnd_clamp = 0xffffffff;
    bool in_slow_start() const { return cwnd < ssthresh; }
};

// tcp_slow_start: grows cwnd by `acked` up to ssthresh; returns the ACKed segments left over.
std::uint32_t tcp_slow_start(TcpCwnd& tp, std::uint32_t acked);
// tcp_cong_avoid_ai: one segment per `w` segments ACKed.
void tcp_cong_avoid_ai(TcpCwnd& tp, std::uint32_t w, std::uint32_t acked);

// The clock the algorithm reads: jiffies (and HZ) and microseconds.
struct CcClock {
    std::uint32_t jiffies = 0;
    std::uint32_t hz = 1000;
    std::uint64_t now_us = 0;
    std::uint64_t pacing_rate = 0; // sk_pacing_rate, bytes/s (HyStart's ACK-delay allowance)
    bool pacing_fq = false;        // sk_pacing_status == SK_PACING_FQ (else SK_PACING_NONE)
};

// CUBIC's per-socket state (struct bictcp), public for the tests that check it against RFC 9438.
struct Bictcp {
    std::uint32_t cnt = 0;
    std::uint32_t last_max_cwnd = 0;
    std::uint32_t last_cwnd = 0;
    std::uint32_t last_time = 0;
    std::uint32_t bic_origin_point = 0;
    std::uint32_t bic_K = 0; // in 1/1024 s
    std::uint32_t delay_min = 0; // us
    std::uint32_t epoch_start = 0; // jiffies, 0: no epoch
    std::uint32_t ack_cnt = 0;
    std::uint32_t tcp_cwnd = 0;
    bool found = false; // HyStart ended slow start
    std::uint64_t round_start = 0, last_ack = 0; // us
    std::uint64_t end_seq = 0;
    std::uint32_t curr_rtt = 0, sample_cnt = 0;
};

// HyStart's exits from slow start, as the kernel counts them (nstat TcpExtTCPHystartTrainDetect,
// TCPHystartTrainCwnd, TCPHystartDelayDetect, TCPHystartDelayCwnd): how often each test fired and
// the sum of the cwnds it fired at.
struct HystartStats {
    std::uint64_t train_detect = 0, train_cwnd = 0, delay_detect = 0, delay_cwnd = 0;
};

class CongestionControl {
public:
    explicit CongestionControl(CongestionAlgorithm a) : alg_(a) {}
    CongestionAlgorithm algorithm() const { return alg_; }

    // tcp_init_congestion_control: `snd_nxt` starts HyStart's first round.
    void init(const CcClock& clk, std::uint64_t snd_nxt);
    // .ssthresh, at a loss (fast recovery or RTO): the new slow-start threshold.
    std::uint32_t ssthresh(const TcpCwnd& tp);
    // .cong_avoid, on an ACK that delivered `acked` segments while the flow is cwnd-limited.
    void cong_avoid(TcpCwnd& tp, const CcClock& clk, std::uint32_t acked);
    // .pkts_acked: an RTT sample (us) from this ACK; `snd_una` / `snd_nxt` after it.
    void pkts_acked(TcpCwnd& tp, const CcClock& clk, std::int64_t rtt_us, std::uint64_t snd_una, std::uint64_t snd_nxt);
    // .set_state(TCP_CA_Loss): the RTO forgets the epoch (and for CUBIC, W_max).
    void on_loss_state(const CcClock& clk, std::uint64_t snd_nxt);
    // .cwnd_event(CA_EVENT_TX_START): sending resumes after the flow went idle at `idle_since`.
    void on_tx_start(const CcClock& clk, std::uint32_t idle_since_jiffies);

    const Bictcp& cubic() const { return ca_; }
    const HystartStats& hystart() const { return hystart_; }
    // CUBIC's target window (bic_target) for the current epoch at `t` jiffies after its start
    // (the kernel adds delay_min): exposed for the tests.
    std::uint32_t cubic_target(std::uint32_t t_jiffies, std::uint32_t hz) const;

private:
    void bictcp_update(std::uint32_t cwnd, std::uint32_t acked, const CcClock& clk);
    void hystart_reset(const CcClock& clk, std::uint64_t snd_nxt);
    void hystart_update(TcpCwnd& tp, const CcClock& clk, std::uint32_t delay, std::uint64_t snd_una, std::uint64_t snd_nxt);
    CongestionAlgorithm alg_;
    Bictcp ca_;
    HystartStats hystart_;
};

} // namespace kdsim::net
