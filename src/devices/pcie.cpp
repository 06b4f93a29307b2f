#include "devices/pcie.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace kdsim::devices {

PcieLink::PcieLink(const PcieCosts& c) : c_(c) {
    if (!(c.transfer_rate > 0) || c.lanes == 0 || c.data_bits == 0 || c.encoded_bits < c.data_bits || c.max_payload == 0)
        throw std::invalid_argument("PcieLink: inconsistent [pcie] figures");
    bytes_per_s_ = c.transfer_rate * c.lanes * c.data_bits / c.encoded_bits / 8.0;
}

std::uint64_t PcieLink::write_wire_bytes(std::uint64_t payload) const {
    const std::uint64_t tlps = std::max<std::uint64_t>(1, (payload + c_.max_payload - 1) / c_.max_payload);
    return payload + tlps * c_.tlp_overhead;
}

std::uint64_t PcieLink::rx_frame_wire_bytes(std::uint32_t len) const {
    return write_wire_bytes(len) + write_wire_bytes(c_.rx_descriptor_bytes) +
           static_cast<std::uint64_t>(std::llround(c_.rx_dllps_per_frame * c_.dllp_bytes));
}

engine::Tick PcieLink::post(engine::Tick now, std::uint64_t wire_bytes) {
    const auto t = static_cast<engine::Tick>(std::ceil(static_cast<double>(wire_bytes) * 1e12 / bytes_per_s_));
    const engine::Tick start = std::max(now, free_at_);
    free_at_ = start + t;
    busy_ += t;
    wire_bytes_ += wire_bytes;
    return free_at_;
}

} // namespace kdsim::devices
