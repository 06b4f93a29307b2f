// Architecture profiles: data/profiles/<family>/<part>.toml -> system::Profile.
//
// Every figure is an inline table { value, unit, source }. A figure that is missing, has the
// wrong unit or no source is an error, never a zero (SPEC 2.7). Integer figures (cycles,
// bytes, Hz) may be written fractionally and are rounded to the nearest integer.
#include "scenario/figure_reader.h"
#include "scenario/stock_profiles.h"

#include "crypto/digest.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <mutex>
#include <string>

namespace kdsim::scenario::detail {

namespace {

namespace fs = std::filesystem;

constexpr std::array<std::string_view, 6> SECTIONS = {"cpu", "sched", "irq", "irqflags", "bh", "simd"};
constexpr std::array<std::string_view, 23> TOP_KEYS = {"profile", "memory", "cpu",  "sched", "irq",     "irqflags", "bh",
                                                       "simd",    "hash", "irqmask", "net", "dma", "tcp",
                                                       "cipher", "skcipher", "tunnel", "virt", "kvm", "udp", "flush", "netfilter", "variation", "pcie"};
constexpr std::array<crypto::HashAlg, 3> ALGS = {crypto::HashAlg::SHA1, crypto::HashAlg::SHA256,
                                                 crypto::HashAlg::SHA512};

std::string_view simd_unit_of(arch::Arch a) {
    switch (a) {
    case arch::Arch::X86_64: return "x86-fpu";
    case arch::Arch::ARM32: return "arm32-neon";
    case arch::Arch::ARM64: return "arm64-fpsimd";
    case arch::Arch::PPC32_E500: return "ppc-spe";
    }
    return "?";
}

// The hash implementations the kernel has on each architecture.
std::vector<crypto::HashImpl> impls_for(arch::Arch a) {
    using crypto::HashImpl;
    switch (a) {
    case arch::Arch::X86_64:
        return {HashImpl::GENERIC, HashImpl::SSSE3, HashImpl::AVX, HashImpl::AVX2, HashImpl::SHANI};
    case arch::Arch::ARM32: return {HashImpl::GENERIC, HashImpl::ARM, HashImpl::NEON, HashImpl::CE};
    case arch::Arch::ARM64: return {HashImpl::GENERIC, HashImpl::ARM64, HashImpl::NEON, HashImpl::CE};
    case arch::Arch::PPC32_E500: return {HashImpl::GENERIC, HashImpl::PPC, HashImpl::SPE};
    }
    return {};
}



void read_header(Reader& r, const toml::table& root, const fs::path& file, system::Profile& p) {
    const toml::table* h =
        r.table(root, "profile", "profile", true, "a table [profile] with name, arch and description");
    if (!h) return;
    r.check_keys(*h, "profile", "[profile]", {"name", "arch", "description", "base", "without"});
    if (auto name = r.name(*h, "name", "profile.name", true, true)) {
        auto expected = profile_name_from_path(file);
        if (expected && *name != *expected)
            r.error(*h->get("name"), "profile.name",
                    fmt::format("expected \"{}\" (the file's path under data/profiles, without .toml), found {}",
                                *expected, quote(*name)));
        else
            p.name = *name;
    }
    const std::vector<std::string_view> arches = {"x86_64", "arm32", "arm64", "ppc32-e500"};
    if (auto idx = r.choice(*h, "arch", "profile.arch", true, arches)) p.arch = *arch::arch_from_string(arches[*idx]);
    if (auto d = r.string(*h, "description", "profile.description", true)) p.description = *d;
}

// [cpu], [sched], [irq], [irqflags], [bh], [simd]: required, every figure of the section's table.
void read_sections(Reader& r, const toml::table& root, system::Profile& p, bool arch_ok) {
    for (std::string_view sec : SECTIONS) {
        std::vector<std::string_view> keys;
        if (sec == "simd") keys.push_back("unit");
        for (auto n : sec == "cpu"    ? figure_names(system::CPU_FIGURES)
                      : sec == "simd" ? figure_names(system::SIMD_FIGURES, {}, false)
                                      : figure_names(system::KERNEL_FIGURES, sec))
            keys.push_back(n);
        std::vector<std::string_view> allowed = keys;
        if (sec == "simd") // optional figures: required only by the mechanisms that use them (SPE traps)
            for (const auto& f : system::SIMD_FIGURES)
                if (f.optional()) allowed.push_back(f.name);
        std::string what = fmt::format("a table [{}] with {}", sec, [&] {
            std::string s;
            for (auto k : keys) s += (s.empty() ? "" : ", ") + std::string(k);
            return s;
        }());
        const toml::table* t = r.table(root, sec, std::string(sec), true, what);
        if (!t) continue;
        r.check_keys(*t, sec, fmt::format("[{}]", sec), allowed);
        if (sec == "cpu") {
            read_figures(r, *t, sec, system::CPU_FIGURES, p);
        } else if (sec == "simd") {
            read_figures(r, *t, sec, system::SIMD_FIGURES, p.simd);
            std::vector<std::string_view> units = {"x86-fpu", "arm32-neon", "arm64-fpsimd", "ppc-spe"};
            if (auto idx = r.choice(*t, "unit", "simd.unit", true, units)) {
                if (arch_ok && units[*idx] != simd_unit_of(p.arch))
                    r.error(*t->get("unit"), "simd.unit",
                            fmt::format("expected \"{}\" (the SIMD unit of arch {}), found \"{}\"",
                                        simd_unit_of(p.arch), arch::to_string(p.arch), units[*idx]));
                else
                    p.simd_unit = std::string(units[*idx]);
            }
        } else {
            read_figures(r, *t, sec, system::KERNEL_FIGURES, p.kernel, sec);
        }
    }
}

void read_hash(Reader& r, const toml::table& root, system::Profile& p, bool arch_ok) {
    const toml::table* h =
        r.table(root, "hash", "hash", true,
                "tables [hash.<alg>.<impl>] with a generic implementation of sha1, sha256 and sha512");
    if (!h) return;
    r.check_keys(*h, "hash", "[hash] (hash algorithms)", {"sha1", "sha256", "sha512"});
    for (crypto::HashAlg alg : ALGS) {
        std::string_view an = crypto::to_string(alg);
        std::string akey = fmt::format("hash.{}", an);
        const toml::table* at =
            r.table(*h, an, akey, true,
                    fmt::format("a table [{}.generic] (every algorithm needs its generic implementation)", akey));
        if (!at) continue;
        if (!at->contains("generic"))
            r.missing(*at, akey + ".generic",
                      fmt::format("a table [{}.generic] with cycles_per_byte and cycles_per_call", akey),
                      "every algorithm needs its generic implementation");
        for (auto&& [k, node] : *at) {
            std::string ikey = join_key(akey, k.str());
            auto impl = crypto::hash_impl_from_string(k.str());
            if (!impl) {
                std::vector<std::string> names;
                for (std::size_t i = 0; i < crypto::HASH_IMPLS; ++i)
                    names.emplace_back(crypto::to_string(static_cast<crypto::HashImpl>(i)));
                r.error(
                    k.source().begin, ikey,
                    fmt::format("unknown hash implementation '{}'; expected one of: {}", k.str(), join_list(names)));
                continue;
            }
            if (arch_ok) {
                auto allowed = impls_for(p.arch);
                if (std::find(allowed.begin(), allowed.end(), *impl) == allowed.end()) {
                    std::vector<std::string> names;
                    for (auto i : allowed) names.emplace_back(crypto::to_string(i));
                    r.error(k.source().begin, ikey,
                            fmt::format("implementation '{}' does not exist on arch {}; expected one of: {}", k.str(),
                                        arch::to_string(p.arch), join_list(names)));
                    continue;
                }
            }
            const toml::table* it = node.as_table();
            if (!it) {
                r.error(node, ikey,
                        fmt::format("expected a table [{}] with cycles_per_byte and cycles_per_call, found {}", ikey,
                                    describe(&node)));
                continue;
            }
            r.check_keys(*it, ikey, fmt::format("[{}]", ikey), figure_names(system::HASH_FIGURES));
            crypto::HashCost c;
            if (read_figures(r, *it, ikey, system::HASH_FIGURES, c)) p.hash.set(alg, *impl, c);
        }
    }
}


// Profiles already read in this process, by path and by the text they were read from: a run of
// many scenarios (experiments, sweeps) parses each profile once. Only valid profiles are kept;
// a file whose text changed is read again.
struct CachedProfile {
    std::string text;
    system::Profile profile;
};
std::mutex profile_cache_mutex;
std::map<std::string, CachedProfile> profile_cache;

std::optional<system::Profile> cached_profile(const std::string& key, const std::string& text) {
    std::lock_guard lock(profile_cache_mutex);
    auto it = profile_cache.find(key);
    if (it == profile_cache.end() || it->second.text != text) return std::nullopt;
    return it->second.profile;
}

void cache_profile(std::string key, std::string text, const system::Profile& p) {
    std::lock_guard lock(profile_cache_mutex);
    profile_cache.insert_or_assign(std::move(key), CachedProfile{std::move(text), p});
}

// A figure: an inline table { value, unit, source }.
bool is_figure(const toml::node& n) {
    const toml::table* t = n.as_table();
    return t && t->contains("value");
}

// `over` merged into `base`: a figure or a plain value replaces the base's of the same key, a
// table of figures merges key by key, a key only in the base stays.
void overlay(toml::table& base, const toml::table& over) {
    for (auto&& [k, v] : over) {
        toml::node* b = base.get(k);
        if (b && b->is_table() && v.is_table() && !is_figure(*b) && !is_figure(v))
            overlay(*b->as_table(), *v.as_table());
        else
            base.insert_or_assign(k, v);
    }
}

// The data/profiles file a `base` names, searched for at or above the profile's own directory
// as the scenario loader searches for the repository root.
std::optional<fs::path> base_file(Reader& r, const toml::node& at, const fs::path& file, const std::string& name) {
    if (name.empty() || !profile_name_stays_below(name) || name.ends_with(".toml")) {
        r.error(at, "profile.base",
                fmt::format("expected a profile name such as \"x86/intel-icelake-server\" (a path below "
                            "data/profiles without .toml), found {}",
                            quote(name)));
        return std::nullopt;
    }
    std::error_code ec;
    const fs::path start = fs::absolute(file, ec).parent_path();
    if (const auto root = root_at_or_above(start)) {
        fs::path f = *root / "data" / "profiles" / (name + ".toml");
        if (fs::is_regular_file(f, ec)) return f;
        r.error(at, "profile.base", fmt::format("no profile file {} for the base {}", display_path(f), quote(name)));
        return std::nullopt;
    }
    r.error(at, "profile.base",
            fmt::format("cannot find the data/profiles directory the base {} is named in: none at or above {}",
                        quote(name), start.generic_string()));
    return std::nullopt;
}

constexpr std::size_t MAX_BASE_DEPTH = 8;

std::string sha256_hex(std::string_view text) {
    const auto bytes = std::as_bytes(std::span(text));
    return crypto::to_hex(crypto::digest(
        crypto::HashAlg::SHA256, {reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size()}));
}

// read_profile, given the files whose `base` chain led here (a cycle check); with `merged`, also
// the profile's TOML with its base chain merged in. A profile with `[profile] base` is its base's
// tables, less those `[profile] without` names, with this file's merged over them (overlay): this
// file's figures replace the base's, an inherited figure keeps its base's source, [profile] is
// this file's own and must name the base's arch. Its sha256 is that of its own text's sha256
// followed by its base's sha256, and it is stock when both are.
std::optional<system::Profile> read_profile_at(const fs::path& file, const std::string& display,
                                               std::vector<Diagnostic>& out, std::vector<fs::path>& chain,
                                               toml::table* merged) {
    Reader r(display, out);
    auto text = read_input_text(file, r);
    if (!text) return std::nullopt;
    std::error_code ec;
    const fs::path abs = fs::absolute(file, ec).lexically_normal();
    std::string cache_key = abs.generic_string() + '\n' + display;
    if (!merged)
        if (auto hit = cached_profile(cache_key, *text)) return hit;
    auto root = parse_input_text(*text, r);
    if (!root) return std::nullopt;

    system::Profile p;
    p.sha256 = sha256_hex(*text);
    auto implied = profile_name_from_path(file);
    for (const auto& [name, sha256] : STOCK_PROFILES) p.stock = p.stock || (implied == name && p.sha256 == sha256);
    std::string cache_text = *text;
    const toml::table* head = root->get_as<toml::table>("profile");
    if (head && head->contains("without") && !head->contains("base")) {
        r.error(*head->get("without"), "profile.without", "expected profile.base too: `without` leaves tables of the base out");
        return std::nullopt;
    }
    if (head && head->contains("base")) {
        const toml::node& at = *head->get("base");
        auto name = r.string(*head, "base", "profile.base", true);
        if (!name) return std::nullopt;
        auto bf = base_file(r, at, file, *name);
        if (!bf) return std::nullopt;
        const fs::path babs = fs::absolute(*bf, ec).lexically_normal();
        const bool cycle = babs == abs || std::find(chain.begin(), chain.end(), babs) != chain.end();
        if (cycle || chain.size() >= MAX_BASE_DEPTH) {
            std::string names;
            for (const auto& c : chain) names += display_path(c) + " -> ";
            r.error(at, "profile.base",
                    fmt::format("expected a chain of at most {} bases that ends, found {}: {}{} -> {}", MAX_BASE_DEPTH,
                                cycle ? "a cycle" : "a longer one", names, display_path(file), display_path(*bf)));
            return std::nullopt;
        }
        toml::table base_root;
        const std::size_t before = out.size();
        chain.push_back(abs);
        auto bp = read_profile_at(*bf, display_path(*bf), out, chain, &base_root);
        chain.pop_back();
        if (!bp) {
            r.error(at, "profile.base",
                    fmt::format("the base profile {} is invalid ({} error{}, reported with its file name)", quote(*name),
                                out.size() - before, out.size() - before == 1 ? "" : "s"));
            return std::nullopt;
        }
        const toml::node* arch = head->get("arch");
        if (arch && arch->value<std::string>() && *arch->value<std::string>() != arch::to_string(bp->arch)) {
            r.error(*arch, "profile.arch",
                    fmt::format("expected the base {}'s arch \"{}\", found {}", quote(*name), arch::to_string(bp->arch),
                                quote(*arch->value<std::string>())));
            return std::nullopt;
        }
        base_root.erase("profile");
        if (const toml::node* wo = head->get("without")) {
            // what the base has and this part lacks (e.g. an AVX-512 cipher on a core without it)
            const toml::array* list = wo->as_array();
            if (!list) {
                r.error(*wo, "profile.without",
                        fmt::format("expected a list of the base's tables or figures to leave out, such as "
                                    "[\"cipher.chacha20.avx512\"], found {}",
                                    describe(wo)));
                return std::nullopt;
            }
            for (const toml::node& n : *list) {
                auto path = n.value<std::string>();
                toml::table* t = &base_root;
                std::string_view rest = path ? std::string_view(*path) : std::string_view{};
                bool found = path && !rest.empty();
                while (found) {
                    const auto dot = rest.find('.');
                    const std::string k(rest.substr(0, dot));
                    if (dot == std::string_view::npos) {
                        found = t->erase(k) > 0;
                        break;
                    }
                    t = t->get_as<toml::table>(k);
                    found = t != nullptr;
                    rest.remove_prefix(dot + 1);
                }
                if (!found) {
                    r.error(n, "profile.without",
                            fmt::format("expected a dotted name of a table or figure of the base {}, such as "
                                        "\"cipher.chacha20.avx512\", found {}",
                                        quote(*name), describe(&n)));
                    return std::nullopt;
                }
            }
        }
        overlay(base_root, *root);
        *root = std::move(base_root);
        p.sha256 = sha256_hex(p.sha256 + bp->sha256);
        p.stock = p.stock && bp->stock;
        cache_text += '\n' + bp->sha256;
        if (!merged)
            if (auto hit = cached_profile(cache_key, cache_text)) return hit;
    }
    // A stock profile's path is independent of the working directory, so that reports are
    // identical everywhere; a private one is named by where it is.
    p.path = p.stock ? fmt::format("data/profiles/{}.toml", *implied) : abs.generic_string();
    if (!root->contains("profile") && root->contains("scenario")) {
        r.error_file("profile", "expected a table [profile], found a scenario ([scenario]); load it as a scenario");
        return std::nullopt;
    }
    if (!root->contains("profile")) r.missing(*root, "profile", "a table [profile] with name, arch and description");
    r.check_keys(*root, "", "a profile (top level)", std::vector<std::string_view>(TOP_KEYS.begin(), TOP_KEYS.end()));
    if (root->contains("profile")) read_header(r, *root, file, p);
    // Arch-dependent checks only when the arch itself was read.
    const toml::table* h = root->get_as<toml::table>("profile");
    bool arch_ok = h && h->get("arch") && arch::arch_from_string(h->get("arch")->value_or(std::string_view{}));
    read_sections(r, *root, p, arch_ok);
    read_hash(r, *root, p, arch_ok);
    read_optional_sections(r, *root, p, arch_ok);
    read_memory(r, *root, p, file);
    if (r.errors()) return std::nullopt;
    if (merged) *merged = *root;
    cache_profile(std::move(cache_key), std::move(cache_text), p);
    return p;
}

} // namespace

std::vector<std::string> impls_of(const system::Profile& profile, crypto::HashAlg alg) {
    std::vector<std::string> names;
    for (std::size_t i = 0; i < crypto::HASH_IMPLS; ++i)
        if (profile.hash.has(alg, static_cast<crypto::HashImpl>(i)))
            names.emplace_back(crypto::to_string(static_cast<crypto::HashImpl>(i)));
    return names;
}

std::optional<system::Profile> read_profile(const fs::path& file, const std::string& display,
                                            std::vector<Diagnostic>& out) {
    std::vector<fs::path> chain;
    return read_profile_at(file, display, out, chain, nullptr);
}

} // namespace kdsim::scenario::detail

namespace kdsim::scenario {

system::Profile load_profile(const std::filesystem::path& file) {
    std::vector<Diagnostic> out;
    auto p = detail::read_profile(file, file.generic_string(), out);
    if (!p) {
        detail::sort_diagnostics(out, file.generic_string());
        throw InputError(std::move(out));
    }
    return *p;
}

std::optional<std::string> profile_name_from_path(const std::filesystem::path& file) {
    namespace fs = std::filesystem;
    std::error_code ec;
    fs::path abs = fs::weakly_canonical(fs::absolute(file, ec), ec);
    if (ec) abs = file.lexically_normal();
    for (fs::path dir = abs.parent_path(); !dir.empty(); dir = dir.parent_path()) {
        if (dir.filename() == "profiles" && dir.parent_path().filename() == "data") {
            fs::path rel = abs.lexically_relative(dir);
            rel.replace_extension();
            return rel.generic_string();
        }
        if (dir == dir.parent_path()) break;
    }
    return std::nullopt;
}

} // namespace kdsim::scenario
