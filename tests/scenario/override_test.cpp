// Profile figures overridden for one machine, from [machine.overrides] or `--set` (assignments):
// every table of a profile can be, each change is listed with the profile's value, and a figure
// of a table the profile lacks is an error naming that table.
#include "scenario/load.h"
#include "test_support.h"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <toml++/toml.h>

#include <functional>
#include <map>
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
                                "virt.tun_xmit=4321", "cipher.aes128-gcm.ce.cycles_per_byte=2.25",
                                "irqmask.pmr.local_irq_enable=42", "net.driver_rx=55"});
    const system::MachineConfig& m = cfg.machines.at(0);
    EXPECT_EQ(m.profile.dma->inner_inv_line, 61u);
    EXPECT_EQ(m.profile.tcp->ip_rcv, 1234u);
    EXPECT_EQ(m.profile.tunnel->wg_xmit, 999u);
    EXPECT_EQ(m.profile.tunnel->workqueue.queue_work, 7u);
    EXPECT_EQ(m.profile.virt->tun_xmit, 4321u);
    EXPECT_EQ(m.profile.cipher.get(crypto::CipherPrim::AES128_GCM, crypto::CipherImpl::CE)->cycles_per_byte, 2.25);
    EXPECT_EQ(m.profile.irqmask.at("pmr").local_irq_enable, 42u);
    EXPECT_EQ(m.profile.net->driver_rx, 55u);
    // Listed with the stock value (from data/profiles/arm64/cortex-a72-ce.toml), in key order.
    ASSERT_EQ(m.overrides.size(), 8u);
    EXPECT_EQ(m.overrides[0], "cipher.aes128-gcm.ce.cycles_per_byte: 2.25 cycles/byte (profile: 1.65 cycles/byte)");
    EXPECT_EQ(m.overrides[6], "tunnel.wg_xmit: 999 cycles (profile: 1150 cycles)");
    EXPECT_EQ(m.overrides[5], "tunnel.queue_work: 7 cycles (profile: 320 cycles)");
    EXPECT_EQ(m.overrides[7], "virt.tun_xmit: 4321 cycles (profile: 900 cycles)");
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
    // The Cortex-A53 profile has no [tunnel]; the Ice Lake server profile has no [cipher.*.ce]
    // (data/profiles/).
    const std::string tunnel = input_error_of([&] { load_with(dir, "arm64/cortex-a53", {"tunnel.wg_xmit=61"}); }).what();
    EXPECT_NE(tunnel.find("profile arm64/cortex-a53 has no [tunnel] table"), std::string::npos) << tunnel;
    const std::string cipher =
        input_error_of([&] { load_with(dir, "x86/intel-icelake-server", {"cipher.aes128-gcm.ce.cycles_per_byte=1"}); }).what();
    EXPECT_NE(cipher.find("has no [cipher.aes128-gcm.ce]"), std::string::npos) << cipher;
    const std::string mask = input_error_of([&] { load_with(dir, "arm64/cortex-a72-ce", {"irqmask.pmr.lirq=1"}); }).what();
    EXPECT_NE(mask.find("[irqmask.pmr] has no figure 'lirq'; expected one of: local_irq_disable"), std::string::npos) << mask;
    const std::string typo = input_error_of([&] { load_with(dir, "arm64/cortex-a72-ce", {"dma.inner_inv_lin=1"}); }).what();
    EXPECT_NE(typo.find("did you mean 'dma.inner_inv_line'?"), std::string::npos) << typo;
}


// data/profiles/arm/cortex-a9-imx6qp.toml's [memory]: copy 0.35 cycles/byte; l1d 32768 B, 4 ways,
// 4 cycles; l2 1048576 B, 16 ways, 30 cycles; dram 150 ns, 4.25e9 B/s, core 8.5e8 B/s; prefetch
// 2 streams, trigger 2; 32-byte lines.
TEST(Override, EveryMemoryFigureCanBeOverriddenAndIsListedWithTheProfilesValue) {
    TempDir dir;
    const auto cfg = load_with(dir, "arm/cortex-a9-imx6qp",
                               {"memory.copy=0.5", "memory.l2.size=524288", "memory.l1d.latency=3",
                                "memory.dram.latency=120", "memory.dram.core_bandwidth=1e9", "memory.prefetch.streams=0",
                                "memory.l2.ways=8", "memory.peer_latency=60"});
    const system::MachineConfig& m = cfg.machines.at(0);
    const mem::MemoryConfig& c = *m.profile.memory;
    EXPECT_EQ(c.copy_warm, 0.5);
    EXPECT_EQ(c.levels.at(1).size, 524288u);
    EXPECT_EQ(c.levels.at(1).ways, 8u);
    EXPECT_EQ(c.levels.at(0).latency, 3u);
    EXPECT_EQ(c.dram_latency_ns, 120.0);
    EXPECT_EQ(c.core_bandwidth, 1e9);
    EXPECT_EQ(c.prefetch_streams, 0u);
    EXPECT_EQ(c.peer_latency, 60u);
    EXPECT_EQ(c.dram_bandwidth, 4.25e9); // untouched
    ASSERT_EQ(m.overrides.size(), 8u);   // in key order
    EXPECT_EQ(m.overrides[0], "memory.copy: 0.5 cycles/byte (profile: 0.35 cycles/byte)");
    EXPECT_EQ(m.overrides[1], "memory.dram.core_bandwidth: 1000000000 bytes/s (profile: 850000000 bytes/s)");
    EXPECT_EQ(m.overrides[2], "memory.dram.latency: 120 ns (profile: 150 ns)");
    EXPECT_EQ(m.overrides[3], "memory.l1d.latency: 3 cycles (profile: 4 cycles)");
    EXPECT_EQ(m.overrides[4], "memory.l2.size: 524288 bytes (profile: 1048576 bytes)");
    EXPECT_EQ(m.overrides[5], "memory.l2.ways: 8 ways (profile: 16 ways)");
    EXPECT_EQ(m.overrides[6], "memory.peer_latency: 60 cycles (profile: not set)"); // the i.MX6 gives none
    EXPECT_EQ(m.overrides[7], "memory.prefetch.streams: 0 streams (profile: 2 streams)");
}

// The i.MX6QP's [memory.l1i]: 32768 B, 4 ways, prefetch 1 line, executed 0.4, align 8 B (its
// profile); 32-byte lines.
TEST(Override, EveryInstructionCacheFigureCanBeOverriddenAndIsCheckedWithTheHierarchy) {
    TempDir dir;
    const auto cfg = load_with(dir, "arm/cortex-a9-imx6qp",
                               {"memory.l1i.size=65536", "memory.l1i.ways=2", "memory.l1i.prefetch=0",
                                "memory.l1i.executed=1", "memory.l1i.align=16"});
    const system::MachineConfig& m = cfg.machines.at(0);
    const mem::L1iConfig& i = m.profile.memory->l1i;
    EXPECT_EQ(i.size, 65536u);
    EXPECT_EQ(i.ways, 2u);
    EXPECT_EQ(i.prefetch, 0u);
    EXPECT_EQ(i.executed, 1.0);
    EXPECT_EQ(i.align, 16u);
    EXPECT_FALSE(i.functions.empty()); // the code table stays the profile's
    ASSERT_EQ(m.overrides.size(), 5u); // in key order
    EXPECT_EQ(m.overrides[0], "memory.l1i.align: 16 bytes (profile: 8 bytes)");
    EXPECT_EQ(m.overrides[1], "memory.l1i.executed: 1 fraction (profile: 0.4 fraction)");
    EXPECT_EQ(m.overrides[2], "memory.l1i.prefetch: 0 lines (profile: 1 lines)");
    EXPECT_EQ(m.overrides[3], "memory.l1i.size: 65536 bytes (profile: 32768 bytes)");
    EXPECT_EQ(m.overrides[4], "memory.l1i.ways: 2 ways (profile: 4 ways)");

    // 3 ways x 32 B does not divide 32768 B; an alignment of 12 B is no power of two; a fraction
    // above 1 is out of the unit's bound; a figure [memory.l1i] does not have names those it has.
    const std::string ways = input_error_of([&] { load_with(dir, "arm/cortex-a9-imx6qp", {"memory.l1i.ways=3"}); }).what();
    EXPECT_NE(ways.find("machine[0].overrides.\"memory.l1i.ways\""), std::string::npos) << ways;
    EXPECT_NE(ways.find("l1i.ways: associativity 3 x line 32 B does not divide the size 32768 B"), std::string::npos) << ways;
    const std::string align = input_error_of([&] { load_with(dir, "arm/cortex-a9-imx6qp", {"memory.l1i.align=12"}); }).what();
    EXPECT_NE(align.find("l1i.align: expected a power of two number of bytes, found 12"), std::string::npos) << align;
    const std::string executed =
        input_error_of([&] { load_with(dir, "arm/cortex-a9-imx6qp", {"memory.l1i.executed=1.5"}); }).what();
    EXPECT_NE(executed.find("memory.l1i.executed"), std::string::npos) << executed;
    const std::string unknown =
        input_error_of([&] { load_with(dir, "arm/cortex-a9-imx6qp", {"memory.l1i.latency=2"}); }).what();
    EXPECT_NE(unknown.find("[memory.l1i] has no figure 'latency'; expected one of: size, ways, prefetch, executed, align"),
              std::string::npos)
        << unknown;
}

// Every `{ value = ... }` of every shipped profile, found by walking its TOML (not from kdsim's own
// list of figures), set to its own value on a machine with no workload: each is accepted and listed
// once. A table whose figures the override code does not know fails here.
TEST(Override, EveryFigureOfEveryShippedProfileCanBeOverridden) {
    TempDir dir;
    int profiles = 0;
    for (const auto& e : fs::recursive_directory_iterator(SOURCE_DIR / "data/profiles")) {
        if (e.path().extension() != ".toml") continue;
        const std::string name = fs::relative(e.path(), SOURCE_DIR / "data/profiles").replace_extension().generic_string();
        // Its figures, with a base's (`[profile] base`, less `without`) under its own: key -> value.
        std::function<std::map<std::string, std::string>(const std::string&)> figures_of = [&](const std::string& n) {
            const toml::table profile = toml::parse_file((SOURCE_DIR / "data/profiles" / (n + ".toml")).string());
            std::map<std::string, std::string> figs;
            if (auto base = profile["profile"]["base"].value<std::string>()) {
                figs = figures_of(*base);
                if (const toml::array* wo = profile["profile"]["without"].as_array())
                    for (const auto& w : *wo)
                        std::erase_if(figs, [&](const auto& kv) {
                            const std::string cut = *w.value<std::string>();
                            return kv.first == cut || kv.first.starts_with(cut + ".");
                        });
            }
            std::function<void(const toml::table&, const std::string&)> walk = [&](const toml::table& t, const std::string& at) {
                for (const auto& [k, v] : t) {
                    const std::string key = at.empty() ? std::string(k.str()) : at + "." + std::string(k.str());
                    const toml::table* sub = v.as_table();
                    if (!sub || key == "profile") continue;
                    const toml::node* value = sub->get("value");
                    if (value && value->is_integer()) figs[key] = fmt::format("{}", value->as_integer()->get());
                    else if (value && value->is_floating_point()) figs[key] = fmt::format("{}", value->as_floating_point()->get());
                    else if (!value) walk(*sub, key);
                }
            };
            walk(profile, "");
            return figs;
        };
        std::vector<std::string> sets;
        for (const auto& [k, v] : figures_of(name)) sets.push_back(fmt::format("\"{}\"={}", k, v));
        const fs::path f = dir.write("s.toml", "[scenario]\nname = \"all-figures\"\nseed = 1\nmode = \"timing\"\n"
                                               "duration = \"1 ms\"\n\n[[machine]]\nname = \"m\"\nprofile = \"" +
                                                   name + "\"\ncpus = 1\n");
        LoadOptions lo{.root = SOURCE_DIR};
        for (const std::string& s : sets) {
            const auto eq = s.rfind('=');
            lo.assignments.push_back(Assignment{"machine[0].overrides." + s.substr(0, eq), s.substr(eq + 1), "--set " + s});
        }
        system::ScenarioConfig cfg;
        try {
            cfg = load_scenario(f, lo);
        } catch (const std::exception& x) {
            ADD_FAILURE() << name << ": " << x.what();
            continue;
        }
        // the required tables alone: [cpu] 2, [sched] 6, [irq] 4, [irqflags] 4, [bh] 2, [simd] 5
        EXPECT_GE(sets.size(), 23u) << name;
        EXPECT_EQ(cfg.machines.at(0).overrides.size(), sets.size()) << name;
        ++profiles;
    }
    EXPECT_GE(profiles, 17);
}

TEST(Override, MemoryOverridesThatMakeTheHierarchyInconsistentAreAnErrorAtTheOverride) {
    TempDir dir;
    // An L1 of 2 MiB is larger than the 1 MiB L2: the problem is the L2's size, reported at the
    // only memory override.
    const std::string larger =
        input_error_of([&] { load_with(dir, "arm/cortex-a9-imx6qp", {"memory.l1d.size=2097152"}); }).what();
    EXPECT_NE(larger.find("machine[0].overrides.\"memory.l1d.size\""), std::string::npos) << larger;
    EXPECT_NE(larger.find("inconsistent: l2.size: expected at least the size of l1d (2097152 B)"), std::string::npos)
        << larger;
    // 3 ways x 32 B does not divide 32768 B.
    const std::string ways = input_error_of([&] { load_with(dir, "arm/cortex-a9-imx6qp", {"memory.l1d.ways=3"}); }).what();
    EXPECT_NE(ways.find("l1d.ways: associativity 3 x line 32 B does not divide the size 32768 B"), std::string::npos)
        << ways;
    // Overriding both sizes consistently is fine: they are checked together, after all overrides.
    EXPECT_NO_THROW(load_with(dir, "arm/cortex-a9-imx6qp", {"memory.l1d.size=2097152", "memory.l2.size=4194304"}));
    const std::string zero = input_error_of([&] { load_with(dir, "arm/cortex-a9-imx6qp", {"memory.copy=0"}); }).what();
    EXPECT_NE(zero.find("expected a positive"), std::string::npos) << zero;
}

TEST(Override, AMemoryFigureTheProfileDoesNotHaveIsAnErrorNamingWhatItHas) {
    TempDir dir;
    const std::string none =
        input_error_of([&] { load_with(dir, "arm64/cortex-a72-ce", {"memory.dram.latency=100"}); }).what();
    EXPECT_NE(none.find("profile arm64/cortex-a72-ce has no [memory] table"), std::string::npos) << none;
    const std::string level = input_error_of([&] { load_with(dir, "arm/cortex-a9-imx6qp", {"memory.l3.size=1"}); }).what();
    EXPECT_NE(level.find("expected one of: memory.copy, memory.peer_latency, memory.fill_buffers, memory.dram.<figure>, memory.prefetch.<figure>, "
                         "memory.l1d.<figure>, memory.l2.<figure>"),
              std::string::npos)
        << level;
    const std::string figure =
        input_error_of([&] { load_with(dir, "arm/cortex-a9-imx6qp", {"memory.dram.lat=1"}); }).what();
    EXPECT_NE(figure.find("[memory.dram] has no figure 'lat'; expected one of: latency, bandwidth, core_bandwidth"),
              std::string::npos)
        << figure;
}

TEST(Override, AnOverrideErrorIsTheOnlyErrorNotAlsoOneOnTheMachinesLink) {
    TempDir dir;
    // E5's two machines and their link; the board's bad override made the loader also call the
    // link's ends wrong before (the machine did not load, so its name looked unknown).
    LoadOptions lo{.root = SOURCE_DIR};
    lo.assignments.push_back(
        Assignment{"machine[0].overrides.memory.l2.size", "100", "--set machine[0].overrides.memory.l2.size=100"});
    const InputError e = input_error_of([&] {
        load_scenario(fs::path(SOURCE_DIR) / "scenarios/e5/imx6qp-mtu-partial-sync.toml", lo);
    });
    ASSERT_EQ(e.diagnostics.size(), 1u) << e.what();
    EXPECT_NE(std::string(e.what()).find("l2.ways: associativity 16 x line 32 B does not divide the size 100 B"),
              std::string::npos)
        << e.what();
}


TEST(Override, AnInvalidProfileIsReportedOnceNotAlsoAsMissingNetFiguresOnItsMachinesLink) {
    // The profile loads with one error (an unknown [tunnel] key); before, the link check then also
    // said "machine 'b' gets a network device on this link, but its profile  has no [net] figures"
    // about the profile that never loaded. Expected: the file's error and the machine's note only.
    TempDir dir;
    std::string prof = source_text("data/profiles/x86/intel-icelake-server.toml");
    prof += "\n[bogus]\nx = 1\n";
    dir.write("data/profiles/x86/bad.toml", prof);
    const fs::path s = dir.write("s.toml", "[scenario]\nname = \"s\"\n"
                                           "[[machine]]\nname = \"a\"\nprofile = \"x86/bad\"\ncpus = 1\n"
                                           "[[machine]]\nname = \"b\"\nprofile = \"x86/bad\"\ncpus = 1\n"
                                           "[[link]]\nends = [\"a\", \"b\"]\nrate = \"1 Gbit/s\"\n");
    const InputError e = input_error_of([&] { load_scenario(s, LoadOptions{.root = dir.path()}); });
    EXPECT_EQ(std::string(e.what()).find("has no [net] figures"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("bogus"), std::string::npos) << e.what();
}

} // namespace
} // namespace kdsim::scenario
