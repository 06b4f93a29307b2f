// Internal to the scenario layer: the scenario loader, whose parts live in load.cpp (the file,
// [scenario], profiles, the root), load_machine.cpp ([[machine]] and its kernel, nic and tunnel
// tables), load_workloads.cpp ([[machine.workload]]), load_sizes.cpp (size lists) and
// load_links.cpp ([[link]] and the checks across machines).
#pragma once

#include "scenario/toml_reader.h"
#include "system/workload_kind.h"

#include <map>
#include <set>

namespace kdsim::scenario::detail {

inline constexpr std::int64_t MAX_CPUS = system::MAX_CPUS;

class ScenarioLoader {
public:
    ScenarioLoader(const std::filesystem::path& file, const LoadOptions& opts)
        : file_(file), opts_(opts), display_(file.generic_string()), r_(display_, out_) {}

    // The whole scenario, or InputError with every diagnostic.
    system::ScenarioConfig load();

private:
    class WorkloadReader;
    using path = std::filesystem::path;
    void read_header(const toml::table& root, system::ScenarioConfig& cfg);
    std::optional<system::MachineConfig> read_machine(const toml::table& m, const std::string& key, std::uint64_t seed);
    void read_kernel(const toml::table& m, const std::string& mkey, system::MachineConfig& mc,
                     const system::Profile* profile, const toml::node* profile_node);
    void read_nic(const toml::table& m, const std::string& mkey, system::MachineConfig& mc);
    void read_netfilter(const toml::table& m, const std::string& mkey, system::MachineConfig& mc,
                        const system::Profile* prof);
    void read_tunnel(const toml::table& m, const std::string& mkey, system::MachineConfig& mc,
                     const system::Profile* prof, const std::optional<std::string>& name);
    std::optional<system::WorkloadConfig> read_workload(const toml::table& w, const std::string& wkey,
                                                  const system::MachineConfig& mc, std::optional<int> cpus,
                                                  const system::Profile* profile, bool machine_named,
                                                  std::uint64_t seed, std::map<std::string, std::string>& names);
    std::optional<crypto::HashAlg> read_alg(const toml::table& w, const std::string& wkey, bool required);
    std::optional<crypto::HashImpl> read_impl(const toml::table& w, const std::string& wkey, crypto::HashAlg alg,
                                              const system::Profile* profile);
    std::optional<std::vector<std::uint64_t>> read_sizes(const toml::table& w, const std::string& wkey,
                                                         std::optional<std::string> stream, std::uint64_t seed,
                                                         std::uint64_t min_size, std::string_view min_reason);
    // [[link]] tables, after every machine.
    void read_links(const toml::table& root, system::ScenarioConfig& cfg);
    // Tunnel ends name each other and agree; workloads with a peer are linked to it.
    void check_peers(const system::ScenarioConfig& cfg);
    const system::Profile* profile(const toml::node& at, const std::string& key, const std::string& name);
    const path* root(const toml::node& at, const std::string& key);

    const path& file_;
    LoadOptions opts_;
    std::string display_;
    std::vector<Diagnostic> out_;
    Reader r_;
    bool root_resolved_ = false;
    std::map<std::string, std::pair<const toml::table*, std::string>> tunnel_at_; // machine -> its [machine.tunnel], key
    std::set<std::string> declared_; // every machine name, also of machines that failed to load
    std::optional<path> root_;
    std::map<std::string, std::optional<system::Profile>> profiles_;
};

} // namespace kdsim::scenario::detail
