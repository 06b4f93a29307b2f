// The transmit side of a NIC through the streaming DMA API, and its tx completion. ndo_start_xmit
// maps every buffer of the skb for the device (dma_map_single(DMA_TO_DEVICE): on a non-coherent
// ARM, arm_dma_map_page -> __dma_page_cpu_to_dev -> v7_dma_clean_range + outer_clean_range, the
// dirty lines written back; nothing on a coherent platform), fills a descriptor per buffer and
// rings the doorbell. When a frame has left, the device marks its descriptors done and raises
// the interrupt; the NAPI poll reclaims them: dma_unmap_single (DMA_TO_DEVICE: no maintenance on
// arm32, __dma_page_dev_to_cpu skips it) and the skb's free.
//
// driver = "fec" (drivers/net/ethernet/freescale/fec_main.c; the points below checked against
// Linux 6.1 in session 19, with the file's line numbers):
//   - fec_enet_txq_submit_skb: skb->data (skb_headlen bytes), then each page fragment
//     (fec_enet_txq_submit_frag_skb); a buffer whose address has a bit of fep->tx_align set
//     (0xf on ARM/ARM64, 0 with FEC_QUIRK_HAS_MULTI_QUEUES: i.MX6Q/DL/UL 0xf, i.MX6SX/8 0;
//     fec_main.c:3656-3662, 3752-3755) is memcpy'd into
//     txq->tx_bounce[index] (FEC_ENET_TX_FRSIZE = 2 KiB, kmalloc'ed at open) and that is mapped;
//   - fec_enet_txq_submit_tso: per segment the headers go to txq->tso_hdrs + index *
//     TSO_HEADER_SIZE (dma_alloc_coherent: no mapping, no unmap at completion: IS_TSO_HEADER),
//     each data chunk (fec_enet_txq_put_data_tso) is bounced and mapped as above;
//   - the doorbell: wmb(), then writel(0, txq->bd.reg_desc_active) (FEC_X_DES_ACTIVE); with
//     FEC_QUIRK_ERR007885 (i.MX6SX/UL/8, not i.MX6Q/DL) first up to 4 readl of it, the writel
//     only if one reads 0 (fec_main.c:695-700, 891-896: not modelled, the i.MX6 cases lack it);
//   - fec_enet_interrupt: fec_enet_collect_events (readl(FEC_IEVENT), writel back to ack it),
//     writel(0, FEC_IMASK) to mask, __napi_schedule (fec_main.c:1823-1855); fec_enet_rx_napi:
//     fec_enet_rx, then fec_enet_tx, looping while collect_events finds an event ([machine.nic]
//     poll_loop), and after napi_complete_done writel(FEC_DEFAULT_IMASK, FEC_IMASK) (1857-1873);
//   - fec_enet_rx_queue per frame: writel of RXF to FEC_IEVENT and writel(0, reg_desc_active)
//     (fec_main.c:1656, 1804);
//   - fec_enet_tx_queue: per done descriptor the unmap (not for a TSO header) and, at the skb's
//     last one, dev_kfree_skb_any; at the end, for every part (not only FEC_QUIRK_ERR006358),
//     `if (bdp != txq->bd.cur && readl(reg_desc_active) == 0) writel(0, ...)`: the readl when
//     descriptors are still pending (fec_main.c:1535-1538), for each tx queue (fec_enet_tx).
// Where the skb's bytes lie. The driver maps the skb's own buffers: fec_enet_txq_submit_skb maps
// skb->data for skb_headlen bytes (dma_map_single), fec_enet_txq_submit_frag_skb each fragment at
// skb_frag_address (dma_map_single of frag_len), fec_enet_txq_put_data_tso the data tso_build_data
// walks fragment by fragment; bcmgenet_xmit (drivers/net/ethernet/broadcom/genet/bcmgenet.c)
// dma_map_single(skb->data, skb_headlen) and skb_frag_dma_map per fragment (Linux 6.1, as
// recalled: not re-checked against the source here). So a skb whose sender wrote it on the
// memory hierarchy (Packet::data != 0) is mapped where it lies (TX_SKB): a linear skb's frame
// from skb->data; a TCP skb's payload in the sender's page-frag pages, one descriptor per piece
// of a page (page_placement.h gives the pages and their physical addresses), its headers in a head
// of the NIC's TX_HEADS (the model keeps a TCP skb's head apart from its payload). The clean of
// dma_map_single(DMA_TO_DEVICE) then writes back the lines the sender's copy left dirty. A skb
// without an address (its sender not on the hierarchy) lies in the NIC's stand-in regions,
// written there for free: a linear skb's data (the Ethernet header) follows the headroom its
// builder reserved: MAX_TCP_HEADER (a multiple of the cache line) less the 66 header bytes of a
// TCP segment, so 14 mod 16; LL_RESERVED_SPACE (16) less the 14-byte Ethernet header for UDP
// and ARP, so 2 mod 16; a TCP payload in TX_DATA, standing for the sender's page fragments (32
// KiB pages), one byte after the other in the order it was sent.
// [machine.nic] tx_map_len (TxDmaConfig::map_len): the 3.0 FEC (drivers/net/fec.c,
// fec_enet_start_xmit) mapped every buffer for FEC_ENET_TX_FRSIZE bytes, not the frame's length:
// dma_map_single(&fep->pdev->dev, bufaddr, FEC_ENET_TX_FRSIZE, DMA_TO_DEVICE), so the clean covers
// 2 KiB of lines per frame; its unmap in fec_enet_tx took the same length (no maintenance).
// Not modelled: the tx ring's size limit (netif_stop_queue / netif_tx_wake_queue: the link's
// queue holds what waits), BQL, the write-back of the descriptor ring (coherent memory).
#include "net/nic.h"

#include "kernel/irqflags.h"
#include "kernel/softirq.h"
#include "net/link.h"

namespace kdsim::net {

using kernel::Cat;

namespace {

constexpr std::size_t TX_FRSIZE = 2048;           // FEC_ENET_TX_FRSIZE: a bounce buffer
constexpr std::size_t TX_DATA_POOL = 1U << 20;    // the sender's page-frag stream cycles through 1 MiB
constexpr std::size_t TX_HEAD_SLOT = 2048;        // a linear skb's head (kmalloc of up to 2 KiB)

// skb->data mod 16 of a linear skb built by the stack (see the top of this file).
std::uint32_t linear_head_offset(const Packet& p) {
    return p.kind == FrameKind::TCP_DATA || p.kind == FrameKind::TCP_ACK ? 14 : 2;
}

} // namespace

void Nic::set_tx_dma(devices::DmaPlatform& platform, const TxDmaConfig& cfg, std::uint32_t line_size,
                     double copy_per_byte) {
    if (dma_ && dma_ != &platform) throw std::logic_error("Nic::set_tx_dma: a second DMA platform");
    dma_ = &platform;
    tx_line_ = line_size;
    tx_dma_ = true;
    noqueue_steps_ = nullptr; // tx_map is a Task: start_xmit<true>
    tx_cfg_ = cfg;
    tx_copy_per_byte_ = copy_per_byte;
    tx_ring_.assign(std::max<std::size_t>(cfg.tx_ring, 1), TxDesc{});
    tx_dma_stats_ = &tx_stats_;
    if (rx_mode_ != RxMode::NETIF_RX) cpu_.request_irq(vector_, fec() ? &Nic::rx_irq<true> : &Nic::rx_irq<false>, this, name_ + "-rx");
}

void Nic::tx_set_memory(mem::MemorySystem& m) {
    const std::size_t ring = std::max<std::size_t>(tx_cfg_.tx_ring, 1);
    tx_data_base_ = m.alloc(TX_DATA_POOL, TSO_FRAG_PAGE);
    tx_bounce_base_ = m.alloc(ring * TX_FRSIZE, 4096);
    tx_head_base_ = m.alloc(ring * TX_HEAD_SLOT, 4096);
}

devices::DmaBuffer* Nic::tx_buffer() {
    if (tx_free_.empty()) {
        // a TSO-capable device maps whole page fragments; the others at most a frame's worth
        const std::size_t size =
            std::max(tso_ == TsoKind::HARDWARE ? TSO_FRAG_PAGE : TX_FRSIZE, tx_cfg_.map_len) + tx_line_;
        tx_pool_.push_back(std::make_unique<devices::DmaBuffer>(*dma_, size, tx_line_, dma_dev_));
        return tx_pool_.back().get();
    }
    devices::DmaBuffer* b = tx_free_.back();
    tx_free_.pop_back();
    return b;
}

// One descriptor: the bounce copy when the driver needs it, the mapping, the ring entry.
// Models: fec_enet_txq_submit_skb(), fec_enet_txq_put_data_tso() (drivers/net/ethernet/freescale/fec_main.c)
engine::Task<bool> Nic::tx_descriptor(kernel::Cpu& cpu, mem::Addr addr, std::uint32_t len, bool coherent,
                                      unsigned region) {
    if (tx_count_ == tx_ring_.size()) { // more in flight than the ring had: grow it, in order
        std::vector<TxDesc> bigger(tx_ring_.size() * 2);
        for (std::size_t i = 0; i < tx_count_; ++i) bigger[i] = tx_ring_[(tx_head_ + i) % tx_ring_.size()];
        tx_ring_ = std::move(bigger);
        tx_head_ = 0;
    }
    TxDesc& d = tx_ring_[(tx_head_ + tx_count_) % tx_ring_.size()];
    d = TxDesc{};
    ++tx_count_;
    ++tx_stats_.descriptors;
    const std::size_t index = tx_index_++ % std::max<std::size_t>(tx_cfg_.tx_ring, 1);
    if (coherent) co_return true; // txq->tso_hdrs: written in place, the device reads it as it is
    // a stand-in region: the stack wrote these bytes (charged there), here they land in cache, dirty;
    // the skb's own data is where its sender's writes left it
    if (memory_ && region != TX_SKB) (void)memory_->write(cpu.id(), cpu.now(), addr, len);
    const std::size_t align = tx_cfg_.tx_align;
    if (align > 1 && addr % align != 0) {
        const mem::Addr bounce = tx_bounce_base_ + index * TX_FRSIZE;
        Cycles c = per_byte(tx_copy_per_byte_, len);
        if (memory_) {
            const Cycles rd = memory_->read(cpu.id(), cpu.now(), addr, len);
            c += rd + memory_->write(cpu.id(), cpu.now() + cpu.clock().to_ticks(rd), bounce, len);
        }
        ++tx_stats_.bounced;
        tx_stats_.bounce_bytes += len;
        co_await cpu.exec(c, Cat::DRIVER);
        addr = bounce;
        region = TX_BOUNCE;
    }
    // the buffer object covers the lines of [addr, addr + len) from the line holding addr
    const std::size_t lead = static_cast<std::size_t>(addr % tx_line_);
    d.buf = tx_buffer();
    d.buf->set_addr(memory_ ? addr - lead : 0);
    if (dram_ && region == TX_SKB) { // where the page allocator put the sender's page
        d.buf->set_phys(pages_->phys(*dram_, addr - lead));
    } else if (dram_) { // its physical address: its block of the region (the offsets match without a hierarchy too)
        const mem::Addr base = region == TX_DATA ? tx_data_base_ : region == TX_BOUNCE ? tx_bounce_base_ : tx_head_base_;
        const std::uint64_t unit = region == TX_DATA ? TSO_FRAG_PAGE : TX_HEAD_SLOT, off = addr - lead - base;
        d.buf->set_phys(phys_of(region, off / unit, unit) + off % unit);
    }
    // map_len: the 3.0 FEC maps FEC_ENET_TX_FRSIZE from the buffer, whatever the frame's length
    const std::size_t mapped = std::max<std::size_t>(tx_cfg_.map_len, len);
    d.len = static_cast<std::uint32_t>(lead + mapped);
    d.dev_len = static_cast<std::uint32_t>(lead + len);
    tx_stats_.mapped_bytes += mapped;
    co_await devices::dma_map_single(cpu, *d.buf, d.len, devices::DMA_TO_DEVICE);
    if (!devices::dma_mapping_error(*d.buf)) co_return true;
    tx_free_.push_back(d.buf); // the driver gives the descriptor back
    --tx_count_;
    tx_stats_.mapped_bytes -= mapped;
    co_return false;
}

// The data chunks fec_enet_txq_submit_tso puts a GSO skb with an address in: per segment, one per
// page of the skb's payload it touches (tx_map's cut).
std::uint32_t Nic::tso_chunks(const Packet& p) const {
    std::uint32_t chunks = 0;
    mem::Addr at = p.data + (p.len - p.payload);
    for (std::uint32_t left = p.payload; left > 0;) {
        std::uint32_t seg = std::min(left, p.gso_size);
        left -= seg;
        while (seg > 0) {
            const auto chunk = static_cast<std::uint32_t>(pages_->in_page(at, seg));
            ++chunks;
            at += chunk;
            seg -= chunk;
        }
    }
    return chunks;
}

// The skb's buffers, in the order the driver fills descriptors. A failed mapping unmaps the skb's
// earlier ones (fec_enet_txq_submit_frag_skb's dma_mapping_fail path) and drops it.
engine::Task<bool> Nic::tx_map(kernel::Cpu& cpu, const Packet& p, std::uint32_t segs) {
    const std::size_t first = tx_count_; // less what a reclaim on another CPU takes meanwhile (Nic::xmit)
    const std::uint64_t reclaimed0 = tx_stats_.reclaimed;
    bool ok = true;
    const std::uint32_t hdr = p.len - p.payload;
    // the skb's linear part: a head of its own (heads cycle as the ring's descriptors do)
    const mem::Addr head = tx_head_base_ + (tx_index_ % std::max<std::size_t>(tx_cfg_.tx_ring, 1)) * TX_HEAD_SLOT +
                           linear_head_offset(p);
    const bool paged = sg() && p.kind == FrameKind::TCP_DATA && p.payload > 0;
    // the skb's own bytes, where its sender wrote them (a sender on the hierarchy): a linear skb's
    // whole frame from skb->data; a TCP skb's payload in its page frags after the headers (the
    // frame convention of tcp.cpp: p.data + the header bytes is the payload's first byte)
    const bool own = memory_ && p.data != 0;
    if (!paged && own && p.kind != FrameKind::TCP_DATA) {
        ok = co_await tx_descriptor(cpu, p.data, p.len, false, TX_SKB);
    } else if (!paged) { // a head of its own (a TCP skb linearized for a device without SG: a new head)
        ok = co_await tx_descriptor(cpu, head, p.len, false, TX_HEADS);
    } else {
        const bool soft_tso = segs > 1 && tso_ == TsoKind::FEC_SOFTWARE;
        if (!soft_tso) ok = co_await tx_descriptor(cpu, head, hdr, false, TX_HEADS);
        const std::uint32_t seg_bytes = soft_tso ? p.gso_size : p.payload;
        std::uint32_t left = p.payload;
        mem::Addr at = own ? p.data + hdr : 0;
        while (ok && left > 0) {
            if (soft_tso) co_await tx_descriptor(cpu, 0, hdr, true, TX_HEADS); // the segment's headers in tso_hdrs
            std::uint32_t seg = std::min(left, seg_bytes);
            left -= seg;
            while (ok && own && seg > 0) { // skb_frag_dma_map: a fragment ends at its page's end
                const auto chunk = static_cast<std::uint32_t>(pages_->in_page(at, seg));
                ok = co_await tx_descriptor(cpu, at, chunk, false, TX_SKB);
                at += chunk;
                seg -= chunk;
            }
            while (ok && seg > 0) { // a chunk ends at a page-fragment boundary
                const std::uint64_t in_page = tx_frag_off_ % TSO_FRAG_PAGE;
                const auto chunk = static_cast<std::uint32_t>(std::min<std::uint64_t>(seg, TSO_FRAG_PAGE - in_page));
                ok = co_await tx_descriptor(cpu, tx_data_base_ + tx_frag_off_ % TX_DATA_POOL, chunk, false, TX_DATA);
                tx_frag_off_ += chunk;
                seg -= chunk;
            }
        }
    }
    if (!ok) {
        while (tx_count_ > first - static_cast<std::size_t>(tx_stats_.reclaimed - reclaimed0)) {
            const TxDesc d = tx_ring_[(tx_head_ + tx_count_ - 1) % tx_ring_.size()];
            --tx_count_;
            if (!d.buf) continue;
            co_await devices::dma_unmap_single(cpu, *d.buf, d.len, devices::DMA_TO_DEVICE);
            tx_free_.push_back(d.buf);
        }
        co_return false;
    }
    tx_ring_[(tx_head_ + tx_count_ - 1) % tx_ring_.size()].skb_end = true;
    co_return true;
}

// The device fetched the skb's buffers (its DMA reads) and sends the frames; when the last one
// has left, the completion is due.
void Nic::tx_queued(std::size_t first_desc, engine::Tick departs) {
    for (std::size_t i = first_desc; i < tx_count_; ++i) {
        const TxDesc& d = tx_ring_[(tx_head_ + i) % tx_ring_.size()];
        if (d.buf) devices::device_read(*d.buf, 0, d.dev_len, cpu_.now());
    }
    cpu_.sim().schedule_at(std::max(departs, cpu_.now()), this, EV_TX_DONE);
}

// Tx completion from the NAPI poll: every skb whose frames have left gives back its descriptors.
// Models: fec_enet_tx_queue() (drivers/net/ethernet/freescale/fec_main.c)
engine::Task<> Nic::tx_reclaim(kernel::Cpu& cpu) {
    while (tx_done_skbs_ > 0) {
        bool end = false;
        while (!end) {
            TxDesc d = tx_ring_[tx_head_];
            tx_head_ = (tx_head_ + 1) % tx_ring_.size();
            --tx_count_;
            ++tx_stats_.reclaimed;
            co_await cpu.exec(*costs_.tx_clean, Cat::DRIVER);
            if (d.buf) {
                co_await devices::dma_unmap_single(cpu, *d.buf, d.len, devices::DMA_TO_DEVICE);
                tx_free_.push_back(d.buf);
            }
            end = d.skb_end;
        }
        --tx_done_skbs_;
        ++tx_stats_.skbs_freed;
        co_await cpu.exec(*costs_.tx_skb_free, Cat::DRIVER);
    }
    if (fec() && tx_count_ > 0) { // ERR006358: is the transmitter still going?
        ++tx_stats_.mmio_reads;
        co_await cpu.exec(*costs_.mmio_read, Cat::DRIVER);
    }
}

// Per segment a header built in the header buffer and its descriptor; per data chunk a
// descriptor: a segment whose data crosses one of the skb's page-frag boundaries (SKB_FRAG_PAGE_ORDER:
// 32 KiB pages) takes two. The skb's own pages when its sender wrote it on the hierarchy (tx_map
// cuts there too), else the pages as if from the first byte.
Cycles Nic::tso_cycles(const Packet& p, std::uint32_t segs) {
    const std::uint32_t chunks = memory_ && p.data ? tso_chunks(p) : segs + (p.payload - 1) / TSO_FRAG_PAGE;
    return segs * *costs_.tso_hdr + chunks * *costs_.tso_data;
}

inline void Nic::xmit_frames(kernel::Cpu& cpu, const Packet& p, std::uint32_t segs) {
    for (std::uint32_t i = 0; i < segs; ++i) { // each frame built in the wire's queue (no copy of its own)
        // behind a SoC port the MAC sends a frame once its DMA has fetched all of it into the tx
        // FIFO: store and forward (fec_restart writes FEC_TXWMRK_STRFWD to FEC_X_WMRK on every
        // ENET, fec_main.c:1236-1240); a frame the full queue drops is not fetched
        const engine::Tick fetched =
            port_ && link_->room(*this) > 0 ? port_->post(cpu.now(), segs > 1 ? gso_segment_len(p, i) : p.len) : 0;
        if (const Packet* f = link_->transmit_segment(*this, p, i, fetched)) {
            ++stats_.tx_frames;
            tap_xmit(cpu, *f);
        } else {
            ++stats_.tx_dropped; // the tx queue is full: dropped (counted, never hidden)
        }
    }
}

inline void Nic::xmit_queued(const Packet& p) {
    if (txq()) {
        if (p.truesize) { // a socket's skb: freed at its tx completion (tcp_wfree: TSQ)
            tx_done_.push_back(TxDone{p, link_->departs(*this)});
            if (!tx_done_armed_) {
                tx_done_armed_ = true;
                cpu_.hrtimer_start(tx_done_.front().departs, &Nic::tx_done_irq, this);
            }
        }
        netif_maybe_stop_queue();
    }
}

// A GSO skb reaches the driver only with TSO: the hardware, or the FEC's software TSO, puts one
// frame per segment on the wire (headers replicated, sequence numbers advanced), after the one
// doorbell. FEC_SOFTWARE charges what drivers/net/ethernet/freescale/fec_main.c
// fec_enet_txq_submit_tso does per segment and per data chunk.
// Models: lan743x_netdev_xmit_frame() (drivers/net/ethernet/microchip/lan743x_main.c)
template <bool BH>
engine::Task<std::conditional_t<BH, bool, void>> Nic::start_xmit(kernel::Cpu& cpu, const Packet& p) {
    if constexpr (BH) { // NetDevice::dev_queue_xmit_noqueue's steps before the driver's
        co_await kernel::local_bh_disable(cpu); // rcu_read_lock_bh()
        co_await cpu.exec(costs_.dev_queue_xmit, Cat::PROTOCOL, kernel::Text::DEV_QUEUE_XMIT);
    }
    // ndo_start_xmit: the driver's tx ring lock (spin_lock_irqsave), descriptor, doorbell
    bool flags = co_await kernel::local_irq_save(cpu);
    co_await cpu.exec(fec() ? *costs_.fec_xmit : costs_.driver_xmit, Cat::DRIVER);
    const std::uint32_t segs = std::max<std::uint32_t>(p.gso_segs, 1);
    if (segs > 1 && tso_ == TsoKind::FEC_SOFTWARE) co_await cpu.exec(tso_cycles(p, segs), Cat::DRIVER);
    // this skb's descriptors start at first_desc; a reclaim on another CPU while tx_map waits
    // takes descriptors off the head (the kernel's tx lock is not modelled), moving them forward
    const std::size_t first_desc = tx_count_;
    const std::uint64_t reclaimed0 = tx_stats_.reclaimed;
    if (tx_dma_ && !co_await tx_map(cpu, p, segs)) { // dma_mapping_error: the skb is dropped
        co_await kernel::local_irq_restore(cpu, flags);
        if constexpr (BH) {
            co_await kernel::local_bh_enable(cpu);
            co_return true;
        } else {
            co_return;
        }
    }
    if (fec()) co_await fec_mmio(cpu, 1, 0); // the doorbell: writel(0, FEC_X_DES_ACTIVE)
    xmit_frames(cpu, p, segs);
    if (tx_dma_) tx_queued(first_desc - static_cast<std::size_t>(tx_stats_.reclaimed - reclaimed0), link_->departs(*this));
    xmit_queued(p);
    co_await kernel::local_irq_restore(cpu, flags);
    if constexpr (BH) {
        co_await kernel::local_bh_enable(cpu);
        co_return true;
    }
}

// start_xmit<true> without tx_dma_ (so without fec(), tx_map, the doorbell and tx_queued), one
// case per await, each falling through to the next when its await was done in place.
bool Nic::xmit_steps(XmitRun& r) {
    Nic& n = *static_cast<Nic*>(static_cast<NetDevice*>(r.dev));
    kernel::Cpu& cpu = *r.cpu;
    const Packet& p = *r.p;
    const std::uint32_t segs = std::max<std::uint32_t>(p.gso_segs, 1);
    switch (r.step) {
    case 0:
        if (!r.take(kernel::local_bh_disable(cpu), 1)) return false; // rcu_read_lock_bh()
        [[fallthrough]];
    case 1:
        if (!r.take(cpu.exec(n.costs_.dev_queue_xmit, Cat::PROTOCOL, kernel::Text::DEV_QUEUE_XMIT), 2)) return false;
        [[fallthrough]];
    case 2: { // ndo_start_xmit: the driver's tx ring lock (spin_lock_irqsave), descriptor
        const kernel::IrqSaveAwaiter save = kernel::local_irq_save(cpu);
        r.flags = save.flags;
        if (!r.take(save.exec, 3)) return false;
    }
        [[fallthrough]];
    case 3:
        if (!r.take(cpu.exec(n.costs_.driver_xmit, Cat::DRIVER), 4)) return false;
        [[fallthrough]];
    case 4:
        if (segs > 1 && n.tso_ == TsoKind::FEC_SOFTWARE && !r.take(cpu.exec(n.tso_cycles(p, segs), Cat::DRIVER), 5))
            return false;
        [[fallthrough]];
    case 5:
        n.xmit_frames(cpu, p, segs);
        n.xmit_queued(p);
        if (!r.take(kernel::local_irq_restore(cpu, r.flags), 6)) return false;
        [[fallthrough]];
    case 6:
        if (!r.take(kernel::local_bh_enable(cpu), 7)) return false;
        [[fallthrough]];
    default:
        r.sent = true;
        return true;
    }
}

engine::Task<> Nic::xmit(kernel::Cpu& cpu, const Packet& p) { return start_xmit<false>(cpu, p); }

engine::Task<bool> Nic::dev_queue_xmit_noqueue(kernel::Cpu& cpu, const Packet& p) { return start_xmit<true>(cpu, p); }

} // namespace kdsim::net
