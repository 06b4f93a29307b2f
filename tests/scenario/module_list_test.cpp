// module_load's modules_file (scenario/load_modules.cpp): a boot's module list looked up by name
// in the package's size list, with a per-module signature hash; bad rows at their file and line.
// And the loaders (workers) that udev runs: every listed module is loaded exactly once.
#include "scenario/load.h"
#include "system/system.h"
#include "test_support.h"

#include <gtest/gtest.h>

#include <numeric>

namespace kdsim::scenario {
namespace {

using namespace test_support;

// Four modules; "nf-conntrack.ko" is found as nf_conntrack (kmod's '-' = '_').
constexpr const char* SIZES = "# path\tsize\nkernel/a/e1000e.ko\t100000\nkernel/b/nf-conntrack.ko\t50000\n"
                              "kernel/c/xfs.ko\t4000000\nkernel/d/crc7.ko\t6000\n";

std::string scenario(const std::string& extra) {
    return module_load_scenario("modules", "x86/intel-icelake-server",
                                "sizes_file = \"data/workloads/sizes.tsv\"\nmodules_file = \"data/workloads/boot.list\"\n"
                                "signature_trailer = 721\n" + extra);
}

struct ModuleList : ::testing::Test {
    TempDir dir;
    void SetUp() override {
        dir.write("data/profiles/x86/intel-icelake-server.toml", source_text("data/profiles/x86/intel-icelake-server.toml"));
        dir.write("data/workloads/sizes.tsv", SIZES);
    }
    // The diagnostics of loading the scenario with this module list.
    std::vector<Diagnostic> errors_of(const std::string& list) {
        dir.write("data/workloads/boot.list", list);
        try {
            load_scenario(dir.write("s.toml", scenario("")));
        } catch (const InputError& e) {
            return e.diagnostics;
        }
        return {};
    }
};

TEST_F(ModuleList, ListedModulesTakeTheirSizesInListOrderAndTheirOwnSignatureHash) {
    dir.write("data/workloads/boot.list", "# lsmod order\nxfs\nnf_conntrack\tsha512\ne1000e\tsha1\n");
    auto cfg = load_scenario(dir.write("s.toml", scenario("")));
    const auto& w = cfg.machines[0].workloads[0].get<workloads::ModuleLoadWorkload>();
    EXPECT_EQ(w.sizes, (std::vector<std::uint64_t>{4000000, 50000, 100000}));
    EXPECT_EQ(w.algs, (std::vector<crypto::HashAlg>{crypto::HashAlg::SHA256, crypto::HashAlg::SHA512, crypto::HashAlg::SHA1}));
}

TEST_F(ModuleList, AnUnknownAlgorithmIsReportedAtItsColumnInTheList) {
    auto d = errors_of("xfs\ne1000e\tmd4\n");
    ASSERT_EQ(d.size(), 1u);
    EXPECT_TRUE(d[0].file.ends_with("data/workloads/boot.list")) << d[0].file;
    EXPECT_EQ(d[0].line, 2);
    EXPECT_EQ(d[0].column, 8); // after "e1000e" and the tab
    EXPECT_EQ(d[0].key, "machine[0].workload[0].modules_file");
    EXPECT_EQ(d[0].message, "expected a signature hash the kernel model has (sha1, sha256 or sha512), found \"md4\"");
}

TEST_F(ModuleList, BadRowsAreEachReportedAtTheirLine) {
    // line 2: a module the package does not ship; line 3: three columns; line 5 is fine
    auto d = errors_of("xfs\nnvidia\ncrc7\tsha256\textra\n\ncrc7\n");
    ASSERT_EQ(d.size(), 2u);
    EXPECT_EQ(d[0].line, 2);
    EXPECT_NE(d[0].message.find("expected a module of"), std::string::npos) << d[0].message;
    EXPECT_NE(d[0].message.find("\"nvidia\""), std::string::npos) << d[0].message;
    EXPECT_EQ(d[1].line, 3);
    EXPECT_EQ(d[1].message,
              "expected \"<module name>\" or \"<module name>\\t<signature hash>\", found \"crc7\\tsha256\\textra\"");
}

TEST_F(ModuleList, SampleIsRefusedBesideAModuleList) {
    dir.write("data/workloads/boot.list", "xfs\n");
    try {
        load_scenario(dir.write("s.toml", scenario("sample = 1\n")));
        FAIL() << "expected InputError";
    } catch (const InputError& e) {
        ASSERT_EQ(e.diagnostics.size(), 1u);
        EXPECT_EQ(e.diagnostics[0].key, "machine[0].workload[0].sample");
    }
}

TEST_F(ModuleList, UdevWorkersLoadEveryListedModuleOnceAndHashEachItsSignedPart) {
    dir.write("data/workloads/boot.list", "xfs\nnf_conntrack\ne1000e\ncrc7\nxfs\n");
    auto cfg = load_scenario(dir.write("s.toml", scenario("workers = 3\nuser_time = \"100 us\"\n")));
    system::System sys(cfg);
    auto r = sys.run();
    // 5 loads, each hashing its file less the 721-byte trailer: the sum by hand
    const double signed_bytes = (4000000 - 721) * 2 + (50000 - 721) + (100000 - 721) + (6000 - 721);
    double modules = 0, bytes = 0, completed = 0;
    for (const auto& m : r.workloads[0].metrics) {
        if (m.key == "modules") modules = m.value;
        if (m.key == "bytes_hashed") bytes = m.value;
        if (m.key == "completed") completed = m.value;
    }
    EXPECT_EQ(modules, 5);
    EXPECT_EQ(bytes, signed_bytes);
    EXPECT_EQ(completed, 1);
    EXPECT_FALSE(r.failed);
}

} // namespace
} // namespace kdsim::scenario
