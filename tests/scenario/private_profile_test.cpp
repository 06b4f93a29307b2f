// A profile is reported as the stock one only when its file is byte for byte the one this build
// ships under that name; a copy elsewhere that differs, by even one byte, is private: named by its
// path and its content's SHA-256.
#include "scenario/load.h"
#include "test_support.h"

#include <gtest/gtest.h>
#include <openssl/sha.h>

#include <fmt/format.h>

#include <fstream>
#include <string>

namespace kdsim::scenario {
namespace {

using namespace test_support;

// SHA-256 of `text` in lower-case hex, straight from OpenSSL's one-shot SHA256().
std::string sha256_of(const std::string& text) {
    unsigned char md[SHA256_DIGEST_LENGTH];
    SHA256(reinterpret_cast<const unsigned char*>(text.data()), text.size(), md);
    std::string hex;
    for (unsigned char b : md) hex += fmt::format("{:02x}", b);
    return hex;
}

constexpr const char* NAME = "arm/cortex-a9-imx6qp";

// A root holding a copy of every shipped profile, with `extra` appended to NAME's.
fs::path copy_of_profiles(const TempDir& dir, const std::string& extra) {
    const fs::path root = dir.path() / "private";
    fs::create_directories(root / "data");
    fs::copy(SOURCE_DIR / "data/profiles", root / "data/profiles", fs::copy_options::recursive);
    if (!extra.empty()) {
        std::ofstream out(root / "data/profiles" / (std::string(NAME) + ".toml"), std::ios::app);
        out << extra;
    }
    return root;
}

system::Profile load_from(const TempDir& dir, const fs::path& root) {
    const fs::path f = dir.write("s.toml", module_load_scenario("private", NAME, "sizes = [4096]\n"));
    return load_scenario(f, LoadOptions{.root = root}).machines.at(0).profile;
}

TEST(PrivateProfile, TheShippedFileIsStockAndNamedByItsRepositoryPath) {
    TempDir dir;
    const system::Profile p = load_from(dir, SOURCE_DIR);
    EXPECT_TRUE(p.stock);
    EXPECT_EQ(p.path, "data/profiles/arm/cortex-a9-imx6qp.toml");
    EXPECT_EQ(p.sha256, sha256_of(source_text("data/profiles/arm/cortex-a9-imx6qp.toml")));
}

TEST(PrivateProfile, AnIdenticalCopyInAnotherFolderIsStillTheStockProfile) {
    TempDir dir;
    const system::Profile p = load_from(dir, copy_of_profiles(dir, ""));
    EXPECT_TRUE(p.stock);
    EXPECT_EQ(p.path, "data/profiles/arm/cortex-a9-imx6qp.toml");
}

TEST(PrivateProfile, ACopyWithOneCommentAddedIsPrivateAndNamedByItsPathAndHash) {
    TempDir dir;
    const fs::path root = copy_of_profiles(dir, "# mine\n");
    const system::Profile p = load_from(dir, root);
    EXPECT_FALSE(p.stock);
    EXPECT_EQ(p.name, NAME); // the name is what the scenario asked for; the path says whose it is
    const fs::path file = fs::absolute(root / "data/profiles/arm/cortex-a9-imx6qp.toml").lexically_normal();
    EXPECT_EQ(p.path, file.generic_string());
    EXPECT_EQ(p.sha256, sha256_of(source_text("data/profiles/arm/cortex-a9-imx6qp.toml") + "# mine\n"));
}

TEST(PrivateProfile, AProfileLoadedByPathOutsideAnyDataProfilesFolderIsPrivate) {
    TempDir dir;
    const fs::path f = dir.write("mine.toml", source_text("data/profiles/arm/cortex-a9-imx6qp.toml"));
    const system::Profile p = load_profile(f);
    EXPECT_FALSE(p.stock);
    EXPECT_EQ(p.path, fs::absolute(f).lexically_normal().generic_string());
}

} // namespace
} // namespace kdsim::scenario
