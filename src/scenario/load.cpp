// Scenario files (scenarios/**.toml) -> system::ScenarioConfig, with the profiles and
// workload size lists they name. Format: docs/scenario-format.md.
#include "scenario/toml_reader.h"

#include "engine/rng.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <fstream>
#include <cstdio>
#include <map>
#include <set>

namespace kdsim::scenario {

namespace {

namespace fs = std::filesystem;
using detail::describe;
using detail::index_key;
using detail::join_key;
using detail::join_list;
using detail::quote;
using detail::Reader;

// Errors reported for one size-list file before the rest are only counted.
constexpr int MAX_ROW_ERRORS = 10;
constexpr std::int64_t MAX_CPUS = 64;

const std::vector<std::string_view> KINDS = {"module_load", "hash_list",    "simd_user",    "cyclictest",
                                            "softirq_load", "tcrypt",      "arp_pingpong", "iperf3",
                                            "rx_flood",    "udp_flows"};
const std::vector<std::string_view> ALGS = {"sha1", "sha256", "sha512"};

std::vector<std::string_view> workload_keys(std::string_view kind) {
    std::vector<std::string_view> k = {"kind", "name", "cpu"};
    auto add = [&](std::initializer_list<std::string_view> more) { k.insert(k.end(), more); };
    const std::initializer_list<std::string_view> sizes = {"sizes",        "sizes_file", "size_column",
                                                           "match_column", "match",      "sample"};
    if (kind == "module_load") {
        add({"alg", "impl"});
        add(sizes);
        add({"signature_trailer", "blacklist_hash", "user_time", "repeat"});
    } else if (kind == "hash_list") {
        add({"alg", "impl"});
        add(sizes);
        add({"repeat", "cond_resched_between"});
    } else if (kind == "simd_user") {
        add({"chunk"});
    } else if (kind == "cyclictest") {
        add({"priority", "period", "loops"});
    } else if (kind == "softirq_load") {
        add({"period", "jitter", "alg", "impl", "bytes", "count", "hmac", "cryptd"});
    } else if (kind == "tcrypt") {
        add({"alg", "impl", "block_size", "duration"});
    } else if (kind == "arp_pingpong") {
        add({"peer", "count", "interval"});
    } else if (kind == "rx_flood") {
        add({"alg", "payload", "buffer", "flush", "cryptd", "cryptd_qlen", "weight", "budget", "priority"});
    } else if (kind == "iperf3") {
        add({"peer", "sender_cpu", "window", "rcvbuf", "start", "parallel", "protocol", "bitrate", "length"});
    } else if (kind == "udp_flows") {
        add({"peer", "sender_cpu", "flows", "interval", "count", "length", "rcvbuf", "start"});
    }
    return k;
}

constexpr std::array<arch::SimdPolicy, 9> POLICIES = {
    arch::SimdPolicy::X86_PREEMPT,     arch::SimdPolicy::X86_BH_OFF,    arch::SimdPolicy::X86_UNSAFE_NO_INUSE,
    arch::SimdPolicy::ARM32_TASK_ONLY, arch::SimdPolicy::ARM32_SOFTIRQ, arch::SimdPolicy::ARM32_UNSAFE_SOFTIRQ_NO_BH,
    arch::SimdPolicy::ARM64_BH_OFF,    arch::SimdPolicy::PPC_SPE,       arch::SimdPolicy::PPC_SPE_NO_ENABLE,
};

// Names of the policies of `a`, or of all policies.
std::string policy_names(std::optional<arch::Arch> a) {
    std::vector<std::string> names;
    for (auto p : POLICIES)
        if (!a || arch::arch_of(p) == *a) names.emplace_back(arch::to_string(p));
    return names.empty() ? std::string("none (no SIMD policy is modelled for this architecture)") : join_list(names);
}

// The kernel-mode SIMD rules of Linux 6.1 (the kernel of the reference experiments) per arch.
std::optional<arch::SimdPolicy> default_policy(arch::Arch a) {
    switch (a) {
    case arch::Arch::X86_64: return arch::SimdPolicy::X86_PREEMPT;
    case arch::Arch::ARM32: return arch::SimdPolicy::ARM32_TASK_ONLY;
    case arch::Arch::ARM64: return arch::SimdPolicy::ARM64_BH_OFF;
    case arch::Arch::PPC32_E500: return arch::SimdPolicy::PPC_SPE;
    }
    return std::nullopt;
}

class ScenarioLoader {
public:
    ScenarioLoader(const fs::path& file, const LoadOptions& opts)
        : file_(file), opts_(opts), display_(file.generic_string()), r_(display_, out_) {}

    system::ScenarioConfig load();

private:
    void read_header(const toml::table& root, system::ScenarioConfig& cfg);
    std::optional<system::MachineConfig> read_machine(const toml::table& m, const std::string& key, std::uint64_t seed);
    void read_kernel(const toml::table& m, const std::string& mkey, system::MachineConfig& mc,
                     const system::Profile* profile, const toml::node* profile_node);
    std::optional<system::Workload> read_workload(const toml::table& w, const std::string& wkey,
                                                  const system::MachineConfig& mc, std::optional<int> cpus,
                                                  const system::Profile* profile, bool machine_named,
                                                  std::uint64_t seed, std::map<std::string, std::string>& names);
    std::optional<crypto::HashAlg> read_alg(const toml::table& w, const std::string& wkey, bool required);
    std::optional<crypto::HashImpl> read_impl(const toml::table& w, const std::string& wkey, crypto::HashAlg alg,
                                              const system::Profile* profile);
    std::optional<std::vector<std::uint64_t>> read_sizes(const toml::table& w, const std::string& wkey,
                                                         std::optional<std::string> stream, std::uint64_t seed,
                                                         std::uint64_t min_size, std::string_view min_reason);
    const system::Profile* profile(const toml::node& at, const std::string& key, const std::string& name);
    const fs::path* root(const toml::node& at, const std::string& key);

    const fs::path& file_;
    LoadOptions opts_;
    std::string display_;
    std::vector<Diagnostic> out_;
    Reader r_;
    bool root_resolved_ = false;
    std::map<std::string, std::pair<const toml::table*, std::string>> tunnel_at_; // machine -> its [machine.tunnel], key
    std::set<std::string> declared_; // every machine name, also of machines that failed to load
    std::optional<fs::path> root_;
    std::map<std::string, std::optional<system::Profile>> profiles_;
};

const fs::path* ScenarioLoader::root(const toml::node& at, const std::string& key) {
    if (root_resolved_) return root_ ? &*root_ : nullptr;
    root_resolved_ = true;
    std::error_code ec;
    if (!opts_.root.empty()) {
        if (fs::is_directory(opts_.root / "data" / "profiles", ec))
            root_ = opts_.root;
        else
            r_.error(at, key,
                     fmt::format("the root directory {} given holds no data/profiles directory",
                                 detail::display_path(opts_.root)));
        return root_ ? &*root_ : nullptr;
    }
    fs::path start = fs::absolute(file_, ec).parent_path();
    for (fs::path dir = start; !dir.empty(); dir = dir.parent_path()) {
        if (fs::is_directory(dir / "data" / "profiles", ec)) {
            root_ = dir;
            break;
        }
        if (dir == dir.parent_path()) break;
    }
    if (!root_)
        r_.error(at, key,
                 fmt::format("cannot find the repository root of {}: no directory at or above {} contains "
                             "data/profiles (pass the root explicitly)",
                             display_, start.generic_string()));
    return root_ ? &*root_ : nullptr;
}

const system::Profile* ScenarioLoader::profile(const toml::node& at, const std::string& key, const std::string& name) {
    if (auto it = profiles_.find(name); it != profiles_.end()) return it->second ? &*it->second : nullptr;
    auto& slot = profiles_[name];
    bool bad_name = name.find("..") != std::string::npos || name.front() == '/' || name.find('\\') != std::string::npos;
    if (bad_name) {
        r_.error(at, key,
                 fmt::format("expected a profile name such as \"x86/intel-icelake-server\" (a path below "
                             "data/profiles without .toml), found {}",
                             quote(name)));
        return nullptr;
    }
    const fs::path* rt = root(at, key);
    if (!rt) return nullptr;
    fs::path dir = *rt / "data" / "profiles";
    fs::path path = dir / (name + ".toml");
    std::error_code ec;
    if (!fs::is_regular_file(path, ec)) {
        std::vector<std::string> have;
        for (auto it = fs::recursive_directory_iterator(dir, ec); !ec && it != fs::recursive_directory_iterator();
             it.increment(ec)) {
            if (it->is_regular_file(ec) && it->path().extension() == ".toml") {
                fs::path rel = it->path().lexically_relative(dir);
                rel.replace_extension();
                have.push_back(rel.generic_string());
            }
        }
        std::sort(have.begin(), have.end());
        std::string hint = name.size() > 5 && name.ends_with(".toml") ? " (write the name without .toml)" : "";
        r_.error(at, key,
                 fmt::format("no profile file {}{}; the profiles are: {}", detail::display_path(path), hint,
                             have.empty() ? std::string("none") : join_list(have)));
        return nullptr;
    }
    std::size_t before = out_.size();
    slot = detail::read_profile(path, detail::display_path(path), out_);
    if (!slot)
        r_.error(at, key,
                 fmt::format("profile {} is invalid ({} error{}, reported with its file name)", quote(name),
                             out_.size() - before, out_.size() - before == 1 ? "" : "s"));
    return slot ? &*slot : nullptr;
}

void ScenarioLoader::read_header(const toml::table& root, system::ScenarioConfig& cfg) {
    const toml::table* s = r_.table(root, "scenario", "scenario", true, "a table [scenario] with at least a name");
    std::optional<std::uint64_t> seed;
    std::optional<system::Mode> mode;
    if (s) {
        r_.check_keys(*s, "scenario", "[scenario]",
                      {"name", "description", "seed", "mode", "max_duration", "duration"});
        if (auto n = r_.string(*s, "name", "scenario.name", true)) cfg.name = *n;
        if (auto d = r_.string(*s, "description", "scenario.description", false, false)) cfg.description = *d;
        if (auto v = r_.integer(*s, "seed", "scenario.seed", false, 0, INT64_MAX))
            seed = static_cast<std::uint64_t>(*v);
        if (auto m = r_.choice(*s, "mode", "scenario.mode", false, {"timing", "functional"}))
            mode = *m == 0 ? system::Mode::TIMING : system::Mode::FUNCTIONAL;
        auto max = r_.duration(*s, "max_duration", "scenario.max_duration", false, true);
        auto dur = r_.duration(*s, "duration", "scenario.duration", false, true);
        if (max) cfg.max_duration = *max;
        if (dur) {
            cfg.duration = *dur;
            if (max && *dur > *max)
                r_.error(*s->get("duration"), "scenario.duration",
                         fmt::format("expected at most max_duration ({}), found {}",
                                     s->get("max_duration")->value_or(std::string_view{}),
                                     describe(s->get("duration"))));
            else if (!max && *dur > cfg.max_duration)
                cfg.max_duration = *dur; // the default upper bound yields to an explicit duration
        }
    }
    cfg.seed = opts_.seed_override.value_or(seed.value_or(1));
    cfg.mode = opts_.mode_override.value_or(mode.value_or(system::Mode::TIMING));
}

void ScenarioLoader::read_kernel(const toml::table& m, const std::string& mkey, system::MachineConfig& mc,
                                 const system::Profile* profile, const toml::node* profile_node) {
    std::string kkey = mkey + ".kernel";
    const toml::table* k = r_.table(m, "kernel", kkey, false, "a table [machine.kernel]");
    std::optional<arch::SimdPolicy> policy;
    const toml::node* policy_node = nullptr;
    if (k) {
        r_.check_keys(*k, kkey, "[machine.kernel]",
                      {"preempt", "hz", "simd_policy", "simd_chunking", "simd_chunk_bytes", "sched_latency",
                       "sched_min_granularity", "sched_wakeup_granularity", "max_softirq_time", "max_softirq_restart",
                       "rcu_cpu_stall_timeout", "rcu_exp_cpu_stall_timeout", "softlockup_thresh", "irq_masking"});
        if (const toml::node* im = k->get("irq_masking")) {
            auto v = im->value<std::string>();
            static const std::vector<std::pair<std::string, std::string>> MASKING = {
                {"native", ""},         {"x86-cli-sti", ""},   {"arm64-daif", "daif"},
                {"arm64-pmr-off", "pmr_off"}, {"arm64-pmr", "pmr"}, {"arm64-pmr-nosync", "pmr_nosync"},
                {"ppc-soft-mask", "soft"}};
            static const std::map<std::string, arch::Arch> ARCH_OF = {
                {"x86-cli-sti", arch::Arch::X86_64}, {"arm64-daif", arch::Arch::ARM64}, {"arm64-pmr-off", arch::Arch::ARM64},
                {"arm64-pmr", arch::Arch::ARM64}, {"arm64-pmr-nosync", arch::Arch::ARM64}};
            bool ok = false;
            for (const auto& [name, table] : MASKING)
                if (v && *v == name) {
                    ok = true;
                    mc.irq_masking = table;
                    if (auto a = ARCH_OF.find(name); a != ARCH_OF.end() && profile && profile->arch != a->second) {
                        r_.error(*im, kkey + ".irq_masking",
                                 fmt::format("{} is an {} masking implementation, but profile {} is {}", name,
                                             arch::to_string(a->second), profile->name, arch::to_string(profile->arch)));
                    } else if (!table.empty() && profile && !profile->irqmask.count(table)) {
                        r_.error(*im, kkey + ".irq_masking",
                                 fmt::format("profile {} has no [irqmask.{}] figures for {}", profile->name, table, name));
                    }
                }
            if (!ok)
                r_.error(*im, kkey + ".irq_masking",
                         fmt::format("expected one of: native, x86-cli-sti, arm64-daif, arm64-pmr-off, arm64-pmr, arm64-pmr-nosync, "
                                     "ppc-soft-mask; found {}", describe(im)));
        }
        auto& kc = mc.kernel;
        if (auto p = r_.choice(*k, "preempt", kkey + ".preempt", false, {"none", "voluntary", "full"}))
            kc.preempt =
                std::array{kernel::PreemptModel::NONE, kernel::PreemptModel::VOLUNTARY, kernel::PreemptModel::FULL}[*p];
        if (const toml::node* hz = k->get("hz")) {
            auto v = hz->value<std::int64_t>();
            if (hz->is_integer() && (*v == 100 || *v == 250 || *v == 300 || *v == 1000))
                kc.hz = static_cast<std::uint32_t>(*v);
            else
                r_.error(*hz, kkey + ".hz",
                         fmt::format("expected one of 100, 250, 300, 1000 (CONFIG_HZ), found {}", describe(hz)));
        }
        if ((policy_node = k->get("simd_policy"))) {
            std::string pkey = kkey + ".simd_policy";
            const auto* s = policy_node->as_string();
            auto p = s ? arch::simd_policy_from_string(s->get()) : std::nullopt;
            if (!p) {
                r_.error(*policy_node, pkey,
                         fmt::format("unknown SIMD policy {}; expected one of: {}",
                                     s ? quote(s->get()) : describe(policy_node), policy_names(std::nullopt)));
            } else if (profile && arch::arch_of(*p) != profile->arch) {
                r_.error(*policy_node, pkey,
                         fmt::format("policy {} is for arch {}, but profile {} is {}; expected one of: {}",
                                     quote(s->get()), arch::to_string(arch::arch_of(*p)), profile->name,
                                     arch::to_string(profile->arch), policy_names(profile->arch)));
            } else {
                policy = p;
            }
        }
        if (auto c = r_.choice(*k, "simd_chunking", kkey + ".simd_chunking", false, {"none", "fixed", "yield"}))
            mc.chunking.policy =
                std::array{crypto::ChunkPolicy::NONE, crypto::ChunkPolicy::FIXED, crypto::ChunkPolicy::YIELD}[*c];
        if (auto b = r_.bytes(*k, "simd_chunk_bytes", kkey + ".simd_chunk_bytes", false, true)) mc.chunking.bytes = *b;
        auto dur = [&](std::string_view name, engine::Tick& dst, bool positive) {
            if (auto t = r_.duration(*k, name, join_key(kkey, name), false, positive)) dst = *t;
        };
        dur("sched_latency", kc.sched_latency, true);
        dur("sched_min_granularity", kc.sched_min_granularity, true);
        dur("sched_wakeup_granularity", kc.sched_wakeup_granularity, false);
        dur("max_softirq_time", kc.max_softirq_time, true);
        dur("rcu_cpu_stall_timeout", kc.rcu_cpu_stall_timeout, true);
        dur("rcu_exp_cpu_stall_timeout", kc.rcu_exp_cpu_stall_timeout, true);
        dur("softlockup_thresh", kc.softlockup_thresh, true);
        if (auto v = r_.integer(*k, "max_softirq_restart", kkey + ".max_softirq_restart", false, 1, 1000))
            kc.max_softirq_restart = static_cast<std::uint32_t>(*v);
    }
    if (policy) {
        mc.simd_policy = *policy;
    } else if (profile && !policy_node) {
        if (auto d = default_policy(profile->arch))
            mc.simd_policy = *d;
        else if (profile_node)
            r_.error(*profile_node, mkey + ".profile",
                     fmt::format("profile {} is {}, for which no SIMD policy is modelled", profile->name,
                                 arch::to_string(profile->arch)));
    }
}

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
        const fs::path* rt = root(*file_node, wkey + ".sizes_file");
        if (!rt) return std::nullopt;
        fs::path path = fs::path(*rel).is_absolute() ? fs::path(*rel) : *rt / *rel;
        tsv_display = detail::display_path(path);
        std::ifstream in(path);
        std::error_code ec;
        if (!fs::is_regular_file(path, ec) || !in) {
            r_.error(*file_node, wkey + ".sizes_file",
                     fmt::format("no sizes file {} (sizes_file is relative to the root, {})", tsv_display,
                                 fs::absolute(*rt, ec).lexically_normal().generic_string()));
            return std::nullopt;
        }
        Reader tsv(tsv_display, out_);
        std::string line;
        int lineno = 0;
        int bad = 0;
        auto row_error = [&](std::string msg) {
            ok = false;
            if (++bad <= MAX_ROW_ERRORS)
                tsv.error(toml::source_position{static_cast<toml::source_index>(lineno), 1}, wkey + ".sizes_file",
                          std::move(msg));
        };
        while (std::getline(in, line)) {
            ++lineno;
            if (!line.empty() && line.back() == '\r') line.pop_back();
            if (line.empty() || line.front() == '#') continue;
            std::vector<std::string_view> cols;
            std::string_view rest = line;
            while (true) {
                auto tab = rest.find('\t');
                cols.push_back(rest.substr(0, tab));
                if (tab == std::string_view::npos) break;
                rest.remove_prefix(tab + 1);
            }
            std::int64_t need = std::max<std::int64_t>(size_col, match_col.value_or(0));
            if (static_cast<std::int64_t>(cols.size()) < need) {
                row_error(fmt::format("row has {} tab-separated column{}, expected at least {}", cols.size(),
                                      cols.size() == 1 ? "" : "s", need));
                continue;
            }
            if (match_col && cols[static_cast<std::size_t>(*match_col - 1)] != *match) continue;
            std::string_view cell = cols[static_cast<std::size_t>(size_col - 1)];
            std::uint64_t v = 0;
            auto [p, e] = std::from_chars(cell.data(), cell.data() + cell.size(), v);
            if (cell.empty() || e != std::errc() || p != cell.data() + cell.size()) {
                row_error(fmt::format("expected a byte count (a non-negative integer) in column {}, found {}", size_col,
                                      quote(cell)));
                continue;
            }
            rows.push_back({v, nullptr, 0, lineno});
        }
        if (bad > MAX_ROW_ERRORS)
            tsv.error(toml::source_position{static_cast<toml::source_index>(lineno), 1}, wkey + ".sizes_file",
                      fmt::format("{} more bad rows not listed", bad - MAX_ROW_ERRORS));
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

std::optional<system::Workload> ScenarioLoader::read_workload(const toml::table& w, const std::string& wkey,
                                                              const system::MachineConfig& mc, std::optional<int> cpus,
                                                              const system::Profile* profile, bool machine_named,
                                                              std::uint64_t seed,
                                                              std::map<std::string, std::string>& names) {
    auto kind = r_.choice(w, "kind", wkey + ".kind", true, KINDS);
    if (!kind) return std::nullopt;
    std::string_view kname = KINDS[*kind];
    r_.check_keys(w, wkey, fmt::format("a {} workload", kname), workload_keys(kname));
    std::size_t before = r_.errors();

    system::Workload wl;
    switch (*kind) {
    case 0: wl = system::ModuleLoadWorkload{}; break;
    case 1: wl = system::HashListWorkload{}; break;
    case 2: wl = system::SimdUserWorkload{}; break;
    case 3: wl = system::CyclictestWorkload{}; break;
    case 4: wl = system::SoftirqLoadWorkload{}; break;
    case 5: wl = system::TcryptWorkload{}; break;
    case 6: wl = system::ArpPingPongWorkload{}; break;
    case 7: wl = system::Iperf3Workload{}; break;
    case 8: wl = system::RxFloodWorkload{}; break;
    default: wl = system::UdpFlowsWorkload{}; break;
    }
    std::string name = std::visit([](auto& x) { return x.name; }, wl);
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

    auto alg_impl = [&](auto& x, bool required) {
        if (auto a = read_alg(w, wkey, required)) {
            x.alg = *a;
            x.impl = read_impl(w, wkey, *a, profile);
        }
    };
    std::visit(
        [&](auto& x) {
            using T = std::decay_t<decltype(x)>;
            x.name = name;
            x.cpu = cpu;
            if constexpr (std::is_same_v<T, system::ModuleLoadWorkload>) {
                alg_impl(x, true);
                if (auto t = r_.bytes(w, "signature_trailer", wkey + ".signature_trailer", false, false))
                    x.signature_trailer = *t;
                if (auto b = r_.boolean(w, "blacklist_hash", wkey + ".blacklist_hash", false)) x.blacklist_hash = *b;
                if (auto t = r_.duration(w, "user_time", wkey + ".user_time", false, false)) x.user_time = *t;
                if (auto v = r_.integer(w, "repeat", wkey + ".repeat", false, 1, UINT32_MAX))
                    x.repeat = static_cast<std::uint32_t>(*v);
                if (auto s = read_sizes(w, wkey, stream, seed, x.signature_trailer, "signature_trailer"))
                    x.sizes = std::move(*s);
            } else if constexpr (std::is_same_v<T, system::HashListWorkload>) {
                alg_impl(x, true);
                if (auto v = r_.integer(w, "repeat", wkey + ".repeat", false, 1, UINT32_MAX))
                    x.repeat = static_cast<std::uint32_t>(*v);
                if (auto b = r_.boolean(w, "cond_resched_between", wkey + ".cond_resched_between", false))
                    x.cond_resched_between = *b;
                if (auto s = read_sizes(w, wkey, stream, seed, 0, "")) x.sizes = std::move(*s);
            } else if constexpr (std::is_same_v<T, system::SimdUserWorkload>) {
                if (auto t = r_.duration(w, "chunk", wkey + ".chunk", false, true)) x.chunk = *t;
            } else if constexpr (std::is_same_v<T, system::CyclictestWorkload>) {
                if (auto v = r_.integer(w, "priority", wkey + ".priority", false, 1, 99))
                    x.priority = static_cast<int>(*v);
                if (auto t = r_.duration(w, "period", wkey + ".period", false, true)) x.period = *t;
                if (auto v = r_.integer(w, "loops", wkey + ".loops", false, 0, INT64_MAX))
                    x.loops = static_cast<std::uint64_t>(*v);
            } else if constexpr (std::is_same_v<T, system::ArpPingPongWorkload>) {
                if (auto v = r_.string(w, "peer", wkey + ".peer", true)) x.peer = *v;
                if (auto v = r_.integer(w, "count", wkey + ".count", false, 1, INT64_MAX))
                    x.count = static_cast<std::uint64_t>(*v);
                if (auto t = r_.duration(w, "interval", wkey + ".interval", false, false)) x.interval = *t;
            } else if constexpr (std::is_same_v<T, system::Iperf3Workload>) {
                if (auto v = r_.string(w, "peer", wkey + ".peer", true)) x.peer = *v;
                if (auto v = r_.integer(w, "sender_cpu", wkey + ".sender_cpu", false, 0, MAX_CPUS - 1))
                    x.sender_cpu = static_cast<int>(*v);
                if (auto b = r_.bytes(w, "window", wkey + ".window", false, true)) x.window = *b;
                if (auto b = r_.bytes(w, "rcvbuf", wkey + ".rcvbuf", false, true)) x.rcvbuf = *b;
                if (auto t = r_.duration(w, "start", wkey + ".start", false, false)) x.start = *t;
                if (auto v = r_.integer(w, "parallel", wkey + ".parallel", false, 1, 128)) x.parallel = static_cast<int>(*v);
                if (auto pr = r_.choice(w, "protocol", wkey + ".protocol", false, {"tcp", "udp"})) x.udp = *pr == 1;
                if (const toml::node* br = w.get("bitrate")) {
                    if (auto bps = r_.rate(*br, wkey + ".bitrate")) x.bitrate = *bps;
                    if (!x.udp) r_.error(*br, wkey + ".bitrate", "bitrate paces a protocol = \"udp\" stream only");
                }
                if (auto b = r_.bytes(w, "length", wkey + ".length", false, true)) {
                    if (!x.udp) r_.error(*w.get("length"), wkey + ".length", "length is the datagram size of a protocol = \"udp\" stream");
                    else if (*b > 65507) r_.error(*w.get("length"), wkey + ".length", fmt::format("expected at most 65507 bytes, found {}", *b));
                    else x.length = static_cast<std::uint32_t>(*b);
                }
            } else if constexpr (std::is_same_v<T, system::UdpFlowsWorkload>) {
                if (auto v = r_.string(w, "peer", wkey + ".peer", true)) x.peer = *v;
                if (auto v = r_.integer(w, "sender_cpu", wkey + ".sender_cpu", false, 0, MAX_CPUS - 1))
                    x.sender_cpu = static_cast<int>(*v);
                if (auto v = r_.integer(w, "flows", wkey + ".flows", true, 1, system::UdpFlowsWorkload::MAX_FLOWS))
                    x.flows = static_cast<std::uint32_t>(*v);
                if (auto t = r_.duration(w, "interval", wkey + ".interval", true, true)) x.interval = *t;
                if (auto v = r_.integer(w, "count", wkey + ".count", false, 0, UINT32_MAX))
                    x.count = static_cast<std::uint64_t>(*v);
                if (auto b = r_.bytes(w, "length", wkey + ".length", false, true)) {
                    if (*b > 65507) r_.error(*w.get("length"), wkey + ".length", fmt::format("expected at most 65507 bytes, found {}", *b));
                    else x.length = static_cast<std::uint32_t>(*b);
                }
                if (auto b = r_.bytes(w, "rcvbuf", wkey + ".rcvbuf", false, true)) {
                    if (*b < x.length)
                        r_.error(*w.get("rcvbuf"), wkey + ".rcvbuf",
                                 fmt::format("expected at least one datagram ({} bytes), found {}", x.length, *b));
                    else x.rcvbuf = *b;
                }
                if (auto t = r_.duration(w, "start", wkey + ".start", false, false)) x.start = *t;
            } else if constexpr (std::is_same_v<T, system::RxFloodWorkload>) {
                if (auto a = r_.choice(w, "alg", wkey + ".alg", false, {"aes-128-gcm", "chacha20-poly1305", "aes-256-gcm"}))
                    x.alg = std::array{crypto::AeadAlg::AES_128_GCM, crypto::AeadAlg::CHACHA20_POLY1305,
                                       crypto::AeadAlg::AES_256_GCM}[*a];
                if (auto b = r_.bytes(w, "payload", wkey + ".payload", false, true)) {
                    if (*b > 65535)
                        r_.error(*w.get("payload"), wkey + ".payload", fmt::format("expected at most 65535 bytes, found {}", *b));
                    else
                        x.payload = *b;
                }
                if (auto b = r_.bytes(w, "buffer", wkey + ".buffer", false, true)) {
                    if (*b % 64 != 0)
                        r_.error(*w.get("buffer"), wkey + ".buffer",
                                 fmt::format("expected a multiple of 64 bytes (whole cache lines), found {}", *b));
                    else
                        x.buffer = *b;
                }
                // the frame is written with 16-byte stores: it must fit the buffer rounded up to 16
                if ((workloads::rx_frame_len(x.payload) + 15) / 16 * 16 > x.buffer) {
                    const toml::node* at = w.get("buffer") ? w.get("buffer") : w.get("payload");
                    std::string msg = fmt::format("a frame of {} bytes (payload {} + 66 bytes of headers and ICV, "
                                                  "rounded up to 16) does not fit a {}-byte buffer",
                                                  (workloads::rx_frame_len(x.payload) + 15) / 16 * 16, x.payload, x.buffer);
                    if (at)
                        r_.error(*at, wkey + (w.get("buffer") ? ".buffer" : ".payload"), std::move(msg));
                    else
                        r_.error(w, wkey + ".payload", std::move(msg));
                }
                if (auto f = r_.choice(w, "flush", wkey + ".flush", false, {"none", "full", "rxlen"})) {
                    x.flush = std::array{workloads::RxFlush::NONE, workloads::RxFlush::FULL_BUFFER,
                                         workloads::RxFlush::RECEIVED_LENGTH}[*f];
                    if (x.flush != workloads::RxFlush::NONE && profile && !profile->flush &&
                        (!profile->dma || profile->dma->coherent))
                        r_.error(*w.get("flush"), wkey + ".flush",
                                 fmt::format("flush = \"{}\" is charged with a [flush] table (kdsim calibrate's stand-in) or "
                                             "the [dma] inner_inv_line of a non-coherent platform; profile {} has no [flush] and {}",
                                             *f == 1 ? "full" : "rxlen", profile->name,
                                             profile->dma ? "has a coherent [dma] (coherent = true)" : "has no [dma]"));
                }
                if (auto b = r_.boolean(w, "cryptd", wkey + ".cryptd", false)) x.cryptd = *b;
                if (auto v = r_.integer(w, "cryptd_qlen", wkey + ".cryptd_qlen", false, 1, 1'000'000)) {
                    x.cryptd_qlen = static_cast<std::uint64_t>(*v);
                    if (!x.cryptd)
                        r_.error(*w.get("cryptd_qlen"), wkey + ".cryptd_qlen", "cryptd_qlen bounds the queue of cryptd = true only");
                }
                if (auto v = r_.integer(w, "weight", wkey + ".weight", false, 1, 4096)) x.weight = static_cast<int>(*v);
                if (auto v = r_.integer(w, "budget", wkey + ".budget", false, 1, 1'000'000)) x.budget = static_cast<int>(*v);
                if (auto v = r_.integer(w, "priority", wkey + ".priority", false, 0, 99)) x.priority = static_cast<int>(*v);
            } else if constexpr (std::is_same_v<T, system::TcryptWorkload>) {
                alg_impl(x, true);
                if (auto b = r_.bytes(w, "block_size", wkey + ".block_size", false, true)) x.block_size = *b;
                if (auto t = r_.duration(w, "duration", wkey + ".duration", false, true)) x.duration = *t;
            } else {
                if (auto t = r_.duration(w, "period", wkey + ".period", false, true)) x.period = *t;
                if (auto t = r_.duration(w, "jitter", wkey + ".jitter", false, false)) x.jitter = *t;
                if (auto b = r_.boolean(w, "hmac", wkey + ".hmac", false)) x.hmac = *b;
                if (auto b = r_.boolean(w, "cryptd", wkey + ".cryptd", false)) x.cryptd = *b;
                if (w.contains("alg")) {
                    alg_impl(x, false);
                } else {
                    x.impl = read_impl(w, wkey, x.alg, profile);
                }
                if (auto b = r_.bytes(w, "bytes", wkey + ".bytes", false, true)) x.bytes = *b;
                if (auto v = r_.integer(w, "count", wkey + ".count", false, 0, INT64_MAX))
                    x.count = static_cast<std::uint64_t>(*v);
            }
        },
        wl);
    if (r_.errors() != before) return std::nullopt;
    return wl;
}

std::optional<system::MachineConfig> ScenarioLoader::read_machine(const toml::table& m, const std::string& mkey,
                                                                  std::uint64_t seed) {
    r_.check_keys(m, mkey, "[[machine]]",
                  {"name", "profile", "cpus", "kernel", "overrides", "workload", "hash_cold_after", "nic", "tunnel"});
    std::size_t before = out_.size();
    system::MachineConfig mc;
    auto name = r_.string(m, "name", mkey + ".name", true);
    if (name) mc.name = *name;

    const system::Profile* prof = nullptr;
    const toml::node* profile_node = m.get("profile");
    if (auto pn = r_.string(m, "profile", mkey + ".profile", true))
        prof = profile(*profile_node, mkey + ".profile", *pn);
    if (prof) mc.profile = *prof;

    std::optional<int> cpus;
    if (auto c = r_.integer(m, "cpus", mkey + ".cpus", true, 1, MAX_CPUS)) cpus = static_cast<int>(*c);
    if (cpus) mc.cpus = *cpus;

    read_kernel(m, mkey, mc, prof, profile_node);
    if (auto t = r_.duration(m, "hash_cold_after", mkey + ".hash_cold_after", false, false)) mc.hash_cold_after = *t;
    if (const toml::table* nic = r_.table(m, "nic", mkey + ".nic", false, "a table [machine.nic]")) {
        std::string nkey = mkey + ".nic";
        r_.check_keys(*nic, nkey, "[machine.nic]",
                      {"rx_strategy", "rx_buffer", "rx_ring", "short_sync_bytes", "multi_buffer", "rx_usecs"});
        net::RxDmaConfig rx;
        bool strategy = false;
        if (auto st = r_.choice(*nic, "rx_strategy", nkey + ".rx_strategy", false,
                                {"full-sync", "partial-sync", "short-sync"})) {
            rx.strategy = std::array{net::RxStrategy::FULL_SYNC, net::RxStrategy::PARTIAL_SYNC,
                                     net::RxStrategy::SHORT_SYNC}[*st];
            strategy = true;
        }
        if (auto mb = r_.boolean(*nic, "multi_buffer", nkey + ".multi_buffer", false)) rx.multi_buffer = *mb;
        if (auto b = r_.bytes(*nic, "rx_buffer", nkey + ".rx_buffer", false, true)) {
            if (*b < 1518 && !rx.multi_buffer)
                r_.error(*nic->get("rx_buffer"), nkey + ".rx_buffer",
                         fmt::format("expected a buffer that holds a 1518-byte frame (MTU 1500), or multi_buffer = "
                                     "true, found {} bytes", *b));
            else if (*b < 64)
                r_.error(*nic->get("rx_buffer"), nkey + ".rx_buffer",
                         fmt::format("expected at least 64 bytes per buffer, found {}", *b));
            else
                rx.buffer_size = *b;
            if (!strategy)
                r_.error(*nic->get("rx_buffer"), nkey + ".rx_buffer", "rx_buffer needs an rx_strategy (the DMA API use)");
        }
        if (auto t = r_.duration(*nic, "rx_usecs", nkey + ".rx_usecs", false, false)) mc.nic_rx_usecs = *t;
        if (auto v = r_.integer(*nic, "rx_ring", nkey + ".rx_ring", false, 1, 4096)) mc.nic_rx_ring = static_cast<std::size_t>(*v);
        if (auto b = r_.bytes(*nic, "short_sync_bytes", nkey + ".short_sync_bytes", false, true)) rx.short_sync_bytes = *b;
        if (strategy) mc.nic_rx = rx;
    }

    if (const toml::table* tun = r_.table(m, "tunnel", mkey + ".tunnel", false, "a table [machine.tunnel]")) {
        std::string tkey = mkey + ".tunnel";
        r_.check_keys(*tun, tkey, "[machine.tunnel]", {"kind", "aead", "peer"});
        system::MachineConfig::Tunnel t;
        if (auto k = r_.choice(*tun, "kind", tkey + ".kind", true, {"wireguard", "esp"}))
            t.kind = *k == 0 ? net::TunnelKind::WIREGUARD : net::TunnelKind::ESP;
        if (auto a = r_.choice(*tun, "aead", tkey + ".aead", true, {"chacha20-poly1305", "aes-128-gcm", "aes-256-gcm"}))
            t.aead = *crypto::aead_alg_from_string(std::array<std::string_view, 3>{"chacha20-poly1305", "aes-128-gcm",
                                                                                  "aes-256-gcm"}[*a]);
        if (auto pe = r_.string(*tun, "peer", tkey + ".peer", true)) t.peer = *pe;
        if (name) tunnel_at_[*name] = {tun, tkey};
        if (t.kind == net::TunnelKind::WIREGUARD && t.aead != crypto::AeadAlg::CHACHA20_POLY1305 && tun->get("aead"))
            r_.error(*tun->get("aead"), tkey + ".aead",
                     fmt::format("expected \"chacha20-poly1305\" (WireGuard has no other cipher), found \"{}\"",
                                 crypto::to_string(t.aead)));
        const bool consistent = t.kind == net::TunnelKind::ESP || t.aead == crypto::AeadAlg::CHACHA20_POLY1305;
        if (prof && tun->get("aead") && tun->get("kind") && consistent) {
            if (!prof->tunnel)
                r_.error(*tun, tkey, fmt::format("a tunnel needs the [tunnel] figures of profile {}, which has none", prof->name));
            const auto choice = net::tunnel_aead_driver(t.kind, mc.simd_policy, t.aead, prof->cipher);
            if (arch::arch_of(mc.simd_policy) == prof->arch)
                if (auto missing = crypto::aead_missing_costs(prof->cipher, choice.driver, t.aead))
                    r_.error(*tun->get("aead"), tkey + ".aead",
                             fmt::format("{} through {} on {} needs {} in profile {}, which lacks it",
                                         crypto::to_string(t.aead), crypto::to_string(choice.driver),
                                         arch::to_string(prof->arch), *missing, prof->name));
        }
        mc.tunnel = t;
    }

    if (const toml::table* ov =
            r_.table(m, "overrides", mkey + ".overrides", false, "a table [machine.overrides] of profile figures")) {
        for (auto&& [k, v] : *ov) {
            std::string okey = join_key(mkey + ".overrides", k.str());
            if (!prof) continue; // nothing to override; the profile's own error is reported
            if (auto s = detail::apply_override(mc.profile, k.str(), v, okey, r_)) mc.overrides.push_back(*s);
        }
    }

    if (const toml::array* ws = r_.array(m, "workload", mkey + ".workload", false, "[[machine.workload]] tables")) {
        std::map<std::string, std::string> names; // workload name -> its key
        for (std::size_t i = 0; i < ws->size(); ++i) {
            std::string wkey = index_key(mkey + ".workload", i);
            const toml::node* n = ws->get(i);
            if (!n->is_table()) {
                r_.error(*n, wkey, fmt::format("expected a [[machine.workload]] table, found {}", describe(n)));
                continue;
            }
            if (auto wl = read_workload(*n->as_table(), wkey, mc, cpus, prof, name.has_value(), seed, names))
                mc.workloads.push_back(std::move(*wl));
        }
    }
    if (out_.size() != before) return std::nullopt;
    return mc;
}

system::ScenarioConfig ScenarioLoader::load() {
    system::ScenarioConfig cfg;
    cfg.path = display_;
    auto root = detail::parse_file(file_, r_);
    if (!root) throw InputError(std::move(out_));

    if (!root->contains("scenario") && root->contains("profile")) {
        r_.error_file("scenario", "expected a table [scenario], found a profile ([profile]); load it as a profile");
        throw InputError(std::move(out_));
    }
    r_.check_keys(*root, "", "a scenario (top level)", {"scenario", "machine", "link"});
    read_header(*root, cfg);

    const toml::array* ms = r_.array(*root, "machine", "machine", true, "one or more [[machine]] tables");
    if (ms && ms->empty()) r_.error(*ms, "machine", "expected one or more [[machine]] tables, found an empty array");
    if (ms) {
        std::map<std::string, std::string> seen;
        for (std::size_t i = 0; i < ms->size(); ++i) {
            std::string mkey = index_key("machine", i);
            const toml::node* n = ms->get(i);
            if (!n->is_table()) {
                r_.error(*n, mkey, fmt::format("expected a [[machine]] table, found {}", describe(n)));
                continue;
            }
            const toml::table& m = *n->as_table();
            if (const toml::node* nm = m.get("name"); nm && nm->is_string()) {
                declared_.insert(nm->as_string()->get());
                auto [it, fresh] = seen.emplace(nm->as_string()->get(), mkey);
                if (!fresh)
                    r_.error(*nm, mkey + ".name",
                             fmt::format("duplicate machine name {} (also {})", quote(it->first), it->second));
            }
            if (auto mc = read_machine(m, mkey, cfg.seed)) cfg.machines.push_back(std::move(*mc));
        }
    }
    if (const toml::array* ls = r_.array(*root, "link", "link", false, "[[link]] tables")) {
        for (std::size_t i = 0; i < ls->size(); ++i) {
            std::string lkey = index_key("link", i);
            const toml::table* l = ls->get(i)->as_table();
            if (!l) {
                r_.error(*ls->get(i), lkey, fmt::format("expected a [[link]] table, found {}", describe(ls->get(i))));
                continue;
            }
            r_.check_keys(*l, lkey, "[[link]]", {"ends", "rate", "latency", "kind", "vhost_cpu", "queue"});
            system::LinkConfig lc;
            if (auto q = r_.integer(*l, "queue", lkey + ".queue", false, 1, 1'000'000)) lc.queue = static_cast<std::size_t>(*q);
            if (auto k = r_.choice(*l, "kind", lkey + ".kind", false, {"ethernet", "virtio"}))
                lc.kind = *k == 0 ? system::LinkConfig::Kind::ETHERNET : system::LinkConfig::Kind::VIRTIO;
            if (auto v = r_.integer(*l, "vhost_cpu", lkey + ".vhost_cpu", false, 0, MAX_CPUS - 1))
                lc.vhost_cpu = static_cast<int>(*v);
            if (lc.kind == system::LinkConfig::Kind::VIRTIO)
                for (const char* k : {"rate", "latency", "queue"})
                    if (const toml::node* n = l->get(k))
                        r_.error(*n, lkey + "." + k,
                                 fmt::format("a virtio link has no {} (the vhost worker's copy is its speed)", k));
            if (l->get("vhost_cpu") && lc.kind != system::LinkConfig::Kind::VIRTIO)
                r_.error(*l->get("vhost_cpu"), lkey + ".vhost_cpu", "vhost_cpu belongs to a kind = \"virtio\" link");
            if (const toml::array* ends = r_.array(*l, "ends", lkey + ".ends", true, "two machine names")) {
                std::vector<std::string> names;
                for (std::size_t k = 0; k < ends->size(); ++k)
                    if (auto v = ends->get(k)->value<std::string>()) names.push_back(*v);
                bool ok = names.size() == 2 && names[0] != names[1];
                for (const auto& nm : names) {
                    bool found = false;
                    for (const auto& m : cfg.machines) found = found || m.name == nm;
                    ok = ok && found;
                }
                if (!ok)
                    r_.error(*ends, lkey + ".ends", "expected the names of two distinct machines of this scenario");
                else {
                    lc.a = names[0];
                    lc.b = names[1];
                }
            }
            if (const toml::node* rate = l->get("rate"))
                if (auto bps = r_.rate(*rate, lkey + ".rate")) lc.rate_bps = *bps;
            if (auto t = r_.duration(*l, "latency", lkey + ".latency", false, false)) lc.latency = *t;
            if (lc.kind == system::LinkConfig::Kind::VIRTIO && !lc.b.empty()) {
                for (const auto& m : cfg.machines)
                    if (m.name == lc.b) {
                        if (lc.vhost_cpu >= m.cpus)
                            r_.error(l->get("vhost_cpu") ? *l->get("vhost_cpu") : *l, lkey + ".vhost_cpu",
                                     fmt::format("expected a CPU of the host '{}' (0..{}), found {}", m.name, m.cpus - 1,
                                                 lc.vhost_cpu));
                        if (!m.profile.virt)
                            r_.error(*l, lkey + ".kind",
                                     fmt::format("a virtio link needs the [virt] figures of the host's profile {}, which has none",
                                                 m.profile.name));
                    }
            }
            for (const auto& prev : cfg.links)
                for (const std::string& e : {lc.a, lc.b})
                    if (!e.empty() && (prev.a == e || prev.b == e))
                        r_.error(*l, lkey + ".ends",
                                 fmt::format("machine '{}' is already an end of another link (one network device per machine)", e));
            cfg.links.push_back(lc);
        }
    }
    // Tunnel ends must name each other and agree on the tunnel.
    for (const auto& mc : cfg.machines) {
        if (!mc.tunnel || !tunnel_at_.count(mc.name)) continue;
        const auto& [node, tkey] = tunnel_at_.at(mc.name);
        const toml::node& at = node->get("peer") ? *node->get("peer") : *node;
        const system::MachineConfig* peer = nullptr;
        for (const auto& o : cfg.machines)
            if (o.name == mc.tunnel->peer) peer = &o;
        if (!peer && declared_.count(mc.tunnel->peer)) continue; // that machine's own errors are reported
        if (!peer || peer == &mc) {
            r_.error(at, tkey + ".peer",
                     fmt::format("expected the name of another machine of this scenario, found '{}'", mc.tunnel->peer));
            continue;
        }
        if (!peer->tunnel || peer->tunnel->peer != mc.name)
            r_.error(at, tkey + ".peer",
                     fmt::format("machine '{}' names peer '{}', whose [machine.tunnel] does not name '{}' back", mc.name,
                                 peer->name, mc.name));
        else if (peer->tunnel->kind != mc.tunnel->kind || peer->tunnel->aead != mc.tunnel->aead)
            r_.error(*node, tkey,
                     fmt::format("the tunnel peers disagree: '{}' says {} with {}, its peer '{}' says {} with {}", mc.name,
                                 net::to_string(mc.tunnel->kind), crypto::to_string(mc.tunnel->aead), peer->name,
                                 net::to_string(peer->tunnel->kind), crypto::to_string(peer->tunnel->aead)));
        bool linked = false;
        for (const auto& l : cfg.links)
            linked = linked || (l.a == mc.name && l.b == peer->name) || (l.b == mc.name && l.a == peer->name);
        if (!linked)
            r_.error(at, tkey + ".peer",
                     fmt::format("machine '{}' has no [[link]] to its tunnel peer '{}'", mc.name, peer->name));
    }
    for (auto& mc : cfg.machines)
        for (auto& w : mc.workloads)
            // Workloads with a peer machine (arp_pingpong, iperf3) need a link to it.
            if (const std::string* peer = std::visit(
                    [](const auto& x) -> const std::string* {
                        if constexpr (requires { x.peer; }) return &x.peer;
                        else return nullptr;
                    },
                    w)) {
                bool linked = false;
                for (const auto& l : cfg.links)
                    linked = linked || (l.a == mc.name && l.b == *peer) || (l.b == mc.name && l.a == *peer);
                if (!linked)
                    r_.error_file("machine", fmt::format("machine '{}': the workload's peer '{}' is not linked to it by a [[link]]",
                                                         mc.name, *peer));
            }
    if (!out_.empty()) {
        detail::sort_diagnostics(out_, display_);
        throw InputError(std::move(out_));
    }
    return cfg;
}

} // namespace

system::ScenarioConfig load_scenario(const std::filesystem::path& file, const LoadOptions& options) {
    return ScenarioLoader(file, options).load();
}

FileKind detect_kind(const std::filesystem::path& file) {
    std::vector<Diagnostic> out;
    Reader r(file.generic_string(), out);
    auto root = detail::parse_file(file, r);
    if (!root) throw InputError(std::move(out));
    bool profile = root->contains("profile"), scenario = root->contains("scenario");
    if (profile && !scenario) return FileKind::PROFILE;
    if (scenario && !profile) return FileKind::SCENARIO;
    r.error_file("", profile ? "a file holds either a [scenario] or a [profile] table, not both"
                             : "expected a [scenario] or [profile] table, found neither");
    throw InputError(std::move(out));
}

} // namespace kdsim::scenario
