// The invalid-input corpus in tests/scenarios/invalid: each file states on its first two lines
// the diagnostic and the line (`# line: 12`) or line and column (`# line: 12:5`) it must produce.
#include "test_support.h"

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
// The invalid corpus: tests/scenarios/invalid/**.toml

struct Expectation {
    std::string substring;
    int line = 0;
    int column = 0; // 0: not stated
};

Expectation read_expectation(const fs::path& f) {
    std::ifstream in(f);
    std::string first, second;
    std::getline(in, first);
    std::getline(in, second);
    const std::string e = "# expect: ", l = "# line: ";
    Expectation x;
    if (first.starts_with(e)) x.substring = first.substr(e.size());
    if (second.starts_with(l)) {
        const std::string at = second.substr(l.size());
        x.line = std::stoi(at);
        if (const auto colon = at.find(':'); colon != std::string::npos) x.column = std::stoi(at.substr(colon + 1));
    }
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
        if (x.column) {
            EXPECT_EQ(it->column, x.column) << it->str();
        }
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
