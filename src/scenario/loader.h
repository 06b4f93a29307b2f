// Internal to the scenario layer: the scenario loader, whose parts live in load.cpp (the file,
// [scenario], profiles, the root), load_machine.cpp ([[machine]] and its kernel, nic and tunnel
// tables), load_workloads.cpp ([[machine.workload]]), load_sizes.cpp (size lists) and
// load_links.cpp ([[link]] and the checks across machines).
#pragma once

#include "scenario/toml_reader.h"
#include "system/workload_kind.h"

#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <map>
#include <set>

namespace kdsim::scenario::detail {

// The tab-separated columns of one line of a data file.
std::vector<std::string_view> split_tabs(std::string_view line);

// Calls row(line number, text) for each row of the data file `file`: lines counted from 1, a
// trailing CR dropped, empty lines and '#' comments skipped. Returns the last line's number.
int for_each_data_row(const std::filesystem::path& file, const std::function<void(int, std::string_view)>& row);

// Reports the bad rows of one data file at their lines under `key`: the first ten, then how many
// more there were.
class RowErrors {
public:
    RowErrors(Reader& r, std::string key) : r_(r), key_(std::move(key)) {}
    void at(int line, int col, std::string msg);
    // After the last row (line `last`): the count of the rows not listed.
    void finish(int last);
    bool any() const { return bad_ > 0; }

private:
    Reader& r_;
    std::string key_;
    int bad_ = 0;
};

inline constexpr std::int64_t MAX_CPUS = system::MAX_CPUS;

// The CPU numbers of array `a` (key `key`) appended to `out`: each a TOML integer 0..MAX_CPUS-1 (a
// float such as 1.0 is no CPU number) and, when `once`, each at most once. `what` names them in the
// messages ("CPU", "host CPU"). Each bad element is reported at itself; false if there was one.
bool read_cpu_numbers(Reader& r, const toml::array& a, const std::string& key, std::string_view what, bool once,
                      std::vector<int>& out);

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
    std::optional<net::RxStrategy> read_rx_strategy(const toml::table& t, const std::string& tkey);
    std::optional<std::size_t> read_rx_tail_batch(const toml::table& t, const std::string& tkey, std::size_t ring);
    void read_nic_overrides(const toml::table& nic, const std::string& nkey, bool strategy, system::MachineConfig& mc);
    // [machine.nic] qdisc, txqueuelen and [machine.nic.fq] (load_qdisc.cpp).
    void read_qdisc(const toml::table& nic, const std::string& nkey, system::MachineConfig& mc);
    void read_dram(const toml::table& m, const std::string& mkey, system::MachineConfig& mc, const system::Profile* prof);
    void read_netfilter(const toml::table& m, const std::string& mkey, system::MachineConfig& mc,
                        const system::Profile* prof);
    void read_sysctl(const toml::table& m, const std::string& mkey, system::MachineConfig& mc);
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
    // module_load's modules_file: each listed module's size (from sizes_file) and signature hash.
    std::optional<system::ModuleList> read_module_list(const toml::table& w, const std::string& wkey,
                                                       crypto::HashAlg default_alg, std::uint64_t min_size,
                                                       std::string_view min_reason, const system::Profile* profile);
    // A data file named at `at` (key `key`) by a path `rel` below the root; errors name it `what`.
    std::optional<path> data_file(const toml::node& at, const std::string& key, const std::string& rel,
                                  std::string_view what);
    // The profile figures the machine's settings need (system/machine_checks.h).
    void check_profile_needs(const toml::table& m, const std::string& mkey, const system::MachineConfig& mc);
    // [[link]] tables, after every machine.
    void read_links(const toml::table& root, system::ScenarioConfig& cfg);
    void read_link_drops(const toml::table& l, const std::string& lkey, system::LinkConfig& lc);
    void read_virtio_features(const toml::table& l, const std::string& lkey, system::LinkConfig& lc);
    void check_link_ends(const toml::table& l, const std::string& lkey, const system::LinkConfig& lc,
                         const system::ScenarioConfig& cfg);
    // Tunnel ends name each other and agree; workloads with a peer are linked to it, and what
    // their kind needs of both ends is there; a netfilter rule has a device.
    void check_peers(const system::ScenarioConfig& cfg);
    void check_vcpu_cpus(const system::ScenarioConfig& cfg);
    // Reports each element of `a` (key `key`) that names no CPU of `host` (one that is no CPU number
    // at all was refused when read).
    void check_within_host(const toml::array& a, const std::string& key, const system::MachineConfig& host);
    std::map<std::string, std::pair<const toml::array*, std::string>> vcpu_at_; // machine -> its vcpu_cpus, key
    std::map<std::string, std::pair<const toml::array*, std::string>> affinity_at_; // machine -> its vcpu_affinity, key
    const system::Profile* profile(const toml::node& at, const std::string& key, const std::string& name);
    const path* root(const toml::node& at, const std::string& key);

    const path& file_;
    LoadOptions opts_;
    std::string display_;
    std::vector<Diagnostic> out_;
    Reader r_;
    bool root_resolved_ = false;
    std::map<std::string, std::pair<const toml::table*, std::string>> tunnel_at_; // machine -> its [machine.tunnel], key
    std::map<std::string, std::pair<const toml::table*, std::string>> nic_at_;    // machine -> its [machine.nic], key
    // The NICs' per-device keys (irq_cpus, pcie) against the machine's Ethernet links.
    void check_nic_devices(const system::ScenarioConfig& cfg);
    // Where each workload of each loaded machine was read (cfg.machines[i].workloads[j]).
    struct WorkloadAt {
        const toml::table* table;
        std::string key;
    };
    std::vector<WorkloadAt> workloads_read_;            // of the machine being read
    std::vector<std::vector<WorkloadAt>> workloads_at_; // per loaded machine
    std::map<std::string, std::pair<const toml::table*, std::string>> netfilter_at_; // machine -> [machine.netfilter], key
    std::set<std::string> declared_; // every machine name, also of machines that failed to load
    const system::ScenarioConfig* loading_ = nullptr; // the scenario being read (its machines so far)
    // `netns = "<machine>"`: the namespace takes that machine's profile, CPUs and kernel settings;
    // false (reported) when the key names no machine above, or a key only a machine has is set.
    void read_kvm_host(const toml::table& m, const std::string& mkey, system::MachineConfig& mc, const system::Profile* prof);
    bool read_netns(const toml::table& m, const std::string& mkey, system::MachineConfig& mc);
    std::optional<path> root_;
    std::map<std::string, std::optional<system::Profile>> profiles_;
};

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
    std::optional<system::ModuleList> module_list(crypto::HashAlg default_alg, std::uint64_t min_size,
                                                  std::string_view min_reason) override {
        return l_.read_module_list(w_, wkey_, default_alg, min_size, min_reason, profile_);
    }
    std::optional<std::vector<int>> cpu_list(std::string_view key) override {
        const toml::array* a = r_.array(w_, key, at(key), false, "an array of CPU numbers");
        if (!a) return std::nullopt;
        if (a->empty()) {
            r_.error(*a, at(key), "expected at least one CPU number, found an empty array");
            return std::nullopt;
        }
        std::vector<int> out;
        if (!read_cpu_numbers(r_, *a, at(key), "CPU", true, out)) return std::nullopt;
        return out;
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

} // namespace kdsim::scenario::detail
