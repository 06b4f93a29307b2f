// Congestion control (net/tcp_cc.*) against the formulas, worked by hand.
// CUBIC (RFC 9438): W_max is cwnd at the loss, cwnd becomes beta x W_max with the kernel's
// beta = 717/1024, and W(t) = C (t - K)^3 + W_max with K = cbrt(W_max (1 - beta) / C). The
// kernel's C is bic_scale * 10 / 1024 = 410/1024 = 0.400390625, times in 1/1024 s.
#include "net/tcp_cc.h"

#include <gtest/gtest.h>

#include <cmath>

namespace kdsim::net {
namespace {

// A clock with HZ = 1024, so one jiffy is one of CUBIC's 1/1024 s units.
CcClock at(std::uint32_t jiffies) {
    CcClock c;
    c.jiffies = jiffies;
    c.hz = 1024;
    c.now_us = static_cast<std::uint64_t>(jiffies) * 1'000'000 / 1024;
    return c;
}

// CUBIC right after a loss at cwnd 100 (the tests below work out its figures).
struct CubicAfterLossAt100 {
    CongestionControl cc{CongestionAlgorithm::CUBIC};
    TcpCwnd tp;
    CubicAfterLossAt100() {
        cc.init(at(1), 0);
        tp.cwnd = 100;
        tp.ssthresh = cc.ssthresh(tp);
        tp.cwnd = tp.ssthresh;
    }
};

TEST(Cubic, ALossAtCwnd100GivesSsthresh70AndWmax100) {
    // 100 * 717 / 1024 = 71700 / 1024 = 70.02 -> 70; no earlier W_max: W_max = 100.
    CongestionControl cc(CongestionAlgorithm::CUBIC);
    cc.init(at(1), 0);
    TcpCwnd tp;
    tp.cwnd = 100;
    EXPECT_EQ(cc.ssthresh(tp), 70u);
    EXPECT_EQ(cc.cubic().last_max_cwnd, 100u);
}

TEST(Cubic, FastConvergenceLowersWmaxWhenTheNextLossComesBelowIt) {
    // Second loss at cwnd 80 < W_max 100: W_max = 80 * (1024 + 717) / 2048 = 139280 / 2048 =
    // 68.0 -> 68; ssthresh = 80 * 717 / 1024 = 56.0 -> 56.
    CongestionControl cc(CongestionAlgorithm::CUBIC);
    cc.init(at(1), 0);
    TcpCwnd tp;
    tp.cwnd = 100;
    cc.ssthresh(tp);
    tp.cwnd = 80;
    EXPECT_EQ(cc.ssthresh(tp), 56u);
    EXPECT_EQ(cc.cubic().last_max_cwnd, 68u);
}

TEST(Cubic, KAndTheWindowCurveAfterALossFollowRfc9438) {
    // Loss at 100, cwnd 70 afterwards. K = cbrt((100 - 70) / C):
    //   RFC 9438 with C = 0.4: cbrt(75) = 4.2172 s;
    //   kernel: cube_factor = 2^40 / 410 = 2681735677; 30 x that = 80452070310, whose integer
    //   cube root is 4316 (4316^3 = 80397826496 <= it < 4317^3 = 80453723013): 4.2148 s.
    // W(t) = W_max + C (t - K)^3 in segments, the kernel's delta = 410 offs^3 >> 40:
    //   t = K:           100
    //   t = K + 1 s:     100 + 0.4 x 1   = 100.4 -> 100 (410 x 1024^3 >> 40 = 0)
    //   t = K + 5 s:     100 + 0.4 x 125 = 150   (410 x 5120^3 >> 40 = 51250/1024 = 50)
    //   t = 0:           100 - 0.4 x 4316^3/1024^3 = 100 - 29.98 -> 100 - 29 = 71 (RFC: 70)
    CubicAfterLossAt100 c;
    auto& cc = c.cc;
    cc.cong_avoid(c.tp, at(1000), 1); // the epoch starts with this ACK
    EXPECT_EQ(cc.cubic().bic_K, 4316u);
    EXPECT_NEAR(cc.cubic().bic_K / 1024.0, std::cbrt(75.0), 0.01);
    EXPECT_EQ(cc.cubic().bic_origin_point, 100u);
    EXPECT_EQ(cc.cubic_target(4316, 1024), 100u);
    EXPECT_EQ(cc.cubic_target(4316 + 1024, 1024), 100u);
    EXPECT_EQ(cc.cubic_target(4316 + 5 * 1024, 1024), 150u);
    EXPECT_EQ(cc.cubic_target(0, 1024), 71u);
}

TEST(Cubic, AtTheEpochStartCwnd70GrowsByOneAfter70Acks) {
    // At t = 0 the target is 71 (above): cnt = 70 / (71 - 70) = 70 ACKs per segment; TCP
    // friendliness (tcp_cwnd 70, one segment per (70 x 15) >> 3 = 131 ACKs) does not lower it.
    CubicAfterLossAt100 c;
    auto& [cc, tp] = c;
    ASSERT_EQ(tp.cwnd, 70u);
    for (int i = 0; i < 69; ++i) cc.cong_avoid(tp, at(1000), 1);
    EXPECT_EQ(cc.cubic().cnt, 70u);
    EXPECT_EQ(tp.cwnd, 70u);
    cc.cong_avoid(tp, at(1000), 1);
    EXPECT_EQ(tp.cwnd, 71u);
}

TEST(Reno, HalvesAtALossAndGrowsOneSegmentPerWindowOfAcks) {
    // ssthresh = max(cwnd / 2, 2): 100 -> 50, 3 -> 2. Congestion avoidance at cwnd 50: one
    // segment per 50 ACKed.
    CongestionControl cc(CongestionAlgorithm::RENO);
    TcpCwnd tp;
    tp.cwnd = 100;
    EXPECT_EQ(cc.ssthresh(tp), 50u);
    tp.cwnd = 3;
    EXPECT_EQ(cc.ssthresh(tp), 2u);
    tp.cwnd = 50;
    tp.ssthresh = 50;
    for (int i = 0; i < 49; ++i) cc.cong_avoid(tp, at(1), 1);
    EXPECT_EQ(tp.cwnd, 50u);
    cc.cong_avoid(tp, at(1), 1);
    EXPECT_EQ(tp.cwnd, 51u);
}

TEST(SlowStart, GrowsByTheAckedSegmentsUpToSsthreshAndHandsBackTheRest) {
    // cwnd 10, ssthresh 12, 5 ACKed: cwnd 12, 3 left over for congestion avoidance.
    TcpCwnd tp;
    tp.cwnd = 10;
    tp.ssthresh = 12;
    EXPECT_EQ(tcp_slow_start(tp, 5), 3u);
    EXPECT_EQ(tp.cwnd, 12u);
}

// CUBIC in slow start at cwnd 20 (HyStart's low window is 16), initialised at t0 = 1 s with a
// 1000 Hz clock and snd_nxt 0; ack() advances the clock and gives one RTT sample.
struct HystartAt20 {
    CongestionControl cc{CongestionAlgorithm::CUBIC};
    TcpCwnd tp;
    CcClock c;
    HystartAt20() {
        tp.cwnd = 20;
        c.hz = 1000;
        c.now_us = 1'000'000;
        cc.init(c, 0);
    }
    void ack(std::uint64_t after_us, std::int64_t rtt_us, std::uint64_t snd_una, std::uint64_t snd_nxt) {
        c.now_us += after_us;
        cc.pkts_acked(tp, c, rtt_us, snd_una, snd_nxt);
    }
};

TEST(Hystart, DelayIncreaseEndsSlowStart) {
    // delay_min 10 ms (first sample, round 1); the threshold is delay_min + clamp(delay_min / 8,
    // 4 ms, 16 ms) = 10 + 4 = 14 ms. Round 2 starts when snd_una passes round 1's end (100):
    // after its 8 samples, a round minimum of 15 ms ends slow start at the 9th: ssthresh =
    // cwnd. ACKs 3 ms apart (> hystart_ack_delta 2 ms) are no ACK train.
    HystartAt20 h;
    h.ack(3000, 10'000, 1, 100);
    EXPECT_EQ(h.cc.cubic().delay_min, 10'000u);
    for (int i = 0; i < 8; ++i) h.ack(3000, 15'000, 101, 200);
    EXPECT_FALSE(h.cc.cubic().found);
    h.ack(3000, 15'000, 101, 200);
    EXPECT_TRUE(h.cc.cubic().found);
    EXPECT_EQ(h.tp.ssthresh, 20u);
    EXPECT_EQ(h.cc.hystart().delay_detect, 1u); // TCPHystartDelayDetect
    EXPECT_EQ(h.cc.hystart().delay_cwnd, 20u);
    EXPECT_EQ(h.cc.hystart().train_detect, 0u);
}

TEST(Hystart, AnAckTrainLongerThanHalfTheMinimumRttEndsSlowStart) {
    // No pacing: the train threshold is (delay_min + 0) / 2 = 5 ms for a 10 ms delay_min. The
    // first ACK passes round 0's end (snd_nxt 0 at init) and restarts the round at t0 + 1 ms;
    // ACKs then come 1 ms apart (within hystart_ack_delta, 2 ms) with a flat 10 ms RTT, so the
    // train is 5 ms long at the 5th ACK (not more than 5 ms: no exit) and 6 ms at the 6th: exit,
    // counted as TCPHystartTrainDetect at cwnd 20. The delay test never fires.
    HystartAt20 h;
    h.ack(1000, 10'000, 1, 100);
    for (int k = 1; k <= 5; ++k) h.ack(1000, 10'000, 50, 100);
    EXPECT_FALSE(h.cc.cubic().found);
    EXPECT_EQ(h.cc.hystart().train_detect, 0u);
    h.ack(1000, 10'000, 50, 100);
    EXPECT_TRUE(h.cc.cubic().found);
    EXPECT_EQ(h.tp.ssthresh, 20u);
    EXPECT_EQ(h.cc.hystart().train_detect, 1u);
    EXPECT_EQ(h.cc.hystart().train_cwnd, 20u);
    EXPECT_EQ(h.cc.hystart().delay_detect, 0u);
}

TEST(CongestionControl, NamesAreCubicAndReno) {
    EXPECT_EQ(congestion_algorithm_named("cubic"), CongestionAlgorithm::CUBIC);
    EXPECT_EQ(congestion_algorithm_named("reno"), CongestionAlgorithm::RENO);
    EXPECT_FALSE(congestion_algorithm_named("bbr"));
}

} // namespace
} // namespace kdsim::net
