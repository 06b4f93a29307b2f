#include "estimate/estimate.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

namespace kdsim::estimate {

double mean(std::span<const double> xs) {
    if (xs.empty()) return 0;
    double s = 0;
    for (double x : xs) s += x;
    return s / static_cast<double>(xs.size());
}

double sample_variance(std::span<const double> xs) {
    if (xs.size() < 2) return 0;
    const double m = mean(xs);
    double ss = 0;
    for (double x : xs) ss += (x - m) * (x - m);
    return ss / static_cast<double>(xs.size() - 1);
}

namespace {

// The continued fraction of the regularised incomplete beta function I_x(a, b) (modified Lentz),
// valid for x < (a + 1) / (a + b + 2).
double beta_fraction(double a, double b, double x) {
    constexpr double tiny = 1e-300, eps = 1e-15;
    double c = 1, d = 1 - (a + b) * x / (a + 1);
    if (std::fabs(d) < tiny) d = tiny;
    d = 1 / d;
    double h = d;
    for (int m = 1; m <= 10'000; ++m) {
        const double m2 = 2.0 * m;
        double aa = m * (b - m) * x / ((a + m2 - 1) * (a + m2));
        d = 1 + aa * d;
        if (std::fabs(d) < tiny) d = tiny;
        c = 1 + aa / c;
        if (std::fabs(c) < tiny) c = tiny;
        d = 1 / d;
        h *= d * c;
        aa = -(a + m) * (a + b + m) * x / ((a + m2) * (a + m2 + 1));
        d = 1 + aa * d;
        if (std::fabs(d) < tiny) d = tiny;
        c = 1 + aa / c;
        if (std::fabs(c) < tiny) c = tiny;
        d = 1 / d;
        const double step = d * c;
        h *= step;
        if (std::fabs(step - 1) < eps) break;
    }
    return h;
}

// I_x(a, b), the regularised incomplete beta function.
double incomplete_beta(double a, double b, double x) {
    if (x <= 0) return 0;
    if (x >= 1) return 1;
    const double front =
        std::exp(std::lgamma(a + b) - std::lgamma(a) - std::lgamma(b) + a * std::log(x) + b * std::log1p(-x));
    if (x < (a + 1) / (a + b + 2)) return front * beta_fraction(a, b, x) / a;
    return 1 - front * beta_fraction(b, a, 1 - x) / b;
}

// P(T <= t) for Student's t with df degrees of freedom.
double student_t_cdf(double t, double df) {
    const double tail = 0.5 * incomplete_beta(df / 2, 0.5, df / (df + t * t));
    return t >= 0 ? 1 - tail : tail;
}

} // namespace

double student_t_quantile(double p, double df) {
    if (!(p > 0 && p < 1) || !(df > 0)) throw std::invalid_argument("student_t_quantile: needs 0 < p < 1 and df > 0");
    if (p < 0.5) return -student_t_quantile(1 - p, df);
    double lo = 0, hi = 1;
    while (student_t_cdf(hi, df) < p) hi *= 2;
    for (int i = 0; i < 200 && hi - lo > 1e-13 * hi; ++i) {
        const double mid = (lo + hi) / 2;
        (student_t_cdf(mid, df) < p ? lo : hi) = mid;
    }
    return (lo + hi) / 2;
}

double Interval::relative() const {
    if (mean == 0) return half_width == 0 ? 0 : std::numeric_limits<double>::infinity();
    return half_width / std::fabs(mean);
}

Interval confidence_interval(std::span<const double> xs, double confidence) {
    if (xs.size() < 2) throw std::invalid_argument("confidence_interval: needs at least 2 observations");
    if (!(confidence > 0 && confidence < 1)) throw std::invalid_argument("confidence_interval: needs 0 < confidence < 1");
    const double n = static_cast<double>(xs.size());
    const double t = student_t_quantile(1 - (1 - confidence) / 2, n - 1);
    return Interval{mean(xs), t * std::sqrt(sample_variance(xs) / n), confidence, xs.size()};
}

std::vector<double> batch_means(std::span<const double> xs, std::size_t batches) {
    std::vector<double> out;
    if (batches == 0 || xs.size() < batches) return out;
    const std::size_t m = xs.size() / batches;
    const std::span<const double> used = xs.subspan(xs.size() - m * batches);
    for (std::size_t k = 0; k < batches; ++k) out.push_back(mean(used.subspan(k * m, m)));
    return out;
}

WarmUp mser5(std::span<const double> xs) {
    const std::size_t b = xs.size() / 5;
    if (b < 2) return {};
    const std::vector<double> z = batch_means(xs.first(5 * b), b);
    // suffix sums make each d's statistic O(1): sum (Z - m)^2 = sum Z^2 - (sum Z)^2 / k
    std::vector<double> s(b + 1, 0), s2(b + 1, 0);
    for (std::size_t j = b; j-- > 0;) {
        s[j] = s[j + 1] + z[j];
        s2[j] = s2[j + 1] + z[j] * z[j];
    }
    std::size_t best = 0;
    double best_value = std::numeric_limits<double>::infinity();
    for (std::size_t d = 0; d <= b / 2; ++d) {
        const double k = static_cast<double>(b - d);
        const double value = std::max(0.0, s2[d] - s[d] * s[d] / k) / (k * k);
        if (value < best_value * (1 - 1e-12)) {
            best_value = value;
            best = d;
        }
    }
    return WarmUp{5 * best, best < b / 2};
}

std::optional<SteadyState> steady_state(std::span<const double> xs, double confidence) {
    const WarmUp w = mser5(xs);
    if (!w.converged) return std::nullopt;
    const std::span<const double> rest = xs.subspan(w.truncate);
    if (rest.size() < 20) return std::nullopt;
    const std::size_t k = std::min<std::size_t>(20, rest.size() / 2);
    const std::vector<double> means = batch_means(rest, k);
    return SteadyState{confidence_interval(means, confidence), w.truncate, k};
}

} // namespace kdsim::estimate
