#include "engine/simulation.h"

namespace kdsim::engine {

std::uint64_t Simulation::run(Tick until) {
    const std::uint64_t start = events_;
    stopped_ = false;
    until_ = until;
    inline_ok_ = inline_events_;
    while (!stopped_) {
        const Event* next = queue_.peek();
        if (!next) break;
        if (next->time > until) {
            if (until > now_) now_ = until; // a horizon already passed must not rewind time
            break;
        }
        Event ev = queue_.take_peeked();
        now_ = ev.time;
        limit_ = 0;
        limit_known_ = false;
        ev.target->on_event(ev.arg);
        queue_.finish_take();
        if (++events_ >= next_progress_) [[unlikely]] {
            next_progress_ = (events_ | (PROGRESS_PERIOD - 1)) + 1;
            if (progress_) progress_(progress_ctx_, events_);
        }
    }
    inline_ok_ = false;
    limit_ = 0;
    limit_known_ = true;
    return events_ - start;
}

} // namespace kdsim::engine
