// udp_flows (workloads/udp_flows.h): many low-rate UDP flows from a linked peer into one epoll
// reader.
#include "system/workload_kind.h"
#include "net/udp.h"
#include "workloads/iperf3.h"
#include "workloads/udp_flows.h"

#include <fmt/format.h>

namespace kdsim::system {

namespace {

using workloads::UdpFlowsWorkload;

void read(ParamReader& r, UdpFlowsWorkload& x) {
    if (auto v = r.string("peer", true)) x.peer = *v;
    if (auto v = r.integer("sender_cpu", false, 0, MAX_CPUS - 1)) x.sender_cpu = static_cast<int>(*v);
    if (auto v = r.integer("flows", true, 1, UdpFlowsWorkload::MAX_FLOWS)) x.flows = static_cast<std::uint32_t>(*v);
    if (auto t = r.duration("interval", true, true)) x.interval = *t;
    if (auto v = r.integer("count", false, 0, UINT32_MAX)) x.count = static_cast<std::uint64_t>(*v);
    if (auto b = r.bytes("length", false, true)) {
        if (*b > 65507) r.error("length", fmt::format("expected at most 65507 bytes, found {}", *b));
        else x.length = static_cast<std::uint32_t>(*b);
    }
    if (auto b = r.bytes("rcvbuf", false, true)) {
        if (*b < x.length)
            r.error("rcvbuf", fmt::format("expected at least one datagram ({} bytes), found {}", x.length, *b));
        else x.rcvbuf = *b;
    }
    if (auto t = r.duration("start", false, false)) x.start = *t;
}

std::unique_ptr<workloads::Workload> build(const UdpFlowsWorkload& x, BuildContext& b) {
    const MachineConfig& mc = b.machine();
    const std::string what = "machine " + mc.name + ": udp_flows '" + x.name + "'";
    auto route = b.route(x.peer);
    if (!route) throw ConfigError(what + " needs a link to its peer '" + x.peer + "'");
    const MachineConfig& peer = *route->peer;
    if (!mc.profile.udp || !peer.profile.udp || !mc.profile.tcp || !peer.profile.tcp)
        throw ConfigError(what + " needs the [udp] figures and the [tcp] copy figures of both profiles (" +
                          mc.profile.name + ", " + peer.profile.name + ")");
    if (x.sender_cpu < 0 || x.sender_cpu >= peer.cpus)
        throw ConfigError(what + " sender_cpu is not a CPU of '" + x.peer + "'");
    if (x.flows == 0 || x.interval == 0 || x.length == 0) throw ConfigError(what + " needs flows, interval and length > 0");
    if (x.length + net::UDP_IP_HEADERS > route->mtu)
        throw ConfigError(what + " length " + std::to_string(x.length) + " does not fit the route's MTU " +
                          std::to_string(route->mtu) + " (no IP fragmentation modelled)");
    const std::uint32_t first_flow = b.take_flows(x.flows);
    return std::make_unique<workloads::UdpFlows>(b.env, x, b.end(mc.name),
                                                 *route->peer_cpus[static_cast<std::size_t>(x.sender_cpu)],
                                                 b.end(peer.name), first_flow, b.stop());
}

} // namespace

extern const WorkloadKind udp_flows_kind = WorkloadKind::of<UdpFlowsWorkload>(
    "udp_flows", {"peer", "sender_cpu", "flows", "interval", "count", "length", "rcvbuf", "start"}, true, read, build);

} // namespace kdsim::system
