// The configurations kdsim validate runs for real and simulates: each has its real parameters
// here and its simulated twin in scenarios/validate/<name>.toml.
#pragma once

#include "validate/datapath.h"

#include <string>
#include <vector>

namespace kdsim::validate {

enum class Kind : std::uint8_t { INLINE, CRYPTD, FLUSH, HASH };
std::string to_string(Kind k);

struct Config {
    std::string name;        // also the twin's file name: scenarios/validate/<name>.toml
    Kind kind = Kind::INLINE;
    std::string description;
    RxConfig rx;             // packet kinds
    HashConfig hash;         // HASH (hash.passes: the full run)
    std::uint32_t quick_passes = 1; // HASH with --quick
    bool quick = false;      // the tiny configuration of its kind run by --quick
};

// Every configuration, in table order.
const std::vector<Config>& configurations();

// The list of buffer sizes of the hashing configurations (one system call each): a fixed pattern
// of 16 sizes from 16 KiB to 1 MiB (6.25 MiB in all), repeated per pass.
std::vector<std::uint64_t> hash_size_pattern();

} // namespace kdsim::validate
