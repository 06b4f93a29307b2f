// The report layer: turns the plain `results::RunResults` of a run into what SPEC section 3
// asks for: a terminal summary, JSON and CSV files, and a before/after comparison with an
// attribution of the cycle changes to cost categories.
//
// This layer sees only `src/results/results.h`, never the engine or the model, so a saved JSON
// file can be read back (`from_json`) and compared without re-running anything.
//
// Determinism: every function here is a pure function of its input. JSON keys are sorted,
// floating-point values are rounded to 12 significant digits before they are written, and no
// locale is consulted, so the same results give byte-identical text on every machine.
// The formats are described in docs/report-format.md.
#pragma once

#include "report/output_file.h"
#include "results/results.h"

#include <nlohmann/json.hpp>

#include <string>
#include <string_view>

namespace kdsim::report {

// Version of the JSON layout written by to_json(); from_json() refuses any other.
inline constexpr int RESULTS_FORMAT_VERSION = 3;

// The terminal summary of SPEC section 3 for one run: plain UTF-8 text, aligned columns, no box
// drawing, at most 100 columns for names of ordinary length. Ends with one verdict line,
// "RESULT: OK" or "RESULT: FAILED (<reasons>)".
std::string summary_table(const results::RunResults&);

// Every field of the results as JSON, plus a recomputed "derived" block per CPU. Keys are
// sorted; units are in the key names (`_us`, `_cycles`, `_bytes`, `_hz`) or in a metric's
// "unit" field; counts carry no suffix.
nlohmann::json to_json(const results::RunResults&);

// Inverse of to_json(), for comparing saved files. Ignores unknown keys and the "derived"
// blocks. Throws std::runtime_error naming the JSON path of the first missing or mistyped value.
results::RunResults from_json(const nlohmann::json&);

// to_json(r).dump(2) followed by a newline.
std::string to_json_text(const results::RunResults&);

// Side-by-side comparison of run A (before) and run B (after): every numeric metric present in
// both (columns A, B, B/A), the metrics present in only one of them, and per machine an
// attribution block naming the cycle categories whose totals changed most.
std::string compare_table(const results::RunResults& a, const results::RunResults& b);
nlohmann::json compare_json(const results::RunResults& a, const results::RunResults& b);

// One row per numeric metric: section,machine,cpu,workload,key,value,unit (with a header line).
std::string to_csv(const results::RunResults&);

} // namespace kdsim::report
