// iperf3 (workloads/iperf3.h): TCP or UDP streams from a linked peer into this machine (E5).
#include "system/workload_kind.h"
#include "workloads/iperf3.h"

#include <fmt/format.h>

namespace kdsim::system {

namespace {

using workloads::Iperf3Workload;

void read(ParamReader& r, Iperf3Workload& x) {
    read_peer_sender(r, x);
    if (auto a = r.cpu_list("affinity")) x.affinity = std::move(*a);
    if (auto a = r.cpu_list("sender_affinity")) x.sender_affinity = std::move(*a);
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
    check_affinity(r, "affinity", x.affinity, "cpu", x.cpu, v.machine);
    check_affinity(r, "sender_affinity", x.sender_affinity, "sender_cpu", x.sender_cpu, v.peer);
    // A movable client holds its CPU across the tunnel's xmit (wg_xmit, xfrm_output), which Linux
    // runs with bottom halves off (dev_queue_xmit on the tunnel device) and kdsim runs as
    // preemptible task code: under PREEMPT=full it could be preempted and moved there.
    if (x.sender_affinity.size() > 1 && v.peer.tunnel && v.peer.kernel.preempt == kernel::PreemptModel::FULL)
        r.error("sender_affinity",
                fmt::format("a movable iperf3 client on machine '{}' with a tunnel needs preempt = \"none\" or "
                            "\"voluntary\" (the tunnel's xmit runs as preemptible task code in kdsim), found \"full\"",
                            v.peer.name));
    if (x.udp) check_datagram_fits(r, x.length, v.mtu);
}

std::unique_ptr<workloads::Workload> build(const Iperf3Workload& x, BuildContext& b) {
    auto route = b.route(x.peer);
    require(route.has_value(), "iperf3 '" + x.name + "': no link to its peer");
    const std::uint32_t first_flow = b.take_flows(static_cast<std::uint64_t>(x.parallel));
    auto cpus_of = [](const std::vector<int>& numbers, const std::vector<kernel::Cpu*>& cpus) {
        std::vector<kernel::Cpu*> out;
        if (numbers.size() > 1) // one CPU: pinned, as without the key
            for (int n : numbers) out.push_back(cpus.at(static_cast<std::size_t>(n)));
        return out;
    };
    return std::make_unique<workloads::Iperf3>(b.env, x, b.end(b.machine().name),
                                               *route->peer_cpus.at(static_cast<std::size_t>(x.sender_cpu)),
                                               b.end(x.peer), route->mtu, first_flow, b.stop(),
                                               cpus_of(x.affinity, b.cpus()), cpus_of(x.sender_affinity, route->peer_cpus));
}

} // namespace

extern const WorkloadKind iperf3_kind = WorkloadKind::of<Iperf3Workload>(
    "iperf3",
    {"peer", "sender_cpu", "affinity", "sender_affinity", "window", "rcvbuf", "start", "parallel", "protocol",
     "bitrate", "length", "congestion", "interval"}, true,
    read, build, check)
    .with_flows<Iperf3Workload>("parallel", [](const Iperf3Workload& x) -> std::uint64_t {
        return static_cast<std::uint64_t>(x.parallel);
    });

} // namespace kdsim::system
