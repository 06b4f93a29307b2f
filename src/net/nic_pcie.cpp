// A NIC behind a PCIe link (an igb port on a root port's lane): a frame from the wire waits in
// the device's rx packet buffer (FIFO) until its DMA write, posted upstream with the other
// devices' writes, has crossed the link; only then are its descriptor done and the rx interrupt
// raised. A full FIFO drops the frame (igb counts it in rx_fifo_errors / rx_missed_errors). The
// descriptor is taken when the frame is accepted, as the device fetched it ahead. The driver
// (igb_clean_rx_irq) sees only the descriptor's DD bit set later.
#include "net/nic.h"

namespace kdsim::net {

void Nic::set_pcie(devices::PcieLink& link, std::size_t fifo_bytes) {
    pcie_ = &link;
    fifo_capacity_ = fifo_bytes;
    dma_inflight_.assign(ring_.size(), Packet{});
    dma_head_ = dma_count_ = dma_descriptors_ = fifo_bytes_ = 0;
}

void Nic::pcie_receive(const Packet& p) {
    const std::size_t k = descriptors_for(p.len);
    if (count_ + dma_descriptors_ + k > ring_.size() || (dma_ && !ring_mapped_)) {
        ++stats_.rx_dropped;
        return;
    }
    if (fifo_bytes_ + p.len > fifo_capacity_) {
        ++fifo_dropped_;
        ++stats_.rx_dropped;
        return;
    }
    fifo_bytes_ += p.len;
    dma_descriptors_ += k;
    dma_inflight_[(dma_head_ + dma_count_) % dma_inflight_.size()] = p;
    ++dma_count_;
    cpu_.sim().schedule_at(pcie_->post(cpu_.now(), pcie_->rx_frame_wire_bytes(p.len)), this, EV_DMA_DONE);
}

// The link serves posts in order, so completions come back in the order the frames came in.
void Nic::pcie_dma_done() {
    const Packet p = dma_inflight_[dma_head_];
    dma_head_ = (dma_head_ + 1) % dma_inflight_.size();
    --dma_count_;
    fifo_bytes_ -= p.len;
    dma_descriptors_ -= descriptors_for(p.len);
    ring_write(p);
}

} // namespace kdsim::net
