#include "crypto/aead_path.h"
#include "engine/enum_names.h"

#include <algorithm>
#include <stdexcept>

namespace kdsim::crypto {

using kernel::Cat;

std::string_view to_string(AeadDriver d) {
    static constexpr engine::EnumNames<AeadDriver, 3> names{{"lib-chacha20poly1305", "gcm-template", "gcm-fused"}};
    return names(d);
}

namespace {

constexpr std::uint64_t SIMD_CHUNK = 4096; // "crypto: arch/lib - limit simd usage to 4k chunks"
constexpr std::uint64_t CHACHA_BLOCK = 64;
constexpr std::uint64_t POLY1305_X86_SIMD_MIN = 288; // arch/x86/crypto/poly1305_glue.c

CipherPrim ctr_of(AeadAlg a) { return a == AeadAlg::AES_256_GCM ? CipherPrim::AES256_CTR : CipherPrim::AES128_CTR; }
CipherPrim gcm_of(AeadAlg a) { return a == AeadAlg::AES_256_GCM ? CipherPrim::AES256_GCM : CipherPrim::AES128_GCM; }
std::uint64_t pad16(std::uint64_t n) { return (n + 15) / 16 * 16; }

// One pass of a primitive over `bytes`: SIMD in <= 4 KiB brackets when an implementation
// exists, the data is long enough and crypto_simd_usable() (not tested by an internal driver);
// the scalar code otherwise.
// Its cycles are added to `work`.
engine::Task<bool> pass(arch::SimdUnit& unit, const CipherCostTable& t, CipherPrim prim, std::uint64_t bytes,
                        std::uint64_t simd_min, AeadPathStats& stats, bool internal, engine::Cycles& work) {
    kernel::Cpu& cpu = unit.cpu();
    const auto simd = t.best(prim, true);
    const bool wants = simd && bytes >= simd_min;
    const bool usable = wants && (internal || arch::crypto_simd_usable(unit));
    if (usable && internal && !unit.may_use_simd()) ++stats.unusable_simd;
    if (!usable) {
        if (wants) {
            ++stats.fallbacks;
            unit.count_fallback();
        }
        const auto scalar = t.best(prim, false);
        if (!scalar)
            throw std::logic_error("aead_crypt: no scalar " + std::string(to_string(prim)) +
                                   " and SIMD not usable: the caller should have gone async");
        ++stats.scalar_steps;
        const engine::Cycles c = t.call_cycles(prim, *scalar, bytes);
        work += c;
        co_await cpu.exec(c, Cat::CRYPTO);
        co_return false;
    }
    ++stats.simd_steps;
    bool clobbered = false;
    std::uint64_t pos = 0;
    do {
        const std::uint64_t next = std::min(bytes, pos + SIMD_CHUNK);
        co_await unit.begin();
        const engine::Cycles c = t.part_cycles(prim, *simd, bytes, pos, next);
        work += c;
        clobbered |= co_await cpu.exec_simd(c, Cat::CRYPTO, unit.bracket_token());
        unit.add_bracket_bytes(next - pos);
        co_await unit.end();
        pos = next;
    } while (pos < bytes);
    co_return clobbered;
}

} // namespace

AeadDriverChoice select_esp_driver(arch::SimdPolicy policy, AeadAlg alg, const CipherCostTable& t) {
    if (alg == AeadAlg::CHACHA20_POLY1305) return {AeadDriver::LIB_CHACHAPOLY, false};
    switch (arch::arch_of(policy)) {
    case arch::Arch::ARM32:
        if (policy == arch::SimdPolicy::ARM32_TASK_ONLY) return {AeadDriver::GCM_TEMPLATE, true};
        return {AeadDriver::GCM_FUSED, false};
    case arch::Arch::ARM64:
        return {t.best(gcm_of(alg), true) ? AeadDriver::GCM_FUSED : AeadDriver::GCM_TEMPLATE, false};
    case arch::Arch::X86_64: return {AeadDriver::GCM_FUSED, true};
    case arch::Arch::PPC32_E500: return {AeadDriver::GCM_TEMPLATE, false};
    }
    return {AeadDriver::GCM_TEMPLATE, false};
}

std::optional<std::string> aead_missing_costs(const CipherCostTable& t, AeadDriver driver, AeadAlg alg, bool simd_never) {
    auto need = [&](CipherPrim p, bool scalar_needed, bool simd_needed) -> std::optional<std::string> {
        if (scalar_needed && !t.best(p, false))
            return "cipher." + std::string(to_string(p)) + " with a scalar implementation (generic, arm or arm64)";
        if (simd_needed && !t.best(p, true)) return "cipher." + std::string(to_string(p)) + " with a SIMD implementation";
        if (!t.has(p)) return "cipher." + std::string(to_string(p));
        return std::nullopt;
    };
    switch (driver) {
    case AeadDriver::LIB_CHACHAPOLY:
        if (alg != AeadAlg::CHACHA20_POLY1305) return "lib-chacha20poly1305 runs chacha20-poly1305 only";
        if (auto m = need(CipherPrim::CHACHA20, true, false)) return m;
        return need(CipherPrim::POLY1305, true, false);
    case AeadDriver::GCM_TEMPLATE:
        if (alg == AeadAlg::CHACHA20_POLY1305) return "gcm runs aes-gcm only";
        if (auto m = need(ctr_of(alg), simd_never, false)) return m;
        return need(CipherPrim::GHASH, simd_never, false);
    case AeadDriver::GCM_FUSED:
        if (alg == AeadAlg::CHACHA20_POLY1305) return "gcm runs aes-gcm only";
        return need(gcm_of(alg), simd_never, !simd_never);
    }
    return std::nullopt;
}

// Models: crypto_aead_encrypt(), crypto_aead_decrypt() (crypto/aead.c)
engine::Task<AeadOutcome> aead_crypt(arch::SimdUnit& unit, const CipherCostTable& t, AeadDriver driver, AeadAlg alg,
                                     std::uint64_t len, std::uint64_t assoc, AeadPathStats& stats, bool internal) {
    ++stats.calls;
    stats.bytes += len;
    AeadOutcome out;
    switch (driver) {
    case AeadDriver::LIB_CHACHAPOLY: {
        const std::uint64_t poly_min = arch::arch_of(unit.policy()) == arch::Arch::X86_64 ? POLY1305_X86_SIMD_MIN : 0;
        // chacha20 block 0 gives the Poly1305 key: one block, always the scalar code
        out.clobbered |= co_await pass(unit, t, CipherPrim::CHACHA20, CHACHA_BLOCK, CHACHA_BLOCK + 1, stats, internal, out.work);
        out.clobbered |= co_await pass(unit, t, CipherPrim::CHACHA20, len, CHACHA_BLOCK + 1, stats, internal, out.work);
        out.clobbered |= co_await pass(unit, t, CipherPrim::POLY1305, pad16(assoc) + pad16(len) + 16, poly_min, stats, internal, out.work);
        break;
    }
    case AeadDriver::GCM_TEMPLATE:
        out.clobbered |= co_await pass(unit, t, ctr_of(alg), len + 16, 0, stats, internal, out.work); // + the tag's counter block
        out.clobbered |= co_await pass(unit, t, CipherPrim::GHASH, pad16(assoc) + pad16(len) + 16, 0, stats, internal, out.work);
        break;
    case AeadDriver::GCM_FUSED:
        out.clobbered |= co_await pass(unit, t, gcm_of(alg), len + assoc, 0, stats, internal, out.work);
        break;
    }
    co_return out;
}

} // namespace kdsim::crypto
