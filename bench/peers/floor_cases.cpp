// The floor: a DES kernel that does nothing else. std::priority_queue of 24-byte POD events
// {time ns, insertion seq, arg}, ordered by (time, seq), and a switch on the event kind. Two
// floors: "floor" compares time, then seq, with branches (about 6 mispredicts per event on hold);
// "floor-bf" compares (time, seq) as one 128-bit number, without a branch, as kdsim's heap does.

#include "common.h"

#include <queue>
#include <vector>

namespace peers {
namespace {

struct Pod {
    std::uint64_t time, seq, arg;
};
static_assert(sizeof(Pod) == 24);
struct Later {
    bool operator()(const Pod& a, const Pod& b) const {
        return a.time > b.time || (a.time == b.time && a.seq > b.seq);
    }
};
struct LaterBranchFree {
    bool operator()(const Pod& a, const Pod& b) const {
        using U = unsigned __int128;
        return ((U(a.time) << 64) | a.seq) > ((U(b.time) << 64) | b.seq);
    }
};

template <class Cmp>
class Floor {
public:
    void reserve(std::size_t n) {
        std::vector<Pod> v;
        v.reserve(n);
        q_ = decltype(q_)(Cmp{}, std::move(v));
    }
    void at(std::uint64_t t, std::uint64_t arg) { q_.push({t, seq_++, arg}); }
    bool empty() const { return q_.empty(); }
    Pod pop() {
        Pod p = q_.top();
        q_.pop();
        now = p.time;
        return p;
    }
    std::uint64_t now = 0;

private:
    std::priority_queue<Pod, std::vector<Pod>, Cmp> q_;
    std::uint64_t seq_ = 0;
};

struct Ent {
    Lcg rng;
    std::uint64_t left;
};

enum : std::uint64_t { TIMER, ARRIVAL, DEPARTURE, DELIVER_A, DELIVER_B };
constexpr std::uint64_t pack(std::uint64_t kind, std::uint64_t i) { return kind << 56 | i; }

template <class Cmp>
Outcome run(const Spec& s) {
    Floor<Cmp> f;
    std::vector<Ent> ent;
    Fifo fifo;
    bool busy = false;
    std::uint64_t rounds = 0;
    switch (s.w) {
    case Workload::HOLD:
        f.reserve(s.n);
        ent.reserve(s.n);
        for (std::uint64_t i = 0; i < s.n; ++i) {
            ent.push_back({lcg_for(i), s.k});
            f.at(hold_delay_ns(ent[i].rng), pack(TIMER, i));
        }
        break;
    case Workload::QUEUE:
        f.reserve(s.n + 1);
        ent.reserve(s.n);
        for (std::uint64_t i = 0; i < s.n; ++i) {
            ent.push_back({lcg_for(i), s.k});
            f.at(queue_ia_ns(ent[i].rng), pack(ARRIVAL, i));
        }
        break;
    case Workload::PINGPONG: f.at(kLatencyNs, pack(DELIVER_B, 0)); break;
    }
    constexpr std::uint64_t MASK = (std::uint64_t{1} << 56) - 1;
    while (!f.empty()) {
        Pod p = f.pop();
        meter_event(p.time);
        const std::uint64_t i = p.arg & MASK;
        switch (p.arg >> 56) {
        case TIMER:
            if (--ent[i].left) f.at(f.now + hold_delay_ns(ent[i].rng), p.arg);
            break;
        case ARRIVAL:
            fifo.push(f.now);
            if (!busy) {
                busy = true;
                f.at(f.now + kServiceNs, pack(DEPARTURE, 0));
            }
            if (--ent[i].left) f.at(f.now + queue_ia_ns(ent[i].rng), p.arg);
            break;
        case DEPARTURE:
            fifo.pop();
            if (!fifo.empty()) f.at(f.now + kServiceNs, p.arg);
            else busy = false;
            break;
        case DELIVER_B: f.at(f.now + kLatencyNs, pack(DELIVER_A, 0)); break;
        case DELIVER_A:
            if (++rounds < s.k) f.at(f.now + kLatencyNs, pack(DELIVER_B, 0));
            break;
        }
    }
    return {f.now, 1};
}

bool all(const Spec&) { return true; }

} // namespace

void add_floor_cases(std::vector<Case>& out) {
    out.push_back({"floor", "std::priority_queue of 24 B PODs + switch (no simulator)", "floor", all, run<Later>});
    out.push_back({"floor-bf", "the floor with a branch-free 128-bit (time, seq) comparator", "floor", all,
                   run<LaterBranchFree>});
}

} // namespace peers
