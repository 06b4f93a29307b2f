// A libFuzzer target for the scenario and profile loaders (issue 18): every input is written to
// a scenario file beside the repository's data/ and loaded as the CLI's `kdsim check` would
// (detect_kind, then load_profile or load_scenario, then System's constructor). A rejected input
// must end in InputError; any other exception, a crash or a sanitizer report is a finding.
// Built with -DKDSIM_FUZZ=ON by clang (tools/fuzz.sh).
#include "scenario/load.h"
#include "system/system.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <fstream>
#include <string>
#include <unistd.h>

namespace fs = std::filesystem;

namespace {

// A private folder holding `data` (a link to the repository's) and the input file.
const fs::path& work_dir() {
    static const fs::path dir = [] {
        fs::path d = fs::temp_directory_path() / ("kdsim-fuzz-" + std::to_string(::getpid()));
        fs::create_directories(d);
        std::error_code ec;
        fs::create_directory_symlink(fs::path(KDSIM_SOURCE_DIR) / "data", d / "data", ec);
        return d;
    }();
    return dir;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const fs::path file = work_dir() / "input.toml";
    {
        std::ofstream out(file, std::ios::binary | std::ios::trunc);
        out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
    }
    try {
        using namespace kdsim;
        if (scenario::detect_kind(file) == scenario::FileKind::PROFILE) {
            scenario::load_profile(file);
        } else {
            scenario::LoadOptions opt;
            opt.root = work_dir();
            system::ScenarioConfig cfg = scenario::load_scenario(file, opt);
            system::System sys(cfg);
        }
    } catch (const kdsim::scenario::InputError&) {
        // bad input, reported with its position: the expected outcome
    } catch (const std::exception& e) {
        std::fprintf(stderr, "internal error (not an InputError): %s\n", e.what());
        std::abort();
    }
    return 0;
}
