#include "devices/swiotlb.h"

#include <algorithm>
#include <bit>
#include <stdexcept>

namespace kdsim::devices {

namespace {

std::size_t io_tlb_offset(std::size_t i) { return i & (IO_TLB_SEGSIZE - 1); }

} // namespace

std::uint64_t DramLayout::place(std::uint64_t key, std::uint64_t unit) const {
    const std::uint64_t units = unit ? size / unit : 0;
    if (units == 0) return base;
    const std::uint64_t frac = (key + 1) * 0x9E3779B97F4A7C15ULL; // frac((key + 1) x golden ratio), 64-bit fixed point
    return base + static_cast<std::uint64_t>((static_cast<unsigned __int128>(frac) * units) >> 64) * unit;
}

// memblock_alloc_low: the top of DRAM below the limit.
// Models: swiotlb_init_remap() (kernel/dma/swiotlb.c)
std::optional<std::uint64_t> swiotlb_pool_start(std::uint64_t dram_base, std::uint64_t dram_size, std::uint64_t bytes,
                                                std::uint64_t low_limit) {
    const std::uint64_t end = std::min(dram_base + dram_size, low_limit);
    if (end < dram_base || end - dram_base < bytes) return std::nullopt;
    return end - bytes;
}

bool swiotlb_wanted(SwiotlbMode mode, const DramLayout* dram, std::uint64_t mask) {
    if (mode != SwiotlbMode::AUTO) return mode == SwiotlbMode::FORCE;
    return dram && dram->base + dram->size - 1 > mask;
}

std::uint64_t swiotlb_low_limit(bool arm64, unsigned mask_bits) {
    return std::uint64_t{1} << (arm64 ? std::min(mask_bits, 32u) : 32u);
}

// Models: swiotlb_init_io_tlb_mem() (kernel/dma/swiotlb.c)
SwiotlbPool::SwiotlbPool(std::uint64_t phys_start, std::uint64_t bytes, int cpus)
    : start_(phys_start), nslabs_(static_cast<std::size_t>(bytes >> IO_TLB_SHIFT)) {
    if (nslabs_ == 0 || nslabs_ % IO_TLB_SEGSIZE != 0 || (bytes & (IO_TLB_SIZE - 1)) != 0)
        throw std::invalid_argument("SwiotlbPool: the pool is a whole number of 128-slot segments (256 KiB)");
    if (cpus < 1) throw std::invalid_argument("SwiotlbPool: no CPU");
    std::size_t nareas = std::bit_ceil(static_cast<std::size_t>(cpus)); // swiotlb_adjust_nareas
    while (nareas > 1 && nslabs_ % (nareas * IO_TLB_SEGSIZE) != 0) nareas /= 2;
    areas_.assign(nareas, Area{});
    area_nslabs_ = nslabs_ / nareas;
    list_.resize(nslabs_);
    for (std::size_t i = 0; i < nslabs_; ++i) list_[i] = static_cast<std::uint32_t>(IO_TLB_SEGSIZE - io_tlb_offset(i));
}

// Models: swiotlb_do_find_slots() (kernel/dma/swiotlb.c)
std::optional<std::size_t> SwiotlbPool::find_in_area(std::size_t area_index, std::size_t alloc_size) {
    Area& area = areas_[area_index];
    const std::size_t nslots = nr_slots(alloc_size);
    std::size_t stride = 1;
    if (alloc_size >= SWIOTLB_PAGE_SIZE) stride = std::max<std::size_t>(stride, stride << (12 - IO_TLB_SHIFT));
    if (nslots > area_nslabs_ - area.used) return std::nullopt;
    auto wrap_index = [&](std::size_t i) { return i >= area_nslabs_ ? 0 : i; };
    const std::size_t slot_base = area_index * area_nslabs_;
    std::size_t index = wrap_index((area.index + stride - 1) / stride * stride);
    const std::size_t wrap = index;
    do {
        const std::size_t slot_index = slot_base + index;
        ++probes_;
        if (list_[slot_index] >= nslots) {
            for (std::size_t i = slot_index; i < slot_index + nslots; ++i) list_[i] = 0;
            std::uint32_t count = 0;
            for (std::size_t i = slot_index - 1; io_tlb_offset(i) != IO_TLB_SEGSIZE - 1 && list_[i]; --i)
                list_[i] = ++count;
            writes_ += 2 * nslots + count; // + swiotlb_tbl_map_single's orig_addr loop over the run
            area.index = index + nslots < area_nslabs_ ? index + nslots : 0;
            area.used += nslots;
            return slot_index;
        }
        index = wrap_index(index + stride);
    } while (index != wrap);
    return std::nullopt;
}

// Models: swiotlb_find_slots() (kernel/dma/swiotlb.c)
std::optional<std::size_t> SwiotlbPool::find_slots(int cpu, std::size_t alloc_size) {
    const std::size_t start = static_cast<std::size_t>(cpu) & (areas_.size() - 1);
    std::size_t i = start;
    do {
        if (auto index = find_in_area(i, alloc_size)) {
            used_ += nr_slots(alloc_size);
            high_water_ = std::max(high_water_, used_);
            return index;
        }
        if (++i >= areas_.size()) i = 0;
    } while (i != start);
    ++failures_;
    return std::nullopt;
}

// Models: swiotlb_release_slots() (kernel/dma/swiotlb.c)
void SwiotlbPool::release_slots(std::size_t index, std::size_t alloc_size) {
    const std::size_t nslots = nr_slots(alloc_size);
    if (index + nslots > nslabs_ || used_ < nslots) throw std::logic_error("SwiotlbPool::release_slots: not a used run");
    Area& area = areas_[index / area_nslabs_];
    std::uint32_t count = 0;
    if (index + nslots < (index + 1 + IO_TLB_SEGSIZE - 1) / IO_TLB_SEGSIZE * IO_TLB_SEGSIZE)
        count = list_[index + nslots];
    for (std::size_t i = index + nslots; i-- > index;) list_[i] = ++count;
    const std::uint32_t run_end = count;
    for (std::size_t i = index - 1; io_tlb_offset(i) != IO_TLB_SEGSIZE - 1 && list_[i]; --i) list_[i] = ++count;
    writes_ += nslots + (count - run_end);
    area.used -= nslots;
    used_ -= nslots;
}

} // namespace kdsim::devices
