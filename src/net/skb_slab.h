// Where the kernel puts the linear skb heads it allocates on the datapath, as addresses in the
// machine's memory hierarchy (src/mem): kmalloc_reserve's objects (mm/slub.c, net/core/skbuff.c
// pskb_expand_head) come from a slab cache whose freed objects are handed out again first (SLUB's
// freelists are LIFO), so a head freed by the reader (consume_skb after tcp_recvmsg's copy) is the
// next one a pskb_expand_head gets, and its lines are still in some cache. One slab per machine,
// shared by its network namespaces (one kernel). The region is a bounded ring of objects: with
// none free (heads the model never frees: dropped packets) the next never-used object, then the
// objects in turn, as a ring of buffers would. The region is placed in memory at the first alloc,
// so a machine that never allocates here keeps its other addresses.
#pragma once

#include "mem/memory.h"

#include <cstdint>
#include <vector>

namespace kdsim::net {

class SkbSlab {
public:
    // `object`: bytes per object (a kmalloc size class), `objects`: the region's capacity.
    SkbSlab(mem::MemorySystem& m, std::size_t object, std::size_t objects)
        : memory_(m), object_(object), live_(objects, 0) {
        free_.reserve(objects);
    }
    std::size_t object_size() const { return object_; }
    // kmalloc: the object freed last, else the next never-used one, else the ring's next.
    mem::Addr alloc() {
        if (base_ == 0) base_ = memory_.alloc(OFFSET + object_ * live_.size(), 4096) + OFFSET;
        std::size_t i;
        if (!free_.empty()) {
            i = free_.back();
            free_.pop_back();
        } else if (used_ < live_.size()) {
            i = used_++;
        } else {
            i = next_;
            next_ = (next_ + 1) % live_.size();
        }
        live_[i] = 1;
        return base_ + i * object_;
    }
    // kfree of the object holding `a` (any address within it); nothing for an address outside the
    // region (another buffer: an rx ring's, a socket's page frags) or an object already free.
    void free(mem::Addr a) {
        if (base_ == 0 || a < base_ || a >= base_ + object_ * live_.size()) return;
        const std::size_t i = static_cast<std::size_t>((a - base_) / object_);
        if (!live_[i]) return;
        live_[i] = 0;
        free_.push_back(i);
    }
    std::size_t live() const {
        std::size_t n = 0;
        for (std::uint8_t l : live_) n += l;
        return n;
    }

private:
    // The region starts past address 0 (0 means "no address" to the datapath).
    static constexpr std::size_t OFFSET = 4096;
    mem::MemorySystem& memory_;
    std::size_t object_;
    std::vector<std::uint8_t> live_;
    std::vector<std::size_t> free_;
    std::size_t used_ = 0, next_ = 0;
    mem::Addr base_ = 0;
};

} // namespace kdsim::net
