// iperf3 (workloads/iperf3.h): TCP or UDP streams from a linked peer into this machine (E5).
#include "system/workload_kind.h"
#include "net/udp.h"
#include "workloads/iperf3.h"

#include <fmt/format.h>

namespace kdsim::system {

namespace {

using workloads::Iperf3Workload;

void read(ParamReader& r, Iperf3Workload& x) {
    if (auto v = r.string("peer", true)) x.peer = *v;
    if (auto v = r.integer("sender_cpu", false, 0, MAX_CPUS - 1)) x.sender_cpu = static_cast<int>(*v);
    if (auto b = r.bytes("window", false, true)) x.window = *b;
    if (auto b = r.bytes("rcvbuf", false, true)) x.rcvbuf = *b;
    if (auto t = r.duration("start", false, false)) x.start = *t;
    if (auto v = r.integer("parallel", false, 1, 128)) x.parallel = static_cast<int>(*v);
    if (auto pr = r.choice("protocol", false, {"tcp", "udp"})) x.udp = *pr == 1;
    if (r.has("bitrate")) {
        if (auto bps = r.rate("bitrate")) x.bitrate = *bps;
        if (!x.udp) r.error("bitrate", "bitrate paces a protocol = \"udp\" stream only");
    }
    if (auto b = r.bytes("length", false, true)) {
        if (!x.udp) r.error("length", "length is the datagram size of a protocol = \"udp\" stream");
        else if (*b > 65507) r.error("length", fmt::format("expected at most 65507 bytes, found {}", *b));
        else x.length = static_cast<std::uint32_t>(*b);
    }
}

std::unique_ptr<workloads::Workload> build(const Iperf3Workload& x, BuildContext& b) {
    const MachineConfig& mc = b.machine();
    auto route = b.route(x.peer);
    if (!route) throw ConfigError("machine " + mc.name + ": iperf3 needs a link to its peer '" + x.peer + "'");
    const MachineConfig& peer = *route->peer;
    if (!mc.profile.tcp || !peer.profile.tcp)
        throw ConfigError("machine " + mc.name + ": iperf3 needs the [tcp] figures of both profiles");
    if (x.sender_cpu < 0 || x.sender_cpu >= peer.cpus)
        throw ConfigError("machine " + mc.name + ": iperf3 sender_cpu is not a CPU of '" + x.peer + "'");
    if (x.udp && (!mc.profile.udp || !peer.profile.udp))
        throw ConfigError("machine " + mc.name + ": a UDP iperf3 stream needs the [udp] figures of both profiles (" +
                          mc.profile.name + ", " + peer.profile.name + ")");
    if (x.udp && x.length + net::UDP_IP_HEADERS > route->mtu)
        throw ConfigError("machine " + mc.name + ": iperf3 length " + std::to_string(x.length) +
                          " does not fit the route's MTU " + std::to_string(route->mtu) + " (no IP fragmentation modelled)");
    const std::uint32_t first_flow = b.take_flows(static_cast<std::uint64_t>(x.parallel));
    return std::make_unique<workloads::Iperf3>(b.env, x, b.end(mc.name),
                                               *route->peer_cpus[static_cast<std::size_t>(x.sender_cpu)],
                                               b.end(peer.name), route->mtu, first_flow, b.stop());
}

} // namespace

extern const WorkloadKind iperf3_kind = WorkloadKind::of<Iperf3Workload>(
    "iperf3", {"peer", "sender_cpu", "window", "rcvbuf", "start", "parallel", "protocol", "bitrate", "length"}, true,
    read, build);

} // namespace kdsim::system
