// Profile figures overridden for one machine, from [machine.overrides] or `--set` (assignments):
// every table of a profile can be, each change is listed with the profile's value, and a figure
// of a table the profile lacks is an error naming that table.
#include "scenario/load.h"
#include "test_support.h"

#include <gtest/gtest.h>

#include <string>

namespace kdsim::scenario {
namespace {

using namespace test_support;

// A module_load machine on the Cortex-A72 profile with crypto extensions (it has [dma], [tcp],
// [net], [tunnel], [virt], [cipher.*] and [irqmask.*]), with `sets` as --set assignments.
system::ScenarioConfig load_with(const TempDir& dir, const std::string& profile, std::vector<std::string> sets) {
    const fs::path f = dir.write("s.toml", module_load_scenario("overrides", profile, "sizes = [4096]\n"));
    LoadOptions lo{.root = SOURCE_DIR};
    for (const std::string& s : sets) {
        const auto eq = s.find('=');
        lo.assignments.push_back(Assignment{"machine[0].overrides." + s.substr(0, eq), s.substr(eq + 1), "--set " + s});
    }
    return load_scenario(f, lo);
}

TEST(Override, EveryOptionalTableOfTheProfileCanBeOverridden) {
    TempDir dir;
    const auto cfg = load_with(dir, "arm64/cortex-a72-ce",
                               {"dma.inner_inv_line=61", "tcp.ip_rcv=1234", "tunnel.wg_xmit=999", "tunnel.queue_work=7",
                                "virt.exit_mmio=4321", "cipher.aes128-gcm.ce.cycles_per_byte=2.25",
                                "irqmask.pmr.local_irq_enable=42", "net.driver_rx=55"});
    const system::MachineConfig& m = cfg.machines.at(0);
    EXPECT_EQ(m.profile.dma->inner_inv_line, 61u);
    EXPECT_EQ(m.profile.tcp->ip_rcv, 1234u);
    EXPECT_EQ(m.profile.tunnel->wg_xmit, 999u);
    EXPECT_EQ(m.profile.tunnel->workqueue.queue_work, 7u);
    EXPECT_EQ(m.profile.virt->exit_mmio, 4321u);
    EXPECT_EQ(m.profile.cipher.get(crypto::CipherPrim::AES128_GCM, crypto::CipherImpl::CE)->cycles_per_byte, 2.25);
    EXPECT_EQ(m.profile.irqmask.at("pmr").local_irq_enable, 42u);
    EXPECT_EQ(m.profile.net->driver_rx, 55u);
    // Listed with the stock value (from data/profiles/arm64/cortex-a72-ce.toml), in key order.
    ASSERT_EQ(m.overrides.size(), 8u);
    EXPECT_EQ(m.overrides[0], "cipher.aes128-gcm.ce.cycles_per_byte: 2.25 cycles/byte (profile: 1.65 cycles/byte)");
    EXPECT_EQ(m.overrides[6], "tunnel.wg_xmit: 999 cycles (profile: 1150 cycles)");
    EXPECT_EQ(m.overrides[5], "tunnel.queue_work: 7 cycles (profile: 320 cycles)");
    EXPECT_EQ(m.overrides[7], "virt.exit_mmio: 4321 cycles (profile: 6500 cycles)");
}

TEST(Override, AnOptionalHashFigureTheProfileLeftUnsetSaysSo) {
    TempDir dir;
    const auto cfg = load_with(dir, "arm64/cortex-a72-ce", {"hash.sha256.ce.cold_start=5000"});
    const system::MachineConfig& m = cfg.machines.at(0);
    EXPECT_EQ(m.profile.hash.get(crypto::HashAlg::SHA256, crypto::HashImpl::CE)->cold_start, 5000u);
    ASSERT_EQ(m.overrides.size(), 1u);
    EXPECT_EQ(m.overrides[0], "hash.sha256.ce.cold_start: 5000 cycles (profile: not set)");
}

TEST(Override, AFigureOfATableTheProfileLacksIsAnErrorNamingTheTable) {
    TempDir dir;
    // The Ice Lake server profile has no [tunnel], [virt] or [cipher.*] (data/profiles/x86/).
    const std::string tunnel = input_error_of([&] { load_with(dir, "x86/intel-icelake-server", {"tunnel.wg_xmit=61"}); }).what();
    EXPECT_NE(tunnel.find("profile x86/intel-icelake-server has no [tunnel] table"), std::string::npos) << tunnel;
    const std::string cipher =
        input_error_of([&] { load_with(dir, "x86/intel-icelake-server", {"cipher.aes128-gcm.ce.cycles_per_byte=1"}); }).what();
    EXPECT_NE(cipher.find("has no [cipher.aes128-gcm.ce]"), std::string::npos) << cipher;
    const std::string mask = input_error_of([&] { load_with(dir, "arm64/cortex-a72-ce", {"irqmask.pmr.lirq=1"}); }).what();
    EXPECT_NE(mask.find("[irqmask.pmr] has no figure 'lirq'; expected one of: local_irq_disable"), std::string::npos) << mask;
    const std::string typo = input_error_of([&] { load_with(dir, "arm64/cortex-a72-ce", {"dma.inner_inv_lin=1"}); }).what();
    EXPECT_NE(typo.find("did you mean 'dma.inner_inv_line'?"), std::string::npos) << typo;
}

} // namespace
} // namespace kdsim::scenario
