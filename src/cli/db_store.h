// --db FILE on the commands that run scenarios (run, experiments, sweep): the file is checked
// before anything runs, and every run of the command is stored in one transaction at its end.
#pragma once

#include "db/database.h"

#include <CLI/CLI.hpp>

#include <string>
#include <vector>

namespace kdsim::cli {

// "kdsim <version>" as --version prints it; the version stored with each run.
inline constexpr const char* KDSIM_VERSION_TEXT = "0.1";

// Why `--db path` cannot be used ("" if it can): a file that is not a kdsim results database,
// of a newer schema, or a path where no file can be created. Creates and changes nothing.
std::string database_refusal(const std::string& path);

// What a command records beside a run's results: the scenario file's text (read now), the
// command, the experiment id, the overrides and the wall time.
db::RunInfo run_info(const std::string& command, const std::string& scenario_file, double wall_s,
                     std::string experiment = "", std::vector<std::string> overrides = {});

// Stores every entry in `path`, all or none. False after printing "kdsim: --db <path>: why".
bool store_runs(const std::string& path, const std::vector<db::Entry>& entries);

struct DbOptions {
    std::string file;
    db::Filter filter;
    bool figures = false;
    std::string format = "table"; // table, csv, json
    std::string out;
};
// Registers `kdsim db` and its options on `app`.
CLI::App* add_db_command(CLI::App& app, DbOptions& o);
int cmd_db(const DbOptions& o);

} // namespace kdsim::cli
