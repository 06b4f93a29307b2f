// A NIC with a receive FIFO between its wire and its DMA: behind a PCIe link (an igb port on a
// root port's lane), behind a SoC port slower than its line (the i.MX6's ENET, devices/dma_port.h),
// or a SoC's own MAC whose interconnect keeps up with its line (the i.MX8QXP's ENET). A frame from
// the wire waits in the device's rx packet buffer (FIFO) until it has a free descriptor and its DMA
// write, posted upstream with the other writes, has crossed the link or port (at once without
// one); only then are its descriptor done and the rx interrupt raised. A full FIFO drops the
// frame: igb counts it in rx_fifo_errors / rx_missed_errors; the FEC hands the overrun frame's
// descriptor over with BD_ENET_RX_OV set, which fec_enet_rx_queue counts in rx_fifo_errors and
// drops (here the frame takes no descriptor, and that pass of the driver is not charged). The
// descriptor is taken when the frame's write starts, as the device fetched it ahead. The driver
// (igb_clean_rx_irq, fec_enet_rx_queue) sees only the descriptor's done bit set later.
// A frame that finds no free descriptor stays in the FIFO until the driver hands one back: the
// FEC's uDMA stops at a descriptor it does not own and resumes at the driver's writel(0,
// reg_desc_active) after each refill (fec_enet_rx_queue, fec_main.c:1801-1805); igb keeps it in
// its packet buffer (RNBC, rx_no_buffer_count) unless SRRCTL.DROP_EN is set, which
// igb_configure_srrctl does with several rx queues and rx flow control off (igb_main.c:4698-4704):
// here a device behind PCIe drops such a frame unless pause is on (several queues assumed).
// With 802.3x flow control on (set_rx_pause) the MAC pauses its link partner as the FIFO fills
// (the FEC's XOFF at FEC_R_FIFO_RSEM, XON when the level falls below it again), so a frame that
// would overrun the FIFO waits at the partner instead. Once the FIFO has room for the oldest held
// frame, the partner sends again, at most at line rate: a held frame comes in when the FIFO has
// room for it, but not less than its wire time after the previous held frame came in. The model
// is the ideal of that loop otherwise: the pause frames' own wire time, the link's latency and the
// XOFF/XON round trip are not modelled (the FEC sends XON while a threshold's worth of data,
// ~1 KB, is still to be written, which covers a round trip on a short link), and the partner's
// view of its own link is not changed: its frames count as gone when they left its queue
// unpaused (its tx completions and TSQ come that much early).
#include "net/nic.h"

#include "net/link.h"

#include <algorithm>
#include <stdexcept>

namespace kdsim::net {

void Nic::set_pcie(devices::PcieLink& link, std::size_t fifo_bytes) {
    if (port_ || fifo_) throw std::logic_error("Nic::set_pcie: the device already has its rx FIFO");
    pcie_ = &link;
    reset_rx_fifo(fifo_bytes);
}

void Nic::set_dma_port(devices::DmaPort& port, std::size_t fifo_bytes) {
    if (pcie_ || fifo_) throw std::logic_error("Nic::set_dma_port: the device already has its rx FIFO");
    port_ = &port;
    reset_rx_fifo(fifo_bytes);
}

void Nic::set_rx_fifo(std::size_t fifo_bytes) {
    if (pcie_ || port_ || fifo_) throw std::logic_error("Nic::set_rx_fifo: the device already has its rx FIFO");
    reset_rx_fifo(fifo_bytes);
}

void Nic::reset_rx_fifo(std::size_t bytes) {
    fifo_ = true;
    fifo_capacity_ = bytes;
    dma_inflight_.assign(ring_.size(), Packet{});
    dma_head_ = dma_count_ = dma_descriptors_ = fifo_bytes_ = 0;
}

bool Nic::descriptors_free(std::uint32_t len) const {
    return count_ + dma_descriptors_ + descriptors_for(len) <= ring_.size();
}

void Nic::fifo_receive(const Packet& p) {
    if (!paused_.empty() || !fifo_admit(p)) { // behind the frames already held, in order
        if (!pause_ || paused_.size() >= link_->queue()) {
            ++fifo_dropped_;
            ++stats_.rx_dropped;
            return;
        }
        paused_.push_back(p);
        ++pause_held_;
        pause_held_max_ = std::max<std::uint64_t>(pause_held_max_, paused_.size());
    }
}

bool Nic::fifo_admit(const Packet& p) {
    const bool wait = !no_desc_.empty() || !descriptors_free(p.len); // behind the frames already waiting
    if ((wait && pcie_ && !pause_) || (dma_ && !ring_mapped_)) {
        ++stats_.rx_dropped; // igb's DROP_EN, or before ndo_open: dropped, not held (see the top of this file)
        return true;
    }
    if (fifo_bytes_ + p.len > fifo_capacity_) return false;
    fifo_bytes_ += p.len;
    if (wait) {
        no_desc_.push_back(p);
        ++no_desc_held_;
        no_desc_held_max_ = std::max<std::uint64_t>(no_desc_held_max_, no_desc_.size());
        return true;
    }
    fifo_dma_start(p);
    return true;
}

void Nic::fifo_dma_start(const Packet& p) {
    if (!pcie_ && !port_) { // the interconnect keeps up with the line: the frame is written at once
        fifo_bytes_ -= p.len;
        ring_write(p);
        return;
    }
    dma_descriptors_ += descriptors_for(p.len);
    dma_inflight_[(dma_head_ + dma_count_) % dma_inflight_.size()] = p;
    ++dma_count_;
    // the SoC port carries the frame as the MAC stored it, its FCS included (the FEC's buffer holds it)
    const engine::Tick done = pcie_ ? pcie_->post(cpu_.now(), pcie_->rx_frame_wire_bytes(p.len))
                                    : port_->post(cpu_.now(), std::uint64_t{p.len} + 4);
    cpu_.sim().schedule_at(done, this, EV_DMA_DONE);
}

// The link or port serves posts in order, so completions come back in the order the frames came in.
void Nic::fifo_dma_done() {
    const Packet p = dma_inflight_[dma_head_];
    dma_head_ = (dma_head_ + 1) % dma_inflight_.size();
    --dma_count_;
    fifo_bytes_ -= p.len;
    dma_descriptors_ -= descriptors_for(p.len);
    ring_write(p);
    fifo_kick();
}

void Nic::fifo_kick() {
    // the frames that waited for a descriptor, in order, as far as the ring has free ones
    while (!no_desc_.empty() && descriptors_free(no_desc_.front().len)) {
        const Packet p = no_desc_.front();
        no_desc_.pop_front();
        fifo_dma_start(p);
    }
    pause_resume();
}

void Nic::pause_resume() {
    while (!paused_.empty() && !xon_armed_ && fifo_bytes_ + paused_.front().len <= fifo_capacity_) {
        // XON: the partner sends its held frames again, one wire time apart at most
        const engine::Tick at = std::max(cpu_.now(), held_in_ + link_->wire_time(paused_.front()));
        if (at > cpu_.now()) {
            xon_armed_ = true;
            cpu_.sim().schedule_at(at, this, EV_XON);
            return;
        }
        if (!admit_held()) return;
    }
}

bool Nic::admit_held() {
    if (!fifo_admit(paused_.front())) return false;
    paused_.pop_front();
    held_in_ = cpu_.now();
    return true;
}

void Nic::on_xon() {
    xon_armed_ = false;
    if (!paused_.empty() && fifo_bytes_ + paused_.front().len <= fifo_capacity_ && !admit_held()) return;
    pause_resume();
}

} // namespace kdsim::net
