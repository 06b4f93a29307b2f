// kdsim._kdsim: the C++ side of the Python package kdsim (docs/python.md). It loads and runs
// scenarios through the same runner the kdsim binary uses (runner/run.h, runner/sweep.h), so a
// run from Python gives the CLI's results JSON byte for byte, and hands the results to Python as
// plain tuples that kdsim/__init__.py turns into pandas DataFrames. Bad input raises
// kdsim.ScenarioError carrying every "file:line:col: error: key: ..." diagnostic.
#include "kernel/types.h"
#include "report/report.h"
#include "results/lookup.h"
#include "runner/run.h"
#include "runner/sweep.h"
#include "scenario/experiment.h"
#include "scenario/load.h"
#include "scenario/sweep.h"
#include "system/system.h"

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>
#include <pybind11/stl/filesystem.h>

#include <climits>
#include <map>
#include <thread>

namespace py = pybind11;

namespace kdsim::python {

namespace {

// Where a scenario is read from and how it is loaded, as Python gave it.
struct Source {
    std::filesystem::path file;        // the file, or the name a text is given in diagnostics
    std::optional<std::string> text;   // the TOML text, when given instead of a file
    std::string root;                  // repository root holding data/ ("": found from the file)
};

scenario::LoadOptions options(const Source& s, std::optional<std::uint64_t> seed, const std::string& mode,
                              const std::vector<std::pair<std::string, std::string>>& set) {
    scenario::LoadOptions lo;
    if (!s.root.empty()) lo.root = s.root;
    else if (s.text) lo.root = KDSIM_SOURCE_ROOT;
    lo.text = s.text;
    if (seed && *seed > static_cast<std::uint64_t>(INT64_MAX))
        throw scenario::InputError({scenario::Diagnostic{"seed", 0, 0, "", "expected a seed from 0 to 9223372036854775807, found " + std::to_string(*seed)}});
    lo.seed_override = seed;
    if (mode == "functional") lo.mode_override = system::Mode::FUNCTIONAL;
    else if (mode == "timing") lo.mode_override = system::Mode::TIMING;
    else if (!mode.empty())
        throw scenario::InputError({scenario::Diagnostic{"mode", 0, 0, "", "expected \"timing\" or \"functional\", found \"" + mode + "\""}});
    for (const auto& [key, value] : set) lo.assignments.push_back({key, value, "set " + key + "=" + value});
    return lo;
}

using StatRow = std::tuple<std::string, std::string, double, bool, std::string>;
using MetricRow = std::tuple<std::string, std::string, std::string, int, std::string, double, std::string>;
using FindingRow = std::tuple<std::string, std::string, int, double, std::string, std::string, std::string>;
using CycleRow = std::tuple<std::string, int, std::string, std::string, std::uint64_t>;

std::vector<StatRow> statistics(const results::RunResults& r) {
    std::vector<StatRow> rows;
    rows.reserve(r.statistics.size());
    for (const auto& s : r.statistics) rows.emplace_back(s.path, s.unit, s.value, s.integral, s.description);
    return rows;
}

std::vector<MetricRow> metrics(const results::RunResults& r) {
    std::vector<MetricRow> rows;
    for (const auto& w : r.workloads)
        for (const auto& m : w.metrics) rows.emplace_back(w.name, w.kind, w.machine, w.cpu, m.key, m.value, m.unit);
    return rows;
}

std::vector<FindingRow> findings(const results::RunResults& r) {
    std::vector<FindingRow> rows;
    for (const auto& f : r.findings) rows.emplace_back(f.kind, f.machine, f.cpu, f.time_us, f.culprit, f.victim, f.where);
    return rows;
}

// Each CPU's own figures, by the paths results::resolve knows them by.
std::vector<StatRow> cpu_figures(const results::RunResults& r) {
    std::vector<StatRow> rows;
    for (const auto& m : r.machines)
        for (const auto& c : m.cpus) {
            const std::string cpu = m.name + "/cpu" + std::to_string(c.id) + "/";
            rows.emplace_back(cpu + "busy_us", "us", c.busy_us, false, "time the CPU was busy");
            rows.emplace_back(cpu + "idle_us", "us", c.idle_us, false, "time the CPU was idle");
            rows.emplace_back(cpu + "longest_np_span_us", "us", c.longest_np_span_us, false,
                              "longest non-preemptible stretch");
            rows.emplace_back(cpu + "simd/longest_bracket_us", "us", c.simd.longest_bracket_us, false,
                              "longest kernel SIMD bracket");
            rows.emplace_back(cpu + "simd/longest_bracket_bytes", "bytes",
                              static_cast<double>(c.simd.longest_bracket_bytes), true,
                              "bytes processed in the longest kernel SIMD bracket");
            std::map<std::string, std::uint64_t> by_category;
            for (const auto& [context, cats] : c.cycles)
                for (const auto& [category, n] : cats) by_category[category] += n;
            for (const auto& [category, n] : by_category)
                rows.emplace_back(cpu + "cycles/" + category, "cycles", static_cast<double>(n), true,
                                  "cycles charged to " + category + ", every context");
            for (const auto& [context, cats] : c.cycles)
                for (const auto& [category, n] : cats)
                    rows.emplace_back(cpu + "cycles/" + context + "/" + category, "cycles", static_cast<double>(n), true,
                                      "cycles charged to " + category + " in " + context + " context");
        }
    return rows;
}

std::vector<CycleRow> cycles(const results::RunResults& r) {
    std::vector<CycleRow> rows;
    for (const auto& m : r.machines)
        for (const auto& c : m.cpus)
            for (const auto& [context, by_category] : c.cycles)
                for (const auto& [category, n] : by_category) rows.emplace_back(m.name, c.id, context, category, n);
    return rows;
}

results::RunResults run(const Source& s, std::optional<std::uint64_t> seed, const std::string& mode,
                        const std::vector<std::pair<std::string, std::string>>& set) {
    scenario::LoadOptions lo = options(s, seed, mode, set);
    py::gil_scoped_release unlocked;
    return runner::run_scenario(s.file, lo);
}

// Loads without running; (name, machines, workloads).
std::tuple<std::string, std::size_t, std::size_t> check(const Source& s, const std::vector<std::pair<std::string, std::string>>& set) {
    system::ScenarioConfig cfg = scenario::load_scenario(s.file, options(s, std::nullopt, "", set));
    system::System sys(cfg); // assembling the model catches the remaining inconsistencies
    std::size_t workloads = 0;
    for (const auto& m : cfg.machines) workloads += m.workloads.size();
    return {cfg.name, cfg.machines.size(), workloads};
}

// One point of a sweep: index, the values it set, its seed, status, message, results JSON.
using PointRow = std::tuple<std::size_t, std::vector<std::pair<std::string, std::string>>, std::optional<std::uint64_t>,
                            std::string, std::string, std::string>;

std::tuple<std::vector<std::string>, std::vector<PointRow>>
sweep(const Source& s, std::optional<std::uint64_t> seed, const std::string& mode,
      const std::vector<std::pair<std::string, std::string>>& set,
      const std::vector<std::pair<std::string, std::vector<std::string>>>& axes, bool list,
      std::optional<std::vector<std::uint64_t>> seeds, unsigned jobs) {
    scenario::LoadOptions base = options(s, seed, mode, set);
    std::vector<scenario::SweepAxis> spec_axes;
    for (const auto& [key, values] : axes) {
        scenario::SweepAxis axis{key, {}};
        for (const auto& v : values) axis.values.push_back({key, v, "sweep " + key + "=" + v});
        spec_axes.push_back(std::move(axis));
    }
    if (jobs == 0) jobs = std::max(1u, std::thread::hardware_concurrency());
    runner::SweepDefinition d;
    std::vector<runner::Outcome> outcomes;
    {
        py::gil_scoped_release unlocked;
        d = runner::define_sweep(s.file, base, std::move(spec_axes), list, seeds);
        std::vector<runner::Loaded> loaded;
        if (auto bad = runner::load_points(s.file, base, d, jobs, loaded); !bad.empty())
            throw scenario::InputError(std::move(bad));
        std::vector<std::size_t> all(d.points.size());
        for (std::size_t i = 0; i < all.size(); ++i) all[i] = i;
        outcomes = runner::run_points(d.points, loaded, all, jobs, {});
    }
    std::vector<std::string> keys;
    for (const auto& a : d.spec.axes) keys.push_back(a.key);
    std::vector<PointRow> rows;
    for (const auto& o : outcomes) {
        std::vector<std::pair<std::string, std::string>> values;
        for (const auto& a : d.points[o.index].set) values.emplace_back(a.key, a.value);
        rows.emplace_back(o.index, std::move(values), d.points[o.index].seed, o.status, o.message, o.json);
    }
    return {keys, rows};
}

std::vector<std::uint64_t> parse_seeds(const std::string& text) {
    std::string why;
    auto seeds = scenario::parse_seeds(text, why);
    if (!seeds) throw scenario::InputError({scenario::Diagnostic{"seeds " + text, 0, 0, "", why}});
    return *seeds;
}

py::dict experiment(const std::filesystem::path& manifest) {
    scenario::Experiment x = scenario::load_experiment(manifest);
    py::dict d;
    d["id"] = x.id;
    d["title"] = x.title;
    d["question"] = x.question;
    d["expect"] = x.expect;
    d["dir"] = x.dir;
    d["scenarios"] = x.scenarios;
    py::list columns;
    for (const auto& c : x.columns) columns.append(py::make_tuple(c.label, c.metric, c.per));
    d["columns"] = columns;
    py::list compares;
    for (const auto& c : x.compares) compares.append(py::make_tuple(c.before, c.after));
    d["compares"] = compares;
    return d;
}

} // namespace

} // namespace kdsim::python

PYBIND11_MODULE(_kdsim, m) {
    using namespace kdsim;
    using namespace kdsim::python;
    m.doc() = "kdsim's C++ core; use the package kdsim (docs/python.md)";

    static py::exception<scenario::InputError> scenario_error(m, "ScenarioError", PyExc_ValueError);
    py::register_exception_translator([](std::exception_ptr p) {
        auto raise = [](const std::string& message, const std::vector<scenario::Diagnostic>& diags) {
            py::object type = py::reinterpret_borrow<py::object>(scenario_error);
            py::object e = type(message);
            py::list ds;
            for (const auto& d : diags) ds.append(py::make_tuple(d.file, d.line, d.column, d.key, d.message));
            e.attr("diagnostics") = ds;
            PyErr_SetObject(type.ptr(), e.ptr());
        };
        try {
            if (p) std::rethrow_exception(p);
        } catch (const scenario::InputError& e) {
            std::string text = e.what();
            while (!text.empty() && text.back() == '\n') text.pop_back();
            raise(text, e.diagnostics);
        } catch (const system::ConfigError& e) {
            raise(std::string("error: ") + e.what(), {});
        }
    });

    py::class_<Source>(m, "Source")
        .def(py::init<std::filesystem::path, std::optional<std::string>, std::string>(), py::arg("file"),
             py::arg("text") = py::none(), py::arg("root") = "")
        .def_readonly("file", &Source::file)
        .def_readonly("text", &Source::text)
        .def_readonly("root", &Source::root);

    py::class_<results::RunResults>(m, "Results")
        .def_readonly("scenario", &results::RunResults::scenario)
        .def_readonly("scenario_path", &results::RunResults::scenario_path)
        .def_readonly("description", &results::RunResults::description)
        .def_readonly("seed", &results::RunResults::seed)
        .def_readonly("mode", &results::RunResults::mode)
        .def_readonly("simulated_us", &results::RunResults::simulated_us)
        .def_readonly("events", &results::RunResults::events)
        .def_readonly("failed", &results::RunResults::failed)
        .def_readonly("failures", &results::RunResults::failures)
        .def("json", &report::to_json_text, "The results JSON, as `kdsim run --json` writes it")
        .def("csv", &report::to_csv, "The metrics CSV, as `kdsim run --csv` writes it")
        .def("summary", &report::summary_table, "The terminal summary `kdsim run` prints")
        .def("statistics", &statistics, "(path, unit, value, integral, description) per statistic")
        .def("metrics", &metrics, "(workload, kind, machine, cpu, metric, value, unit) per workload metric")
        .def("findings", &findings, "(kind, machine, cpu, time_us, culprit, victim, where) per kept finding")
        .def("cpu_figures", &cpu_figures, "(path, unit, value, integral, description) per CPU figure")
        .def("cycles", &cycles, "(machine, cpu, context, category, cycles) per non-zero entry")
        .def("finding_counts", [](const results::RunResults& r) {
            std::vector<std::tuple<std::string, std::string, std::uint64_t>> rows;
            for (const auto& c : r.finding_counts) rows.emplace_back(c.kind, c.machine, c.count);
            return rows;
        })
        .def("machines", [](const results::RunResults& r) {
            std::vector<std::tuple<std::string, std::string, std::string, std::uint64_t, std::string, std::string,
                                   std::size_t, std::vector<std::string>>> rows;
            for (const auto& mr : r.machines)
                rows.emplace_back(mr.name, mr.profile, mr.arch, mr.clock_hz, mr.preempt, mr.simd_policy, mr.cpus.size(),
                                  mr.overrides);
            return rows;
        })
        .def("resolve", [](const results::RunResults& r, const std::string& path) { return results::resolve_sum(r, path); },
             "A results path (or several joined by \" + \") as the experiment tables resolve it; None when absent")
        .def("column", [](const results::RunResults& r, const std::string& metric, const std::string& per) {
            return runner::column_value(r, {"", metric, per});
        });

    m.def("results_from_json", [](const std::string& text) { return report::from_json(nlohmann::json::parse(text)); },
          "Reads a results JSON text (format 3) back");
    m.def("run", &run, py::arg("source"), py::arg("seed"), py::arg("mode"), py::arg("set"));
    m.def("check", &check, py::arg("source"), py::arg("set"));
    m.def("sweep", &sweep, py::arg("source"), py::arg("seed"), py::arg("mode"), py::arg("set"), py::arg("axes"),
          py::arg("list"), py::arg("seeds"), py::arg("jobs"));
    m.def("parse_seeds", &parse_seeds);
    m.def("experiment", &experiment);
    std::vector<std::string> contexts, categories;
    for (std::size_t k = 0; k < kernel::CTX_KINDS; ++k) contexts.emplace_back(kernel::to_string(static_cast<kernel::CtxKind>(k)));
    for (std::size_t c = 0; c < kernel::CATS; ++c) categories.emplace_back(kernel::to_string(static_cast<kernel::Cat>(c)));
    m.attr("CONTEXTS") = contexts;
    m.attr("CATEGORIES") = categories;
    m.attr("RESULTS_FORMAT_VERSION") = report::RESULTS_FORMAT_VERSION;
    m.attr("SOURCE_ROOT") = KDSIM_SOURCE_ROOT;
}
