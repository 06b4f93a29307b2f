// The figures of a PCI Express link (the optional [pcie] table of a profile): signalling rate,
// width and line coding, the platform's Max Payload Size and the bytes each TLP and DLLP adds on
// the wire. Header-only so that system::Profile can hold it without linking the devices layer.
#pragma once

#include <cstdint>

namespace kdsim::devices {

struct PcieCosts {
    double transfer_rate = 0;         // transfers (symbols of one bit) per second per lane: Gen2 5e9
    std::uint64_t lanes = 1;
    std::uint64_t encoded_bits = 10;  // line coding: `data_bits` of data in `encoded_bits` symbols (8b/10b)
    std::uint64_t data_bits = 8;
    std::uint64_t max_payload = 128;  // Max Payload Size: bytes of data one write TLP carries at most
    // Bytes each TLP adds to its payload on the wire: framing (STP, END), sequence number, header
    // (3 DW for 32-bit addresses), LCRC (and ECRC when used).
    std::uint64_t tlp_overhead = 20;
    std::uint64_t dllp_bytes = 8;     // one DLLP (ACK, UpdateFC) with its framing
    // What a NIC behind the link adds per received frame in the same (upstream) direction: the
    // rx descriptor it writes back, and the DLLPs it sends for the downstream TLPs the frame
    // causes (descriptor fetch completions, the transmit of the ACK it provokes).
    std::uint64_t rx_descriptor_bytes = 16;
    double rx_dllps_per_frame = 0;
};

} // namespace kdsim::devices
