// Tests of the sweep definition (scenario/sweep.h) and of values set on a scenario's keys before
// it is loaded (LoadOptions::assignments): expansion of grids and lists over seeds, keys by
// index and by name, profile figures, and the errors that name the --set argument.
#include "scenario/sweep.h"

#include "test_support.h"

#include <algorithm>

namespace kdsim::scenario {
namespace {

using namespace test_support;

const char* TWO_MACHINES = R"(
[scenario]
name = "two"
duration = "1 ms"

[[machine]]
name = "board"
profile = "arm64/cortex-a53"
cpus = 2

[machine.nic]
rx_strategy = "full-sync"
rx_buffer = "9 KiB"

[[machine.workload]]
kind = "iperf3"
name = "iperf3"
cpu = 1
peer = "peer"

[[machine]]
name = "peer"
profile = "x86/intel-icelake-server"
cpus = 2

[[link]]
ends = ["peer", "board"]
rate = "1 Gbit/s"
latency = "1 us"
)";

Assignment set(std::string key, std::string value) {
    return Assignment{key, value, "--set " + key + "=" + value};
}

system::ScenarioConfig load_with(const TempDir& dir, std::vector<Assignment> a, const std::string& text = TWO_MACHINES) {
    LoadOptions lo;
    lo.root = SOURCE_DIR;
    lo.assignments = std::move(a);
    return load_scenario(dir.write("s.toml", text), lo);
}

// The diagnostics of loading with `a`; fails the test when it loads.
std::vector<Diagnostic> errors_with(const TempDir& dir, std::vector<Assignment> a) {
    try {
        load_with(dir, std::move(a));
    } catch (const InputError& e) {
        return e.diagnostics;
    }
    ADD_FAILURE() << "expected an InputError";
    return {};
}

TEST(SweepSet, ArgumentSplitsIntoValuesThatNameTheArgument) {
    SweepAxis a = parse_set_argument("machine[0].nic.rx_buffer=1536B, 9KiB");
    EXPECT_EQ(a.key, "machine[0].nic.rx_buffer");
    ASSERT_EQ(a.values.size(), 2u);
    EXPECT_EQ(a.values[0].value, "1536B");
    EXPECT_EQ(a.values[1].value, "9KiB");
    EXPECT_EQ(a.values[1].key, a.key);
    EXPECT_NE(a.values[1].origin.find("--set machine[0].nic.rx_buffer=1536B, 9KiB"), std::string::npos);
    EXPECT_NE(a.values[0].origin, a.values[1].origin); // each value is told apart in messages
}

TEST(SweepSet, ArgumentWithoutEqualsOrValuesIsAnErrorNamingIt) {
    for (const char* bad : {"machine[0].cpus", "=3", "machine[0].cpus=", "machine[0].cpus=1,,2"}) {
        try {
            parse_set_argument(bad);
            ADD_FAILURE() << bad << " was accepted";
        } catch (const InputError& e) {
            ASSERT_EQ(e.diagnostics.size(), 1u);
            EXPECT_EQ(e.diagnostics[0].file, std::string("--set ") + bad);
        }
    }
}

TEST(SweepSeeds, RangesAndListsGiveEverySeedInOrder) {
    std::string why;
    EXPECT_EQ(parse_seeds("1..5", why), (std::vector<std::uint64_t>{1, 2, 3, 4, 5}));
    EXPECT_EQ(parse_seeds("7", why), (std::vector<std::uint64_t>{7}));
    EXPECT_EQ(parse_seeds("3, 1,9", why), (std::vector<std::uint64_t>{3, 1, 9}));
    for (const char* bad : {"5..1", "", "a", "1..", "-1", "1,,2", "0..200000"}) {
        EXPECT_FALSE(parse_seeds(bad, why)) << bad;
        EXPECT_FALSE(why.empty());
    }
}

SweepSpec two_axes(bool list) {
    SweepSpec s;
    s.list = list;
    s.axes.push_back({"a", {set("a", "1"), set("a", "2")}});
    s.axes.push_back({"b", {set("b", "x"), set("b", "y")}});
    return s;
}

std::vector<std::string> rows(const std::vector<SweepPoint>& ps) {
    std::vector<std::string> out;
    for (const auto& p : ps) {
        std::string r;
        for (const auto& a : p.set) r += a.value;
        if (p.seed) r += "/" + std::to_string(*p.seed);
        out.push_back(r);
    }
    return out;
}

TEST(SweepExpand, GridIsEveryCombinationWithTheLastKeyFastestAndSeedsInnermost) {
    SweepSpec s = two_axes(false);
    EXPECT_EQ(rows(expand_sweep(s, "t")), (std::vector<std::string>{"1x", "1y", "2x", "2y"}));
    s.seeds = {4, 5};
    EXPECT_EQ(rows(expand_sweep(s, "t")),
              (std::vector<std::string>{"1x/4", "1x/5", "1y/4", "1y/5", "2x/4", "2x/5", "2y/4", "2y/5"}));
}

TEST(SweepExpand, ListTakesTheIthValuesTogether) {
    EXPECT_EQ(rows(expand_sweep(two_axes(true), "t")), (std::vector<std::string>{"1x", "2y"}));
    SweepSpec uneven = two_axes(true);
    uneven.axes[1].values.push_back(set("b", "z"));
    EXPECT_THROW(expand_sweep(uneven, "t"), InputError);
}

TEST(SweepExpand, EmptyGridAndTwiceSweptKeyAreErrors) {
    EXPECT_THROW(expand_sweep(SweepSpec{}, "t"), InputError);
    SweepSpec empty_axis;
    empty_axis.axes.push_back({"a", {}});
    EXPECT_THROW(expand_sweep(empty_axis, "t"), InputError);
    SweepSpec twice = two_axes(false);
    twice.axes[1].key = "a";
    EXPECT_THROW(expand_sweep(twice, "t"), InputError);
}

TEST(SweepExpand, TooManyPointsIsAnError) {
    SweepSpec big;
    for (const char* k : {"a", "b", "c"}) {
        SweepAxis axis{k, {}};
        for (int i = 0; i < 50; ++i) axis.values.push_back(set(k, std::to_string(i)));
        big.axes.push_back(axis); // 50^3 = 125,000 > MAX_SWEEP_POINTS
    }
    EXPECT_THROW(expand_sweep(big, "t"), InputError);
}

TEST(SweepAssign, SetsNestedKeysByIndexAndByName) {
    TempDir dir;
    auto cfg = load_with(dir, {set("machine[0].nic.rx_buffer", "1536B"), set("link[0].rate", "2.5Gbit/s"),
                               set("machine.peer.cpus", "4"), set("scenario.duration", "\"2 ms\"")});
    ASSERT_TRUE(cfg.machines[0].nic_rx);
    EXPECT_EQ(cfg.machines[0].nic_rx->buffer_size, 1536u);
    EXPECT_EQ(cfg.links[0].rate_bps, 2'500'000'000u);
    EXPECT_EQ(cfg.machines[1].cpus, 4);
    EXPECT_EQ(cfg.duration, 2 * PS_PER_MS);
    auto base = load_with(dir, {});
    EXPECT_EQ(base.machines[0].nic_rx->buffer_size, 9216u); // the file is not changed
    EXPECT_EQ(base.machines[1].cpus, 2);
}

TEST(SweepAssign, SetsAKeyTheFileLeftOutAndAWorkloadByName) {
    TempDir dir;
    auto cfg = load_with(dir, {set("machine.board.kernel.hz", "1000"), set("machine.board.workload.iperf3.cpu", "0")});
    EXPECT_EQ(cfg.machines[0].kernel.hz, 1000);
    EXPECT_EQ(cfg.machines[0].workloads[0].cpu(), 0);
}

TEST(SweepAssign, ProfileFigureIsSetThroughOverrides) {
    TempDir dir;
    auto cfg = load_with(dir, {set("machine.board.overrides.simd.save", "321")});
    ASSERT_EQ(cfg.machines[0].overrides.size(), 1u);
    EXPECT_EQ(cfg.machines[0].overrides[0].rfind("simd.save: 321 cycles", 0), 0u) << cfg.machines[0].overrides[0];
}

TEST(SweepAssign, UnknownKeyNamesTheArgumentAndTheNearestKeys) {
    TempDir dir;
    auto d = errors_with(dir, {set("machine[0].nic.rx_bufer", "1536B")});
    auto it = std::find_if(d.begin(), d.end(), [](const Diagnostic& x) { return x.file == "--set machine[0].nic.rx_bufer=1536B"; });
    ASSERT_NE(it, d.end());
    EXPECT_EQ(it->key, "machine[0].nic.rx_bufer");
    EXPECT_NE(it->message.find("did you mean 'rx_buffer'"), std::string::npos) << it->message;
    d = errors_with(dir, {set("machine.bord.cpus", "1")});
    ASSERT_EQ(d.size(), 1u);
    EXPECT_NE(d[0].message.find("did you mean 'board'"), std::string::npos) << d[0].message;
    d = errors_with(dir, {set("machine[2].cpus", "1")});
    ASSERT_EQ(d.size(), 1u);
    EXPECT_NE(d[0].message.find("2 machine element(s)"), std::string::npos) << d[0].message;
}

TEST(SweepAssign, ValueOfTheWrongUnitNamesTheArgument) {
    TempDir dir;
    auto d = errors_with(dir, {set("link[0].rate", "9KiB")});
    ASSERT_EQ(d.size(), 1u);
    EXPECT_EQ(d[0].file, "--set link[0].rate=9KiB");
    EXPECT_EQ(d[0].line, 0); // no position in the scenario file: the value is not there
    EXPECT_EQ(d[0].key, "link[0].rate");
    EXPECT_EQ(d[0].str().rfind("--set link[0].rate=9KiB: error: link[0].rate: ", 0), 0u) << d[0].str();
}

TEST(SweepTable, IsReadWithPositionsAndIgnoredByASingleRun) {
    TempDir dir;
    std::string text = std::string(TWO_MACHINES) + R"(
[sweep]
combine = "list"
seeds = "2..3"
[sweep.set]
"link[0].rate" = ["1 Gbit/s", "100 Mbit/s"]
"machine.board.nic.rx_buffer" = [1536, "9 KiB"]
)";
    fs::path f = dir.write("s.toml", text);
    auto spec = read_sweep(f);
    ASSERT_TRUE(spec);
    EXPECT_TRUE(spec->list);
    EXPECT_EQ(spec->seeds, (std::vector<std::uint64_t>{2, 3}));
    ASSERT_EQ(spec->axes.size(), 2u);
    EXPECT_EQ(spec->axes[0].key, "link[0].rate");
    EXPECT_EQ(spec->axes[0].values[1].value, "\"100 Mbit/s\"");
    EXPECT_EQ(spec->axes[1].values[0].value, "1536");
    // Where "100 Mbit/s" stands: 6 lines after the last of TWO_MACHINES, after `"link[0].rate" = ["1 Gbit/s", `.
    const auto line = std::count(TWO_MACHINES, TWO_MACHINES + std::char_traits<char>::length(TWO_MACHINES), '\n') + 6;
    EXPECT_EQ(spec->axes[0].values[1].origin, f.generic_string() + ":" + std::to_string(line) + ":31");
    LoadOptions lo;
    lo.root = SOURCE_DIR;
    EXPECT_EQ(load_scenario(f, lo).links[0].rate_bps, 1'000'000'000u); // a run uses the file's own values
}

TEST(ScenarioText, LoadsTheTextInsteadOfTheFileAndNamesItInErrors) {
    LoadOptions lo;
    lo.root = SOURCE_DIR;
    lo.text = TWO_MACHINES;
    lo.assignments = {set("link[0].rate", "100Mbit/s")};
    auto cfg = load_scenario("given.toml", lo); // no such file: the text is what is read
    EXPECT_EQ(cfg.name, "two");
    EXPECT_EQ(cfg.path, "given.toml");
    EXPECT_EQ(cfg.links[0].rate_bps, 100'000'000u);
    lo.text = std::string(TWO_MACHINES) + "\n[extra]\n";
    try {
        load_scenario("given.toml", lo);
        FAIL() << "an unknown table loaded";
    } catch (const InputError& e) {
        const auto lines = std::count(TWO_MACHINES, TWO_MACHINES + std::char_traits<char>::length(TWO_MACHINES), '\n');
        EXPECT_EQ(e.diagnostics[0].str().rfind("given.toml:" + std::to_string(lines + 2) + ":", 0), 0u) << e.diagnostics[0].str();
    }
    lo.text = std::string(TWO_MACHINES) + "[sweep.set]\n\"machine[0].cpus\" = [1, 2]\n";
    auto spec = read_sweep("given.toml", lo.text);
    ASSERT_TRUE(spec);
    EXPECT_EQ(spec->axes[0].key, "machine[0].cpus");
}

} // namespace
} // namespace kdsim::scenario
