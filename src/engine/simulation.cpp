#include "engine/simulation.h"

namespace kdsim::engine {

std::uint64_t Simulation::run(Tick until) {
    const std::uint64_t start = events_;
    stopped_ = false;
    // run_inline's bound at each take: the next event's time (or a lower bound on it) and the
    // horizon + 1, as min(next, cap) (until < next exactly when until + 1 <= next).
    const Tick cap = until < TICK_MAX ? until + 1 : TICK_MAX;
    // One loop for each setting of inline events, fixed for the run: no test of it per take.
    auto loop = [this, until, cap]<bool INLINE>() {
        while (!stopped_) {
            const Event* next = queue_.peek();
            if (!next) break;
            if (next->time > until) {
                if (until > now_) now_ = until; // a horizon already passed must not rewind time
                break;
            }
            Event ev = queue_.take_peeked();
            now_ = ev.time;
            // Worked out at the take, not at the handler's first run_inline (most handlers ask): each
            // push before that call lowers it, so it is as exact a lower bound as one worked out then.
            if constexpr (INLINE) {
                const Tick bound = queue_.next_time_bound(); // finds the heap root's least child for the first push
                limit_ = bound < cap ? bound : cap;
            } else {
                limit_ = 0;
            }
            ev.target->on_event(ev.arg);
            queue_.finish_take();
            if (++events_ >= next_progress_) [[unlikely]] {
                next_progress_ = (events_ | (PROGRESS_PERIOD - 1)) + 1;
                if (progress_) progress_(progress_ctx_, events_);
            }
        }
    };
    if (inline_events_) loop.template operator()<true>();
    else loop.template operator()<false>();
    limit_ = 0;
    return events_ - start;
}

} // namespace kdsim::engine
