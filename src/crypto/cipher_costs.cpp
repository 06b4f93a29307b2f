#include "crypto/cipher_costs.h"

#include "engine/enum_names.h"

#include <algorithm>

namespace kdsim::crypto {

namespace {
constexpr engine::EnumNames<CipherPrim, CIPHER_PRIMS> PRIM_NAMES{{
    "chacha20",       "poly1305",       "chacha20-poly1305", "aes128-ctr",     "aes256-ctr",
    "ghash",          "aes128-gcm",     "aes256-gcm",        "aes128-cbc-enc", "aes128-cbc-dec",
    "aes256-cbc-enc", "aes256-cbc-dec", "aes128-xts",        "aes256-xts"}};
constexpr engine::EnumNames<CipherImpl, CIPHER_IMPLS> IMPL_NAMES{{
    "generic", "arm", "arm64", "neon", "bsaes", "ce", "ssse3", "avx2", "avx512", "aesni", "vaes", "avx"}};
} // namespace

std::string_view to_string(CipherPrim p) { return PRIM_NAMES(p); }
std::optional<CipherPrim> cipher_prim_from_string(std::string_view s) { return PRIM_NAMES.parse(s); }
std::string_view to_string(CipherImpl i) { return IMPL_NAMES(i); }
std::optional<CipherImpl> cipher_impl_from_string(std::string_view s) { return IMPL_NAMES.parse(s); }
bool uses_simd(CipherImpl i) {
    return i != CipherImpl::GENERIC && i != CipherImpl::ARM && i != CipherImpl::ARM64;
}

engine::Cycles CipherCostTable::call_cycles(CipherPrim p, CipherImpl i, std::uint64_t len) const {
    const CipherCost& c = *get(p, i);
    const std::vector<CostPoint>& pts = curve(p, i);
    if (pts.empty()) return c.cycles_per_call + c.bytes(0, len);
    double y = 0;
    if (len <= pts.front().bytes) {
        y = pts.front().cycles - c.cycles_per_byte * static_cast<double>(pts.front().bytes - len);
    } else if (len >= pts.back().bytes) {
        y = pts.back().cycles + c.cycles_per_byte * static_cast<double>(len - pts.back().bytes);
    } else {
        const auto hi = std::upper_bound(pts.begin(), pts.end(), len,
                                         [](std::uint64_t n, const CostPoint& q) { return n < q.bytes; });
        const CostPoint& a = *(hi - 1);
        const CostPoint& b = *hi;
        y = a.cycles + (b.cycles - a.cycles) * static_cast<double>(len - a.bytes) / static_cast<double>(b.bytes - a.bytes);
    }
    return static_cast<engine::Cycles>(std::llround(std::max(0.0, y)));
}

engine::Cycles CipherCostTable::part_cycles(CipherPrim p, CipherImpl i, std::uint64_t len, std::uint64_t from,
                                            std::uint64_t to) const {
    const CipherCost& c = *get(p, i);
    if (curve(p, i).empty()) return (from == 0 ? c.cycles_per_call : 0) + c.bytes(from, to);
    if (len == 0) return from == 0 ? call_cycles(p, i, 0) : 0;
    const double whole = static_cast<double>(call_cycles(p, i, len));
    auto upto = [&](std::uint64_t n) {
        return std::llround(whole * static_cast<double>(n) / static_cast<double>(len));
    };
    return static_cast<engine::Cycles>(upto(to) - upto(from));
}

} // namespace kdsim::crypto
