// pktgen (workloads/pktgen.h): minimum-size frames from a linked peer's generator kthreads.
#include "system/workload_kind.h"
#include "workloads/iperf3.h"
#include "workloads/pktgen.h"

#include <fmt/format.h>

namespace kdsim::system {

namespace {

using workloads::PktgenWorkload;

void read(ParamReader& r, PktgenWorkload& x) {
    if (auto v = r.string("peer", true)) x.peer = *v;
    if (auto v = r.integer("threads", false, 1, MAX_CPUS)) x.threads = static_cast<int>(*v);
    if (auto b = r.bytes("frame", false, true)) {
        if (*b < 60 || *b > 1514)
            r.error("frame", fmt::format("expected an Ethernet frame of 60 to 1514 bytes (without FCS), found {}", *b));
        else x.frame = static_cast<std::uint32_t>(*b);
    }
    if (auto t = r.duration("start", false, false)) x.start = *t;
}

std::unique_ptr<workloads::Workload> build(const PktgenWorkload& x, BuildContext& b) {
    const MachineConfig& mc = b.machine();
    const std::string what = "machine " + mc.name + ": pktgen '" + x.name + "'";
    auto route = b.route(x.peer);
    if (!route) throw ConfigError(what + " needs a link to its peer '" + x.peer + "'");
    const MachineConfig& peer = *route->peer;
    if (x.threads > peer.cpus)
        throw ConfigError(what + " has " + std::to_string(x.threads) + " threads, more than the CPUs of '" + x.peer +
                          "' (" + std::to_string(peer.cpus) + ")");
    std::vector<kernel::Cpu*> threads(route->peer_cpus.begin(), route->peer_cpus.begin() + x.threads);
    const std::uint32_t flow = b.take_flows(1);
    return std::make_unique<workloads::Pktgen>(b.env, x, b.end(mc.name), std::move(threads), b.end(peer.name), flow,
                                               b.stop());
}

} // namespace

extern const WorkloadKind pktgen_kind =
    WorkloadKind::of<PktgenWorkload>("pktgen", {"peer", "threads", "frame", "start"}, true, read, build);

} // namespace kdsim::system
