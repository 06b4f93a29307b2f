// `kdsim report INPUTS... -o report.html`: reads saved results (run JSON files, the folders of
// `kdsim experiments --out` and `kdsim sweep --out`, results databases), groups them by
// experiment (its manifest found beside the scenario each run names), sweep or plain runs, and
// writes one self-contained HTML page (report/html.h). Every input is read and every format
// version checked before anything is written; the page is written atomically.
#include "cli/commands.h"
#include "cli/db_store.h"

#include "report/html.h"
#include "report/report.h"
#include "scenario/experiment.h"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>

namespace kdsim::cli {

namespace fs = std::filesystem;
using report::html::Group;
using report::html::Run;

namespace {

// Bad input, already described: the command prints it and exits 2.
struct Refused {
    std::vector<std::string> lines;
};

// A results file read but not yet parsed, with what its header says.
struct JsonInput {
    fs::path file;
    nlohmann::json doc;
    std::string sweep;             // (sweep folders) the sweep's scenario, from sweep.json
    std::vector<std::string> keys; // (sweep folders) the keys it varied, in order
};

bool is_sqlite(const fs::path& p) {
    std::ifstream in(p, std::ios::binary);
    char head[16] = {};
    in.read(head, sizeof head);
    return in.gcount() == 16 && std::string_view(head, 16) == std::string_view("SQLite format 3\0", 16);
}

nlohmann::json read_json(const fs::path& p) {
    std::ifstream in(p, std::ios::binary);
    if (!in) throw Refused{{p.string() + ": error: cannot read the file"}};
    try {
        return nlohmann::json::parse(in);
    } catch (const nlohmann::json::parse_error& e) {
        throw Refused{{p.string() + ": error: not JSON: " + e.what()}};
    }
}

std::string format_of(const nlohmann::json& j) {
    return j.is_object() && j.contains("format") && j["format"].is_string() ? j["format"].get<std::string>() : "";
}

struct Inputs {
    std::vector<JsonInput> runs;
    std::vector<fs::path> databases;
    std::vector<std::string> notes;
};

// A sweep folder: its sweep.json says which point files hold results and which keys it varied.
void add_sweep(const fs::path& sweep_json, const nlohmann::json& s, Inputs& in) {
    if (!s.contains("format_version") || s["format_version"] != 1)
        throw Refused{{sweep_json.string() + ": error: sweep summary format version " + (s.contains("format_version") ? s["format_version"].dump() : "missing") +
                       " is not supported (this kdsim reads 1)"}};
    const fs::path dir = sweep_json.parent_path();
    std::vector<std::string> keys;
    for (const auto& k : s.value("keys", nlohmann::json::array()))
        if (k.is_string()) keys.push_back(k.get<std::string>());
    for (const auto& p : s.value("points", nlohmann::json::array())) {
        const std::string file = p.value("results", "");
        if (file.empty()) {
            in.notes.push_back(sweep_json.string() + ": point " + std::to_string(p.value("index", 0)) + " failed (" + p.value("message", "") + "); not shown");
            continue;
        }
        in.runs.push_back(JsonInput{dir / file, read_json(dir / file), fs::path(s.value("scenario", "")).stem().string(), keys});
    }
}

void add_path(const fs::path& p, bool named, Inputs& in) {
    std::error_code ec;
    if (fs::is_directory(p, ec)) {
        if (fs::exists(p / "sweep.json")) return add_sweep(p / "sweep.json", read_json(p / "sweep.json"), in);
        std::vector<fs::path> entries;
        for (const auto& e : fs::directory_iterator(p, ec)) entries.push_back(e.path());
        std::sort(entries.begin(), entries.end());
        for (const auto& e : entries)
            if (fs::is_directory(e, ec) || e.extension() == ".json" || e.extension() == ".sqlite" || e.extension() == ".db") add_path(e, false, in);
        return;
    }
    if (!fs::exists(p, ec)) throw Refused{{p.string() + ": error: no such file or directory"}};
    if (is_sqlite(p)) {
        in.databases.push_back(p);
        return;
    }
    nlohmann::json j = read_json(p);
    const std::string format = format_of(j);
    if (format == "kdsim-results") in.runs.push_back(JsonInput{p, std::move(j), "", {}});
    else if (format == "kdsim-sweep") add_sweep(p, j, in);
    else if (named) throw Refused{{p.string() + ": error: format: expected \"kdsim-results\" or \"kdsim-sweep\", found " + (format.empty() ? "none" : "\"" + format + "\"")}};
    else in.notes.push_back("skipped " + p.string() + ": not a kdsim results file");
}

// Every results file must be of the format this kdsim reads; otherwise one message lists them.
void check_versions(const std::vector<JsonInput>& runs) {
    std::map<std::string, std::vector<std::string>> by_version;
    for (const auto& r : runs)
        by_version[r.doc.contains("format_version") ? r.doc["format_version"].dump() : "missing"].push_back(r.file.string());
    const std::string ours = std::to_string(report::RESULTS_FORMAT_VERSION);
    if (by_version.size() == 1 && by_version.begin()->first == ours) return;
    if (by_version.empty()) return;
    Refused e{{"kdsim: report: results of incompatible format versions (this kdsim reads format " + ours +
               "; tools/compare_results.py reads format 1 for comparisons):"}};
    for (const auto& [version, files] : by_version) {
        if (version == ours) {
            e.lines.push_back("  " + std::to_string(files.size()) + " file(s) of format " + ours + ", e.g. " + files.front());
            continue;
        }
        for (const auto& f : files) e.lines.push_back("  " + f + ": format_version " + version);
    }
    throw e;
}

// The manifest of the experiment a scenario belongs to (<its folder>/experiment.toml), cached.
const scenario::Experiment* manifest_of(const std::string& scenario_path, std::map<fs::path, std::optional<scenario::Experiment>>& cache) {
    if (scenario_path.empty()) return nullptr;
    const fs::path m = fs::path(scenario_path).parent_path() / "experiment.toml";
    auto [it, fresh] = cache.try_emplace(m);
    if (fresh) {
        std::error_code ec;
        if (fs::exists(m, ec)) try {
                it->second = scenario::load_experiment(m);
            } catch (const scenario::InputError&) {
            }
    }
    return it->second ? &*it->second : nullptr;
}

// A run of a database, rebuilt from its stored figures (db::figures_of's paths).
results::RunResults from_figures(const db::StoredRun& s, const std::vector<db::Row>& rows) {
    results::RunResults r;
    r.scenario = s.scenario;
    r.scenario_path = s.scenario_path;
    r.seed = s.seed;
    r.mode = s.mode;
    r.simulated_us = s.simulated_us;
    r.events = s.events;
    r.failed = s.verdict == "failed";
    r.failures = s.failures;
    for (const auto& o : s.overrides)
        if (const std::size_t eq = o.find('='); eq != std::string::npos) r.sweep_point.push_back({o.substr(0, eq), o.substr(eq + 1)});
    auto cpu_of = [&](const std::string& machine, int id) -> results::CpuResult& {
        auto m = std::find_if(r.machines.begin(), r.machines.end(), [&](const auto& x) { return x.name == machine; });
        if (m == r.machines.end()) {
            m = r.machines.insert(r.machines.end(), results::MachineResult{});
            m->name = machine;
        }
        auto c = std::find_if(m->cpus.begin(), m->cpus.end(), [&](const auto& x) { return x.id == id; });
        if (c == m->cpus.end()) {
            c = m->cpus.insert(m->cpus.end(), results::CpuResult{});
            c->id = id;
        }
        return *c;
    };
    for (const auto& row : rows) {
        const std::string& path = row.stat.path;
        if (path.rfind("workload.", 0) == 0) {
            const std::size_t dot = path.find('.', 9);
            if (dot == std::string::npos) continue;
            const std::string name = path.substr(9, dot - 9);
            auto w = std::find_if(r.workloads.begin(), r.workloads.end(), [&](const auto& x) { return x.name == name; });
            if (w == r.workloads.end()) {
                w = r.workloads.insert(r.workloads.end(), results::WorkloadResult{});
                w->name = name;
            }
            w->metrics.push_back({path.substr(dot + 1), row.stat.value, row.stat.unit});
            continue;
        }
        // "<machine>/cpu<N>/busy_us", idle_us, longest_np_span_us, "cycles/<category>"
        const std::size_t a = path.find('/'), b = a == std::string::npos ? a : path.find('/', a + 1);
        const std::string place = b == std::string::npos ? "" : path.substr(a + 1, b - a - 1);
        const std::string figure = b == std::string::npos ? "" : path.substr(b + 1);
        const bool cpu = place.size() > 3 && place.rfind("cpu", 0) == 0 && std::all_of(place.begin() + 3, place.end(), ::isdigit);
        const bool cpu_figure = figure == "busy_us" || figure == "idle_us" || figure == "longest_np_span_us" ||
                                (figure.rfind("cycles/", 0) == 0 && figure.find('/', 7) == std::string::npos);
        if (cpu && cpu_figure) {
            results::CpuResult& c = cpu_of(path.substr(0, a), std::stoi(place.substr(3)));
            if (figure == "busy_us") c.busy_us = row.stat.value;
            else if (figure == "idle_us") c.idle_us = row.stat.value;
            else if (figure == "longest_np_span_us") c.longest_np_span_us = row.stat.value;
            else if (row.stat.value > 0) c.cycles["all contexts"][figure.substr(7)] = static_cast<std::uint64_t>(row.stat.value);
            continue;
        }
        r.statistics.push_back(row.stat);
    }
    return r;
}

// The groups, in order of first appearance; an experiment's runs in its manifest's order.
class Grouping {
public:
    void add(Run run, const std::string& experiment_hint, const std::string& sweep, std::vector<std::string> sweep_keys) {
        const results::RunResults& r = run.results;
        if (!sweep.empty() || !r.sweep_point.empty()) {
            Group& g = group(Group::Kind::SWEEP, sweep.empty() ? r.scenario : sweep);
            if (g.sweep_keys.empty()) {
                if (sweep_keys.empty())
                    for (const auto& v : r.sweep_point) sweep_keys.push_back(v.key);
                g.sweep_keys = std::move(sweep_keys);
            }
            return push(g, std::move(run));
        }
        if (const scenario::Experiment* x = manifest_of(r.scenario_path, manifests_); x && (experiment_hint.empty() || experiment_hint == x->id)) {
            Group& g = group(Group::Kind::EXPERIMENT, x->id);
            if (g.title.empty()) {
                g.title = x->title;
                g.question = x->question;
                for (const auto& c : x->columns) g.columns.push_back({c.label, c.metric, c.per});
                for (const auto& p : x->compares) g.compares.emplace_back(fs::path(p.before).stem().string(), fs::path(p.after).stem().string());
                for (const auto& s : x->scenarios) order_[x->id].push_back(s.stem().string());
                for (const auto& p : x->published)
                    g.published.push_back({p.figure, p.value, p.unit, p.source, fs::path(p.scenario).stem().string(), p.metric, p.scale});
            }
            return push(g, std::move(run));
        }
        if (!experiment_hint.empty() && std::find(notes_.begin(), notes_.end(), experiment_hint) == notes_.end()) {
            notes_.push_back(experiment_hint);
            missing_.push_back(experiment_hint + ": no manifest " + (fs::path(r.scenario_path).parent_path() / "experiment.toml").string() +
                               " (scenario paths are relative to the working directory), so no experiment table or before/after pairs");
        }
        push(group(Group::Kind::RUNS, experiment_hint.empty() ? "runs" : experiment_hint), std::move(run));
    }

    // Experiments whose manifest was not found, one line each.
    const std::vector<std::string>& missing_manifests() const { return missing_; }

    std::vector<Group> take() {
        for (Group& g : groups_) {
            const auto& order = order_[g.id];
            if (g.kind != Group::Kind::EXPERIMENT || order.empty()) continue;
            auto rank = [&](const Run& r) { return std::find(order.begin(), order.end(), r.label) - order.begin(); };
            std::stable_sort(g.runs.begin(), g.runs.end(), [&](const Run& a, const Run& b) { return rank(a) < rank(b); });
        }
        return std::move(groups_);
    }

private:
    Group& group(Group::Kind kind, const std::string& id) {
        for (Group& g : groups_)
            if (g.kind == kind && g.id == id) return g;
        groups_.emplace_back();
        groups_.back().kind = kind;
        groups_.back().id = id;
        return groups_.back();
    }
    static void push(Group& g, Run run) {
        const std::string base = run.label;
        for (int n = 2; std::any_of(g.runs.begin(), g.runs.end(), [&](const Run& x) { return x.label == run.label; }); ++n)
            run.label = base + " #" + std::to_string(n);
        g.runs.push_back(std::move(run));
    }

    std::vector<Group> groups_;
    std::map<fs::path, std::optional<scenario::Experiment>> manifests_;
    std::map<std::string, std::vector<std::string>> order_;
    std::vector<std::string> notes_;   // experiment ids already in missing_
    std::vector<std::string> missing_;
};

} // namespace

CLI::App* add_report_command(CLI::App& app, ReportOptions& o) {
    auto* c = app.add_subcommand("report", "Write one self-contained HTML report (figures and tables) of saved results");
    c->add_option("inputs", o.inputs,
                  "Run JSON files, folders of `kdsim experiments --out` or `kdsim sweep --out`, results databases (SQLite)")
        ->required();
    c->add_option("-o,--out", o.out, "The HTML file to write (atomically)")->required();
    return c;
}

int cmd_report(const ReportOptions& o) {
    if (std::string why = report::check_writable(o.out); !why.empty()) {
        std::fprintf(stderr, "kdsim: --out %s: %s\nkdsim: nothing was written\n", o.out.c_str(), why.c_str());
        return EXIT_BAD_INPUT;
    }
    Grouping grouping;
    Inputs in;
    try {
        for (const auto& p : o.inputs) add_path(p, true, in);
        check_versions(in.runs);
        for (const auto& d : in.databases)
            if (std::string why = db::check_database(d.string()); !why.empty()) throw Refused{{d.string() + ": error: " + why}};
        for (auto& j : in.runs) {
            Run run;
            try {
                run.results = report::from_json(j.doc);
            } catch (const std::exception& e) {
                throw Refused{{j.file.string() + ": error: " + e.what()}};
            }
            run.label = j.file.stem().string();
            // `kdsim experiments --out` names a run's file <ID>-<scenario stem>.json
            std::string hint;
            const std::string stem = fs::path(run.results.scenario_path).stem().string();
            if (run.label.size() > stem.size() + 1 && run.label.ends_with("-" + stem)) {
                hint = run.label.substr(0, run.label.size() - stem.size() - 1);
                run.label = stem;
            }
            run.source = j.file.string();
            grouping.add(std::move(run), hint, j.sweep, j.keys);
        }
        for (const auto& d : in.databases) {
            db::Database database(d.string());
            std::map<std::int64_t, std::vector<db::Row>> rows;
            for (auto& row : database.rows({})) rows[row.run_id].push_back(std::move(row));
            for (const auto& s : database.runs({})) {
                Run run;
                run.results = from_figures(s, rows[s.id]);
                run.contexts_known = false;
                run.label = s.command == "sweep" ? "run " + std::to_string(s.id) : fs::path(s.scenario_path).stem().string();
                run.source = d.string() + "#run " + std::to_string(s.id);
                grouping.add(std::move(run), s.experiment, s.command == "sweep" ? s.scenario : "", {});
            }
        }
    } catch (const Refused& e) {
        for (const auto& l : e.lines) std::fprintf(stderr, "%s\n", l.c_str());
        std::fprintf(stderr, "kdsim: nothing was written\n");
        return EXIT_BAD_INPUT;
    } catch (const db::DbError& e) {
        std::fprintf(stderr, "kdsim: report: %s\nkdsim: nothing was written\n", e.what());
        return EXIT_BAD_INPUT;
    }
    const std::vector<std::string> missing = grouping.missing_manifests();
    std::vector<Group> groups = grouping.take();
    if (groups.empty()) {
        std::fprintf(stderr, "kdsim: report: the inputs hold no results\nkdsim: nothing was written\n");
        return EXIT_BAD_INPUT;
    }
    for (const auto& m : missing) in.notes.push_back(m);
    for (const auto& n : in.notes) std::fprintf(stderr, "kdsim: report: %s\n", n.c_str());
    report::write_file_atomically(o.out, report::html::page(groups, in.notes));
    std::size_t runs = 0;
    for (const auto& g : groups) runs += g.runs.size();
    std::printf("kdsim: report: %zu section(s), %zu run(s) -> %s\n", groups.size(), runs, o.out.c_str());
    return EXIT_OK;
}

} // namespace kdsim::cli
