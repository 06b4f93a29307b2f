// The fq packet scheduler (net/sched/sch_fq.c, Linux 6.1). A flow per socket (packets without one
// share a flow; skb->priority TC_PRIO_CONTROL goes to the internal high-priority flow, served
// first). enqueue: past `limit` packets in all, or `flow_limit` in the flow, the skb is dropped;
// a detached flow joins new_flows, with a quantum of credit again when idle longer than
// flow_refill_delay (40 ms); a new flow starts with initial_quantum. Each skb's time_to_send is
// its EDT timestamp (skb->tstamp, as TCP sets it when its socket is SK_PACING_FQ) or its enqueue
// time. dequeue: the internal flow first; throttled flows whose time has come go to old_flows;
// then round robin over new_flows then old_flows: a flow out of credit gets a quantum more and
// goes to the tail of old_flows; a flow whose head is not due is throttled (the delayed tree,
// by time_next_packet); an empty flow leaves (to old_flows once, from new_flows, else detached).
// Pacing (rate_enable) of an skb without EDT timestamp: rate = maxrate (a socket without
// SO_MAX_PACING_RATE paces at ~0UL); at or below low_rate_threshold (550 kbit/s) every packet
// waits len / rate, above it the flow sends its credit and then waits max(len, quantum) / rate;
// a late dequeue takes up to half the wait back (len -= min(len / 2, now - time_next_packet)).
// Nothing to send but throttled flows: the watchdog is armed for the earliest (qdisc.h).
// Not modelled: the flow hash table's garbage collection (fq_gc), ECN CE marking
// (ce_threshold), the horizon cap (horizon_drop is the default: beyond 10 s an skb is dropped).
#pragma once

#include "net/qdisc.h"

#include <cstdint>
#include <vector>

namespace kdsim::net {

struct FqStats {
    std::uint64_t flows = 0;           // flows made (one per socket seen)
    std::uint64_t inactive_flows = 0;  // flows detached now
    std::uint64_t throttled_flows = 0; // flows waiting in the delayed tree now
    std::uint64_t throttled = 0;       // times a flow was throttled (stat_throttled)
    std::uint64_t flows_plimit = 0;    // skbs dropped at the flow's limit
    std::uint64_t highprio = 0;        // skbs of the internal flow (stat_internal_packets)
    std::uint64_t pkts_too_long = 0;   // pacing waits clamped to 1 s
    std::uint64_t horizon_drops = 0;   // EDT timestamps beyond the horizon, dropped
    std::uint64_t unthrottle_latency_ns = 0; // EWMA of how late throttled flows were released
};

class Fq final : public Qdisc {
public:
    static constexpr std::uint64_t LOW_RATE_THRESHOLD = 550000 / 8; // bytes/s (550 kbit/s)
    static constexpr engine::Tick FLOW_REFILL_DELAY = 40 * engine::PS_PER_MS;
    static constexpr engine::Tick HORIZON = 10 * engine::PS_PER_S;

    Fq(const FqConfig& cfg, const QdiscCosts& costs) : cfg_(cfg), costs_(costs) {}
    bool enqueue(const Packet& p, engine::Tick now) override;
    bool dequeue(engine::Tick now, Packet& out) override;
    engine::Tick next_wakeup() const override { return time_next_delayed_flow_ == NEVER ? 0 : time_next_delayed_flow_; }
    Cycles enqueue_cost() const override { return costs_.fq_enqueue; }
    Cycles dequeue_cost() const override { return costs_.fq_dequeue; }
    engine::Tick timer_slack() const override { return cfg_.timer_slack_ns * engine::PS_PER_NS; }
    const char* kind() const override { return "fq"; }
    void register_own_stats(const stats::Scope& s) const override;
    const FqStats& fq_stats() const { return fst_; }
    // rate_enable: TCP sockets under it are SK_PACING_FQ (fq_classify sets it).
    bool pacing() const { return cfg_.pacing; }

private:
    static constexpr engine::Tick NEVER = ~engine::Tick{0};
    static constexpr std::uint32_t NIL = ~std::uint32_t{0};
    enum class State : std::uint8_t { DETACHED, LISTED, THROTTLED };
    struct Queued { // the skb and the time_to_send fq keeps in its cb
        Packet skb;
        engine::Tick time_to_send = 0;
    };
    struct Flow {
        Fifo<Queued> q;
        std::int64_t credit = 0;
        engine::Tick time_next_packet = 0;
        engine::Tick age = 0; // when it was detached
        State state = State::DETACHED;
        std::uint32_t next = NIL; // in new_flows / old_flows
    };
    struct List {
        std::uint32_t first = NIL, last = NIL;
    };
    std::uint32_t fq_classify(const Packet& p, engine::Tick now);
    void add_tail(List& l, std::uint32_t f);
    void set_throttled(std::uint32_t f);
    void check_throttled(engine::Tick now);

    FqConfig cfg_;
    QdiscCosts costs_;
    std::vector<Flow> flows_;              // by index; flows_[0] is the flow of skbs without a socket
    std::vector<std::uint32_t> by_socket_; // socket (flow number) -> index + 1
    SkbQueue internal_;
    List new_flows_, old_flows_;
    std::vector<std::uint32_t> delayed_; // throttled flows by (time_next_packet, order throttled)
    engine::Tick time_next_delayed_flow_ = NEVER;
    FqStats fst_;
};

} // namespace kdsim::net
