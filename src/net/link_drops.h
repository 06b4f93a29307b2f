// A deterministic loss pattern on a link's wire, the kind a peer simulator can express too (ns-3's
// error models on a point-to-point device): the TCP data segments with given indexes (segment n
// carries the stream's bytes [n x len, (n + 1) x len), len its payload), each lost on its first
// crossing only, so that its retransmission gets through; or every k-th segment (indexes k-1,
// 2k-1, ...). A first crossing is one above the highest index seen so far on its flow: a
// sender sends new data in order, so anything at or below it is a retransmission.
// Not a kernel mechanism: netem's loss models are random or state-based, not by sequence.
#pragma once

#include "net/link.h"

#include <cstdint>
#include <unordered_map>
#include <vector>

namespace kdsim::net {

class SegmentDrops {
public:
    // `indexes`: strictly increasing segment indexes; `every`: also every `every`-th (0: none).
    SegmentDrops(std::vector<std::uint64_t> indexes, std::uint64_t every);
    // Makes `link` lose what this pattern says (Link::set_loss).
    void attach(Link& link);
    // Whether `p` is lost: a TCP data frame on its first crossing whose index is in the pattern.
    bool lost(const Packet& p);
    const std::uint64_t& dropped() const { return dropped_; }

private:
    std::vector<std::uint64_t> indexes_;
    std::uint64_t every_;
    std::unordered_map<std::uint32_t, std::uint64_t> next_new_; // per flow: the lowest index not yet seen
    std::uint64_t dropped_ = 0;
};

} // namespace kdsim::net
