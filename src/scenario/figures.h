// Raw access to the { value, unit, source } figures of a profile file, with their source strings,
// for tools that derive a new profile from an existing one (kdsim calibrate copies the figures it
// cannot measure from a base profile). Validation is load_profile()'s job; this only reads.
#pragma once

#include <filesystem>
#include <map>
#include <string>

namespace kdsim::scenario {

struct RawFigure {
    double value = 0;
    bool integral = false; // the value was written as a TOML integer
    bool is_bool = false;  // a plain boolean key (dma.coherent): value 0/1, no unit
    std::string unit;
    std::string source;
};

// Every inline table with value, unit and source, keyed by its full dotted key
// ("sched.tick", "hash.sha256.avx2.cycles_per_byte", "net.syscall"). Plain string keys are
// returned with an empty unit and the string as source ("profile.name", "simd.unit"); plain
// booleans with is_bool set ("dma.coherent").
// Throws std::runtime_error when the file cannot be read or parsed.
std::map<std::string, RawFigure> read_raw_figures(const std::filesystem::path& file);

} // namespace kdsim::scenario
