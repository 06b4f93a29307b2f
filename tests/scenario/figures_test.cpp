// The figure tables of system/figures.h: each names a member of its struct at most once and each
// key once, so that with the static_asserts beside the tables (every byte of the struct covered)
// no figure can be left out, doubled or renamed in one place only.
#include "system/figures.h"

#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>

namespace kdsim::system {
namespace {

// Distinct members (compared by the variant of member pointers) and distinct keys.
template <class S, std::size_t N>
void expect_distinct(const std::array<engine::Figure<S>, N>& table, const char* what) {
    std::set<std::string> keys;
    for (std::size_t i = 0; i < N; ++i) {
        EXPECT_TRUE(keys.insert(std::string(table[i].section) + "." + std::string(table[i].name)).second)
            << what << ": key " << table[i].name << " twice";
        EXPECT_FALSE(table[i].description.empty()) << what << ": " << table[i].name << " has no description";
        for (std::size_t j = 0; j < i; ++j) EXPECT_FALSE(table[i].member == table[j].member) << what << ": " << table[i].name << " and " << table[j].name << " fill the same member";
    }
}

TEST(FigureTables, EveryTableNamesEachMemberAndEachKeyOnceWithADescription) {
    expect_distinct(CPU_FIGURES, "cpu");
    expect_distinct(KERNEL_FIGURES, "kernel");
    expect_distinct(IRQMASK_FIGURES, "irqmask");
    expect_distinct(SIMD_FIGURES, "simd");
    expect_distinct(HASH_FIGURES, "hash");
    expect_distinct(CIPHER_FIGURES, "cipher");
    expect_distinct(SKCIPHER_FIGURES, "skcipher");
    expect_distinct(NET_FIGURES, "net");
    expect_distinct(TCP_FIGURES, "tcp");
    expect_distinct(UDP_FIGURES, "udp");
    expect_distinct(NETFILTER_FIGURES, "netfilter");
    expect_distinct(TUNNEL_FIGURES, "tunnel");
    expect_distinct(WORKQUEUE_FIGURES, "workqueue");
    expect_distinct(VIRT_FIGURES, "virt");
    expect_distinct(DMA_FIGURES, "dma");
    expect_distinct(FLUSH_FIGURES, "flush");
    expect_distinct(PCIE_FIGURES, "pcie");
}

TEST(FigureTables, TheKernelSectionsAreTheFourTheProfileFormatNames) {
    // docs/scenario-format.md: [sched] 6 figures, [irq] 4 and the optional guest_timer_delivery
    // and device_delivery, [irqflags] 4, [bh] 2
    std::map<std::string_view, int> per;
    for (const auto& f : KERNEL_FIGURES) ++per[f.section];
    EXPECT_EQ(per, (std::map<std::string_view, int>{{"sched", 6}, {"irq", 6}, {"irqflags", 4}, {"bh", 2}}));
}

TEST(FigureTables, FiguresBytesSumsEightBytesPerValueAndSixteenPerOptional) {
    // HashCost: a double, a uint64 and an optional<uint64>: 8 + 8 + 16
    EXPECT_EQ(engine::figures_bytes(HASH_FIGURES), 32u);
    EXPECT_EQ(engine::figures_bytes(CIPHER_FIGURES), 16u);
}

} // namespace
} // namespace kdsim::system
