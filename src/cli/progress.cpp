#include "cli/progress.h"

#include <fmt/format.h>

#include <cmath>
#include <cstdio>
#include <unistd.h>

namespace kdsim::cli {

bool progress_wanted(bool quiet) { return !quiet && isatty(STDERR_FILENO) == 1; }

std::string format_wall(double s) {
    if (!(s >= 0) || s > 1e7) return "?";
    if (s < 60) return fmt::format("{:.1f} s", s);
    auto whole = static_cast<std::uint64_t>(s);
    if (whole < 3600) return fmt::format("{} min {} s", whole / 60, whole % 60);
    return fmt::format("{} h {} min", whole / 3600, whole % 3600 / 60);
}

void ProgressLine::show(const std::string& text, bool force) {
    if (!enabled_) return;
    std::lock_guard lock(mu_);
    auto now = std::chrono::steady_clock::now();
    if (!force && shown_ && now - last_ < std::chrono::milliseconds(250)) return;
    last_ = now;
    shown_ = true;
    std::fprintf(stderr, "\r%s\x1b[K", text.c_str()); // rewrite the line, erase what is left of the last
    std::fflush(stderr);
}

void ProgressLine::done() {
    if (!enabled_) return;
    std::lock_guard lock(mu_);
    if (!shown_) return;
    std::fputs("\r\x1b[K", stderr);
    std::fflush(stderr);
    shown_ = false;
}

double ProgressLine::elapsed() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
}

RunProgress::RunProgress(ProgressLine& line, engine::Simulation& sim, engine::Tick until, bool fixed)
    : line_(line), sim_(sim), until_(until), fixed_(fixed) {
    if (line_.enabled()) sim_.set_progress(&RunProgress::on_progress, this);
}

RunProgress::~RunProgress() {
    sim_.set_progress(nullptr, nullptr);
    line_.done();
}

void RunProgress::on_progress(void* self, std::uint64_t events) {
    auto& p = *static_cast<RunProgress*>(self);
    const double wall = p.line_.elapsed();
    const double sim_s = static_cast<double>(p.sim_.now()) / static_cast<double>(engine::PS_PER_S);
    const double until_s = static_cast<double>(p.until_) / static_cast<double>(engine::PS_PER_S);
    std::string text = fmt::format("kdsim: simulated {:.3f} s{}, {:.2f} M events/s", sim_s,
                                   p.fixed_ ? fmt::format(" of {:.3f} s", until_s) : std::string(),
                                   wall > 0 ? static_cast<double>(events) / wall / 1e6 : 0.0);
    if (sim_s > 0) {
        const double eta = wall * (until_s - sim_s) / sim_s;
        text += fmt::format(", ETA {}{}", p.fixed_ ? "" : "at most ", format_wall(eta));
    }
    p.line_.show(text);
}

} // namespace kdsim::cli
