#include "net/tcp_cc.h"

#include <algorithm>
#include <cmath>

namespace kdsim::net {

namespace {
// tcp_cubic.c's module parameters and constants
constexpr std::uint32_t BICTCP_BETA_SCALE = 1024;
constexpr std::uint32_t BICTCP_HZ = 10; // BIC HZ 2^10 = 1024
constexpr std::uint32_t beta = 717;     // = 717/1024
constexpr std::uint32_t bic_scale = 41; // C = 41 * 10 / 1024 = 0.4
constexpr bool fast_convergence = true;
constexpr bool tcp_friendliness = true;
constexpr std::uint32_t hystart_low_window = 16;
constexpr std::uint32_t hystart_ack_delta_us = 2000;
constexpr std::uint32_t HYSTART_MIN_SAMPLES = 8;
constexpr std::uint32_t HYSTART_DELAY_MIN = 4000, HYSTART_DELAY_MAX = 16000; // us
constexpr std::uint64_t GSO_MAX_SIZE = 65536; // sk_gso_max_size (GSO_LEGACY_MAX_SIZE)
// cubictcp_register: beta_scale = 8*(1024+717)/3/(1024-717) = 15; cube_rtt_scale = 410;
// cube_factor = 2^40 / 410.
constexpr std::uint32_t beta_scale = 8 * (BICTCP_BETA_SCALE + beta) / 3 / (BICTCP_BETA_SCALE - beta);
constexpr std::uint32_t cube_rtt_scale = bic_scale * 10;
constexpr std::uint64_t cube_factor = (std::uint64_t{1} << (10 + 3 * BICTCP_HZ)) / (bic_scale * 10);

// The cube root of `a`, rounded down (the kernel's cubic_root approximates it within 0.2%).
std::uint32_t cubic_root(std::uint64_t a) {
    auto x = static_cast<std::uint64_t>(std::cbrt(static_cast<double>(a)));
    while (x * x * x > a) --x;
    while ((x + 1) * (x + 1) * (x + 1) <= a) ++x;
    return static_cast<std::uint32_t>(x);
}

std::uint32_t usecs_to_jiffies(std::uint32_t us, std::uint32_t hz) {
    return static_cast<std::uint32_t>((static_cast<std::uint64_t>(us) * hz + 999'999) / 1'000'000);
}
} // namespace

std::string_view to_string(CongestionAlgorithm a) { return a == CongestionAlgorithm::CUBIC ? "cubic" : "reno"; }

std::optional<CongestionAlgorithm> congestion_algorithm_named(std::string_view name) {
    if (name == "cubic") return CongestionAlgorithm::CUBIC;
    if (name == "reno") return CongestionAlgorithm::RENO;
    return std::nullopt;
}

// Models: tcp_slow_start() (net/ipv4/tcp_cong.c)
std::uint32_t tcp_slow_start(TcpCwnd& tp, std::uint32_t acked) {
    const std::uint32_t cwnd = std::min(tp.cwnd + acked, tp.ssthresh);
    acked -= cwnd - tp.cwnd;
    tp.cwnd = std::min(cwnd, tp.cwnd_clamp);
    return acked;
}

// Models: tcp_cong_avoid_ai() (net/ipv4/tcp_cong.c)
void tcp_cong_avoid_ai(TcpCwnd& tp, std::uint32_t w, std::uint32_t acked) {
    if (tp.cwnd_cnt >= w) {
        tp.cwnd_cnt = 0;
        ++tp.cwnd;
    }
    tp.cwnd_cnt += acked;
    if (tp.cwnd_cnt >= w) {
        const std::uint32_t delta = tp.cwnd_cnt / w;
        tp.cwnd_cnt -= delta * w;
        tp.cwnd += delta;
    }
    tp.cwnd = std::min(tp.cwnd, tp.cwnd_clamp);
}

// Models: bictcp_init() (net/ipv4/tcp_cubic.c)
void CongestionControl::init(const CcClock& clk, std::uint64_t snd_nxt) {
    ca_ = Bictcp{};
    if (alg_ == CongestionAlgorithm::CUBIC) hystart_reset(clk, snd_nxt);
}

// Models: bictcp_hystart_reset() (net/ipv4/tcp_cubic.c)
void CongestionControl::hystart_reset(const CcClock& clk, std::uint64_t snd_nxt) {
    ca_.round_start = ca_.last_ack = clk.now_us;
    ca_.end_seq = snd_nxt;
    ca_.curr_rtt = ~0u;
    ca_.sample_cnt = 0;
}

// Models: cubictcp_recalc_ssthresh() (net/ipv4/tcp_cubic.c)
std::uint32_t CongestionControl::ssthresh(const TcpCwnd& tp) {
    if (alg_ == CongestionAlgorithm::RENO) return std::max(tp.cwnd >> 1, 2u); // tcp_reno_ssthresh
    ca_.epoch_start = 0; // end of epoch
    // Wmax and fast convergence
    if (tp.cwnd < ca_.last_max_cwnd && fast_convergence)
        ca_.last_max_cwnd = (tp.cwnd * (BICTCP_BETA_SCALE + beta)) / (2 * BICTCP_BETA_SCALE);
    else
        ca_.last_max_cwnd = tp.cwnd;
    return std::max((tp.cwnd * beta) / BICTCP_BETA_SCALE, 2u);
}

std::uint32_t CongestionControl::cubic_target(std::uint32_t t_jiffies, std::uint32_t hz) const {
    std::uint64_t t = t_jiffies + usecs_to_jiffies(ca_.delay_min, hz);
    t = (t << BICTCP_HZ) / hz; // jiffies -> 1/1024 s
    const std::uint64_t offs = t < ca_.bic_K ? ca_.bic_K - t : t - ca_.bic_K;
    // c/rtt * (t-K)^3
    const auto delta = static_cast<std::uint32_t>((cube_rtt_scale * offs * offs * offs) >> (10 + 3 * BICTCP_HZ));
    return t < ca_.bic_K ? ca_.bic_origin_point - delta : ca_.bic_origin_point + delta;
}

// Models: bictcp_update() (net/ipv4/tcp_cubic.c)
void CongestionControl::bictcp_update(std::uint32_t cwnd, std::uint32_t acked, const CcClock& clk) {
    ca_.ack_cnt += acked; // count the number of ACKed packets
    const bool fresh = !(ca_.last_cwnd == cwnd && static_cast<std::int32_t>(clk.jiffies - ca_.last_time) <= static_cast<std::int32_t>(clk.hz / 32));
    if (!fresh) return;
    // The CUBIC function can update ca->cnt at most once per jiffy.
    if (!(ca_.epoch_start && clk.jiffies == ca_.last_time)) {
        ca_.last_cwnd = cwnd;
        ca_.last_time = clk.jiffies;
        if (ca_.epoch_start == 0) {
            ca_.epoch_start = clk.jiffies ? clk.jiffies : 1; // record beginning
            ca_.ack_cnt = acked;                             // start counting
            ca_.tcp_cwnd = cwnd;                             // syn with cubic
            if (ca_.last_max_cwnd <= cwnd) {
                ca_.bic_K = 0;
                ca_.bic_origin_point = cwnd;
            } else {
                // K = cbrt((Wmax - cwnd) / C) in 1/1024 s
                ca_.bic_K = cubic_root(cube_factor * (ca_.last_max_cwnd - cwnd));
                ca_.bic_origin_point = ca_.last_max_cwnd;
            }
        }
        const std::uint32_t bic_target = cubic_target(clk.jiffies - ca_.epoch_start, clk.hz);
        if (bic_target > cwnd) ca_.cnt = cwnd / (bic_target - cwnd);
        else ca_.cnt = 100 * cwnd; // very small increment
        // The initial growth of cubic function may be too conservative when the available
        // bandwidth is still unknown.
        if (ca_.last_max_cwnd == 0 && ca_.cnt > 20) ca_.cnt = 20; // increase cwnd 5% per RTT
    }
    if (tcp_friendliness) {
        const std::uint32_t delta = (cwnd * beta_scale) >> 3;
        while (delta && ca_.ack_cnt > delta) { // update tcp cwnd
            ca_.ack_cnt -= delta;
            ++ca_.tcp_cwnd;
        }
        if (ca_.tcp_cwnd > cwnd) { // if bic is slower than tcp
            const std::uint32_t max_cnt = cwnd / (ca_.tcp_cwnd - cwnd);
            if (ca_.cnt > max_cnt) ca_.cnt = max_cnt;
        }
    }
    // The maximum rate of cwnd increase CUBIC allows is 1 packet per 2 packets ACKed.
    ca_.cnt = std::max(ca_.cnt, 2u);
}

// Models: cubictcp_cong_avoid() (net/ipv4/tcp_cubic.c)
void CongestionControl::cong_avoid(TcpCwnd& tp, const CcClock& clk, std::uint32_t acked) {
    if (tp.in_slow_start()) {
        acked = tcp_slow_start(tp, acked);
        if (!acked) return;
    }
    if (alg_ == CongestionAlgorithm::RENO) {
        tcp_cong_avoid_ai(tp, tp.cwnd, acked); // tcp_reno_cong_avoid
        return;
    }
    bictcp_update(tp.cwnd, acked, clk);
    tcp_cong_avoid_ai(tp, ca_.cnt, acked);
}

// Models: hystart_update() (net/ipv4/tcp_cubic.c)
void CongestionControl::hystart_update(TcpCwnd& tp, const CcClock& clk, std::uint32_t delay, std::uint64_t snd_una,
                                       std::uint64_t snd_nxt) {
    if (snd_una > ca_.end_seq) hystart_reset(clk, snd_nxt);
    // ACK-train detection
    if (static_cast<std::int64_t>(clk.now_us - ca_.last_ack) <= hystart_ack_delta_us) {
        ca_.last_ack = clk.now_us;
        // hystart_ack_delay: what TSO/GRO may hold back, from the pacing rate
        const std::uint64_t ack_delay = clk.pacing_rate ? std::min<std::uint64_t>(1000, GSO_MAX_SIZE * 4 * 1'000'000 / clk.pacing_rate) : 0;
        std::uint64_t threshold = ca_.delay_min + ack_delay;
        if (!clk.pacing_fq) threshold >>= 1; // SK_PACING_NONE: trains past delay_min / 2
        if (clk.now_us - ca_.round_start > threshold) {
            ca_.found = true;
            ++hystart_.train_detect; // LINUX_MIB_TCPHYSTARTTRAINDETECT
            hystart_.train_cwnd += tp.cwnd;
            tp.ssthresh = tp.cwnd;
        }
    }
    // delay increase detection
    ca_.curr_rtt = std::min(ca_.curr_rtt, delay);
    if (ca_.sample_cnt < HYSTART_MIN_SAMPLES) {
        ++ca_.sample_cnt;
    } else if (ca_.curr_rtt > ca_.delay_min + std::clamp(ca_.delay_min >> 3, HYSTART_DELAY_MIN, HYSTART_DELAY_MAX)) {
        ca_.found = true;
        ++hystart_.delay_detect; // LINUX_MIB_TCPHYSTARTDELAYDETECT
        hystart_.delay_cwnd += tp.cwnd;
        tp.ssthresh = tp.cwnd;
    }
}

// Models: cubictcp_acked() (net/ipv4/tcp_cubic.c)
void CongestionControl::pkts_acked(TcpCwnd& tp, const CcClock& clk, std::int64_t rtt_us, std::uint64_t snd_una,
                                   std::uint64_t snd_nxt) {
    if (alg_ != CongestionAlgorithm::CUBIC || rtt_us < 0) return;
    // Discard delay samples right after fast recovery
    if (ca_.epoch_start && static_cast<std::int32_t>(clk.jiffies - ca_.epoch_start) < static_cast<std::int32_t>(clk.hz))
        return;
    const auto delay = static_cast<std::uint32_t>(std::max<std::int64_t>(rtt_us, 1));
    if (ca_.delay_min == 0 || ca_.delay_min > delay) ca_.delay_min = delay;
    if (!ca_.found && tp.in_slow_start() && tp.cwnd >= hystart_low_window) hystart_update(tp, clk, delay, snd_una, snd_nxt);
}

// Models: cubictcp_state() (net/ipv4/tcp_cubic.c)
void CongestionControl::on_loss_state(const CcClock& clk, std::uint64_t snd_nxt) {
    if (alg_ != CongestionAlgorithm::CUBIC) return;
    ca_ = Bictcp{}; // bictcp_reset
    hystart_reset(clk, snd_nxt);
}

// Models: cubictcp_cwnd_event() (net/ipv4/tcp_cubic.c)
void CongestionControl::on_tx_start(const CcClock& clk, std::uint32_t idle_since_jiffies) {
    if (alg_ != CongestionAlgorithm::CUBIC || !ca_.epoch_start) return;
    const auto delta = static_cast<std::int32_t>(clk.jiffies - idle_since_jiffies);
    // We were application limited (idle) for a while. Shift epoch_start to keep cwnd growth
    // to cubic curve.
    if (delta > 0) {
        ca_.epoch_start += static_cast<std::uint32_t>(delta);
        if (static_cast<std::int32_t>(ca_.epoch_start - clk.jiffies) > 0) ca_.epoch_start = clk.jiffies;
    }
}

} // namespace kdsim::net
