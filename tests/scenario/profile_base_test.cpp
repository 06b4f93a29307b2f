// `[profile] base` and `without` (scenario/profile.cpp): a proxy profile holds only its own figures
// and takes the rest from its base, read as the loader reads any profile.
#include "scenario/load.h"
#include "test_support.h"

#include <gtest/gtest.h>

#include <regex>

namespace kdsim::scenario {
namespace {

using namespace test_support;

// The Ice Lake-SP profile as "test/base" in a data/profiles tree of its own.
std::string base_text() {
    std::string t = source_text("data/profiles/x86/intel-icelake-server.toml");
    const std::string from = "name = \"x86/intel-icelake-server\"";
    t.replace(t.find(from), from.size(), "name = \"test/base\"");
    return t;
}

// A figure's value as its line in `text` writes it (the first `key = { value = N` at a line start).
double value_in(const std::string& text, const std::string& key) {
    std::smatch m;
    const std::regex re("(^|\n)" + key + " = \\{ value = ([0-9.e+]+)");
    EXPECT_TRUE(std::regex_search(text, m, re)) << key;
    return std::stod(m[2]);
}

std::string derived(const std::string& extra_profile_keys, const std::string& tables) {
    return "[profile]\nname = \"test/derived\"\narch = \"x86_64\"\nbase = \"test/base\"\n" + extra_profile_keys +
           "description = \"a proxy of test/base\"\n\n" + tables;
}

TEST(ProfileBase, ADerivedFigureReplacesTheBasesAndEveryOtherIsInherited) {
    TempDir dir;
    const std::string base = base_text();
    dir.write("data/profiles/test/base.toml", base);
    const fs::path f = dir.write("data/profiles/test/derived.toml",
                                 derived("", "[cpu]\nclock = { value = 1.0e9, unit = \"Hz\", source = \"test\" }\n\n"
                                             "[sched]\ntick = { value = 777, unit = \"cycles\", source = \"test\" }\n"));
    const system::Profile p = load_profile(f);
    EXPECT_EQ(p.name, "test/derived");
    EXPECT_EQ(p.clock_hz, 1'000'000'000u);
    EXPECT_EQ(p.kernel.tick, 777u);
    // the rest of [sched] and [cpu], and whole tables this file does not name, are the base's
    EXPECT_EQ(p.kernel.wakeup, static_cast<engine::Cycles>(value_in(base, "wakeup")));
    EXPECT_EQ(p.kernel.context_switch, static_cast<engine::Cycles>(value_in(base, "context_switch")));
    EXPECT_EQ(p.cache_line, static_cast<std::uint64_t>(value_in(base, "cache_line")));
    EXPECT_TRUE(p.cipher.get(crypto::CipherPrim::CHACHA20, crypto::CipherImpl::AVX512).has_value());
}

TEST(ProfileBase, WithoutLeavesTheNamedTablesOfTheBaseOut) {
    TempDir dir;
    dir.write("data/profiles/test/base.toml", base_text());
    const fs::path f = dir.write("data/profiles/test/derived.toml",
                                 derived("without = [\"cipher.chacha20.avx512\", \"cipher.poly1305.avx512\"]\n", ""));
    const system::Profile p = load_profile(f);
    EXPECT_FALSE(p.cipher.get(crypto::CipherPrim::CHACHA20, crypto::CipherImpl::AVX512).has_value());
    EXPECT_FALSE(p.cipher.get(crypto::CipherPrim::POLY1305, crypto::CipherImpl::AVX512).has_value());
    // Ice Lake-SP's table has ChaCha20 generic and AVX-512 only: without the latter, no SIMD one
    EXPECT_TRUE(p.cipher.get(crypto::CipherPrim::CHACHA20, crypto::CipherImpl::GENERIC).has_value());
    EXPECT_EQ(p.cipher.best(crypto::CipherPrim::CHACHA20, true), std::nullopt);
    EXPECT_EQ(p.cipher.best(crypto::CipherPrim::CHACHA20, false), crypto::CipherImpl::GENERIC);
}

TEST(ProfileBase, AChainOfTwoBasesMergesInOrder) {
    TempDir dir;
    dir.write("data/profiles/test/base.toml", base_text());
    dir.write("data/profiles/test/derived.toml",
              derived("", "[sched]\ntick = { value = 777, unit = \"cycles\", source = \"test\" }\n"));
    const fs::path f = dir.write("data/profiles/test/third.toml",
                                 "[profile]\nname = \"test/third\"\narch = \"x86_64\"\nbase = \"test/derived\"\n"
                                 "description = \"a proxy of a proxy\"\n\n"
                                 "[sched]\nwakeup = { value = 123, unit = \"cycles\", source = \"test\" }\n");
    const system::Profile p = load_profile(f);
    EXPECT_EQ(p.kernel.tick, 777u);   // from test/derived
    EXPECT_EQ(p.kernel.wakeup, 123u); // its own
    EXPECT_EQ(p.clock_hz, static_cast<std::uint64_t>(value_in(base_text(), "clock"))); // from test/base
}

TEST(ProfileBase, TheHashCoversTheBaseSoAChangedBaseChangesIt) {
    TempDir dir;
    dir.write("data/profiles/test/base.toml", base_text());
    const fs::path f = dir.write("data/profiles/test/derived.toml", derived("", ""));
    const std::string h1 = load_profile(f).sha256;
    std::string changed = base_text();
    changed += "\n# a comment more\n";
    dir.write("data/profiles/test/base.toml", changed);
    const std::string h2 = load_profile(f).sha256;
    EXPECT_EQ(h1.size(), 64u);
    EXPECT_NE(h1, h2);
}

TEST(ProfileBase, TheShippedProxiesAreStock) {
    EXPECT_TRUE(load_profile(SOURCE_DIR / "data/profiles/x86/intel-n100.toml").stock);
    EXPECT_TRUE(load_profile(SOURCE_DIR / "data/profiles/arm/cortex-a9-armada385.toml").stock);
}

// Each defect: the key it is reported under and a part of the message.
struct BadBase {
    const char* what;
    std::string profile_keys;
    const char* key;
    const char* message;
};

TEST(ProfileBase, BadBasesAreErrorsNamingTheKey) {
    const std::vector<BadBase> cases = {
        {"unknown base", "", "profile.base", "no profile file"},
        {"not a string", "", "profile.base", "expected"},
        {"a name with .toml", "", "profile.base", "without .toml"},
        {"without naming nothing in the base", "without = [\"cipher.chacha20.avx1024\"]\n", "profile.without",
         "cipher.chacha20.avx1024"},
        {"without not a list", "without = \"cipher.chacha20.avx512\"\n", "profile.without", "expected a list"},
    };
    for (const BadBase& c : cases) {
        TempDir dir;
        dir.write("data/profiles/test/base.toml", base_text());
        std::string text = derived(c.profile_keys, "");
        if (std::string(c.what) == "unknown base") text.replace(text.find("test/base"), 9, "test/nobase");
        if (std::string(c.what) == "not a string") text.replace(text.find("\"test/base\""), 11, "42");
        if (std::string(c.what) == "a name with .toml") text.replace(text.find("test/base"), 9, "test/base.toml");
        const fs::path f = dir.write("data/profiles/test/derived.toml", text);
        const InputError e = input_error_of([&] { load_profile(f); });
        ASSERT_FALSE(e.diagnostics.empty()) << c.what;
        EXPECT_EQ(e.diagnostics[0].key, c.key) << c.what << ": " << e.what();
        EXPECT_NE(e.diagnostics[0].message.find(c.message), std::string::npos) << c.what << ": " << e.what();
        // line 4 is `base =`, line 5 the `without =` that derived() puts after it
        EXPECT_EQ(e.diagnostics[0].line, c.profile_keys.empty() ? 4 : 5) << c.what << ": " << e.what();
    }
}

TEST(ProfileBase, ACycleOfBasesIsAnError) {
    TempDir dir;
    dir.write("data/profiles/test/a.toml", "[profile]\nname = \"test/a\"\narch = \"x86_64\"\nbase = \"test/b\"\n"
                                            "description = \"a\"\n");
    const fs::path b = dir.write("data/profiles/test/b.toml", "[profile]\nname = \"test/b\"\narch = \"x86_64\"\n"
                                                              "base = \"test/a\"\ndescription = \"b\"\n");
    const InputError e = input_error_of([&] { load_profile(b); });
    EXPECT_NE(std::string(e.what()).find("cycle"), std::string::npos) << e.what();
}

TEST(ProfileBase, AnArchOtherThanTheBasesIsAnError) {
    TempDir dir;
    dir.write("data/profiles/test/base.toml", base_text());
    std::string text = derived("", "");
    text.replace(text.find("x86_64"), 6, "arm64");
    const fs::path f = dir.write("data/profiles/test/derived.toml", text);
    const InputError e = input_error_of([&] { load_profile(f); });
    ASSERT_FALSE(e.diagnostics.empty());
    EXPECT_EQ(e.diagnostics[0].key, "profile.arch") << e.what();
    EXPECT_EQ(e.diagnostics[0].line, 3);
}

TEST(ProfileBase, WithoutNeedsABase) {
    TempDir dir;
    std::string text = base_text();
    const std::string at = "name = \"test/base\"\n";
    text.insert(text.find(at) + at.size(), "without = [\"cipher.chacha20.avx512\"]\n");
    const fs::path f = dir.write("data/profiles/test/base.toml", text);
    const InputError e = input_error_of([&] { load_profile(f); });
    ASSERT_FALSE(e.diagnostics.empty());
    EXPECT_EQ(e.diagnostics[0].key, "profile.without") << e.what();
}

} // namespace
} // namespace kdsim::scenario
