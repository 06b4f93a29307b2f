// Authenticated-encryption (AEAD) wrapper for kdsim: names the AEAD
// algorithms the simulated kernel uses (ChaCha20-Poly1305, AES-128-GCM,
// AES-256-GCM), gives their key, nonce and tag sizes, and seals/opens real
// messages in one shot through OpenSSL libcrypto's EVP interface. No cipher
// is implemented here; every byte is encrypted and authenticated by OpenSSL.
// Key or nonce length mismatches throw std::invalid_argument; a message that
// fails authentication is reported as std::nullopt, never as an exception;
// other OpenSSL failures surface as std::runtime_error carrying OpenSSL's text.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

namespace kdsim::crypto {

enum class AeadAlg { CHACHA20_POLY1305, AES_128_GCM, AES_256_GCM };

// Lower-case kernel-style names: "chacha20-poly1305", "aes-128-gcm", "aes-256-gcm".
std::string_view to_string(AeadAlg alg) noexcept;
// Accepts exactly the names produced by to_string; anything else is nullopt.
std::optional<AeadAlg> aead_alg_from_string(std::string_view name) noexcept;

// Key length in bytes (32, 16, 32).
std::size_t key_size(AeadAlg alg) noexcept;
// Nonce length in bytes: 12 for every supported algorithm.
std::size_t nonce_size(AeadAlg alg) noexcept;
// Authentication tag length in bytes: 16 for every supported algorithm.
inline constexpr std::size_t tag_size = 16;

// seal: returns ciphertext || tag (plaintext.size() + tag_size bytes).
std::vector<std::uint8_t> aead_seal(AeadAlg alg, std::span<const std::uint8_t> key,
                                    std::span<const std::uint8_t> nonce, std::span<const std::uint8_t> aad,
                                    std::span<const std::uint8_t> plaintext);

// open: returns the plaintext, or std::nullopt when authentication fails
// (including input shorter than tag_size); no exception for a bad tag.
std::optional<std::vector<std::uint8_t>> aead_open(AeadAlg alg, std::span<const std::uint8_t> key,
                                                   std::span<const std::uint8_t> nonce,
                                                   std::span<const std::uint8_t> aad,
                                                   std::span<const std::uint8_t> ciphertext_and_tag);

// One key kept ready for many messages: the cipher contexts (and AES key schedule) are set up
// once, each message only sets its nonce, and results go into caller-owned buffers, so that a
// stream of packets allocates nothing per packet once the buffers have grown. Same results as
// aead_seal / aead_open.
class AeadKey {
public:
    AeadKey(AeadAlg alg, std::span<const std::uint8_t> key);
    ~AeadKey();
    AeadKey(const AeadKey&) = delete;
    AeadKey& operator=(const AeadKey&) = delete;
    AeadAlg alg() const noexcept { return alg_; }
    // out = ciphertext || tag.
    void seal(std::span<const std::uint8_t> nonce, std::span<const std::uint8_t> aad,
              std::span<const std::uint8_t> plaintext, std::vector<std::uint8_t>& out);
    // out = plaintext when authentic (returns true); false otherwise (out is then wiped).
    bool open(std::span<const std::uint8_t> nonce, std::span<const std::uint8_t> aad,
              std::span<const std::uint8_t> ciphertext_and_tag, std::vector<std::uint8_t>& out);

private:
    AeadAlg alg_;
    void* enc_; // EVP_CIPHER_CTX
    void* dec_;
};

}  // namespace kdsim::crypto
