#include "scenario/toml_reader.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace kdsim::scenario {

std::string Diagnostic::str() const {
    std::string s = file;
    if (line > 0) s += fmt::format(":{}:{}", line, column > 0 ? column : 1);
    s += ": error: ";
    if (!key.empty()) s += key + ": ";
    s += message;
    return s;
}

InputError::InputError(std::vector<Diagnostic> d) : diagnostics(std::move(d)) {}

const char* InputError::what() const noexcept {
    try {
        what_.clear();
        for (std::size_t i = 0; i < diagnostics.size(); ++i) {
            if (i) what_ += '\n';
            what_ += diagnostics[i].str();
        }
        return what_.c_str();
    } catch (...) {
        return "kdsim: invalid input";
    }
}

namespace detail {

namespace {

bool is_bare_key(std::string_view k) {
    if (k.empty()) return false;
    return std::all_of(k.begin(), k.end(), [](char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
    });
}

std::string format_double(double v) {
    if (std::isnan(v)) return "nan";
    if (std::isinf(v)) return v < 0 ? "-inf" : "inf";
    std::string s = fmt::format("{}", v);
    if (s.find_first_of(".e") == std::string::npos) s += ".0"; // a float looks like one
    return s;
}

std::string int_range(std::int64_t lo, std::int64_t hi) {
    if (lo == INT64_MIN && hi == INT64_MAX) return "an integer";
    if (hi == INT64_MAX) return fmt::format("an integer >= {}", lo);
    if (lo == INT64_MIN) return fmt::format("an integer <= {}", hi);
    return fmt::format("an integer from {} to {}", lo, hi);
}

// Why parse_duration/parse_bytes refused `text`, for the message.
std::string why_not(std::string_view text, std::initializer_list<std::string_view> units, std::string_view what) {
    std::string_view t = text;
    while (!t.empty() && (t.front() == ' ' || t.front() == '\t')) t.remove_prefix(1);
    while (!t.empty() && (t.back() == ' ' || t.back() == '\t')) t.remove_suffix(1);
    if (t.empty()) return "empty";
    if (t.front() == '-') return "negative";
    std::size_t i = 0;
    while (i < t.size() && ((t[i] >= '0' && t[i] <= '9') || t[i] == '.')) ++i;
    if (i == 0) return "no number before the unit";
    std::string_view unit = t.substr(i);
    while (!unit.empty() && (unit.front() == ' ' || unit.front() == '\t')) unit.remove_prefix(1);
    if (unit.empty()) return "no unit";
    if (std::find(units.begin(), units.end(), unit) == units.end()) return fmt::format("unknown unit '{}'", unit);
    return fmt::format("not a whole number of {}, or too large", what);
}

constexpr std::string_view DURATION_FORM = "a duration such as \"20 us\" (a number, then ps, ns, us, ms or s)";
constexpr std::string_view BYTES_FORM =
    "a byte count (an integer, or a string such as \"4 KiB\" with B, KiB, MiB or GiB)";

} // namespace

std::string join_key(std::string_view parent, std::string_view child) {
    std::string c = is_bare_key(child) ? std::string(child) : quote(child);
    if (parent.empty()) return c;
    return std::string(parent) + "." + c;
}

std::string index_key(std::string_view parent, std::size_t i) { return fmt::format("{}[{}]", parent, i); }

std::string quote(std::string_view s) {
    std::string out = "\"";
    std::size_t n = 0;
    for (char c : s) {
        if (++n > 60) {
            out += "...";
            break;
        }
        switch (c) {
        case '"': out += "\\\""; break;
        case '\\': out += "\\\\"; break;
        case '\n': out += "\\n"; break;
        case '\t': out += "\\t"; break;
        case '\r': out += "\\r"; break;
        default:
            if (static_cast<unsigned char>(c) < 0x20)
                out += fmt::format("\\u{:04X}", static_cast<unsigned>(c));
            else
                out += c;
        }
    }
    out += '"';
    return out;
}

std::string join_list(std::initializer_list<std::string_view> items) {
    std::string s;
    for (auto it : items) {
        if (!s.empty()) s += ", ";
        s += it;
    }
    return s;
}

std::string join_list(const std::vector<std::string>& items) {
    std::string s;
    for (auto& it : items) {
        if (!s.empty()) s += ", ";
        s += it;
    }
    return s;
}

std::string describe(const toml::node* n) {
    if (!n) return "nothing";
    switch (n->type()) {
    case toml::node_type::string: return "string " + quote(n->as_string()->get());
    case toml::node_type::integer: return fmt::format("integer {}", n->as_integer()->get());
    case toml::node_type::floating_point: return "float " + format_double(n->as_floating_point()->get());
    case toml::node_type::boolean: return n->as_boolean()->get() ? "boolean true" : "boolean false";
    case toml::node_type::table: return n->as_table()->is_inline() ? "an inline table" : "a table";
    case toml::node_type::array: {
        auto sz = n->as_array()->size();
        return sz == 0 ? "an empty array" : fmt::format("an array of {} element{}", sz, sz == 1 ? "" : "s");
    }
    case toml::node_type::date: return "a date";
    case toml::node_type::time: return "a time";
    case toml::node_type::date_time: return "a date-time";
    case toml::node_type::none: break;
    }
    return "nothing";
}

std::string display_path(const std::filesystem::path& p) {
    namespace fs = std::filesystem;
    if (p.is_relative()) return p.lexically_normal().generic_string();
    std::error_code ec;
    fs::path cwd = fs::current_path(ec);
    if (!ec) {
        fs::path rel = p.lexically_normal().lexically_relative(cwd);
        if (!rel.empty() && *rel.begin() != "..") return rel.generic_string();
    }
    return p.lexically_normal().generic_string();
}

std::optional<std::filesystem::path> root_at_or_above(const std::filesystem::path& start) {
    namespace fs = std::filesystem;
    std::error_code ec;
    for (fs::path dir = start; !dir.empty(); dir = dir.parent_path()) {
        if (fs::is_directory(dir / "data" / "profiles", ec)) return dir;
        if (dir == dir.parent_path()) break;
    }
    return std::nullopt;
}

bool profile_name_stays_below(std::string_view name) {
    return name.find("..") == std::string_view::npos && !name.starts_with('/') &&
           name.find('\\') == std::string_view::npos;
}

void sort_diagnostics(std::vector<Diagnostic>& d, const std::string& first_file) {
    std::vector<std::string> files = {first_file};
    for (auto& x : d)
        if (std::find(files.begin(), files.end(), x.file) == files.end()) files.push_back(x.file);
    auto rank = [&](const std::string& f) { return std::find(files.begin(), files.end(), f) - files.begin(); };
    std::stable_sort(d.begin(), d.end(), [&](const Diagnostic& a, const Diagnostic& b) {
        auto ra = rank(a.file), rb = rank(b.file);
        if (ra != rb) return ra < rb;
        if (a.line != b.line) return a.line < b.line;
        return a.column < b.column;
    });
}

void Reader::error(const toml::source_position& at, std::string key, std::string message) {
    ++errors_;
    // line 0: the file as a whole (it cannot be read); nodes always carry a position.
    out_.push_back(
        Diagnostic{file_, static_cast<int>(at.line), static_cast<int>(at.column), std::move(key), std::move(message)});
}

void Reader::error(const toml::source_region& at, std::string key, std::string message) {
    if (at.path && *at.path != file_) { // a value set from elsewhere (`--set`): named by its origin
        ++errors_;
        out_.push_back(Diagnostic{*at.path, 0, 0, std::move(key), std::move(message)});
        return;
    }
    error(at.begin, std::move(key), std::move(message));
}

std::size_t edit_distance(std::string_view a, std::string_view b) {
    std::vector<std::size_t> row(b.size() + 1);
    for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
    for (std::size_t i = 1; i <= a.size(); ++i) {
        std::size_t diag = row[0];
        row[0] = i;
        for (std::size_t j = 1; j <= b.size(); ++j) {
            std::size_t up = row[j];
            row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
            diag = up;
        }
    }
    return row[b.size()];
}

std::vector<std::string> nearest(std::string_view word, const std::vector<std::string_view>& candidates) {
    std::size_t best = std::max<std::size_t>(2, word.size() / 3); // farther than this is no hint
    std::vector<std::string> out;
    for (std::string_view c : candidates) {
        std::size_t d = edit_distance(word, c);
        if (d > best) continue;
        if (d < best) out.clear(), best = d;
        out.emplace_back(c);
    }
    return out;
}

std::string did_you_mean(std::string_view word, const std::vector<std::string_view>& candidates) {
    std::vector<std::string> near = nearest(word, candidates);
    if (near.empty()) return "";
    for (std::string& n : near) n = "'" + n + "'";
    return fmt::format("did you mean {}? ", near.size() == 1 ? near[0] : "one of " + join_list(near));
}

void Reader::missing(const toml::table& parent, const std::string& key, std::string_view what, std::string_view note) {
    std::string msg = fmt::format("expected {}, found nothing", what);
    if (!note.empty()) msg += fmt::format(" ({})", note);
    error(parent, key, std::move(msg));
}

void Reader::check_keys(const toml::table& tbl, std::string_view table_key, std::string_view where,
                        std::initializer_list<std::string_view> allowed) {
    check_keys(tbl, table_key, where, std::vector<std::string_view>(allowed));
}

void Reader::check_keys(const toml::table& tbl, std::string_view table_key, std::string_view where,
                        const std::vector<std::string_view>& allowed) {
    for (auto&& [k, v] : tbl) {
        if (std::find(allowed.begin(), allowed.end(), k.str()) != allowed.end()) continue;
        std::string list;
        for (auto a : allowed) {
            if (!list.empty()) list += ", ";
            list += a;
        }
        error(k.source(), join_key(table_key, k.str()),
              fmt::format("unknown key '{}' in {}; {}expected one of: {}", k.str(), where, did_you_mean(k.str(), allowed),
                          list));
    }
}

const toml::table* Reader::table(const toml::table& parent, std::string_view name, const std::string& key,
                                 bool required, std::string_view what) {
    const toml::node* n = parent.get(name);
    if (!n) {
        if (required) missing(parent, key, what);
        return nullptr;
    }
    if (!n->is_table()) {
        error(*n, key, fmt::format("expected {}, found {}", what, describe(n)));
        return nullptr;
    }
    return n->as_table();
}

const toml::array* Reader::array(const toml::table& parent, std::string_view name, const std::string& key,
                                 bool required, std::string_view what) {
    const toml::node* n = parent.get(name);
    if (!n) {
        if (required) missing(parent, key, what);
        return nullptr;
    }
    if (!n->is_array()) {
        error(*n, key, fmt::format("expected {}, found {}", what, describe(n)));
        return nullptr;
    }
    return n->as_array();
}

std::optional<std::string> Reader::string(const toml::table& parent, std::string_view name, const std::string& key,
                                          bool required, bool non_empty) {
    std::string_view what = non_empty ? "a non-empty string" : "a string";
    const toml::node* n = parent.get(name);
    if (!n) {
        if (required) missing(parent, key, what);
        return std::nullopt;
    }
    if (!n->is_string() || (non_empty && n->as_string()->get().empty())) {
        error(*n, key, fmt::format("expected {}, found {}", what, describe(n)));
        return std::nullopt;
    }
    return n->as_string()->get();
}

std::optional<std::string> Reader::name(const toml::table& parent, std::string_view name, const std::string& key,
                                        bool required, bool path) {
    auto s = string(parent, name, key, required);
    if (!s) return std::nullopt;
    auto bad = std::find_if(s->begin(), s->end(), [&](unsigned char c) {
        return c < 0x20 || c == 0x7f || c == ' ' || (!path && c == '/');
    });
    if (s->size() > MAX_NAME_BYTES || bad != s->end()) {
        error(*parent.get(name), key,
              fmt::format("expected a name of at most {} bytes with no space, control character{}; found {}",
                          MAX_NAME_BYTES, path ? "" : " or '/' (names are parts of statistic paths)",
                          describe(parent.get(name))));
        return std::nullopt;
    }
    return s;
}

std::optional<std::int64_t> Reader::integer(const toml::table& parent, std::string_view name, const std::string& key,
                                            bool required, std::int64_t lo, std::int64_t hi) {
    const toml::node* n = parent.get(name);
    std::string what = int_range(lo, hi);
    if (!n) {
        if (required) missing(parent, key, what);
        return std::nullopt;
    }
    if (!n->is_integer()) {
        error(*n, key, fmt::format("expected {}, found {}", what, describe(n)));
        return std::nullopt;
    }
    std::int64_t v = n->as_integer()->get();
    if (v < lo || v > hi) {
        error(*n, key, fmt::format("expected {}, found {}", what, v));
        return std::nullopt;
    }
    return v;
}

std::optional<bool> Reader::boolean(const toml::table& parent, std::string_view name, const std::string& key,
                                    bool required) {
    const toml::node* n = parent.get(name);
    if (!n) {
        if (required) missing(parent, key, "true or false");
        return std::nullopt;
    }
    if (!n->is_boolean()) {
        error(*n, key, fmt::format("expected true or false, found {}", describe(n)));
        return std::nullopt;
    }
    return n->as_boolean()->get();
}

std::optional<engine::Tick> Reader::duration(const toml::table& parent, std::string_view name, const std::string& key,
                                             bool required, bool positive) {
    const toml::node* n = parent.get(name);
    if (!n) {
        if (required)
            missing(parent, key, positive ? fmt::format("a positive {}", DURATION_FORM.substr(2)) : DURATION_FORM);
        return std::nullopt;
    }
    return duration(*n, key, positive);
}

std::optional<engine::Tick> Reader::duration(const toml::node& n, const std::string& key, bool positive) {
    std::string what = positive ? fmt::format("a positive {}", DURATION_FORM.substr(2)) : std::string(DURATION_FORM);
    if (!n.is_string()) {
        std::string hint;
        if (n.is_number()) hint = " (write the unit: \"<number> us\")";
        error(n, key, fmt::format("expected {}, found {}{}", what, describe(&n), hint));
        return std::nullopt;
    }
    auto t = parse_duration(n.as_string()->get());
    if (!t) {
        error(n, key,
              fmt::format("expected {}, found {} ({})", what, describe(&n),
                          why_not(n.as_string()->get(), {"ps", "ns", "us", "\xC2\xB5s", "ms", "s"}, "picoseconds")));
        return std::nullopt;
    }
    if (positive && *t == 0) {
        error(n, key, fmt::format("expected {}, found {}", what, describe(&n)));
        return std::nullopt;
    }
    if (*t > MAX_DURATION) {
        error(n, key,
              fmt::format("expected at most 1 h of simulated time (no run, period or delay is longer: a datapath "
                          "question is answered in seconds, and now + such a time must not wrap the clock), found {}",
                          describe(&n)));
        return std::nullopt;
    }
    return t;
}

std::optional<std::uint64_t> Reader::rate(const toml::node& n, const std::string& key) {
    if (auto v = n.value<std::string>())
        if (auto bps = parse_rate(*v)) return bps;
    error(n, key,
          fmt::format("expected a rate such as \"1 Gbit/s\" (a decimal number, then bit/s, kbit/s, Mbit/s, Gbit/s or "
                      "Tbit/s; a whole number of bit/s from 1 bit/s to 10 Tbit/s), found {}",
                      describe(&n)));
    return std::nullopt;
}

std::optional<std::uint64_t> Reader::bytes(const toml::table& parent, std::string_view name, const std::string& key,
                                           bool required, bool positive, bool physical) {
    const toml::node* n = parent.get(name);
    if (!n) {
        if (required) missing(parent, key, positive ? fmt::format("a positive {}", BYTES_FORM.substr(2)) : BYTES_FORM);
        return std::nullopt;
    }
    return bytes(*n, key, positive, physical);
}

std::optional<std::uint64_t> Reader::bytes(const toml::node& n, const std::string& key, bool positive, bool physical) {
    std::string what = positive ? fmt::format("a positive {}", BYTES_FORM.substr(2)) : std::string(BYTES_FORM);
    std::optional<std::uint64_t> v;
    if (n.is_integer()) {
        std::int64_t i = n.as_integer()->get();
        if (i >= 0) v = static_cast<std::uint64_t>(i);
    } else if (n.is_string()) {
        v = parse_bytes(n.as_string()->get());
    }
    if (!v && n.is_string() && !n.as_string()->get().empty()) {
        std::string why = why_not(n.as_string()->get(), {"B", "KiB", "MiB", "GiB", "TiB"}, "bytes");
        if (why == "no unit") why = "not a whole number of bytes, or too large";
        error(n, key, fmt::format("expected {}, found {} ({})", what, describe(&n), why));
        return std::nullopt;
    }
    if (!v || (positive && *v == 0)) {
        error(n, key, fmt::format("expected {}, found {}", what, describe(&n)));
        return std::nullopt;
    }
    if (physical && *v > (std::uint64_t{1} << 52)) {
        error(n, key, fmt::format("expected at most 4 PiB (2^52 bytes: a 52-bit physical address space), found {}",
                                  describe(&n)));
        return std::nullopt;
    }
    if (!physical && *v > MAX_SIZE_BYTES) {
        error(n, key, fmt::format("expected at most 1 GiB (the largest TCP window Linux advertises is 65535 << 14; "
                                  "the model allocates state for what a size covers), found {}",
                                  describe(&n)));
        return std::nullopt;
    }
    return v;
}

std::optional<std::size_t> Reader::choice(const toml::table& parent, std::string_view name, const std::string& key,
                                          bool required, const std::vector<std::string_view>& names) {
    std::string list;
    for (auto nm : names) {
        if (!list.empty()) list += ", ";
        list += nm;
    }
    const toml::node* n = parent.get(name);
    if (!n) {
        if (required) missing(parent, key, fmt::format("one of: {}", list));
        return std::nullopt;
    }
    if (n->is_string()) {
        const std::string& s = n->as_string()->get();
        for (std::size_t i = 0; i < names.size(); ++i)
            if (names[i] == s) return i;
    }
    error(*n, key, fmt::format("expected one of: {}; found {}", list, describe(n)));
    return std::nullopt;
}

} // namespace detail
} // namespace kdsim::scenario
