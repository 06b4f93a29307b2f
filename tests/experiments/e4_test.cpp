// The claims of experiment E4 (ARM64 interrupt masking on an ARP ping-pong).
#include "helpers.h"
#include "scenario/load.h"
#include "system/system.h"

#include <gtest/gtest.h>

#include <filesystem>

namespace kdsim {
namespace {

namespace fs = std::filesystem;
using namespace testing; // ROOT, run_scenario, metric, stat, peer_of, cpu0 (helpers.h)

results::RunResults run(const std::string& stem) { return testing::run_scenario("scenarios/e4/" + stem + ".toml"); }

// Cycles charged to interrupt masking on every CPU of every machine.
double irq_mask_cycles(const results::RunResults& r) {
    double sum = 0;
    for (const auto& m : r.machines)
        for (const auto& c : m.cpus)
            for (const auto& [ctx, cats] : c.cycles)
                if (auto it = cats.find("irq_mask"); it != cats.end()) sum += static_cast<double>(it->second);
    return sum;
}

TEST(E4, VariantsAreOrderedAsTheirMaskingCostsImply) {
    auto daif = run("daif-built-out"), off = run("pmr-built-in-off"), nosync = run("pmr-enabled-nosync"),
         pmr = run("pmr-enabled");
    for (const auto* r : {&daif, &off, &nosync, &pmr}) {
        EXPECT_EQ(metric(*r, "arping", "round_trips"), 10000);
        EXPECT_FALSE(r->failed);
    }
    EXPECT_LT(metric(daif, "arping", "total_us"), metric(off, "arping", "total_us"));
    EXPECT_LT(metric(off, "arping", "total_us"), metric(nosync, "arping", "total_us"));
    EXPECT_LT(metric(nosync, "arping", "total_us"), metric(pmr, "arping", "total_us")); // the barrier's cost
}

TEST(E4, TheExtraTimeIsBoundedByTheExtraMaskingCycles) {
    // Every extra masking cycle of PMR is spent on some CPU; the round trips can be slowed by at
    // most all of them (1.5 GHz clock). Not all are on the serial request/reply chain: the idle
    // CPUs' ticks, and the responder's work after its reply is on the wire, overlap with it.
    // What is on the chain is at least the requester's CPU 0 extra cycles, which all happen
    // between sending a request and receiving the reply or in the syscalls around them.
    auto daif = run("daif-built-out"), pmr = run("pmr-enabled");
    double dt_us = metric(pmr, "arping", "total_us") - metric(daif, "arping", "total_us");
    double all = irq_mask_cycles(pmr) - irq_mask_cycles(daif);
    auto cpu0_mask = [](const results::RunResults& r) {
        double sum = 0;
        for (const auto& [ctx, cats] : r.machines[0].cpus[0].cycles)
            if (auto it = cats.find("irq_mask"); it != cats.end()) sum += static_cast<double>(it->second);
        return sum;
    };
    double requester = cpu0_mask(pmr) - cpu0_mask(daif);
    EXPECT_GT(dt_us, 0);
    EXPECT_LE(dt_us, all / 1500.0);
    EXPECT_GE(dt_us, 0.9 * requester / 1500.0);
}

TEST(E4, EveryVariantCountsTheSamePrimitivesOnlyTheirCostDiffers) {
    auto daif = run("daif-built-out"), pmr = run("pmr-enabled");
    // the responder, whose work per round trip is fixed
    for (const char* op : {"local_irq_disable", "local_irq_enable", "local_irq_save", "local_irq_restore"}) {
        const std::string path = std::string("responder/cpu0/irqflags/") + op;
        EXPECT_NEAR(testing::stat(daif, path), testing::stat(pmr, path), 40) << op;
    }
}

} // namespace
} // namespace kdsim
