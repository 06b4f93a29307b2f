#include "crypto/cipher_costs.h"

#include "engine/enum_names.h"

namespace kdsim::crypto {

namespace {
constexpr engine::EnumNames<CipherPrim, CIPHER_PRIMS> PRIM_NAMES{{
    "chacha20",       "poly1305",       "chacha20-poly1305", "aes128-ctr",     "aes256-ctr",
    "ghash",          "aes128-gcm",     "aes256-gcm",        "aes128-cbc-enc", "aes128-cbc-dec",
    "aes256-cbc-enc", "aes256-cbc-dec", "aes128-xts",        "aes256-xts"}};
constexpr engine::EnumNames<CipherImpl, CIPHER_IMPLS> IMPL_NAMES{{
    "generic", "arm", "arm64", "neon", "bsaes", "ce", "ssse3", "avx2", "avx512", "aesni", "vaes"}};
} // namespace

std::string_view to_string(CipherPrim p) { return PRIM_NAMES(p); }
std::optional<CipherPrim> cipher_prim_from_string(std::string_view s) { return PRIM_NAMES.parse(s); }
std::string_view to_string(CipherImpl i) { return IMPL_NAMES(i); }
std::optional<CipherImpl> cipher_impl_from_string(std::string_view s) { return IMPL_NAMES.parse(s); }
bool uses_simd(CipherImpl i) {
    return i != CipherImpl::GENERIC && i != CipherImpl::ARM && i != CipherImpl::ARM64;
}

} // namespace kdsim::crypto
