// A NIC whose receive DMA is slower than its wire, behind a PCIe link (an igb port on a root
// port's lane) or a SoC port (the i.MX6's ENET, devices/dma_port.h): a frame from the wire waits
// in the device's rx packet buffer (FIFO) until its DMA write, posted upstream with the other
// writes, has crossed the link or port; only then are its descriptor done and the rx interrupt
// raised. A full FIFO drops the frame: igb counts it in rx_fifo_errors / rx_missed_errors; the
// FEC hands the overrun frame's descriptor over with BD_ENET_RX_OV set, which fec_enet_rx_queue
// counts in rx_fifo_errors and drops (here the frame takes no descriptor, and that pass of the
// driver is not charged). The descriptor is taken when the frame is accepted, as the device
// fetched it ahead. The driver (igb_clean_rx_irq, fec_enet_rx_queue) sees only the descriptor's
// done bit set later.
// With 802.3x flow control on (set_rx_pause) the MAC pauses its link partner as the FIFO fills
// (the FEC's XOFF at FEC_R_FIFO_RSEM, XON when the level falls below it again), so a frame that
// would overrun the FIFO waits at the partner instead and comes in as soon as the FIFO has room.
// The model is the ideal of that loop: the pause frames' wire time and the XOFF/XON round trip
// are not modelled (the FEC sends XON while a threshold's worth of data, ~1 KB, is still to be
// written, which covers a round trip on a short link), and the partner's view of its own link is
// not changed: its frames count as gone when they left its queue unpaused (its tx completions
// and TSQ come that much early). A frame without a free rx descriptor is dropped, not held.
#include "net/nic.h"

#include "net/link.h"

#include <algorithm>
#include <stdexcept>

namespace kdsim::net {

void Nic::set_pcie(devices::PcieLink& link, std::size_t fifo_bytes) {
    if (port_) throw std::logic_error("Nic::set_pcie: the device is behind a SoC port");
    pcie_ = &link;
    set_rx_fifo(fifo_bytes);
}

void Nic::set_dma_port(devices::DmaPort& port, std::size_t fifo_bytes) {
    if (pcie_) throw std::logic_error("Nic::set_dma_port: the device is behind a PCIe link");
    port_ = &port;
    set_rx_fifo(fifo_bytes);
}

void Nic::set_rx_fifo(std::size_t bytes) {
    fifo_capacity_ = bytes;
    dma_inflight_.assign(ring_.size(), Packet{});
    dma_head_ = dma_count_ = dma_descriptors_ = fifo_bytes_ = 0;
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
    const std::size_t k = descriptors_for(p.len);
    if (count_ + dma_descriptors_ + k > ring_.size() || (dma_ && !ring_mapped_)) {
        ++stats_.rx_dropped; // no descriptor: dropped, not held (see the top of this file)
        return true;
    }
    if (fifo_bytes_ + p.len > fifo_capacity_) return false;
    fifo_bytes_ += p.len;
    dma_descriptors_ += k;
    dma_inflight_[(dma_head_ + dma_count_) % dma_inflight_.size()] = p;
    ++dma_count_;
    // the SoC port carries the frame as the MAC stored it, its FCS included (the FEC's buffer holds it)
    const engine::Tick done = pcie_ ? pcie_->post(cpu_.now(), pcie_->rx_frame_wire_bytes(p.len))
                                    : port_->post(cpu_.now(), std::uint64_t{p.len} + 4);
    cpu_.sim().schedule_at(done, this, EV_DMA_DONE);
    return true;
}

// The link or port serves posts in order, so completions come back in the order the frames came in.
void Nic::fifo_dma_done() {
    const Packet p = dma_inflight_[dma_head_];
    dma_head_ = (dma_head_ + 1) % dma_inflight_.size();
    --dma_count_;
    fifo_bytes_ -= p.len;
    dma_descriptors_ -= descriptors_for(p.len);
    ring_write(p);
    // the paused partner sends again: the held frames come in while the FIFO has room
    while (!paused_.empty() && fifo_admit(paused_.front())) paused_.pop_front();
}

} // namespace kdsim::net
