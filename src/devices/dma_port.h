// A device's port on a SoC interconnect whose throughput is below the device's line rate: the
// device's DMA reads (transmit: fetching a frame into its FIFO) and writes (receive: storing a
// frame from its FIFO) share the port and are served one after the other, in the order they are
// issued, at a fixed rate. The i.MX6Dual/Quad and Solo/DualLite ENET is the case that needs it:
// its 1 Gbit/s MAC is limited by the SoC's bus to a few hundred Mbit/s for transmit and receive
// together (NXP erratum ERR004512, the profile's [net] fec_bus_bandwidth). Linux sees none of
// this: the FEC driver (drivers/net/ethernet/freescale/fec_main.c) finds a descriptor done later,
// or a receive FIFO overrun counted in the MAC's statistics.
// PcieLink (pcie.h) is such a port, one direction of a PCIe link, with its TLP framing on top.
// Not modelled: the port's arbitration between a transmit fetch and a receive write that are both
// waiting (served in issue order), the descriptor fetches and write-backs (frame bytes only).
#pragma once

#include "engine/time.h"

#include <cstdint>

namespace kdsim::devices {

class DmaPort {
public:
    // bytes_per_s > 0: what the port carries, reads and writes together.
    explicit DmaPort(double bytes_per_s);

    // The device issues a transfer of `bytes` at `now`: the port takes it after what it already
    // holds. Returns when its last byte has crossed the port.
    engine::Tick post(engine::Tick now, std::uint64_t bytes);

    double bytes_per_s() const { return bytes_per_s_; }
    // Bytes the port has carried, and how long it was busy carrying them.
    const std::uint64_t& bytes() const { return bytes_; }
    const engine::Tick& busy() const { return busy_; }

private:
    double bytes_per_s_;
    engine::Tick free_at_ = 0;
    std::uint64_t bytes_ = 0;
    engine::Tick busy_ = 0;
};

} // namespace kdsim::devices
