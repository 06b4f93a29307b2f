// Where the page allocator put the pages of the buffers the stack writes packet data into (a TCP
// socket's page-frag pages, a UDP socket's skb heads), as physical addresses for the DMA API's
// reach test (dma_direct_map_page -> dma_capable: phys + size - 1 <= the device's mask) when a
// driver maps them for transmit, and as the page boundaries a driver's descriptors stop at
// (skb_frag_dma_map maps one fragment of one page).
//
// These buffers come from ZONE_NORMAL: skb_page_frag_refill's alloc_pages(sk->sk_allocation |
// __GFP_COMP | __GFP_NOWARN | __GFP_NORETRY, SKB_FRAG_PAGE_ORDER) and kmalloc_reserve's heads ask
// for GFP_KERNEL or GFP_ATOMIC, never GFP_DMA or GFP_DMA32, so the zonelist may hand out any page
// of DRAM (ZONE_NORMAL first, then DMA32 and DMA as fallbacks). Nothing keeps them below 4 GiB:
// on a machine with more DRAM than a 32-bit-mask device reaches, the buffers placed above its
// mask are bounced through swiotlb and the others are mapped in place. As the NIC's own buffers
// (DramLayout::place), each page is placed at its key's golden-ratio point of DRAM, so the share
// beyond a mask is the share of DRAM beyond it. A registered region is made of `unit`-byte
// physically contiguous pages from its base (a compound page of SKB_FRAG_PAGE_ORDER, a kmalloc
// object); any other address of the hierarchy lies in a 4 KiB page of its own.
#pragma once

#include "devices/swiotlb.h"
#include "mem/memory.h"

#include <algorithm>
#include <cstdint>
#include <vector>

namespace kdsim::net {

class PagePlacement {
public:
    static constexpr std::uint64_t PAGE_SIZE = 4096;
    // The placement without regions: every address in a 4 KiB page of its own.
    static const PagePlacement& none() {
        static const PagePlacement n;
        return n;
    }

    // Records [base, base + bytes) as pages of `unit` bytes from `base` (one region per buffer
    // ring: a socket's page frags, its heads).
    void add(mem::Addr base, std::uint64_t bytes, std::uint64_t unit) { regions_.push_back(Region{base, bytes, unit}); }

    struct Page {
        mem::Addr start = 0;    // the page's first byte in the hierarchy
        std::uint64_t size = 0; // its bytes (physically contiguous)
        std::uint64_t key = 0;  // its allocation's key for DramLayout::place
    };
    // The page holding `a`.
    Page page_of(mem::Addr a) const {
        for (std::size_t r = 0; r < regions_.size(); ++r) {
            const Region& g = regions_[r];
            if (a >= g.base && a - g.base < g.bytes) {
                const std::uint64_t n = (a - g.base) / g.unit;
                return Page{g.base + n * g.unit, g.unit, KEYS | (std::uint64_t{r} + 1) << 40 | n};
            }
        }
        return Page{a / PAGE_SIZE * PAGE_SIZE, PAGE_SIZE, KEYS | a / PAGE_SIZE};
    }
    // How many of the `n` bytes from `a` lie in a's page (a descriptor of skb_frag_dma_map stops at
    // its page's end).
    std::uint64_t in_page(mem::Addr a, std::uint64_t n) const {
        const Page p = page_of(a);
        return std::min(n, p.start + p.size - a);
    }
    // The physical address of `a` on `dram`.
    std::uint64_t phys(const devices::DramLayout& dram, mem::Addr a) const {
        const Page p = page_of(a);
        return dram.place(p.key, p.size) + (a - p.start);
    }

private:
    // apart from the NIC's keys ((nic << 2 | region) << 40 | n, net/nic.cpp)
    static constexpr std::uint64_t KEYS = std::uint64_t{1} << 62;
    struct Region {
        mem::Addr base;
        std::uint64_t bytes, unit;
    };
    std::vector<Region> regions_;
};

} // namespace kdsim::net
