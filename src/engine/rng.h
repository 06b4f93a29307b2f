// Seeded random streams. Each consumer asks the simulation for its own stream by a stable
// name; the stream's seed is a hash of (run seed, name), so adding a consumer never shifts
// the numbers another consumer draws. The generator is xoshiro256**, seeded by splitmix64.
#pragma once

#include <cstdint>
#include <string_view>

namespace kdsim::engine {

inline std::uint64_t splitmix64(std::uint64_t& x) {
    std::uint64_t z = (x += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

// FNV-1a, 64 bit: a stable hash of a stream name (std::hash is not stable across libraries).
inline std::uint64_t stable_hash(std::string_view s) {
    std::uint64_t h = 0xcbf29ce484222325ULL;
    for (unsigned char c : s) {
        h ^= c;
        h *= 0x100000001b3ULL;
    }
    return h;
}

class Rng {
public:
    Rng(std::uint64_t run_seed, std::string_view stream) {
        std::uint64_t x = run_seed ^ stable_hash(stream);
        for (auto& w : s_) w = splitmix64(x);
    }

    std::uint64_t next() {
        const std::uint64_t result = rotl(s_[1] * 5, 7) * 9;
        const std::uint64_t t = s_[1] << 17;
        s_[2] ^= s_[0];
        s_[3] ^= s_[1];
        s_[1] ^= s_[2];
        s_[0] ^= s_[3];
        s_[2] ^= t;
        s_[3] = rotl(s_[3], 45);
        return result;
    }

    // Uniform in [0, n), without modulo bias (Lemire's method). Precondition: n > 0.
    std::uint64_t below(std::uint64_t n) {
        unsigned __int128 m = static_cast<unsigned __int128>(next()) * n;
        auto low = static_cast<std::uint64_t>(m);
        if (low < n) {
            std::uint64_t threshold = -n % n;
            while (low < threshold) {
                m = static_cast<unsigned __int128>(next()) * n;
                low = static_cast<std::uint64_t>(m);
            }
        }
        return static_cast<std::uint64_t>(m >> 64);
    }

    // Uniform in [lo, hi]. Precondition: lo <= hi.
    std::uint64_t between(std::uint64_t lo, std::uint64_t hi) { return lo + below(hi - lo + 1); }

    // Fills `n` bytes with random data, eight bytes per draw (little-endian order of each draw).
    void fill(std::uint8_t* p, std::size_t n) {
        while (n >= 8) {
            std::uint64_t v = next();
            for (int i = 0; i < 8; ++i) p[i] = static_cast<std::uint8_t>(v >> (8 * i));
            p += 8;
            n -= 8;
        }
        if (n) {
            std::uint64_t v = next();
            for (std::size_t i = 0; i < n; ++i) p[i] = static_cast<std::uint8_t>(v >> (8 * i));
        }
    }

    // Uniform double in [0, 1).
    double uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }

private:
    static std::uint64_t rotl(std::uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
    std::uint64_t s_[4];
};

} // namespace kdsim::engine
