// A sweep's points loaded and run on threads (runner/sweep.h): each point is a normal run on a
// thread of its own (a System per point; the engine's coroutine frame pool is per thread).
#include "runner/sweep.h"

#include "report/report.h"
#include "system/system.h"

#include <fmt/format.h>

#include <atomic>
#include <chrono>
#include <map>
#include <mutex>
#include <set>
#include <thread>

namespace kdsim::runner {

SweepDefinition define_sweep(const std::filesystem::path& scenario, const scenario::LoadOptions& base,
                             std::vector<scenario::SweepAxis> axes, bool list,
                             const std::optional<std::vector<std::uint64_t>>& seeds) {
    SweepDefinition d;
    if (!axes.empty()) d.spec.axes = std::move(axes);
    else if (auto t = scenario::read_sweep(scenario, base.text)) d.spec = std::move(*t);
    if (list) d.spec.list = true;
    if (seeds) d.spec.seeds = *seeds;
    else if (base.seed_override) d.spec.seeds.clear(); // one seed for every point, as a single run would take it
    d.points = scenario::expand_sweep(d.spec, "kdsim sweep");
    return d;
}

std::vector<scenario::Diagnostic> load_points(const std::filesystem::path& scenario, const scenario::LoadOptions& base,
                                              const SweepDefinition& d, unsigned jobs, std::vector<Loaded>& loaded) {
    struct Count {
        std::size_t points = 0, failed = 0;
        std::vector<scenario::Diagnostic> first;
    };
    std::map<std::string, Count> by_origin;
    std::vector<scenario::Diagnostic> first_failure;
    std::size_t failures = 0;
    loaded.resize(d.points.size());
    std::vector<std::vector<scenario::Diagnostic>> errors(d.points.size());
    parallel_for(d.points.size(), jobs, [&](std::size_t i) {
        const scenario::SweepPoint& p = d.points[i];
        scenario::LoadOptions lo = base;
        lo.assignments.insert(lo.assignments.end(), p.set.begin(), p.set.end());
        if (p.seed) lo.seed_override = p.seed;
        try {
            loaded[i].cfg = std::make_unique<system::ScenarioConfig>(scenario::load_scenario(scenario, lo));
        } catch (const scenario::InputError& e) {
            loaded[i].error = e.what();
            errors[i] = e.diagnostics;
        }
    });
    for (std::size_t i = 0; i < d.points.size(); ++i) { // in point order: the same messages whatever -j
        const scenario::SweepPoint& p = d.points[i];
        for (const auto& a : p.set) ++by_origin[a.origin].points;
        if (loaded[i].cfg) continue;
        if (failures++ == 0) first_failure = errors[i];
        std::set<std::string> hit;
        for (const auto& diag : errors[i]) hit.insert(diag.file);
        for (const auto& a : p.set)
            if (hit.count(a.origin)) {
                Count& c = by_origin[a.origin];
                if (c.failed++ == 0)
                    for (const auto& diag : errors[i])
                        if (diag.file == a.origin) c.first.push_back(diag);
            }
    }
    std::vector<scenario::Diagnostic> bad;
    for (const auto& axis : d.spec.axes) // in the order given
        for (const auto& v : axis.values)
            if (const Count& c = by_origin[v.origin]; c.points && c.failed == c.points)
                bad.insert(bad.end(), c.first.begin(), c.first.end());
    if (bad.empty() && failures == d.points.size()) return first_failure; // the scenario itself
    return bad;
}

namespace {

Outcome run_one(std::size_t index, const scenario::SweepPoint& point, Loaded& loaded) {
    Outcome o;
    o.index = index;
    if (!loaded.cfg) {
        o.status = "failed";
        o.message = loaded.error;
        return o;
    }
    try {
        results::RunResults r;
        const auto t0 = std::chrono::steady_clock::now();
        {
            system::System sys(*loaded.cfg);
            r = sys.run();
        }
        o.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        for (const scenario::Assignment& a : point.set) r.sweep_point.emplace_back(a.key, a.value);
        o.json = report::to_json_text(r);
        o.status = r.failed ? "findings" : "ok";
        for (std::size_t i = 0; i < r.failures.size(); ++i) o.message += (i ? "; " : "") + r.failures[i];
        for (const auto& w : r.workloads)
            for (const auto& m : w.metrics)
                o.metrics.push_back({w.name + "." + m.key, fmt::format("{}", m.value), m.unit});
        o.simulated_us = r.simulated_us;
        o.events = r.events;
    } catch (const system::ConfigError& e) {
        o.status = "failed";
        o.message = std::string("error: ") + e.what();
    } catch (const std::exception& e) {
        o.status = "failed";
        o.message = std::string("internal error: ") + e.what();
    }
    loaded.cfg.reset();
    return o;
}

} // namespace

void parallel_for(std::size_t n, unsigned jobs, const std::function<void(std::size_t)>& fn) {
    std::atomic<std::size_t> next{0};
    auto worker = [&] {
        for (std::size_t k; (k = next.fetch_add(1)) < n;) fn(k);
    };
    jobs = std::max(1u, std::min<unsigned>(jobs, static_cast<unsigned>(std::max<std::size_t>(1, n))));
    std::vector<std::thread> threads;
    for (unsigned t = 1; t < jobs; ++t) threads.emplace_back(worker);
    worker();
    for (auto& t : threads) t.join();
}

std::vector<Outcome> run_points(const std::vector<scenario::SweepPoint>& points, std::vector<Loaded>& loaded,
                                const std::vector<std::size_t>& mine, unsigned jobs,
                                const std::function<void(const Outcome&)>& done) {
    std::vector<Outcome> out(mine.size());
    std::mutex mu;
    parallel_for(mine.size(), jobs, [&](std::size_t k) {
        out[k] = run_one(mine[k], points[mine[k]], loaded[mine[k]]);
        std::lock_guard lock(mu);
        if (done) done(out[k]);
    });
    return out;
}

std::vector<std::string> metric_columns(const std::vector<Outcome>& outcomes, const std::vector<std::string>& asked) {
    if (!asked.empty()) return asked;
    std::vector<std::string> cols;
    for (const Outcome& o : outcomes) {
        if (o.status == "failed") continue;
        std::string last_workload;
        for (const auto& m : o.metrics) {
            std::string workload = m[0].substr(0, m[0].find('.'));
            if (workload != last_workload) cols.push_back(m[0]);
            last_workload = workload;
        }
        break;
    }
    return cols;
}

} // namespace kdsim::runner
