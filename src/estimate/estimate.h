// Output analysis of one simulation run (Law, "Simulation Modeling and Analysis", ch. 9):
// the mean of a series, its Student-t confidence interval, the method of batch means, and the
// MSER-5 rule for the end of the warm-up (White 1997; Franklin & White 2008). Pure functions:
// the same series always gives the same answer.
#pragma once

#include <cstddef>
#include <optional>
#include <span>
#include <vector>

namespace kdsim::estimate {

double mean(std::span<const double> xs);                // 0 for an empty series
double sample_variance(std::span<const double> xs);     // divisor n-1; 0 for fewer than 2 values

// The p-quantile (0 < p < 1) of Student's t distribution with `df` > 0 degrees of freedom:
// the t with P(T <= t) = p (t(0.975, 10) = 2.2281...).
double student_t_quantile(double p, double df);

struct Interval {
    double mean = 0;
    double half_width = 0;    // the interval is mean +/- half_width
    double confidence = 0;    // e.g. 0.95
    std::size_t samples = 0;  // independent observations it rests on
    // half_width / |mean| (infinity for a zero mean with a non-zero width)
    double relative() const;
};

// The confidence interval of the mean of independent, identically distributed observations:
// mean +/- t(1 - (1 - confidence)/2, n - 1) * s / sqrt(n). Needs n >= 2 and 0 < confidence < 1.
Interval confidence_interval(std::span<const double> xs, double confidence = 0.95);

// The means of `batches` consecutive equal batches of the series, batch size floor(n / batches),
// taken from its end (the leftover first observations, the oldest, are dropped). Empty when the
// series has fewer than `batches` observations.
std::vector<double> batch_means(std::span<const double> xs, std::size_t batches);

// MSER-5: the series is cut into batches of 5 (a trailing partial batch is ignored); the warm-up
// ends after the d batches, d in [0, b/2], that minimise the marginal standard error
// sum_{j>d} (Z_j - mean(Z_{d+1..b}))^2 / (b - d)^2 (the smallest such d on ties).
struct WarmUp {
    std::size_t truncate = 0; // observations to drop: 5 * d
    bool converged = false;   // the minimum is in the first half (else: run longer)
};
WarmUp mser5(std::span<const double> xs);

// A steady-state estimate of one run's series: MSER-5 finds the warm-up, and the rest is cut
// into between 10 and 20 batches (at least 2 observations each) whose means give the interval.
// Nothing until the warm-up is over and at least 20 observations follow it.
struct SteadyState {
    Interval interval;
    std::size_t warm_up = 0; // observations dropped
    std::size_t batches = 0;
};
std::optional<SteadyState> steady_state(std::span<const double> xs, double confidence = 0.95);

} // namespace kdsim::estimate
