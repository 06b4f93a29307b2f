// A profile figure described once, beside the cost struct that holds it: its key in the
// profile file, its unit, one line on what it covers, and the member it fills. The scenario
// layer reads, checks and overrides figures through these tables only, so a figure cannot be
// named in one place and forgotten in another; figures_bytes() lets each cost header
// static_assert that its table covers every member of its struct.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>
#include <variant>

namespace kdsim::engine {

enum class Unit : std::uint8_t { CYCLES, BYTES, HZ, CYCLES_PER_BYTE, NS, BYTES_PER_SECOND, WAYS, LINES, STREAMS, COUNT, FRACTION };

constexpr std::string_view unit_name(Unit u) {
    switch (u) {
    case Unit::CYCLES: return "cycles";
    case Unit::BYTES: return "bytes";
    case Unit::HZ: return "Hz";
    case Unit::CYCLES_PER_BYTE: return "cycles/byte";
    case Unit::NS: return "ns";
    case Unit::BYTES_PER_SECOND: return "bytes/s";
    case Unit::WAYS: return "ways";
    case Unit::LINES: return "lines";
    case Unit::STREAMS: return "streams";
    case Unit::COUNT: return "count";
    case Unit::FRACTION: return "fraction";
    }
    return "?";
}

template <class S>
struct Figure {
    // An integer figure (cycles, bytes, Hz), a fractional one (cycles/byte), or an optional
    // integer figure (required only by the mechanisms that use it).
    using Member = std::variant<std::uint64_t S::*, double S::*, std::optional<std::uint64_t> S::*>;
    std::string_view section; // the profile table that holds it ("sched"); empty: the caller's table
    std::string_view name;    // its key in that table
    Unit unit;
    std::string_view description;
    Member member;
    bool positive = false; // zero is an error (a clock, a cache line)

    bool optional() const { return member.index() == 2; }
};

// The bytes of S that a table's members cover: sizeof(S) when it names every member once.
template <class S, std::size_t N>
constexpr std::size_t figures_bytes(const std::array<Figure<S>, N>& table) {
    std::size_t n = 0;
    for (const auto& f : table)
        n += f.member.index() == 0 ? sizeof(std::uint64_t)
             : f.member.index() == 1 ? sizeof(double)
                                     : sizeof(std::optional<std::uint64_t>);
    return n;
}

} // namespace kdsim::engine
