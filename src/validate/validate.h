// kdsim validate: runs real user-space datapath configurations on this machine, simulates the same
// configurations (scenarios/validate/) with the calibrated profile, and prints them side by side
// (docs/validation.md).
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace kdsim::validate {

struct Options {
    bool quick = false;                 // one tiny configuration per kind, one repeat
    std::optional<double> max_error;    // exit 1 when a compared |error %| is above it
    std::string profile;                // a profile file: skip the calibration
    std::string out;                    // JSON file, written atomically
    std::string scenarios;              // folder of the twins (default: scenarios/validate of the repository)
    std::vector<std::string> only;      // run only these configurations
    std::string exe;                    // this binary, for `kdsim calibrate` as a child process
    // 1: one calibration, each prediction's range over its [memory] rounds' profiles; N > 1: N
    // calibrations, the range over their N profiles. Not with `profile`.
    int calibrations = 1;
};

// Exit status: 0 done (and within --max-error), 1 an error above --max-error or a violated
// invariant of a real run (an authentication failure, packets not conserved, a digest mismatch),
// 2 bad input (nothing measured or written), 3 internal error (the calibration or a real run could
// not be done; the table of the rest is still printed).
int run(const Options& o);

} // namespace kdsim::validate
