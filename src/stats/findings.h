// Typed findings: an invariant the run must never violate, caught where it happens and pushed as
// a record (kind, CPU, time, culprit, victim, where) into its machine's log. The verdict of a run
// (exit status 1) comes from these records, never from matching names or texts.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace kdsim::stats {

enum class FindingKind : std::uint8_t {
    SIMD_CLOBBER,    // a context's live SIMD registers were overwritten by another
    STALE_DMA_READ,  // the CPU read buffer lines the device wrote after their last invalidation
    AUTH_FAILURE,    // a tunnel packet failed authentication and was dropped
    DIGEST_MISMATCH, // a computed digest did not verify
    LOST_DATA,       // a packet decrypted and authenticated, but not to what was sent
};
inline constexpr std::size_t FINDING_KINDS = 5;

// "simd_clobber", "stale_dma_read", "auth_failure", "digest_mismatch", "lost_data".
std::string_view to_string(FindingKind k);
// What a count of them means, for the verdict line: "SIMD register clobber(s): ...".
std::string_view describe(FindingKind k);

struct Finding {
    FindingKind kind = FindingKind::SIMD_CLOBBER;
    int cpu = -1;             // where it was caught
    std::uint64_t time_ps = 0;
    std::string culprit;      // who did it ("softirq NET_RX", "device write after the last invalidation")
    std::string victim;       // whose state or data suffered
    std::string where;        // the code point that caught it
};

// One machine's findings: every one counted by kind, the first MAX_KEPT of each kind kept.
class Findings {
public:
    static constexpr std::size_t MAX_KEPT = 16;

    void report(Finding f);
    std::uint64_t count(FindingKind k) const { return counts_[static_cast<std::size_t>(k)]; }
    // The kept records, in the order they were reported.
    const std::vector<Finding>& kept() const { return kept_; }

private:
    std::array<std::uint64_t, FINDING_KINDS> counts_{};
    std::vector<Finding> kept_;
};

} // namespace kdsim::stats
