#include "stats/findings.h"

namespace kdsim::stats {

std::string_view to_string(FindingKind k) {
    switch (k) {
    case FindingKind::SIMD_CLOBBER: return "simd_clobber";
    case FindingKind::STALE_DMA_READ: return "stale_dma_read";
    case FindingKind::AUTH_FAILURE: return "auth_failure";
    case FindingKind::DIGEST_MISMATCH: return "digest_mismatch";
    case FindingKind::LOST_DATA: return "lost_data";
    }
    return "?";
}

std::string_view describe(FindingKind k) {
    switch (k) {
    case FindingKind::SIMD_CLOBBER: return "SIMD register clobber(s): live registers of one context were overwritten by another";
    case FindingKind::STALE_DMA_READ:
        return "stale DMA read(s): the CPU read buffer lines the device wrote after their last invalidation";
    case FindingKind::AUTH_FAILURE: return "tunnel packet(s) failed authentication and were dropped";
    case FindingKind::DIGEST_MISMATCH: return "digest(s) did not verify";
    case FindingKind::LOST_DATA: return "decrypted packet(s) did not match what was sent";
    }
    return "?";
}

void Findings::report(Finding f) {
    const std::size_t k = static_cast<std::size_t>(f.kind);
    if (counts_[k]++ < MAX_KEPT) kept_.push_back(std::move(f));
}

} // namespace kdsim::stats
