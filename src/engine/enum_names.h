// An enum's names in one table, from which both to_string and the parser are made, so that a
// name is written once. The enum's values must be 0, 1, ... N-1, in the table's order.
#pragma once

#include <array>
#include <cstddef>
#include <optional>
#include <string_view>

namespace kdsim::engine {

template <class E, std::size_t N>
struct EnumNames {
    std::array<std::string_view, N> names;

    // The name of `e`, or "?" for a value beyond the table.
    constexpr std::string_view operator()(E e) const {
        const auto i = static_cast<std::size_t>(e);
        return i < N ? names[i] : "?";
    }
    // The value named exactly `s`, if any.
    constexpr std::optional<E> parse(std::string_view s) const {
        for (std::size_t i = 0; i < N; ++i)
            if (names[i] == s) return static_cast<E>(i);
        return std::nullopt;
    }
};

} // namespace kdsim::engine
