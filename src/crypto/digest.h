// Message-digest wrapper for kdsim: names the hash algorithms the simulated
// kernel uses (SHA-1, SHA-256, SHA-512), gives their output and block sizes,
// and computes real digests through OpenSSL libcrypto's EVP interface, either
// streamed through a Digest context or in one shot. No hash is implemented
// here; every byte is hashed by OpenSSL. OpenSSL failures surface as
// std::runtime_error carrying OpenSSL's own error text.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

struct evp_md_ctx_st;

namespace kdsim::crypto {

enum class HashAlg { SHA1, SHA256, SHA512 };

// Lower-case kernel-style names: "sha1", "sha256", "sha512".
std::string_view to_string(HashAlg alg) noexcept;
// Accepts exactly the names produced by to_string; anything else is nullopt.
std::optional<HashAlg> hash_alg_from_string(std::string_view name) noexcept;

// Output length in bytes (20, 32, 64).
std::size_t digest_size(HashAlg alg) noexcept;
// Compression-function input block in bytes (64, 64, 128).
std::size_t block_size(HashAlg alg) noexcept;

class Digest {
public:
    explicit Digest(HashAlg alg);
    ~Digest();

    Digest(const Digest&) = delete;
    Digest& operator=(const Digest&) = delete;
    // A moved-from Digest holds no context: it can be destroyed, assigned
    // to, or brought back with reset(); update()/final() throw logic_error.
    Digest(Digest&& other) noexcept;
    Digest& operator=(Digest&& other) noexcept;

    HashAlg alg() const noexcept { return alg_; }

    void update(std::span<const std::uint8_t> data);
    // Finishes the hash. Further update()/final() calls require reset() first
    // and throw std::logic_error otherwise.
    std::vector<std::uint8_t> final();
    // Starts a fresh hash of the same algorithm; valid at any time,
    // including after final() and on a moved-from object.
    void reset();

private:
    HashAlg alg_;
    evp_md_ctx_st* ctx_ = nullptr;
    bool finalized_ = false;
};

std::vector<std::uint8_t> digest(HashAlg alg, std::span<const std::uint8_t> data);

// Lower-case hexadecimal, two characters per byte, no separators.
std::string to_hex(std::span<const std::uint8_t> bytes);

}  // namespace kdsim::crypto
