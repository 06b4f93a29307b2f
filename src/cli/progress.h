// A live progress line on stderr for long work (a run, a sweep): only when stderr is a terminal
// and --quiet was not given; nothing at all otherwise, so files and pipes never see it.
#pragma once

#include "engine/simulation.h"
#include "engine/time.h"

#include <chrono>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>

namespace kdsim::cli {

// True when a progress line should be shown: stderr is a terminal and not `quiet`.
bool progress_wanted(bool quiet);

// "1.2 s", "3 min 20 s", "2 h 5 min".
std::string format_wall(double seconds);

// The status line, rewritten in place at most every 0.25 s wall; erased by done().
class ProgressLine {
public:
    explicit ProgressLine(bool enabled) : enabled_(enabled) {}
    ~ProgressLine() { done(); }
    ProgressLine(const ProgressLine&) = delete;
    ProgressLine& operator=(const ProgressLine&) = delete;

    bool enabled() const { return enabled_; }
    // Shows `text` unless the last line is younger than the period (or `force`). Thread-safe.
    void show(const std::string& text, bool force = false);
    // Erases the line.
    void done();
    // Wall seconds since construction.
    double elapsed() const;

private:
    bool enabled_;
    bool shown_ = false;
    std::mutex mu_;
    std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
    std::chrono::steady_clock::time_point last_{};
};

// Progress of one run: simulated time (of the horizon, when the run has a fixed duration),
// events/s and the ETA, through the engine's progress hook.
class RunProgress {
public:
    // `until`: where the run ends at the latest; `fixed`: it runs exactly that long.
    RunProgress(ProgressLine& line, engine::Simulation& sim, engine::Tick until, bool fixed);
    ~RunProgress();

private:
    static void on_progress(void* self, std::uint64_t events);
    ProgressLine& line_;
    engine::Simulation& sim_;
    engine::Tick until_;
    bool fixed_;
};

} // namespace kdsim::cli
