// `kdsim db FILE`: lists the runs stored in a results database, or (with --path, or any filter
// and --figures) their figures; as a table, CSV or JSON, on stdout or atomically into --out.
// Also the --db support of the commands that run scenarios (cli/db_store.h).
#include "cli/commands.h"
#include "cli/db_store.h"

#include "db/export.h"
#include "report/output_file.h"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace kdsim::cli {

namespace fs = std::filesystem;

std::string database_refusal(const std::string& path) {
    std::error_code ec;
    if (!fs::exists(path, ec)) return report::check_writable(path);
    if (!fs::is_regular_file(path, ec)) return "not a regular file";
    return db::check_database(path);
}

db::RunInfo run_info(const std::string& command, const std::string& scenario_file, double wall_s, std::string experiment,
                     std::vector<std::string> overrides) {
    db::RunInfo i;
    i.command = command;
    i.experiment = std::move(experiment);
    std::ifstream in(scenario_file, std::ios::binary);
    std::ostringstream text;
    text << in.rdbuf();
    i.scenario_text = text.str();
    i.kdsim_version = KDSIM_VERSION_TEXT;
    i.overrides = std::move(overrides);
    i.wall_s = wall_s;
    return i;
}

bool store_runs(const std::string& path, const std::vector<db::Entry>& entries) {
    try {
        db::Database d(path);
        d.add(entries);
    } catch (const db::DbError& e) {
        std::fprintf(stderr, "kdsim: --db %s: %s; no run was stored\n", path.c_str(), e.what());
        return false;
    }
    return true;
}

CLI::App* add_db_command(CLI::App& app, DbOptions& o) {
    auto* c = app.add_subcommand("db", "List, query and export a results database (runs stored with --db)");
    c->add_option("file", o.file, "Results database (SQLite)")->required();
    db::Filter& f = o.filter;
    c->add_option("--scenario", f.scenario, "Only runs of this scenario name, or scenario hash prefix (8+ hex digits)");
    c->add_option("--experiment", f.experiment, "Only runs of this experiment id (e.g. E5)");
    c->add_option("--seed", f.seed, "Only runs with this seed")->check(seed_validator());
    c->add_option("--run", f.runs, "Only these run ids");
    c->add_option("--path", f.path_glob, "List the figures whose path matches this glob (e.g. '*/dma/*', 'workload.iperf3.*')");
    c->add_flag("--figures", o.figures, "List the selected runs' figures instead of the runs");
    c->add_option("--format", o.format, "table, csv or json")->check(CLI::IsMember({"table", "csv", "json"}))->capture_default_str();
    c->add_option("--out", o.out, "Write to this file (atomically) instead of stdout");
    return c;
}

int cmd_db(const DbOptions& o) {
    std::error_code ec;
    if (!fs::exists(o.file, ec)) {
        std::fprintf(stderr, "kdsim: %s: no such results database\n", o.file.c_str());
        return EXIT_BAD_INPUT;
    }
    if (std::string why = database_refusal(o.file); !why.empty()) {
        std::fprintf(stderr, "kdsim: %s: %s\n", o.file.c_str(), why.c_str());
        return EXIT_BAD_INPUT;
    }
    if (!o.out.empty())
        if (std::string why = report::check_writable(o.out); !why.empty()) {
            std::fprintf(stderr, "kdsim: --out %s: %s\nkdsim: nothing was written\n", o.out.c_str(), why.c_str());
            return EXIT_BAD_INPUT;
        }
    const db::Filter& f = o.filter;
    std::string text;
    try {
        db::Database d(o.file);
        if (o.figures || !f.path_glob.empty()) {
            const std::vector<db::Row> rows = d.rows(f);
            text = o.format == "csv" ? db::rows_csv(rows) : o.format == "json" ? db::rows_json(rows).dump(2) + "\n" : db::rows_table(rows);
        } else {
            const std::vector<db::StoredRun> runs = d.runs(f);
            text = o.format == "csv" ? db::runs_csv(runs) : o.format == "json" ? db::runs_json(runs).dump(2) + "\n" : db::runs_table(runs);
        }
    } catch (const db::DbError& e) {
        std::fprintf(stderr, "kdsim: %s: %s\n", o.file.c_str(), e.what());
        return EXIT_BAD_INPUT;
    }
    if (o.out.empty()) {
        std::fputs(text.c_str(), stdout);
        return EXIT_OK;
    }
    try {
        report::write_file_atomically(o.out, text);
    } catch (const std::runtime_error& e) {
        std::fprintf(stderr, "kdsim: %s\n", e.what());
        return EXIT_BAD_INPUT;
    }
    return EXIT_OK;
}

} // namespace kdsim::cli
