#include "devices/pcie.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace kdsim::devices {

namespace {
const PcieCosts& checked(const PcieCosts& c) {
    if (!(c.transfer_rate > 0) || c.lanes == 0 || c.data_bits == 0 || c.encoded_bits < c.data_bits || c.max_payload == 0)
        throw std::invalid_argument("PcieLink: inconsistent [pcie] figures");
    return c;
}
} // namespace

PcieLink::PcieLink(const PcieCosts& c)
    : c_(checked(c)), upstream_(c.transfer_rate * c.lanes * c.data_bits / c.encoded_bits / 8.0) {}

std::uint64_t PcieLink::write_wire_bytes(std::uint64_t payload) const {
    const std::uint64_t tlps = std::max<std::uint64_t>(1, (payload + c_.max_payload - 1) / c_.max_payload);
    return payload + tlps * c_.tlp_overhead;
}

std::uint64_t PcieLink::rx_frame_wire_bytes(std::uint32_t len) const {
    return write_wire_bytes(len) + write_wire_bytes(c_.rx_descriptor_bytes) +
           static_cast<std::uint64_t>(std::llround(c_.rx_dllps_per_frame * c_.dllp_bytes));
}

} // namespace kdsim::devices
