// [[machine.workload]] tables: the kind, name and cpu every workload has, then the keys of its
// kind (workloads/config.h), with the hash algorithm and implementation checks.
#include "scenario/loader.h"

#include <fmt/format.h>


namespace kdsim::scenario::detail {

namespace {

const std::vector<std::string_view> ALGS = {"sha1", "sha256", "sha512"};

} // namespace

// A kind's reader (system/workload_kind.h) over one [[machine.workload]] table.
class ScenarioLoader::WorkloadReader final : public system::ParamReader {
public:
    WorkloadReader(ScenarioLoader& l, const toml::table& w, const std::string& wkey, const system::Profile* profile,
                   std::optional<std::string> stream, std::uint64_t seed)
        : l_(l), r_(l.r_), w_(w), wkey_(wkey), profile_(profile), stream_(std::move(stream)), seed_(seed) {}

    bool has(std::string_view key) const override { return w_.contains(key); }
    std::optional<std::string> string(std::string_view key, bool required) override {
        return r_.string(w_, key, at(key), required);
    }
    std::optional<std::int64_t> integer(std::string_view key, bool required, std::int64_t lo, std::int64_t hi) override {
        return r_.integer(w_, key, at(key), required, lo, hi);
    }
    std::optional<bool> boolean(std::string_view key, bool required) override {
        return r_.boolean(w_, key, at(key), required);
    }
    std::optional<engine::Tick> duration(std::string_view key, bool required, bool positive) override {
        return r_.duration(w_, key, at(key), required, positive);
    }
    std::optional<std::uint64_t> bytes(std::string_view key, bool required, bool positive) override {
        return r_.bytes(w_, key, at(key), required, positive);
    }
    std::optional<std::uint64_t> rate(std::string_view key) override {
        const toml::node* n = w_.get(key);
        return n ? r_.rate(*n, at(key)) : std::nullopt;
    }
    std::optional<std::size_t> choice(std::string_view key, bool required,
                                      const std::vector<std::string_view>& names) override {
        return r_.choice(w_, key, at(key), required, names);
    }
    std::optional<crypto::HashAlg> hash_alg(bool required) override { return l_.read_alg(w_, wkey_, required); }
    std::optional<crypto::HashImpl> hash_impl(crypto::HashAlg alg) override {
        return l_.read_impl(w_, wkey_, alg, profile_);
    }
    std::optional<std::vector<std::uint64_t>> sizes(std::uint64_t min_size, std::string_view min_reason) override {
        return l_.read_sizes(w_, wkey_, stream_, seed_, min_size, min_reason);
    }
    void error(std::string_view key, std::string message) override {
        if (const toml::node* n = w_.get(key)) r_.error(*n, at(key), std::move(message));
        else r_.error(w_, at(key), std::move(message));
    }
    const system::Profile* profile() const override { return profile_; }

private:
    std::string at(std::string_view key) const { return wkey_ + "." + std::string(key); }
    ScenarioLoader& l_;
    Reader& r_;
    const toml::table& w_;
    const std::string& wkey_;
    const system::Profile* profile_;
    std::optional<std::string> stream_;
    std::uint64_t seed_;
};

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
    if (auto n = r_.string(w, "name", wkey + ".name", false)) name = *n;
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
