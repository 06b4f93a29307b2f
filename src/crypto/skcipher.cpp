#include "crypto/skcipher.h"
#include "crypto/openssl_error.h"

#include <openssl/evp.h>

#include <algorithm>
#include <stdexcept>

namespace kdsim::crypto {

using kernel::Cat;

std::string_view to_string(SkcipherAlg a) { return SKCIPHER_ALG_NAMES(a); }

std::optional<SkcipherAlg> skcipher_alg_from_string(std::string_view s) { return SKCIPHER_ALG_NAMES.parse(s); }

std::span<const unsigned> skcipher_key_bits(SkcipherAlg a) {
    static constexpr unsigned AES[] = {128, 256};
    static constexpr unsigned XTS[] = {256, 512};
    if (a == SkcipherAlg::XTS_AES) return XTS;
    return AES;
}

std::uint64_t skcipher_blocksize(SkcipherAlg a) { return a == SkcipherAlg::CTR_AES ? 1 : AES_BLOCK_SIZE; }

std::optional<std::string> skcipher_len_error(SkcipherAlg a, std::uint64_t len) {
    switch (a) {
    case SkcipherAlg::CBC_AES:
        if (len == 0 || len % AES_BLOCK_SIZE)
            return "a multiple of 16 bytes (cbc(aes) encrypts whole AES blocks; the crypto API returns -EINVAL)";
        break;
    case SkcipherAlg::XTS_AES:
        if (len < AES_BLOCK_SIZE)
            return "at least 16 bytes (xts(aes) needs one whole AES block; shorter is -EINVAL in the arch drivers)";
        break;
    case SkcipherAlg::CTR_AES:
        if (len == 0) return "at least 1 byte";
        break;
    }
    return std::nullopt;
}

CipherPrim skcipher_prim(SkcipherAlg a, unsigned key_bits, bool encrypt) {
    switch (a) {
    case SkcipherAlg::CBC_AES:
        if (key_bits == 256) return encrypt ? CipherPrim::AES256_CBC_ENC : CipherPrim::AES256_CBC_DEC;
        return encrypt ? CipherPrim::AES128_CBC_ENC : CipherPrim::AES128_CBC_DEC;
    case SkcipherAlg::CTR_AES: return key_bits == 256 ? CipherPrim::AES256_CTR : CipherPrim::AES128_CTR;
    case SkcipherAlg::XTS_AES: return key_bits == 512 ? CipherPrim::AES256_XTS : CipherPrim::AES128_XTS;
    }
    return CipherPrim::AES128_CTR;
}

// Models: skcipher_walk_virt(), skcipher_walk_next() (crypto/skcipher.c)
std::vector<WalkStep> skcipher_walk_steps(SkcipherAlg a, std::uint64_t len, std::uint64_t offset) {
    std::vector<WalkStep> steps;
    const std::uint64_t tail = a == SkcipherAlg::XTS_AES ? len % AES_BLOCK_SIZE : 0;
    // scatterwalk_clamp: a step ends at the page boundary
    auto walk = [&](std::uint64_t from, std::uint64_t to) {
        std::uint64_t pos = from;
        while (pos < to) {
            const std::uint64_t in_page = (offset + pos) % PAGE_SIZE;
            const std::uint64_t n = std::min(to - pos, PAGE_SIZE - in_page);
            steps.push_back({n, !steps.empty(), false});
            pos += n;
        }
    };
    walk(0, len);
    if (tail && steps.size() > 1) {
        // xts_encrypt: skcipher_walk_abort, walk the blocks but the last full one, then the
        // ciphertext stealing over 16 + tail bytes with skcipher_walk_virt of its own
        steps.clear();
        walk(0, len - AES_BLOCK_SIZE - tail);
        steps.push_back({AES_BLOCK_SIZE + tail, true, false});
    }
    if (a == SkcipherAlg::XTS_AES) steps.front().tweak = true;
    return steps;
}

std::string skcipher_driver_name(SkcipherAlg a, CipherImpl impl) {
    static constexpr std::string_view MODES[] = {"cbc", "ctr", "xts"};
    const std::string_view mode = MODES[static_cast<std::size_t>(a)];
    if (!uses_simd(impl)) { // the template over the single-block cipher
        const std::string cipher = "aes-" + std::string(to_string(impl));
        return std::string(mode) + (a == SkcipherAlg::XTS_AES ? "(ecb(" + cipher + "))" : "(" + cipher + ")");
    }
    const std::string name = std::string(mode) + "-aes-" + std::string(to_string(impl));
    return impl == CipherImpl::AESNI || impl == CipherImpl::VAES ? "__" + name : name;
}

std::optional<CipherImpl> skcipher_impl(const CipherCostTable& t, CipherPrim p) {
    if (auto simd = t.best(p, true)) return simd;
    return t.best(p, false);
}

// Models: crypto_skcipher_encrypt(), crypto_skcipher_decrypt() (crypto/skcipher.c)
// Models: xts_encrypt() (arch/arm64/crypto/aes-glue.c)
// Models: xts_crypt() (arch/x86/crypto/aesni-intel_glue.c)
engine::Task<bool> skcipher_crypt(arch::SimdUnit& unit, const CipherCostTable& t, const SkcipherCosts& c,
                                  SkcipherAlg a, unsigned key_bits, bool encrypt, std::uint64_t len,
                                  std::uint64_t offset, SkcipherStats& stats) {
    kernel::Cpu& cpu = unit.cpu();
    const CipherPrim prim = skcipher_prim(a, key_bits, encrypt);
    const auto impl = skcipher_impl(t, prim);
    if (!impl) throw std::logic_error("skcipher_crypt: the profile has no cipher." + std::string(to_string(prim)));
    const CipherCost& cost = *t.get(prim, *impl);
    ++stats.calls;
    stats.bytes += len;
    const bool simd = uses_simd(*impl);
    if (!simd) ++stats.scalar_calls;
    const std::size_t owner = simd ? unit.owner(skcipher_driver_name(a, *impl)) : 0;
    if (owner) ++unit.owner_stats(owner).calls;
    co_await cpu.exec(c.request, Cat::CRYPTO);
    bool clobbered = false;
    for (const WalkStep& s : skcipher_walk_steps(a, len, offset)) {
        if (s.walk) co_await cpu.exec(c.walk_step, Cat::CRYPTO);
        ++stats.steps;
        const engine::Cycles work = t.call_cycles(prim, *impl, s.bytes) + (s.tweak ? cost.bytes(0, AES_BLOCK_SIZE) : 0);
        if (!simd) {
            co_await cpu.exec(work, Cat::CRYPTO);
            continue;
        }
        if (!unit.may_use_simd()) ++stats.unusable_simd;
        ++stats.brackets;
        unit.claim_next_bracket(owner);
        co_await unit.begin();
        clobbered |= co_await cpu.exec_simd(work, Cat::CRYPTO, unit.bracket_token());
        unit.add_bracket_bytes(s.bytes);
        co_await unit.end();
    }
    co_return clobbered;
}

namespace {

const EVP_CIPHER* evp_cipher(SkcipherAlg a, std::size_t key_bytes) {
    const bool big = key_bytes == (a == SkcipherAlg::XTS_AES ? 64 : 32);
    switch (a) {
    case SkcipherAlg::CBC_AES: return big ? EVP_aes_256_cbc() : EVP_aes_128_cbc();
    case SkcipherAlg::CTR_AES: return big ? EVP_aes_256_ctr() : EVP_aes_128_ctr();
    case SkcipherAlg::XTS_AES: return big ? EVP_aes_256_xts() : EVP_aes_128_xts();
    }
    return nullptr;
}

void* make_ctx(SkcipherAlg a, std::span<const std::uint8_t> key, int enc) {
    EVP_CIPHER_CTX* ctx = EVP_CIPHER_CTX_new();
    if (!ctx) detail::throw_openssl_error("EVP_CIPHER_CTX_new");
    if (EVP_CipherInit_ex(ctx, evp_cipher(a, key.size()), nullptr, key.data(), nullptr, enc) != 1 ||
        EVP_CIPHER_CTX_set_padding(ctx, 0) != 1) {
        EVP_CIPHER_CTX_free(ctx);
        detail::throw_openssl_error("EVP_CipherInit_ex");
    }
    return ctx;
}

} // namespace

SkcipherKey::SkcipherKey(SkcipherAlg a, std::span<const std::uint8_t> key) : alg_(a), enc_(nullptr), dec_(nullptr) {
    const auto bits = skcipher_key_bits(a);
    if (std::find(bits.begin(), bits.end(), key.size() * 8) == bits.end())
        throw std::invalid_argument("kdsim::crypto: " + std::string(to_string(a)) + " has no " +
                                    std::to_string(key.size() * 8) + "-bit key");
    enc_ = make_ctx(a, key, 1);
    try {
        dec_ = make_ctx(a, key, 0);
    } catch (...) {
        EVP_CIPHER_CTX_free(static_cast<EVP_CIPHER_CTX*>(enc_));
        throw;
    }
}

SkcipherKey::~SkcipherKey() {
    EVP_CIPHER_CTX_free(static_cast<EVP_CIPHER_CTX*>(enc_));
    EVP_CIPHER_CTX_free(static_cast<EVP_CIPHER_CTX*>(dec_));
}

void SkcipherKey::crypt(bool encrypt, std::span<const std::uint8_t> iv, std::span<const std::uint8_t> in,
                        std::vector<std::uint8_t>& out) {
    if (iv.size() != AES_BLOCK_SIZE) throw std::invalid_argument("kdsim::crypto: an skcipher IV is 16 bytes");
    if (auto e = skcipher_len_error(alg_, in.size()))
        throw std::invalid_argument("kdsim::crypto: " + std::string(to_string(alg_)) + " needs " + *e);
    auto* ctx = static_cast<EVP_CIPHER_CTX*>(encrypt ? enc_ : dec_);
    out.resize(in.size());
    int n = 0, fin = 0;
    // One EVP_CipherUpdate: XTS takes a data unit in one call (its length is an int).
    if (in.size() > static_cast<std::size_t>(INT32_MAX)) throw std::invalid_argument("kdsim::crypto: request over 2 GiB");
    if (EVP_CipherInit_ex(ctx, nullptr, nullptr, nullptr, iv.data(), -1) != 1 ||
        EVP_CipherUpdate(ctx, out.data(), &n, in.data(), static_cast<int>(in.size())) != 1 ||
        EVP_CipherFinal_ex(ctx, out.data() + n, &fin) != 1)
        detail::throw_openssl_error("EVP_CipherUpdate");
}

} // namespace kdsim::crypto
