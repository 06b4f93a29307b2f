// module_load's modules_file: the modules a boot loads, in order, one per line as
// "<module name>[<TAB><signature hash>]" ('#' comments), each found by name in the sizes_file
// (the kernel package's "<path>\t<size>" list; kmod treats '-' and '_' in names alike).
#include "scenario/loader.h"

#include <fmt/format.h>

#include <charconv>
#include <map>

namespace kdsim::scenario::detail {

namespace {

// A module's name as kmod compares it: the file name without ".ko", '-' as '_'.
std::string module_name(std::string_view path) {
    std::string n(path.substr(path.rfind('/') == std::string_view::npos ? 0 : path.rfind('/') + 1));
    if (n.size() > 3 && n.compare(n.size() - 3, 3, ".ko") == 0) n.resize(n.size() - 3);
    for (char& c : n)
        if (c == '-') c = '_';
    return n;
}

} // namespace

std::optional<system::ModuleList> ScenarioLoader::read_module_list(const toml::table& w, const std::string& wkey,
                                                                   crypto::HashAlg default_alg, std::uint64_t min_size,
                                                                   std::string_view min_reason,
                                                                   const system::Profile* profile) {
    for (std::string_view k : {"sizes", "sample", "match", "match_column", "size_column"})
        if (const toml::node* n = w.get(k)) {
            r_.error(*n, join_key(wkey, k), "not valid with modules_file: the list names the modules, sizes_file gives their sizes");
            return std::nullopt;
        }
    const toml::node* list_node = w.get("modules_file");
    const toml::node* sizes_node = w.get("sizes_file");
    auto list_rel = r_.string(w, "modules_file", wkey + ".modules_file", true);
    auto sizes_rel = r_.string(w, "sizes_file", wkey + ".sizes_file", true);
    if (!list_rel || !sizes_rel) return std::nullopt;
    auto sizes_path = data_file(*sizes_node, wkey + ".sizes_file", *sizes_rel, "sizes file");
    auto list_path = data_file(*list_node, wkey + ".modules_file", *list_rel, "module list");
    if (!sizes_path || !list_path) return std::nullopt;

    // name -> size, from the package's "<path>\t<size>" rows
    std::map<std::string, std::uint64_t> size_of;
    {
        Reader tsv(display_path(*sizes_path), out_);
        RowErrors errors(tsv, wkey + ".sizes_file");
        const int last = for_each_data_row(*sizes_path, [&](int lineno, std::string_view line) {
            const auto cols = split_tabs(line);
            std::uint64_t v = 0;
            auto [p, e] = cols.size() == 2 ? std::from_chars(cols[1].data(), cols[1].data() + cols[1].size(), v)
                                           : std::from_chars_result{nullptr, std::errc::invalid_argument};
            if (cols.size() != 2 || cols[0].empty() || cols[1].empty() || e != std::errc() || p != cols[1].data() + cols[1].size()) {
                errors.at(lineno, 1, fmt::format("expected \"<module path>\\t<size in bytes>\", found {}", quote(line)));
                return;
            }
            size_of[module_name(cols[0])] = v;
        });
        errors.finish(last);
        if (errors.any()) return std::nullopt;
    }

    system::ModuleList out;
    Reader list(display_path(*list_path), out_);
    RowErrors errors(list, wkey + ".modules_file");
    const int last = for_each_data_row(*list_path, [&](int lineno, std::string_view line) {
        const auto cols = split_tabs(line);
        if (cols.size() > 2 || cols[0].empty()) {
            errors.at(lineno, 1, fmt::format("expected \"<module name>\" or \"<module name>\\t<signature hash>\", found {}", quote(line)));
            return;
        }
        auto it = size_of.find(module_name(cols[0]));
        if (it == size_of.end()) {
            errors.at(lineno, 1, fmt::format("expected a module of {}, found {}", display_path(*sizes_path), quote(cols[0])));
            return;
        }
        crypto::HashAlg alg = default_alg;
        if (cols.size() == 2) {
            auto a = crypto::hash_alg_from_string(cols[1]);
            if (!a) {
                errors.at(lineno, static_cast<int>(cols[0].size()) + 2,
                          fmt::format("expected a signature hash the kernel model has (sha1, sha256 or sha512), found {}",
                                      quote(cols[1])));
                return;
            }
            if (profile && !profile->hash.has(*a, crypto::HashImpl::GENERIC)) {
                errors.at(lineno, static_cast<int>(cols[0].size()) + 2,
                          fmt::format("the profile has no [hash.{}.generic] figures", cols[1]));
                return;
            }
            alg = *a;
        }
        if (it->second < min_size) {
            errors.at(lineno, 1, fmt::format("module {} has {} bytes, fewer than {} ({} bytes)", quote(cols[0]), it->second,
                                             min_reason, min_size));
            return;
        }
        out.sizes.push_back(it->second);
        out.algs.push_back(alg);
    });
    errors.finish(last);
    if (errors.any()) return std::nullopt;
    if (out.sizes.empty()) {
        r_.error(*list_node, wkey + ".modules_file", fmt::format("expected at least one module, found none in {}", display_path(*list_path)));
        return std::nullopt;
    }
    return out;
}

} // namespace kdsim::scenario::detail
