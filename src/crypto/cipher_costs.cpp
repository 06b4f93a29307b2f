#include "crypto/cipher_costs.h"

namespace kdsim::crypto {

namespace {
constexpr std::array<std::string_view, CIPHER_PRIMS> PRIM_NAMES = {
    "chacha20",       "poly1305",       "chacha20-poly1305", "aes128-ctr",     "aes256-ctr",
    "ghash",          "aes128-gcm",     "aes256-gcm",        "aes128-cbc-enc", "aes128-cbc-dec",
    "aes256-cbc-enc", "aes256-cbc-dec", "aes128-xts",        "aes256-xts"};
constexpr std::array<std::string_view, CIPHER_IMPLS> IMPL_NAMES = {
    "generic", "arm", "arm64", "neon", "bsaes", "ce", "ssse3", "avx2", "avx512", "aesni", "vaes"};
} // namespace

std::string_view to_string(CipherPrim p) { return PRIM_NAMES[static_cast<std::size_t>(p)]; }
std::optional<CipherPrim> cipher_prim_from_string(std::string_view s) {
    for (std::size_t i = 0; i < PRIM_NAMES.size(); ++i)
        if (PRIM_NAMES[i] == s) return static_cast<CipherPrim>(i);
    return std::nullopt;
}
std::string_view to_string(CipherImpl i) { return IMPL_NAMES[static_cast<std::size_t>(i)]; }
std::optional<CipherImpl> cipher_impl_from_string(std::string_view s) {
    for (std::size_t i = 0; i < IMPL_NAMES.size(); ++i)
        if (IMPL_NAMES[i] == s) return static_cast<CipherImpl>(i);
    return std::nullopt;
}
bool uses_simd(CipherImpl i) {
    return i != CipherImpl::GENERIC && i != CipherImpl::ARM && i != CipherImpl::ARM64;
}

} // namespace kdsim::crypto
