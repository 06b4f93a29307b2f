// Cipher/AEAD primitives of kdsim calibrate: OpenSSL 3.0's x86-64 dispatch reproduced from its
// sources (for the masks and for "unavailable"), and the child-process measurement through EVP.
#include "calibrate/ciphers.h"
#include "calibrate/tsc.h"

#include <fmt/format.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>

#include <algorithm>
#include <cmath>
#include <set>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <stdexcept>

namespace kdsim::calibrate {

const char* const CIPHER_PRIMS[6] = {"chacha20", "poly1305", "chacha20-poly1305", "aes128-ctr", "aes128-gcm", "aes256-gcm"};
const char* const CIPHER_IMPLS[7] = {"generic", "ssse3", "avx", "avx2", "avx512", "aesni", "vaes"};

bool is_cipher_prim(const std::string& name) {
    return std::find_if(std::begin(CIPHER_PRIMS), std::end(CIPHER_PRIMS), [&](const char* p) { return name == p; }) !=
           std::end(CIPHER_PRIMS);
}
bool is_cipher_impl(const std::string& name) {
    return std::find_if(std::begin(CIPHER_IMPLS), std::end(CIPHER_IMPLS), [&](const char* p) { return name == p; }) !=
           std::end(CIPHER_IMPLS);
}

namespace {

// Bits of OpenSSL's vectors, named after CPUID (OPENSSL_ia32cap(3)): the first mask word is
// P0 (CPUID.1:EDX) | P1 (CPUID.1:ECX, bit 11 = AMD XOP) << 32, the second P2 (CPUID.7.0:EBX) |
// P3 (CPUID.7.0:ECX) << 32.
constexpr std::uint64_t P1(int bit) { return 1ull << (32 + bit); }
constexpr std::uint64_t P2(int bit) { return 1ull << bit; }
constexpr std::uint64_t P3(int bit) { return 1ull << (32 + bit); }

constexpr std::uint64_t PCLMULQDQ = P1(1), XOP = P1(11), FMA = P1(12), AESNI = P1(25), AVX = P1(28), F16C = P1(29);
constexpr std::uint64_t BMI1 = P2(3), AVX2 = P2(5), BMI2 = P2(8), SHA = P2(29);
constexpr std::uint64_t AVX512 = P2(16) | P2(17) | P2(21) | P2(26) | P2(27) | P2(28) | P2(30) | P2(31); // F DQ IFMA PF ER CD BW VL
constexpr std::uint64_t VAES = P3(9), VPCLMULQDQ = P3(10);

std::string mask_string(std::uint64_t a, std::uint64_t b) {
    char buf[80];
    std::snprintf(buf, sizeof buf, "~0x%llx:~0x%llx", static_cast<unsigned long long>(a),
                  static_cast<unsigned long long>(b));
    return buf;
}

// The path labels' order of "SIMD level", for the AEAD made of two separately dispatched parts.
int level(const std::string& path) {
    static const char* const order[] = {"generic", "ssse3", "avx", "xop", "avx2", "avx512"};
    for (int i = 0; i < 6; ++i)
        if (path == order[i]) return i;
    return -1;
}

std::string chacha20_path(const Ia32Cap& c) {
    // ChaCha20_ctr32: AVX512F, else AVX512VL, then SSSE3 -> (XOP | AVX2 | SSSE3), else integer code.
    if (c.bit(2, 16) || c.bit(2, 31)) return "avx512";
    if (!c.bit(1, 9)) return "generic";
    if (c.bit(1, 11)) return "xop";
    if (c.bit(2, 5)) return "avx2";
    return "ssse3";
}

std::string poly1305_path(const Ia32Cap& c) {
    // poly1305_init: AVX -> blocks/emit_avx; AVX2 -> blocks_avx2; AVX512F+IFMA+VL -> base 2^44
    // (vpmadd52); blocks_avx2 itself branches to blocks_avx512 for >= 512 B when AVX512F is set.
    bool avx = c.bit(1, 28), avx2 = c.bit(2, 5), f = c.bit(2, 16), ifma = c.bit(2, 21), vl = c.bit(2, 31);
    if (f && ifma && vl) return "avx512";
    if (avx2 && f) return "avx512";
    if (avx2) return avx ? "avx2" : "avx2 blocks with the scalar emit (an inconsistent mask)";
    if (avx) return "avx";
    return "generic";
}

std::string aes_ctr_path(const Ia32Cap& c) {
    // AESNI_CAPABLE, else BSAES_CAPABLE (SSSE3) for CTR, else AES_encrypt.
    if (c.bit(1, 25)) return "aesni";
    if (c.bit(1, 9)) return "ssse3";
    return "generic";
}

std::string aes_gcm_path(const Ia32Cap& c) {
    std::string aes = c.bit(1, 25) ? "aesni" : c.bit(1, 9) ? "bsaes" : "table";
    // CRYPTO_gcm128_init: PCLMULQDQ -> (AVX+MOVBE ? gcm_ghash_avx : gcm_ghash_clmul), else 4-bit tables.
    std::string ghash = !c.bit(1, 1) ? "4bit" : (c.bit(1, 28) && c.bit(1, 22)) ? "avx" : "clmul";
    if (aes == "table" && ghash == "4bit") return "generic";
    if (aes == "bsaes" && ghash == "4bit") return "ssse3";
    if (aes == "aesni" && ghash == "clmul") return "aesni";
    // AES_GCM_ASM: aesni_ctr32_encrypt_blocks with gcm_ghash_avx -> the stitched aesni_gcm_encrypt.
    if (aes == "aesni" && ghash == "avx") return "avx";
    return aes + "+" + ghash + "-ghash";
}

} // namespace

std::string cipher_ia32cap_mask(const std::string& impl) {
    const std::uint64_t ABOVE_SSE4 = BMI1 | AVX2 | BMI2 | SHA | AVX512 | VAES | VPCLMULQDQ;
    if (impl == "generic") return ia32cap_mask("generic");
    if (impl == "ssse3") return mask_string(PCLMULQDQ | XOP | FMA | AESNI | AVX | F16C, ABOVE_SSE4);
    if (impl == "aesni") return mask_string(XOP | FMA | AVX | F16C, ABOVE_SSE4);
    if (impl == "avx") return mask_string(XOP, ABOVE_SSE4);
    if (impl == "avx2") return mask_string(XOP, AVX512 | VAES | VPCLMULQDQ);
    if (impl == "vaes") return mask_string(XOP, AVX512);
    if (impl == "avx512") return mask_string(XOP, 0);
    throw std::invalid_argument("unknown cipher implementation '" + impl +
                                "'; expected one of: generic, ssse3, avx, avx2, avx512, aesni, vaes");
}

Ia32Cap openssl_capabilities(const CpuFeatures& cpu) {
    Ia32Cap c;
    const bool intel = cpu.vendor == "GenuineIntel", amd = cpu.vendor == "AuthenticAMD";
    const std::uint32_t sig = cpu.leaf1_eax & 0x0fff0ff0u;
    c.p[0] = cpu.leaf1_edx & 0xbfefffffu; // reserved bits 30 and 20 forced to 0 ...
    if (intel) c.p[0] |= 1u << 30;        // ... bit 30 then marks an Intel CPU
    std::uint32_t ecx = cpu.leaf1_ecx;
    if (intel && (sig == 0x00050670u || sig == 0x00080650u)) ecx &= ~(1u << 26); // Knights: XSAVE cleared
    c.p[1] = (ecx & ~(1u << 11)) | (amd ? (cpu.ext1_ecx & (1u << 11)) : 0u);    // bit 11 = AMD XOP
    c.p[2] = cpu.leaf7_ebx;
    c.p[3] = cpu.leaf7_ecx;
    if (!(c.p[1] & (1u << 26))) c.p[2] &= ~(1u << 19);   // ADX without XSAVE (Knights)
    if (sig == 0x00050650u) c.p[2] &= ~(1u << 16);       // AVX512F suppressed on Skylake-X
    bool osxsave = c.p[1] & (1u << 27);
    bool ymm = osxsave && (cpu.xcr0 & 0x6) == 0x6;
    if (osxsave && (cpu.xcr0 & 0xe6) != 0xe6) c.p[2] &= 0x3fdeffffu; // no ZMM state: AVX512F/BW/VL/IFMA
    if (!ymm) {
        c.p[1] &= 0xefffe7ffu; // AVX, FMA, XOP
        c.p[2] &= 0x3fdeffdfu; // AVX2 and AVX-512
    }
    return c;
}

Ia32Cap apply_ia32cap(Ia32Cap caps, const std::string& value) {
    auto parse = [&](const std::string& s) -> std::uint64_t {
        errno = 0;
        char* end = nullptr;
        unsigned long long v = std::strtoull(s.c_str(), &end, 0);
        if (s.empty() || errno != 0 || !end || *end != 0 || s[0] == '-' || s[0] == '+')
            throw std::invalid_argument("bad OPENSSL_ia32cap value '" + value + "'");
        return v;
    };
    auto colon = value.find(':');
    std::string first = value.substr(0, colon);
    std::uint64_t have = caps.p[0] | static_cast<std::uint64_t>(caps.p[1]) << 32;
    std::uint64_t vec = have;
    if (!first.empty()) {
        if (first[0] == '~') {
            std::uint64_t mask = parse(first.substr(1));
            vec = have & ~mask;
            if (mask & (1u << 24)) vec &= ~(static_cast<std::uint64_t>(1u << 1 | 1u << 11 | 1u << 25 | 1u << 28) << 32);
        } else {
            vec = parse(first);
        }
    }
    caps.p[0] = static_cast<std::uint32_t>(vec) | (1u << 10);
    caps.p[1] = static_cast<std::uint32_t>(vec >> 32);
    if (colon == std::string::npos) {
        caps.p[2] = caps.p[3] = 0;
    } else {
        std::string second = value.substr(colon + 1);
        if (!second.empty() && second[0] == '~') {
            std::uint64_t m = parse(second.substr(1));
            caps.p[2] &= ~static_cast<std::uint32_t>(m);
            caps.p[3] &= ~static_cast<std::uint32_t>(m >> 32);
        } else {
            std::uint64_t v = parse(second);
            caps.p[2] = static_cast<std::uint32_t>(v);
            caps.p[3] = static_cast<std::uint32_t>(v >> 32);
        }
    }
    return caps;
}

std::string openssl_cipher_path(const Ia32Cap& caps, const std::string& prim) {
    if (prim == "chacha20") return chacha20_path(caps);
    if (prim == "poly1305") return poly1305_path(caps);
    if (prim == "chacha20-poly1305") {
        std::string c = chacha20_path(caps), p = poly1305_path(caps);
        if (level(c) < 0 || level(p) < 0) return "chacha20 " + c + " + poly1305 " + p;
        return level(c) >= level(p) ? c : p;
    }
    if (prim == "aes128-ctr") return aes_ctr_path(caps);
    if (prim == "aes128-gcm" || prim == "aes256-gcm") return aes_gcm_path(caps);
    throw std::invalid_argument("unknown cipher primitive '" + prim + "'");
}

std::string describe_cipher_path(const std::string& prim, const std::string& path) {
    if (prim == "chacha20") {
        if (path == "generic") return "ChaCha20_ctr32 integer-register code (chacha-x86_64.pl)";
        if (path == "ssse3") return "SSSE3 code (1x up to 128 B, 2x at 128 B, 4x above)";
        if (path == "avx2") return "AVX2 8x code above 128 B (SSSE3 code up to 128 B)";
        if (path == "avx512") return "AVX-512 code (16x above 512 B with AVX512F, 8x VL variant otherwise)";
        if (path == "xop") return "AMD XOP 4x code";
    } else if (prim == "poly1305") {
        if (path == "generic") return "poly1305_blocks, scalar 64-bit mulq code (poly1305-x86_64.pl)";
        if (path == "avx") return "poly1305_blocks_avx, base 2^26 AVX code for 128 B and more (scalar below)";
        if (path == "avx2") return "poly1305_blocks_avx2 for 128 B and more (scalar below)";
        if (path == "avx512") return "AVX-512 code (base 2^44 vpmadd52 with IFMA, else AVX512F blocks for 512 B and more)";
    } else if (prim == "chacha20-poly1305") {
        if (path == "generic") return "ChaCha20_ctr32 integer code + scalar Poly1305 (two passes; no stitched code in 3.0)";
        if (path == "ssse3") return "SSSE3 ChaCha20 + scalar Poly1305 (OpenSSL has no SSSE3 Poly1305)";
        if (path == "avx") return "SSSE3 ChaCha20 + AVX Poly1305";
        if (path == "avx2") return "AVX2 ChaCha20 + AVX2 Poly1305";
        if (path == "avx512") return "AVX-512 ChaCha20 + AVX-512 Poly1305";
        if (path == "xop") return "XOP ChaCha20 + AVX Poly1305";
    } else if (prim == "aes128-ctr") {
        if (path == "generic") return "AES_encrypt table code per block (aes-x86_64.pl, CRYPTO_ctr128_encrypt)";
        if (path == "ssse3") return "bit-sliced AES (bsaes-x86_64.pl, SSSE3) for 8 blocks and more, AES_encrypt below";
        if (path == "aesni") return "aesni_ctr32_encrypt_blocks (AES-NI, 8 blocks interleaved)";
    } else if (prim == "aes128-gcm" || prim == "aes256-gcm") {
        if (path == "generic") return "AES_encrypt table code + 4-bit table GHASH (gcm_ghash_4bit), integer registers";
        if (path == "ssse3") return "bit-sliced AES CTR (bsaes, SSSE3) + 4-bit table GHASH";
        if (path == "aesni") return "aesni_ctr32_encrypt_blocks + PCLMULQDQ GHASH (gcm_ghash_clmul), not stitched";
        if (path == "avx")
            return "the stitched AES-NI/PCLMULQDQ AVX code (aesni_gcm_encrypt, aesni-gcm-x86_64.pl) for 288 B and more, "
                   "gcm_ghash_avx; it needs AVX+MOVBE, not AVX2";
    }
    return path + " code";
}

std::string forced_cipher_path(const CpuFeatures& cpu, const std::string& prim, const std::string& impl) {
    return openssl_cipher_path(apply_ia32cap(openssl_capabilities(cpu), cipher_ia32cap_mask(impl)), prim);
}

std::optional<std::string> cipher_unavailable(const CpuFeatures& cpu, const std::string& prim, const std::string& impl) {
    if (!is_cipher_prim(prim)) throw std::invalid_argument("unknown cipher primitive '" + prim + "'");
    Ia32Cap all = openssl_capabilities(cpu);
    if (impl == "ssse3" && !all.bit(1, 9)) return "the CPU lacks SSSE3";
    if (impl == "aesni" && !(all.bit(1, 25) && all.bit(1, 1))) return "the CPU lacks AES-NI and/or PCLMULQDQ";
    if (impl == "avx2" && !all.bit(2, 5)) return "the CPU (or the OS, XCR0) lacks AVX2";
    if (impl == "avx512" && !(all.bit(2, 16) || all.bit(2, 31)))
        return "the CPU (or the OS, XCR0, or OpenSSL for Skylake-X's AVX512F) offers no AVX-512";
    if (impl == "vaes" && !(all.bit(3, 9) && all.bit(3, 10) && all.bit(1, 28)))
        return "the CPU (or the OS, XCR0) lacks VAES/VPCLMULQDQ";
    std::string mask = cipher_ia32cap_mask(impl);
    std::string path = openssl_cipher_path(apply_ia32cap(all, mask), prim);
    if (path == impl) return std::nullopt;
    std::string why = "OpenSSL 3.0 has no " + impl + " code for " + prim + " that this CPU runs: with OPENSSL_ia32cap=" +
                      mask + " its dispatch runs the " + path + " path (" + describe_cipher_path(prim, path) + ")";
    if (impl == "vaes") why += "; OpenSSL 3.0 never tests the VAES/VPCLMULQDQ capability bits";
    if (!is_cipher_impl(path)) why += "; that path has no [cipher] implementation name";
    return why;
}

// ---- measurement --------------------------------------------------------------------------------

namespace {

struct CipherFree {
    void operator()(EVP_CIPHER_CTX* c) const noexcept { EVP_CIPHER_CTX_free(c); }
    void operator()(EVP_CIPHER* c) const noexcept { EVP_CIPHER_free(c); }
    void operator()(EVP_MAC_CTX* c) const noexcept { EVP_MAC_CTX_free(c); }
    void operator()(EVP_MAC* c) const noexcept { EVP_MAC_free(c); }
};

// One primitive on a keyed context; call() does one operation as described in ciphers.h.
class CipherBench {
public:
    explicit CipherBench(const std::string& prim) : prim_(prim) {
        for (std::size_t i = 0; i < sizeof key_; ++i) key_[i] = static_cast<unsigned char>(0xa0 + i);
        for (std::size_t i = 0; i < sizeof iv_; ++i) iv_[i] = static_cast<unsigned char>(0x10 + 3 * i);
        if (prim == "poly1305") {
            mac_.reset(EVP_MAC_fetch(nullptr, "POLY1305", nullptr));
            if (!mac_) throw std::runtime_error("OpenSSL has no EVP_MAC POLY1305");
            mctx_.reset(EVP_MAC_CTX_new(mac_.get()));
            if (!mctx_) throw std::runtime_error("EVP_MAC_CTX_new failed");
            return;
        }
        const char* name = prim == "chacha20" ? "ChaCha20" : prim == "chacha20-poly1305" ? "ChaCha20-Poly1305"
                         : prim == "aes128-ctr" ? "AES-128-CTR" : prim == "aes128-gcm" ? "AES-128-GCM"
                         : prim == "aes256-gcm" ? "AES-256-GCM" : nullptr;
        if (!name) throw std::invalid_argument("unknown cipher primitive '" + prim + "'");
        aead_ = prim == "chacha20-poly1305" || prim == "aes128-gcm" || prim == "aes256-gcm";
        cipher_.reset(EVP_CIPHER_fetch(nullptr, name, nullptr));
        if (!cipher_) throw std::runtime_error(std::string("OpenSSL has no cipher ") + name);
        ctx_.reset(EVP_CIPHER_CTX_new());
        if (!ctx_) throw std::runtime_error("EVP_CIPHER_CTX_new failed");
        iv_len_ = static_cast<std::size_t>(EVP_CIPHER_get_iv_length(cipher_.get()));
        if (iv_len_ > sizeof iv_ || static_cast<std::size_t>(EVP_CIPHER_get_key_length(cipher_.get())) > sizeof key_)
            throw std::runtime_error(std::string("unexpected key or IV length of ") + name);
        if (EVP_EncryptInit_ex2(ctx_.get(), cipher_.get(), key_, iv_, nullptr) != 1)
            throw std::runtime_error(std::string("EVP_EncryptInit_ex2 failed for ") + name);
    }

    // Bytes call() writes for `len` input bytes.
    std::size_t out_size(std::size_t len) const { return prim_ == "poly1305" ? 16 : len + (aead_ ? 16 : 0); }

    // One operation over in[0..len) into out; returns a byte of the result (for a data dependency).
    unsigned char call(const unsigned char* in, std::size_t len, unsigned char* out) {
        if (mctx_) {
            std::size_t ol = 0;
            if (EVP_MAC_init(mctx_.get(), key_, 32, nullptr) != 1 || EVP_MAC_update(mctx_.get(), in, len) != 1 ||
                EVP_MAC_final(mctx_.get(), out, &ol, 16) != 1 || ol != 16)
                throw std::runtime_error("OpenSSL Poly1305 failed");
            return out[0];
        }
        int ol = 0, fl = 0;
        if (EVP_EncryptInit_ex2(ctx_.get(), nullptr, nullptr, iv_, nullptr) != 1 ||
            EVP_EncryptUpdate(ctx_.get(), out, &ol, in, static_cast<int>(len)) != 1 ||
            EVP_EncryptFinal_ex(ctx_.get(), out + ol, &fl) != 1)
            throw std::runtime_error("OpenSSL " + prim_ + " encryption failed");
        std::size_t n = static_cast<std::size_t>(ol + fl);
        if (n != len) throw std::runtime_error("OpenSSL " + prim_ + " wrote " + std::to_string(n) + " bytes");
        if (aead_) {
            if (EVP_CIPHER_CTX_ctrl(ctx_.get(), EVP_CTRL_AEAD_GET_TAG, 16, out + n) != 1)
                throw std::runtime_error("OpenSSL " + prim_ + ": reading the tag failed");
            return out[n];
        }
        return len ? out[len - 1] : 0;
    }
    // Changes the next call's nonce (or one-time key) by a byte of the last result.
    void perturb(unsigned char b) {
        if (mctx_) key_[0] ^= b;
        else iv_[iv_len_ - 1] ^= b;
    }

private:
    std::string prim_;
    bool aead_ = false;
    std::size_t iv_len_ = 0;
    unsigned char key_[32];
    unsigned char iv_[16];
    std::unique_ptr<EVP_CIPHER, CipherFree> cipher_;
    std::unique_ptr<EVP_CIPHER_CTX, CipherFree> ctx_;
    std::unique_ptr<EVP_MAC, CipherFree> mac_;
    std::unique_ptr<EVP_MAC_CTX, CipherFree> mctx_;
};

void fill(std::vector<unsigned char>& v) {
    for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<unsigned char>(i * 131 + 7);
}

} // namespace

std::string cipher_reference_digest(const std::string& prim) {
    CipherBench b(prim);
    std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> md(EVP_MD_CTX_new(), EVP_MD_CTX_free);
    if (!md || EVP_DigestInit_ex(md.get(), EVP_sha256(), nullptr) != 1) throw std::runtime_error("SHA-256 failed");
    // Lengths on both sides of the dispatch thresholds: 128 B (ChaCha20, Poly1305 SIMD), 288 B
    // (stitched AES-GCM), 512 B (AVX-512 Poly1305), 8 blocks (bsaes).
    for (std::size_t len : {16u, 100u, 129u, 300u, 1000u, 4100u, 65536u}) {
        std::vector<unsigned char> in(len), out(b.out_size(len));
        fill(in);
        b.call(in.data(), len, out.data());
        if (EVP_DigestUpdate(md.get(), out.data(), out.size()) != 1) throw std::runtime_error("SHA-256 failed");
    }
    unsigned char d[EVP_MAX_MD_SIZE];
    unsigned int dl = 0;
    if (EVP_DigestFinal_ex(md.get(), d, &dl) != 1) throw std::runtime_error("SHA-256 failed");
    std::string hex;
    char h[3];
    for (unsigned i = 0; i < dl; ++i) {
        std::snprintf(h, sizeof h, "%02x", d[i]);
        hex += h;
    }
    return hex;
}

int cipher_child(const MeasureSpec& m) {
    pin_to_cpu(m.cpu);
    std::printf("check %s\n", cipher_reference_digest(m.alg).c_str());
    CipherBench b(m.alg);
    for (std::size_t len : m.sizes) {
        std::vector<unsigned char> in(len), out(b.out_size(len));
        fill(in);
        auto sample = [&]() {
            return tsc_cycles_per_call(len, [&] { b.perturb(b.call(in.data(), len, out.data())); });
        };
        print_child_point(len, measure(sample, m.samples, 3, 0.05, 5));
    }
    std::fflush(stdout);
    return 0;
}

// ---- the whole set -----------------------------------------------------------------------------

std::vector<CipherMeasurement> measure_ciphers(const CpuFeatures& cpu, const CipherPlan& plan,
                                               std::vector<std::string>* unavailable,
                                               const std::function<void(const std::string&)>& progress,
                                               const std::function<void(const CipherMeasurement&)>& report) {
    std::vector<CipherMeasurement> out;
    for (const char* prim : CIPHER_PRIMS) {
        if (progress) progress(prim);
        std::set<std::string> unnamed_done;
        for (const char* impl : CIPHER_IMPLS) {
            auto why = cipher_unavailable(cpu, prim, impl);
            std::string path = forced_cipher_path(cpu, prim, impl);
            // A mask that makes OpenSSL run a path the schema has no name for (the CPU has the
            // instructions): measured once, for the comments.
            bool unnamed = why && !is_cipher_impl(path) && why->rfind("the CPU", 0) != 0 && !unnamed_done.count(path);
            if (why) {
                if (unavailable)
                    unavailable->push_back(fmt::format("cipher.{}.{}: {}{}", prim, impl, *why,
                                                       unnamed ? " (measured, given as a comment)" : ""));
                if (!unnamed) continue;
                unnamed_done.insert(path);
            }
            std::vector<HashRun> rs;
            for (int i = 0; i < std::max(1, plan.runs); ++i)
                rs.push_back(spawn_cipher_measurement(plan.exe, prim, impl, plan.sizes, plan.samples, plan.cpu));
            CipherMeasurement m{prim, impl, path, combine_runs(rs), !unnamed};
            if (report) report(m);
            out.push_back(std::move(m));
        }
    }
    return out;
}

namespace {

std::string escape(const std::string& s) {
    std::string o;
    for (char c : s) {
        if (c == '"' || c == '\\') o += '\\';
        if (static_cast<unsigned char>(c) < 0x20) o += fmt::format("\\u{:04x}", static_cast<unsigned>(c));
        else o += c;
    }
    return o;
}

std::string call_words(const std::string& prim) {
    if (prim == "poly1305") return "EVP_MAC POLY1305 init with a fresh one-time key, update, final";
    if (prim == "chacha20" || prim == "aes128-ctr")
        return "EVP encryption: nonce/IV set on a keyed context, EncryptUpdate, EncryptFinal_ex";
    return "EVP AEAD encryption including the 16-byte tag: nonce set on a keyed context, EncryptUpdate, "
           "EncryptFinal_ex, GET_TAG; no AAD";
}

std::string stat_words(const Measured& m, double bound, std::size_t at) {
    std::string s = fmt::format("median of {}, spread {:.1f}% at {} B", m.stats.n, m.stats.spread * 100, at);
    if (m.stats.spread > bound || m.noisy)
        s += fmt::format(" (NOISY: spread {:.1f}% after {} repeats, above the {:.0f}% bound)", m.stats.spread * 100,
                         m.attempts, bound * 100);
    return s;
}

} // namespace

std::string cipher_tables_toml(const std::vector<CipherMeasurement>& ms, const std::string& cpu_model,
                               const std::string& date, bool quick) {
    std::string t;
    for (const char* prim : CIPHER_PRIMS) {
        std::vector<const CipherMeasurement*> v;
        for (const char* impl : CIPHER_IMPLS) // generic first
            for (auto& m : ms)
                if (m.named && m.prim == prim && m.impl == impl) v.push_back(&m);
        if (v.empty()) continue;
        if (v.front()->impl != "generic")
            throw std::logic_error(std::string("cipher ") + prim + " was measured without its generic implementation");
        for (const CipherMeasurement* m : v) {
            const auto& pts = m->run.points;
            if (pts.size() < 2) throw std::logic_error("cipher " + m->prim + " " + m->impl + ": fewer than two sizes");
            std::string how = fmt::format(
                "OpenSSL {} {} forced to its {} code ({}) with OPENSSL_ia32cap={}; weighted least-squares fit of "
                "cycles(len) = per_call + per_byte x len over {} sizes {}..{} B{}{}",
                OpenSSL_version(OPENSSL_VERSION_STRING), call_words(m->prim), m->impl,
                describe_cipher_path(m->prim, m->path), cipher_ia32cap_mask(m->impl), pts.size(), pts.front().len,
                pts.back().len, quick ? "" : "; median of 3 child processes, spread includes their range",
                m->impl == "generic" ? "; OpenSSL's scalar x86-64 assembly: its C no-asm code cannot be selected at "
                                       "run time"
                                     : "");
            std::string head = cpu_model + ", " + date + ", measured by kdsim calibrate: ";
            double slope = std::max(0.0, m->run.fit.slope);
            double icept = m->run.fit.intercept;
            std::string call_how = how;
            if (icept < 0) call_how += fmt::format("; fitted intercept {:.0f} < 0, written as 0", icept);
            t += fmt::format("\n[cipher.{}.{}]\n", m->prim, m->impl);
            t += fmt::format("cycles_per_byte = {{ value = {:.4f}, unit = \"cycles/byte\", source = \"{}\" }}\n", slope,
                             escape(head + stat_words(pts.back().cycles, 0.05, pts.back().len) + "; " + how));
            t += fmt::format("cycles_per_call = {{ value = {}, unit = \"cycles\", source = \"{}\" }}\n",
                             static_cast<long long>(std::llround(std::max(0.0, icept))),
                             escape(head + stat_words(pts.front().cycles, 0.05, pts.front().len) + "; " + call_how));
            // The measured points themselves: the call's cost is not a line in its length (block
            // sizes, tail code), and the model interpolates between them (CipherCostTable::curve).
            std::string pairs;
            double worst = 0;
            for (const auto& q : pts) {
                pairs += fmt::format("{}[{}, {}]", pairs.empty() ? "" : ", ", q.len,
                                     static_cast<long long>(std::llround(q.cycles.stats.median)));
                worst = std::max(worst, q.cycles.stats.spread);
            }
            t += fmt::format(
                "curve = {{ value = [{}], unit = \"cycles\", source = \"{}\" }}\n", pairs,
                escape(head + fmt::format("median cycles of one call at each size ([bytes, cycles]), largest spread "
                                          "{:.1f}%; OpenSSL {} {} forced to its {} code ({}) with OPENSSL_ia32cap={}{}",
                                          worst * 100, OpenSSL_version(OPENSSL_VERSION_STRING), call_words(m->prim),
                                          m->impl, describe_cipher_path(m->prim, m->path),
                                          cipher_ia32cap_mask(m->impl),
                                          quick ? "" : "; median of 3 child processes")));
        }
    }
    return t;
}

std::vector<std::string> cipher_unnamed_notes(const std::vector<CipherMeasurement>& ms) {
    std::vector<std::string> out;
    for (auto& m : ms) {
        if (m.named) continue;
        const auto& pts = m.run.points;
        out.push_back(fmt::format(
            "cipher {} via OpenSSL's {} path ({}; forced by the {} mask {}, no [cipher] implementation name): "
            "{:.4f} cycles/byte + {:.0f} cycles/call ({} B: {:.0f} cycles, spread {:.1f}%)",
            m.prim, m.path, describe_cipher_path(m.prim, m.path), m.impl, cipher_ia32cap_mask(m.impl), m.run.fit.slope,
            m.run.fit.intercept, pts.back().len, pts.back().cycles.stats.median, pts.back().cycles.stats.spread * 100));
    }
    return out;
}

} // namespace kdsim::calibrate
