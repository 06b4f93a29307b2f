// Reading an input file before the TOML parser sees it: only a regular file of bounded size is
// read (a device such as /dev/zero, a FIFO or a huge file would be read until memory runs out),
// and no key may have more dotted parts than the parser can take (Debian's toml++ 3.3 recurses
// once per part of a dotted key with no depth limit, so a 50,000-part header overflows the
// stack; nested arrays and inline tables are already bounded by TOML_MAX_NESTED_VALUES).
#include "scenario/toml_reader.h"

#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <fstream>

namespace kdsim::scenario::detail {

namespace {

bool bare_key_char(char c) {
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-' ||
           c == '+' || c == ' ' || c == '\t';
}

} // namespace

std::optional<toml::source_position> find_deep_key(std::string_view text, std::size_t max_parts) {
    enum class In { CODE, BASIC, LITERAL, ML_BASIC, ML_LITERAL, COMMENT } in = In::CODE;
    std::size_t dots = 0;
    toml::source_index line = 1, col = 0;
    for (std::size_t i = 0; i < text.size(); ++i) {
        char c = text[i];
        if (c == '\n') {
            ++line;
            col = 0;
        } else {
            ++col;
        }
        auto at = [&](std::string_view s) { return text.substr(i, s.size()) == s; };
        switch (in) {
        case In::COMMENT:
            if (c == '\n') in = In::CODE, dots = 0;
            break;
        case In::BASIC:
            if (c == '\\') ++i, ++col;
            else if (c == '"' || c == '\n') in = In::CODE;
            break;
        case In::LITERAL:
            if (c == '\'' || c == '\n') in = In::CODE;
            break;
        case In::ML_BASIC:
            if (c == '\\') ++i, ++col;
            else if (at("\"\"\"")) in = In::CODE, i += 2, col += 2;
            break;
        case In::ML_LITERAL:
            if (at("'''")) in = In::CODE, i += 2, col += 2;
            break;
        case In::CODE:
            if (c == '.') {
                if (++dots >= max_parts) return toml::source_position{line, col};
            } else if (at("\"\"\"")) {
                in = In::ML_BASIC, i += 2, col += 2;
            } else if (at("'''")) {
                in = In::ML_LITERAL, i += 2, col += 2;
            } else if (c == '"') {
                in = In::BASIC; // a quoted part of a dotted key keeps the count going
            } else if (c == '\'') {
                in = In::LITERAL;
            } else if (c == '#') {
                in = In::COMMENT;
            } else if (!bare_key_char(c)) {
                dots = 0;
            }
            break;
        }
    }
    return std::nullopt;
}

std::optional<std::string> read_input_text(const std::filesystem::path& path, Reader& r) {
    std::error_code ec;
    auto st = std::filesystem::status(path, ec);
    if (std::filesystem::is_directory(st)) {
        r.error(toml::source_position{0, 0}, "", "cannot read file: it is a directory");
        return std::nullopt;
    }
    if (std::filesystem::exists(st) && !std::filesystem::is_regular_file(st)) {
        r.error(toml::source_position{0, 0}, "",
                "cannot read file: not a regular file (a device, FIFO or socket is never read as input)");
        return std::nullopt;
    }
    std::ifstream in(path, std::ios::binary);
    if (!in) {
        int e = errno;
        r.error(toml::source_position{0, 0}, "", fmt::format("cannot read file: {}", std::strerror(e ? e : ENOENT)));
        return std::nullopt;
    }
    auto size = std::filesystem::file_size(path, ec);
    if (!ec && size > MAX_INPUT_BYTES) {
        r.error(toml::source_position{0, 0}, "",
                fmt::format("cannot read file: {} bytes, more than the {} MiB an input file may have", size,
                            MAX_INPUT_BYTES >> 20));
        return std::nullopt;
    }
    std::string text;
    if (!ec) text.reserve(static_cast<std::size_t>(size));
    char chunk[1 << 16];
    while (in && text.size() <= MAX_INPUT_BYTES) {
        in.read(chunk, sizeof chunk);
        text.append(chunk, static_cast<std::size_t>(in.gcount()));
    }
    if (in.bad()) {
        r.error(toml::source_position{0, 0}, "", "cannot read file: I/O error");
        return std::nullopt;
    }
    if (text.size() > MAX_INPUT_BYTES) { // it grew while being read
        r.error(toml::source_position{0, 0}, "",
                fmt::format("cannot read file: more than the {} MiB an input file may have", MAX_INPUT_BYTES >> 20));
        return std::nullopt;
    }
    return text;
}

std::optional<toml::table> parse_toml_text(const std::string& text, Reader& r) {
    if (auto at = find_deep_key(text, MAX_KEY_PARTS)) {
        r.error(*at, "",
                fmt::format("a dotted key or table header of more than {} parts", MAX_KEY_PARTS));
        return std::nullopt;
    }
    try {
        return toml::parse(text, r.file());
    } catch (const toml::parse_error& e) {
        r.error(e.source().begin, "", fmt::format("TOML syntax error: {}", e.description()));
        return std::nullopt;
    }
}

std::optional<toml::table> parse_input_text(const std::string& text, Reader& r) {
    auto tbl = parse_toml_text(text, r);
    if (!tbl) return std::nullopt;
    if (tbl->empty()) {
        r.error_file("", "empty file: expected a [scenario] or [profile] table");
        return std::nullopt;
    }
    return tbl;
}

std::optional<toml::table> parse_file(const std::filesystem::path& path, Reader& r) {
    auto text = read_input_text(path, r);
    if (!text) return std::nullopt;
    return parse_input_text(*text, r);
}

} // namespace kdsim::scenario::detail
