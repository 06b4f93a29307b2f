#include "net/nic.h"

#include "kernel/irqflags.h"
#include "kernel/softirq.h"
#include "net/link.h"
#include "net/tcp.h"

#include <limits>

namespace kdsim::net {

using kernel::Cat;

// ICTT = us * (fep->itr_clk_rate / 64000) / 1000 (fec_enet_us_to_itr_clock, integer arithmetic),
// FEC_ITR_ICTT(x) = x & 0xffff (fec.h); the ICTT counts 64 cycles of the clock FEC_ITR_CLK_SEL picks
// ("enet system clock", clk_ahb, as the driver's comment says).
// Models: fec_enet_us_to_itr_clock(), fec_enet_itr_coal_set() (drivers/net/ethernet/freescale/fec_main.c)
engine::Tick fec_itr_period(std::uint64_t usecs, std::uint64_t itr_clk_hz) {
    const std::uint64_t ictt = (usecs * (itr_clk_hz / 64000) / 1000) & 0xffff;
    if (ictt == 0 || itr_clk_hz == 0) return 0; // rx_ictt 0: RXIC0 stays 0, no coalescing
    const std::uint64_t cycles = ictt * 64;   // at most 4,194,240: cycles * PS_PER_S fits 64 bits
    return (cycles * engine::PS_PER_S + itr_clk_hz / 2) / itr_clk_hz;
}

Nic::Nic(Softnet& softnet, unsigned vector, const NetCosts& costs, std::string name, std::size_t ring)
    : NetDevice(std::move(name)), softnet_(softnet), cpu_(softnet.cpu()), vector_(vector), costs_(costs), ring_(ring) {
    napi_.poll = &Nic::napi_poll;
    napi_.ctx = this;
    noqueue_steps_ = &Nic::xmit_steps; // until set_tx_dma
    cpu_.request_irq(vector_, &Nic::rx_irq<false>, this, name_ + "-rx");
}

void Nic::set_dma_device(devices::DmaDevice& dev, const devices::DramLayout* dram, std::uint64_t index) {
    dma_dev_ = &dev;
    dram_ = dram;
    nic_index_ = index;
}

std::uint64_t Nic::phys_of(unsigned region, std::uint64_t n, std::uint64_t unit) const {
    return dram_ ? dram_->place((nic_index_ * 4 + region) << 40 | n, unit) : 0;
}

namespace {
// The block an rx buffer's pages take (the page allocator's unit for it).
std::size_t rx_phys_unit(std::size_t bytes) { return (bytes + 4095) / 4096 * 4096; }
} // namespace

void Nic::set_rx_dma(devices::DmaPlatform& platform, const RxDmaConfig& cfg, std::uint32_t line_size) {
    dma_ = &platform;
    rx_dma_ = cfg;
    rx_copy_on_ = cfg.copy;
    bufs_.clear();
    bufs_.reserve(ring_.size());
    for (std::size_t i = 0; i < ring_.size(); ++i) {
        bufs_.emplace_back(platform, cfg.buffer_size, line_size, dma_dev_);
        if (dram_) bufs_.back().set_phys(phys_of(RX_POOL, i, rx_phys_unit(cfg.buffer_size)));
    }
    rx_phys_next_ = ring_.size(); // the refills take the pool's next buffers, as the addresses do
}

void Nic::set_memory(mem::MemorySystem& m) {
    memory_ = &m;
    if (dma_) dma_->set_memory(&m);
    const std::size_t line = m.line_size();
    if (tx_dma_) tx_set_memory(m);
    const std::size_t bytes = rx_dma_.strategy != RxStrategy::NONE ? rx_dma_.buffer_size : RX_BUFFER_NO_DMA;
    pool_stride_ = (bytes + line - 1) / line * line;
    pool_buffers_ = 2 * ring_.size();
    pool_base_ = m.alloc(pool_stride_ * pool_buffers_);
    pool_next_ = 0;
    slot_addr_.assign(ring_.size(), 0);
    // rx_copy: the ring's buffers are the driver's for life, apart; the pool holds the skbs copied into
    const mem::Addr ring_base = rx_dma_.copy ? m.alloc(pool_stride_ * ring_.size()) : 0;
    for (std::size_t i = 0; i < ring_.size(); ++i) {
        slot_addr_[i] = rx_dma_.copy ? ring_base + i * pool_stride_ : next_rx_buffer();
        if (rx_dma_on()) bufs_[i].set_addr(slot_addr_[i]);
    }
}

mem::Addr Nic::next_rx_buffer() {
    const mem::Addr a = pool_base_ + pool_next_ * pool_stride_;
    pool_next_ = (pool_next_ + 1) % pool_buffers_;
    return a;
}

std::size_t Nic::descriptors_for(std::uint32_t len) const {
    if (!rx_dma_on() || !rx_dma_.multi_buffer) return 1;
    return (static_cast<std::size_t>(len) + 4 + rx_dma_.buffer_size - 1) / rx_dma_.buffer_size; // + FCS
}

void Nic::receive_from_wire(const Packet& p) {
    if (fifo_) {
        fifo_receive(p);
        return;
    }
    const std::size_t k = descriptors_for(p.len);
    if (count_ + k > ring_.size() || (rx_dma_on() && !ring_mapped_)) {
        ++stats_.rx_dropped;
        return;
    }
    ring_write(p);
}

void Nic::ring_write(const Packet& p) {
    const std::size_t k = descriptors_for(p.len);
    const std::size_t size = ring_.size();
    const std::size_t first = (head_ + count_) % size; // the frame's descriptors: first on, one after the other
    const auto next = [size](std::size_t slot) { return slot + 1 == size ? 0 : slot + 1; };
    if (!rx_unmapped_.empty())
        for (std::size_t i = 0, slot = first; i < k; ++i, slot = next(slot))
            if (!bufs_[slot].mapped()) { // a descriptor without a buffer
                ++stats_.rx_dropped;
                return;
            }
    // the frame goes to the first descriptor; its bytes are spread over k buffers
    const bool dma = rx_dma_on();
    const mem::Addr data = memory_ ? slot_addr_[first] : 0;
    std::size_t left = p.len + 4; // + FCS
    for (std::size_t i = 0, slot = first; i < k; ++i, slot = next(slot)) {
        ring_[slot] = p;
        ring_[slot].data = data;
        ++count_;
        const std::size_t here = dma ? std::min(left, rx_dma_.buffer_size) : left;
        if (dma) devices::device_write(bufs_[slot], 0, here, cpu_.now());
        else if (memory_) { // no DMA API modelled: the write lands in memory, no CPU cache keeps a copy
            memory_->device_write(cpu_.now(), slot_addr_[slot], here);
            // a coherent write has already dropped the caches' copies (and with write-allocate, x86
            // DDIO, left the frame in the LLC, which an invalidate would wrongly drop again); a
            // non-coherent SoC's stale lines go as the missing DMA API's invalidate would drop them
            if (!memory_->config().dma_coherent) memory_->invalidate(slot_addr_[slot], here);
        }
        left -= here;
    }
    if (rx_mode_ == RxMode::NETIF_RX) fec_event(FEC_ENET_RXF);
    else {
        if (poll_loop_ != PollLoop::NONE) ievent_ |= FEC_ENET_RXF;
        if (irq_enabled_) raise_rx_irq();
    }
}

// The 3.0 FEC sets the event's IEVENT bit; IMASK lets every event through, so the line is
// asserted while IEVENT holds one: the interrupt is raised by the first event after the handler's
// loop last read IEVENT empty (later ones find the line asserted, or the loop reads them).
void Nic::fec_event(unsigned bits) {
    ievent_ |= bits;
    if (irq_line_) return;
    irq_line_ = true;
    const engine::Tick flight = irq_delivery_ + (irq_jitter_ ? irq_rng_.below(irq_jitter_ + 1) : 0);
    if (flight == 0) cpu_.raise_irq(vector_);
    else cpu_.sim().schedule_in(flight, this, EV_DELIVER);
}

void Nic::raise_rx_irq() {
    const engine::Tick due = irq_raised_once_ ? last_irq_ + rx_usecs_ : 0;
    if (cpu_.now() >= due) {
        irq_enabled_ = false; // the driver masks the device interrupt until NAPI completes
        irq_raised_once_ = true;
        last_irq_ = cpu_.now();
        const engine::Tick flight = irq_delivery_ + (irq_jitter_ ? irq_rng_.below(irq_jitter_ + 1) : 0);
        if (flight == 0) cpu_.raise_irq(vector_);
        else cpu_.sim().schedule_in(flight, this, EV_DELIVER);
    } else if (!irq_timer_armed_) {
        irq_timer_armed_ = true; // the moderation timer holds it back
        cpu_.sim().schedule_at(due, this, EV_MODERATION);
    }
}

void Nic::on_event(std::uint64_t arg) {
    if (arg == EV_TX_DONE) { // the device marks the skb's descriptors done and signals TXF
        ++tx_done_skbs_;
        if (rx_mode_ == RxMode::NETIF_RX) fec_event(FEC_ENET_TXF);
        else {
            if (poll_loop_ != PollLoop::NONE) ievent_ |= FEC_ENET_TXF;
            if (irq_enabled_) raise_rx_irq();
        }
        return;
    }
    if (arg == EV_DMA_DONE) {
        fifo_dma_done();
        return;
    }
    if (arg == EV_XON) {
        on_xon();
        return;
    }
    if (arg == EV_DELIVER) {
        cpu_.raise_irq(vector_); // the device masked itself when it raised it: one in flight at most
        return;
    }
    irq_timer_armed_ = false;
    if (irq_enabled_ && (count_ > 0 || tx_pending())) raise_rx_irq();
}

// The driver's interrupt handler: ack and mask the device interrupt, napi_schedule(); in plain
// steps (no coroutine frame per interrupt), each ending with its exec, the last with the
// handler's end (IrqStep::end: irq_exit follows its exec). In hardirq the mask is
// already off, so napi_schedule's local_irq_save yields "off" and its restore leaves the mask
// as it is and takes no interrupt: their execs are all they do. The FEC's handler has a step
// more (1: its register accesses), after which its steps are the others' shifted by one.
// Models: lan743x_intr() (drivers/net/ethernet/microchip/lan743x_main.c)
template <bool FEC>
kernel::IrqStep Nic::rx_irq(kernel::Cpu& cpu, void* ctx, unsigned step) {
    auto& n = *static_cast<Nic*>(ctx);
    if constexpr (FEC) {
        if (step == 1) return {n.fec_mmio_cycles(2, 1), Cat::DRIVER, false};
        if (step > 1) --step;
    }
    switch (step) {
    case 0:
        ++n.stats_.irqs;
        n.ievent_ = 0; // (poll_loop) fec_enet_collect_events acks every event the interrupt found
        if constexpr (FEC) // fec_enet_interrupt: read IEVENT, write it back (ack), write IMASK (mask)
            return {*n.costs_.fec_irq + cpu.text(kernel::Text::FEC_INTERRUPT), Cat::DRIVER, false};
        return {n.costs_.driver_rx_irq + cpu.text(kernel::Text::DRIVER_IRQ), Cat::DRIVER, false};
    case 1: // napi_schedule: local_irq_save
        cpu.count_irqflag_op(2);
        return {cpu.costs().local_irq_save, Cat::IRQ_MASK, false};
    default: // 2: napi_schedule_irqoff, local_irq_restore; the handler returns
        n.softnet_.napi_schedule_irqoff(n.napi_);
        cpu.count_irqflag_op(3);
        return {cpu.costs().local_irq_restore, Cat::IRQ_MASK, true};
    }
}
template kernel::IrqStep Nic::rx_irq<false>(kernel::Cpu&, void*, unsigned);
template kernel::IrqStep Nic::rx_irq<true>(kernel::Cpu&, void*, unsigned);

// rx_mode NETIF_RX's interrupt handler (set_netif_rx).
engine::Task<> Nic::rx_irq_netif_rx(kernel::Cpu& cpu, void* ctx) {
    auto& n = *static_cast<Nic*>(ctx);
    ++n.stats_.irqs;
    co_await n.fec_enet_interrupt(cpu);
}

// rx_mode NETIF_RX, in hardirq (interrupts off): while IEVENT holds events, read them, ack them
// (write-1-to-clear the bits read) and run fec_enet_rx over the whole ring and fec_enet_tx. Events
// that come while the loop runs are read by its next pass; the pass that reads none ends it (3.0).
// Models: fec_enet_interrupt() (drivers/net/fec.c)
engine::Task<> Nic::fec_enet_interrupt(kernel::Cpu& cpu) {
    for (;;) {
        ++stats_.irq_loops;
        co_await cpu.exec(*costs_.fec_irq_loop, Cat::DRIVER, kernel::Text::FEC_INTERRUPT);
        co_await fec_mmio(cpu, 0, 1); // int_events = readl(fep->hwp + FEC_IEVENT)
        const unsigned events = ievent_;
        if (!events) irq_line_ = false; // IEVENT empty: the line is deasserted
        co_await fec_mmio(cpu, 1, 0); // writel(int_events, fep->hwp + FEC_IEVENT)
        ievent_ &= ~events;
        if (events & FEC_ENET_RXF) co_await rx_poll(cpu, std::numeric_limits<int>::max()); // fec_enet_rx
        if (events & FEC_ENET_TXF) co_await tx_reclaim(cpu); // fec_enet_tx
        if (!events) co_return;
    }
}

// netif_rx -> enqueue_to_backlog on this CPU under rps_lock (local_irq_save); a full backlog drops
// the frame (sd->dropped, and the device's rx_dropped).
// Models: netif_rx() (net/core/dev.c)
engine::Task<> Nic::netif_rx(kernel::Cpu& cpu, const Packet& p) {
    co_await cpu.exec(*costs_.netif_rx, Cat::PROTOCOL, kernel::Text::NETIF_RX);
    const bool flags = co_await kernel::local_irq_save(cpu);
    const bool queued = backlog_->enqueue(p, *this);
    co_await kernel::local_irq_restore(cpu, flags);
    if (!queued) {
        ++stats_.rx_dropped;
        ++stats_.rx_backlog_dropped;
    }
}

// The driver's probe/open: every rx descriptor gets a mapped buffer.
// Models: lan743x_rx_ring_init() (drivers/net/ethernet/microchip/lan743x_main.c)
engine::Task<> Nic::map_ring() {
    for (std::size_t i = 0; i < bufs_.size(); ++i) {
        co_await devices::dma_map_single(cpu_, bufs_[i], bufs_[i].size(), devices::DMA_FROM_DEVICE);
        if (devices::dma_mapping_error(bufs_[i])) rx_unmapped_.push_back(i); // (lan743x's open would fail)
    }
    ring_mapped_ = true;
}

// rx_copy: a new skb for the frame and its bytes copied there from the ring buffer, which the
// device has just written (cold: its lines were dropped by the unmap). skb->data lies NET_IP_ALIGN
// (2 on arm) into the new buffer, which the pool of skb-sized blocks gives.
// The 3.0 driver (drivers/net/fec.c, the copy lasting until 1b7bde6d659d): dev_alloc_skb(pkt_len -
// 4 + NET_IP_ALIGN), skb_reserve, skb_put, skb_copy_to_linear_data(skb, data, pkt_len - 4).
// Models: fec_enet_rx() (drivers/net/fec.c)
engine::Task<> Nic::rx_copy_frame(std::size_t slot, std::size_t n) {
    co_await cpu_.exec(rx_buffer_alloc_, Cat::DRIVER);
    Cycles c = per_byte(rx_copy_per_byte_, n);
    if (memory_) {
        rx_copied_to_ = next_rx_buffer() + NET_IP_ALIGN;
        const Cycles rd = memory_->read(cpu_.id(), cpu_.now(), slot_addr_[slot], n);
        c += rd + memory_->write(cpu_.id(), cpu_.now() + cpu_.clock().to_ticks(rd), rx_copied_to_, n);
    }
    ++stats_.rx_copied;
    stats_.rx_copy_bytes += n;
    co_await cpu_.exec(c, Cat::DRIVER);
}

// Descriptors left without a buffer by a failed mapping get one again when the mapping succeeds.
engine::Task<> Nic::rx_retry_refills() {
    std::size_t kept = 0;
    for (std::size_t slot : rx_unmapped_) {
        co_await devices::dma_map_single(cpu_, bufs_[slot], bufs_[slot].size(), devices::DMA_FROM_DEVICE);
        if (devices::dma_mapping_error(bufs_[slot])) rx_unmapped_[kept++] = slot;
    }
    rx_unmapped_.resize(kept);
}

// poll_loop: fec_enet_collect_events from the NAPI poll's loop: IEVENT read and acked. COALESCED:
// the events are held back until rx_usecs after the last interrupt; a release starts the period
// again (the interrupt it stands for is masked: the poll takes it).
// Models: fec_enet_collect_events() (drivers/net/ethernet/freescale/fec_main.c)
bool Nic::fec_collect_events() {
    if (!ievent_) return false;
    if (poll_loop_ == PollLoop::COALESCED && rx_usecs_ > 0) {
        if (irq_raised_once_ && cpu_.now() < last_irq_ + rx_usecs_) return false; // still held back
        last_irq_ = cpu_.now();
    }
    ievent_ = 0;
    return true;
}

// Models: igb_alloc_rx_buffers() (drivers/net/ethernet/intel/igb/igb_main.c)
kernel::Cpu::ExecAwaiter Nic::rx_tail_write() {
    rx_refilled_ = 0;
    ++stats_.rx_tail_writes;
    return cpu_.exec(*costs_.mmio_posted_write, Cat::DRIVER); // writel(i, rx_ring->tail)
}

// XDP_DROP: the driver syncs the received bytes for the CPU (the program may read them), runs the
// program, and on its verdict puts the page back into the ring: no skb, no unmap or new buffer.
// The recycled page is synced for the device again (page_pool's PP_FLAG_DMA_SYNC_DEV, over the
// received length, as fec_enet_run_xdp with page_pool_put_page does in 6.1; mlx5e's own page
// cache of 4.18 skipped it). The program reads no byte here.
// Models: mlx5e_xdp_handle() (drivers/net/ethernet/mellanox/mlx5/core/en_rx.c)
engine::Task<> Nic::rx_xdp_drop(const Packet& p, unsigned fec_writes) {
    ++stats_.rx_frames;
    stats_.rx_bytes += p.len;
    ++stats_.xdp_drop;
    std::size_t left = p.len + 4;
    const std::size_t k = descriptors_for(p.len);
    for (std::size_t i = 0; i < k; ++i) {
        const std::size_t here = std::min(left, rx_dma_on() ? rx_dma_.buffer_size : left);
        left -= here;
        if (fec()) co_await fec_mmio(cpu_, fec_writes, 0);
        if (i == 0) {
            if (rx_dma_on())
                co_await devices::dma_sync_single_for_cpu(cpu_, bufs_[head_], 0, here, devices::DMA_FROM_DEVICE);
            co_await cpu_.exec(*costs_.xdp_prog_run + *costs_.xdp_drop, Cat::DRIVER);
            if (rx_dma_on())
                co_await devices::dma_sync_single_for_device(cpu_, bufs_[head_], 0, here, devices::DMA_FROM_DEVICE);
        }
        head_ = (head_ + 1) % ring_.size(); // the descriptor goes back with its page
        --count_;
        if (rx_tail_batch_ && ++rx_refilled_ == rx_tail_batch_) co_await rx_tail_write(); // a batch refilled
    }
    if (fifo_) fifo_kick(); // writel(0, reg_desc_active): the device writes the frames that waited
}

// No buffer for descriptor `slot` (its refill's mapping failed): the frame is dropped, and the
// next poll retries the refill. Out of line: rare, and kept out of rx_poll's actor.
void Nic::rx_refill_failed(std::size_t slot) {
    rx_unmapped_.push_back(slot);
    rx_drop_frame_ = true;
}

// The NAPI instance's poll callback: the Task of the driver's poll below.
engine::Task<int> Nic::napi_poll(kernel::Cpu& cpu, void* ctx, int budget) {
    return static_cast<Nic*>(ctx)->rx_poll(cpu, budget);
}

// The driver's poll: up to `budget` completed descriptors to the stack; when the ring is
// drained, napi_complete_done and the device interrupt is unmasked (it fires at once if a
// frame came in meanwhile). With poll_loop (the 6.1 FEC's fec_enet_rx_napi) the ring walk and
// the tx completions repeat while the budget lasts and fec_enet_collect_events finds an event.
// In rx_mode NETIF_RX it is the 3.0 hardirq's ring walk alone (no poll around it).
// The ring walk takes each frame off the ring: each descriptor's completion, its buffer's
// hand-off and refill (lan743x_rx_process_buffer walks them, adding the later ones as
// fragments). With DMA the completed buffer goes to the stack and the descriptor is refilled, per
// strategy. The CPU then reads the frame (headers now, payload at the copy to user): read here,
// over the whole received length, because after this the buffer belongs to the CPU. PAGE_REUSE
// is igb_clean_rx_irq's page recycling (drivers/net/ethernet/intel/igb/igb_main.c). The frame
// then goes to netif_rx (rx_mode NETIF_RX), else through XDP, napi_gro_receive or
// netif_receive_skb (XDP and poll_loop need rx_mode NAPI). The walk is in the poll's frame: one
// coroutine per poll, not one per walk, frame or descriptor. Returns the frames taken (a dropped
// one too: it used its descriptors).
// Models: lan743x_rx_napi_poll() (drivers/net/ethernet/microchip/lan743x_main.c)
// Models: fec_enet_rx_napi() (drivers/net/ethernet/freescale/fec_main.c)
// Models: fec_enet_rx() (drivers/net/fec.c)
// Models: fec_enet_rx_queue() (drivers/net/ethernet/freescale/fec_main.c)
// Models: lan743x_rx_process_buffer() (drivers/net/ethernet/microchip/lan743x_main.c)
engine::Task<int> Nic::rx_poll(kernel::Cpu& cpu, int budget) {
    const bool netif_rx_mode = rx_mode_ == RxMode::NETIF_RX;
    // writel RXF to IEVENT (the NAPI poll), writel(0, reg_desc_active), per descriptor
    const unsigned fec_writes = netif_rx_mode ? 1 : 2;
    int done = 0;
    for (bool first = true;; first = false) {
        if (!netif_rx_mode) {
            if (poll_loop_ != PollLoop::NONE) ++stats_.poll_passes;
            if (first) { // a later pass of poll_loop is the same poll call
                ++stats_.polls;
                co_await cpu_.exec(costs_.napi_poll, Cat::DRIVER, kernel::Text::NAPI_POLL);
            }
        }
        // the ring walk (fec_enet_rx): up to budget - done frames (a walk of an empty ring with
        // every descriptor mapped takes nothing)
        if (count_ > 0 || !rx_unmapped_.empty()) {
            if (!rx_unmapped_.empty()) co_await rx_retry_refills();
            while (done < budget && count_ > 0) {
                Packet p = ring_[head_];
                ++done;
                if (poll_loop_ != PollLoop::NONE) ievent_ &= ~FEC_ENET_RXF; // writel(FEC_ENET_RXF_GET(queue), FEC_IEVENT)
                if (xdp_ != XdpAction::NONE) [[unlikely]] { // bpf_prog_run_xdp, before any skb exists
                    if (xdp_ == XdpAction::DROP) {
                        co_await rx_xdp_drop(p, fec_writes);
                        continue;
                    }
                    ++stats_.xdp_pass;
                    co_await cpu_.exec(*costs_.xdp_prog_run, Cat::DRIVER);
                }
                ++stats_.rx_frames;
                stats_.rx_bytes += p.len;
                const std::size_t k = descriptors_for(p.len);
                std::size_t left = p.len + 4;
                for (std::size_t i = 0; i < k; ++i) {
                    const std::size_t slot = head_;
                    const std::size_t here = std::min(left, rx_dma_on() ? rx_dma_.buffer_size : left);
                    left -= here;
                    co_await cpu_.exec(costs_.driver_rx, Cat::DRIVER, kernel::Text::DRIVER_RX);
                    if (fec()) co_await fec_mmio(cpu_, fec_writes, 0);
                    if (rx_dma_on()) { // the buffer's hand-off: `here` bytes received in it
                        devices::DmaBuffer& b = bufs_[slot];
                        const RxStrategy st = rx_dma_.strategy;
                        if (st == RxStrategy::FULL_SYNC) {
                            co_await devices::dma_unmap_single(cpu_, b, b.size(), devices::DMA_FROM_DEVICE);
                        } else { // PARTIAL_SYNC and PAGE_REUSE: the received bytes; SHORT_SYNC: at most short_sync_bytes
                            const std::size_t n = st == RxStrategy::SHORT_SYNC ? std::min(here, rx_dma_.short_sync_bytes) : here;
                            co_await devices::dma_sync_single_for_cpu(cpu_, b, 0, n, devices::DMA_FROM_DEVICE);
                            if (st != RxStrategy::PAGE_REUSE)
                                co_await devices::dma_unmap_single_attrs(cpu_, b, b.size(), devices::DMA_FROM_DEVICE,
                                                                         devices::DMA_ATTR_SKIP_CPU_SYNC);
                        }
                        const bool stale = devices::cpu_read(cpu_, b, 0, here);
                        if (stale) ++stats_.stale_frames;
                        // PAGE_REUSE: the page goes back to the ring, still mapped; else a copy into a new skb,
                        // or a refill: a new buffer for the descriptor (the model reuses the object), mapped
                        if (rx_dma_.copy) {
                            co_await rx_copy_frame(slot, here - std::min<std::size_t>(here, 4)); // the frame less its FCS
                        } else if (st != RxStrategy::PAGE_REUSE) {
                            co_await cpu_.exec(rx_buffer_alloc_, Cat::DRIVER);
                            if (memory_) b.set_addr(slot_addr_[slot] = next_rx_buffer());
                            if (dram_) {
                                b.set_phys(phys_of(RX_POOL, rx_phys_next_, rx_phys_unit(b.size())));
                                rx_phys_next_ = (rx_phys_next_ + 1) % (2 * ring_.size());
                            }
                        }
                        if (st == RxStrategy::PAGE_REUSE) {
                            co_await devices::dma_sync_single_for_device(cpu_, b, 0, b.size(), devices::DMA_FROM_DEVICE);
                        } else {
                            co_await devices::dma_map_single(cpu_, b, b.size(), devices::DMA_FROM_DEVICE);
                            if (devices::dma_mapping_error(b)) rx_refill_failed(slot);
                        }
                        if (stale) p.corrupt = true;
                    }
                    if (memory_ && rx_dma_.copy) p.data = rx_copied_to_; // the stack reads the new skb
                    if (memory_ && i == 0) { // eth_type_trans: the first touch of the frame, after its sync
                        if (const Cycles stall = memory_->read(cpu_.id(), cpu_.now(), p.data, ETH_HEADER))
                            co_await cpu_.exec(stall, Cat::DRIVER);
                    }
                    if (memory_ && !rx_dma_on()) slot_addr_[slot] = next_rx_buffer();
                    head_ = (head_ + 1) % ring_.size(); // the descriptor goes back to the device refilled
                    --count_;
                    if (rx_tail_batch_ && ++rx_refilled_ == rx_tail_batch_) co_await rx_tail_write(); // a batch refilled
                }
                if (fifo_) fifo_kick(); // writel(0, reg_desc_active): the device writes the frames that waited
                if (rx_drop_frame_) { // a refill failed: the driver drops the frame (counted as a map failure)
                    rx_drop_frame_ = false;
                    --stats_.rx_frames;
                    stats_.rx_bytes -= p.len;
                    continue;
                }
                if (netif_rx_mode) {
                    co_await netif_rx(cpu, p);
                    continue;
                }
                // napi_gro_receive: non-IP frames (ARP) find no GRO handler and go the normal way
                bool normal = true;
                if (gro_ && p.kind != FrameKind::ARP_REQUEST && p.kind != FrameKind::ARP_REPLY) {
                    if (memory_ && p.len > ETH_HEADER) { // inet_gro_receive / tcp_gro_receive read the IP and TCP headers first
                        // (no further than the frame: a 60-byte frame ends before a TCP header would)
                        const std::size_t hdr = std::min<std::size_t>(TCP_IP_HEADERS, p.len - ETH_HEADER);
                        if (const Cycles stall = memory_->read(cpu_.id(), cpu_.now(), p.data + ETH_HEADER, hdr))
                            co_await cpu_.exec(stall, Cat::PROTOCOL);
                    }
                    // napi_gro_receive's two steps in this frame (a segment held at once needs no other)
                    co_await gro_->gro_receive(cpu_, p);
                    Gro::Verdict v = gro_->dev_gro_receive(cpu_, p);
                    if (v.kind == Gro::Verdict::REST) {
                        co_await std::move(v.rest);
                    } else if (v.kind == Gro::Verdict::MERGED) {
                        co_await gro_->gro_merge(cpu_);
                        gro_->skb_gro_receive(p);
                    }
                    normal = v.kind == Gro::Verdict::NORMAL; // GRO's UpCost and up are the two awaits below
                }
                if (normal) { // netif_receive_skb
                    co_await cpu_.exec(costs_.netif_receive_skb, Cat::PROTOCOL, kernel::Text::NETIF_RECEIVE_SKB);
                    co_await deliver(cpu_, p);
                }
            }
        }
        if (netif_rx_mode) co_return done;
        if (rx_refilled_ > 0) co_await rx_tail_write(); // the rest of the poll's refills
        if (tx_dma_) co_await tx_reclaim(cpu); // fec_enet_tx after fec_enet_rx; not counted in the budget
        if (poll_loop_ == PollLoop::NONE || done >= budget) break;
        if (fec()) co_await fec_mmio(cpu, 1, 1); // collect_events: readl(FEC_IEVENT), writel back
        if (!fec_collect_events()) break;
    }
    if (gro_ && !gro_->empty()) { // (a flush of an empty list does nothing)
        // napi_complete_done flushes every held skb; __napi_poll, after a poll that used its
        // whole weight, those held since an earlier jiffy (all of them when HZ < 1000)
        const bool flush_old = done >= budget && cpu.tick_period() <= engine::PS_PER_MS;
        // napi_gro_flush's awaits in this frame (one coroutine less per poll that flushes); GRO's
        // UpCost and up are the device's netif_receive_skb cost and deliver
        const std::uint64_t now = flush_old ? cpu.jiffies() : 0; // (read by flush_old only)
        while (const Packet* skb = gro_->flush_take(now, flush_old)) {
            if (skb->gso_segs > 1) co_await gro_->gro_complete(cpu);
            co_await cpu.exec(costs_.netif_receive_skb, Cat::PROTOCOL, kernel::Text::NETIF_RECEIVE_SKB);
            co_await deliver(cpu, *skb);
        }
    }
    if (done < budget) {
        napi_complete_done(napi_);
        if (fec()) co_await fec_mmio(cpu, 1, 0); // writel(FEC_DEFAULT_IMASK, FEC_IMASK)
        irq_enabled_ = true;
        if (count_ > 0 || tx_pending()) raise_rx_irq(); // a frame came in (or left) meanwhile
    }
    co_return done;
}

kernel::Cpu::ExecAwaiter Nic::fec_mmio(kernel::Cpu& cpu, unsigned writes, unsigned reads) {
    return cpu.exec(fec_mmio_cycles(writes, reads), Cat::DRIVER);
}

Cycles Nic::fec_mmio_cycles(unsigned writes, unsigned reads) {
    tx_stats_.mmio_writes += writes;
    tx_stats_.mmio_reads += reads;
    return writes * *costs_.mmio_posted_write + reads * *costs_.mmio_read;
}

// The tx completion interrupt once an skb has left: every skb gone by now is freed (its
// socket's destructor), and the next completion is due when the oldest left one leaves.
// Models: igb_clean_tx_irq() (drivers/net/ethernet/intel/igb/igb_main.c)
Cycles Nic::tx_done_irq(kernel::Cpu& cpu, void* ctx, engine::Tick) {
    auto& nic = *static_cast<Nic*>(ctx);
    while (!nic.tx_done_.empty() && nic.tx_done_.front().departs <= cpu.now()) {
        const Packet p = nic.tx_done_.pop_front().skb;
        nic.txq()->skb_free(cpu, p);
    }
    if (nic.tx_done_.empty()) nic.tx_done_armed_ = false;
    else cpu.hrtimer_start(nic.tx_done_.front().departs, &Nic::tx_done_irq, ctx);
    return nic.costs_.driver_rx_irq;
}

std::size_t Nic::tx_room() const { return link_ ? link_->room(*this) : NetDevice::tx_room(); }

// The ring cannot take another skb of the largest size the stack sends (gso_max_size at a
// 1448-byte MSS: 46 frames; 1 without GSO): the queue stops (igb's DESC_NEEDED), and the tx
// completion of the frames that free twice that (TX_WAKE_THRESHOLD) wakes it: an interrupt on
// the NIC's CPU at that time. Both are capped by half the ring and the ring.
// Models: igb_maybe_stop_tx() (drivers/net/ethernet/intel/igb/igb_main.c)
void Nic::netif_maybe_stop_queue() {
    const std::size_t ring = link_->queue();
    const std::size_t stop = std::max<std::size_t>(std::min<std::size_t>(gso() ? 46 : 1, ring / 2), 1);
    if (tx_room() >= stop) return;
    txq()->netif_tx_stop_queue();
    txq()->count_stop();
    if (tx_wake_armed_) return;
    tx_wake_armed_ = true;
    cpu_.hrtimer_start(link_->room_at(*this, std::min(2 * stop, ring)), &Nic::tx_wake_irq, this);
}

// The tx completion interrupt that frees the slots: netif_tx_wake_queue from the driver's clean-up.
// Models: igb_clean_tx_irq() (drivers/net/ethernet/intel/igb/igb_main.c)
Cycles Nic::tx_wake_irq(kernel::Cpu& cpu, void* ctx, engine::Tick) {
    auto& nic = *static_cast<Nic*>(ctx);
    nic.tx_wake_armed_ = false;
    nic.txq()->netif_tx_wake_queue(cpu);
    return nic.costs_.driver_rx_irq; // the completion interrupt: ack, reclaim, wake
}

} // namespace kdsim::net
