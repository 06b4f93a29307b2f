#include "validate/twin.h"

#include "results/lookup.h"
#include "scenario/load.h"
#include "system/system.h"
#include "workloads/config.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <type_traits>

namespace kdsim::validate {

namespace fs = std::filesystem;

namespace {

// A packet twin: one machine, one rx_flood workload with the real configuration's algorithm,
// payload, buffer size, flush, cryptd hand-off (and its queue bound), NAPI weight and budget, and
// a fixed duration (the ring is always full: the run has no end of its own).
std::optional<std::string> rx_mismatch(const Config& c, const system::ScenarioConfig& s) {
    const RxConfig& rx = c.rx;
    if (s.machines.size() != 1) return fmt::format("expected one machine, found {}", s.machines.size());
    const system::MachineConfig& m = s.machines[0];
    const auto* rx_flood = m.workloads.size() == 1 ? m.workloads[0].get_if<workloads::RxFloodWorkload>() : nullptr;
    if (!rx_flood) return std::string("expected exactly one workload, of kind rx_flood");
    const auto& w = *rx_flood;
    if (w.alg != rx.alg)
        return fmt::format("alg is \"{}\", the real run decrypts {}", crypto::to_string(w.alg), crypto::to_string(rx.alg));
    if (w.payload != rx.payload) return fmt::format("payload is {}, the real run's is {} bytes", w.payload, rx.payload);
    if (w.buffer != rx.buffer_size)
        return fmt::format("buffer is {}, the real run's rx buffers are {} bytes", w.buffer, rx.buffer_size);
    const workloads::RxFlush want = rx.flush == Flush::NONE          ? workloads::RxFlush::NONE
                                    : rx.flush == Flush::FULL_BUFFER ? workloads::RxFlush::FULL_BUFFER
                                                                     : workloads::RxFlush::RECEIVED_LENGTH;
    if (w.flush != want) return fmt::format("flush differs: the real run flushes {}", to_string(rx.flush));
    if (w.cryptd != rx.cryptd)
        return fmt::format("cryptd = {}, the real run {} a cryptd-like worker", w.cryptd ? "true" : "false",
                           rx.cryptd ? "hands each packet to" : "has no");
    if (rx.cryptd && w.cryptd_qlen != rx.cryptd_qlen)
        return fmt::format("cryptd_qlen is {}, the real queue holds {}", w.cryptd_qlen, rx.cryptd_qlen);
    if (w.weight != rx.weight || w.budget != rx.budget)
        return fmt::format("expected weight = {} and budget = {}, found {} and {}", rx.weight, rx.budget, w.weight,
                           w.budget);
    if (!s.duration) return std::string("expected a [scenario] duration (the flood has no end of its own)");
    return std::nullopt;
}

} // namespace

std::optional<std::string> twin_mismatch(const Config& c, const system::ScenarioConfig& s) {
    if (c.kind != Kind::HASH) return rx_mismatch(c, s);
    const HashConfig& h = c.hash;
    if (s.machines.size() != 1) return fmt::format("expected one machine, found {}", s.machines.size());
    const system::MachineConfig& m = s.machines[0];
    if (m.kernel.preempt != kernel::PreemptModel::VOLUNTARY) return std::string("expected preempt = \"voluntary\"");
    if (m.simd_policy != arch::SimdPolicy::X86_PREEMPT) return std::string("expected simd_policy = \"x86-preempt-disable\"");
    const crypto::ChunkPolicy want = h.policy == Bracketing::FIXED ? crypto::ChunkPolicy::FIXED : crypto::ChunkPolicy::YIELD;
    if (m.chunking.policy != want || m.chunking.bytes != h.chunk)
        return fmt::format("expected simd_chunking = \"{}\" with simd_chunk_bytes = {}, found \"{}\" with {}",
                           crypto::to_string(want), h.chunk, crypto::to_string(m.chunking.policy), m.chunking.bytes);
    const workloads::ModuleLoadWorkload* load = nullptr;
    const workloads::CyclictestWorkload* probe = nullptr;
    for (const system::WorkloadConfig& w : m.workloads) {
        if (auto* x = w.get_if<workloads::ModuleLoadWorkload>(); x && !load) load = x;
        else if (auto* y = w.get_if<workloads::CyclictestWorkload>(); y && !probe) probe = y;
        else return std::string("expected exactly one module_load and one cyclictest workload");
    }
    if (!load || !probe) return std::string("expected a module_load and a cyclictest workload");
    if (load->alg != crypto::HashAlg::SHA256) return std::string("the module_load must hash with sha256");
    if (load->sizes != h.sizes)
        return fmt::format("the module_load sizes differ from the real list ({} sizes, {} bytes in all)", h.sizes.size(),
                           [&] {
                               std::uint64_t t = 0;
                               for (auto x : h.sizes) t += x;
                               return t;
                           }());
    if (load->repeat < h.passes)
        return fmt::format("the module_load repeats the list {} times, the real run {} times", load->repeat, h.passes);
    if (load->signature_trailer != 0 || load->blacklist_hash || load->user_time != 0)
        return std::string("the module_load must hash whole buffers once, with no user time "
                           "(signature_trailer = 0, blacklist_hash = false, user_time = \"0 us\")");
    if (probe->period != static_cast<engine::Tick>(h.probe_period_ns) * 1000 || probe->priority != h.probe_priority ||
        probe->loops != 0)
        return fmt::format("expected a cyclictest with period {} us, priority {}, loops = 0",
                           h.probe_period_ns / 1000, h.probe_priority);
    if (load->cpu != probe->cpu) return std::string("the probe must run on the hashing task's CPU");
    return std::nullopt;
}

std::optional<std::string> replace_profile(system::ScenarioConfig& s, const system::Profile& p) {
    for (system::MachineConfig& m : s.machines) {
        if (!m.overrides.empty())
            return fmt::format("machine '{}' overrides profile figures ({}); validate replaces the whole profile "
                               "with the calibrated one and would lose them",
                               m.name, m.overrides.front());
        for (const system::WorkloadConfig& w : m.workloads)
            if (const auto use = w.hash(); use && use->impl && !p.hash.has(use->alg, *use->impl))
                return fmt::format("workload '{}' names hash implementation {}.{}, which profile {} lacks", w.name(),
                                   crypto::to_string(use->alg), crypto::to_string(*use->impl), p.name);
        m.profile = p;
    }
    return std::nullopt;
}

namespace {

std::optional<double> metric(const results::WorkloadResult& w, std::string_view key) {
    for (const auto& m : w.metrics)
        if (m.key == key) return m.value;
    return std::nullopt;
}

const results::MachineResult* machine_of(const results::RunResults& r, const std::string& name) {
    for (const auto& m : r.machines)
        if (m.name == name) return &m;
    return r.machines.empty() ? nullptr : &r.machines.front();
}

double longest_bracket_us(const results::MachineResult* m) {
    double l = 0;
    if (m)
        for (const auto& c : m->cpus) l = std::max(l, c.simd.longest_bracket_us);
    return l;
}

// Packet twins: the workload reporting packets_per_s (preferably one named "rx"), see
// docs/validation.md for the contract.
std::optional<std::string> read_packets(const Config& c, const results::RunResults& r, Prediction& p) {
    const results::WorkloadResult* w = nullptr;
    for (const auto& x : r.workloads)
        if (metric(x, "packets_per_s") && (!w || x.name == "rx")) w = &x;
    if (!w) return std::string("the twin reports no packets_per_s metric (docs/validation.md says what validate reads)");
    const double pps = *metric(*w, "packets_per_s");
    p.values[M_THROUGHPUT] = pps;
    p.values[M_PAYLOAD] = pps * static_cast<double>(c.rx.payload) * 8 / 1e6;
    const results::MachineResult* m = machine_of(r, w->machine);
    if (auto cpp = metric(*w, "cycles_per_packet")) {
        p.values[M_CYCLES_PER_PACKET] = *cpp;
    } else {
        std::optional<double> pkts;
        for (const char* k : {"packets_processed", "packets_decrypted", "packets"})
            if (!pkts) pkts = metric(*w, k);
        if (pkts && *pkts > 0 && m) {
            double busy_us = 0;
            for (const auto& cpu : m->cpus) busy_us += cpu.busy_us;
            p.values[M_CYCLES_PER_PACKET] = busy_us * static_cast<double>(m->clock_hz) / 1e6 / *pkts;
        }
    }
    // A twin without kernel-mode SIMD brackets (rx_flood decrypts in user space) predicts no
    // longest bracket; the row is left uncompared rather than predicted as 0.
    if (const double l = longest_bracket_us(m); l > 0) p.values[M_LONGEST_BRACKET] = l;
    return std::nullopt;
}

std::optional<std::string> read_hash(const system::ScenarioConfig& s, const results::RunResults& r, Prediction& p) {
    std::string load, probe;
    for (const system::WorkloadConfig& w : s.machines.at(0).workloads) {
        if (w.get_if<workloads::ModuleLoadWorkload>()) load = w.name();
        if (w.get_if<workloads::CyclictestWorkload>()) probe = w.name();
    }
    auto get = [&](const std::string& wl, const char* key) { return results::find_metric(r, wl, key); };
    auto tp = get(load, "throughput_mb_per_s");
    auto p50 = get(probe, "latency_p50_us"), p99 = get(probe, "latency_p99_us"), pmax = get(probe, "latency_max_us");
    if (!tp || !p50 || !p99 || !pmax) return std::string("the twin's results lack the module_load throughput or the probe latencies");
    p.values[M_THROUGHPUT] = *tp;
    p.values[M_LONGEST_BRACKET] = longest_bracket_us(r.machines.empty() ? nullptr : &r.machines.front());
    p.values[M_PROBE_P50] = *p50;
    p.values[M_PROBE_P99] = *p99;
    p.values[M_PROBE_MAX] = *pmax;
    return std::nullopt;
}

} // namespace

Prediction simulate_twin(const Config& c, const fs::path& scenario_file, const fs::path& root,
                         const system::Profile& profile) {
    Prediction p;
    p.scenario = scenario_file.generic_string();
    std::error_code ec;
    if (!fs::is_regular_file(scenario_file, ec)) {
        p.reason = p.scenario + " does not exist yet";
        return p;
    }
    auto t0 = std::chrono::steady_clock::now();
    try {
        scenario::LoadOptions lo;
        if (!root.empty()) lo.root = root;
        system::ScenarioConfig s = scenario::load_scenario(scenario_file, lo);
        if (auto why = twin_mismatch(c, s)) {
            p.reason = p.scenario + " differs from the real configuration: " + *why;
            return p;
        }
        if (auto why = replace_profile(s, profile)) {
            p.reason = p.scenario + ": " + *why;
            return p;
        }
        system::System sys(s);
        results::RunResults r = sys.run();
        p.simulated_s = r.simulated_us / 1e6;
        if (r.failed) {
            std::string why;
            for (const auto& f : r.failures) why += (why.empty() ? "" : "; ") + f;
            p.reason = p.scenario + ": the simulation found a violated invariant: " + why;
            return p;
        }
        std::optional<std::string> missing = c.kind == Kind::HASH ? read_hash(s, r, p) : read_packets(c, r, p);
        if (missing) {
            p.values.clear();
            p.reason = p.scenario + ": " + *missing;
            return p;
        }
        p.ok = true;
    } catch (const scenario::InputError& e) {
        p.reason = p.scenario + " does not load: " +
                   (e.diagnostics.empty() ? std::string("?") : e.diagnostics.front().str()) +
                   (e.diagnostics.size() > 1 ? fmt::format(" (and {} more)", e.diagnostics.size() - 1) : "");
    } catch (const system::ConfigError& e) {
        p.reason = p.scenario + " cannot be assembled with the calibrated profile: " + e.what();
    } catch (const std::exception& e) {
        p.reason = p.scenario + ": the simulation failed: " + e.what();
    }
    p.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return p;
}

} // namespace kdsim::validate
