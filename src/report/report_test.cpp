// Unit tests of the report layer. Every RunResults here is built by hand, so each expectation
// can be checked against numbers written in the test.
#include "report/report.h"

#include "report/format.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

namespace kdsim::report {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// One machine "dut" at 1 GHz with one CPU, two workloads, and optionally findings: five clobbers
// (two kept) and one authentication failure.
// At 1 GHz one cycle is 1 ns, so 2,000,000 task cycles are 2,000 µs.
results::RunResults sample(bool with_clobbers = false) {
    results::RunResults r;
    r.scenario = "wg-rx-neon";
    r.scenario_path = "scenarios/wg-rx-neon.toml";
    r.description = "WireGuard receive with NEON in 4K chunks";
    r.seed = 42;
    r.mode = "timing";
    r.simulated_us = 10'000;
    r.events = 123'456;

    results::MachineResult m;
    m.name = "dut";
    m.profile = "cortex-a9";
    m.arch = "arm";
    m.clock_hz = 1'000'000'000;
    m.preempt = "voluntary";
    m.simd_policy = "eager";
    m.chunking = "4096";

    results::CpuResult c;
    c.id = 0;
    c.busy_us = 3'000;
    c.idle_us = 7'000;
    c.cycles["task"]["crypto"] = 1'500'000;
    c.cycles["task"]["copy"] = 500'000;
    c.cycles["softirq"]["crypto"] = 600'000;
    c.cycles["softirq"]["protocol"] = 300'000;
    c.cycles["hardirq"]["irq_entry_exit"] = 100'000;
    c.longest_np_span_us = 61.5;
    c.longest_np_span_start_us = 4'321.25;
    c.longest_np_holder = "softirq NET_RX (chacha20 decrypt)";
    c.simd.bytes_per_bracket_log2_hist = std::vector<std::uint64_t>(14, 0);
    c.simd.bytes_per_bracket_log2_hist[10] = 2;   // 1K-2K
    c.simd.bytes_per_bracket_log2_hist[12] = 123; // 4K-8K
    c.simd.longest_bracket_us = 8.5;
    c.simd.longest_bracket_cycles = 8'500;
    c.simd.longest_bracket_bytes = 4'096;
    c.simd.longest_bracket_start_us = 1'000;
    c.simd.longest_bracket_holder = "softirq NET_RX";
    m.cpus.push_back(c);
    r.machines.push_back(m);
    r.statistics = {
        {"dut/cpu0/hardirqs", "count", "hard interrupts taken", 1'000, true},
        {"dut/cpu0/softirq/runs", "count", "__do_softirq invocations", 900, true},
        {"dut/cpu0/softirq/restarts", "count", "extra rounds", 3, true},
        {"dut/cpu0/sched/context_switches", "count", "switches", 250, true},
        {"dut/cpu0/watchdog/soft_lockups", "count", "soft lockups", 0, true},
        {"dut/cpu0/simd/brackets", "count", "brackets", 125, true},
        {"dut/cpu0/simd/save_restore_cycles", "cycles", "cycles of saves and restores", 2'100, true},
        {"dut/cpu0/simd/fallbacks", "count", "generic code ran", 4, true},
        {"dut/netdev/eth0/rx_dropped", "count", "rx ring full", 7, true},
        {"dut/dma/busy_share", "1", "a real-valued figure", 0.25, false},
    };

    r.workloads.push_back({"iperf-rx", "iperf", "dut", 0,
                           {{"throughput_mbps", 941.2, "Mbit/s"}, {"packets", 80'000, "count"}, {"latency_p99_us", 120.5, "us"}}, {}});
    r.workloads.push_back({"probe", "cyclictest", "dut", 0, {{"latency_max_us", 61.75, "us"}, {"samples", 1'000, "count"}}, {}});

    if (with_clobbers) {
        r.findings.push_back({"simd_clobber", "dut", 0, 1'234.5, "softirq NET_RX kernel_neon_begin", "task simd-user (q8-q15 live)", "chacha20_neon"});
        r.findings.push_back({"simd_clobber", "dut", 0, 2'345.25, "hardirq eth0", "task simd-user (q0-q7 live)", "kernel_neon_end"});
        r.findings.push_back({"auth_failure", "dut", 0, 2'400, "clobbered SIMD registers in the AEAD", "esp packet 7", "esp_input_done2"});
        r.finding_counts.push_back({"simd_clobber", "dut", 5});
        r.finding_counts.push_back({"auth_failure", "dut", 1});
        r.failed = true;
        r.failures.push_back("5 SIMD register clobbers");
    }
    return r;
}

std::vector<std::string> lines_of(const std::string& text) {
    std::vector<std::string> lines;
    std::istringstream in(text);
    for (std::string l; std::getline(in, l);) lines.push_back(l);
    return lines;
}

// The line of `text` that contains `needle`, or "" if none does.
std::string line_with(const std::string& text, const std::string& needle) {
    for (const auto& l : lines_of(text))
        if (l.find(needle) != std::string::npos) return l;
    return "";
}

// ---- JSON --------------------------------------------------------------------------------

TEST(Json, FromJsonOfToJsonGivesEqualJson) {
    // Claim: from_json is the inverse of to_json, including findings, failures and metrics.
    results::RunResults r = sample(true);
    json once = to_json(r);
    EXPECT_EQ(to_json(from_json(once)), once);
    // Also through text, as `compare` reads saved files.
    EXPECT_EQ(to_json_text(from_json(json::parse(to_json_text(r)))), to_json_text(r));
}

TEST(Json, PerDriverHoldersOfTheLongestBracketSurviveARoundTripInOrder) {
    results::RunResults r = sample(true);
    r.machines[0].cpus[0].simd.longest_bracket_holder_by_driver = {{"sha512-avx2", "kernel_fpu_begin in task context of modprobe"},
                                                                   {"sha1-ni", "kernel_fpu_begin in task context of cryptomgr"}};
    const auto back = from_json(json::parse(to_json_text(r))).machines[0].cpus[0].simd.longest_bracket_holder_by_driver;
    ASSERT_EQ(back.size(), 2u);
    EXPECT_EQ(back[0].first, "sha512-avx2");
    EXPECT_EQ(back[1].second, "kernel_fpu_begin in task context of cryptomgr");
    EXPECT_FALSE(to_json(sample(true))["machines"][0]["cpus"][0]["simd"].contains("longest_bracket_holder_by_driver"));
}

TEST(Json, SweepPointIsWrittenOnlyForASweepAndReadBackInOrder) {
    // Claim: a single run's JSON has no sweep_point key (files of single runs are unchanged); a
    // sweep point's values come back in the order the sweep gave them.
    EXPECT_FALSE(to_json(sample()).contains("sweep_point"));
    results::RunResults r = sample();
    r.sweep_point = {{"machine[0].nic.rx_buffer", "9KiB"}, {"link[0].rate", "\"1 Gbit/s\""}};
    json j = to_json(r);
    ASSERT_TRUE(j.contains("sweep_point"));
    EXPECT_EQ(j["sweep_point"][1]["key"], "link[0].rate");
    EXPECT_EQ(from_json(j).sweep_point, r.sweep_point);
}

TEST(Json, APrivateProfileIsWrittenWithItsFileAndHashAndAStockOneWithoutAFile) {
    results::RunResults r = sample();
    r.machines[0].profile_sha256 = std::string(64, 'a');
    json stock = json::parse(to_json_text(r));
    EXPECT_EQ(stock["machines"][0]["profile_sha256"], std::string(64, 'a'));
    EXPECT_FALSE(stock["machines"][0].contains("profile_file"));
    r.machines[0].profile_file = "/home/me/profiles/arm/x.toml";
    json priv = json::parse(to_json_text(r));
    EXPECT_EQ(priv["machines"][0]["profile_file"], "/home/me/profiles/arm/x.toml");
    const results::RunResults back = from_json(priv);
    EXPECT_EQ(back.machines[0].profile_file, "/home/me/profiles/arm/x.toml");
    EXPECT_EQ(back.machines[0].profile_sha256, std::string(64, 'a'));
}

TEST(Json, TextIsByteIdenticalForTwoEqualInputs) {
    // Two independently built but equal results must serialise to the same bytes.
    EXPECT_EQ(to_json_text(sample(true)), to_json_text(sample(true)));
}

void expect_sorted_keys(const nlohmann::ordered_json& j, const std::string& path) {
    if (j.is_object()) {
        std::string previous;
        bool first = true;
        for (const auto& [key, value] : j.items()) {
            if (!first) {
                EXPECT_LT(previous, key) << "at " << path;
            }
            previous = key;
            first = false;
            expect_sorted_keys(value, path + "." + key);
        }
    } else if (j.is_array()) {
        for (std::size_t i = 0; i < j.size(); ++i) expect_sorted_keys(j[i], path + "[" + std::to_string(i) + "]");
    }
}

TEST(Json, KeysAreSortedAtEveryLevelOfTheText) {
    // ordered_json keeps the keys in the order of the text, so this checks the text itself.
    expect_sorted_keys(nlohmann::ordered_json::parse(to_json_text(sample(true))), "");
}

TEST(Json, TextEndsWithOneNewlineAndUsesTwoSpaceIndent) {
    std::string text = to_json_text(sample());
    ASSERT_FALSE(text.empty());
    EXPECT_EQ(text.back(), '\n');
    EXPECT_NE(text.substr(text.size() - 2, 1), "\n");
    EXPECT_EQ(text.substr(0, 4), "{\n  ");
}

TEST(Json, FloatsAreRoundedToTwelveSignificantDigits) {
    // 0.1 + 0.2 is 0.30000000000000004 in binary; twelve digits make it 0.3.
    results::RunResults r = sample();
    r.simulated_us = 0.1 + 0.2;
    std::string text = to_json_text(r);
    EXPECT_NE(text.find("\"simulated_us\": 0.3,"), std::string::npos) << text;
    EXPECT_EQ(text.find("30000000000000004"), std::string::npos);
}

TEST(Json, UnitsAreInKeyNamesOrInTheMetricUnit) {
    json j = to_json(sample());
    const json& cpu = j["machines"][0]["cpus"][0];
    EXPECT_EQ(j["machines"][0]["clock_hz"], 1'000'000'000u);
    EXPECT_EQ(cpu["idle_us"], 7000.0);
    EXPECT_EQ(j["statistics"][6], (json{{"path", "dut/cpu0/simd/save_restore_cycles"},
                                        {"unit", "cycles"},
                                        {"description", "cycles of saves and restores"},
                                        {"value", 2'100u}}));
    EXPECT_TRUE(j["statistics"][6]["value"].is_number_unsigned());
    EXPECT_TRUE(j["statistics"][9]["value"].is_number_float());
    EXPECT_EQ(cpu["cycles"]["task"]["crypto"], 1'500'000u);
    EXPECT_EQ(j["workloads"][0]["metrics"][0], (json{{"key", "throughput_mbps"}, {"unit", "Mbit/s"}, {"value", 941.2}}));
}

TEST(Json, DerivedBlockConvertsCyclesToMicrosecondsWithTheClock) {
    // 2,000,000 task cycles at 1 GHz are 2,000 µs.
    const json j = to_json(sample());
    const json& derived = j["machines"][0]["cpus"][0]["derived"];
    EXPECT_EQ(derived["context_us"]["task"], 2000.0);
    EXPECT_EQ(derived["category_cycles"]["crypto"], 2'100'000u);
    EXPECT_EQ(derived["total_cycles"], 3'000'000u);
}

TEST(Json, NonFiniteValuesAreWrittenAsNullAndReadBackAsNan) {
    results::RunResults r = sample();
    r.workloads[0].metrics[0].value = std::nan("");
    json j = to_json(r);
    EXPECT_TRUE(j["workloads"][0]["metrics"][0]["value"].is_null());
    EXPECT_TRUE(std::isnan(from_json(j).workloads[0].metrics[0].value));
}

TEST(Json, FromJsonNamesThePathOfAMissingKey) {
    json j = to_json(sample());
    j["machines"][0]["cpus"][0].erase("idle_us");
    try {
        from_json(j);
        FAIL() << "expected std::runtime_error";
    } catch (const std::runtime_error& e) {
        EXPECT_STREQ(e.what(), "results JSON: machines[0].cpus[0]: missing key \"idle_us\"");
    }
}

TEST(Json, FromJsonRejectsAMistypedValueWithItsPath) {
    json j = to_json(sample());
    j["workloads"][1]["metrics"][0]["value"] = "fast";
    try {
        from_json(j);
        FAIL() << "expected std::runtime_error";
    } catch (const std::runtime_error& e) {
        EXPECT_STREQ(e.what(), "results JSON: workloads[1].metrics[0].value: expected a number, found string");
    }
}

TEST(Json, FromJsonRejectsAnotherFormatVersion) {
    json j = to_json(sample());
    j["format_version"] = 2; // before findings were typed
    EXPECT_THROW(from_json(j), std::runtime_error);
}

TEST(Json, StatisticsKeepTheirOrderAndWhetherTheyAreCounters) {
    const results::RunResults r = from_json(to_json(sample()));
    ASSERT_EQ(r.statistics.size(), sample().statistics.size());
    EXPECT_EQ(r.statistics[0].path, "dut/cpu0/hardirqs");
    EXPECT_TRUE(r.statistics[0].integral);
    EXPECT_EQ(r.statistics[9].path, "dut/dma/busy_share");
    EXPECT_FALSE(r.statistics[9].integral);
    EXPECT_EQ(r.statistics[9].value, 0.25);
}

TEST(Json, SteadyStateIsWrittenOnlyWhenPresentAndReadBack) {
    EXPECT_FALSE(to_json(sample()).contains("steady_state")); // other runs' files are unchanged
    results::RunResults in = sample();
    in.steady_state.push_back({"workload.iperf3.receiver_mbit_s", "Mbit/s", 338.25, 2.125, 0.95, 10, 2000, 10000});
    const results::RunResults r = from_json(to_json(in));
    ASSERT_EQ(r.steady_state.size(), 1u);
    EXPECT_EQ(r.steady_state[0].path, "workload.iperf3.receiver_mbit_s");
    EXPECT_EQ(r.steady_state[0].unit, "Mbit/s");
    EXPECT_EQ(r.steady_state[0].half_width, 2.125);
    EXPECT_EQ(r.steady_state[0].batches, 10u);
    EXPECT_EQ(r.steady_state[0].warm_up_us, 10000);
}

// ---- summary -----------------------------------------------------------------------------

TEST(Summary, FailedRunListsEveryKeptFindingWithItsKindAndEndsWithResultFailed) {
    std::string s = summary_table(sample(true));
    EXPECT_NE(line_with(s, "  findings ").find("6 (first 3 shown)"), std::string::npos) << s;
    EXPECT_NE(s.find("#1  simd_clobber at 1,234.500 µs on dut cpu 0"), std::string::npos) << s;
    EXPECT_NE(s.find("victim   task simd-user (q8-q15 live)"), std::string::npos);
    EXPECT_NE(s.find("culprit  softirq NET_RX kernel_neon_begin"), std::string::npos);
    EXPECT_NE(s.find("where    chacha20_neon"), std::string::npos);
    EXPECT_NE(s.find("#2  simd_clobber at 2,345.250 µs on dut cpu 0"), std::string::npos);
    EXPECT_NE(s.find("#3  auth_failure at 2,400.000 µs on dut cpu 0"), std::string::npos);
    EXPECT_NE(s.find("victim   esp packet 7"), std::string::npos);
    EXPECT_EQ(lines_of(s).back(), "RESULT: FAILED (5 SIMD register clobbers)");
}

TEST(Summary, CleanRunEndsWithResultOk) {
    std::string s = summary_table(sample(false));
    EXPECT_EQ(lines_of(s).back(), "RESULT: OK");
    EXPECT_EQ(s.find("FAILED"), std::string::npos);
}

TEST(Summary, FailedRunWithoutReasonsStillSaysFailed) {
    results::RunResults r = sample(false);
    r.failed = true;
    EXPECT_EQ(lines_of(summary_table(r)).back(), "RESULT: FAILED (no reason recorded)");
}

TEST(Summary, HeaderShowsScenarioSeedModeTimeAndEvents) {
    std::string s = summary_table(sample());
    EXPECT_EQ(lines_of(s).front(), "kdsim run summary: wg-rx-neon");
    EXPECT_NE(line_with(s, "seed").find("42"), std::string::npos);
    EXPECT_NE(line_with(s, "mode").find("timing"), std::string::npos);
    EXPECT_NE(line_with(s, "simulated time").find("10,000.000 µs"), std::string::npos);
    EXPECT_NE(line_with(s, "events").find("123,456"), std::string::npos);
    EXPECT_NE(line_with(s, "clock").find("1 GHz (1,000,000,000 Hz)"), std::string::npos);
    EXPECT_NE(line_with(s, "preemption model").find("voluntary"), std::string::npos);
}

TEST(Summary, ProfileOverridesAreAnnouncedInCapitals) {
    results::RunResults r = sample();
    EXPECT_NE(summary_table(r).find("profile overrides   none (stock profile)"), std::string::npos);
    r.machines[0].overrides = {"simd.save_cycles = 300"};
    std::string s = summary_table(r);
    EXPECT_NE(s.find("PROFILE OVERRIDES on machine dut: 1 figure replaced"), std::string::npos) << s;
    EXPECT_NE(s.find("PROFILE OVERRIDES: 1 profile figure replaced by the scenario"), std::string::npos);
    EXPECT_NE(s.find("    simd.save_cycles = 300\n"), std::string::npos);
}

TEST(Summary, APrivateProfileIsAnnouncedInCapitalsWithItsPathAndHash) {
    results::RunResults r = sample();
    r.machines[0].profile_file = "/home/me/profiles/arm/x.toml";
    r.machines[0].profile_sha256 = std::string(64, 'b');
    const std::string s = summary_table(r);
    EXPECT_NE(s.find("PRIVATE PROFILE on machine dut: /home/me/profiles/arm/x.toml is not the stock"), std::string::npos)
        << s;
    EXPECT_NE(line_with(s, "  profile  ").find("(PRIVATE: /home/me/profiles/arm/x.toml, sha256 " + std::string(64, 'b') + ")"),
              std::string::npos)
        << s;
    EXPECT_EQ(s.find("stock profile)"), std::string::npos) << s; // never called the stock profile
}

TEST(Summary, LostDataIsListedAndChangesTheVerdictOfAnOkRun) {
    results::RunResults r = sample();
    ASSERT_FALSE(r.workloads.empty());
    r.workloads[0].data_lost = "3 of 7 datagrams never read";
    const std::string s = summary_table(r);
    EXPECT_NE(s.find("  data lost and not recovered:\n    - " + r.workloads[0].name + " on " + r.workloads[0].machine +
                     ": 3 of 7 datagrams never read\n"),
              std::string::npos)
        << s;
    EXPECT_EQ(lines_of(s).back(), "RESULT: OK, but 1 workload lost data that nothing recovered (see \"data lost\" above)");
    const json j = json::parse(to_json_text(r));
    EXPECT_EQ(j["workloads"][0]["data_lost"], "3 of 7 datagrams never read");
    EXPECT_EQ(from_json(j).workloads[0].data_lost, "3 of 7 datagrams never read");
    EXPECT_FALSE(json::parse(to_json_text(sample()))["workloads"][0].contains("data_lost"));
}

TEST(Summary, CpuTimeByContextComesFromCyclesAndClock) {
    // task 2,000,000 cycles = 2,000 µs of 10,000 µs (task+softirq+hardirq+idle) = 20.0%;
    // softirq 900 µs = 9.0%; hardirq 100 µs = 1.0%; idle 7,000 µs = 70.0%.
    std::string s = summary_table(sample());
    EXPECT_NE(line_with(s, "      task ").find("2,000.000     20.0%"), std::string::npos) << s;
    EXPECT_NE(line_with(s, "      softirq ").find("900.000      9.0%"), std::string::npos);
    EXPECT_NE(line_with(s, "      hardirq ").find("100.000      1.0%"), std::string::npos);
    EXPECT_NE(line_with(s, "      idle ").find("7,000.000     70.0%"), std::string::npos);
}

TEST(Summary, TopCategoriesSumOverContextsLargestFirst) {
    // crypto = 1,500,000 (task) + 600,000 (softirq) = 2,100,000 of 3,000,000 = 70.0%.
    std::string s = summary_table(sample());
    std::string crypto = line_with(s, "      crypto ");
    EXPECT_NE(crypto.find("2,100,000     70.0%"), std::string::npos) << s;
    EXPECT_LT(s.find("      crypto "), s.find("      copy "));
    EXPECT_LT(s.find("      copy "), s.find("      protocol "));
}

TEST(Summary, SimdSectionShowsNonEmptyBucketsAndTheLongestBracket) {
    std::string s = summary_table(sample());
    EXPECT_NE(line_with(s, "bytes per bracket").find("1K-2K: 2  4K-8K: 123"), std::string::npos) << s;
    EXPECT_EQ(s.find("2K-4K"), std::string::npos);
    EXPECT_NE(line_with(s, "longest bracket").find("8,500 cycles = 8.500 µs, 4,096 bytes"), std::string::npos);
    EXPECT_NE(s.find("softirq NET_RX, from 1,000.000 µs"), std::string::npos);
}

TEST(Summary, NonPreemptibleSpanIsShown) {
    std::string s = summary_table(sample());
    EXPECT_NE(line_with(s, "longest non-preemptible").find("61.500 µs, from 4,321.250 µs"), std::string::npos) << s;
    EXPECT_NE(s.find("softirq NET_RX (chacha20 decrypt)"), std::string::npos);
}

TEST(Summary, EveryStatisticIsShownUnderItsCpuOrMachineWithZerosNamedOnOneLine) {
    std::string s = summary_table(sample());
    EXPECT_NE(s.find("      softirq/runs              900 count\n"), std::string::npos) << s;
    EXPECT_NE(s.find("      simd/save_restore_cycles  2,100 cycles\n"), std::string::npos);
    EXPECT_NE(s.find("      zero:  watchdog/soft_lockups\n"), std::string::npos);
    EXPECT_NE(s.find("  dut statistics (devices, tunnels, DMA)\n"), std::string::npos);
    EXPECT_NE(s.find("    netdev/eth0/rx_dropped   7 count\n"), std::string::npos);
    EXPECT_NE(s.find("    dma/busy_share           0.25 1\n"), std::string::npos);
    EXPECT_LT(s.find("softirq/runs"), s.find("netdev/eth0/rx_dropped")); // the CPU's, then the machine's
}

TEST(Summary, WorkloadMetricsAppearAsKeyEqualsValueUnitInGivenOrder) {
    std::string s = summary_table(sample());
    EXPECT_NE(s.find("  iperf-rx: iperf on dut cpu 0\n"), std::string::npos) << s;
    EXPECT_NE(s.find("    throughput_mbps = 941.2 Mbit/s\n"), std::string::npos);
    EXPECT_NE(s.find("    packets         = 80,000 count\n"), std::string::npos);
    EXPECT_LT(s.find("throughput_mbps"), s.find("packets"));
    EXPECT_LT(s.find("packets"), s.find("latency_p99_us"));
}

TEST(Summary, EveryLineFitsInOneHundredColumns) {
    results::RunResults r = sample(true);
    r.machines[0].cpus[0].simd.bytes_per_bracket_log2_hist = std::vector<std::uint64_t>(40, 123'456'789);
    for (const auto& l : lines_of(summary_table(r))) EXPECT_LE(detail::columns(l), 100u) << l;
}

// ---- comparison --------------------------------------------------------------------------

TEST(Compare, TableShowsTheRatioBOverA) {
    // A = 200, B = 50 -> B/A = 0.25.
    results::RunResults a = sample(), b = sample();
    a.workloads[0].metrics[0].value = 200;
    b.workloads[0].metrics[0].value = 50;
    std::string t = compare_table(a, b);
    std::string row = line_with(t, "throughput_mbps");
    EXPECT_NE(row.find(" 200 "), std::string::npos) << t;
    EXPECT_NE(row.find(" 50 "), std::string::npos);
    EXPECT_EQ(row.substr(row.size() - 5), " 0.25");
    EXPECT_NE(t.find("workload iperf-rx (dut cpu 0)"), std::string::npos);
}

TEST(Compare, JsonGivesTheRatioAndNullWhenAIsZero) {
    results::RunResults a = sample(), b = sample();
    a.workloads[0].metrics[0].value = 200;
    b.workloads[0].metrics[0].value = 50;
    a.statistics[4].value = 0; // dut/cpu0/watchdog/soft_lockups
    b.statistics[4].value = 3;
    json j = compare_json(a, b);
    bool saw_ratio = false, saw_null = false;
    for (const auto& m : j["metrics"]) {
        if (m["key"] == "throughput_mbps") {
            EXPECT_EQ(m["ratio"], 0.25);
            saw_ratio = true;
        }
        if (m["key"] == "watchdog/soft_lockups") {
            EXPECT_EQ(m["section"], "statistic");
            EXPECT_EQ(m["cpu"], 0);
            EXPECT_TRUE(m["ratio"].is_null());
            saw_null = true;
        }
    }
    EXPECT_TRUE(saw_ratio && saw_null);
}

TEST(Compare, AttributionNamesTheCategoryThatChangedMost) {
    // B saves 1,000,000 crypto cycles and spends 200,000 more on copy: the total falls by
    // 800,000, crypto is -1,000,000 = 125.0% of the change, copy +200,000 = -25.0%.
    results::RunResults a = sample(), b = sample();
    b.machines[0].cpus[0].cycles["task"]["crypto"] = 500'000;
    b.machines[0].cpus[0].cycles["task"]["copy"] = 700'000;
    std::string t = compare_table(a, b);
    EXPECT_NE(t.find("total cycles  A 3,000,000  B 2,200,000  change -800,000  B/A 0.73"), std::string::npos) << t;
    EXPECT_NE(t.find("  B spends 26.7% fewer cycles than A\n"), std::string::npos);
    EXPECT_NE(t.find("  largest change: crypto, -1,000,000 cycles (125.0% of the change)\n"), std::string::npos);
    std::string crypto = line_with(t.substr(t.find("by category")), "crypto");
    EXPECT_NE(crypto.find("2,100,000  70.0%"), std::string::npos) << crypto;
    EXPECT_NE(crypto.find("1,100,000  50.0%"), std::string::npos);
    EXPECT_LT(t.find("    crypto "), t.find("    copy "));
    EXPECT_EQ(line_with(t.substr(t.find("by category")), "protocol"), ""); // unchanged categories are not listed

    json j = compare_json(a, b);
    const json& first = j["attribution"][0]["categories"][0];
    EXPECT_EQ(first["category"], "crypto");
    EXPECT_EQ(first["delta_cycles"], -1'000'000);
    EXPECT_EQ(first["share_of_change_percent"], 125.0);
}

TEST(Compare, MetricsPresentInOnlyOneRunAreListedSeparately) {
    results::RunResults a = sample(), b = sample();
    b.workloads[0].metrics.push_back({"drops", 7, "count"});
    std::string t = compare_table(a, b);
    EXPECT_NE(t.find("only in B (1 metric):\n  workload iperf-rx (dut cpu 0): drops = 7 count\n"), std::string::npos) << t;
    EXPECT_EQ(t.find("only in A"), std::string::npos);
    EXPECT_EQ(compare_json(a, b)["only_in_b"].size(), 1u);
}

TEST(Compare, OverridesOfEitherRunAreAnnounced) {
    results::RunResults a = sample(), b = sample();
    b.machines[0].overrides = {"simd.save_cycles = 300"};
    std::string t = compare_table(a, b);
    EXPECT_NE(t.find("PROFILE OVERRIDES in B, machine dut:\n       simd.save_cycles = 300\n"), std::string::npos) << t;
}

TEST(Compare, JsonIsByteIdenticalForEqualInputs) {
    EXPECT_EQ(compare_json(sample(true), sample()).dump(2), compare_json(sample(true), sample()).dump(2));
}

// ---- CSV ---------------------------------------------------------------------------------

TEST(Csv, RowCountEqualsTheNumberOfMetricsPutIn) {
    // Counted by hand from sample():
    //   run:      simulated_us, events, failed                                        3
    //   machine:  clock_hz                                                            1
    //   machine:  2 statistics outside the CPU (netdev, dma)                         2
    //   cpu:      busy_us, idle_us, longest_np_span_us, longest_np_span_start_us     4
    //   cycles:   5 (context, category) entries                                      5
    //   simd:     4 longest-bracket fields + 14 buckets                             18
    //   statistic: 8 of cpu 0                                                         8
    //   workload: 3 + 2 metrics                                                       5
    std::string csv = to_csv(sample());
    auto lines = lines_of(csv);
    ASSERT_FALSE(lines.empty());
    EXPECT_EQ(lines.front(), "section,machine,cpu,workload,key,value,unit");
    EXPECT_EQ(lines.size() - 1, 3u + 1u + 2u + 4u + 5u + 18u + 8u + 5u);
    // a finding count is one more row ("finding" section)
    EXPECT_EQ(lines_of(to_csv(sample(true))).size(), lines.size() + 2);

    // One more workload metric is one more row.
    results::RunResults r = sample();
    r.workloads[1].metrics.push_back({"latency_min_us", 2.5, "us"});
    EXPECT_EQ(lines_of(to_csv(r)).size(), lines.size() + 1);
}

TEST(Csv, RowsCarrySectionMachineCpuWorkloadKeyValueUnit) {
    std::string csv = to_csv(sample());
    EXPECT_NE(csv.find("\nworkload,dut,0,iperf-rx,throughput_mbps,941.2,Mbit/s\n"), std::string::npos) << csv;
    EXPECT_NE(csv.find("\ncycles,dut,0,,task.crypto,1500000,cycles\n"), std::string::npos);
    EXPECT_NE(csv.find("\nsimd,dut,0,,bytes_per_bracket_4k_8k,123,brackets\n"), std::string::npos);
    EXPECT_NE(csv.find("\nrun,,,,simulated_us,10000,us\n"), std::string::npos);
    EXPECT_NE(csv.find("\nstatistic,dut,0,,simd/brackets,125,count\n"), std::string::npos);
    EXPECT_NE(csv.find("\nstatistic,dut,,,netdev/eth0/rx_dropped,7,count\n"), std::string::npos);
    EXPECT_NE(csv.find("\nstatistic,dut,,,dma/busy_share,0.25,1\n"), std::string::npos);
}

TEST(Csv, FieldsWithCommasOrQuotesAreQuoted) {
    results::RunResults r = sample();
    r.workloads[0].name = "iperf \"rx\", fast";
    EXPECT_NE(to_csv(r).find(",\"iperf \"\"rx\"\", fast\",throughput_mbps,"), std::string::npos);
}

// ---- atomic writes -----------------------------------------------------------------------

class AtomicFile : public ::testing::Test {
protected:
    void SetUp() override {
        dir_ = fs::temp_directory_path() /
               ("kdsim-report-test-" + std::to_string(::getpid()) + "-" +
                ::testing::UnitTest::GetInstance()->current_test_info()->name());
        fs::remove_all(dir_);
        fs::create_directories(dir_);
    }
    void TearDown() override { fs::remove_all(dir_); }

    std::vector<std::string> entries() const {
        std::vector<std::string> names;
        for (const auto& e : fs::directory_iterator(dir_)) names.push_back(e.path().filename().string());
        std::sort(names.begin(), names.end());
        return names;
    }
    static std::string read(const fs::path& p) {
        std::ifstream in(p, std::ios::binary);
        return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
    }

    fs::path dir_;
};

TEST_F(AtomicFile, WritesTheTextAndLeavesNoTemporaryFile) {
    write_file_atomically(dir_ / "run.json", "first\n");
    write_file_atomically(dir_ / "run.json", "second\n"); // replaces the first
    EXPECT_EQ(read(dir_ / "run.json"), "second\n");
    EXPECT_EQ(entries(), std::vector<std::string>{"run.json"});
}

TEST_F(AtomicFile, CheckWritableNamesAMissingDirectoryOrADirectoryTargetAndAcceptsAWritableOne) {
    EXPECT_EQ(check_writable(dir_ / "run.json"), "");
    EXPECT_EQ(check_writable(dir_ / "no-such-dir" / "run.json"),
              "the directory " + (dir_ / "no-such-dir").string() + " does not exist");
    EXPECT_EQ(check_writable(dir_), dir_.string() + " is a directory");
    EXPECT_TRUE(entries().empty()); // checking creates nothing
}

TEST_F(AtomicFile, MissingDirectoryThrowsNamingPathAndErrnoAndCreatesNothing) {
    fs::path target = dir_ / "no-such-dir" / "run.json";
    try {
        write_file_atomically(target, "text");
        FAIL() << "expected std::runtime_error";
    } catch (const std::runtime_error& e) {
        std::string what = e.what();
        EXPECT_NE(what.find(target.string()), std::string::npos) << what;
        EXPECT_NE(what.find("No such file or directory"), std::string::npos) << what;
    }
    EXPECT_FALSE(fs::exists(dir_ / "no-such-dir"));
    EXPECT_TRUE(entries().empty());
}

TEST_F(AtomicFile, FailedRenameRemovesTheTemporaryFile) {
    // A directory at the target path makes rename() fail after the temporary file was written.
    fs::create_directory(dir_ / "run.json");
    EXPECT_THROW(write_file_atomically(dir_ / "run.json", "text"), std::runtime_error);
    EXPECT_EQ(entries(), std::vector<std::string>{"run.json"});
    EXPECT_TRUE(fs::is_directory(dir_ / "run.json"));
}

TEST_F(AtomicFile, AFifoIsWrittenInPlaceAndStaysAFifo) {
    const fs::path fifo = dir_ / "fifo";
    ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
    // The reader end is open (non-blocking) first, so the writer's open() does not wait, and a
    // writer that replaced the FIFO would leave it empty instead of hanging the test.
    const int rd = ::open(fifo.c_str(), O_RDONLY | O_NONBLOCK);
    ASSERT_GE(rd, 0);
    write_file_atomically(fifo, "through the pipe\n");
    char buf[64] = {};
    const ssize_t n = ::read(rd, buf, sizeof buf);
    ::close(rd);
    EXPECT_EQ(std::string(buf, n > 0 ? static_cast<std::size_t>(n) : 0), "through the pipe\n");
    struct stat st;
    ASSERT_EQ(::lstat(fifo.c_str(), &st), 0);
    EXPECT_TRUE(S_ISFIFO(st.st_mode));
    EXPECT_EQ(entries(), std::vector<std::string>{"fifo"}); // no temporary file beside it
}

TEST_F(AtomicFile, ACharacterDeviceNodeSurvivesAsTheSameDevice) {
    // A private node of the null device (1, 3): the system's /dev/null is never touched.
    const fs::path node = dir_ / "null";
    if (::mknod(node.c_str(), S_IFCHR | 0666, makedev(1, 3)) != 0) GTEST_SKIP() << "mknod needs CAP_MKNOD";
    write_file_atomically(node, "discarded\n");
    struct stat st;
    ASSERT_EQ(::lstat(node.c_str(), &st), 0);
    EXPECT_TRUE(S_ISCHR(st.st_mode));
    EXPECT_EQ(st.st_rdev, makedev(1, 3));
    EXPECT_EQ(entries(), std::vector<std::string>{"null"});
}

TEST_F(AtomicFile, ASymlinkStaysALinkAndItsTargetIsReplacedKeepingItsPermissions) {
    { std::ofstream(dir_ / "real.json") << "old\n"; }
    fs::permissions(dir_ / "real.json", fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read);
    fs::create_symlink("real.json", dir_ / "link.json"); // relative, as `ln -s real.json link.json`
    write_file_atomically(dir_ / "link.json", "new\n");
    EXPECT_TRUE(fs::is_symlink(dir_ / "link.json"));
    EXPECT_EQ(fs::read_symlink(dir_ / "link.json"), fs::path("real.json"));
    EXPECT_EQ(read(dir_ / "real.json"), "new\n");
    EXPECT_EQ(fs::status(dir_ / "real.json").permissions() & fs::perms::all,
              fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read);
    EXPECT_EQ(entries(), (std::vector<std::string>{"link.json", "real.json"}));
}

TEST_F(AtomicFile, ALinkIntoProcSelfFdWritesToTheOpenFileAndIsNotReplaced) {
    // As `kdsim run --csv /dev/stdout > out.txt`: the link names an open file of the process.
    const fs::path out = dir_ / "out.txt";
    const int fd = ::open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(::write(fd, "printed\n", 8), 8);
    const fs::path link = dir_ / "stdout";
    fs::create_symlink("/proc/self/fd/" + std::to_string(fd), link);
    write_file_atomically(link, "appended\n");
    ::close(fd);
    EXPECT_TRUE(fs::is_symlink(link));
    EXPECT_EQ(read(out), "printed\nappended\n");
    EXPECT_EQ(entries(), (std::vector<std::string>{"out.txt", "stdout"}));
}

TEST_F(AtomicFile, ALoopOfLinksAndADirectoryAreRefusedAndNothingIsCreated) {
    fs::create_symlink("b", dir_ / "a");
    fs::create_symlink("a", dir_ / "b");
    EXPECT_THROW(write_file_atomically(dir_ / "a", "x"), std::runtime_error);
    EXPECT_NE(check_writable(dir_ / "a"), "");
    fs::create_directory(dir_ / "d");
    EXPECT_EQ(check_writable(dir_ / "d"), (dir_ / "d").string() + " is a directory");
    EXPECT_THROW(report::AtomicFile(dir_ / "d"), std::runtime_error); // refused when opened, before any run
    EXPECT_EQ(entries(), (std::vector<std::string>{"a", "b", "d"}));
}

TEST_F(AtomicFile, NothingIsPublishedBeforeCommitAndAnAbandonedFileLeavesNothing) {
    {
        report::AtomicFile f(dir_ / "run.json");
        f.write("text");
        f.close();
        EXPECT_FALSE(fs::exists(dir_ / "run.json"));
        EXPECT_EQ(entries().size(), 1u); // the temporary file only
    }
    EXPECT_TRUE(entries().empty());
}

TEST_F(AtomicFile, TheNextWriterRemovesTheTemporaryFileOfADeadWriterButNotOfALiveOne) {
    // A pid that has exited: a child that is reaped at once.
    const pid_t dead = ::fork();
    if (dead == 0) ::_exit(0);
    ASSERT_GT(dead, 0);
    ::waitpid(dead, nullptr, 0);
    const std::string stale = ".run.json.tmp." + std::to_string(dead) + ".0";
    const std::string live = ".run.json.tmp." + std::to_string(::getppid()) + ".0";
    const std::string other = ".other.json.tmp." + std::to_string(dead) + ".0";
    for (const auto& n : {stale, live, other}) std::ofstream(dir_ / n) << "partial";
    write_file_atomically(dir_ / "run.json", "complete\n");
    std::vector<std::string> want{live, other, "run.json"};
    std::sort(want.begin(), want.end());
    EXPECT_EQ(entries(), want);
}

// ---- formatting --------------------------------------------------------------------------

TEST(Format, BucketLabelsArePowersOfTwoWithBinaryPrefixes) {
    EXPECT_EQ(detail::bucket_label(0), "0-2");
    EXPECT_EQ(detail::bucket_label(1), "2-4");
    EXPECT_EQ(detail::bucket_label(9), "512-1K");
    EXPECT_EQ(detail::bucket_label(12), "4K-8K");
    EXPECT_EQ(detail::bucket_label(20), "1M-2M");
}

TEST(Format, RatioTextKeepsTwoDecimalsBelowTenAndMarksDivisionByZero) {
    EXPECT_EQ(detail::ratio_text(200, 50), "0.25");
    EXPECT_EQ(detail::ratio_text(3, 3), "1.00");
    EXPECT_EQ(detail::ratio_text(2, 50), "25.0");
    EXPECT_EQ(detail::ratio_text(1, 500), "500");
    EXPECT_EQ(detail::ratio_text(0, 0), "-");
    EXPECT_EQ(detail::ratio_text(0, 5), "n/a");
}

TEST(Format, HumanNumbersDropTrailingZerosAndKeepIntegersExact) {
    EXPECT_EQ(detail::human(941.2), "941.2");
    EXPECT_EQ(detail::human(80000), "80000");
    EXPECT_EQ(detail::human(0.000125), "0.000125");
    EXPECT_EQ(detail::human(1.5e-7), "1.5e-07");
    EXPECT_EQ(detail::grouped_fixed(-1234.5, 3), "-1,234.500");
    EXPECT_EQ(detail::display(4321.25), "4,321.25");
    EXPECT_EQ(detail::display(-1234567.5, 9), "-1,234,567.5");
    EXPECT_EQ(detail::display(80000), "80,000");
}

} // namespace
} // namespace kdsim::report
