// Cycle costs of hash implementations, one entry per (algorithm, implementation) a CPU has,
// loaded from the [hash.<alg>.<impl>] tables of an architecture profile.
#pragma once

#include "crypto/cost_table.h"
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

struct HashCost : PerByteCost {
    // Extra cycles of a call whose code and tables are not in the caches (optional figure,
    // required only by scenarios that model cold caches).
    std::optional<engine::Cycles> cold_start;
};

using HashCostTable = CostTable<HashAlg, HashImpl, HashCost, HASH_ALGS, HASH_IMPLS>;

} // namespace kdsim::crypto
