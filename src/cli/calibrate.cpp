// `kdsim calibrate`: measure this machine into a profile (src/calibrate, docs/calibration.md).
#include "cli/commands.h"

#include "calibrate/calibrate.h"

#include <unistd.h>

#include <climits>
#include <cstdio>
#include <exception>

namespace kdsim::cli {

int cmd_calibrate(const CalibrateOptions& o) {
#if !defined(__x86_64__) || !defined(__linux__)
    std::fprintf(stderr, "kdsim calibrate: only x86-64 Linux is supported\n");
    return EXIT_BAD_INPUT;
#else
    // Child mode: one hash implementation, run with OPENSSL_ia32cap already in the environment.
    if (!o.internal_measure.empty()) return calibrate::internal_measure(o.internal_measure);
    calibrate::Options c;
    c.out = o.out;
    c.quick = o.quick;
    c.base = o.base;
    c.round_profiles = o.round_profiles;
    auto exe = self_exe();
    if (!exe) {
        std::fprintf(stderr, "kdsim calibrate: cannot find its own executable (/proc/self/exe)\n");
        return EXIT_INTERNAL;
    }
    c.exe = *exe;
    try {
        return calibrate::run(c);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "kdsim calibrate: internal error: %s; nothing was written\n", e.what());
        return EXIT_INTERNAL;
    }
#endif
}

} // namespace kdsim::cli
