// The cost tables of an architecture profile's crypto: one cost per (algorithm or primitive,
// implementation) a CPU has, as the [hash.<alg>.<impl>] and [cipher.<prim>.<impl>] tables give
// them, and the per-byte rounding both use.
#pragma once

#include "engine/time.h"

#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <optional>

namespace kdsim::crypto {

// Cycles for bytes [from, to) of one message at `cycles_per_byte`: per-byte work rounded so that
// chunks of one message add up exactly to the whole.
inline engine::Cycles span_cycles(double cycles_per_byte, std::uint64_t from, std::uint64_t to) {
    return static_cast<engine::Cycles>(std::llround(static_cast<double>(to) * cycles_per_byte) -
                                       std::llround(static_cast<double>(from) * cycles_per_byte));
}

// The cost of one call of a hash or cipher implementation on a message.
struct PerByteCost {
    double cycles_per_byte = 0;
    engine::Cycles cycles_per_call = 0;
    // Cycles for bytes [from, to) of one message (span_cycles).
    engine::Cycles bytes(std::uint64_t from, std::uint64_t to) const { return span_cycles(cycles_per_byte, from, to); }
};

// A cost per (Key, Impl); absent where the profile gives none. Key and Impl are enums counting
// from 0 below KEYS and IMPLS.
template <class Key, class Impl, class Cost, std::size_t KEYS, std::size_t IMPLS>
class CostTable {
public:
    void set(Key k, Impl i, Cost c) { t_[at(k)][at(i)] = c; }
    const std::optional<Cost>& get(Key k, Impl i) const { return t_[at(k)][at(i)]; }
    std::optional<Cost>& get(Key k, Impl i) { return t_[at(k)][at(i)]; }
    bool has(Key k, Impl i) const { return get(k, i).has_value(); }
    // Whether any implementation of `k` has a cost.
    bool has(Key k) const {
        for (const auto& c : t_[at(k)])
            if (c) return true;
        return false;
    }

private:
    template <class E> static std::size_t at(E e) { return static_cast<std::size_t>(e); }
    std::array<std::array<std::optional<Cost>, IMPLS>, KEYS> t_{};
};

} // namespace kdsim::crypto
