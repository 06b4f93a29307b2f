// udp_flows (workloads/udp_flows.h): many low-rate UDP flows from a linked peer into one epoll
// reader.
#include "system/workload_kind.h"
#include "workloads/iperf3.h"
#include "workloads/udp_flows.h"

#include <fmt/format.h>

namespace kdsim::system {

namespace {

using workloads::UdpFlowsWorkload;

void read(ParamReader& r, UdpFlowsWorkload& x) {
    read_peer_sender(r, x);
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
    if (auto t = r.duration("timer_slack", false, false)) x.timer_slack = *t;
}

// Both ends' profiles give the [udp] figures and the [tcp] copy figures; the senders run on a CPU
// of the peer; a datagram fits the route's MTU (no IP fragmentation is modelled).
void check(ParamReader& r, const UdpFlowsWorkload& x, const PeerView& v) {
    for (const MachineConfig* m : {&v.machine, &v.peer})
        if (!m->profile.udp || !m->profile.tcp)
            r.error(m == &v.machine ? "kind" : "peer",
                    fmt::format("udp_flows needs the [udp] figures and the [tcp] copy figures of both ends; profile {} "
                                "of machine '{}' lacks {}",
                                m->profile.name, m->name, m->profile.udp ? "[tcp]" : "[udp]"));
    check_sender_cpu(r, x.sender_cpu, v.peer);
    check_datagram_fits(r, x.length, v.mtu);
}

std::unique_ptr<workloads::Workload> build(const UdpFlowsWorkload& x, BuildContext& b) {
    auto route = b.route(x.peer);
    require(route.has_value(), "udp_flows '" + x.name + "': no link to its peer");
    const std::uint32_t first_flow = b.take_flows(x.flows);
    return std::make_unique<workloads::UdpFlows>(b.env, x, b.end(b.machine().name),
                                                 *route->peer_cpus.at(static_cast<std::size_t>(x.sender_cpu)),
                                                 b.end(x.peer), first_flow, b.stop());
}

} // namespace

extern const WorkloadKind udp_flows_kind = WorkloadKind::of<UdpFlowsWorkload>(
    "udp_flows", {"peer", "sender_cpu", "flows", "interval", "count", "length", "rcvbuf", "start", "timer_slack"}, true, read, build, check)
    .with_flows<UdpFlowsWorkload>("flows", [](const UdpFlowsWorkload& x) -> std::uint64_t { return x.flows; });

} // namespace kdsim::system
