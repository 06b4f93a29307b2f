// The discrete-event engine: simulated time, the pending-event set and the run loop, plus the
// run's seed from which every consumer derives its own random stream. It knows nothing of
// kernels, CPUs or packets; models schedule events on EventTargets they own.
#pragma once

#include "engine/event_queue.h"
#include "engine/rng.h"
#include "engine/time.h"

#include <cstdint>
#include <string_view>

namespace kdsim::engine {

class Simulation {
public:
    explicit Simulation(std::uint64_t seed = 1) : seed_(seed) { queue_.reserve(1024); }
    Simulation(const Simulation&) = delete;
    Simulation& operator=(const Simulation&) = delete;

    Tick now() const { return now_; }
    std::uint64_t seed() const { return seed_; }

    // Schedules `target->on_event(arg)` at absolute time `t`. Precondition: t >= now().
    void schedule_at(Tick t, EventTarget* target, std::uint64_t arg = 0) {
        push(t < now_ ? now_ : t, target, arg);
    }
    void schedule_in(Tick delay, EventTarget* target, std::uint64_t arg = 0) {
        push(sat_add(now_, delay), target, arg);
    }
    // An event that is to sort among the events at its time as if scheduled now, but is pushed
    // later (a FIFO of events that keeps only its head pending): reserve_seq() now, then
    // schedule_at_seq(t, ..., that number) once, from the handler of an event that sorts before
    // it (or outside run()), so that it is pending before anything that sorts after it is taken.
    std::uint64_t reserve_seq() { return queue_.reserve_seq(); }
    void schedule_at_seq(Tick t, EventTarget* target, std::uint64_t arg, std::uint64_t seq) {
        if (t < now_) t = now_;
        if (t < limit_) limit_ = t;
        queue_.push_seq(t, target, arg, seq);
    }

    // Handling in place. A handler that is about to schedule its own next event at `t` may
    // ask instead to handle that event at once, in place of being called back. The engine
    // agrees when it would take that event next anyway: every other pending event is later than
    // `t` (an event pushed now sorts after every pending one at the same time), and run() would
    // not end first (its horizon, stop()). Then now() == t, the event counts as processed, and
    // the caller goes on to handle it; else nothing changed and the caller schedules it. So the
    // order of handling, and every result, is the one the queue would give; only the push and
    // take are saved. set_inline_events(false), before run(), turns it off (never agrees).
    bool run_inline(Tick t) {
        if (t >= limit_) return false;
        now_ = t;
        ++events_;
        return true;
    }
    // schedule_at(t, ...) for the event whose run_inline(t) has just answered false: t >= limit_,
    // and so is max(t, now()), so the push lowers no bound.
    void schedule_refused(Tick t, EventTarget* target, std::uint64_t arg) {
        queue_.push(t < now_ ? now_ : t, target, arg);
    }
    void set_inline_events(bool on) { inline_events_ = on; }
    bool inline_events() const { return inline_events_; }

    // A random stream of its own for the consumer named `stream`.
    Rng rng(std::string_view stream) const { return Rng(seed_, stream); }

    // Processes events in (time, sequence) order until none is left, stop() is called, or the
    // next event lies after `until` (then now() == until). Returns the events processed.
    std::uint64_t run(Tick until = TICK_MAX);

    // Ends run() after the event being handled.
    void stop() {
        stopped_ = true;
        limit_ = 0; // no event is handled in place after this one
    }
    bool stopped() const { return stopped_; }

    // Calls `fn(ctx, events)` during run() each time the events processed so far (this run()
    // included, events handled in place too) pass a multiple of PROGRESS_PERIOD, for a progress
    // display; nullptr: never. The hook must not schedule events or touch the model.
    static constexpr std::uint64_t PROGRESS_PERIOD = 1u << 16;
    using ProgressFn = void (*)(void* ctx, std::uint64_t events);
    void set_progress(ProgressFn fn, void* ctx) {
        progress_ = fn;
        progress_ctx_ = ctx;
    }

    std::uint64_t events_processed() const { return events_; }
    std::size_t pending() const { return queue_.size(); }

private:
    void push(Tick t, EventTarget* target, std::uint64_t arg) {
        if (t < limit_) limit_ = t;
        queue_.push(t, target, arg);
    }

    EventQueue queue_;
    // While an event is handled: run_inline(t) agrees iff t < limit_. The run loop sets it when it
    // takes the event (every condition of run_inline in one bound: the next pending event's time
    // or a lower bound on it, and run()'s horizon + 1), and each push since lowers it; 0 outside
    // run(), after stop() and without inline events (then a push leaves it alone).
    Tick limit_ = 0;
    Tick now_ = 0;
    std::uint64_t seed_;
    std::uint64_t events_ = 0;
    std::uint64_t next_progress_ = PROGRESS_PERIOD;
    bool stopped_ = false;
    bool inline_events_ = true;
    ProgressFn progress_ = nullptr;
    void* progress_ctx_ = nullptr;
};

} // namespace kdsim::engine
