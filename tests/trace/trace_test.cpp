// The run trace of shipped scenarios, read back as a viewer would: valid Trace Event Format JSON,
// slices on each CPU properly nested, every cycle the results attribute present as an exec slice,
// the same bytes for the same seed, and the run's results unchanged by tracing.
#include "report/report.h"
#include "results/lookup.h"
#include "scenario/load.h"
#include "system/system.h"

#include <nlohmann/json.hpp>

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <map>
#include <string>
#include <tuple>
#include <vector>

namespace kdsim {
namespace {

const std::filesystem::path ROOT = KDSIM_SOURCE_DIR;

struct Traced {
    results::RunResults results;
    std::string trace; // empty when not traced
};

Traced run(const std::string& rel, bool trace, std::size_t limit = 5'000'000) {
    scenario::LoadOptions lo;
    system::ScenarioConfig cfg = scenario::load_scenario(ROOT / rel, lo);
    system::System sys(cfg);
    if (trace) {
        EXPECT_TRUE(sys.enable_trace(limit));
    }
    Traced t;
    t.results = sys.run();
    if (sys.trace()) sys.write_trace([&](std::string_view s) { t.trace.append(s); });
    return t;
}

// Microseconds with 6 decimals back to integer picoseconds.
std::int64_t ps(const nlohmann::json& v) { return std::llround(v.get<double>() * 1e6); }

// Checks the document's structure and the nesting of the slices of every (pid, tid); returns
// the cycles of the exec slices by (pid, tid, context, category). In a `complete` trace every exec
// slice lies inside a context slice (a truncated one may have lost the parents).
std::map<std::tuple<int, int, std::string, std::string>, std::uint64_t> check(const nlohmann::json& doc,
                                                                               bool complete = true) {
    std::map<std::tuple<int, int, std::string, std::string>, std::uint64_t> cycles;
    EXPECT_EQ(doc.at("displayTimeUnit"), "ns");
    std::map<std::pair<int, int>, std::vector<std::pair<std::int64_t, std::int64_t>>> open; // (begin, end) stacks
    std::map<std::pair<int, int>, std::int64_t> last_ts;
    std::map<std::pair<int, int>, bool> named;
    std::size_t slices = 0, bad = 0;
    for (const nlohmann::json& e : doc.at("traceEvents")) {
        const std::string ph = e.at("ph");
        const std::pair<int, int> key{e.at("pid").get<int>(), e.at("tid").get<int>()};
        if (ph == "M") {
            if (e.at("name") == "thread_name") named[key] = true;
            continue;
        }
        EXPECT_TRUE(named.count(key)) << "events on an unnamed thread " << key.first << "/" << key.second;
        const std::int64_t ts = ps(e.at("ts"));
        EXPECT_GE(ts, 0);
        if (ph == "i") continue;
        if (ph != "X") {
            ADD_FAILURE() << "unexpected event " << e.dump();
            continue;
        }
        EXPECT_GE(ts, last_ts[key]) << "slices of one CPU out of time order";
        last_ts[key] = ts;
        const std::int64_t dur = ps(e.at("dur"));
        EXPECT_GT(dur, 0) << e.dump();
        const std::int64_t end = ts + dur;
        auto& stack = open[key];
        while (!stack.empty() && stack.back().second <= ts) stack.pop_back();
        if (!stack.empty() && end > stack.back().second) {
            if (++bad <= 5)
                ADD_FAILURE() << "slice " << e.dump() << " ends at " << end << " ps, after its parent ["
                              << stack.back().first << ", " << stack.back().second << "]";
        }
        const std::string cat = e.at("cat");
        if (e.contains("args") && e.at("args").contains("cycles")) {
            if (complete) {
                EXPECT_FALSE(stack.empty()) << "an exec slice outside any context: " << e.dump();
            }
            cycles[{key.first, key.second, cat, e.at("name").get<std::string>()}] += e.at("args").at("cycles").get<std::uint64_t>();
        }
        stack.emplace_back(ts, end);
        ++slices;
    }
    EXPECT_GT(slices, 0u);
    return cycles;
}

class TraceOfScenario : public ::testing::TestWithParam<const char*> {};

TEST_P(TraceOfScenario, IsValidNestedAndAccountsForEveryCycle) {
    if constexpr (!kernel::TRACE_COMPILED) GTEST_SKIP() << "built with KDSIM_TRACE=OFF";
    Traced t = run(GetParam(), true);
    const nlohmann::json doc = nlohmann::json::parse(t.trace);
    EXPECT_FALSE(doc.at("otherData").at("truncated").get<bool>());
    auto cycles = check(doc);
    // The exec slices' cycles are the results' cycle attribution, CPU by CPU.
    for (std::size_t m = 0; m < t.results.machines.size(); ++m)
        for (const results::CpuResult& c : t.results.machines[m].cpus) {
            const int pid = static_cast<int>(m) + 1;
            const int tid = pid * 1000 + c.id;
            for (const auto& [ctx, cats] : c.cycles)
                for (const auto& [cat, n] : cats) {
                    auto k = std::make_tuple(pid, tid, ctx, cat);
                    EXPECT_EQ(cycles[k], n) << t.results.machines[m].name << " cpu" << c.id << " " << ctx << "/" << cat;
                    cycles.erase(k);
                }
        }
    for (const auto& [k, n] : cycles) EXPECT_EQ(n, 0u) << "cycles in the trace but not in the results";
}

INSTANTIATE_TEST_SUITE_P(Shipped, TraceOfScenario,
                         ::testing::Values("scenarios/e2/yield-4k-probe.toml", "scenarios/e1/esp-gcm-h2g-softirq.toml",
                                           "scenarios/e4/pmr-enabled.toml", "scenarios/unsafe/x86-no-inuse-check.toml",
                                           "scenarios/softirq-simd/arm32-softirq-neon-syscall.toml"));

TEST(Trace, SameScenarioAndSeedGiveTheSameBytes) {
    if constexpr (!kernel::TRACE_COMPILED) GTEST_SKIP() << "built with KDSIM_TRACE=OFF";
    const std::string a = run("scenarios/e2/yield-4k-probe.toml", true).trace;
    const std::string b = run("scenarios/e2/yield-4k-probe.toml", true).trace;
    EXPECT_GT(a.size(), 1000u);
    EXPECT_TRUE(a == b);
}

TEST(Trace, TracingDoesNotChangeTheResults) {
    if constexpr (!kernel::TRACE_COMPILED) GTEST_SKIP() << "built with KDSIM_TRACE=OFF";
    for (const char* s : {"scenarios/e2/yield-4k-probe.toml", "scenarios/e5/imx6qp-mtu-partial-sync.toml"}) {
        const std::string plain = report::to_json_text(run(s, false).results);
        const std::string traced = report::to_json_text(run(s, true).results);
        EXPECT_TRUE(plain == traced) << s;
    }
}

TEST(Trace, ALimitedTraceSaysItWasCutAndStillNests) {
    if constexpr (!kernel::TRACE_COMPILED) GTEST_SKIP() << "built with KDSIM_TRACE=OFF";
    Traced t = run("scenarios/e2/yield-4k-probe.toml", true, 500);
    const nlohmann::json doc = nlohmann::json::parse(t.trace);
    const nlohmann::json& other = doc.at("otherData");
    EXPECT_TRUE(other.at("truncated").get<bool>());
    EXPECT_EQ(other.at("records"), 500);
    EXPECT_GT(other.at("dropped_records").get<std::uint64_t>(), 0u);
    EXPECT_TRUE(other.contains("truncated_at_us"));
    check(doc, false);
}

TEST(Trace, ClobbersAreInstantEventsWithBothContexts) {
    if constexpr (!kernel::TRACE_COMPILED) GTEST_SKIP() << "built with KDSIM_TRACE=OFF";
    Traced t = run("scenarios/unsafe/x86-no-inuse-check.toml", true);
    ASSERT_GT(results::finding_count(t.results, "simd_clobber"), 0u);
    const nlohmann::json doc = nlohmann::json::parse(t.trace);
    std::uint64_t n = 0;
    for (const nlohmann::json& e : doc.at("traceEvents"))
        if (e.at("name") == "simd clobber") {
            ++n;
            EXPECT_EQ(e.at("ph"), "i");
            EXPECT_FALSE(e.at("args").at("victim").get<std::string>().empty());
            EXPECT_FALSE(e.at("args").at("culprit").get<std::string>().empty());
        }
    EXPECT_EQ(n, results::finding_count(t.results, "simd_clobber"));
}

} // namespace
} // namespace kdsim
