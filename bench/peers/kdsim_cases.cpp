// kdsim's engine in its two styles:
//   kdsim-cb    engine::Simulation + EventTarget callbacks (arg carries the entity)
//   kdsim-coro  engine::Simulation driving engine::Task<> coroutines that co_await a sleep
//               awaitable (an event whose arg is the coroutine handle), as kernel paths do.
// Time is engine::Tick (picoseconds): delays are the shared ns draws times 1000.

#include "calendar_queue.h"
#include "common.h"

#include "engine/simulation.h"
#include "engine/task.h"
#include "engine/time.h"

#include <coroutine>
#include <memory>
#include <vector>

namespace peers {
namespace {

using kdsim::engine::EventTarget;
using kdsim::engine::Simulation;
using kdsim::engine::Task;
using kdsim::engine::Tick;
constexpr Tick PS = kdsim::engine::PS_PER_NS;

bool all(const Spec&) { return true; }

template <class Sim>
Outcome done(const Sim& sim) {
    return {sim.now() / PS, PS};
}

// ---- callbacks -------------------------------------------------------------------------------------

struct Ent {
    Lcg rng;
    std::uint64_t left;
};

template <class Sim>
class CbHold final : public EventTarget {
public:
    explicit CbHold(const Spec& s) {
        ent_.reserve(s.n);
        for (std::uint64_t i = 0; i < s.n; ++i) {
            ent_.push_back({lcg_for(i), s.k});
            sim_.schedule_at(hold_delay_ns(ent_[i].rng) * PS, this, i);
        }
    }
    void on_event(std::uint64_t i) override {
        meter_event(sim_.now());
        Ent& e = ent_[i];
        if (--e.left) sim_.schedule_in(hold_delay_ns(e.rng) * PS, this, i);
    }
    Sim sim_;

private:
    std::vector<Ent> ent_;
};

template <class Sim>
Outcome cb_hold(const Spec& s) {
    CbHold<Sim> h(s);
    h.sim_.run();
    return done(h.sim_);
}

template <class Sim>
class CbQueue {
public:
    explicit CbQueue(const Spec& s) : arrival_(this), departure_(this) {
        src_.reserve(s.n);
        for (std::uint64_t i = 0; i < s.n; ++i) {
            src_.push_back({lcg_for(i), s.k});
            sim_.schedule_at(queue_ia_ns(src_[i].rng) * PS, &arrival_, i);
        }
    }
    Sim sim_;

private:
    struct Arrival final : EventTarget {
        CbQueue* q;
        explicit Arrival(CbQueue* q) : q(q) {}
        void on_event(std::uint64_t i) override {
            Sim& sim = q->sim_;
            meter_event(sim.now());
            q->fifo_.push(sim.now());
            if (!q->busy_) {
                q->busy_ = true;
                sim.schedule_in(kServiceNs * PS, &q->departure_);
            }
            Ent& e = q->src_[i];
            if (--e.left) sim.schedule_in(queue_ia_ns(e.rng) * PS, this, i);
        }
    };
    struct Departure final : EventTarget {
        CbQueue* q;
        explicit Departure(CbQueue* q) : q(q) {}
        void on_event(std::uint64_t) override {
            Sim& sim = q->sim_;
            meter_event(sim.now());
            q->fifo_.pop();
            if (!q->fifo_.empty()) sim.schedule_in(kServiceNs * PS, this);
            else q->busy_ = false;
        }
    };
    Arrival arrival_;
    Departure departure_;
    std::vector<Ent> src_;
    Fifo fifo_;
    bool busy_ = false;
};

template <class Sim>
Outcome cb_queue(const Spec& s) {
    CbQueue<Sim> q(s);
    q.sim_.run();
    return done(q.sim_);
}

template <class Sim>
class CbPingPong final : public EventTarget {
public:
    explicit CbPingPong(const Spec& s) : k_(s.k) { sim_.schedule_in(kLatencyNs * PS, this, 1); }
    // arg = the side the message is delivered to (0 = A, 1 = B).
    void on_event(std::uint64_t side) override {
        meter_event(sim_.now());
        if (side == 1) sim_.schedule_in(kLatencyNs * PS, this, 0);
        else if (++rounds_ < k_) sim_.schedule_in(kLatencyNs * PS, this, 1);
    }
    Sim sim_;

private:
    std::uint64_t k_, rounds_ = 0;
};

template <class Sim>
Outcome cb_pingpong(const Spec& s) {
    CbPingPong<Sim> p(s);
    p.sim_.run();
    return done(p.sim_);
}

// ---- coroutines ------------------------------------------------------------------------------------

// The engine plus the one EventTarget that resumes a coroutine whose handle is the event's arg.
struct CoEnv final : EventTarget {
    Simulation sim;
    void on_event(std::uint64_t h) override {
        std::coroutine_handle<>::from_address(reinterpret_cast<void*>(h)).resume();
    }
    struct Sleep {
        CoEnv& env;
        Tick delay;
        bool await_ready() const noexcept { return false; }
        void await_suspend(std::coroutine_handle<> me) noexcept {
            env.sim.schedule_in(delay, &env, reinterpret_cast<std::uint64_t>(me.address()));
        }
        void await_resume() const noexcept {}
    };
    Sleep sleep(Tick d) { return {*this, d}; }
};

Task<> co_timer(CoEnv& env, std::uint64_t i, std::uint64_t k) {
    Lcg rng = lcg_for(i);
    for (std::uint64_t j = 0; j < k; ++j) {
        co_await env.sleep(hold_delay_ns(rng) * PS);
        meter_event(env.sim.now());
    }
}

Outcome co_hold(const Spec& s) {
    auto env = std::make_unique<CoEnv>();
    std::vector<Task<>> tasks;
    tasks.reserve(s.n);
    for (std::uint64_t i = 0; i < s.n; ++i) {
        tasks.push_back(co_timer(*env, i, s.k));
        tasks.back().handle().resume(); // runs to its first sleep
    }
    env->sim.run();
    return done(env->sim);
}

struct CoQueue {
    Fifo fifo;
    std::coroutine_handle<> server_waiting;
    struct WaitPacket {
        CoQueue& q;
        bool await_ready() const noexcept { return !q.fifo.empty(); }
        void await_suspend(std::coroutine_handle<> me) noexcept { q.server_waiting = me; }
        void await_resume() const noexcept {}
    };
};

Task<> co_source(CoEnv& env, CoQueue& q, std::uint64_t i, std::uint64_t k) {
    Lcg rng = lcg_for(i);
    for (std::uint64_t j = 0; j < k; ++j) {
        co_await env.sleep(queue_ia_ns(rng) * PS);
        meter_event(env.sim.now());
        q.fifo.push(env.sim.now());
        if (auto h = q.server_waiting) { // an idle server starts at once, in this event
            q.server_waiting = {};
            h.resume();
        }
    }
}

Task<> co_server(CoEnv& env, CoQueue& q, std::uint64_t packets) {
    for (std::uint64_t j = 0; j < packets; ++j) {
        co_await CoQueue::WaitPacket{q};
        co_await env.sleep(kServiceNs * PS);
        meter_event(env.sim.now());
        q.fifo.pop();
    }
}

Outcome co_queue(const Spec& s) {
    auto env = std::make_unique<CoEnv>();
    CoQueue q;
    std::vector<Task<>> tasks;
    tasks.reserve(s.n + 1);
    tasks.push_back(co_server(*env, q, s.n * s.k));
    tasks.back().handle().resume();
    for (std::uint64_t i = 0; i < s.n; ++i) {
        tasks.push_back(co_source(*env, q, i, s.k));
        tasks.back().handle().resume();
    }
    env->sim.run();
    return done(env->sim);
}

// A channel: a delivery event wakes the coroutine waiting on it (or is kept for it).
struct Chan final : EventTarget {
    std::coroutine_handle<> waiter;
    std::uint64_t pending = 0;
    void on_event(std::uint64_t) override {
        if (auto h = waiter) {
            waiter = {};
            h.resume();
        } else {
            ++pending;
        }
    }
    struct Recv {
        Chan& c;
        bool await_ready() const noexcept { return c.pending != 0; }
        void await_suspend(std::coroutine_handle<> me) noexcept { c.waiter = me; }
        void await_resume() const noexcept {
            if (c.pending) --c.pending;
        }
    };
    Recv recv() { return {*this}; }
};

Task<> co_ping(CoEnv& env, Chan& mine, Chan& peer, std::uint64_t k) {
    for (std::uint64_t j = 0; j < k; ++j) {
        env.sim.schedule_in(kLatencyNs * PS, &peer);
        co_await mine.recv();
        meter_event(env.sim.now());
    }
}

Task<> co_pong(CoEnv& env, Chan& mine, Chan& peer, std::uint64_t k) {
    for (std::uint64_t j = 0; j < k; ++j) {
        co_await mine.recv();
        meter_event(env.sim.now());
        env.sim.schedule_in(kLatencyNs * PS, &peer);
    }
}

Outcome co_pingpong(const Spec& s) {
    auto env = std::make_unique<CoEnv>();
    Chan a, b;
    Task<> pong = co_pong(*env, b, a, s.k);
    pong.handle().resume();
    Task<> ping = co_ping(*env, a, b, s.k);
    ping.handle().resume();
    env->sim.run();
    return done(env->sim);
}

template <class Sim>
Outcome cb_run(const Spec& s) {
    switch (s.w) {
    case Workload::HOLD: return cb_hold<Sim>(s);
    case Workload::QUEUE: return cb_queue<Sim>(s);
    case Workload::PINGPONG: return cb_pingpong<Sim>(s);
    }
    return {};
}

Outcome co_run(const Spec& s) {
    switch (s.w) {
    case Workload::HOLD: return co_hold(s);
    case Workload::QUEUE: return co_queue(s);
    case Workload::PINGPONG: return co_pingpong(s);
    }
    return {};
}

} // namespace

// Experiments kept in bench/ (not the engine): the callback models over the engine's run loop
// copied into BenchSim, with the engine's former single 8-ary heap (engine::HeapEventQueue, the
// control for the two-tier EventQueue that kdsim-cb now uses) and with a calendar queue.
void add_experiment_cases(std::vector<Case>& out) {
    out.push_back({"xp-heap8", "experiment: BenchSim loop + engine::HeapEventQueue (the former engine heap)", "experiment",
                   all, cb_run<BenchSim<kdsim::engine::HeapEventQueue>>});
    out.push_back({"xp-calq", "experiment: BenchSim loop + calendar queue (bench/peers/calendar_queue.h)",
                   "experiment", all, cb_run<BenchSim<CalendarQueue>>});
}

void add_kdsim_cases(std::vector<Case>& out) {
    out.push_back({"kdsim-cb", "kdsim engine, EventTarget callbacks", "kdsim", all, cb_run<Simulation>});
    out.push_back({"kdsim-coro", "kdsim engine, Task<> coroutines + sleep awaitable", "kdsim", all, co_run});
}

} // namespace peers
