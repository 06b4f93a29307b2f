// A reference experiment's manifest (scenarios/<eN>/experiment.toml): the question it
// answers, its scenarios in order, the columns of its result table, the before/after pairs to
// compare, and what every run must show (no findings, or a clobber finding for the unsafe set).
#pragma once

#include "scenario/load.h"

#include <filesystem>
#include <string>
#include <vector>

namespace kdsim::scenario {

struct ExperimentColumn {
    std::string label;
    std::string metric; // a results path, e.g. "cpu0.simd.brackets" or "workload.cyclictest.latency_max_us"
};

struct ExperimentPair {
    std::string before; // scenario file names, relative to the manifest's folder
    std::string after;
};

struct Experiment {
    std::string id;
    std::string title;
    std::string question;
    // "ok": no run may fail; "clobber": every run must fail with a clobber report; "stale": every
    // run must fail with a stale DMA read.
    std::string expect = "ok";
    std::filesystem::path dir;
    std::vector<std::filesystem::path> scenarios;
    std::vector<ExperimentColumn> columns;
    std::vector<ExperimentPair> compares;
};

// Throws InputError naming file, line and key for anything malformed, including scenario
// files that do not exist.
Experiment load_experiment(const std::filesystem::path& manifest);

} // namespace kdsim::scenario
