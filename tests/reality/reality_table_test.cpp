// The reality table's reduction of a swept figure (cli/reality.cpp): a published point of a curve
// is predicted by the largest metric over the sweep's runs whose where_zero metrics are all 0.
// Runs and metrics are made by hand; the lookup answers from a table keyed by run.
#include "cli/reality.h"

#include <gtest/gtest.h>

#include <map>

namespace kdsim {
namespace {

struct Sweep {
    std::vector<std::pair<std::string, results::RunResults>> runs;
    std::map<const results::RunResults*, std::map<std::string, double>> values;
    void add(const std::string& name, double rx, double drops, double sock) {
        runs.emplace_back(name, results::RunResults{});
        pending.push_back({rx, drops, sock});
    }
    cli::MetricLookup lookup() {
        for (std::size_t i = 0; i < runs.size(); ++i)
            values[&runs[i].second] = {{"rx", pending[i][0]}, {"drops", pending[i][1]}, {"sock", pending[i][2]}};
        return [this](const results::RunResults& r, const std::string& path) -> std::optional<double> {
            auto it = values.find(&r);
            if (it == values.end() || !it->second.count(path)) return std::nullopt;
            return it->second.at(path);
        };
    }
    std::vector<std::array<double, 3>> pending;
};

scenario::Experiment knee_manifest() {
    scenario::Experiment x;
    x.id = "R";
    scenario::PublishedFigure f;
    f.figure = "knee";
    f.value = 400;
    f.unit = "Mbit/s";
    f.source = "s";
    f.quote = "q";
    f.scenario = "r1.toml";
    f.metric = "rx";
    f.sweep = {"r1.toml", "r2.toml", "r3.toml", "r4.toml"};
    f.where_zero = {"drops", "sock"};
    x.published.push_back(f);
    return x;
}

TEST(RealityTable, ASweptFigureIsTheLargestMetricAmongTheRunsWithEveryWhereZeroMetricAtZero) {
    // r3 receives most (350) but dropped at the ring, r4 (320) at the socket: the knee is r2's
    // 300, an error of (300 - 400) / 400 = -25.0 %.
    Sweep s;
    s.add("r1", 100, 0, 0);
    s.add("r2", 300, 0, 0);
    s.add("r3", 350, 5, 0);
    s.add("r4", 320, 0, 2);
    const std::string out = cli::reality_table(knee_manifest(), s.runs, s.lookup());
    EXPECT_NE(out.find("  knee: published 400 Mbit/s, predicted 300 Mbit/s, error -25.0 %"), std::string::npos) << out;
    EXPECT_NE(out.find("the largest rx over the 4 runs r1.toml, r2.toml, r3.toml, r4.toml whose drops and sock are 0"),
              std::string::npos)
        << out;
}

TEST(RealityTable, ASweptFigureWithNoQualifyingRunHasNoPrediction) {
    Sweep s;
    s.add("r1", 100, 1, 0);
    s.add("r2", 300, 0, 1);
    const std::string out = cli::reality_table(knee_manifest(), s.runs, s.lookup());
    EXPECT_NE(out.find("  knee: published 400 Mbit/s, predicted -, error - (no metric rx in any run of the sweep that qualifies)"),
              std::string::npos)
        << out;
}

} // namespace
} // namespace kdsim
