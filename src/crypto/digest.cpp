// OpenSSL-backed implementation of the kdsim::crypto digest API declared in
// digest.h. It maps HashAlg to OpenSSL's EVP_MD objects, owns one EVP_MD_CTX
// per Digest, and turns every failed EVP call into a std::runtime_error whose
// message is the drained OpenSSL error queue.
#include "crypto/digest.h"
#include "crypto/openssl_error.h"

#include <openssl/evp.h>

#include <stdexcept>
#include <utility>

namespace kdsim::crypto {
namespace {

using detail::throw_openssl_error;

const EVP_MD* evp_md(HashAlg alg) {
    switch (alg) {
        case HashAlg::SHA1: return EVP_sha1();
        case HashAlg::SHA256: return EVP_sha256();
        case HashAlg::SHA512: return EVP_sha512();
    }
    throw std::invalid_argument("kdsim::crypto: unknown HashAlg");
}

}  // namespace

std::string_view to_string(HashAlg alg) noexcept {
    switch (alg) {
        case HashAlg::SHA1: return "sha1";
        case HashAlg::SHA256: return "sha256";
        case HashAlg::SHA512: return "sha512";
    }
    return "unknown";
}

std::optional<HashAlg> hash_alg_from_string(std::string_view name) noexcept {
    for (HashAlg alg : {HashAlg::SHA1, HashAlg::SHA256, HashAlg::SHA512}) {
        if (name == to_string(alg)) return alg;
    }
    return std::nullopt;
}

std::size_t digest_size(HashAlg alg) noexcept {
    switch (alg) {
        case HashAlg::SHA1: return 20;
        case HashAlg::SHA256: return 32;
        case HashAlg::SHA512: return 64;
    }
    return 0;
}

std::size_t block_size(HashAlg alg) noexcept {
    switch (alg) {
        case HashAlg::SHA1: return 64;
        case HashAlg::SHA256: return 64;
        case HashAlg::SHA512: return 128;
    }
    return 0;
}

Digest::Digest(HashAlg alg) : alg_(alg) { reset(); }

Digest::~Digest() { EVP_MD_CTX_free(ctx_); }

Digest::Digest(Digest&& other) noexcept
    : alg_(other.alg_),
      ctx_(std::exchange(other.ctx_, nullptr)),
      finalized_(other.finalized_) {}

Digest& Digest::operator=(Digest&& other) noexcept {
    if (this != &other) {
        EVP_MD_CTX_free(ctx_);
        alg_ = other.alg_;
        ctx_ = std::exchange(other.ctx_, nullptr);
        finalized_ = other.finalized_;
    }
    return *this;
}

void Digest::update(std::span<const std::uint8_t> data) {
    if (ctx_ == nullptr) throw std::logic_error("kdsim::crypto::Digest::update on a moved-from Digest");
    if (finalized_) throw std::logic_error("kdsim::crypto::Digest::update after final() without reset()");
    if (EVP_DigestUpdate(ctx_, data.data(), data.size()) != 1) throw_openssl_error("EVP_DigestUpdate");
}

std::vector<std::uint8_t> Digest::final() {
    if (ctx_ == nullptr) throw std::logic_error("kdsim::crypto::Digest::final on a moved-from Digest");
    if (finalized_) throw std::logic_error("kdsim::crypto::Digest::final called twice without reset()");
    std::vector<std::uint8_t> out(EVP_MAX_MD_SIZE);
    unsigned int len = 0;
    if (EVP_DigestFinal_ex(ctx_, out.data(), &len) != 1) throw_openssl_error("EVP_DigestFinal_ex");
    finalized_ = true;
    out.resize(len);
    return out;
}

void Digest::reset() {
    if (ctx_ == nullptr) {
        ctx_ = EVP_MD_CTX_new();
        if (ctx_ == nullptr) throw_openssl_error("EVP_MD_CTX_new");
    }
    if (EVP_DigestInit_ex(ctx_, evp_md(alg_), nullptr) != 1) throw_openssl_error("EVP_DigestInit_ex");
    finalized_ = false;
}

std::vector<std::uint8_t> digest(HashAlg alg, std::span<const std::uint8_t> data) {
    std::vector<std::uint8_t> out(EVP_MAX_MD_SIZE);
    unsigned int len = 0;
    if (EVP_Digest(data.data(), data.size(), out.data(), &len, evp_md(alg), nullptr) != 1) {
        throw_openssl_error("EVP_Digest");
    }
    out.resize(len);
    return out;
}

std::string to_hex(std::span<const std::uint8_t> bytes) {
    static constexpr char kDigits[] = "0123456789abcdef";
    std::string out;
    out.reserve(bytes.size() * 2);
    for (std::uint8_t b : bytes) {
        out.push_back(kDigits[b >> 4]);
        out.push_back(kDigits[b & 0x0f]);
    }
    return out;
}

}  // namespace kdsim::crypto
