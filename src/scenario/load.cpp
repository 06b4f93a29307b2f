// Scenario files (scenarios/**.toml) -> system::ScenarioConfig, with the profiles and
// workload size lists they name: the file, [scenario], the root and the profiles. Format:
// docs/scenario-format.md; the other parts of the loader: scenario/loader.h.
#include "scenario/loader.h"

#include <fmt/format.h>

#include <algorithm>

namespace kdsim::scenario {

namespace detail {

namespace fs = std::filesystem;

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
    root_ = root_at_or_above(start);
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
    if (!profile_name_stays_below(name)) {
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
        if (auto n = r_.name(*s, "name", "scenario.name", true, true)) cfg.name = *n;
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

system::ScenarioConfig ScenarioLoader::load() {
    system::ScenarioConfig cfg;
    cfg.path = display_;
    auto root = opts_.text ? detail::parse_input_text(*opts_.text, r_) : detail::parse_file(file_, r_);
    if (!root) throw InputError(std::move(out_));

    if (!root->contains("scenario") && root->contains("profile")) {
        r_.error_file("scenario", "expected a table [scenario], found a profile ([profile]); load it as a profile");
        throw InputError(std::move(out_));
    }
    if (!opts_.assignments.empty()) {
        detail::apply_assignments(*root, opts_.assignments, r_);
        if (!out_.empty()) throw InputError(std::move(out_));
    }
    detail::read_sweep_table(*root, r_); // what `kdsim sweep` varies: checked here, a single run ignores it
    root->erase("sweep");
    r_.check_keys(*root, "", "a scenario (top level)", {"scenario", "machine", "link"});
    read_header(*root, cfg);

    const toml::array* ms = r_.array(*root, "machine", "machine", true, "one or more [[machine]] tables");
    if (ms && ms->empty()) r_.error(*ms, "machine", "expected one or more [[machine]] tables, found an empty array");
    loading_ = &cfg;
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
            bool duplicate = false;
            if (const toml::node* nm = m.get("name"); nm && nm->is_string()) {
                declared_.insert(nm->as_string()->get());
                auto [it, fresh] = seen.emplace(nm->as_string()->get(), mkey);
                if (!fresh)
                    r_.error(*nm, mkey + ".name",
                             fmt::format("duplicate machine name {} (also {})", quote(it->first), it->second));
                duplicate = !fresh;
            }
            // A duplicate's own errors are reported; the cross-machine checks see the first only.
            if (auto mc = read_machine(m, mkey, cfg.seed); mc && !duplicate) {
                cfg.machines.push_back(std::move(*mc));
                workloads_at_.push_back(std::move(workloads_read_));
            }
        }
    }
    read_links(*root, cfg);
    check_nic_devices(cfg);
    check_peers(cfg);
    check_vcpu_cpus(cfg);
    if (!out_.empty()) {
        detail::sort_diagnostics(out_, display_);
        throw InputError(std::move(out_));
    }
    return cfg;
}

} // namespace detail

system::ScenarioConfig load_scenario(const std::filesystem::path& file, const LoadOptions& options) {
    return detail::ScenarioLoader(file, options).load();
}

FileKind detect_kind(const std::filesystem::path& file) {
    std::vector<Diagnostic> out;
    detail::Reader r(file.generic_string(), out);
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
