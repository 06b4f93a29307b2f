// Shared by the scenario layer's tests: a temporary directory and the source tree.
#pragma once

#include "scenario/load.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace kdsim::scenario::test_support {

namespace fs = std::filesystem;
using engine::PS_PER_MS;
using engine::PS_PER_S;
using engine::PS_PER_US;

inline const fs::path SOURCE_DIR = KDSIM_SOURCE_DIR;

// A fresh directory under the system temp dir, removed at the end of the test.
class TempDir {
public:
    TempDir() {
        const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
        path_ =
            fs::temp_directory_path() / (std::string("kdsim-scenario-") + info->test_suite_name() + "-" + info->name());
        fs::remove_all(path_);
        fs::create_directories(path_);
    }
    ~TempDir() { fs::remove_all(path_); }
    const fs::path& path() const { return path_; }
    fs::path write(const std::string& name, const std::string& text) const {
        fs::path p = path_ / name;
        fs::create_directories(p.parent_path());
        std::ofstream(p) << text;
        return p;
    }

private:
    fs::path path_;
};

inline std::string diagnostics_text(const InputError& e) { return e.what(); }

// The InputError that `load` throws; a test failure (and an empty error) if it throws none.
template <class Load> InputError input_error_of(Load&& load) {
    try {
        load();
    } catch (const InputError& e) {
        return e;
    }
    ADD_FAILURE() << "expected InputError";
    return InputError({});
}

// The text of a file of the source tree (`rel` below SOURCE_DIR).
inline std::string source_text(const fs::path& rel) {
    std::ifstream in(SOURCE_DIR / rel);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

// A scenario `name` of one one-CPU machine, "host" on `profile`, running one workload given by
// its TOML lines.
inline std::string one_workload_scenario(const std::string& name, const std::string& profile, const std::string& workload) {
    return "[scenario]\nname = \"" + name + "\"\n\n[[machine]]\nname = \"host\"\nprofile = \"" + profile +
           "\"\ncpus = 1\n\n[[machine.workload]]\n" + workload;
}

// A one-CPU scenario `name` on `profile` whose only workload is a module_load hashing with
// SHA-256, with `keys` (TOML lines) for its sizes and the rest.
inline std::string module_load_scenario(const std::string& name, const std::string& profile, const std::string& keys) {
    return one_workload_scenario(name, profile, "kind = \"module_load\"\nalg = \"sha256\"\n" + keys);
}

} // namespace kdsim::scenario::test_support
