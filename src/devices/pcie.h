// A PCI Express link as a shared DMA resource (the transaction and data link layers of the PCIe
// Base Specification, as a byte count on the wire): the devices behind one link (a root port's
// lane) share its upstream direction, which serialises their posted memory writes in the order
// they are issued. A write of n bytes is split into TLPs of at most Max Payload Size, each with
// its header, sequence number, LCRC and framing; the link's data rate is the lanes' transfer
// rate times the line coding's efficiency. Linux sees none of this: the driver only finds the
// descriptor done later (drivers/pci/probe.c pcie_bus_configure_settings picks the MPS).
#pragma once

#include "devices/dma_port.h"
#include "devices/pcie_costs.h"
#include "engine/time.h"

#include <cstdint>

namespace kdsim::devices {

class PcieLink {
public:
    explicit PcieLink(const PcieCosts& c);

    // Data bytes per second one direction carries (lanes x rate x coding efficiency).
    double data_rate() const { return upstream_.bytes_per_s(); }
    // Bytes on the wire for a posted write of `payload` bytes: its TLPs, each at most MPS.
    std::uint64_t write_wire_bytes(std::uint64_t payload) const;
    // Bytes on the wire upstream for one received frame of `len` bytes: the frame's write, the
    // descriptor write-back and the DLLPs counted per frame.
    std::uint64_t rx_frame_wire_bytes(std::uint32_t len) const;
    // Fraction of the link's data rate left for frame bytes when every frame is `len` bytes.
    double rx_efficiency(std::uint32_t len) const {
        return static_cast<double>(len) / static_cast<double>(rx_frame_wire_bytes(len));
    }

    // A device posts `wire_bytes` upstream at `now`: the link takes them after what it already
    // holds. Returns when the last byte has crossed it.
    engine::Tick post(engine::Tick now, std::uint64_t wire_bytes) { return upstream_.post(now, wire_bytes); }

    // Bytes the link has carried, and how long it was busy carrying them.
    const std::uint64_t& wire_bytes() const { return upstream_.bytes(); }
    const engine::Tick& busy() const { return upstream_.busy(); }

private:
    PcieCosts c_;
    DmaPort upstream_; // the upstream direction, at the lanes' data rate
};

} // namespace kdsim::devices
