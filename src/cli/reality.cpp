// The reality table of `kdsim experiments` (see reality.h): published against predicted, per
// figure and per ratio, for the cases of scenarios/reality/.
#include "cli/reality.h"

#include <filesystem>
#include <fmt/format.h>
#include <fmt/ranges.h>

namespace kdsim::cli {

double error_percent(double predicted, double published) { return (predicted - published) / published * 100.0; }

namespace {

std::optional<double> predicted(const scenario::PublishedFigure& f,
                                const std::vector<std::pair<std::string, results::RunResults>>& runs,
                                const MetricLookup& lookup) {
    if (!f.sweep.empty()) { // the largest over the sweep's runs (with where_zero's metric at 0)
        std::optional<double> best;
        for (const auto& file : f.sweep) {
            const std::string stem = std::filesystem::path(file).stem().string();
            for (const auto& [name, r] : runs) {
                if (name != stem) continue;
                bool zero = true;
                for (const auto& w : f.where_zero) {
                    auto z = lookup(r, w);
                    zero = zero && z && *z == 0;
                }
                if (!zero) continue;
                if (auto v = lookup(r, f.metric); v && (!best || *v * f.scale > *best)) best = *v * f.scale;
            }
        }
        return best;
    }
    const std::string stem = std::filesystem::path(f.scenario).stem().string();
    for (const auto& [name, r] : runs)
        if (name == stem) {
            auto v = lookup(r, f.metric);
            if (v) return *v * f.scale;
        }
    return std::nullopt;
}

} // namespace

std::string reality_table(const scenario::Experiment& x,
                          const std::vector<std::pair<std::string, results::RunResults>>& runs,
                          const MetricLookup& lookup) {
    std::string out = fmt::format("\n{} against published measurements (error = (predicted - published) / published):\n", x.id);
    std::vector<std::optional<double>> pred;
    for (const auto& f : x.published) {
        pred.push_back(predicted(f, runs, lookup));
        if (pred.back())
            out += fmt::format("  {}: published {:g} {}, predicted {:.6g} {}, error {:+.1f} %\n", f.figure, f.value, f.unit,
                               *pred.back(), f.unit, error_percent(*pred.back(), f.value));
        else
            out += fmt::format("  {}: published {:g} {}, predicted -, error - (no metric {} in {})\n", f.figure, f.value,
                               f.unit, f.metric, f.sweep.empty() ? f.scenario : "any run of the sweep that qualifies");
        if (!f.sweep.empty())
            out += fmt::format("      (predicted: the largest {} over the {} runs {}{})\n", f.metric, f.sweep.size(),
                               fmt::join(f.sweep, ", "),
                               f.where_zero.empty() ? "" : fmt::format(" whose {} are 0", fmt::join(f.where_zero, " and ")));
        out += fmt::format("      ({}: \"{}\")\n", f.source, f.quote);
    }
    auto index = [&](const std::string& figure) {
        for (std::size_t i = 0; i < x.published.size(); ++i)
            if (x.published[i].figure == figure) return i;
        return x.published.size(); // unreachable: the loader checked the names
    };
    for (const auto& r : x.ratios) {
        std::size_t n = index(r.numerator), d = index(r.denominator);
        double pub = x.published[n].value / x.published[d].value;
        if (pred[n] && pred[d] && *pred[d] > 0) {
            double p = *pred[n] / *pred[d];
            out += fmt::format("  {}: published ratio {:.3f}, predicted ratio {:.3f}, error {:+.1f} %\n", r.label, pub, p,
                               error_percent(p, pub));
        } else {
            out += fmt::format("  {}: published ratio {:.3f}, predicted ratio -, error -\n", r.label, pub);
        }
    }
    return out;
}

} // namespace kdsim::cli
