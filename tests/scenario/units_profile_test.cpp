// Tests of the scenario layer's units (durations, byte counts), its diagnostics and the
// shipped and malformed profiles.
#include "test_support.h"

#include "kernel/text.h"

#include <algorithm>
#include <fstream>
#include <map>
#include <random>
#include <set>
#include <sstream>
#include <vector>

namespace kdsim::scenario {
namespace {

using namespace test_support;

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

TEST(ParseRate, ReadsWholeDecimalRatesExactlyInEveryUnit) {
    const std::vector<std::pair<const char*, std::uint64_t>> cases = {
        {"1 Gbit/s", 1'000'000'000},        {"2.5 Gbit/s", 2'500'000'000},
        {"100 Mbit/s", 100'000'000},        {"64 kbit/s", 64'000},
        {"1 bit/s", 1},                      {"9600bit/s", 9600},
        {"10 Tbit/s", 10'000'000'000'000},  {"0.000000001 Gbit/s", 1},
    };
    for (const auto& [text, bps] : cases) EXPECT_EQ(parse_rate(text), bps) << "input: \"" << text << '"';
}

TEST(ParseRate, RejectsFractionsOfABitRangesBeyondTheBoundsAndAnythingButTheWholeValue) {
    // Issue 18 items 3 and 11: each of these passed `kdsim check` (sscanf) and some crashed the run.
    for (const char* text : {"0.5 bit/s", "1e-9 bit/s", "1e30 Gbit/s", "inf Gbit/s", "nan Gbit/s", "1 Gbit/s please",
                             "0x10 Gbit/s", "0 bit/s", "-1 Gbit/s", "10.000000000001 Tbit/s", "11 Tbit/s", "1 Gbps",
                             "1", "Gbit/s", ""})
        EXPECT_EQ(parse_rate(text), std::nullopt) << "input: \"" << text << '"';
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
    EXPECT_EQ(p.kernel.wakeup, 500u);
    EXPECT_EQ(p.kernel.wakeup_activate, 500u);
    EXPECT_EQ(p.kernel.cond_resched, 10u);
    EXPECT_EQ(p.kernel.irq_entry, 600u);
    EXPECT_EQ(p.kernel.timer_handler, 700u);
    EXPECT_EQ(p.kernel.local_irq_save, 12u);
    EXPECT_EQ(p.kernel.local_irq_restore, 5u);
    EXPECT_EQ(p.kernel.local_bh_enable, 14u);
    EXPECT_EQ(p.simd.state_size, 2440u);
    EXPECT_EQ(p.simd.begin, 25u);
    EXPECT_EQ(p.simd.save, 226u);
    EXPECT_EQ(p.simd.restore, 408u);
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
    EXPECT_EQ(p.simd.save, 126u);
    EXPECT_EQ(p.simd.restore, 324u);
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

TEST(Profile, TheMemoryTablesGiveTheHierarchyInTheOrderOfLevels) {
    // arm/cortex-a9-imx6qp: 32 B lines ([cpu]), L1D 32 KB 4-way private, PL310 1 MB 16-way
    // shared, non-coherent DMA ([dma]); arm64/cortex-a72: DRAM channel 3 x 2737.5 MB/s.
    auto p = load_profile(SOURCE_DIR / "data/profiles/arm/cortex-a9-imx6qp.toml");
    ASSERT_TRUE(p.memory.has_value());
    const mem::MemoryConfig& m = *p.memory;
    EXPECT_EQ(m.line, 32u);
    ASSERT_EQ(m.levels.size(), 2u);
    EXPECT_EQ(m.levels[0].name, "l1d");
    EXPECT_EQ(m.levels[0].size, 32u * 1024u);
    EXPECT_EQ(m.levels[0].ways, 4u);
    EXPECT_FALSE(m.levels[0].shared);
    EXPECT_EQ(m.levels[0].replacement, mem::Replacement::RANDOM);
    EXPECT_EQ(m.levels[1].size, 1024u * 1024u);
    EXPECT_EQ(m.levels[1].ways, 16u);
    EXPECT_TRUE(m.levels[1].shared);
    EXPECT_FALSE(m.dma_coherent);
    EXPECT_FALSE(m.dma_write_allocate);
    auto a72 = load_profile(SOURCE_DIR / "data/profiles/arm64/cortex-a72.toml");
    ASSERT_TRUE(a72.memory.has_value());
    EXPECT_DOUBLE_EQ(a72.memory->dram_bandwidth, 3 * 2737.5e6);
    EXPECT_EQ(a72.memory->line, 64u);
}

TEST(Profile, TheL1iTableGivesTheInstructionCacheAndReadsTheBuildsCodeSizes) {
    // arm/cortex-a9-imx6qp's [memory.l1i]: 32 KB 4-way random, next line prefetched, 0.4 of each
    // function executed, functions 8-byte aligned, the armmp build's table. Its data lines (after
    // the 7 header lines) list tcp_v4_rcv with 3464 bytes and may_use_simd (inlined) with 0.
    auto p = load_profile(SOURCE_DIR / "data/profiles/arm/cortex-a9-imx6qp.toml");
    ASSERT_TRUE(p.memory.has_value());
    const mem::L1iConfig& i = p.memory->l1i;
    EXPECT_EQ(i.size, 32u * 1024u);
    EXPECT_EQ(i.ways, 4u);
    EXPECT_EQ(i.replacement, mem::Replacement::RANDOM);
    EXPECT_EQ(i.prefetch, 1u);
    EXPECT_DOUBLE_EQ(i.executed, 0.4);
    EXPECT_EQ(i.align, 8u);
    EXPECT_EQ(i.code, "kernel/code-sizes-6.1.0-47-armmp.tsv");
    std::ifstream tsv(SOURCE_DIR / "data/kernel/code-sizes-6.1.0-47-armmp.tsv");
    std::size_t rows = 0;
    for (std::string line; std::getline(tsv, line);) rows += !line.starts_with("#") && !line.starts_with("function\t");
    EXPECT_EQ(i.functions.size(), rows);
    auto byname = [&](std::string_view n) {
        auto it = std::find_if(i.functions.begin(), i.functions.end(), [&](const auto& f) { return f.name == n; });
        return it == i.functions.end() ? std::optional<std::uint64_t>{} : std::optional<std::uint64_t>{it->bytes};
    };
    EXPECT_EQ(byname("tcp_v4_rcv"), 3464u);
    EXPECT_EQ(byname("may_use_simd"), 0u);
    // arm64/cortex-a72: 48 KB 3-way, the arm64 build's table.
    auto a72 = load_profile(SOURCE_DIR / "data/profiles/arm64/cortex-a72.toml");
    EXPECT_EQ(a72.memory->l1i.size, 48u * 1024u);
    EXPECT_EQ(a72.memory->l1i.ways, 3u);
    EXPECT_EQ(a72.memory->l1i.code, "kernel/code-sizes-6.1.0-47-arm64.tsv");
}

TEST(Profile, EveryFunctionAKernelTextNamesIsInACodeSizeTable) {
    // A misspelt name would silently fetch nothing: each must be a function of at least one of
    // the three builds' tables (with or without code of its own there).
    std::set<std::string> known;
    for (const char* build : {"arm64", "armmp", "amd64"}) {
        std::ifstream tsv(SOURCE_DIR / (std::string("data/kernel/code-sizes-6.1.0-47-") + build + ".tsv"));
        for (std::string line; std::getline(tsv, line);)
            if (!line.starts_with("#")) known.insert(line.substr(0, line.find('\t')));
    }
    ASSERT_GT(known.size(), 300u);
    std::size_t named = 0;
    for (std::size_t i = 0; i < kernel::TEXTS; ++i)
        for (std::string_view fn : kernel::text_functions(static_cast<kernel::Text>(i))) {
            ++named;
            EXPECT_TRUE(known.contains(std::string(fn))) << fn << " of " << kernel::to_string(static_cast<kernel::Text>(i));
        }
    EXPECT_GT(named, 100u);
    EXPECT_TRUE(kernel::text_functions(kernel::Text::NONE).empty());
}

TEST(Profile, AMemoryLevelWithoutItsTableIsAnErrorAtTheMemoryTable) {
    TempDir dir;
    std::string text = source_text("tests/scenarios/invalid/profiles/memory-zero-latency.toml");
    text.replace(text.find("levels = [\"l1d\", \"l2\"]"), 22, "levels = [\"l1d\", \"l3\"]");
    fs::path f = dir.write("p.toml", text);
    {
        const InputError e = input_error_of([&] { load_profile(f); });
        const std::string all = e.what();
        EXPECT_NE(all.find("memory.l3"), std::string::npos) << all;   // the missing table
        EXPECT_NE(all.find("unknown key 'l2'"), std::string::npos) << all; // the table no level names
    }
}

TEST(Profile, FractionalIntegerFiguresAreRoundedAndReportsListEveryError) {
    // Three defects in one file: all three reported, in line order; 249.6 cycles rounds to 250.
    TempDir dir;
    std::string text;
    {
        text = source_text("tests/scenarios/invalid/profiles/missing-figure.toml");
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
    {
        const InputError e = input_error_of([&] { load_profile(f); });
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

// A cipher table's measured curve ([cipher.<prim>.<impl>] curve, as kdsim calibrate writes it).
TEST(Profile, ACipherCurveIsReadAsItsPointsAndPricesACall) {
    TempDir dir;
    std::string text = source_text("data/profiles/x86/amd-zen3.toml");
    const std::string table = "[cipher.chacha20-poly1305.avx2]\n";
    const auto at = text.find(table);
    ASSERT_NE(at, std::string::npos);
    text.insert(at + table.size(),
                "curve = { value = [[64, 1000], [1024, 1500], [2048, 1700]], unit = \"cycles\", source = \"test\" }\n");
    auto p = load_profile(dir.write("p.toml", text));
    const auto prim = crypto::CipherPrim::CHACHA20_POLY1305;
    const auto impl = crypto::CipherImpl::AVX2;
    ASSERT_EQ(p.cipher.curve(prim, impl).size(), 3u);
    EXPECT_EQ(p.cipher.curve(prim, impl)[1].bytes, 1024u);
    EXPECT_DOUBLE_EQ(p.cipher.curve(prim, impl)[1].cycles, 1500);
    // 1,420 bytes: 1,500 + 200 x 396 / 1,024 = 1,577.3; the line would say 1,000 + 1.27 x 1,420 = 2,803
    EXPECT_EQ(p.cipher.call_cycles(prim, impl, 1420), 1577u);
    // a table without a curve keeps the line: aes128-gcm.vaes 600 + 0.383 x 1,000 = 983
    EXPECT_TRUE(p.cipher.curve(crypto::CipherPrim::AES128_GCM, crypto::CipherImpl::VAES).empty());
    EXPECT_EQ(p.cipher.call_cycles(crypto::CipherPrim::AES128_GCM, crypto::CipherImpl::VAES, 1000), 983u);
}

TEST(Profile, ABadCipherCurveIsAnErrorAtTheCurveNamingWhatWasExpected) {
    struct Case {
        const char* value;
        const char* unit;
        const char* key;
        const char* message;
    };
    const Case cases[] = {
        {"[[64, 1000]]", "cycles", "cipher.chacha20-poly1305.avx2.curve.value",
         "expected at least two [bytes, cycles] pairs, found an array of 1 element"},
        {"[[64, 1000], [64, 1200]]", "cycles", "cipher.chacha20-poly1305.avx2.curve.value[1]",
         "expected a size above 64 bytes (sizes are positive and increasing), found 64"},
        {"[[64, 1000], [128, 1200, 5]]", "cycles", "cipher.chacha20-poly1305.avx2.curve.value[1]",
         "expected a pair [bytes, cycles] (an integer and a number), found an array of 3 elements"},
        {"[[64, 1000], [128, -1]]", "cycles", "cipher.chacha20-poly1305.avx2.curve.value[1]",
         "expected a finite non-negative number of cycles, found integer -1"},
        {"[[64, 1000], [128, 1200]]", "ns", "cipher.chacha20-poly1305.avx2.curve.unit",
         "expected the unit \"cycles\", found string \"ns\""},
    };
    for (const Case& c : cases) {
        TempDir dir;
        std::string text = source_text("data/profiles/x86/amd-zen3.toml");
        const std::string table = "[cipher.chacha20-poly1305.avx2]\n";
        const auto at = text.find(table);
        ASSERT_NE(at, std::string::npos);
        text.insert(at + table.size(), std::string("curve = { value = ") + c.value + ", unit = \"" + c.unit +
                                           "\", source = \"test\" }\n");
        const InputError e = input_error_of([&] { load_profile(dir.write("p.toml", text)); });
        ASSERT_EQ(e.diagnostics.size(), 1u) << c.value << ": " << e.what();
        EXPECT_EQ(e.diagnostics[0].key, c.key) << c.value;
        EXPECT_EQ(e.diagnostics[0].message, c.message) << c.value;
        EXPECT_EQ(e.diagnostics[0].line, static_cast<int>(std::count(text.begin(), text.begin() + at, '\n') + 2))
            << c.value; // the curve's line, right after the table header
    }
}

TEST(Profile, NameMustMatchItsPathUnderDataProfiles) {
    TempDir dir;
    fs::path f = dir.write("data/profiles/x86/zen3-copy.toml", source_text("data/profiles/x86/amd-zen3.toml"));
    {
        const InputError e = input_error_of([&] { load_profile(f); });
        ASSERT_EQ(e.diagnostics.size(), 1u) << e.what();
        EXPECT_EQ(e.diagnostics[0].key, "profile.name");
        EXPECT_EQ(e.diagnostics[0].message, "expected \"x86/zen3-copy\" (the file's path under data/profiles, without "
                                            ".toml), found \"x86/amd-zen3\"");
        EXPECT_EQ(e.diagnostics[0].line, 18);
    }
}

TEST(Profile, TheFecBusBandwidthWithoutItsRxFifoIsAnErrorAtTheFigure) {
    // The FEC's SoC port (devices/dma_port.h) needs both its rate and the FIFO frames wait in.
    TempDir dir;
    std::string text = source_text("data/profiles/arm/cortex-a9-imx6qp.toml");
    const std::string net = "\n[net]\n";
    const auto at = text.find(net);
    ASSERT_NE(at, std::string::npos);
    text.insert(at + net.size(), "fec_bus_bandwidth = { value = 5.875e7, unit = \"bytes/s\", source = \"test\" }\n");
    fs::path f = dir.write("data/profiles/arm/cortex-a9-imx6qp.toml", text); // its name must match its path
    const InputError e = input_error_of([&] { load_profile(f); });
    ASSERT_EQ(e.diagnostics.size(), 1u) << e.what();
    EXPECT_EQ(e.diagnostics[0].key, "net.fec_bus_bandwidth");
    EXPECT_EQ(e.diagnostics[0].message,
              "expected fec_rx_fifo beside it (the FEC's port on the SoC's bus: the receive FIFO frames wait in for "
              "it; fec_rx_fifo alone is a FEC whose bus keeps up with its line)");
}

TEST(Profile, TheFecRxFifoAloneIsAFecWhoseBusKeepsUpWithItsLine) {
    // Without fec_bus_bandwidth the FIFO only holds frames that find no free descriptor.
    TempDir dir;
    std::string text = source_text("data/profiles/arm/cortex-a9-imx6qp.toml");
    const std::string net = "\n[net]\n";
    const auto at = text.find(net);
    ASSERT_NE(at, std::string::npos);
    text.insert(at + net.size(), "fec_rx_fifo = { value = 4096, unit = \"bytes\", source = \"test\" }\n");
    fs::path f = dir.write("data/profiles/arm/cortex-a9-imx6qp.toml", text);
    const system::Profile p = load_profile(f);
    ASSERT_TRUE(p.net && p.net->fec_rx_fifo);
    EXPECT_EQ(*p.net->fec_rx_fifo, 4096u);
    EXPECT_FALSE(p.net->fec_bus_bandwidth.has_value());
}

} // namespace
} // namespace kdsim::scenario
