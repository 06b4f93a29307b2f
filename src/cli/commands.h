// The subcommands of the kdsim binary.
#pragma once

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
};
void add_common_options(CLI::App& app, CommonOptions& o);

struct RunOptions {
    std::string scenario;
    CommonOptions common;
    std::string json;
    std::string csv;
    std::string trace;                     // Chrome Trace Event Format JSON (Perfetto)
    std::uint64_t trace_limit = 5'000'000; // records kept in the trace
    bool quiet = false;
    std::string db;                        // results database to store the run in
    std::string precision;                 // "1%": run until the rate metrics' intervals are this tight
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

struct CalibrateOptions {
    std::string out = "calibrated.toml";
    bool quick = false;
    std::string base = "x86/intel-icelake-server";
    std::string internal_measure; // child mode (hidden option)
};

int cmd_run(const RunOptions& o);
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
};
int cmd_validate(const ValidateOptions& o); // cli/validate.cpp

} // namespace kdsim::cli
