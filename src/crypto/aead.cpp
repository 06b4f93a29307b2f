// OpenSSL-backed implementation of the kdsim::crypto AEAD API declared in
// aead.h. It maps AeadAlg to OpenSSL's EVP_CIPHER objects, owns one
// EVP_CIPHER_CTX per call through a unique_ptr, feeds AAD and data in
// int-sized chunks, and turns every failed EVP call into a std::runtime_error
// whose message is the drained OpenSSL error queue -- except the final tag
// check of aead_open, whose failure is the expected "not authentic" answer.
#include "crypto/aead.h"
#include "crypto/openssl_error.h"

#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>

#include <algorithm>
#include <array>
#include <memory>
#include <stdexcept>
#include <string>

namespace kdsim::crypto {
namespace {

using detail::throw_openssl_error;

constexpr AeadAlg kAllAlgs[] = {AeadAlg::CHACHA20_POLY1305, AeadAlg::AES_128_GCM, AeadAlg::AES_256_GCM};

// Largest chunk handed to a single EVP_*Update call (its length is an int).
constexpr std::size_t kMaxChunk = std::size_t{1} << 30;

const EVP_CIPHER* evp_cipher(AeadAlg alg) {
    switch (alg) {
        case AeadAlg::CHACHA20_POLY1305: return EVP_chacha20_poly1305();
        case AeadAlg::AES_128_GCM: return EVP_aes_128_gcm();
        case AeadAlg::AES_256_GCM: return EVP_aes_256_gcm();
    }
    throw std::invalid_argument("kdsim::crypto: unknown AeadAlg");
}

struct CipherCtxFree {
    void operator()(EVP_CIPHER_CTX* ctx) const noexcept { EVP_CIPHER_CTX_free(ctx); }
};
using CipherCtx = std::unique_ptr<EVP_CIPHER_CTX, CipherCtxFree>;

void check_sizes(AeadAlg alg, std::span<const std::uint8_t> key, std::span<const std::uint8_t> nonce) {
    if (key.size() != key_size(alg)) {
        throw std::invalid_argument("kdsim::crypto: " + std::string(to_string(alg)) + " needs a " +
                                    std::to_string(key_size(alg)) + "-byte key, got " +
                                    std::to_string(key.size()));
    }
    if (nonce.size() != nonce_size(alg)) {
        throw std::invalid_argument("kdsim::crypto: " + std::string(to_string(alg)) + " needs a " +
                                    std::to_string(nonce_size(alg)) + "-byte nonce, got " +
                                    std::to_string(nonce.size()));
    }
}

// Creates a context keyed for encryption (enc=1) or decryption (enc=0).
CipherCtx make_ctx(AeadAlg alg, int enc, std::span<const std::uint8_t> key, std::span<const std::uint8_t> nonce) {
    CipherCtx ctx(EVP_CIPHER_CTX_new());
    if (!ctx) throw_openssl_error("EVP_CIPHER_CTX_new");
    if (EVP_CipherInit_ex(ctx.get(), evp_cipher(alg), nullptr, nullptr, nullptr, enc) != 1) {
        throw_openssl_error("EVP_CipherInit_ex");
    }
    if (EVP_CIPHER_CTX_ctrl(ctx.get(), EVP_CTRL_AEAD_SET_IVLEN, static_cast<int>(nonce.size()), nullptr) != 1) {
        throw_openssl_error("EVP_CTRL_AEAD_SET_IVLEN");
    }
    if (EVP_CipherInit_ex(ctx.get(), nullptr, nullptr, key.data(), nonce.data(), enc) != 1) {
        throw_openssl_error("EVP_CipherInit_ex (key, nonce)");
    }
    return ctx;
}

// Feeds AAD (out == nullptr) or data through EVP_CipherUpdate; returns bytes written.
std::size_t update(EVP_CIPHER_CTX* ctx, std::uint8_t* out, std::span<const std::uint8_t> in) {
    std::size_t written = 0;
    for (std::size_t off = 0; off < in.size(); off += kMaxChunk) {
        const std::size_t n = std::min(kMaxChunk, in.size() - off);
        int len = 0;
        if (EVP_CipherUpdate(ctx, out ? out + written : nullptr, &len, in.data() + off, static_cast<int>(n)) != 1) {
            throw_openssl_error(out ? "EVP_CipherUpdate" : "EVP_CipherUpdate (AAD)");
        }
        written += static_cast<std::size_t>(len);
    }
    return written;
}

}  // namespace

std::string_view to_string(AeadAlg alg) noexcept {
    switch (alg) {
        case AeadAlg::CHACHA20_POLY1305: return "chacha20-poly1305";
        case AeadAlg::AES_128_GCM: return "aes-128-gcm";
        case AeadAlg::AES_256_GCM: return "aes-256-gcm";
    }
    return "unknown";
}

std::optional<AeadAlg> aead_alg_from_string(std::string_view name) noexcept {
    for (AeadAlg alg : kAllAlgs) {
        if (name == to_string(alg)) return alg;
    }
    return std::nullopt;
}

std::size_t key_size(AeadAlg alg) noexcept {
    switch (alg) {
        case AeadAlg::CHACHA20_POLY1305: return 32;
        case AeadAlg::AES_128_GCM: return 16;
        case AeadAlg::AES_256_GCM: return 32;
    }
    return 0;
}

std::size_t nonce_size(AeadAlg alg) noexcept {
    switch (alg) {
        case AeadAlg::CHACHA20_POLY1305:
        case AeadAlg::AES_128_GCM:
        case AeadAlg::AES_256_GCM: return 12;
    }
    return 0;
}

AeadKey::AeadKey(AeadAlg alg, std::span<const std::uint8_t> key) : alg_(alg), enc_(nullptr), dec_(nullptr) {
    const std::array<std::uint8_t, 12> zero{};
    check_sizes(alg, key, zero);
    enc_ = make_ctx(alg, 1, key, zero).release();
    try {
        dec_ = make_ctx(alg, 0, key, zero).release();
    } catch (...) {
        EVP_CIPHER_CTX_free(static_cast<EVP_CIPHER_CTX*>(enc_));
        throw;
    }
}

AeadKey::~AeadKey() {
    EVP_CIPHER_CTX_free(static_cast<EVP_CIPHER_CTX*>(enc_));
    EVP_CIPHER_CTX_free(static_cast<EVP_CIPHER_CTX*>(dec_));
}

void AeadKey::seal(std::span<const std::uint8_t> nonce, std::span<const std::uint8_t> aad,
                   std::span<const std::uint8_t> plaintext, std::vector<std::uint8_t>& out) {
    if (nonce.size() != nonce_size(alg_)) throw std::invalid_argument("kdsim::crypto: AeadKey::seal: wrong nonce size");
    auto* ctx = static_cast<EVP_CIPHER_CTX*>(enc_);
    if (EVP_CipherInit_ex(ctx, nullptr, nullptr, nullptr, nonce.data(), 1) != 1) throw_openssl_error("EVP_CipherInit_ex (nonce)");
    update(ctx, nullptr, aad);
    out.resize(plaintext.size() + tag_size);
    std::size_t len = update(ctx, out.data(), plaintext);
    int final_len = 0;
    if (EVP_EncryptFinal_ex(ctx, out.data() + len, &final_len) != 1) throw_openssl_error("EVP_EncryptFinal_ex");
    len += static_cast<std::size_t>(final_len);
    if (len != plaintext.size()) throw std::runtime_error("kdsim::crypto: AEAD ciphertext length mismatch");
    if (EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_AEAD_GET_TAG, static_cast<int>(tag_size), out.data() + len) != 1)
        throw_openssl_error("EVP_CTRL_AEAD_GET_TAG");
}

bool AeadKey::open(std::span<const std::uint8_t> nonce, std::span<const std::uint8_t> aad,
                   std::span<const std::uint8_t> ciphertext_and_tag, std::vector<std::uint8_t>& out) {
    if (nonce.size() != nonce_size(alg_)) throw std::invalid_argument("kdsim::crypto: AeadKey::open: wrong nonce size");
    out.clear();
    if (ciphertext_and_tag.size() < tag_size) return false;
    const auto ciphertext = ciphertext_and_tag.first(ciphertext_and_tag.size() - tag_size);
    std::array<std::uint8_t, tag_size> tag{};
    std::copy_n(ciphertext_and_tag.end() - tag_size, tag_size, tag.begin());
    auto* ctx = static_cast<EVP_CIPHER_CTX*>(dec_);
    if (EVP_CipherInit_ex(ctx, nullptr, nullptr, nullptr, nonce.data(), 0) != 1) throw_openssl_error("EVP_CipherInit_ex (nonce)");
    update(ctx, nullptr, aad);
    out.resize(ciphertext.size() + 1); // +1: never hand OpenSSL a null buffer
    std::size_t len = update(ctx, out.data(), ciphertext);
    if (EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_AEAD_SET_TAG, static_cast<int>(tag_size), tag.data()) != 1)
        throw_openssl_error("EVP_CTRL_AEAD_SET_TAG");
    int final_len = 0;
    if (EVP_DecryptFinal_ex(ctx, out.data() + len, &final_len) != 1) {
        OPENSSL_cleanse(out.data(), out.size());
        ERR_clear_error();
        out.clear();
        return false;
    }
    out.resize(len + static_cast<std::size_t>(final_len));
    return true;
}

std::vector<std::uint8_t> aead_seal(AeadAlg alg, std::span<const std::uint8_t> key,
                                    std::span<const std::uint8_t> nonce, std::span<const std::uint8_t> aad,
                                    std::span<const std::uint8_t> plaintext) {
    check_sizes(alg, key, nonce);
    CipherCtx ctx = make_ctx(alg, 1, key, nonce);
    update(ctx.get(), nullptr, aad);

    // A stream-mode AEAD writes exactly as many bytes as it reads.
    std::vector<std::uint8_t> out(plaintext.size() + tag_size);
    std::size_t len = update(ctx.get(), out.data(), plaintext);
    int final_len = 0;
    if (EVP_EncryptFinal_ex(ctx.get(), out.data() + len, &final_len) != 1) throw_openssl_error("EVP_EncryptFinal_ex");
    len += static_cast<std::size_t>(final_len);
    if (len != plaintext.size()) throw std::runtime_error("kdsim::crypto: AEAD ciphertext length mismatch");

    if (EVP_CIPHER_CTX_ctrl(ctx.get(), EVP_CTRL_AEAD_GET_TAG, static_cast<int>(tag_size), out.data() + len) != 1) {
        throw_openssl_error("EVP_CTRL_AEAD_GET_TAG");
    }
    return out;
}

std::optional<std::vector<std::uint8_t>> aead_open(AeadAlg alg, std::span<const std::uint8_t> key,
                                                   std::span<const std::uint8_t> nonce,
                                                   std::span<const std::uint8_t> aad,
                                                   std::span<const std::uint8_t> ciphertext_and_tag) {
    check_sizes(alg, key, nonce);
    if (ciphertext_and_tag.size() < tag_size) return std::nullopt;
    const auto ciphertext = ciphertext_and_tag.first(ciphertext_and_tag.size() - tag_size);
    std::array<std::uint8_t, tag_size> tag{};
    std::copy_n(ciphertext_and_tag.end() - tag_size, tag_size, tag.begin());

    CipherCtx ctx = make_ctx(alg, 0, key, nonce);
    update(ctx.get(), nullptr, aad);

    std::vector<std::uint8_t> out(ciphertext.size() + 1);  // +1: never hand OpenSSL a null buffer
    std::size_t len = update(ctx.get(), out.data(), ciphertext);
    if (EVP_CIPHER_CTX_ctrl(ctx.get(), EVP_CTRL_AEAD_SET_TAG, static_cast<int>(tag_size), tag.data()) != 1) {
        throw_openssl_error("EVP_CTRL_AEAD_SET_TAG");
    }
    int final_len = 0;
    if (EVP_DecryptFinal_ex(ctx.get(), out.data() + len, &final_len) != 1) {
        // Authentication failed: wipe the unauthenticated plaintext and drop
        // whatever OpenSSL queued so it cannot leak into a later error message.
        OPENSSL_cleanse(out.data(), out.size());
        ERR_clear_error();
        return std::nullopt;
    }
    len += static_cast<std::size_t>(final_len);
    out.resize(len);
    return out;
}

}  // namespace kdsim::crypto
