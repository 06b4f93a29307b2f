// Tests of the scenario layer: unit parsing, the shipped profiles, scenario loading with its
// defaults and overrides, the deterministic sample draw, and the invalid-input corpus in
// tests/scenarios/invalid (each file states the diagnostic and line it must produce).
#include "scenario/load.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <vector>

namespace kdsim::scenario {
namespace {

namespace fs = std::filesystem;
using engine::PS_PER_MS;
using engine::PS_PER_S;
using engine::PS_PER_US;

const fs::path SOURCE_DIR = KDSIM_SOURCE_DIR;

// A fresh directory under the system temp dir, removed at the end of the test.
class TempDir {
public:
    TempDir() {
        const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
        path_ =
            fs::temp_directory_path() / (std::string("kdsim-scenario-") + info->test_suite_name() + "-" + info->name());
        fs::remove_all(path_);
        fs::create_directories(path_);
    }
    ~TempDir() { fs::remove_all(path_); }
    const fs::path& path() const { return path_; }
    fs::path write(const std::string& name, const std::string& text) const {
        fs::path p = path_ / name;
        fs::create_directories(p.parent_path());
        std::ofstream(p) << text;
        return p;
    }

private:
    fs::path path_;
};

std::string diagnostics_text(const InputError& e) { return e.what(); }

// ---------------------------------------------------------------------------------------
// Units

struct DurationCase {
    const char* text;
    std::optional<engine::Tick> ps;
};

TEST(ParseDuration, ConvertsExactlyToPicoseconds) {
    // Expectations worked out by hand: 1 us = 1e6 ps, 1 ms = 1e9 ps, 1 s = 1e12 ps.
    const DurationCase cases[] = {
        {"20 us", 20'000'000},
        {"1.5 ms", 1'500'000'000},
        {"2 s", 2'000'000'000'000},
        {"500 ns", 500'000},
        {"100 ps", 100},
        {"0.75 ms", 750'000'000},
        {"6ms", 6'000'000'000},
        {"  3 us  ", 3'000'000},
        {"0 us", 0},
        {"1.000 ns", 1'000},
        {"0.001 ns", 1},
        {".5 s", 500'000'000'000},
        {"7 \xC2\xB5s", 7'000'000},
        {"18446744073709551615 ps", UINT64_MAX},
        {"18446744 s", 18'446'744'000'000'000'000ULL},
    };
    for (const auto& c : cases) EXPECT_EQ(parse_duration(c.text), c.ps) << "input: \"" << c.text << '"';
}

TEST(ParseDuration, RejectsNegativeUnknownUnitsFractionalPicosecondsAndOverflow) {
    // Each is bad input: a sign, no unit, an unknown unit, 0.5 ps, or more than 2^64 ps.
    for (const char* text : {"-1 ms", "+1 ms", "20", "", "ms", "1 fortnight", "1 min", "1.5 ps", "0.0001 ns", "1e3 us",
                             "1 s 2", "1,5 ms", "18446745 s", "18446744073709551616 ps", "1 MS"})
        EXPECT_EQ(parse_duration(text), std::nullopt) << "input: \"" << text << '"';
}

TEST(ParseBytes, AcceptsIntegersAndBinaryUnits) {
    // KiB = 1024 B, MiB = 2^20 B, GiB = 2^30 B.
    const std::pair<const char*, std::uint64_t> cases[] = {
        {"4096", 4096},
        {"0", 0},
        {"1500 B", 1500},
        {"4 KiB", 4096},
        {"9 KiB", 9216},
        {"1 MiB", 1048576},
        {"1.5 KiB", 1536},
        {"2 GiB", 2147483648ULL},
        {"0.5 MiB", 524288},
        {"64B", 64},
        {"18446744073709551615", UINT64_MAX},
    };
    for (const auto& [text, bytes] : cases) EXPECT_EQ(parse_bytes(text), bytes) << "input: \"" << text << '"';
}

TEST(ParseBytes, RejectsNegativeDecimalUnitsFractionsAndOverflow) {
    for (const char* text :
         {"-1", "4 kB", "4 KB", "1 MB", "0.3 B", "1.1 KiB", "x", "", "KiB", "18446744073709551616", "16777216 TiB"})
        EXPECT_EQ(parse_bytes(text), std::nullopt) << "input: \"" << text << '"';
}

// ---------------------------------------------------------------------------------------
// Diagnostics

TEST(Diagnostic, PrintsInCompilerGrammar) {
    Diagnostic d{"data/profiles/x86/foo.toml", 12, 1, "sched.wakeup", "expected a figure, found nothing"};
    EXPECT_EQ(d.str(), "data/profiles/x86/foo.toml:12:1: error: sched.wakeup: expected a figure, found nothing");
    Diagnostic whole_file{"a.toml", 0, 0, "", "cannot read file: No such file or directory"};
    EXPECT_EQ(whole_file.str(), "a.toml: error: cannot read file: No such file or directory");
    InputError e({d, whole_file});
    EXPECT_EQ(std::string(e.what()), d.str() + "\n" + whole_file.str());
}

// ---------------------------------------------------------------------------------------
// Profiles

TEST(Profile, IntelIceLakeServerLoadsWithTheFiguresTypedInItsFile) {
    // Values read from data/profiles/x86/intel-icelake-server.toml.
    auto p = load_profile(SOURCE_DIR / "data/profiles/x86/intel-icelake-server.toml");
    EXPECT_EQ(p.name, "x86/intel-icelake-server");
    EXPECT_EQ(p.path, "data/profiles/x86/intel-icelake-server.toml");
    EXPECT_EQ(p.arch, arch::Arch::X86_64);
    EXPECT_EQ(p.simd_unit, "x86-fpu");
    EXPECT_EQ(p.clock_hz, 2'300'000'000u); // value = 2.30e9
    EXPECT_EQ(p.cache_line, 64u);
    EXPECT_EQ(p.kernel.context_switch, 2000u);
    EXPECT_EQ(p.kernel.wakeup, 1000u);
    EXPECT_EQ(p.kernel.cond_resched, 10u);
    EXPECT_EQ(p.kernel.irq_entry, 600u);
    EXPECT_EQ(p.kernel.timer_handler, 700u);
    EXPECT_EQ(p.kernel.local_irq_save, 12u);
    EXPECT_EQ(p.kernel.local_irq_restore, 5u);
    EXPECT_EQ(p.kernel.local_bh_enable, 14u);
    EXPECT_EQ(p.simd.state_size, 2440u);
    EXPECT_EQ(p.simd.begin, 25u);
    EXPECT_EQ(p.simd.save, 250u);
    EXPECT_EQ(p.simd.restore, 450u);
    using crypto::HashAlg;
    using crypto::HashImpl;
    ASSERT_TRUE(p.hash.has(HashAlg::SHA256, HashImpl::SHANI));
    EXPECT_DOUBLE_EQ(p.hash.get(HashAlg::SHA256, HashImpl::SHANI)->cycles_per_byte, 2.05);
    EXPECT_EQ(p.hash.get(HashAlg::SHA256, HashImpl::SHANI)->cycles_per_call, 231u);
    EXPECT_DOUBLE_EQ(p.hash.get(HashAlg::SHA1, HashImpl::GENERIC)->cycles_per_byte, 5.18);
    EXPECT_EQ(p.hash.get(HashAlg::SHA1, HashImpl::GENERIC)->cycles_per_call, 432u);
    EXPECT_DOUBLE_EQ(p.hash.get(HashAlg::SHA512, HashImpl::AVX2)->cycles_per_byte, 5.20);
    EXPECT_FALSE(p.hash.has(HashAlg::SHA512, HashImpl::SHANI)); // no SHA-512 extension
    EXPECT_FALSE(p.hash.has(HashAlg::SHA256, HashImpl::NEON));
}

TEST(Profile, AmdZen3LoadsWithTheFiguresTypedInItsFile) {
    // Values read from data/profiles/x86/amd-zen3.toml.
    auto p = load_profile(SOURCE_DIR / "data/profiles/x86/amd-zen3.toml");
    EXPECT_EQ(p.name, "x86/amd-zen3");
    EXPECT_EQ(p.arch, arch::Arch::X86_64);
    EXPECT_EQ(p.clock_hz, 2'450'000'000u); // value = 2.45e9
    EXPECT_EQ(p.simd.state_size, 840u);
    EXPECT_EQ(p.simd.save, 150u);
    EXPECT_EQ(p.simd.restore, 250u);
    using crypto::HashAlg;
    using crypto::HashImpl;
    EXPECT_DOUBLE_EQ(p.hash.get(HashAlg::SHA1, HashImpl::GENERIC)->cycles_per_byte, 4.75);
    EXPECT_EQ(p.hash.get(HashAlg::SHA1, HashImpl::GENERIC)->cycles_per_call, 404u);
    EXPECT_DOUBLE_EQ(p.hash.get(HashAlg::SHA256, HashImpl::AVX2)->cycles_per_byte, 7.69);
    EXPECT_EQ(p.hash.get(HashAlg::SHA256, HashImpl::AVX2)->cycles_per_call, 666u);
    EXPECT_EQ(p.hash.get(HashAlg::SHA512, HashImpl::AVX2)->cycles_per_call, 826u);
}

TEST(Profile, EveryShippedProfileLoads) {
    // A shipped profile that does not load would only fail later, in someone's scenario.
    int n = 0;
    for (auto& e : fs::recursive_directory_iterator(SOURCE_DIR / "data/profiles")) {
        if (e.path().extension() != ".toml") continue;
        ++n;
        try {
            auto p = load_profile(e.path());
            EXPECT_FALSE(p.name.empty());
        } catch (const InputError& err) {
            ADD_FAILURE() << err.what();
        }
    }
    EXPECT_GE(n, 2);
}

TEST(Profile, FractionalIntegerFiguresAreRoundedAndReportsListEveryError) {
    // Three defects in one file: all three reported, in line order; 249.6 cycles rounds to 250.
    TempDir dir;
    std::string text;
    {
        std::ifstream in(SOURCE_DIR / "tests/scenarios/invalid/profiles/missing-figure.toml");
        std::stringstream ss;
        ss << in.rdbuf();
        text = ss.str();
    }
    // missing-figure.toml lacks sched.wakeup; add two more defects.
    auto replace = [&](const std::string& from, const std::string& to) {
        auto pos = text.find(from);
        ASSERT_NE(pos, std::string::npos) << from;
        text.replace(pos, from.size(), to);
    };
    replace("save = { value = 150,", "save = { value = 149.6,");
    replace("exit = { value = 500, unit = \"cycles\"", "exit = { value = 500, unit = \"ns\"");
    replace("tick = { value = 1000,", "tick = { value = \"1000\",");
    fs::path f = dir.write("p.toml", text);
    try {
        load_profile(f);
        FAIL() << "expected InputError";
    } catch (const InputError& e) {
        ASSERT_EQ(e.diagnostics.size(), 3u) << e.what();
        EXPECT_EQ(e.diagnostics[0].key, "sched.wakeup");
        EXPECT_EQ(e.diagnostics[0].line, 12);
        EXPECT_EQ(e.diagnostics[1].key, "sched.tick.value");
        EXPECT_EQ(e.diagnostics[1].message, "expected a number of cycles, found string \"1000\"");
        EXPECT_EQ(e.diagnostics[2].key, "irq.exit.unit");
        EXPECT_EQ(e.diagnostics[2].message, "expected the unit \"cycles\", found string \"ns\"");
    }
    replace("exit = { value = 500, unit = \"ns\"", "exit = { value = 500, unit = \"cycles\"");
    replace("tick = { value = \"1000\",", "tick = { value = 1000,");
    replace("[sched]\n", "[sched]\nwakeup = { value = 999.5, unit = \"cycles\", source = \"test\" }\n");
    f = dir.write("p.toml", text);
    auto p = load_profile(f);
    EXPECT_EQ(p.simd.save, 150u);      // llround(149.6)
    EXPECT_EQ(p.kernel.wakeup, 1000u); // llround(999.5): halves round away from zero
    EXPECT_EQ(p.name, "test/minimal");
}

TEST(Profile, NameMustMatchItsPathUnderDataProfiles) {
    TempDir dir;
    std::ifstream in(SOURCE_DIR / "data/profiles/x86/amd-zen3.toml");
    std::stringstream ss;
    ss << in.rdbuf();
    fs::path f = dir.write("data/profiles/x86/zen3-copy.toml", ss.str());
    try {
        load_profile(f);
        FAIL() << "expected InputError";
    } catch (const InputError& e) {
        ASSERT_EQ(e.diagnostics.size(), 1u) << e.what();
        EXPECT_EQ(e.diagnostics[0].key, "profile.name");
        EXPECT_EQ(e.diagnostics[0].message, "expected \"x86/zen3-copy\" (the file's path under data/profiles, without "
                                            ".toml), found \"x86/amd-zen3\"");
        EXPECT_EQ(e.diagnostics[0].line, 18);
    }
}

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
    EXPECT_EQ(m.overrides[1], "simd.save: 300 cycles (profile: 250 cycles)");

    ASSERT_EQ(m.workloads.size(), 3u);
    const auto& ml = std::get<system::ModuleLoadWorkload>(m.workloads[0]);
    EXPECT_EQ(ml.name, "modprobe");
    EXPECT_EQ(ml.cpu, 0);
    EXPECT_EQ(ml.alg, crypto::HashAlg::SHA256);
    EXPECT_EQ(ml.impl, crypto::HashImpl::AVX2);
    EXPECT_EQ(ml.sizes, (std::vector<std::uint64_t>{1024, 4096, 9000}));
    EXPECT_EQ(ml.signature_trailer, 721u);
    EXPECT_TRUE(ml.blacklist_hash);
    EXPECT_EQ(ml.user_time, 30 * PS_PER_US);

    const auto& ct = std::get<system::CyclictestWorkload>(m.workloads[1]);
    EXPECT_EQ(ct.name, "cyclictest");
    EXPECT_EQ(ct.cpu, 1);
    EXPECT_EQ(ct.priority, 95);
    EXPECT_EQ(ct.period, 500 * PS_PER_US);
    EXPECT_EQ(ct.loops, 0u);

    const auto& sl = std::get<system::SoftirqLoadWorkload>(m.workloads[2]);
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
    std::ifstream in(SOURCE_DIR / "data/profiles/x86/intel-icelake-server.toml");
    std::stringstream ss;
    ss << in.rdbuf();
    dir.write("data/profiles/x86/intel-icelake-server.toml", ss.str());
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
    try {
        load_scenario(f);
        FAIL() << "expected InputError";
    } catch (const InputError& e) {
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
    try {
        load_scenario(f, {.root = SOURCE_DIR});
        FAIL() << "expected InputError";
    } catch (const InputError& e) {
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

TEST(Scenario, ProfileErrorsAreReportedWithTheProfilesFileName) {
    // A scenario naming a broken profile: the profile's own diagnostic, then the scenario's.
    TempDir dir;
    std::ifstream in(SOURCE_DIR / "tests/scenarios/invalid/profiles/negative-cost.toml");
    std::stringstream ss;
    ss << in.rdbuf();
    std::string text = ss.str();
    text.replace(text.find("test/minimal"), 12, "test/negative");
    dir.write("data/profiles/test/negative.toml", text);
    fs::path f = dir.write("s.toml", R"([scenario]
name = "s"
[[machine]]
name = "host"
profile = "test/negative"
cpus = 1
)");
    try {
        load_scenario(f);
        FAIL() << "expected InputError";
    } catch (const InputError& e) {
        ASSERT_EQ(e.diagnostics.size(), 2u) << e.what();
        EXPECT_EQ(e.diagnostics[0].key, "machine[0].profile");
        EXPECT_EQ(e.diagnostics[0].line, 5);
        EXPECT_TRUE(e.diagnostics[1].file.ends_with("data/profiles/test/negative.toml")) << e.diagnostics[1].file;
        EXPECT_EQ(e.diagnostics[1].line, 20);
        EXPECT_EQ(e.diagnostics[1].key, "irq.exit.value");
    }
}

// ---------------------------------------------------------------------------------------
// Sizes from files and the sample draw

std::string sampling_scenario(int sample) {
    return R"([scenario]
name = "sampling"

[[machine]]
name = "host"
profile = "x86/amd-zen3"
cpus = 1

[[machine.workload]]
kind = "module_load"
alg = "sha256"
sizes_file = "data/workloads/debian-6.1-amd64-modules.tsv"
signature_trailer = 721
sample = )" +
           std::to_string(sample) + "\n";
}

std::vector<std::uint64_t> module_sizes(const system::ScenarioConfig& cfg) {
    return std::get<system::ModuleLoadWorkload>(cfg.machines.at(0).workloads.at(0)).sizes;
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

TEST(Sample, MatchColumnFiltersRows) {
    // testmgr-6.1-hash-vectors.tsv: the sha256 vectors are 0, 3, 56, 64, 1023 bytes long.
    TempDir dir;
    fs::path f = dir.write("s.toml", R"([scenario]
name = "testmgr"

[[machine]]
name = "host"
profile = "x86/intel-icelake-server"
cpus = 1

[[machine.workload]]
kind = "hash_list"
alg = "sha256"
sizes_file = "data/workloads/testmgr-6.1-hash-vectors.tsv"
size_column = 3
match_column = 1
match = "sha256"
repeat = 9
)");
    auto cfg = load_scenario(f, {.root = SOURCE_DIR});
    const auto& w = std::get<system::HashListWorkload>(cfg.machines.at(0).workloads.at(0));
    EXPECT_EQ(w.sizes, (std::vector<std::uint64_t>{0, 3, 56, 64, 1023}));
    EXPECT_EQ(w.repeat, 9u);
    EXPECT_EQ(w.name, "cryptomgr");
}

TEST(Sample, BadRowsAreReportedAtTheirLineInTheSizesFile) {
    // Line 3 is short, line 4 holds no integer; line 6 is filtered out by match before its
    // size is read, so its bad size does not matter.
    TempDir dir;
    std::ifstream in(SOURCE_DIR / "data/profiles/x86/amd-zen3.toml");
    std::stringstream ss;
    ss << in.rdbuf();
    dir.write("data/profiles/x86/amd-zen3.toml", ss.str());
    fs::path tsv =
        dir.write("data/workloads/bad.tsv", "# header\nsha256\t0\t12\nsha256\t1\nsha256\t2\t4k\n\nsha1\t3\tx\n");
    fs::path f = dir.write("s.toml", R"([scenario]
name = "bad-rows"

[[machine]]
name = "host"
profile = "x86/amd-zen3"
cpus = 1

[[machine.workload]]
kind = "hash_list"
alg = "sha256"
sizes_file = "data/workloads/bad.tsv"
size_column = 3
match_column = 1
match = "sha256"
)");
    try {
        load_scenario(f);
        FAIL() << "expected InputError";
    } catch (const InputError& e) {
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
    try {
        load_profile(scenario);
        FAIL() << "expected InputError";
    } catch (const InputError& e) {
        ASSERT_EQ(e.diagnostics.size(), 1u) << e.what();
        EXPECT_EQ(e.diagnostics[0].message,
                  "expected a table [profile], found a scenario ([scenario]); load it as a scenario");
    }
    try {
        load_scenario(profile);
        FAIL() << "expected InputError";
    } catch (const InputError& e) {
        ASSERT_EQ(e.diagnostics.size(), 1u) << e.what();
        EXPECT_EQ(e.diagnostics[0].message,
                  "expected a table [scenario], found a profile ([profile]); load it as a profile");
    }
}

TEST(DetectKind, MissingFileIsOneDiagnosticWithoutPosition) {
    TempDir dir;
    fs::path f = dir.path() / "does-not-exist.toml";
    try {
        load_scenario(f);
        FAIL() << "expected InputError";
    } catch (const InputError& e) {
        ASSERT_EQ(e.diagnostics.size(), 1u);
        EXPECT_EQ(e.diagnostics[0].str(), f.generic_string() + ": error: cannot read file: No such file or directory");
    }
}

// ---------------------------------------------------------------------------------------
// The invalid corpus: tests/scenarios/invalid/**.toml

struct Expectation {
    std::string substring;
    int line = 0;
};

Expectation read_expectation(const fs::path& f) {
    std::ifstream in(f);
    std::string first, second;
    std::getline(in, first);
    std::getline(in, second);
    const std::string e = "# expect: ", l = "# line: ";
    Expectation x;
    if (first.starts_with(e)) x.substring = first.substr(e.size());
    if (second.starts_with(l)) x.line = std::stoi(second.substr(l.size()));
    return x;
}

std::vector<fs::path> invalid_corpus() {
    std::vector<fs::path> files;
    for (auto& e : fs::recursive_directory_iterator(SOURCE_DIR / "tests/scenarios/invalid"))
        if (e.path().extension() == ".toml") files.push_back(e.path());
    std::sort(files.begin(), files.end());
    return files;
}

class InvalidCorpus : public ::testing::TestWithParam<fs::path> {};

TEST_P(InvalidCorpus, IsRejectedWithTheExpectedDiagnosticAtTheExpectedLine) {
    const fs::path& f = GetParam();
    Expectation x = read_expectation(f);
    ASSERT_FALSE(x.substring.empty()) << f << ": first line must be '# expect: <substring>'";
    ASSERT_GT(x.line, 0) << f << ": second line must be '# line: <N>'";
    try {
        // A file that is neither kind is rejected by detect_kind itself.
        if (detect_kind(f) == FileKind::PROFILE)
            load_profile(f);
        else
            load_scenario(f);
        FAIL() << f << " was accepted";
    } catch (const InputError& e) {
        std::string all = e.what();
        EXPECT_NE(all.find(x.substring), std::string::npos) << "expected: " << x.substring << "\nactual:\n" << all;
        EXPECT_NE(all.find(f.filename().string() + ":" + std::to_string(x.line) + ":"), std::string::npos)
            << "expected line " << x.line << "\nactual:\n"
            << all;
        // The diagnostic carrying the expected text is the one at that line, in that file.
        auto it = std::find_if(e.diagnostics.begin(), e.diagnostics.end(),
                               [&](const Diagnostic& d) { return d.str().find(x.substring) != std::string::npos; });
        ASSERT_NE(it, e.diagnostics.end()) << all;
        EXPECT_EQ(it->line, x.line) << it->str();
        EXPECT_TRUE(it->file.ends_with(f.filename().string())) << it->str();
        EXPECT_GT(it->column, 0) << it->str();
    }
}

INSTANTIATE_TEST_SUITE_P(Files, InvalidCorpus, ::testing::ValuesIn(invalid_corpus()),
                         [](const ::testing::TestParamInfo<fs::path>& info) {
                             std::string name = info.param.parent_path().filename() == "profiles" ? "profile_" : "";
                             name += info.param.stem().string();
                             std::replace_if(
                                 name.begin(), name.end(), [](char c) { return !std::isalnum(c); }, '_');
                             return name;
                         });

TEST(InvalidCorpus, HoldsAtLeastFourteenFiles) { EXPECT_GE(invalid_corpus().size(), 14u); }

} // namespace
} // namespace kdsim::scenario
