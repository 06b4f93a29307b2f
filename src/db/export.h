// The stored runs and figures of a query as a terminal table, CSV or JSON (kdsim db).
#pragma once

#include "db/database.h"

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace kdsim::db {

// One line per run: id, scenario, seed, verdict, simulated and wall time, figures, command.
std::string runs_table(const std::vector<StoredRun>& runs);
// Header: id,recorded_utc,command,experiment,scenario,scenario_path,scenario_hash,kdsim_version,
// seed,mode,overrides,verdict,simulated_us,events,wall_s,statistics (overrides ';'-separated).
std::string runs_csv(const std::vector<StoredRun>& runs);
nlohmann::json runs_json(const std::vector<StoredRun>& runs);

// One line per figure: run, scenario, seed, path, value, unit.
std::string rows_table(const std::vector<Row>& rows);
// Header: run_id,scenario,seed,path,value,unit,integral.
std::string rows_csv(const std::vector<Row>& rows);
nlohmann::json rows_json(const std::vector<Row>& rows);

} // namespace kdsim::db
