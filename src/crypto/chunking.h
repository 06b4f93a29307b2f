// How a SIMD hash splits a long message into kernel_*_begin/end brackets ([machine.kernel]
// simd_chunking and simd_chunk_bytes): the policies crypto/shash.h implements.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace kdsim::crypto {

enum class ChunkPolicy : std::uint8_t { NONE, FIXED, YIELD };
std::string_view to_string(ChunkPolicy p);
std::optional<ChunkPolicy> chunk_policy_from_string(std::string_view s);

struct Chunking {
    ChunkPolicy policy = ChunkPolicy::NONE;
    std::uint64_t bytes = 4096;
};

} // namespace kdsim::crypto
