// The subcommands of the kdsim binary.
#pragma once

#include "scenario/load.h"
#include "system/config.h"

#include <CLI/CLI.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace kdsim::cli {

// This binary's path (/proc/self/exe), for the child processes calibrate and validate start;
// nullopt when the kernel does not say.
std::optional<std::string> self_exe();

inline constexpr int EXIT_OK = 0;
inline constexpr int EXIT_FINDINGS = 1;
inline constexpr int EXIT_BAD_INPUT = 2;
inline constexpr int EXIT_INTERNAL = 3;

struct CommonOptions {
    std::optional<std::uint64_t> seed;
    std::string mode; // "", "timing", "functional"
    std::string root;
    std::vector<std::string> set; // KEY=VALUE: one value of a scenario key or profile figure (run, compare)
};
void add_common_options(CLI::App& app, CommonOptions& o);
// --set KEY=VALUE for the commands that run one scenario per argument (run, compare).
void add_set_option(CLI::App& app, CommonOptions& o);
// Accepts a seed as the scenario file does: decimal digits, 0 to 2^63-1.
CLI::Validator seed_validator();

struct RunOptions {
    std::string scenario;
    CommonOptions common;
    std::string json;
    std::string csv;
    std::string trace;                     // Chrome Trace Event Format JSON (Perfetto), or ftrace text
    std::uint64_t trace_limit = 5'000'000; // records kept in the trace
    std::string trace_from, trace_until;   // the trace's window of simulated time ("" = the run's edge)
    std::string trace_cpus, trace_categories; // what the trace follows ("" = everything)
    std::string trace_format = "auto";     // json, ftrace, or auto (ftrace for *.txt and *.txt.gz)
    bool quiet = false;
    std::string db;                        // results database to store the run in
    std::string precision;                 // "1%": run until the rate metrics' intervals are this tight
    std::string pcap;                      // folder for one pcap file per network device (functional mode)
};
struct CompareOptions {
    std::string a, b;
    CommonOptions common;
    std::string json;
};
struct CheckOptions {
    std::vector<std::string> files;
    std::string root;
};
struct ExperimentsOptions {
    std::string dir = "scenarios";
    std::vector<std::string> only;
    std::string out;
    bool brief = false;
    CommonOptions common;
    std::string db;
};

// kdsim report (cli/report.cpp): saved results in, one HTML file out.
struct ReportOptions {
    std::vector<std::string> inputs;
    std::string out;
};
CLI::App* add_report_command(CLI::App& app, ReportOptions& o);
int cmd_report(const ReportOptions& o);

struct CalibrateOptions {
    std::string out = "calibrated.toml";
    bool quick = false;
    std::string base = "x86/intel-icelake-server";
    std::string internal_measure; // child mode (hidden option)
    bool round_profiles = false;  // also <stem>.round<k>.toml per [memory] round
};

// What kdsim sweep varies and how it runs (cli/sweep.cpp; the definition: scenario/sweep.h).
struct SweepOptions {
    std::string scenario;
    CommonOptions common;
    std::vector<std::string> set;    // KEY=V1,V2,... (replaces the scenario's [sweep] table)
    std::string seeds;               // "1..5", "1,2,7": replications of every combination
    bool list = false;               // the i-th values together instead of every combination
    unsigned jobs = 0;               // points run at once on this machine (0: one per core; 1 per MPI rank)
    std::string out;                 // folder for each point's JSON and sweep.json
    std::vector<std::string> metrics; // summary columns WORKLOAD.METRIC (default: each workload's first)
    std::string db;                  // store every point that ran in this results database
    bool quiet = false;
};

// The scenario layer's options for a command's --seed, --mode and --root.
scenario::LoadOptions load_options(const CommonOptions& c);
// Prints every diagnostic and the "nothing was run or written" line.
void print_input_error(const scenario::InputError& e);

int cmd_run(const RunOptions& o);
int cmd_sweep(const SweepOptions& o); // cli/sweep.cpp
int cmd_compare(const CompareOptions& o);
int cmd_check(const CheckOptions& o);
int cmd_experiments(const ExperimentsOptions& o);
int cmd_calibrate(const CalibrateOptions& o); // cli/calibrate.cpp

struct ValidateOptions {
    bool quick = false;
    std::optional<double> max_error;
    std::string profile;
    std::string out;
    std::string scenarios;
    std::vector<std::string> only;
    int calibrations = 1;
};
int cmd_validate(const ValidateOptions& o); // cli/validate.cpp

} // namespace kdsim::cli
