#include "engine/simulation.h"

namespace kdsim::engine {

std::uint64_t Simulation::run(Tick until) {
    std::uint64_t n = 0;
    stopped_ = false;
    while (!queue_.empty() && !stopped_) {
        if (queue_.top().time > until) {
            if (until > now_) now_ = until; // a horizon already passed must not rewind time
            break;
        }
        Event ev = queue_.take();
        now_ = ev.time;
        ev.target->on_event(ev.arg);
        queue_.finish_take();
        ++n;
        if ((n & (PROGRESS_PERIOD - 1)) == 0 && progress_) [[unlikely]]
            progress_(progress_ctx_, events_ + n);
    }
    events_ += n;
    return n;
}

} // namespace kdsim::engine
