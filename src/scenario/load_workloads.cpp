// [[machine.workload]] tables: the kind, name and cpu every workload has, then the keys of its
// kind (workloads/config.h), with the hash algorithm and implementation checks.
#include "scenario/loader.h"

#include <fmt/format.h>


namespace kdsim::scenario::detail {

namespace {

const std::vector<std::string_view> ALGS = {"sha1", "sha256", "sha512"};

} // namespace

std::optional<crypto::HashAlg> ScenarioLoader::read_alg(const toml::table& w, const std::string& wkey, bool required) {
    auto i = r_.choice(w, "alg", wkey + ".alg", required, ALGS);
    if (!i) return std::nullopt;
    return crypto::hash_alg_from_string(ALGS[*i]);
}

std::optional<crypto::HashImpl> ScenarioLoader::read_impl(const toml::table& w, const std::string& wkey,
                                                          crypto::HashAlg alg, const system::Profile* profile) {
    const toml::node* n = w.get("impl");
    if (!n) return std::nullopt;
    std::string key = wkey + ".impl";
    const auto* s = n->as_string();
    auto impl = s ? crypto::hash_impl_from_string(s->get()) : std::nullopt;
    if (!impl) {
        std::vector<std::string> names;
        for (std::size_t i = 0; i < crypto::HASH_IMPLS; ++i)
            names.emplace_back(crypto::to_string(static_cast<crypto::HashImpl>(i)));
        r_.error(*n, key,
                 fmt::format("unknown hash implementation {}; expected one of: {}", s ? quote(s->get()) : describe(n),
                             join_list(names)));
        return std::nullopt;
    }
    if (profile && !profile->hash.has(alg, *impl)) {
        r_.error(*n, key,
                 fmt::format("profile {} has no {} implementation {}; it has: {}", profile->name,
                             crypto::to_string(alg), quote(s->get()), join_list(detail::impls_of(*profile, alg))));
        return std::nullopt;
    }
    return impl;
}

std::optional<system::WorkloadConfig> ScenarioLoader::read_workload(const toml::table& w, const std::string& wkey,
                                                              const system::MachineConfig& mc, std::optional<int> cpus,
                                                              const system::Profile* profile, bool machine_named,
                                                              std::uint64_t seed,
                                                              std::map<std::string, std::string>& names) {
    std::vector<std::string_view> kinds;
    for (const system::WorkloadKind* k : system::workload_kinds()) kinds.push_back(k->name);
    auto index = r_.choice(w, "kind", wkey + ".kind", true, kinds);
    if (!index) return std::nullopt;
    const system::WorkloadKind& kind = *system::workload_kinds()[*index];
    std::vector<std::string_view> keys = {"kind", "name", "cpu"};
    keys.insert(keys.end(), kind.keys.begin(), kind.keys.end());
    r_.check_keys(w, wkey, fmt::format("a {} workload", kind.name), keys);
    std::size_t before = r_.errors();

    system::WorkloadConfig wl = kind.defaults();
    std::string name = wl.name();
    if (auto n = r_.name(w, "name", wkey + ".name", false)) name = *n;
    int cpu = 0;
    if (auto c = r_.integer(w, "cpu", wkey + ".cpu", false, 0, MAX_CPUS - 1)) {
        if (cpus && *c >= *cpus)
            r_.error(*w.get("cpu"), wkey + ".cpu",
                     fmt::format("expected a CPU of machine '{}' (0 to {}, it has cpus = {}), found {}", mc.name,
                                 *cpus - 1, *cpus, *c));
        else
            cpu = static_cast<int>(*c);
    }
    if (auto [it, fresh] = names.emplace(name, wkey); !fresh) {
        const toml::node* at = w.get("name");
        std::string msg = fmt::format("duplicate workload name '{}' on machine '{}' (also {}); give each workload a "
                                      "distinct name",
                                      name, mc.name, it->second);
        if (at)
            r_.error(*at, wkey + ".name", std::move(msg));
        else
            r_.error(w, wkey + ".name", std::move(msg));
    }
    std::optional<std::string> stream;
    if (machine_named) stream = fmt::format("sizes:{}/{}", mc.name, name);

    wl.set_name_cpu(name, cpu);
    WorkloadReader reader(*this, w, wkey, profile, std::move(stream), seed);
    kind.read(reader, wl);
    if (r_.errors() != before) return std::nullopt;
    return wl;
}

} // namespace kdsim::scenario::detail
