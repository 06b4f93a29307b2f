#include "cli/precision.h"

#include "estimate/estimate.h"

#include <fmt/format.h>

#include <cmath>
#include <cstdlib>

namespace kdsim::cli {

std::optional<double> parse_precision(const std::string& text, std::string& why) {
    std::string t = text;
    bool percent = false;
    while (!t.empty() && (t.back() == ' ' || t.back() == '%')) {
        percent = percent || t.back() == '%';
        t.pop_back();
    }
    char* end = nullptr;
    const double v = t.empty() ? NAN : std::strtod(t.c_str(), &end);
    const double fraction = percent ? v / 100 : v;
    if (t.empty() || end != t.c_str() + t.size() || !(fraction >= 1e-4 && fraction <= 0.5)) {
        why = "expected a relative half-width from 0.01% to 50% (e.g. 1%), found \"" + text + "\"";
        return std::nullopt;
    }
    return fraction;
}

PrecisionRun run_to_precision(system::System& sys, double target) {
    sys.start();
    std::vector<std::pair<std::string, double>> before = sys.progress();
    std::vector<std::vector<double>> series(before.size());
    std::vector<std::optional<estimate::SteadyState>> est(before.size());
    engine::Tick at = sys.sim().now();
    PrecisionRun out;
    for (bool more = true; more && !out.reached;) {
        more = sys.advance(at + PRECISION_STEP);
        const engine::Tick now = sys.sim().now();
        if (now - at < PRECISION_STEP) continue; // a last partial step (the run ended) is no sample
        const std::vector<std::pair<std::string, double>> after = sys.progress();
        out.reached = !after.empty();
        for (std::size_t i = 0; i < after.size(); ++i) {
            series[i].push_back((after[i].second - before[i].second) / engine::to_s(now - at));
            est[i] = estimate::steady_state(series[i], PRECISION_CONFIDENCE);
            out.reached = out.reached && est[i] && est[i]->interval.relative() <= target;
        }
        before = after;
        at = now;
    }
    out.results = sys.finish();
    for (std::size_t i = 0; i < est.size(); ++i) {
        if (!est[i]) continue;
        results::SteadyState s;
        s.path = before[i].first;
        for (const auto& w : out.results.workloads)
            for (const auto& m : w.metrics)
                if ("workload." + w.name + "." + m.key == s.path) s.unit = m.unit;
        s.mean = est[i]->interval.mean;
        s.half_width = est[i]->interval.half_width;
        s.confidence = est[i]->interval.confidence;
        s.batches = est[i]->batches;
        const std::size_t kept = series[i].size() - est[i]->warm_up;
        s.batch_us = engine::to_us(PRECISION_STEP) * static_cast<double>(kept / est[i]->batches);
        s.warm_up_us = engine::to_us(PRECISION_STEP) * static_cast<double>(est[i]->warm_up);
        out.results.steady_state.push_back(std::move(s));
    }
    return out;
}

std::string steady_state_text(const PrecisionRun& p, double target) {
    const results::RunResults& r = p.results;
    std::string out = fmt::format("\nSteady state ({:.0f} % confidence, batch means after an MSER-5 warm-up, 1 ms samples): "
                                  "{} {:.6g} % at {:.3f} ms of simulated time\n",
                                  PRECISION_CONFIDENCE * 100, p.reached ? "every interval within" : "NOT within",
                                  target * 100, r.simulated_us / 1000);
    for (const auto& s : r.steady_state)
        out += fmt::format("  {}  {:.6g} +/- {:.3g} {} (+/- {:.3g} %)  warm-up {:.3f} ms, {} batches of {:.3f} ms\n", s.path,
                           s.mean, s.half_width, s.unit, s.mean != 0 ? 100 * s.half_width / std::fabs(s.mean) : 0.0,
                           s.warm_up_us / 1000, s.batches, s.batch_us / 1000);
    if (r.steady_state.empty()) out += "  no steady state detected yet: the warm-up had not ended\n";
    return out;
}

} // namespace kdsim::cli
