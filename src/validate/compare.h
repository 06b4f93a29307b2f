// The comparison of kdsim validate: one row per (configuration, metric) with the measured median
// and its spread over repeats, the simulated twin's prediction and its range over the profiles of
// the calibration's [memory] rounds (or of several calibrations), the error against the range's
// centre, and the goal tolerance where it names one (throughput ±10 %, probe p99 ±20 %):
// met when the error is within it and the range is no wider than it. Pure functions: tested on
// hand-made numbers.
#pragma once

#include <nlohmann/json.hpp>

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

namespace kdsim::validate {

struct Row {
    std::string config;
    std::string metric; // e.g. "throughput"
    std::string unit;   // e.g. "packets/s"
    std::optional<double> measured;
    double spread = 0;  // (q3 - q1) / median over the repeats (0 for one repeat)
    int repeats = 0;
    std::optional<double> predicted;         // the centre of the prediction range (set_predictions)
    std::optional<double> predicted_low;     // the prediction range: the lowest and highest of the
    std::optional<double> predicted_high;    // profile's and the rounds' (calibrations') predictions
    std::optional<double> predicted_profile; // with the profile's own figures (the rounds' medians)
    std::vector<double> predictions;         // per round (calibration), in order
    std::optional<double> goal_pct; // the tolerance the issue sets for this metric, if any
    std::string note;               // why there is no prediction ("no simulated twin: ...")
};

// (predicted - measured) / measured * 100. A zero measurement gives 0 when the prediction is zero
// too, else +-infinity.
double error_pct(double measured, double predicted);
// Fills the row's predictions: `profile` (the one profile's prediction; nullopt: none) and the
// rounds' (calibrations') `others`; the range runs from the lowest to the highest of all of them,
// `predicted` is its centre. Nothing at all: no prediction.
void set_predictions(Row& r, std::optional<double> profile, const std::vector<double>& others);
// The row's error against the range's centre, when it has both numbers.
std::optional<double> row_error(const Row& r);
// The prediction range's width as a percentage of its centre: (high - low) / |centre| x 100; 0
// without a range; infinite for a range around a centre of 0.
std::optional<double> range_pct(const Row& r);
// Compared and within its goal tolerance: |error| within the goal and the range no wider than
// the goal (nullopt: no goal or not compared).
std::optional<bool> within_goal(const Row& r);
// Compared, its centre within the goal, but its range wider than the goal.
bool too_wide(const Row& r);

struct Verdict {
    std::size_t compared = 0;      // rows with a measurement and a prediction
    std::size_t with_goal = 0;     // of those, rows the issue sets a goal for
    std::size_t goal_met = 0;
    std::size_t too_wide = 0;      // of those with a goal, centre within it but range wider
    std::vector<std::string> over; // "config metric: error" of the rows above --max-error
    bool exceeded() const { return !over.empty(); }
};
// Counts the rows and, when `max_error` is given, lists every compared row whose |error| is above it.
Verdict evaluate(const std::vector<Row>& rows, std::optional<double> max_error);

// The side-by-side table: configuration, metric, measured (spread), predicted (the range's
// centre), range (low..high, width %), error %, goal (ok, MISS, WIDE: centre within, range wider).
std::string format_table(const std::vector<Row>& rows);
// A number in the table's style: 4 significant digits, thousands as plain digits.
std::string format_value(double v);

// Rows as JSON (error and goal verdict included; non-finite numbers as null).
nlohmann::json rows_json(const std::vector<Row>& rows);

// The order of the real runs: (configuration index, repeat) pairs, the first repeat of every
// configuration, then the second of each that has one, and so on; repeats[i] is configuration
// i's number of repeats.
std::vector<std::pair<std::size_t, int>> round_robin(const std::vector<int>& repeats);

} // namespace kdsim::validate
