// [machine.overrides] of a scenario: a profile figure replaced for one machine, named by its key
// in the profile file and found through the figure tables (system/figures.h).
#include "scenario/figure_reader.h"

#include <fmt/format.h>

#include <cmath>
#include <functional>

namespace kdsim::scenario::detail {

namespace {

// A figure that may be overridden: [cpu], the kernel sections, [variation], [simd] (not the optional ones).
struct Overridable {
    std::string key; // "simd.save"
    Unit unit;
    bool positive;
    std::function<std::uint64_t&(system::Profile&)> ref;
};

std::vector<Overridable> overridables() {
    std::vector<Overridable> out;
    for (const auto& f : system::CPU_FIGURES)
        out.push_back({fmt::format("{}.{}", f.section, f.name), f.unit, f.positive,
                       [m = std::get<0>(f.member)](system::Profile& p) -> std::uint64_t& { return p.*m; }});
    for (const auto& f : system::KERNEL_FIGURES)
        out.push_back({fmt::format("{}.{}", f.section, f.name), f.unit, f.positive,
                       [m = std::get<0>(f.member)](system::Profile& p) -> std::uint64_t& { return p.kernel.*m; }});
    for (const auto& f : system::VARIATION_FIGURES)
        out.push_back({fmt::format("{}.{}", f.section, f.name), f.unit, f.positive,
                       [m = std::get<0>(f.member)](system::Profile& p) -> std::uint64_t& { return p.variation.*m; }});
    for (const auto& f : system::SIMD_FIGURES)
        if (!f.optional())
            out.push_back({fmt::format("simd.{}", f.name), f.unit, f.positive,
                           [m = std::get<0>(f.member)](system::Profile& p) -> std::uint64_t& { return p.simd.*m; }});
    return out;
}

} // namespace

std::optional<std::string> apply_override(system::Profile& profile, std::string_view figure, const toml::node& value,
                                          const std::string& key, Reader& r) {
    // The figure: a fixed one or hash.<alg>.<impl>.<field>.
    const std::vector<Overridable> table = overridables();
    const Overridable* fixed = nullptr;
    for (const auto& f : table)
        if (f.key == figure) fixed = &f;

    std::optional<crypto::HashAlg> alg;
    std::optional<crypto::HashImpl> impl;
    bool per_byte = false;
    if (!fixed) {
        std::vector<std::string_view> parts;
        std::string_view rest = figure;
        while (true) {
            auto dot = rest.find('.');
            parts.push_back(rest.substr(0, dot));
            if (dot == std::string_view::npos) break;
            rest.remove_prefix(dot + 1);
        }
        if (parts.size() == 4 && parts[0] == "hash" &&
            (parts[3] == "cycles_per_byte" || parts[3] == "cycles_per_call")) {
            alg = crypto::hash_alg_from_string(parts[1]);
            impl = crypto::hash_impl_from_string(parts[2]);
            per_byte = parts[3] == "cycles_per_byte";
            if (!alg) {
                r.error(value, key,
                        fmt::format("unknown hash algorithm '{}'; expected one of: sha1, sha256, sha512", parts[1]));
                return std::nullopt;
            }
            if (!impl || !profile.hash.has(*alg, *impl)) {
                r.error(value, key,
                        fmt::format("profile {} has no {} implementation '{}' to override; it has: {}", profile.name,
                                    parts[1], parts[2], join_list(impls_of(profile, *alg))));
                return std::nullopt;
            }
        } else {
            std::vector<std::string> names;
            for (const auto& f : table) names.push_back(f.key);
            names.emplace_back("hash.<alg>.<impl>.cycles_per_byte");
            names.emplace_back("hash.<alg>.<impl>.cycles_per_call");
            std::vector<std::string_view> candidates(names.begin(), names.end() - 2);
            r.error(value, key,
                    fmt::format("unknown profile figure '{}'; {}expected one of: {}", figure,
                                did_you_mean(figure, candidates), join_list(names)));
            return std::nullopt;
        }
    }
    Unit unit = fixed ? fixed->unit : per_byte ? Unit::CYCLES_PER_BYTE : Unit::CYCLES;

    if (!value.is_number()) {
        r.error(value, key,
                fmt::format("expected a {} (in the profile's unit, {}), found {}", quantity(unit), engine::unit_name(unit),
                            describe(&value)));
        return std::nullopt;
    }
    double d = value.value<double>().value_or(0);
    if (!std::isfinite(d) || d < 0) {
        r.error(value, key,
                fmt::format("expected a finite, non-negative {}, found {}", quantity(unit), describe(&value)));
        return std::nullopt;
    }
    if (per_byte) {
        if (!check_figure_bound(r, value, key, d, unit)) return std::nullopt; // to_integer_figure checks the rest
        crypto::HashCost c = *profile.hash.get(*alg, *impl);
        std::string s = fmt::format("{}: {} cycles/byte (profile: {} cycles/byte)", figure, d, c.cycles_per_byte);
        c.cycles_per_byte = d;
        profile.hash.set(*alg, *impl, c);
        return s;
    }
    auto v = to_integer_figure(r, value, key, d, unit, fixed && fixed->positive);
    if (!v) return std::nullopt;
    std::uint64_t old;
    if (fixed) {
        old = fixed->ref(profile);
        fixed->ref(profile) = *v;
    } else {
        crypto::HashCost c = *profile.hash.get(*alg, *impl);
        old = c.cycles_per_call;
        c.cycles_per_call = *v;
        profile.hash.set(*alg, *impl, c);
    }
    return fmt::format("{}: {} {} (profile: {} {})", figure, *v, engine::unit_name(unit), old, engine::unit_name(unit));
}

} // namespace kdsim::scenario::detail
