// [machine.nic] qdisc = "noqueue" | "pfifo_fast" | "fq", txqueuelen, and fq's parameters in
// [machine.nic.fq] (tc qdisc add dev eth0 root fq limit ... flow_limit ... quantum ...
// initial_quantum ... maxrate ... [no]pacing), validated against what tc accepts.
#include "scenario/loader.h"

#include <fmt/format.h>

namespace kdsim::scenario::detail {

void ScenarioLoader::read_qdisc(const toml::table& nic, const std::string& nkey, system::MachineConfig& mc) {
    net::QdiscConfig& q = mc.nic_qdisc;
    if (auto k = r_.choice(nic, "qdisc", nkey + ".qdisc", false, {"noqueue", "pfifo_fast", "fq"}))
        q.kind = std::array{net::QdiscKind::NOQUEUE, net::QdiscKind::PFIFO_FAST, net::QdiscKind::FQ}[*k];
    if (auto v = r_.integer(nic, "txqueuelen", nkey + ".txqueuelen", false, 1, 1 << 20)) {
        q.txqueuelen = static_cast<std::uint32_t>(*v);
        if (q.kind != net::QdiscKind::PFIFO_FAST)
            r_.error(*nic.get("txqueuelen"), nkey + ".txqueuelen", "txqueuelen is pfifo_fast's limit: it needs qdisc = \"pfifo_fast\"");
    }
    const toml::table* fq = r_.table(nic, "fq", nkey + ".fq", false, "a table [machine.nic.fq]");
    if (!fq) return;
    const std::string fkey = nkey + ".fq";
    if (q.kind != net::QdiscKind::FQ) {
        r_.error(*nic.get("fq"), fkey, "[machine.nic.fq] sets fq's parameters: it needs qdisc = \"fq\"");
        return;
    }
    r_.check_keys(*fq, fkey, "[machine.nic.fq]",
                  {"limit", "flow_limit", "quantum", "initial_quantum", "maxrate", "timer_slack", "pacing"});
    net::FqConfig& f = q.fq;
    if (auto v = r_.integer(*fq, "limit", fkey + ".limit", false, 1, 1 << 20)) f.limit = static_cast<std::uint32_t>(*v);
    if (auto v = r_.integer(*fq, "flow_limit", fkey + ".flow_limit", false, 1, 1 << 20))
        f.flow_limit = static_cast<std::uint32_t>(*v);
    if (auto b = r_.bytes(*fq, "quantum", fkey + ".quantum", false, true)) {
        if (*b > (1U << 20)) r_.error(*fq->get("quantum"), fkey + ".quantum", fmt::format("expected at most 1 MiB (tc's limit), found {}", *b));
        f.quantum = static_cast<std::uint32_t>(*b);
    }
    if (auto b = r_.bytes(*fq, "initial_quantum", fkey + ".initial_quantum", false, false)) {
        if (*b > (1U << 20))
            r_.error(*fq->get("initial_quantum"), fkey + ".initial_quantum", fmt::format("expected at most 1 MiB, found {}", *b));
        f.initial_quantum = static_cast<std::uint32_t>(*b);
    }
    if (const toml::node* n = fq->get("maxrate"))
        if (auto r = r_.rate(*n, fkey + ".maxrate")) f.maxrate = *r / 8;
    if (auto t = r_.duration(*fq, "timer_slack", fkey + ".timer_slack", false, false))
        f.timer_slack_ns = *t / engine::PS_PER_NS;
    if (auto p = r_.boolean(*fq, "pacing", fkey + ".pacing", false)) f.pacing = *p;
}

} // namespace kdsim::scenario::detail
