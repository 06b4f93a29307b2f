#include "crypto/shash.h"
#include "engine/enum_names.h"

#include "kernel/sched.h"

#include <algorithm>
#include <array>
#include <stdexcept>

namespace kdsim::crypto {

using engine::Cycles;
using kernel::Cat;

namespace {
constexpr engine::EnumNames<HashImpl, HASH_IMPLS> IMPL_NAMES{{
    "generic", "arm", "arm64", "neon", "ce", "ssse3", "avx", "avx2", "shani", "spe", "ppc"}};
}

std::string_view to_string(HashImpl i) { return IMPL_NAMES(i); }

std::optional<HashImpl> hash_impl_from_string(std::string_view s) { return IMPL_NAMES.parse(s); }

bool uses_simd(HashImpl i) {
    switch (i) {
    case HashImpl::GENERIC:
    case HashImpl::ARM:
    case HashImpl::ARM64:
    case HashImpl::PPC: return false;
    default: return true;
    }
}

namespace {
constexpr engine::EnumNames<ChunkPolicy, 3> CHUNK_POLICY_NAMES{{"none", "fixed", "yield"}};
} // namespace

std::string_view to_string(ChunkPolicy p) { return CHUNK_POLICY_NAMES(p); }

std::optional<ChunkPolicy> chunk_policy_from_string(std::string_view s) { return CHUNK_POLICY_NAMES.parse(s); }

HashImpl best_hash_impl(const HashCostTable& cost, HashAlg alg) {
    for (HashImpl i : {HashImpl::SHANI, HashImpl::AVX2, HashImpl::AVX, HashImpl::SSSE3, HashImpl::CE, HashImpl::NEON,
                       HashImpl::SPE, HashImpl::ARM64, HashImpl::ARM, HashImpl::PPC})
        if (cost.has(alg, i)) return i;
    return HashImpl::GENERIC;
}

namespace {

// Feeds bytes [from, to) to the functional digest, flipping one byte if the chunk was
// computed with clobbered registers.
void feed(Digest* d, std::span<const std::uint8_t> data, std::uint64_t from, std::uint64_t to, bool clobbered) {
    if (!d || to <= from) return;
    auto chunk = data.subspan(from, to - from);
    if (!clobbered) {
        d->update(chunk);
        return;
    }
    std::uint8_t first = static_cast<std::uint8_t>(chunk[0] ^ 0x5a);
    d->update(std::span<const std::uint8_t>(&first, 1));
    d->update(chunk.subspan(1));
}

// The cold-start penalty of this call, if the implementation is cold on this CPU.
Cycles cold_start_cycles(const HashCost& c, HashAlg alg, HashImpl impl, HashCache* cache, engine::Tick now,
                         ShashStats& stats) {
    if (!cache || !cache->touch(alg, impl, now)) return 0;
    if (!c.cold_start)
        throw std::runtime_error("the profile has no hash." + std::string(to_string(alg)) + "." +
                                 std::string(to_string(impl)) + ".cold_start figure, needed for cold caches");
    ++stats.cold_calls;
    return *c.cold_start;
}

} // namespace

// Models: check_hash_result() (crypto/testmgr.c)
bool check_digest(kernel::Cpu& cpu, Digest& d, std::span<const std::uint8_t> data, ShashStats& stats) {
    ++stats.digests_checked;
    const bool ok = d.final() == digest(d.alg(), data);
    if (!ok)
        cpu.report_finding(stats::FindingKind::DIGEST_MISMATCH, "", cpu.running_context(),
                           std::string(to_string(d.alg())) + " digest of " + std::to_string(data.size()) + " bytes");
    return ok;
}

std::string driver_name(HashAlg alg, HashImpl impl) {
    return std::string(to_string(alg)) + "-" + (impl == HashImpl::SHANI ? "ni" : std::string(to_string(impl)));
}

// Models: sha256_update() (arch/x86/crypto/sha256_ssse3_glue.c)
// Models: sha512_finup() (arch/x86/crypto/sha512_ssse3_glue.c)
engine::Task<ShashOutcome> crypto_shash_call(arch::SimdUnit& unit, const HashCostTable& cost, HashAlg alg,
                                             HashImpl impl, const Chunking& chunking, ShashCall call, Digest* d,
                                             std::span<const std::uint8_t> data, ShashStats& stats,
                                             HashCache* cache) {
    kernel::Cpu& cpu = unit.cpu();
    ShashOutcome out;
    const std::uint64_t len = call.len;
    const bool finup = call.op == ShashOp::FINUP;
    ++stats.calls;
    stats.bytes += len;
    if (call.nosimd) ++stats.nosimd_calls;
    const bool usable = !call.nosimd && arch::crypto_simd_usable(unit);
    const bool partial = !finup && call.buffered % block_size(alg) + len < block_size(alg);
    if (!uses_simd(impl) || !usable || partial) {
        // The glue's C path: crypto_sha256_update() / _finup() etc., the generic code.
        HashImpl used = uses_simd(impl) ? HashImpl::GENERIC : impl;
        if (uses_simd(impl) && !call.nosimd && !usable) {
            ++stats.fallback_calls;
            unit.count_fallback();
        }
        if (uses_simd(impl) && usable && partial) ++stats.partial_calls;
        const HashCost& c = *cost.get(alg, used);
        co_await cpu.exec(cold_start_cycles(c, alg, used, cache, cpu.now(), stats) +
                              c.bytes(call.buffered, call.buffered + len) + (finup ? c.cycles_per_call : 0),
                          Cat::CRYPTO);
        feed(d, data, 0, len, false);
        co_return out;
    }
    ++stats.simd_calls;
    out.used_simd = true;
    const std::size_t owner = unit.owner(driver_name(alg, impl));
    ++unit.owner_stats(owner).calls;
    const HashCost& c = *cost.get(alg, impl);
    Cycles cold = cold_start_cycles(c, alg, impl, cache, cpu.now(), stats);
    const std::uint64_t step = chunking.policy == ChunkPolicy::NONE ? std::max<std::uint64_t>(len, 1)
                                                                    : std::max<std::uint64_t>(chunking.bytes, 1);
    std::uint64_t pos = 0;
    if (chunking.policy != ChunkPolicy::FIXED) {
        unit.claim_next_bracket(owner);
        co_await unit.begin();
    }
    do {
        std::uint64_t next = std::min(len, pos + step);
        const bool last = next == len;
        if (chunking.policy == ChunkPolicy::FIXED) {
            unit.claim_next_bracket(owner);
            co_await unit.begin();
        }
        engine::Cycles work =
            cold + c.bytes(call.buffered + pos, call.buffered + next) + (last && finup ? c.cycles_per_call : 0);
        cold = 0;
        bool clobbered = co_await cpu.exec_simd(work, Cat::CRYPTO, unit.bracket_token());
        out.clobbered |= clobbered;
        unit.add_bracket_bytes(next - pos);
        feed(d, data, pos, next, clobbered);
        pos = next;
        if (chunking.policy == ChunkPolicy::FIXED) {
            co_await unit.end();
        } else if (chunking.policy == ChunkPolicy::YIELD && !last) {
            // kernel_fpu_yield(): if (need_resched()) { end; cond_resched(); begin; }
            cpu.note_resched_check();
            if (cpu.need_resched()) {
                co_await unit.end();
                co_await kernel::cond_resched(cpu);
                unit.claim_next_bracket(owner);
                co_await unit.begin();
            }
        }
    } while (pos < len);
    if (chunking.policy != ChunkPolicy::FIXED) co_await unit.end();
    co_return out;
}

// Models: crypto_shash_digest() (crypto/shash.c)
engine::Task<ShashOutcome> crypto_shash_digest(arch::SimdUnit& unit, const HashCostTable& cost, HashAlg alg,
                                               HashImpl impl, const Chunking& chunking, std::uint64_t len,
                                               bool functional, std::span<const std::uint8_t> data,
                                               ShashStats& stats, HashCache* cache) {
    std::optional<Digest> d;
    if (functional) d.emplace(alg);
    ShashOutcome out = co_await crypto_shash_call(unit, cost, alg, impl, chunking, ShashCall{ShashOp::FINUP, len, 0, false},
                                                  d ? &*d : nullptr, data, stats, cache);
    if (d) out.verified = check_digest(unit.cpu(), *d, data, stats);
    co_return out;
}

} // namespace kdsim::crypto
