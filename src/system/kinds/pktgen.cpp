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

// One generator kthread per peer CPU from 0.
void check(ParamReader& r, const PktgenWorkload& x, const PeerView& v) {
    if (x.threads > v.peer.cpus)
        r.error("threads", fmt::format("expected at most one thread per CPU of the peer '{}' ({}), found {}", v.peer.name,
                                       v.peer.cpus, x.threads));
}

std::unique_ptr<workloads::Workload> build(const PktgenWorkload& x, BuildContext& b) {
    auto route = b.route(x.peer);
    require(route && x.threads <= static_cast<int>(route->peer_cpus.size()),
            "pktgen '" + x.name + "': no link to its peer, or more threads than its CPUs");
    std::vector<kernel::Cpu*> threads(route->peer_cpus.begin(), route->peer_cpus.begin() + x.threads);
    const std::uint32_t flow = b.take_flows(1);
    return std::make_unique<workloads::Pktgen>(b.env, x, b.end(b.machine().name), std::move(threads), b.end(x.peer),
                                               flow, b.stop());
}

} // namespace

extern const WorkloadKind pktgen_kind =
    WorkloadKind::of<PktgenWorkload>("pktgen", {"peer", "threads", "frame", "start"}, true, read, build, check);

} // namespace kdsim::system
