// The fenced TSC reads every kdsim calibrate measurement is bracketed with (x86-64):
// LFENCE; RDTSC; LFENCE before, RDTSCP; LFENCE after, so that the bracketed code neither starts
// before the first read nor is still running at the second.
#pragma once

#include <x86intrin.h>

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

} // namespace kdsim::calibrate
