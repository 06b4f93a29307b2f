#include "stats/registry.h"

#include <gtest/gtest.h>

#include <stdexcept>

namespace kdsim::stats {
namespace {

TEST(StatsRegistry, ReadsCountersAtCollectTimeNotAtRegistration) {
    Registry reg;
    std::uint64_t runs = 0;
    Scope(reg, "dut").sub("cpu0").sub("softirq").counter("restarts", runs, "count", "extra rounds");
    runs = 7; // incremented in place after registration
    ASSERT_EQ(reg.entries().size(), 1u);
    const Entry& e = reg.entries()[0];
    EXPECT_EQ(e.path, "dut/cpu0/softirq/restarts");
    EXPECT_EQ(e.unit, "count");
    EXPECT_EQ(e.description, "extra rounds");
    EXPECT_TRUE(e.integral());
    EXPECT_EQ(e.value(), 7.0);
}

TEST(StatsRegistry, GetterFiguresAreRealValuedAndKeepRegistrationOrder) {
    Registry reg;
    std::uint64_t a = 3;
    double busy = 0;
    Scope s(reg, "m");
    s.counter("b", a, "count", "first").value("a", [&] { return busy / 2; }, "us", "second");
    busy = 5;
    ASSERT_EQ(reg.entries().size(), 2u);
    EXPECT_EQ(reg.entries()[0].path, "m/b");
    EXPECT_EQ(reg.entries()[1].path, "m/a");
    EXPECT_FALSE(reg.entries()[1].integral());
    EXPECT_EQ(reg.entries()[1].value(), 2.5);
}

TEST(StatsRegistry, RejectsDuplicateAndMalformedPaths) {
    Registry reg;
    std::uint64_t c = 0;
    reg.add("m/x", c, "count", "x");
    EXPECT_THROW(reg.add("m/x", c, "count", "again"), std::logic_error);
    EXPECT_THROW(reg.add("m//x", c, "count", "empty component"), std::logic_error);
    EXPECT_THROW(reg.add("m/x/", c, "count", "trailing slash"), std::logic_error);
    EXPECT_THROW(reg.add("m/a b", c, "count", "blank"), std::logic_error);
    EXPECT_THROW(reg.add("m/y", std::function<double()>{}, "count", "no getter"), std::logic_error);
    EXPECT_EQ(reg.entries().size(), 1u);
}

} // namespace
} // namespace kdsim::stats
