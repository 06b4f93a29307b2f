// What an input file may be before the TOML parser sees it (scenario/input_file.cpp): issue 18
// items 4 and 6.
#include "scenario/toml_reader.h"
#include "test_support.h"

#include <sys/stat.h>

namespace kdsim::scenario {
namespace {

using namespace test_support;

std::string dotted(std::size_t parts) {
    std::string s = "a";
    for (std::size_t i = 1; i < parts; ++i) s += ".a";
    return s;
}

std::string message_of(const fs::path& f) {
    try {
        load_scenario(f);
    } catch (const InputError& e) {
        return e.what();
    }
    return "accepted";
}

TEST(InputFile, AHeaderOfFiftyThousandPartsIsRefusedAtItsLineNotACrash) {
    TempDir d;
    auto f = d.write("deep.toml", "[scenario]\nname = \"x\"\n[" + dotted(50'000) + "]\n");
    std::string m = message_of(f);
    EXPECT_NE(m.find(":3:"), std::string::npos) << m;
    EXPECT_NE(m.find("more than 64 parts"), std::string::npos) << m;
}

TEST(InputFile, ADottedKeyOfFiftyThousandPartsIsRefusedNotACrash) {
    TempDir d;
    auto f = d.write("deep.toml", "[scenario]\n" + dotted(50'000) + " = 1\n");
    EXPECT_NE(message_of(f).find("more than 64 parts"), std::string::npos);
}

TEST(InputFile, SixtyFourPartsAreReadAndSixtyFiveAreNot) {
    // Part counts by hand: "a" then 63 times ".a" is 64 parts (63 dots).
    EXPECT_FALSE(detail::find_deep_key(dotted(64) + " = 1\n", 64));
    auto at = detail::find_deep_key("x = 1\n" + dotted(65) + " = 1\n", 64);
    ASSERT_TRUE(at);
    EXPECT_EQ(at->line, 2u);
    EXPECT_EQ(at->column, 128u); // the 64th dot: column 2 * 64
}

TEST(InputFile, DotsInStringsCommentsAndNumbersAreNotKeyParts) {
    std::string many(200, '.');
    EXPECT_FALSE(detail::find_deep_key("s = \"" + many + "\"\n", 64));
    EXPECT_FALSE(detail::find_deep_key("s = '" + many + "'\n", 64));
    EXPECT_FALSE(detail::find_deep_key("s = \"\"\"\n" + many + "\n\"\"\"\n", 64));
    EXPECT_FALSE(detail::find_deep_key("s = '''\n" + many + "\n'''\n", 64));
    EXPECT_FALSE(detail::find_deep_key("# " + many + "\n", 64));
    std::string floats = "x = [";
    for (int i = 0; i < 100; ++i) floats += "1.5, ";
    EXPECT_FALSE(detail::find_deep_key(floats + "2.5]\n", 64));
    // Quoted parts of one dotted key still count.
    std::string quoted = "\"a\"";
    for (int i = 0; i < 70; ++i) quoted += ".\"a\"";
    EXPECT_TRUE(detail::find_deep_key(quoted + " = 1\n", 64));
}

TEST(InputFile, ACharacterDeviceIsRefusedWithoutReadingIt) {
    // /dev/zero would be read until memory runs out.
    std::string m = message_of("/dev/zero");
    EXPECT_NE(m.find("not a regular file"), std::string::npos) << m;
}

TEST(InputFile, AFifoIsRefusedWithoutBlockingOnIt) {
    TempDir d;
    fs::path p = d.path() / "fifo.toml";
    ASSERT_EQ(::mkfifo(p.c_str(), 0600), 0);
    std::string m = message_of(p);
    EXPECT_NE(m.find("not a regular file"), std::string::npos) << m;
}

TEST(InputFile, AFileAboveSixteenMibIsRefusedBeforeParsing) {
    TempDir d;
    fs::path p = d.path() / "big.toml";
    {
        std::ofstream out(p);
        out << "[scenario]\nname = \"x\"\n";
        std::string comment = "# " + std::string(1 << 20, 'x') + "\n";
        for (int i = 0; i < 17; ++i) out << comment;
    }
    std::string m = message_of(p);
    EXPECT_NE(m.find("more than the 16 MiB"), std::string::npos) << m;
}

} // namespace
} // namespace kdsim::scenario
