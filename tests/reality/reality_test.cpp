// The reality suite's contract: for every case in scenarios/reality/, the figures its manifest
// compares with are the ones its README publishes, the case runs, and the error that
// `kdsim experiments` prints is (predicted - published) / published computed from the README's
// figure (parsed here from the README text, not taken from the manifest). Plus the manifest's
// own bad-input errors.
#include "scenario/experiment.h"

#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

namespace kdsim {
namespace {

namespace fs = std::filesystem;
const fs::path ROOT = KDSIM_SOURCE_DIR;

struct Figure {
    double value;
    std::string unit;
};

// The README's published figures: lines "- **<figure>**: <value> <unit>".
std::map<std::string, Figure> readme_figures(const fs::path& readme) {
    std::ifstream in(readme);
    std::map<std::string, Figure> out;
    static const std::regex line(R"(^- \*\*(.+)\*\*: ([0-9]+(?:\.[0-9]+)?) (\S+)\s*$)");
    std::string s;
    std::smatch m;
    while (std::getline(in, s))
        if (std::regex_match(s, m, line)) out[m[1]] = {std::stod(m[2]), m[3]};
    return out;
}

std::vector<std::string> cases() {
    std::vector<std::string> out;
    for (const auto& e : fs::directory_iterator(ROOT / "scenarios/reality"))
        if (fs::exists(e.path() / "experiment.toml")) out.push_back(e.path().filename().string());
    std::sort(out.begin(), out.end());
    return out;
}

// Runs `kdsim experiments` on one case; returns its exit status and output.
std::pair<int, std::string> run_case(const std::string& name) {
    std::string cmd = std::string("'") + KDSIM_BINARY + "' experiments --dir '" + (ROOT / "scenarios/reality").string() +
                      "' --only " + name + " --brief 2>&1";
    FILE* p = popen(cmd.c_str(), "r");
    std::string out;
    char buf[4096];
    while (std::size_t n = std::fread(buf, 1, sizeof buf, p)) out.append(buf, n);
    int st = pclose(p);
    return {WIFEXITED(st) ? WEXITSTATUS(st) : -1, out};
}

class RealityCase : public ::testing::TestWithParam<std::string> {};

TEST_P(RealityCase, ManifestComparesWithTheFiguresItsReadmePublishes) {
    const fs::path dir = ROOT / "scenarios/reality" / GetParam();
    auto x = scenario::load_experiment(dir / "experiment.toml");
    auto readme = readme_figures(dir / "README.md");
    ASSERT_FALSE(x.published.empty()) << "a reality case declares at least one [[published]] figure";
    for (const auto& f : x.published) {
        auto it = readme.find(f.figure);
        ASSERT_NE(it, readme.end()) << "README.md gives no line '- **" << f.figure << "**: <value> <unit>'";
        EXPECT_EQ(it->second.value, f.value) << f.figure;
        EXPECT_EQ(it->second.unit, f.unit) << f.figure;
    }
}

TEST_P(RealityCase, RunsAndPrintsTheErrorAgainstTheReadmeFigure) {
    const fs::path dir = ROOT / "scenarios/reality" / GetParam();
    auto readme = readme_figures(dir / "README.md");
    auto [status, out] = run_case(GetParam());
    ASSERT_EQ(status, 0) << out;
    static const std::regex fig(
        R"(^  (.+): published (\S+) (\S+), predicted (\S+) \S+, error ([+-][0-9]+\.[0-9]) %$)");
    static const std::regex ratio(
        R"(^  (.+) / (.+): published ratio (\S+), predicted ratio (\S+), error ([+-][0-9]+\.[0-9]) %$)");
    std::map<std::string, double> predicted;
    std::istringstream lines(out);
    std::string s;
    std::smatch m;
    int figures = 0, ratios = 0;
    while (std::getline(lines, s)) {
        if (std::regex_match(s, m, ratio)) {
            // Ratio lines come after every figure line.
            const std::string num = m[1], den = m[2];
            ASSERT_TRUE(readme.count(num) && readme.count(den)) << s;
            ASSERT_TRUE(predicted.count(num) && predicted.count(den)) << s;
            const double pub = readme[num].value / readme[den].value;
            EXPECT_NEAR(std::stod(m[3]), pub, 0.0005) << s;
            const double pred = predicted[num] / predicted[den];
            EXPECT_NEAR(std::stod(m[4]), pred, 0.0005 + 1e-5 * pred) << s;
            EXPECT_NEAR(std::stod(m[5]), (pred - pub) / pub * 100.0, 0.06) << s;
            ++ratios;
        } else if (std::regex_match(s, m, fig)) {
            const std::string name = m[1];
            ASSERT_TRUE(readme.count(name)) << "printed figure not in README: " << s;
            const Figure& f = readme[name];
            EXPECT_EQ(std::stod(m[2]), f.value) << s;
            EXPECT_EQ(m[3].str(), f.unit) << s;
            const double pred = std::stod(m[4]);
            EXPECT_GT(pred, 0) << s;
            // The predicted value is printed to 6 significant digits; the error to 0.1 %.
            EXPECT_NEAR(std::stod(m[5]), (pred - f.value) / f.value * 100.0, 0.05 + 1e-4 * std::abs(pred / f.value) * 100)
                << s;
            predicted[name] = pred;
            ++figures;
        }
    }
    auto x = scenario::load_experiment(dir / "experiment.toml");
    EXPECT_EQ(figures, static_cast<int>(x.published.size())) << out;
    EXPECT_EQ(ratios, static_cast<int>(x.ratios.size())) << out;
}

INSTANTIATE_TEST_SUITE_P(Shipped, RealityCase, ::testing::ValuesIn(cases()),
                         [](const auto& info) {
                             std::string n = info.param;
                             for (char& c : n)
                                 if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
                             return n;
                         });

// ---- the manifest's bad input ----

struct TempManifest {
    fs::path dir = fs::temp_directory_path() / ("kdsim-reality-" + std::to_string(::getpid()));
    explicit TempManifest(const std::string& text) {
        fs::create_directories(dir);
        std::ofstream(dir / "a.toml") << "# a scenario file that only has to exist\n";
        std::ofstream(dir / "experiment.toml") << text;
    }
    ~TempManifest() { fs::remove_all(dir); }
    std::string error() const {
        try {
            scenario::load_experiment(dir / "experiment.toml");
        } catch (const scenario::InputError& e) {
            return e.what();
        }
        return "";
    }
};

const char* HEAD = "[experiment]\nid = \"R\"\ntitle = \"t\"\nscenarios = [\"a.toml\"]\n";
const char* FIG = "[[published]]\nfigure = \"f\"\nvalue = 3.06\nunit = \"Gbit/s\"\nsource = \"s\"\nquote = \"q\"\n"
                  "scenario = \"a.toml\"\nmetric = \"workload.iperf3.receiver_mbit_s\"\nscale = 0.001\n";

TEST(RealityManifest, AWellFormedFigureAndRatioLoad) {
    TempManifest t(std::string(HEAD) + FIG + "[[ratio]]\nlabel = \"f / f\"\nnumerator = \"f\"\ndenominator = \"f\"\n");
    auto x = scenario::load_experiment(t.dir / "experiment.toml");
    ASSERT_EQ(x.published.size(), 1u);
    EXPECT_EQ(x.published[0].value, 3.06);
    EXPECT_EQ(x.published[0].scale, 0.001);
    ASSERT_EQ(x.ratios.size(), 1u);
}

TEST(RealityManifest, ARatioOfAnUnknownFigureIsAnErrorAtItsLine) {
    TempManifest t(std::string(HEAD) + FIG + "[[ratio]]\nlabel = \"g / f\"\nnumerator = \"g\"\ndenominator = \"f\"\n");
    EXPECT_NE(t.error().find("experiment.toml:16:13: error: ratio[0].numerator: expected the figure of a [[published]] table, found \"g\""),
              std::string::npos)
        << t.error();
}

TEST(RealityManifest, AFigureOfAScenarioNotListedIsAnError) {
    std::string fig = FIG;
    fig.replace(fig.find("scenario = \"a.toml\""), 19, "scenario = \"b.toml\"");
    TempManifest t(std::string(HEAD) + fig);
    EXPECT_NE(t.error().find("published[0].scenario: expected one of experiment.scenarios, found \"b.toml\""), std::string::npos)
        << t.error();
}

TEST(RealityManifest, ASweptFigureLoadsItsRunsReductionAndZeroMetrics) {
    std::string fig = FIG;
    fig.replace(fig.find("scenario = \"a.toml\""), 19,
                "scenarios = [\"a.toml\", \"b.toml\"]\nreduce = \"max\"\nwhere_zero = [\"x/drops\"]");
    TempManifest t(std::string("[experiment]\nid = \"R\"\ntitle = \"t\"\nscenarios = [\"a.toml\", \"b.toml\"]\n") + fig);
    std::ofstream(t.dir / "b.toml") << "# a second scenario file\n";
    auto x = scenario::load_experiment(t.dir / "experiment.toml");
    ASSERT_EQ(x.published.size(), 1u);
    EXPECT_EQ(x.published[0].sweep, (std::vector<std::string>{"a.toml", "b.toml"}));
    EXPECT_EQ(x.published[0].where_zero, (std::vector<std::string>{"x/drops"}));
}

TEST(RealityManifest, ScenarioAndScenariosTogetherOrAReduceWithoutASweepAreErrors) {
    std::string both = FIG;
    both += "scenarios = [\"a.toml\", \"a.toml\"]\nreduce = \"max\"\n";
    TempManifest t(std::string(HEAD) + both);
    EXPECT_NE(t.error().find("published[0].scenario: expected either scenario or scenarios, found both"), std::string::npos)
        << t.error();
    std::string lone = FIG;
    lone += "reduce = \"max\"\n";
    TempManifest u(std::string(HEAD) + lone);
    EXPECT_NE(u.error().find("published[0].reduce: expected only with scenarios (a sweep), found it with scenario"),
              std::string::npos)
        << u.error();
}

TEST(RealityManifest, AZeroPublishedValueIsAnError) {
    std::string fig = FIG;
    fig.replace(fig.find("value = 3.06"), 12, "value = 0   ");
    TempManifest t(std::string(HEAD) + fig);
    EXPECT_NE(t.error().find("published[0].value: expected a number > 0, found integer 0"), std::string::npos) << t.error();
}

TEST(ExperimentManifest, ABreakdownTableLoadsItsPrefixAndColumns) {
    TempManifest t(std::string(HEAD) + "[breakdown]\nlabel = \"driver\"\nprefix = \"boot/cpu0/simd/alg\"\n"
                                       "[[breakdown.column]]\nlabel = \"cyc/bracket\"\nmetric = \"begin_end_cycles\"\nper = \"brackets\"\n");
    auto x = scenario::load_experiment(t.dir / "experiment.toml");
    ASSERT_TRUE(x.breakdown);
    EXPECT_EQ(x.breakdown->prefix, "boot/cpu0/simd/alg");
    ASSERT_EQ(x.breakdown->columns.size(), 1u);
    EXPECT_EQ(x.breakdown->columns[0].per, "brackets");
}

TEST(ExperimentManifest, ABreakdownColumnWithoutItsMetricIsAnErrorAtItsLine) {
    TempManifest t(std::string(HEAD) + "[breakdown]\nlabel = \"driver\"\nprefix = \"p\"\n[[breakdown.column]]\nlabel = \"x\"\n");
    EXPECT_NE(t.error().find("experiment.toml:8:1: error: breakdown.column[0].metric"), std::string::npos) << t.error();
}

} // namespace
} // namespace kdsim
