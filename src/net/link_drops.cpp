#include "net/link_drops.h"

#include <algorithm>

namespace kdsim::net {

SegmentDrops::SegmentDrops(std::vector<std::uint64_t> indexes, std::uint64_t every)
    : indexes_(std::move(indexes)), every_(every) {}

void SegmentDrops::attach(Link& link) {
    link.set_loss([](const Packet& p, void* self) { return static_cast<SegmentDrops*>(self)->lost(p); }, this);
}

bool SegmentDrops::lost(const Packet& p) {
    if (p.kind != FrameKind::TCP_DATA || p.payload == 0) return false;
    const std::uint64_t index = p.seq / p.payload;
    std::uint64_t& next = next_new_[p.flow];
    if (index < next) return false; // a retransmission
    next = index + 1;
    const bool hit = (every_ && (index + 1) % every_ == 0) || std::binary_search(indexes_.begin(), indexes_.end(), index);
    if (hit) ++dropped_;
    return hit;
}

} // namespace kdsim::net
