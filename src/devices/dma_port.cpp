#include "devices/dma_port.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace kdsim::devices {

DmaPort::DmaPort(double bytes_per_s) : bytes_per_s_(bytes_per_s) {
    if (!(bytes_per_s > 0)) throw std::invalid_argument("DmaPort: a port that carries nothing");
}

// The time of `bytes` at the port's rate, rounded up to the picosecond.
engine::Tick DmaPort::post(engine::Tick now, std::uint64_t bytes) {
    const auto t = static_cast<engine::Tick>(std::ceil(static_cast<double>(bytes) * 1e12 / bytes_per_s_));
    const engine::Tick start = std::max(now, free_at_);
    free_at_ = start + t;
    busy_ += t;
    bytes_ += bytes;
    return free_at_;
}

} // namespace kdsim::devices
