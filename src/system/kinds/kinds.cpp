// The registry of workload kinds: one line per kind, each defined in its file of this folder.
// The order is that of the kinds listed in messages and of building the kinds that wait for
// every machine (it fixes their flow numbers).
#include "system/workload_kind.h"

#include "net/udp.h"
#include "system/machine_checks.h"

#include <fmt/format.h>

#include <algorithm>

namespace kdsim::system {

#define KDSIM_WORKLOAD_KINDS(X)                                                                                         \
    X(module_load)                                                                                                     \
    X(hash_list)                                                                                                       \
    X(testmgr)                                                                                                         \
    X(simd_user)                                                                                                       \
    X(cyclictest)                                                                                                      \
    X(softirq_load)                                                                                                    \
    X(tcrypt)                                                                                                          \
    X(arp_pingpong)                                                                                                    \
    X(iperf3)                                                                                                          \
    X(rx_flood)                                                                                                        \
    X(udp_flows)                                                                                                       \
    X(pktgen)                                                                                                          \
    X(kvm_microbench)

#define KDSIM_DECLARE_KIND(k) extern const WorkloadKind k##_kind;
#define KDSIM_LIST_KIND(k) &k##_kind,
KDSIM_WORKLOAD_KINDS(KDSIM_DECLARE_KIND)

const std::vector<const WorkloadKind*>& workload_kinds() {
    static const std::vector<const WorkloadKind*> kinds = {KDSIM_WORKLOAD_KINDS(KDSIM_LIST_KIND)};
    return kinds;
}

const WorkloadKind* find_workload_kind(std::string_view name) {
    for (const WorkloadKind* k : workload_kinds())
        if (k->name == name) return k;
    return nullptr;
}

std::uint32_t route_mtu(const MachineConfig& a, const MachineConfig& b) {
    std::uint32_t mtu = 1500;
    for (const MachineConfig* x : {&a, &b})
        if (x->tunnel) mtu = std::min(mtu, net::tunnel_inner_mtu(x->tunnel->kind));
    return mtu;
}

void check_sender_cpu(ParamReader& r, int sender_cpu, const MachineConfig& peer) {
    if (sender_cpu >= peer.cpus)
        r.error("sender_cpu", fmt::format("expected a CPU of the peer '{}' (0 to {}), found {}", peer.name,
                                          peer.cpus - 1, sender_cpu));
}

void check_affinity(ParamReader& r, std::string_view key, const std::vector<int>& affinity, std::string_view cpu_key,
                    int cpu, const MachineConfig& m) {
    if (affinity.empty()) return;
    for (std::size_t i = 0; i < affinity.size(); ++i)
        if (affinity[i] >= m.cpus)
            r.error(key, fmt::format("expected CPUs of machine '{}' (0 to {}), found {} ({}[{}])", m.name, m.cpus - 1,
                                     affinity[i], key, i));
    if (auto wrong = starts_outside_affinity("the task", key, affinity, cpu_key, cpu))
        r.error(r.has(cpu_key) ? cpu_key : key, std::move(*wrong));
}

void check_datagram_fits(ParamReader& r, std::uint64_t length, std::uint32_t mtu) {
    if (length + net::UDP_IP_HEADERS > mtu)
        r.error("length", fmt::format("expected a datagram that fits the route's MTU {} with 28 bytes of IPv4 and UDP "
                                      "headers (no IP fragmentation is modelled), found {} bytes",
                                      mtu, length));
}

const WorkloadKind& workload_kind_of(const WorkloadConfig& w) {
    for (const WorkloadKind* k : workload_kinds())
        if (k->type == w.type()) return *k;
    throw std::logic_error("a workload's parameter struct has no registered kind");
}

} // namespace kdsim::system
