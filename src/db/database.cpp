#include "db/database.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <openssl/evp.h>

#include <ctime>
#include <filesystem>
#include <map>

namespace kdsim::db {

namespace {

// Version 1 of the schema (docs/report-format.md, "Results database").
constexpr const char* SCHEMA_V1 = R"sql(
CREATE TABLE runs (
  id            INTEGER PRIMARY KEY,
  recorded_utc  TEXT    NOT NULL,
  command       TEXT    NOT NULL,
  experiment    TEXT    NOT NULL,
  scenario      TEXT    NOT NULL,
  scenario_path TEXT    NOT NULL,
  scenario_hash TEXT    NOT NULL,
  scenario_text TEXT    NOT NULL,
  kdsim_version TEXT    NOT NULL,
  seed          INTEGER NOT NULL,
  mode          TEXT    NOT NULL,
  overrides     TEXT    NOT NULL,
  verdict       TEXT    NOT NULL CHECK (verdict IN ('ok', 'failed')),
  failures      TEXT    NOT NULL,
  simulated_us  REAL    NOT NULL,
  events        INTEGER NOT NULL,
  wall_s        REAL    NOT NULL
);
CREATE INDEX runs_by_scenario ON runs (scenario);
CREATE INDEX runs_by_hash ON runs (scenario_hash);
CREATE INDEX runs_by_experiment ON runs (experiment);
CREATE TABLE statistics (
  run_id   INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
  seq      INTEGER NOT NULL,
  path     TEXT    NOT NULL,
  unit     TEXT    NOT NULL,
  value    REAL    NOT NULL,
  integral INTEGER NOT NULL,
  PRIMARY KEY (run_id, seq)
) WITHOUT ROWID;
CREATE INDEX statistics_by_path ON statistics (path, run_id);
CREATE TABLE descriptions (
  path        TEXT PRIMARY KEY,
  description TEXT NOT NULL
) WITHOUT ROWID;
)sql";

// Why the open database cannot be used ("" if it can); `fresh` tells whether it has no schema yet.
std::string classify(Connection& c, bool& fresh) {
    std::int64_t app = 0, version = 0, objects = 0;
    try {
        app = c.integer("PRAGMA application_id");
        version = c.integer("PRAGMA user_version");
        objects = c.integer("SELECT count(*) FROM sqlite_master");
    } catch (const DbError& e) {
        return std::string("not an SQLite database (") + e.what() + ")";
    }
    fresh = app == 0 && version == 0 && objects == 0;
    if (fresh) return "";
    if (app != APPLICATION_ID)
        return fmt::format("an SQLite database of another program (application_id {:#x}, {} schema objects), "
                           "not a kdsim results database",
                           static_cast<std::uint32_t>(app), objects);
    if (version > SCHEMA_VERSION)
        return fmt::format("schema version {}, newer than this kdsim's {}: written by a newer kdsim", version,
                           SCHEMA_VERSION);
    if (version < 1) return fmt::format("a kdsim database with no valid schema version ({})", version);
    return "";
}

std::string utc_now() {
    const std::time_t t = std::time(nullptr);
    std::tm tm{};
    gmtime_r(&t, &tm);
    char buf[32];
    std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
    return buf;
}

std::vector<std::string> string_list(const std::string& json_text) {
    std::vector<std::string> out;
    if (json_text.empty()) return out;
    for (const auto& v : nlohmann::json::parse(json_text)) out.push_back(v.get<std::string>());
    return out;
}

// The WHERE clause over `runs` (aliased r) selecting a filter's runs, with named parameters.
std::string runs_where(const Filter& f) {
    std::vector<std::string> c;
    if (!f.scenario.empty())
        c.push_back("(r.scenario = :scenario OR (length(:scenario) >= 8 AND r.scenario_hash GLOB :scenario || '*'))");
    if (!f.experiment.empty()) c.push_back("r.experiment = :experiment");
    if (f.seed) c.push_back("r.seed = :seed");
    if (!f.runs.empty()) {
        std::string in;
        for (std::int64_t id : f.runs) {
            if (!in.empty()) in += ',';
            in += std::to_string(id);
        }
        c.push_back("r.id IN (" + in + ")");
    }
    std::string w;
    for (std::size_t i = 0; i < c.size(); ++i) w += (i ? " AND " : " WHERE ") + c[i];
    return w;
}

// Runs `sql` with the filter's named parameters bound, and reads each row with `read`.
template <class T, class Read>
std::vector<T> select(Connection& c, const std::string& sql, const Filter& f, Read read) {
    Statement st(c, sql);
    if (int i = st.param(":scenario")) st.bind(i, f.scenario);
    if (int i = st.param(":experiment")) st.bind(i, f.experiment);
    if (int i = st.param(":seed")) st.bind(i, static_cast<std::int64_t>(*f.seed));
    if (int i = st.param(":glob")) st.bind(i, f.path_glob);
    std::vector<T> out;
    while (st.step()) out.push_back(read(st));
    return out;
}

} // namespace

std::vector<results::Statistic> figures_of(const results::RunResults& r) {
    std::vector<results::Statistic> out = r.statistics;
    for (const auto& w : r.workloads)
        for (const auto& m : w.metrics) out.push_back({"workload." + w.name + "." + m.key, m.unit, "", m.value, false});
    for (const auto& m : r.machines)
        for (const auto& c : m.cpus) {
            const std::string cpu = m.name + "/cpu" + std::to_string(c.id) + "/";
            out.push_back({cpu + "busy_us", "us", "time the CPU was not idle", c.busy_us, false});
            out.push_back({cpu + "idle_us", "us", "time the CPU was idle", c.idle_us, false});
            out.push_back({cpu + "longest_np_span_us", "us", "longest non-preemptible span", c.longest_np_span_us, false});
            std::map<std::string, std::uint64_t> by_category;
            for (const auto& [context, cats] : c.cycles)
                for (const auto& [category, n] : cats) by_category[category] += n;
            for (const auto& [category, n] : by_category)
                out.push_back({cpu + "cycles/" + category, "cycles", "cycles charged to the category, every context",
                               static_cast<double>(n), true});
        }
    for (const auto& e : r.steady_state) {
        out.push_back({"steady." + e.path + ".mean", e.unit, "steady-state mean of batch means (--precision)", e.mean, false});
        out.push_back({"steady." + e.path + ".half_width", e.unit, "half-width of its confidence interval", e.half_width, false});
    }
    return out;
}

std::string sha256_hex(std::string_view text) {
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int n = 0;
    if (EVP_Digest(text.data(), text.size(), md, &n, EVP_sha256(), nullptr) != 1) throw DbError("SHA-256 failed");
    std::string hex;
    for (unsigned int i = 0; i < n; ++i) hex += fmt::format("{:02x}", md[i]);
    return hex;
}

std::string check_database(const std::string& path) {
    std::error_code ec;
    if (!std::filesystem::exists(path, ec)) return "";
    try {
        Connection c(path, Connection::Open::READ_ONLY);
        bool fresh = false;
        return classify(c, fresh);
    } catch (const DbError& e) {
        return e.what();
    }
}

Database::Database(const std::string& path) {
    c_ = std::make_unique<Connection>(path, Connection::Open::CREATE);
    bool fresh = false;
    if (std::string why = classify(*c_, fresh); !why.empty()) throw DbError(why);
    c_->exec("PRAGMA foreign_keys = ON");
    if (fresh) {
        Transaction t(*c_);
        c_->exec(SCHEMA_V1);
        c_->exec(fmt::format("PRAGMA application_id = {}; PRAGMA user_version = {}", APPLICATION_ID, SCHEMA_VERSION));
        t.commit();
    }
}

std::vector<std::int64_t> Database::add(const std::vector<Entry>& entries) {
    Transaction t(*c_);
    Statement run(*c_, "INSERT INTO runs (recorded_utc, command, experiment, scenario, scenario_path, scenario_hash, "
                       "scenario_text, kdsim_version, seed, mode, overrides, verdict, failures, simulated_us, events, wall_s) "
                       "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16)");
    Statement stat(*c_, "INSERT INTO statistics (run_id, seq, path, unit, value, integral) VALUES (?1, ?2, ?3, ?4, ?5, ?6)");
    Statement desc(*c_, "INSERT OR IGNORE INTO descriptions (path, description) VALUES (?1, ?2)");
    const std::string now = utc_now();
    std::vector<std::int64_t> ids;
    for (const Entry& e : entries) {
        const results::RunResults& r = *e.results;
        const RunInfo& i = e.info;
        run.bind(1, now);
        run.bind(2, i.command);
        run.bind(3, i.experiment);
        run.bind(4, r.scenario);
        run.bind(5, r.scenario_path);
        run.bind(6, sha256_hex(i.scenario_text));
        run.bind(7, i.scenario_text);
        run.bind(8, i.kdsim_version);
        run.bind(9, static_cast<std::int64_t>(r.seed));
        run.bind(10, r.mode);
        run.bind(11, nlohmann::json(i.overrides).dump());
        run.bind(12, r.failed ? "failed" : "ok");
        run.bind(13, nlohmann::json(r.failures).dump());
        run.bind(14, r.simulated_us);
        run.bind(15, static_cast<std::int64_t>(r.events));
        run.bind(16, i.wall_s);
        run.run();
        const std::int64_t id = c_->last_insert_rowid();
        ids.push_back(id);
        std::int64_t seq = 0;
        for (const results::Statistic& s : figures_of(r)) {
            stat.bind(1, id);
            stat.bind(2, seq++);
            stat.bind(3, s.path);
            stat.bind(4, s.unit);
            stat.bind(5, s.value);
            stat.bind(6, std::int64_t{s.integral});
            stat.run();
            if (!s.description.empty()) {
                desc.bind(1, s.path);
                desc.bind(2, s.description);
                desc.run();
            }
        }
    }
    t.commit();
    return ids;
}

std::vector<StoredRun> Database::runs(const Filter& f) {
    return select<StoredRun>(
        *c_,
        "SELECT r.id, r.recorded_utc, r.command, r.experiment, r.scenario, r.scenario_path, r.scenario_hash, "
        "r.kdsim_version, r.mode, r.verdict, r.seed, r.overrides, r.failures, r.simulated_us, r.wall_s, r.events, "
        "(SELECT count(*) FROM statistics s WHERE s.run_id = r.id) FROM runs r" + runs_where(f) + " ORDER BY r.id",
        f, [](const Statement& st) {
            return StoredRun{st.integer(0), st.text(1), st.text(2), st.text(3), st.text(4), st.text(5), st.text(6),
                             st.text(7), st.text(8), st.text(9), static_cast<std::uint64_t>(st.integer(10)),
                             string_list(st.text(11)), string_list(st.text(12)), st.real(13), st.real(14),
                             static_cast<std::uint64_t>(st.integer(15)), static_cast<std::uint64_t>(st.integer(16))};
        });
}

std::vector<Row> Database::rows(const Filter& f) {
    std::string where = runs_where(f);
    if (!f.path_glob.empty()) where += (where.empty() ? " WHERE " : " AND ") + std::string("s.path GLOB :glob");
    return select<Row>(
        *c_,
        "SELECT r.id, r.scenario, r.seed, s.path, s.unit, s.value, s.integral, coalesce(d.description, '') "
        "FROM statistics s JOIN runs r ON r.id = s.run_id LEFT JOIN descriptions d ON d.path = s.path" + where +
            " ORDER BY s.run_id, s.seq",
        f, [](const Statement& st) {
            return Row{st.integer(0), st.text(1), static_cast<std::uint64_t>(st.integer(2)),
                       results::Statistic{st.text(3), st.text(4), st.text(7), st.real(5), st.integer(6) != 0}};
        });
}

} // namespace kdsim::db
