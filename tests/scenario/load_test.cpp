// Tests of scenario loading: the structs a scenario gives with its defaults and overrides,
// the root, error order, the deterministic sample draw from size files, and file kinds.
#include "test_support.h"
#include "workloads/config.h"

#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <random>
#include <sstream>
#include <vector>

namespace kdsim::scenario {
namespace {

using namespace test_support;

// ---------------------------------------------------------------------------------------
// Scenarios

const char* MINIMAL = R"(
[scenario]
name = "minimal"
description = "one host"
duration = "2 s"

[[machine]]
name = "host"
profile = "x86/intel-icelake-server"
cpus = 2

[machine.kernel]
preempt = "full"
hz = 1000
simd_chunking = "fixed"
simd_chunk_bytes = "4 KiB"
sched_latency = "3 ms"
max_softirq_restart = 5

[machine.overrides]
"simd.save" = 300
"hash.sha256.shani.cycles_per_byte" = 2.5

[[machine.workload]]
kind = "module_load"
alg = "sha256"
impl = "avx2"
sizes = [1024, "4 KiB", 9000]
signature_trailer = 721
blacklist_hash = true
user_time = "30 us"

[[machine.workload]]
kind = "cyclictest"
cpu = 1
period = "0.5 ms"

[[machine.workload]]
kind = "softirq_load"
name = "nic0"
period = "50 us"
jitter = "5 us"
count = 100
)";

TEST(Scenario, MinimalScenarioLoadsIntoTheExpectedStructs) {
    TempDir dir;
    fs::path f = dir.write("minimal.toml", MINIMAL);
    auto cfg = load_scenario(f, {.root = SOURCE_DIR});
    EXPECT_EQ(cfg.name, "minimal");
    EXPECT_EQ(cfg.description, "one host");
    EXPECT_EQ(cfg.seed, 1u);                   // default
    EXPECT_EQ(cfg.mode, system::Mode::TIMING); // default
    EXPECT_EQ(cfg.duration, 2 * PS_PER_S);
    EXPECT_EQ(cfg.max_duration, 60 * PS_PER_S); // default
    ASSERT_EQ(cfg.machines.size(), 1u);
    const auto& m = cfg.machines[0];
    EXPECT_EQ(m.name, "host");
    EXPECT_EQ(m.cpus, 2);
    EXPECT_EQ(m.profile.name, "x86/intel-icelake-server");
    EXPECT_EQ(m.simd_policy, arch::SimdPolicy::X86_PREEMPT); // the x86 default (Linux 6.1)
    EXPECT_EQ(m.kernel.preempt, kernel::PreemptModel::FULL);
    EXPECT_EQ(m.kernel.hz, 1000u);
    EXPECT_EQ(m.kernel.sched_latency, 3 * PS_PER_MS);
    EXPECT_EQ(m.kernel.sched_min_granularity, 750 * PS_PER_US); // KernelConfig default kept
    EXPECT_EQ(m.kernel.max_softirq_restart, 5u);
    EXPECT_EQ(m.chunking.policy, crypto::ChunkPolicy::FIXED);
    EXPECT_EQ(m.chunking.bytes, 4096u);

    // Overrides replace the figure and are listed in key order.
    EXPECT_EQ(m.profile.simd.save, 300u);
    EXPECT_DOUBLE_EQ(m.profile.hash.get(crypto::HashAlg::SHA256, crypto::HashImpl::SHANI)->cycles_per_byte, 2.5);
    ASSERT_EQ(m.overrides.size(), 2u);
    EXPECT_EQ(m.overrides[0], "hash.sha256.shani.cycles_per_byte: 2.5 cycles/byte (profile: 2.05 cycles/byte)");
    EXPECT_EQ(m.overrides[1], "simd.save: 300 cycles (profile: 226 cycles)");

    ASSERT_EQ(m.workloads.size(), 3u);
    const auto& ml = m.workloads[0].get<workloads::ModuleLoadWorkload>();
    EXPECT_EQ(ml.name, "modprobe");
    EXPECT_EQ(ml.cpu, 0);
    EXPECT_EQ(ml.alg, crypto::HashAlg::SHA256);
    EXPECT_EQ(ml.impl, crypto::HashImpl::AVX2);
    EXPECT_EQ(ml.sizes, (std::vector<std::uint64_t>{1024, 4096, 9000}));
    EXPECT_EQ(ml.signature_trailer, 721u);
    EXPECT_TRUE(ml.blacklist_hash);
    EXPECT_EQ(ml.user_time, 30 * PS_PER_US);

    const auto& ct = m.workloads[1].get<workloads::CyclictestWorkload>();
    EXPECT_EQ(ct.name, "cyclictest");
    EXPECT_EQ(ct.cpu, 1);
    EXPECT_EQ(ct.priority, 95);
    EXPECT_EQ(ct.period, 500 * PS_PER_US);
    EXPECT_EQ(ct.loops, 0u);

    const auto& sl = m.workloads[2].get<workloads::SoftirqLoadWorkload>();
    EXPECT_EQ(sl.name, "nic0");
    EXPECT_EQ(sl.period, 50 * PS_PER_US);
    EXPECT_EQ(sl.jitter, 5 * PS_PER_US);
    EXPECT_EQ(sl.alg, crypto::HashAlg::SHA256);
    EXPECT_EQ(sl.impl, std::nullopt);
    EXPECT_EQ(sl.bytes, 1500u);
    EXPECT_EQ(sl.count, 100u);
}

TEST(Scenario, CommandLineSeedAndModeOverrideTheFile) {
    TempDir dir;
    std::string text = std::string(MINIMAL);
    text.replace(text.find("duration"), 0, "seed = 7\nmode = \"functional\"\n");
    fs::path f = dir.write("s.toml", text);
    auto from_file = load_scenario(f, {.root = SOURCE_DIR});
    EXPECT_EQ(from_file.seed, 7u);
    EXPECT_EQ(from_file.mode, system::Mode::FUNCTIONAL);
    auto overridden =
        load_scenario(f, {.root = SOURCE_DIR, .seed_override = 42, .mode_override = system::Mode::TIMING});
    EXPECT_EQ(overridden.seed, 42u);
    EXPECT_EQ(overridden.mode, system::Mode::TIMING);
}

TEST(Scenario, RootIsFoundAboveTheScenarioFile) {
    // The scenario sits two levels below a directory holding data/profiles.
    TempDir dir;
    dir.write("data/profiles/x86/intel-icelake-server.toml", source_text("data/profiles/x86/intel-icelake-server.toml"));
    fs::path f = dir.write("scenarios/e2/minimal.toml", MINIMAL);
    auto cfg = load_scenario(f);
    EXPECT_EQ(cfg.machines.at(0).profile.name, "x86/intel-icelake-server");
    EXPECT_EQ(cfg.path, f.generic_string());
}

TEST(Scenario, NoRootAboveTheFileIsAnErrorNamingTheScenario) {
    TempDir dir;
    fs::path f = dir.write("lonely.toml", MINIMAL);
    if (fs::exists(fs::path("/data/profiles")) || fs::exists(fs::temp_directory_path() / "data/profiles"))
        GTEST_SKIP() << "a data/profiles directory exists above the temp dir";
    {
        const InputError e = input_error_of([&] { load_scenario(f); });
        ASSERT_EQ(e.diagnostics.size(), 1u) << e.what();
        EXPECT_EQ(e.diagnostics[0].file, f.generic_string());
        EXPECT_EQ(e.diagnostics[0].key, "machine[0].profile");
        EXPECT_NE(diagnostics_text(e).find("cannot find the repository root of " + f.generic_string()),
                  std::string::npos)
            << e.what();
    }
}

TEST(Scenario, EveryErrorOfAFileIsReportedInLineOrder) {
    TempDir dir;
    fs::path f = dir.write("bad.toml", R"([scenario]
name = "bad"
seed = -1

[[machine]]
name = "host"
profile = "x86/amd-zen3"
cpus = 65

[machine.kernel]
hz = 200

[[machine.workload]]
kind = "cyclictest"
priority = 100
)");
    {
        const InputError e = input_error_of([&] { load_scenario(f, {.root = SOURCE_DIR}); });
        ASSERT_EQ(e.diagnostics.size(), 4u) << e.what();
        EXPECT_EQ(e.diagnostics[0].str(),
                  f.generic_string() + ":3:8: error: scenario.seed: expected an integer >= 0, found -1");
        EXPECT_EQ(e.diagnostics[1].str(),
                  f.generic_string() + ":8:8: error: machine[0].cpus: expected an integer from 1 to 64, found 65");
        EXPECT_EQ(e.diagnostics[2].str(), f.generic_string() +
                                              ":11:6: error: machine[0].kernel.hz: expected one of 100, 250, 300, "
                                              "1000 (CONFIG_HZ), found integer 200");
        EXPECT_EQ(e.diagnostics[3].str(), f.generic_string() +
                                              ":15:12: error: machine[0].workload[0].priority: expected an integer "
                                              "from 1 to 99, found 100");
    }
}

TEST(Scenario, TheWorkloadWhoseFlowsPassTwoToThe32IsRefusedAtItsFlowsKey) {
    // Flows are numbered in 32 bits. 429 udp_flows workloads of 10,000,000 flows open
    // 4,290,000,000 <= 4,294,967,295; the 430th brings 4,300,000,000.
    std::string text = "[scenario]\nname = \"flows\"\n[[machine]]\nname = \"a\"\nprofile = \"x86/intel-icelake-server\"\n"
                       "cpus = 1\n";
    int flows_line = 0;
    for (int i = 0; i < 430; ++i) {
        text += fmt::format("[[machine.workload]]\nkind = \"udp_flows\"\nname = \"u{}\"\npeer = \"b\"\n", i);
        flows_line = static_cast<int>(std::count(text.begin(), text.end(), '\n')) + 1;
        text += "flows = 10000000\ninterval = \"1 s\"\n";
    }
    text += "[[machine]]\nname = \"b\"\nprofile = \"x86/intel-icelake-server\"\ncpus = 1\n[[link]]\nends = [\"a\", \"b\"]\n";
    TempDir dir;
    const fs::path f = dir.write("flows.toml", text);
    const InputError e = input_error_of([&] { load_scenario(f, {.root = SOURCE_DIR}); });
    ASSERT_EQ(e.diagnostics.size(), 1u) << e.what();
    EXPECT_EQ(e.diagnostics[0].key, "machine[0].workload[429].flows");
    EXPECT_EQ(e.diagnostics[0].line, flows_line);
    EXPECT_NE(e.diagnostics[0].message.find("4300000000 flows"), std::string::npos) << e.what();
}

TEST(Scenario, ProfileErrorsAreReportedWithTheProfilesFileName) {
    // A scenario naming a broken profile: the profile's own diagnostic, then the scenario's.
    TempDir dir;
    std::string text = source_text("tests/scenarios/invalid/profiles/negative-cost.toml");
    text.replace(text.find("test/minimal"), 12, "test/negative");
    dir.write("data/profiles/test/negative.toml", text);
    fs::path f = dir.write("s.toml", R"([scenario]
name = "s"
[[machine]]
name = "host"
profile = "test/negative"
cpus = 1
)");
    {
        const InputError e = input_error_of([&] { load_scenario(f); });
        ASSERT_EQ(e.diagnostics.size(), 2u) << e.what();
        EXPECT_EQ(e.diagnostics[0].key, "machine[0].profile");
        EXPECT_EQ(e.diagnostics[0].line, 5);
        EXPECT_TRUE(e.diagnostics[1].file.ends_with("data/profiles/test/negative.toml")) << e.diagnostics[1].file;
        EXPECT_EQ(e.diagnostics[1].line, 22);
        EXPECT_EQ(e.diagnostics[1].key, "irq.exit.value");
    }
}

// ---------------------------------------------------------------------------------------
// Sizes from files and the sample draw


std::string sampling_scenario(int sample) {
    return module_load_scenario("sampling", "x86/amd-zen3",
                                "sizes_file = \"data/workloads/debian-6.1-amd64-modules.tsv\"\nsignature_trailer = 721\nsample = " +
                                    std::to_string(sample) + "\n");
}

std::vector<std::uint64_t> module_sizes(const system::ScenarioConfig& cfg) {
    return cfg.machines.at(0).workloads.at(0).get<workloads::ModuleLoadWorkload>().sizes;
}

// Column 2 of the Debian module list, read independently of the loader.
std::vector<std::uint64_t> sizes_in_module_list() {
    std::ifstream in(SOURCE_DIR / "data/workloads/debian-6.1-amd64-modules.tsv");
    std::vector<std::uint64_t> sizes;
    std::string line;
    while (std::getline(in, line)) {
        if (line.empty() || line[0] == '#') continue;
        sizes.push_back(std::stoull(line.substr(line.find('\t') + 1)));
    }
    return sizes;
}

TEST(Sample, SameSeedSameRowsDifferentSeedDifferentRowsAllFromTheFile) {
    TempDir dir;
    fs::path f = dir.write("s.toml", sampling_scenario(150));
    auto a = module_sizes(load_scenario(f, {.root = SOURCE_DIR}));
    auto b = module_sizes(load_scenario(f, {.root = SOURCE_DIR}));
    auto c = module_sizes(load_scenario(f, {.root = SOURCE_DIR, .seed_override = 2}));
    ASSERT_EQ(a.size(), 150u);
    EXPECT_EQ(a, b);
    ASSERT_EQ(c.size(), 150u);
    EXPECT_NE(a, c);

    // Drawn without replacement: no size occurs more often than in the file.
    auto all = sizes_in_module_list();
    ASSERT_EQ(all.size(), 4023u); // the README's count
    std::map<std::uint64_t, int> available;
    for (auto s : all) ++available[s];
    for (const auto* sample : {&a, &c}) {
        std::map<std::uint64_t, int> drawn;
        for (auto s : *sample) ++drawn[s];
        for (auto [size, n] : drawn) EXPECT_LE(n, available[size]) << "size " << size;
    }
}

TEST(Sample, WholeFileWithoutSampleKeepsFileOrder) {
    TempDir dir;
    std::string text = sampling_scenario(1);
    text.erase(text.find("sample"));
    fs::path f = dir.write("s.toml", text);
    EXPECT_EQ(module_sizes(load_scenario(f, {.root = SOURCE_DIR})), sizes_in_module_list());
}

TEST(Sample, SampleOfAllRowsIsAPermutation) {
    TempDir dir;
    fs::path f = dir.write("s.toml", sampling_scenario(4023));
    auto drawn = module_sizes(load_scenario(f, {.root = SOURCE_DIR}));
    auto all = sizes_in_module_list();
    EXPECT_NE(drawn, all);
    std::sort(drawn.begin(), drawn.end());
    std::sort(all.begin(), all.end());
    EXPECT_EQ(drawn, all);
}

// A one-CPU hash_list scenario hashing the sizes in column 3 of `sizes_file`'s sha256 rows
// (column 1), with `extra` lines added to the workload.
std::string sha256_list_scenario(std::string_view name, std::string_view profile, std::string_view sizes_file,
                                 std::string_view extra = "") {
    return one_workload_scenario(std::string(name), std::string(profile),
                                 fmt::format("kind = \"hash_list\"\nalg = \"sha256\"\nsizes_file = \"{}\"\n"
                                             "size_column = 3\nmatch_column = 1\nmatch = \"sha256\"\n{}",
                                             sizes_file, extra));
}

TEST(Sample, MatchColumnFiltersRows) {
    // testmgr-6.1-hash-vectors.tsv: the sha256 vectors are 0, 3, 56, 64, 1023 bytes long.
    TempDir dir;
    fs::path f = dir.write("s.toml", sha256_list_scenario("testmgr", "x86/intel-icelake-server",
                                                          "data/workloads/testmgr-6.1-hash-vectors.tsv", "repeat = 9\n"));
    auto cfg = load_scenario(f, {.root = SOURCE_DIR});
    const auto& w = cfg.machines.at(0).workloads.at(0).get<workloads::HashListWorkload>();
    EXPECT_EQ(w.sizes, (std::vector<std::uint64_t>{0, 3, 56, 64, 1023}));
    EXPECT_EQ(w.repeat, 9u);
    EXPECT_EQ(w.name, "cryptomgr");
}

TEST(Sample, BadRowsAreReportedAtTheirLineInTheSizesFile) {
    // Line 3 is short, line 4 holds no integer; line 6 is filtered out by match before its
    // size is read, so its bad size does not matter.
    TempDir dir;
    dir.write("data/profiles/x86/amd-zen3.toml", source_text("data/profiles/x86/amd-zen3.toml"));
    fs::path tsv =
        dir.write("data/workloads/bad.tsv", "# header\nsha256\t0\t12\nsha256\t1\nsha256\t2\t4k\n\nsha1\t3\tx\n");
    fs::path f = dir.write("s.toml", sha256_list_scenario("bad-rows", "x86/amd-zen3", "data/workloads/bad.tsv"));
    {
        const InputError e = input_error_of([&] { load_scenario(f); });
        ASSERT_EQ(e.diagnostics.size(), 2u) << e.what();
        EXPECT_TRUE(e.diagnostics[0].file.ends_with("data/workloads/bad.tsv")) << e.diagnostics[0].file;
        EXPECT_EQ(e.diagnostics[0].line, 3);
        EXPECT_EQ(e.diagnostics[0].key, "machine[0].workload[0].sizes_file");
        EXPECT_EQ(e.diagnostics[0].message, "row has 2 tab-separated columns, expected at least 3");
        EXPECT_EQ(e.diagnostics[1].line, 4);
        EXPECT_EQ(e.diagnostics[1].message, "expected a byte count (a non-negative integer) in column 3, found \"4k\"");
    }
}

// ---------------------------------------------------------------------------------------
// File kinds

TEST(DetectKind, TellsProfilesFromScenarios) {
    EXPECT_EQ(detect_kind(SOURCE_DIR / "data/profiles/x86/amd-zen3.toml"), FileKind::PROFILE);
    TempDir dir;
    EXPECT_EQ(detect_kind(dir.write("s.toml", MINIMAL)), FileKind::SCENARIO);
    EXPECT_THROW(detect_kind(dir.write("n.toml", "[other]\na = 1\n")), InputError);
    EXPECT_THROW(detect_kind(dir.path() / "does-not-exist.toml"), InputError);
}

TEST(DetectKind, LoadingAFileAsTheOtherKindIsOneClearError) {
    TempDir dir;
    fs::path scenario = dir.write("s.toml", MINIMAL);
    fs::path profile = SOURCE_DIR / "data/profiles/x86/amd-zen3.toml";
    {
        const InputError e = input_error_of([&] { load_profile(scenario); });
        ASSERT_EQ(e.diagnostics.size(), 1u) << e.what();
        EXPECT_EQ(e.diagnostics[0].message,
                  "expected a table [profile], found a scenario ([scenario]); load it as a scenario");
    }
    {
        const InputError e = input_error_of([&] { load_scenario(profile); });
        ASSERT_EQ(e.diagnostics.size(), 1u) << e.what();
        EXPECT_EQ(e.diagnostics[0].message,
                  "expected a table [scenario], found a profile ([profile]); load it as a profile");
    }
}

TEST(DetectKind, MissingFileIsOneDiagnosticWithoutPosition) {
    TempDir dir;
    fs::path f = dir.path() / "does-not-exist.toml";
    {
        const InputError e = input_error_of([&] { load_scenario(f); });
        ASSERT_EQ(e.diagnostics.size(), 1u);
        EXPECT_EQ(e.diagnostics[0].str(), f.generic_string() + ": error: cannot read file: No such file or directory");
    }
}


// ---------------------------------------------------------------------------------------
// Checks that need a profile the shipped ones do not give: a copy of a shipped profile with a
// line or a section left out, in a root of its own.

// The shipped profile `name` without its lines from the first one containing `from` up to the next
// section header (`section`: a whole [table]) or only that line.
std::string profile_without(const std::string& name, const std::string& from, bool section) {
    std::ifstream in(SOURCE_DIR / "data/profiles" / (name + ".toml"));
    std::string out, line;
    bool skipping = false;
    while (std::getline(in, line)) {
        if (skipping && section && line.starts_with("[")) skipping = false;
        if (!skipping && line.find(from) != std::string::npos) {
            skipping = section;
            continue;
        }
        if (!skipping) out += line + "\n";
    }
    return out;
}

TEST(ProfileNeeds, ASpeFigureWithoutTheOtherIsReportedAtTheMachinesProfile) {
    // The e500 path (policy ppc-spe, the default) needs both figures once one is given.
    TempDir dir;
    dir.write("data/profiles/powerpc/p1014-e500v2.toml", profile_without("powerpc/p1014-e500v2", "kernel_use_warning", false));
    fs::path f = dir.write("s.toml", "[scenario]\nname = \"spe\"\n[[machine]]\nname = \"a\"\n"
                                      "profile = \"powerpc/p1014-e500v2\"\ncpus = 1\n");
    try {
        load_scenario(f);
        FAIL() << "accepted";
    } catch (const InputError& e) {
        ASSERT_EQ(e.diagnostics.size(), 1u) << e.what();
        EXPECT_EQ(e.diagnostics[0].key, "machine[0].profile");
        EXPECT_EQ(e.diagnostics[0].line, 5); // profile = ...
        EXPECT_EQ(e.diagnostics[0].column, 11);
        EXPECT_NE(e.diagnostics[0].message.find("has no simd.kernel_use_warning"), std::string::npos) << e.what();
    }
}

TEST(ProfileNeeds, AUdpIperf3StreamWithoutUdpFiguresIsReportedAtProtocol) {
    TempDir dir;
    dir.write("data/profiles/x86/intel-icelake-server.toml", profile_without("x86/intel-icelake-server", "[udp]", true));
    fs::path f = dir.write("s.toml", "[scenario]\nname = \"u\"\n"
                                      "[[machine]]\nname = \"a\"\nprofile = \"x86/intel-icelake-server\"\ncpus = 1\n"
                                      "[[machine.workload]]\nkind = \"iperf3\"\npeer = \"b\"\nprotocol = \"udp\"\n"
                                      "[[machine]]\nname = \"b\"\nprofile = \"x86/intel-icelake-server\"\ncpus = 1\n"
                                      "[[link]]\nends = [\"a\", \"b\"]\n");
    try {
        load_scenario(f);
        FAIL() << "accepted";
    } catch (const InputError& e) {
        // both ends lack [udp]: one diagnostic per end, both at protocol (line 10, column 12)
        ASSERT_EQ(e.diagnostics.size(), 2u) << e.what();
        for (const Diagnostic& d : e.diagnostics) {
            EXPECT_EQ(d.key, "machine[0].workload[0].protocol");
            EXPECT_EQ(d.line, 10);
            EXPECT_EQ(d.column, 12);
            EXPECT_NE(d.message.find("needs the [udp] figures of both ends"), std::string::npos) << e.what();
        }
    }
}

} // namespace
} // namespace kdsim::scenario
