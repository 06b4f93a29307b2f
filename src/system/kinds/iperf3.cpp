// iperf3 (workloads/iperf3.h): TCP or UDP streams from a linked peer into this machine (E5).
#include "system/workload_kind.h"
#include "workloads/iperf3.h"

#include <fmt/format.h>

namespace kdsim::system {

namespace {

using workloads::Iperf3Workload;

void read(ParamReader& r, Iperf3Workload& x) {
    read_peer_sender(r, x);
    if (auto b = r.bytes("window", false, true)) x.window = *b;
    if (auto b = r.bytes("rcvbuf", false, true)) x.rcvbuf = *b;
    if (auto t = r.duration("start", false, false)) x.start = *t;
    if (auto v = r.integer("parallel", false, 1, 128)) x.parallel = static_cast<int>(*v);
    if (auto t = r.duration("interval", false, false)) x.interval = *t;
    if (auto pr = r.choice("protocol", false, {"tcp", "udp"})) x.udp = *pr == 1;
    if (auto c = r.choice("congestion", false, {"cubic", "reno"}))
        x.congestion = *c == 0 ? net::CongestionAlgorithm::CUBIC : net::CongestionAlgorithm::RENO;
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

// Both ends' profiles give the figures of the stream's protocol; the sender is a CPU of the peer;
// a datagram fits the route's MTU (no IP fragmentation is modelled).
void check(ParamReader& r, const Iperf3Workload& x, const PeerView& v) {
    for (const MachineConfig* m : {&v.machine, &v.peer}) {
        if (!m->profile.tcp)
            r.error(m == &v.machine ? "kind" : "peer",
                    fmt::format("an iperf3 stream needs the [tcp] figures of both ends; profile {} of machine '{}' has none",
                                m->profile.name, m->name));
        else if (x.udp && !m->profile.udp)
            r.error("protocol", fmt::format("a UDP iperf3 stream needs the [udp] figures of both ends; profile {} of machine "
                                      "'{}' has none",
                                      m->profile.name, m->name));
    }
    check_sender_cpu(r, x.sender_cpu, v.peer);
    if (x.udp) check_datagram_fits(r, x.length, v.mtu);
}

std::unique_ptr<workloads::Workload> build(const Iperf3Workload& x, BuildContext& b) {
    auto route = b.route(x.peer);
    require(route.has_value(), "iperf3 '" + x.name + "': no link to its peer");
    const std::uint32_t first_flow = b.take_flows(static_cast<std::uint64_t>(x.parallel));
    return std::make_unique<workloads::Iperf3>(b.env, x, b.end(b.machine().name),
                                               *route->peer_cpus.at(static_cast<std::size_t>(x.sender_cpu)),
                                               b.end(x.peer), route->mtu, first_flow, b.stop());
}

} // namespace

extern const WorkloadKind iperf3_kind = WorkloadKind::of<Iperf3Workload>(
    "iperf3",
    {"peer", "sender_cpu", "window", "rcvbuf", "start", "parallel", "protocol", "bitrate", "length", "congestion",
     "interval"}, true,
    read, build, check)
    .with_flows<Iperf3Workload>("parallel", [](const Iperf3Workload& x) -> std::uint64_t {
        return static_cast<std::uint64_t>(x.parallel);
    });

} // namespace kdsim::system
