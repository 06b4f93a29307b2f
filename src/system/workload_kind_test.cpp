// The registry of workload kinds: one entry per kind, found by name and by parameter type, and a
// WorkloadConfig that copies its parameters by value.
#include "system/workload_kind.h"

#include <gtest/gtest.h>

#include <set>

namespace kdsim::system {
namespace {

TEST(WorkloadKinds, EveryKindHasADistinctNameAndParameterType) {
    std::set<std::string_view> names;
    std::set<std::type_index> types;
    for (const WorkloadKind* k : workload_kinds()) {
        EXPECT_TRUE(names.insert(k->name).second) << k->name;
        EXPECT_TRUE(types.insert(k->type).second) << k->name;
    }
    // the thirteen kinds of docs/scenario-format.md
    EXPECT_EQ(names.size(), 13u);
}

TEST(WorkloadKinds, ADefaultWorkloadOfAKindMapsBackToThatKind) {
    for (const WorkloadKind* k : workload_kinds()) {
        const WorkloadConfig w = k->defaults();
        EXPECT_EQ(&workload_kind_of(w), k) << k->name;
        EXPECT_EQ(find_workload_kind(k->name), k);
    }
    EXPECT_EQ(find_workload_kind("nope"), nullptr);
}

TEST(WorkloadKinds, KindsThatTalkToAPeerWaitForEveryMachine) {
    for (const WorkloadKind* k : workload_kinds()) {
        const WorkloadConfig w = k->defaults();
        // arp_pingpong only needs its own stack; iperf3, udp_flows and pktgen need the peer's
        const bool waits = k->name == "iperf3" || k->name == "udp_flows" || k->name == "pktgen";
        EXPECT_EQ(k->after_machines, waits) << k->name;
        if (waits) {
            EXPECT_NE(w.peer(), nullptr) << k->name;
        }
    }
}

TEST(WorkloadConfig, ACopyHoldsItsOwnParameters) {
    workloads::RxFloodWorkload x;
    x.payload = 100;
    WorkloadConfig a(x);
    WorkloadConfig b = a;
    b.get<workloads::RxFloodWorkload>().payload = 200;
    EXPECT_EQ(a.get<workloads::RxFloodWorkload>().payload, 100u);
    EXPECT_EQ(b.get<workloads::RxFloodWorkload>().payload, 200u);
    EXPECT_EQ(a.get_if<workloads::Iperf3Workload>(), nullptr);
    EXPECT_THROW(a.get<workloads::Iperf3Workload>(), std::bad_cast);
}

TEST(WorkloadConfig, NameCpuPeerAndHashComeFromTheParameters) {
    workloads::ModuleLoadWorkload m;
    m.alg = crypto::HashAlg::SHA512;
    m.impl = crypto::HashImpl::AVX2;
    WorkloadConfig w(m);
    w.set_name_cpu("load", 3);
    EXPECT_EQ(w.name(), "load");
    EXPECT_EQ(w.cpu(), 3);
    EXPECT_EQ(w.peer(), nullptr);
    ASSERT_TRUE(w.hash());
    EXPECT_EQ(w.hash()->alg, crypto::HashAlg::SHA512);
    EXPECT_EQ(w.hash()->impl, crypto::HashImpl::AVX2);
    EXPECT_FALSE(WorkloadConfig(workloads::CyclictestWorkload{}).hash());
}

} // namespace
} // namespace kdsim::system
