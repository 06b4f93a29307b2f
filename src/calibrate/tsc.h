// The fenced TSC reads every kdsim calibrate measurement is bracketed with (x86-64):
// LFENCE; RDTSC; LFENCE before, RDTSCP; LFENCE after, so that the bracketed code neither starts
// before the first read nor is still running at the second.
#pragma once

#include <x86intrin.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>

namespace kdsim::calibrate {

inline std::uint64_t tsc_begin() {
    _mm_lfence();
    std::uint64_t t = __rdtsc();
    _mm_lfence();
    return t;
}

inline std::uint64_t tsc_end() {
    unsigned aux;
    std::uint64_t t = __rdtscp(&aux);
    _mm_lfence();
    return t;
}

// One sample for a measurement child: TSC cycles per call of `call`, timed over a batch of calls
// that together take about 128 KiB of `len`-byte inputs (at least one call).
template <class Call>
double tsc_cycles_per_call(std::size_t len, Call&& call) {
    const std::size_t inner = std::max<std::size_t>(1, 131072 / (len + 256));
    const std::uint64_t t0 = tsc_begin();
    for (std::size_t i = 0; i < inner; ++i) call();
    const std::uint64_t t1 = tsc_end();
    return static_cast<double>(t1 - t0) / static_cast<double>(inner);
}

} // namespace kdsim::calibrate
