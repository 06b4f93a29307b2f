// The classic "hold" model of event-set benchmarks: N events are pending; handling one
// schedules exactly one more at now + a random delay, so the pending count stays N. Delays are
// uniform in [1 us, 20 us) and drawn from a single engine::Rng in every variant, so the
// variants do the same work in the same order and differ only in the machinery around it:
//
//   CallbackHold   - the engine: Simulation::run, an EventTarget whose on_event reschedules
//                    itself (arg carries the entity id).
//   CoroutineHold  - the engine driving N root Task<> coroutines, each looping
//                    `co_await sleep(delay)`; an event's arg carries the handle to resume.
//   QueueHold      - engine::EventQueue alone, without the Simulation run loop.
//   HeapQueueHold  - engine::HeapEventQueue alone: the single 8-ary heap the engine used before
//                    its two-tier EventQueue, kept as the control.
//   FloorHold      - no engine at all: std::priority_queue of 24-byte PODs.
//
// Each model's run(k) processes exactly k events (k > 0) and can be called repeatedly.
#pragma once

#include "engine/event_queue.h"
#include "engine/rng.h"
#include "engine/simulation.h"
#include "engine/task.h"
#include "engine/time.h"

#include <coroutine>
#include <cstddef>
#include <cstdint>
#include <queue>
#include <vector>

namespace kdsim::bench {

using engine::PS_PER_US;
using engine::Rng;
using engine::Tick;

inline constexpr std::uint64_t kHoldSeed = 1;

// U[1 us, 20 us) in picoseconds.
inline Tick hold_delay(Rng& rng) { return PS_PER_US + rng.below(19 * PS_PER_US); }

// What the two models on the engine share: the Simulation, and a budget of events after which
// it stops.
class EngineHold {
public:
    void run(std::uint64_t events) {
        budget_ = events;
        sim_.run();
    }
    Tick now() const { return sim_.now(); }
    std::size_t pending() const { return sim_.pending(); }

protected:
    // Counts one handled event; stops the run when the budget is spent.
    void count_event() {
        if (--budget_ == 0) sim_.stop();
    }
    engine::Simulation sim_{kHoldSeed};

private:
    std::uint64_t budget_ = 0;
};

class CallbackHold final : public EngineHold, public engine::EventTarget {
public:
    explicit CallbackHold(std::size_t n) : rng_(sim_.rng("hold")) {
        for (std::size_t i = 0; i < n; ++i) sim_.schedule_at(hold_delay(rng_), this, i);
    }
    void on_event(std::uint64_t entity) override {
        sim_.schedule_in(hold_delay(rng_), this, entity);
        count_event();
    }

private:
    Rng rng_;
};

class CoroutineHold : public EngineHold {
public:
    explicit CoroutineHold(std::size_t n) : rng_(sim_.rng("hold")) {
        waker_.owner = this;
        tasks_.reserve(n);
        for (std::size_t i = 0; i < n; ++i) {
            tasks_.push_back(entity(*this));
            tasks_.back().handle().resume(); // runs to its first sleep
        }
    }
    CoroutineHold(const CoroutineHold&) = delete;
    CoroutineHold& operator=(const CoroutineHold&) = delete;

private:
    struct Waker final : engine::EventTarget {
        CoroutineHold* owner = nullptr;
        void on_event(std::uint64_t handle) override {
            std::coroutine_handle<>::from_address(reinterpret_cast<void*>(handle)).resume();
            owner->count_event();
        }
    };

    // The tiny awaitable: schedule an event that resumes this coroutine after `delay`.
    struct Sleep {
        CoroutineHold& h;
        Tick delay;
        bool await_ready() const noexcept { return false; }
        void await_suspend(std::coroutine_handle<> me) noexcept {
            h.sim_.schedule_in(delay, &h.waker_, reinterpret_cast<std::uint64_t>(me.address()));
        }
        void await_resume() const noexcept {}
    };

    static engine::Task<> entity(CoroutineHold& h) {
        for (;;) co_await Sleep{h, hold_delay(h.rng_)};
    }

    Rng rng_;
    Waker waker_;
    std::vector<engine::Task<>> tasks_; // last member: frames are destroyed first
};

template <class Queue>
class QueueHoldOf {
public:
    explicit QueueHoldOf(std::size_t n) : rng_(kHoldSeed, "hold") {
        q_.reserve(1024);
        for (std::size_t i = 0; i < n; ++i) q_.push(hold_delay(rng_), nullptr, i);
    }
    void run(std::uint64_t events) {
        for (std::uint64_t k = 0; k < events; ++k) {
            engine::Event ev = q_.pop();
            now_ = ev.time;
            q_.push(now_ + hold_delay(rng_), nullptr, ev.arg);
        }
    }
    Tick now() const { return now_; }
    std::size_t pending() const { return q_.size(); }

private:
    Queue q_;
    Rng rng_;
    Tick now_ = 0;
};
using QueueHold = QueueHoldOf<engine::EventQueue>;
using HeapQueueHold = QueueHoldOf<engine::HeapEventQueue>;

class FloorHold {
public:
    struct PodEvent {
        Tick time;
        std::uint64_t seq;
        std::uint64_t entity;
    };
    static_assert(sizeof(PodEvent) == 24);

    explicit FloorHold(std::size_t n) : rng_(kHoldSeed, "hold") {
        for (std::size_t i = 0; i < n; ++i) q_.push({hold_delay(rng_), seq_++, i});
    }
    void run(std::uint64_t events) {
        for (std::uint64_t k = 0; k < events; ++k) {
            PodEvent ev = q_.top();
            q_.pop();
            now_ = ev.time;
            q_.push({now_ + hold_delay(rng_), seq_++, ev.entity});
        }
    }
    Tick now() const { return now_; }
    std::size_t pending() const { return q_.size(); }

private:
    struct Later {
        bool operator()(const PodEvent& a, const PodEvent& b) const {
            return a.time > b.time || (a.time == b.time && a.seq > b.seq);
        }
    };
    std::priority_queue<PodEvent, std::vector<PodEvent>, Later> q_;
    Rng rng_;
    Tick now_ = 0;
    std::uint64_t seq_ = 0;
};

} // namespace kdsim::bench
