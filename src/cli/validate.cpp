// `kdsim validate`: a real datapath on this machine against its simulated twin (src/validate,
// docs/validation.md).
#include "cli/commands.h"

#include "validate/validate.h"

#include <unistd.h>

#include <climits>
#include <cstdio>
#include <exception>

namespace kdsim::cli {

int cmd_validate(const ValidateOptions& o) {
    validate::Options v;
    v.quick = o.quick;
    v.max_error = o.max_error;
    v.profile = o.profile;
    v.out = o.out;
    v.scenarios = o.scenarios;
    v.only = o.only;
    v.calibrations = o.calibrations;
    auto exe = self_exe();
    if (!exe) {
        std::fprintf(stderr, "kdsim validate: cannot find its own executable (/proc/self/exe)\n");
        return EXIT_INTERNAL;
    }
    v.exe = *exe;
    try {
        return validate::run(v);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "kdsim validate: internal error: %s\n", e.what());
        return EXIT_INTERNAL;
    }
}

} // namespace kdsim::cli
