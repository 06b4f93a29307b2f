// Output analysis on synthetic series whose answers are known by hand or from published tables.
#include "estimate/estimate.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

namespace kdsim::estimate {
namespace {

TEST(Estimate, MeanAndSampleVarianceOfAHandWorkedSeries) {
    const std::vector<double> xs{2, 4, 4, 4, 5, 5, 7, 9}; // sum 40; squared deviations 9+1+1+1+0+0+4+16 = 32
    EXPECT_DOUBLE_EQ(mean(xs), 5.0);
    EXPECT_DOUBLE_EQ(sample_variance(xs), 32.0 / 7.0);
}

TEST(Estimate, StudentTQuantilesMatchThePublishedTable) {
    // two-sided 95 % and 99 % critical values (NIST/SEMATECH e-Handbook, table 1.3.6.7.2)
    EXPECT_NEAR(student_t_quantile(0.975, 1), 12.706, 5e-4);
    EXPECT_NEAR(student_t_quantile(0.975, 2), 4.303, 5e-4);
    EXPECT_NEAR(student_t_quantile(0.975, 7), 2.365, 5e-4);
    EXPECT_NEAR(student_t_quantile(0.975, 10), 2.228, 5e-4);
    EXPECT_NEAR(student_t_quantile(0.975, 19), 2.093, 5e-4);
    EXPECT_NEAR(student_t_quantile(0.995, 5), 4.032, 5e-4);
    // df = 1 is the Cauchy distribution: t_p = tan(pi (p - 1/2)), exactly
    EXPECT_NEAR(student_t_quantile(0.9, 1), std::tan(M_PI * 0.4), 1e-9);
    // df = 2 has a closed form: t_p = (2p - 1) sqrt(2 / (4 p (1 - p)))
    EXPECT_NEAR(student_t_quantile(0.975, 2), 0.95 * std::sqrt(2 / (4 * 0.975 * 0.025)), 1e-9);
    // large df tends to the normal quantile 1.959964
    EXPECT_NEAR(student_t_quantile(0.975, 1e7), 1.959964, 1e-5);
    EXPECT_NEAR(student_t_quantile(0.025, 10), -student_t_quantile(0.975, 10), 1e-12);
    EXPECT_THROW(student_t_quantile(1.0, 3), std::invalid_argument);
}

TEST(Estimate, ConfidenceIntervalIsMeanPlusMinusTTimesStandardError) {
    const std::vector<double> xs{2, 4, 4, 4, 5, 5, 7, 9};
    const Interval ci = confidence_interval(xs, 0.95);
    EXPECT_DOUBLE_EQ(ci.mean, 5.0);
    // t(0.975, 7) = 2.364624 (table); s^2/n = (32/7)/8
    EXPECT_NEAR(ci.half_width, 2.364624 * std::sqrt(32.0 / 7.0 / 8.0), 1e-5);
    EXPECT_EQ(ci.samples, 8u);
    EXPECT_NEAR(ci.relative(), ci.half_width / 5.0, 1e-15);
    const std::vector<double> constant(10, 3.0);
    EXPECT_EQ(confidence_interval(constant).half_width, 0.0);
    EXPECT_THROW(confidence_interval(std::vector<double>{1.0}), std::invalid_argument);
}

TEST(Estimate, BatchMeansTakeEqualBatchesFromTheEnd) {
    const std::vector<double> xs{1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
    // batch size floor(10/3) = 3; the first observation is dropped: {2,3,4} {5,6,7} {8,9,10}
    EXPECT_EQ(batch_means(xs, 3), (std::vector<double>{3, 6, 9}));
    EXPECT_EQ(batch_means(xs, 10), xs);
    EXPECT_TRUE(batch_means(xs, 11).empty());
}

// 20 observations of a start-up transient at 10, then 40 batches of five whose means are all 1.
std::vector<double> step_series() {
    std::vector<double> xs(20, 10.0);
    for (int k = 0; k < 40; ++k)
        for (double v : {0.0, 1.0, 2.0, 1.0, 1.0}) xs.push_back(v);
    return xs;
}

TEST(Estimate, Mser5CutsAStepTransientAtItsEnd) {
    const WarmUp w = mser5(step_series());
    // d = 4 batches leaves 40 equal batch means: the statistic is 0 there and > 0 for d < 4
    EXPECT_EQ(w.truncate, 20u);
    EXPECT_TRUE(w.converged);
}

TEST(Estimate, Mser5KeepsAStationarySeriesWhole) {
    std::vector<double> xs;
    for (int k = 0; k < 30; ++k)
        for (double v : {3.0, 5.0, 4.0, 4.0, 4.0}) xs.push_back(v);
    EXPECT_EQ(mser5(xs).truncate, 0u);
    EXPECT_TRUE(mser5(xs).converged);
}

TEST(Estimate, Mser5SaysNotConvergedWhileTheTrendLasts) {
    std::vector<double> xs;
    for (int i = 0; i < 100; ++i) xs.push_back(i); // a ramp: every later cut is better
    const WarmUp w = mser5(xs);
    EXPECT_FALSE(w.converged);
    EXPECT_EQ(w.truncate, 5u * 10u); // the last candidate, b/2 = 10 batches
}

TEST(Estimate, SteadyStateDropsTheWarmUpAndBatchesTheRest) {
    const std::optional<SteadyState> s = steady_state(step_series());
    ASSERT_TRUE(s);
    EXPECT_EQ(s->warm_up, 20u);
    EXPECT_EQ(s->batches, 20u); // 200 observations left, batches of 10 (two blocks of mean 1)
    EXPECT_DOUBLE_EQ(s->interval.mean, 1.0);
    EXPECT_EQ(s->interval.half_width, 0.0);
    EXPECT_FALSE(steady_state(std::vector<double>(15, 1.0))); // too short
}

} // namespace
} // namespace kdsim::estimate
