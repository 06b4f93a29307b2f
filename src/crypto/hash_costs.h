// Cycle costs of hash implementations, one entry per (algorithm, implementation) a CPU has,
// loaded from the [hash.<alg>.<impl>] tables of an architecture profile.
#pragma once

#include "crypto/digest.h"
#include "engine/time.h"

#include <array>
#include <cmath>
#include <cstdint>
#include <optional>
#include <string_view>

namespace kdsim::crypto {

// Implementations as the kernel's arch glue names them.
enum class HashImpl : std::uint8_t { GENERIC, ARM, ARM64, NEON, CE, SSSE3, AVX, AVX2, SHANI, SPE, PPC, COUNT };
inline constexpr std::size_t HASH_IMPLS = static_cast<std::size_t>(HashImpl::COUNT);
inline constexpr std::size_t HASH_ALGS = 3;

std::string_view to_string(HashImpl i);
std::optional<HashImpl> hash_impl_from_string(std::string_view s);
// Whether the implementation runs on the SIMD/FPU unit (needs a kernel_*_begin/end bracket).
bool uses_simd(HashImpl i);

struct HashCost {
    double cycles_per_byte = 0;
    engine::Cycles cycles_per_call = 0;
    // Extra cycles of a call whose code and tables are not in the caches (optional figure,
    // required only by scenarios that model cold caches).
    std::optional<engine::Cycles> cold_start;

    // Cycles for bytes [from, to) of one message: per-byte work rounded so that chunks of one
    // message add up exactly to the whole.
    engine::Cycles bytes(std::uint64_t from, std::uint64_t to) const {
        return static_cast<engine::Cycles>(std::llround(static_cast<double>(to) * cycles_per_byte) -
                                           std::llround(static_cast<double>(from) * cycles_per_byte));
    }
};

class HashCostTable {
public:
    void set(HashAlg a, HashImpl i, HashCost c) { t_[index(a)][static_cast<std::size_t>(i)] = c; }
    const std::optional<HashCost>& get(HashAlg a, HashImpl i) const {
        return t_[index(a)][static_cast<std::size_t>(i)];
    }
    bool has(HashAlg a, HashImpl i) const { return get(a, i).has_value(); }

private:
    static std::size_t index(HashAlg a) { return static_cast<std::size_t>(a); }
    std::array<std::array<std::optional<HashCost>, HASH_IMPLS>, HASH_ALGS> t_{};
};

} // namespace kdsim::crypto
