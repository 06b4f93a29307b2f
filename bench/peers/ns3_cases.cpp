// ns-3 (Debian's libns3-core, 3.37) at the event level: no Node/NetDevice/Packet objects, only
// Simulator::Schedule of member functions, with each of the five schedulers it ships selected
// by Simulator::SetScheduler. Time is ns-3's default resolution (int64 ns), so the trajectory is
// exact. Simulator::Destroy() between runs (outside the timed part).

#include "common.h"

#include <ns3/nstime.h>
#include <ns3/object-factory.h>
#include <ns3/simulator.h>

#include <vector>

namespace peers {
namespace {

using ns3::NanoSeconds;
using ns3::Simulator;

struct Ent {
    Lcg rng;
    std::uint64_t left;
};

std::uint64_t now_ns() { return static_cast<std::uint64_t>(Simulator::Now().GetTimeStep()); }

struct Hold {
    std::vector<Ent> ent;
    void Fire(std::uint32_t i) {
        meter_event(now_ns());
        Ent& e = ent[i];
        if (--e.left) Simulator::Schedule(NanoSeconds(hold_delay_ns(e.rng)), &Hold::Fire, this, i);
    }
};

struct Queue {
    std::vector<Ent> src;
    Fifo fifo;
    bool busy = false;
    void Arrive(std::uint32_t i) {
        meter_event(now_ns());
        fifo.push(now_ns());
        if (!busy) {
            busy = true;
            Simulator::Schedule(NanoSeconds(kServiceNs), &Queue::Depart, this);
        }
        Ent& e = src[i];
        if (--e.left) Simulator::Schedule(NanoSeconds(queue_ia_ns(e.rng)), &Queue::Arrive, this, i);
    }
    void Depart() {
        meter_event(now_ns());
        fifo.pop();
        if (!fifo.empty()) Simulator::Schedule(NanoSeconds(kServiceNs), &Queue::Depart, this);
        else busy = false;
    }
};

struct PingPong {
    std::uint64_t k = 0, rounds = 0;
    void AtB() {
        meter_event(now_ns());
        Simulator::Schedule(NanoSeconds(kLatencyNs), &PingPong::AtA, this);
    }
    void AtA() {
        meter_event(now_ns());
        if (++rounds < k) Simulator::Schedule(NanoSeconds(kLatencyNs), &PingPong::AtB, this);
    }
};

template <const char* TypeId>
Outcome run(const Spec& s) {
    ns3::ObjectFactory f;
    f.SetTypeId(TypeId);
    Simulator::SetScheduler(f);
    Hold hold;
    Queue queue;
    PingPong pp;
    switch (s.w) {
    case Workload::HOLD:
        hold.ent.reserve(s.n);
        for (std::uint32_t i = 0; i < s.n; ++i) {
            hold.ent.push_back({lcg_for(i), s.k});
            Simulator::Schedule(NanoSeconds(hold_delay_ns(hold.ent[i].rng)), &Hold::Fire, &hold, i);
        }
        break;
    case Workload::QUEUE:
        queue.src.reserve(s.n);
        for (std::uint32_t i = 0; i < s.n; ++i) {
            queue.src.push_back({lcg_for(i), s.k});
            Simulator::Schedule(NanoSeconds(queue_ia_ns(queue.src[i].rng)), &Queue::Arrive, &queue, i);
        }
        break;
    case Workload::PINGPONG:
        pp.k = s.k;
        Simulator::Schedule(NanoSeconds(kLatencyNs), &PingPong::AtB, &pp);
        break;
    }
    Simulator::Run();
    Outcome o{now_ns(), 1};
    Simulator::Destroy();
    return o;
}

constexpr char kMap[] = "ns3::MapScheduler";
constexpr char kHeap[] = "ns3::HeapScheduler";
constexpr char kList[] = "ns3::ListScheduler";
constexpr char kCal[] = "ns3::CalendarScheduler";
constexpr char kPq[] = "ns3::PriorityQueueScheduler";

bool all(const Spec&) { return true; }
// The list scheduler inserts in O(pending): only where few events are pending.
bool small(const Spec& s) { return s.w != Workload::HOLD || s.n <= 10'000; }

} // namespace

void add_ns3_cases(std::vector<Case>& out) {
    out.push_back({"ns3-map", "ns-3 MapScheduler (ns-3's default)", "ns-3", all, run<kMap>});
    out.push_back({"ns3-heap", "ns-3 HeapScheduler", "ns-3", all, run<kHeap>});
    out.push_back({"ns3-list", "ns-3 ListScheduler (small N only)", "ns-3", small, run<kList>});
    out.push_back({"ns3-cal", "ns-3 CalendarScheduler", "ns-3", all, run<kCal>});
    out.push_back({"ns3-pq", "ns-3 PriorityQueueScheduler", "ns-3", all, run<kPq>});
}

} // namespace peers
