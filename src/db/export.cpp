#include "db/export.h"

#include <fmt/format.h>

#include <algorithm>

namespace kdsim::db {

namespace {

// RFC 4180: quoted when it holds a comma, a quote or a line break.
std::string csv_field(const std::string& s) {
    if (s.find_first_of(",\"\n\r") == std::string::npos) return s;
    std::string q = "\"";
    for (char c : s) q += c == '"' ? std::string("\"\"") : std::string(1, c);
    return q + "\"";
}

// Shortest text that reads back as the same double.
std::string number(double v) { return fmt::format("{}", v); }

std::string join(const std::vector<std::string>& v, const char* sep) {
    std::string out;
    for (std::size_t i = 0; i < v.size(); ++i) out += (i ? sep : "") + v[i];
    return out;
}

// Aligned columns: the first `left` columns left-aligned, the others right-aligned.
std::string aligned(const std::vector<std::vector<std::string>>& rows, std::size_t left) {
    std::vector<std::size_t> w;
    for (const auto& r : rows) {
        w.resize(std::max(w.size(), r.size()), 0);
        for (std::size_t i = 0; i < r.size(); ++i) w[i] = std::max(w[i], r[i].size());
    }
    std::string out;
    for (const auto& r : rows) {
        std::string line;
        for (std::size_t i = 0; i < r.size(); ++i) {
            const std::string pad(w[i] - r[i].size(), ' ');
            line += (i ? "  " : "") + (i < left ? r[i] + (i + 1 < r.size() ? pad : "") : pad + r[i]);
        }
        out += line + "\n";
    }
    return out;
}

} // namespace

std::string runs_table(const std::vector<StoredRun>& runs) {
    std::vector<std::vector<std::string>> t{{"id", "scenario", "experiment", "command", "seed", "verdict", "simulated_us", "wall_s", "figures"}};
    for (const auto& r : runs)
        t.push_back({std::to_string(r.id), r.scenario, r.experiment.empty() ? "-" : r.experiment, r.command,
                     std::to_string(r.seed), r.verdict, fmt::format("{:.1f}", r.simulated_us), fmt::format("{:.3f}", r.wall_s),
                     std::to_string(r.statistics)});
    return aligned(t, 4) + fmt::format("{} run(s)\n", runs.size());
}

std::string runs_csv(const std::vector<StoredRun>& runs) {
    std::string out = "id,recorded_utc,command,experiment,scenario,scenario_path,scenario_hash,kdsim_version,seed,mode,"
                      "overrides,verdict,simulated_us,events,wall_s,statistics\n";
    for (const auto& r : runs)
        out += fmt::format("{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}\n", r.id, r.recorded_utc, csv_field(r.command),
                           csv_field(r.experiment), csv_field(r.scenario), csv_field(r.scenario_path), r.scenario_hash,
                           csv_field(r.kdsim_version), r.seed, r.mode, csv_field(join(r.overrides, ";")), r.verdict,
                           number(r.simulated_us), r.events, number(r.wall_s), r.statistics);
    return out;
}

nlohmann::json runs_json(const std::vector<StoredRun>& runs) {
    nlohmann::json a = nlohmann::json::array();
    for (const auto& r : runs)
        a.push_back({{"id", r.id}, {"recorded_utc", r.recorded_utc}, {"command", r.command}, {"experiment", r.experiment},
                     {"scenario", r.scenario}, {"scenario_path", r.scenario_path}, {"scenario_hash", r.scenario_hash},
                     {"kdsim_version", r.kdsim_version}, {"seed", r.seed}, {"mode", r.mode}, {"overrides", r.overrides},
                     {"verdict", r.verdict}, {"failures", r.failures}, {"simulated_us", r.simulated_us},
                     {"events", r.events}, {"wall_s", r.wall_s}, {"statistics", r.statistics}});
    return a;
}

std::string rows_table(const std::vector<Row>& rows) {
    std::vector<std::vector<std::string>> t{{"run", "scenario", "seed", "path", "value", "unit"}};
    for (const auto& r : rows)
        t.push_back({std::to_string(r.run_id), r.scenario, std::to_string(r.seed), r.stat.path,
                     r.stat.integral ? fmt::format("{:.0f}", r.stat.value) : fmt::format("{:.6g}", r.stat.value), r.stat.unit});
    return aligned(t, 4) + fmt::format("{} figure(s)\n", rows.size());
}

std::string rows_csv(const std::vector<Row>& rows) {
    std::string out = "run_id,scenario,seed,path,value,unit,integral\n";
    for (const auto& r : rows)
        out += fmt::format("{},{},{},{},{},{},{}\n", r.run_id, csv_field(r.scenario), r.seed, csv_field(r.stat.path),
                           number(r.stat.value), csv_field(r.stat.unit), r.stat.integral ? 1 : 0);
    return out;
}

nlohmann::json rows_json(const std::vector<Row>& rows) {
    nlohmann::json a = nlohmann::json::array();
    for (const auto& r : rows)
        a.push_back({{"run_id", r.run_id}, {"scenario", r.scenario}, {"seed", r.seed}, {"path", r.stat.path},
                     {"value", r.stat.value}, {"unit", r.stat.unit}, {"integral", r.stat.integral},
                     {"description", r.stat.description}});
    return a;
}

} // namespace kdsim::db
