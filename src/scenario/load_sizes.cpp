// Size lists of module_load and hash_list: inline (sizes = [...]) or a TSV file below the root
// (sizes_file, size_column, match_column, match), optionally sampled without replacement.
#include "scenario/loader.h"

#include "engine/rng.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <fstream>

namespace kdsim::scenario::detail {

namespace {

namespace fs = std::filesystem;

// Errors reported for one size-list file before the rest are only counted.
constexpr int MAX_ROW_ERRORS = 10;

} // namespace

int for_each_data_row(const std::filesystem::path& file, const std::function<void(int, std::string_view)>& row) {
    std::ifstream in(file);
    std::string line;
    int lineno = 0;
    while (std::getline(in, line)) {
        ++lineno;
        if (!line.empty() && line.back() == '\r') line.pop_back();
        if (line.empty() || line.front() == '#') continue;
        row(lineno, line);
    }
    return lineno;
}

void RowErrors::at(int line, int col, std::string msg) {
    if (++bad_ <= MAX_ROW_ERRORS)
        r_.error(toml::source_position{static_cast<toml::source_index>(line), static_cast<toml::source_index>(col)}, key_,
                 std::move(msg));
}

void RowErrors::finish(int last) {
    if (bad_ > MAX_ROW_ERRORS)
        r_.error(toml::source_position{static_cast<toml::source_index>(last), 1}, key_,
                 fmt::format("{} more bad rows not listed", bad_ - MAX_ROW_ERRORS));
}

std::vector<std::string_view> split_tabs(std::string_view line) {
    std::vector<std::string_view> cols;
    while (true) {
        auto tab = line.find('\t');
        cols.push_back(line.substr(0, tab));
        if (tab == std::string_view::npos) return cols;
        line.remove_prefix(tab + 1);
    }
}

std::optional<std::filesystem::path> ScenarioLoader::data_file(const toml::node& at, const std::string& key,
                                                               const std::string& rel, std::string_view what) {
    const fs::path* rt = root(at, key);
    if (!rt) return std::nullopt;
    fs::path relp = fs::path(rel).lexically_normal();
    if (relp.is_absolute() || relp.has_root_name() || (!relp.empty() && *relp.begin() == "..")) {
        r_.error(at, key, fmt::format("expected a path below the root ({}), found {}", detail::display_path(*rt), describe(&at)));
        return std::nullopt;
    }
    fs::path path = *rt / relp;
    const std::string display = detail::display_path(path);
    const std::string name = key.substr(key.rfind('.') + 1);
    std::error_code ec;
    if (!fs::is_regular_file(path, ec) || !std::ifstream(path)) {
        r_.error(at, key, fmt::format("no {} {} ({} is relative to the root, {})", what, display, name,
                                      fs::absolute(*rt, ec).lexically_normal().generic_string()));
        return std::nullopt;
    }
    if (auto size = fs::file_size(path, ec); !ec && size > detail::MAX_INPUT_BYTES) {
        r_.error(at, key, fmt::format("the {} {} has {} bytes, more than the {} MiB an input file may have", what, display,
                                      size, detail::MAX_INPUT_BYTES >> 20));
        return std::nullopt;
    }
    return path;
}

std::optional<std::vector<std::uint64_t>> ScenarioLoader::read_sizes(const toml::table& w, const std::string& wkey,
                                                                     std::optional<std::string> stream,
                                                                     std::uint64_t seed, std::uint64_t min_size,
                                                                     std::string_view min_reason) {
    const toml::node* inline_sizes = w.get("sizes");
    const toml::node* file_node = w.get("sizes_file");
    if (!inline_sizes && !file_node) {
        r_.missing(w, wkey + ".sizes", "sizes = [byte counts] or sizes_file = \"<TSV relative to the root>\"");
        return std::nullopt;
    }
    if (inline_sizes && file_node) {
        r_.error(*file_node, wkey + ".sizes_file", "expected either sizes or sizes_file, found both");
        return std::nullopt;
    }
    // A size with where it came from, for the minimum-size check after sampling.
    struct Row {
        std::uint64_t size;
        const toml::node* node; // inline element
        std::size_t index;      // its index in sizes
        int line;               // TSV line
    };
    std::vector<Row> rows;
    std::string tsv_display;
    bool ok = true;
    if (inline_sizes) {
        for (std::string_view k : {"size_column", "match_column", "match"}) {
            if (const toml::node* n = w.get(k)) {
                r_.error(*n, join_key(wkey, k), "only valid with sizes_file, not with an inline sizes list");
                ok = false;
            }
        }
        const toml::array* a = inline_sizes->as_array();
        if (!a || a->empty()) {
            r_.error(*inline_sizes, wkey + ".sizes",
                     fmt::format("expected a non-empty list of byte counts, found {}", describe(inline_sizes)));
            return std::nullopt;
        }
        for (std::size_t i = 0; i < a->size(); ++i) {
            auto b = r_.bytes(*a->get(i), index_key(wkey + ".sizes", i), false);
            if (b)
                rows.push_back({*b, a->get(i), i, 0});
            else
                ok = false;
        }
    } else {
        auto rel = r_.string(w, "sizes_file", wkey + ".sizes_file", true);
        auto size_col = r_.integer(w, "size_column", wkey + ".size_column", false, 1, 1000).value_or(2);
        auto match_col = r_.integer(w, "match_column", wkey + ".match_column", false, 1, 1000);
        auto match = r_.string(w, "match", wkey + ".match", false);
        if (match_col.has_value() != match.has_value()) {
            const toml::node* n = match_col ? w.get("match_column") : w.get("match");
            if (n)
                r_.error(*n, match_col ? wkey + ".match" : wkey + ".match_column",
                         "match_column and match go together: give both or neither");
            return std::nullopt;
        }
        if (!rel) return std::nullopt;
        auto path = data_file(*file_node, wkey + ".sizes_file", *rel, "sizes file");
        if (!path) return std::nullopt;
        tsv_display = detail::display_path(*path);
        Reader tsv(tsv_display, out_);
        RowErrors errors(tsv, wkey + ".sizes_file");
        const int last = for_each_data_row(*path, [&](int lineno, std::string_view line) {
            const std::vector<std::string_view> cols = split_tabs(line);
            std::int64_t need = std::max<std::int64_t>(size_col, match_col.value_or(0));
            if (static_cast<std::int64_t>(cols.size()) < need) {
                errors.at(lineno, 1, fmt::format("row has {} tab-separated column{}, expected at least {}", cols.size(),
                                                 cols.size() == 1 ? "" : "s", need));
                return;
            }
            if (match_col && cols[static_cast<std::size_t>(*match_col - 1)] != *match) return;
            std::string_view cell = cols[static_cast<std::size_t>(size_col - 1)];
            std::uint64_t v = 0;
            auto [p, e] = std::from_chars(cell.data(), cell.data() + cell.size(), v);
            if (cell.empty() || e != std::errc() || p != cell.data() + cell.size()) {
                errors.at(lineno, 1, fmt::format("expected a byte count (a non-negative integer) in column {}, found {}",
                                                 size_col, quote(cell)));
                return;
            }
            rows.push_back({v, nullptr, 0, lineno});
        });
        errors.finish(last);
        if (errors.any()) ok = false;
        if (ok && rows.empty()) {
            r_.error(*file_node, wkey + ".sizes_file",
                     fmt::format("expected a non-empty size list, found no rows in {}{}", tsv_display,
                                 match ? fmt::format(" with column {} equal to {}", *match_col, quote(*match)) : ""));
            return std::nullopt;
        }
    }
    if (const toml::node* s = w.get("sample")) {
        auto n = r_.integer(w, "sample", wkey + ".sample", false, 1, INT64_MAX);
        if (n && ok && static_cast<std::uint64_t>(*n) > rows.size()) {
            r_.error(*s, wkey + ".sample",
                     fmt::format("expected at most {} (the sizes available), found {}", rows.size(), *n));
            ok = false;
        }
        if (!n) ok = false;
        if (ok && stream) {
            // Partial Fisher-Yates: rows[0..k) become a uniform sample without replacement,
            // in draw order.
            engine::Rng rng(seed, *stream);
            auto k = static_cast<std::size_t>(*n);
            for (std::size_t i = 0; i < k; ++i) {
                std::size_t j = i + static_cast<std::size_t>(rng.below(rows.size() - i));
                std::swap(rows[i], rows[j]);
            }
            rows.resize(k);
        }
    }
    if (!ok || !stream) return std::nullopt;
    std::vector<std::uint64_t> sizes;
    sizes.reserve(rows.size());
    for (auto& row : rows) {
        if (row.size < min_size) {
            std::string msg =
                fmt::format("a size of {} bytes is smaller than {} ({} bytes)", row.size, min_reason, min_size);
            if (row.node)
                r_.error(*row.node, index_key(wkey + ".sizes", row.index), std::move(msg));
            else
                Reader(tsv_display, out_)
                    .error(toml::source_position{static_cast<toml::source_index>(row.line), 1}, wkey + ".sizes_file",
                           std::move(msg));
            ok = false;
            continue;
        }
        sizes.push_back(row.size);
    }
    if (!ok) return std::nullopt;
    return sizes;
}

} // namespace kdsim::scenario::detail
