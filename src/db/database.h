// The results database: every run kdsim stores (kdsim run/experiments/sweep --db FILE) with its
// scenario text and hash, seed, overrides, verdict and wall time, and every figure of its results
// (registered statistics, workload metrics, CPU figures) as rows (path, unit, value). SQLite, one
// file; the schema (docs/report-format.md) carries its version in PRAGMA user_version and is
// marked as kdsim's by PRAGMA application_id, so another program's database is refused.
// This layer sees only the plain results types.
#pragma once

#include "db/sqlite.h"
#include "results/results.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace kdsim::db {

// The schema this kdsim writes and reads; a file of a higher version is refused.
inline constexpr int SCHEMA_VERSION = 1;
// PRAGMA application_id of a kdsim database: "kdsb".
inline constexpr std::int32_t APPLICATION_ID = 0x6b647362;

// What the command that ran a scenario knows beside its results.
struct RunInfo {
    std::string command;                // "run", "experiments", "sweep"
    std::string experiment;             // the experiment id (kdsim experiments), else ""
    std::string scenario_text;          // the scenario file's bytes
    std::string kdsim_version;
    std::vector<std::string> overrides; // "key=value" settings the run was given (sweep points)
    double wall_s = 0;                  // wall-clock seconds the run took
};

struct Entry {
    const results::RunResults* results = nullptr;
    RunInfo info;
};

// A stored run, as listed.
struct StoredRun {
    std::int64_t id = 0;
    std::string recorded_utc; // ISO 8601, when it was stored
    std::string command, experiment, scenario, scenario_path, scenario_hash, kdsim_version, mode, verdict;
    std::uint64_t seed = 0;
    std::vector<std::string> overrides;
    std::vector<std::string> failures;
    double simulated_us = 0, wall_s = 0;
    std::uint64_t events = 0;
    std::uint64_t statistics = 0; // rows in the statistics table
};

// One stored figure of one run.
struct Row {
    std::int64_t run_id = 0;
    std::string scenario;
    std::uint64_t seed = 0;
    results::Statistic stat;
};

// Which runs and rows a query selects; empty members select everything.
struct Filter {
    std::string scenario;            // a scenario name, or a prefix (8+ hex digits) of its hash
    std::string experiment;
    std::optional<std::uint64_t> seed;
    std::vector<std::int64_t> runs;  // run ids
    std::string path_glob;           // SQLite GLOB over the path (rows only): "*/dma/*", "workload.iperf3.*"
};

// The figures of a run as they are stored, in order: every registered statistic; each workload
// metric as "workload.<name>.<key>"; each CPU's "<machine>/cpu<N>/busy_us", idle_us,
// longest_np_span_us and "cycles/<category>" summed over contexts (the paths results::resolve
// and the experiment manifests use); for a run stopped by --precision, "steady.<path>.mean" and
// "steady.<path>.half_width" of each estimated metric.
std::vector<results::Statistic> figures_of(const results::RunResults& r);

// SHA-256 of `text`, lower-case hex.
std::string sha256_hex(std::string_view text);

// Whether `path` can be used as a results database without creating or changing anything: ""
// when it is absent (to be created) or a kdsim database of this schema or an older one, else why
// not ("not an SQLite database", "an SQLite database of another program", "schema version 7,
// newer than this kdsim's 1").
std::string check_database(const std::string& path);

class Database {
public:
    // Opens the database at `path`, creating the file and the schema when it is absent or empty.
    // Throws DbError when check_database() would refuse it.
    explicit Database(const std::string& path);

    // Stores the runs, all of them or (on any error) none, in one transaction. Returns their ids.
    std::vector<std::int64_t> add(const std::vector<Entry>& entries);
    std::int64_t add(const results::RunResults& r, const RunInfo& info) { return add({Entry{&r, info}}).front(); }

    std::vector<StoredRun> runs(const Filter& f);
    // The stored figures of the selected runs, by run id then in stored order.
    std::vector<Row> rows(const Filter& f);

private:
    std::unique_ptr<Connection> c_;
};

} // namespace kdsim::db
