// The HTML report's page and figures, from hand-made results (report/html.h).
#include "report/html.h"
#include "report/web_assets.h"

#include <gtest/gtest.h>

namespace kdsim::report::html {
namespace {

namespace html = ::kdsim::report::html;

results::RunResults run_with(double mbit_s, std::uint64_t softirq_crypto, std::uint64_t task_copy) {
    results::RunResults r;
    r.scenario = "s";
    r.seed = 1;
    r.mode = "timing";
    results::MachineResult m;
    m.name = "dut";
    results::CpuResult c;
    c.id = 0;
    c.cycles["softirq"]["crypto"] = softirq_crypto;
    c.cycles["task"]["copy"] = task_copy;
    m.cpus.push_back(c);
    r.machines.push_back(m);
    results::WorkloadResult w;
    w.name = "iperf3";
    w.machine = "dut";
    w.metrics = {{"receiver_mbit_s", mbit_s, "Mbit/s"}, {"segments", 10, "count"}};
    r.workloads.push_back(w);
    results::WorkloadResult probe;
    probe.name = "cyclictest";
    probe.metrics = {{"latency_min_us", 1, "us"}, {"latency_p50_us", 2, "us"}, {"latency_p999_us", 7, "us"}, {"latency_max_us", 9, "us"}};
    r.workloads.push_back(probe);
    return r;
}

nlohmann::json declared(const std::string& page) {
    const std::string open = "<script type=\"application/json\" id=\"kdsim-figures\">";
    const std::size_t a = page.find(open) + open.size();
    return nlohmann::json::parse(page.substr(a, page.find("</script>", a) - a));
}

Group experiment() {
    Group g;
    g.kind = Group::Kind::EXPERIMENT;
    g.id = "E9";
    g.title = "t";
    g.columns = {{"rx per segment", "workload.iperf3.receiver_mbit_s", "workload.iperf3.segments"}};
    g.compares = {{"before", "after"}};
    g.runs.push_back(html::Run{"before", "b.json", run_with(400, 300, 100)});
    g.runs.push_back(html::Run{"after", "a.json", run_with(900, 50, 100)});
    return g;
}

TEST(Html, EscapeReplacesTheFiveMarkupCharacters) {
    EXPECT_EQ(escape("a<b>&\"c'"), "a&lt;b&gt;&amp;&quot;c&#39;");
}

TEST(Html, ColumnValueDividesTheMetricByItsPerFigure) {
    EXPECT_DOUBLE_EQ(*column_value(run_with(400, 1, 1), {"x", "workload.iperf3.receiver_mbit_s", "workload.iperf3.segments"}), 40.0);
    EXPECT_FALSE(column_value(run_with(400, 1, 1), {"x", "workload.iperf3.nothing", ""}).has_value());
}

TEST(Html, ExperimentHasThroughputCycleAndLatencyFiguresInThatOrder) {
    std::vector<Figure> f = figures_of(experiment());
    ASSERT_EQ(f.size(), 3u);
    EXPECT_EQ(f[0].title, "Throughput before and after");
    EXPECT_EQ(f[1].title, "Cycle attribution per CPU and context");
    EXPECT_EQ(f[2].title, "Latency distributions (CDF)");
}

TEST(Html, BeforeAfterBarsCarryBothRunsValuesAndTheirRatio) {
    Figure f = figures_of(experiment())[0];
    const auto& rows = f.spec["data"]["values"];
    ASSERT_EQ(rows.size(), 2u); // one rate metric, one pair
    EXPECT_EQ(rows[0]["role"], "before");
    EXPECT_DOUBLE_EQ(rows[0]["value"].get<double>(), 400);
    EXPECT_EQ(rows[1]["role"], "after");
    EXPECT_DOUBLE_EQ(rows[1]["value"].get<double>(), 900);
    EXPECT_NE(f.table_html.find("2.25"), std::string::npos); // 900 / 400
}

TEST(Html, CycleBarsAreOnePerRunCpuAndContextWithEachCategorysCycles) {
    Figure f = figures_of(experiment())[1];
    const auto& rows = f.spec["data"]["values"];
    ASSERT_EQ(rows.size(), 4u); // 2 runs x (softirq crypto, task copy)
    EXPECT_EQ(rows[0]["bar"], "before \u00b7 dut/cpu0 \u00b7 softirq");
    EXPECT_EQ(rows[0]["cycles"], 300);
    EXPECT_EQ(f.spec["encoding"]["y"]["sort"].size(), 4u);
}

TEST(Html, LatencyCdfPutsEachPercentileAtItsFraction) {
    Figure f = figures_of(experiment())[2];
    const auto& rows = f.spec["data"]["values"];
    ASSERT_EQ(rows.size(), 8u); // 2 runs x min, p50, p99.9, max
    EXPECT_DOUBLE_EQ(rows[0]["fraction"].get<double>(), 0.0);
    EXPECT_DOUBLE_EQ(rows[1]["fraction"].get<double>(), 0.5);
    EXPECT_DOUBLE_EQ(rows[2]["fraction"].get<double>(), 0.999);
    EXPECT_DOUBLE_EQ(rows[2]["latency_us"].get<double>(), 7);
    EXPECT_DOUBLE_EQ(rows[3]["fraction"].get<double>(), 1.0);
}

TEST(Html, SweepPlotsEachMetricAgainstTheFirstKeyInPointOrder) {
    Group g;
    g.kind = Group::Kind::SWEEP;
    g.id = "x.toml";
    g.sweep_keys = {"link[0].rate"};
    for (const char* v : {"2Gbit/s", "1Gbit/s"}) {
        results::RunResults r = run_with(v[0] == '2' ? 1800 : 900, 1, 1);
        r.sweep_point = {{"link[0].rate", v}};
        g.runs.push_back(html::Run{std::string("p") + v, "p.json", r});
    }
    std::vector<Figure> f = figures_of(g);
    ASSERT_EQ(f.back().title, "Sweep: metrics against link[0].rate");
    const auto& spec = f.back().spec;
    EXPECT_EQ(spec["spec"]["layer"][0]["encoding"]["x"]["sort"], nlohmann::json({"2Gbit/s", "1Gbit/s"}));
    int rate_rows = 0;
    for (const auto& row : spec["data"]["values"]) rate_rows += row["metric"] == "iperf3.receiver_mbit_s (Mbit/s)";
    EXPECT_EQ(rate_rows, 2);
}

TEST(Html, PublishedFigureSitsBesideTheScaledPredictionAndItsError) {
    Group g = experiment();
    g.published = {{"rx", 0.5, "Gbit/s", "a paper", "after", "workload.iperf3.receiver_mbit_s", 0.001}};
    std::vector<Figure> f = figures_of(g);
    ASSERT_EQ(f.front().title, "Published measurements and kdsim's predictions");
    const auto& rows = f.front().spec["data"]["values"];
    ASSERT_EQ(rows.size(), 2u);
    EXPECT_DOUBLE_EQ(rows[0]["value"].get<double>(), 0.5);
    EXPECT_DOUBLE_EQ(rows[1]["value"].get<double>(), 0.9); // 900 Mbit/s x 0.001
    EXPECT_NE(f.front().table_html.find("80 %"), std::string::npos); // (0.9 - 0.5) / 0.5
}

TEST(Html, PageDeclaresEveryFigureOnceAndInlinesTheLibraries) {
    const std::string p = page({experiment()}, {});
    const nlohmann::json figs = declared(p);
    ASSERT_EQ(figs.size(), 3u);
    for (std::size_t i = 0; i < figs.size(); ++i) {
        const std::string id = "fig" + std::to_string(i + 1);
        EXPECT_EQ(figs[i]["id"], id);
        EXPECT_NE(p.find("<div class=plot id=\"" + id + "\">"), std::string::npos);
    }
    EXPECT_NE(p.find(web::vega_embed_js().substr(0, 200)), std::string::npos);
    EXPECT_GT(web::vega_js().size(), 100000u);
    EXPECT_EQ(p.find("src=\"http"), std::string::npos); // nothing loaded from the network
}

TEST(Html, NamesCannotCloseTheScriptElements) {
    Group g = experiment();
    g.runs[0].label = "</script><script>alert(1)</script>";
    g.compares.clear();
    const std::string p = page({g}, {});
    EXPECT_EQ(p.find("<script>alert(1)"), std::string::npos);
    EXPECT_EQ(declared(p).size(), 3u);
}

TEST(Html, SamePageForTheSameInput) {
    EXPECT_EQ(page({experiment()}, {"n"}), page({experiment()}, {"n"}));
}

} // namespace
} // namespace kdsim::report::html
