// arp_pingpong (workloads/pingpong.h): arping-like round trips to a linked peer (E4).
#include "system/workload_kind.h"
#include "workloads/pingpong.h"

namespace kdsim::system {

namespace {

using workloads::ArpPingPongWorkload;

void read(ParamReader& r, ArpPingPongWorkload& x) {
    if (auto v = r.string("peer", true)) x.peer = *v;
    if (auto v = r.integer("count", false, 1, INT64_MAX)) x.count = static_cast<std::uint64_t>(*v);
    if (auto t = r.duration("interval", false, false)) x.interval = *t;
}

std::unique_ptr<workloads::Workload> build(const ArpPingPongWorkload& x, BuildContext& b) {
    require(b.stack() != nullptr, "arp_pingpong '" + x.name + "': no link to its peer");
    return std::make_unique<workloads::ArpPingPong>(b.env, x, *b.stack());
}

} // namespace

extern const WorkloadKind arp_pingpong_kind =
    WorkloadKind::of<ArpPingPongWorkload>("arp_pingpong", {"peer", "count", "interval"}, false, read, build);

} // namespace kdsim::system
