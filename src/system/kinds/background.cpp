// simd_user, cyclictest and softirq_load (workloads/background.h): the background activity and
// probes of the SIMD experiments.
#include "system/workload_kind.h"
#include "workloads/background.h"

namespace kdsim::system {

namespace {

using workloads::CyclictestWorkload;
using workloads::SimdUserWorkload;
using workloads::SoftirqLoadWorkload;

void read_simd_user(ParamReader& r, SimdUserWorkload& x) {
    if (auto t = r.duration("chunk", false, true)) x.chunk = *t;
}

// A timer period below 1 us: no clockevent device programs one (their min_delta_ns are
// microseconds), and cyclictest's -i takes whole microseconds; such a run would never finish.
void read_timer_period(ParamReader& r, engine::Tick& period) {
    auto t = r.duration("period", false, true);
    if (!t) return;
    if (*t < engine::PS_PER_US)
        r.error("period", "expected a period of at least 1 us (no timer fires more often; cyclictest's -i is in "
                          "whole microseconds)");
    else
        period = *t;
}

void read_cyclictest(ParamReader& r, CyclictestWorkload& x) {
    if (auto v = r.integer("priority", false, 1, 99)) x.priority = static_cast<int>(*v);
    read_timer_period(r, x.period);
    if (auto v = r.integer("loops", false, 0, INT64_MAX)) x.loops = static_cast<std::uint64_t>(*v);
}

void read_softirq_load(ParamReader& r, SoftirqLoadWorkload& x) {
    read_timer_period(r, x.period);
    if (auto t = r.duration("jitter", false, false)) x.jitter = *t;
    if (auto b = r.boolean("hmac", false)) x.hmac = *b;
    if (auto b = r.boolean("cryptd", false)) x.cryptd = *b;
    if (r.has("alg")) read_hash(r, x, false);
    else x.impl = r.hash_impl(x.alg);
    if (auto b = r.bytes("bytes", false, true)) x.bytes = *b;
    if (auto v = r.integer("count", false, 0, INT64_MAX)) x.count = static_cast<std::uint64_t>(*v);
}

// Its NAPI instance joins the CPU's softnet data.
std::unique_ptr<workloads::Workload> build_softirq_load(const SoftirqLoadWorkload& x, BuildContext& b) {
    net::Softnet& sd = b.softnet(x.cpu);
    return std::make_unique<workloads::SoftirqLoad>(b.env, x, b.next_vector(), sd);
}

} // namespace

extern const WorkloadKind simd_user_kind =
    WorkloadKind::of<SimdUserWorkload>("simd_user", {"chunk"}, false, read_simd_user, build_on_cpu<workloads::SimdUser>);

extern const WorkloadKind cyclictest_kind = WorkloadKind::of<CyclictestWorkload>(
    "cyclictest", {"priority", "period", "loops"}, false, read_cyclictest, build_on_cpu<workloads::Cyclictest>);

extern const WorkloadKind softirq_load_kind = WorkloadKind::of<SoftirqLoadWorkload>(
    "softirq_load", {"period", "jitter", "alg", "impl", "bytes", "count", "hmac", "cryptd"}, false, read_softirq_load,
    build_softirq_load);

} // namespace kdsim::system
