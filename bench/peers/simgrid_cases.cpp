// SimGrid (Debian's libsimgrid, 3.32), two ways:
//   sg-actors       the public s4u modelling API: one actor per entity, this_actor::sleep_for,
//                   0-byte mailbox comms (put_init()->detach() / get, or put / get)
//   sg-actors-exec  queue only: the server's 1 us service is this_actor::execute(1000 flops) on
//                   a 1 Gflop/s host instead of sleep_for
//   sg-ktimer       simgrid::kernel::timer::Timer::set callbacks, armed from a boot actor and
//                   run by maestro: an exported but internal API, the fastest path there is
// One Engine per process (SimGrid allows no other); its clock never resets, so times are taken
// relative to the clock at the start of each run, and mailboxes get fresh names per run.
// Platform: hosts h0, h1 (1 Gflop/s), link h0-h1 with 10 us latency and 1 Tb/s, network model
// CM02 (no LV08 latency/bandwidth factors), loopback latency 0. Logging is off.

#include "common.h"

#include <simgrid/kernel/Timer.hpp>
#include <simgrid/s4u.hpp>
#include <xbt/log.h>

#include <cmath>
#include <memory>
#include <string>
#include <vector>

namespace sg4 = simgrid::s4u;
using simgrid::kernel::timer::Timer;

namespace peers {
namespace {

struct Platform {
    std::unique_ptr<sg4::Engine> engine;
    sg4::Host* h0 = nullptr;
    sg4::Host* h1 = nullptr;
    unsigned runs = 0;
};

Platform& platform() {
    static Platform p = [] {
        Platform q;
        xbt_log_control_set("root.thresh:critical");
        static int argc = 1;
        static char arg0[] = "kdsim_peers_bench";
        static char* argv[] = {arg0, nullptr};
        q.engine = std::make_unique<sg4::Engine>(&argc, argv);
        sg4::Engine::set_config("network/model:CM02");
        sg4::Engine::set_config("network/loopback-lat:0");
        sg4::Engine::set_config("contexts/guard-size:0"); // 1e5 actors: vm.max_map_count
        sg4::Engine::set_config("contexts/stack-size:16"); // KiB per actor
        auto* z = sg4::create_full_zone("world");
        q.h0 = z->create_host("h0", 1e9)->seal();
        q.h1 = z->create_host("h1", 1e9)->seal();
        auto* l = z->create_link("l", 1e12)->set_latency(kLatencyNs * 1e-9)->seal();
        z->add_route(q.h0->get_netpoint(), q.h1->get_netpoint(), nullptr, nullptr, {sg4::LinkInRoute(l)}, true);
        z->seal();
        return q;
    }();
    return p;
}

double g_t0 = 0; // the clock at the start of the current run

inline std::uint64_t rel_ns() {
    return static_cast<std::uint64_t>(std::llround((sg4::Engine::get_clock() - g_t0) * 1e9));
}
inline double sec(std::uint64_t ns) { return static_cast<double>(ns) * 1e-9; }

Outcome finish(Platform& p) {
    p.engine->run();
    return {rel_ns(), 1};
}

// ---- actors ------------------------------------------------------------------------------------------

Outcome actors(const Spec& s, bool exec) {
    Platform& p = platform();
    g_t0 = sg4::Engine::get_clock();
    const std::string tag = std::to_string(++p.runs);
    std::vector<std::uint64_t> slots; // packet payloads: arrival times
    switch (s.w) {
    case Workload::HOLD:
        for (std::uint64_t i = 0; i < s.n; ++i)
            sg4::Actor::create("t", p.h0, [i, k = s.k] {
                Lcg rng = lcg_for(i);
                for (std::uint64_t j = 0; j < k; ++j) {
                    sg4::this_actor::sleep_for(sec(hold_delay_ns(rng)));
                    meter_event(rel_ns());
                }
            });
        break;
    case Workload::QUEUE: {
        sg4::Mailbox* mb = sg4::Mailbox::by_name("q" + tag);
        slots.resize(s.n * s.k);
        sg4::Actor::create("server", p.h0, [mb, exec, packets = s.n * s.k] {
            for (std::uint64_t j = 0; j < packets; ++j) {
                mb->get<std::uint64_t>();
                if (exec) sg4::this_actor::execute(static_cast<double>(kServiceNs)); // 1 Gflop/s
                else sg4::this_actor::sleep_for(sec(kServiceNs));
                meter_event(rel_ns());
            }
        });
        for (std::uint64_t i = 0; i < s.n; ++i)
            sg4::Actor::create("src", p.h0, [i, mb, k = s.k, slot = slots.data() + i * s.k] {
                Lcg rng = lcg_for(i);
                for (std::uint64_t j = 0; j < k; ++j) {
                    sg4::this_actor::sleep_for(sec(queue_ia_ns(rng)));
                    std::uint64_t t = rel_ns();
                    meter_event(t);
                    slot[j] = t;
                    mb->put_init(&slot[j], 0)->detach();
                }
            });
        break;
    }
    case Workload::PINGPONG: {
        sg4::Mailbox* to_a = sg4::Mailbox::by_name("a" + tag);
        sg4::Mailbox* to_b = sg4::Mailbox::by_name("b" + tag);
        static int token = 0;
        sg4::Actor::create("pong", p.h1, [to_a, to_b, k = s.k] {
            for (std::uint64_t j = 0; j < k; ++j) {
                to_b->get<int>();
                meter_event(rel_ns());
                to_a->put(&token, 0);
            }
        });
        sg4::Actor::create("ping", p.h0, [to_a, to_b, k = s.k] {
            for (std::uint64_t j = 0; j < k; ++j) {
                to_b->put(&token, 0);
                to_a->get<int>();
                meter_event(rel_ns());
            }
        });
        break;
    }
    }
    return finish(p);
}

Outcome sg_actors(const Spec& s) { return actors(s, false); }
Outcome sg_actors_exec(const Spec& s) { return actors(s, true); }

// ---- kernel timers ---------------------------------------------------------------------------------

struct Ent {
    Lcg rng;
    std::uint64_t left;
};

struct TimerModel {
    std::vector<Ent> ent;
    Fifo fifo;
    bool busy = false;
    std::uint64_t k = 0, rounds = 0;

    static double at(std::uint64_t delay_ns) { return sg4::Engine::get_clock() + sec(delay_ns); }

    void fire(std::uint64_t i) {
        meter_event(rel_ns());
        Ent& e = ent[i];
        if (--e.left) Timer::set(at(hold_delay_ns(e.rng)), [this, i] { fire(i); });
    }
    void arrive(std::uint64_t i) {
        const std::uint64_t t = rel_ns();
        meter_event(t);
        fifo.push(t);
        if (!busy) {
            busy = true;
            Timer::set(at(kServiceNs), [this] { depart(); });
        }
        Ent& e = ent[i];
        if (--e.left) Timer::set(at(queue_ia_ns(e.rng)), [this, i] { arrive(i); });
    }
    void depart() {
        meter_event(rel_ns());
        fifo.pop();
        if (!fifo.empty()) Timer::set(at(kServiceNs), [this] { depart(); });
        else busy = false;
    }
    void at_b() {
        meter_event(rel_ns());
        Timer::set(at(kLatencyNs), [this] { at_a(); });
    }
    void at_a() {
        meter_event(rel_ns());
        if (++rounds < k) Timer::set(at(kLatencyNs), [this] { at_b(); });
    }
};

Outcome sg_ktimer(const Spec& s) {
    Platform& p = platform();
    g_t0 = sg4::Engine::get_clock();
    TimerModel m;
    m.k = s.k;
    sg4::Actor::create("boot", p.h0, [&m, s] {
        switch (s.w) {
        case Workload::HOLD:
            m.ent.reserve(s.n);
            for (std::uint64_t i = 0; i < s.n; ++i) {
                m.ent.push_back({lcg_for(i), s.k});
                Timer::set(TimerModel::at(hold_delay_ns(m.ent[i].rng)), [&m, i] { m.fire(i); });
            }
            break;
        case Workload::QUEUE:
            m.ent.reserve(s.n);
            for (std::uint64_t i = 0; i < s.n; ++i) {
                m.ent.push_back({lcg_for(i), s.k});
                Timer::set(TimerModel::at(queue_ia_ns(m.ent[i].rng)), [&m, i] { m.arrive(i); });
            }
            break;
        case Workload::PINGPONG: Timer::set(TimerModel::at(kLatencyNs), [&m] { m.at_b(); }); break;
        }
    });
    return finish(p);
}

bool all(const Spec&) { return true; }
bool queue_only(const Spec& s) { return s.w == Workload::QUEUE; }

} // namespace

void add_simgrid_cases(std::vector<Case>& out) {
    out.push_back({"sg-actors", "SimGrid s4u actors (sleep_for, mailboxes)", "SimGrid", all, sg_actors});
    out.push_back({"sg-actors-exec", "SimGrid s4u actors, service by execute()", "SimGrid", queue_only, sg_actors_exec});
    out.push_back({"sg-ktimer", "SimGrid kernel::timer::Timer::set (internal API)", "SimGrid", all, sg_ktimer});
}

} // namespace peers
