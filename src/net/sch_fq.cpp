// fq_enqueue, fq_dequeue and their flow lists (sch_fq.h).
#include "net/sch_fq.h"

#include "net/stack.h"

#include <algorithm>

namespace kdsim::net {

namespace {
constexpr std::uint8_t TC_PRIO_CONTROL = 7;
constexpr std::uint64_t NSEC_PER_SEC = 1'000'000'000;
} // namespace

// A flow per socket: the flow number of a TCP or UDP skb; one flow for the rest.
// Models: fq_classify() (net/sched/sch_fq.c)
std::uint32_t Fq::fq_classify(const Packet& p, engine::Tick now) {
    if (flows_.empty()) { // the flow of orphaned skbs
        flows_.emplace_back();
        flows_.back().credit = cfg_.initial_quantum;
        flows_.back().age = now;
        ++fst_.flows;
        ++fst_.inactive_flows;
    }
    if (!Stack::carries_flow(p.kind)) return 0;
    if (by_socket_.size() <= p.flow) by_socket_.resize(p.flow + std::size_t{1}, 0);
    if (by_socket_[p.flow] == 0) {
        flows_.emplace_back();
        Flow& f = flows_.back();
        f.credit = cfg_.initial_quantum;
        f.age = now;
        by_socket_[p.flow] = static_cast<std::uint32_t>(flows_.size());
        ++fst_.flows;
        ++fst_.inactive_flows;
    }
    return by_socket_[p.flow] - 1;
}

void Fq::add_tail(List& l, std::uint32_t f) {
    flows_[f].next = NIL;
    flows_[f].state = State::LISTED;
    if (l.first == NIL) l.first = f;
    else flows_[l.last].next = f;
    l.last = f;
}

// Models: fq_flow_set_throttled() (net/sched/sch_fq.c)
void Fq::set_throttled(std::uint32_t f) {
    Flow& fl = flows_[f];
    fl.state = State::THROTTLED;
    const auto at = std::upper_bound(delayed_.begin(), delayed_.end(), fl.time_next_packet,
                                     [this](engine::Tick t, std::uint32_t g) { return t < flows_[g].time_next_packet; });
    delayed_.insert(at, f);
    ++fst_.throttled_flows;
    ++fst_.throttled;
    time_next_delayed_flow_ = std::min(time_next_delayed_flow_, fl.time_next_packet);
}

// Models: fq_check_throttled() (net/sched/sch_fq.c)
void Fq::check_throttled(engine::Tick now) {
    if (time_next_delayed_flow_ > now) return;
    const std::uint64_t sample = (now - time_next_delayed_flow_) / engine::PS_PER_NS;
    fst_.unthrottle_latency_ns -= fst_.unthrottle_latency_ns >> 3;
    fst_.unthrottle_latency_ns += sample >> 3;
    time_next_delayed_flow_ = NEVER;
    std::size_t n = 0;
    for (; n < delayed_.size(); ++n) {
        const std::uint32_t f = delayed_[n];
        if (flows_[f].time_next_packet > now) {
            time_next_delayed_flow_ = flows_[f].time_next_packet;
            break;
        }
        --fst_.throttled_flows;
        add_tail(old_flows_, f);
    }
    delayed_.erase(delayed_.begin(), delayed_.begin() + static_cast<std::ptrdiff_t>(n));
}

// Models: fq_enqueue() (net/sched/sch_fq.c)
bool Fq::enqueue(const Packet& p, engine::Tick now) {
    if (qlen() >= cfg_.limit) return drop();
    engine::Tick time_to_send = now;
    if (p.tstamp) {
        if (p.tstamp > now + HORIZON) {
            ++fst_.horizon_drops;
            return drop();
        }
        time_to_send = p.tstamp;
    }
    if ((p.priority & 15) == TC_PRIO_CONTROL) {
        ++fst_.highprio;
        internal_.push_back(p);
        return true;
    }
    const std::uint32_t f = fq_classify(p, now);
    Flow& fl = flows_[f];
    if (fl.q.size() >= cfg_.flow_limit) {
        ++fst_.flows_plimit;
        return drop();
    }
    if (fl.state == State::DETACHED) {
        add_tail(new_flows_, f);
        if (now > fl.age + FLOW_REFILL_DELAY) fl.credit = std::max<std::int64_t>(fl.credit, cfg_.quantum);
        --fst_.inactive_flows;
    }
    fl.q.push_back(Queued{p, time_to_send}); // an EDT earlier than the tail's would sort into t_root
    return true;
}

// Models: fq_dequeue() (net/sched/sch_fq.c)
bool Fq::dequeue(engine::Tick now, Packet& out) {
    if (!internal_.empty()) {
        out = internal_.pop_front();
        return true;
    }
    check_throttled(now);
    for (;;) {
        List* head = &new_flows_;
        if (head->first == NIL) {
            head = &old_flows_;
            if (head->first == NIL) return false; // the caller arms the watchdog (next_wakeup)
        }
        const std::uint32_t f = head->first;
        Flow& fl = flows_[f];
        if (fl.credit <= 0) {
            fl.credit += cfg_.quantum;
            head->first = fl.next;
            add_tail(old_flows_, f);
            continue;
        }
        if (fl.q.empty()) {
            head->first = fl.next;
            if (head == &new_flows_ && old_flows_.first != NIL) { // a pass through old_flows against starvation
                add_tail(old_flows_, f);
            } else {
                fl.state = State::DETACHED;
                fl.age = now;
                ++fst_.inactive_flows;
            }
            continue;
        }
        const engine::Tick time_next_packet = std::max(fl.q.front().time_to_send, fl.time_next_packet);
        if (now < time_next_packet) {
            head->first = fl.next;
            fl.time_next_packet = time_next_packet;
            set_throttled(f);
            continue;
        }
        out = fl.q.pop_front().skb;
        std::uint64_t plen = out.len;
        fl.credit -= static_cast<std::int64_t>(plen);
        if (!cfg_.pacing) return true;
        std::uint64_t rate = cfg_.maxrate ? cfg_.maxrate : ~std::uint64_t{0};
        if (!out.tstamp) { // no EDT: the socket's rate (~0UL without SO_MAX_PACING_RATE) and maxrate
            if (rate <= LOW_RATE_THRESHOLD) {
                fl.credit = 0;
            } else {
                plen = std::max<std::uint64_t>(plen, cfg_.quantum);
                if (fl.credit > 0) return true;
            }
        }
        if (rate != ~std::uint64_t{0}) {
            std::uint64_t len_ns = plen * NSEC_PER_SEC / rate;
            if (len_ns > NSEC_PER_SEC) {
                len_ns = NSEC_PER_SEC;
                ++fst_.pkts_too_long;
            }
            engine::Tick len = len_ns * engine::PS_PER_NS;
            if (fl.time_next_packet) len -= std::min(len / 2, now - fl.time_next_packet);
            fl.time_next_packet = now + len;
        }
        return true;
    }
}

void Fq::register_own_stats(const stats::Scope& s) const {
    s.counter("flows", fst_.flows, "count", "fq flows made (one per socket, one for skbs without)")
        .counter("inactive_flows", fst_.inactive_flows, "count", "fq flows detached (idle) at the end of the run")
        .counter("throttled_flows", fst_.throttled_flows, "count", "fq flows waiting for their time at the end of the run")
        .counter("throttled", fst_.throttled, "count", "times a flow was throttled: its next packet not yet due")
        .counter("flows_plimit", fst_.flows_plimit, "count", "skbs dropped because their flow held flow_limit packets")
        .counter("highprio", fst_.highprio, "count", "skbs of the internal high-priority flow (TC_PRIO_CONTROL)")
        .counter("pkts_too_long", fst_.pkts_too_long, "count", "pacing waits clamped to 1 s")
        .counter("horizon_drops", fst_.horizon_drops, "count", "skbs dropped: EDT timestamp beyond the 10 s horizon")
        .counter("unthrottle_latency_ns", fst_.unthrottle_latency_ns, "ns",
                 "EWMA of how late throttled flows were released after their time (tc: latency)");
}

} // namespace kdsim::net
