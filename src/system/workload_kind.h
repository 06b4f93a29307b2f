// Workload kinds, each registered once: its name in scenario files, its keys, how it reads them
// (through ParamReader, which the scenario loader implements over its TOML table, so every error
// has file:line:col), and the factory that builds the model on an assembled machine. A kind is
// one file in src/system/kinds/ plus one line in src/system/kinds/kinds.cpp; nothing else names
// it (docs/architecture.md, "Adding a workload").
#pragma once

#include "engine/simulation.h"
#include "kvm/kvm.h"
#include "system/config.h"
#include "workloads/config.h"
#include "workloads/workload.h"

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <typeindex>
#include <vector>

namespace kdsim::net {
class Stack;
class Softnet;
} // namespace kdsim::net

namespace kdsim::workloads {
struct Iperf3End;
}

namespace kdsim::system {

// A configuration System cannot assemble. The scenario loader reports every such input with
// file:line:col, so this is only thrown for a configuration changed after loading: built by hand
// in code, or given another profile (kdsim validate's calibrated one, reported as such).
class ConfigError : public std::logic_error {
public:
    using std::logic_error::logic_error;
};
// Throws ConfigError(what) unless `ok`.
inline void require(bool ok, const std::string& what) {
    if (!ok) throw ConfigError(what);
}

// The MTU of the route between two machines: 1500, or a tunnel's inner MTU when either has one.
std::uint32_t route_mtu(const MachineConfig& a, const MachineConfig& b);

// A boot's module list (module_load's modules_file): per module in load order, the bytes of its
// file and the hash its signature names (modinfo's sig_hashalgo).
struct ModuleList {
    std::vector<std::uint64_t> sizes;
    std::vector<crypto::HashAlg> algs;
};

// The keys of one [[machine.workload]] table. A getter reports a missing required key, a wrong
// type or a value out of range at the key (file:line:col, the full dotted key, what was
// expected) and returns nullopt; an absent optional key is nullopt without an error.
class ParamReader {
public:
    virtual ~ParamReader() = default;
    virtual bool has(std::string_view key) const = 0;
    virtual std::optional<std::string> string(std::string_view key, bool required) = 0;
    virtual std::optional<std::int64_t> integer(std::string_view key, bool required, std::int64_t lo,
                                                std::int64_t hi) = 0;
    virtual std::optional<bool> boolean(std::string_view key, bool required) = 0;
    // `positive`: zero is an error.
    virtual std::optional<engine::Tick> duration(std::string_view key, bool required, bool positive) = 0;
    virtual std::optional<std::uint64_t> bytes(std::string_view key, bool required, bool positive) = 0;
    // An optional bit rate ("1 Gbit/s").
    virtual std::optional<std::uint64_t> rate(std::string_view key) = 0;
    // One of `names`; its index.
    virtual std::optional<std::size_t> choice(std::string_view key, bool required,
                                              const std::vector<std::string_view>& names) = 0;
    // `alg` (sha1, sha256, sha512) and `impl`, which the machine's profile must have.
    virtual std::optional<crypto::HashAlg> hash_alg(bool required) = 0;
    virtual std::optional<crypto::HashImpl> hash_impl(crypto::HashAlg alg) = 0;
    // A size list (inline `sizes` or a `sizes_file`), each size at least `min_size`.
    virtual std::optional<std::vector<std::uint64_t>> sizes(std::uint64_t min_size, std::string_view min_reason) = 0;
    // The modules of `modules_file` in order, each looked up in `sizes_file` by name (each at least
    // `min_size` bytes); a row without a hash column takes `default_alg`.
    virtual std::optional<ModuleList> module_list(crypto::HashAlg default_alg, std::uint64_t min_size,
                                                  std::string_view min_reason) = 0;
    // An optional list of CPU numbers (`affinity = [0, 1, 2]`): each an integer 0..MAX_CPUS-1,
    // each once, at least one; an error at the element (or the key) otherwise. nullopt: absent or
    // reported.
    virtual std::optional<std::vector<int>> cpu_list(std::string_view key) = 0;
    // An error at `key`, or at the table's header when the key is absent.
    virtual void error(std::string_view key, std::string message) = 0;
    // The machine's profile; nullptr when it did not load (its own errors are reported).
    virtual const Profile* profile() const = 0;
};

// What a factory gets: the workload's CPU (env) and access to its machine and, for kinds that
// talk to a peer machine, to the peer. Implemented by System.
class BuildContext {
public:
    explicit BuildContext(workloads::Env e) : env(e) {}
    virtual ~BuildContext() = default;
    workloads::Env env;
    virtual const MachineConfig& machine() const = 0;
    // This machine's network stack (nullptr without a link).
    virtual net::Stack* stack() = 0;
    // The per-CPU softnet data of `cpu` (made on first use on a machine without a device).
    virtual net::Softnet& softnet(int cpu) = 0;
    // A free interrupt vector on this machine.
    virtual unsigned next_vector() = 0;
    // This machine's CPUs by number (a network namespace's are its machine's).
    virtual std::vector<kernel::Cpu*> cpus() = 0;
    // A stream between this machine and `peer`: the peer, its CPUs and the route's MTU (a
    // tunnel's inner MTU when the stream goes through one). nullopt when either machine has no
    // network stack or `peer` names no machine.
    struct Route {
        const MachineConfig* peer = nullptr;
        std::vector<kernel::Cpu*> peer_cpus;
        std::uint32_t mtu = 1500;
    };
    virtual std::optional<Route> route(const std::string& peer) = 0;
    // A stream end on machine `name` (its stack and its profile's [tcp], [udp], [net] figures).
    virtual workloads::Iperf3End end(const std::string& name) = 0;
    // `n` consecutive flow numbers, unique in the scenario (given in build order).
    virtual std::uint32_t take_flows(std::uint64_t n) = 0;
    // When the run stops at the latest.
    virtual engine::Tick stop() const = 0;
    // The VM whose vCPUs this machine's CPUs are (nullptr: no KVM guest).
    virtual kvm::Vm* kvm() = 0;
};

// What a kind with a peer checks across machines, once the loader has read every machine and
// link: its machine, the peer (linked to it by a [[link]]; the loader reports an unlinked peer)
// and the route's MTU.
struct PeerView {
    const MachineConfig& machine;
    const MachineConfig& peer;
    std::uint32_t mtu = 1500;
};

struct WorkloadKind {
    std::string_view name;                // `kind = "..."` in [[machine.workload]]
    std::type_index type;                 // its parameter struct (workloads/config.h)
    std::vector<std::string_view> keys;   // the keys of this kind, beyond kind, name and cpu
    // Built once every machine and link exists (kinds that talk to a peer), after the kinds
    // built with their machine, in registration order (which fixes their flow numbers).
    bool after_machines = false;
    std::function<WorkloadConfig()> defaults;
    std::function<void(ParamReader&, WorkloadConfig&)> read;
    // Errors through the reader, at the offending key; none for kinds without a peer.
    std::function<void(ParamReader&, const WorkloadConfig&, const PeerView&)> check;
    std::function<std::unique_ptr<workloads::Workload>(const WorkloadConfig&, BuildContext&)> build;
    // The flows (connections, socket pairs) a workload of this kind opens, each numbered in the
    // scenario (BuildContext::take_flows), and the key that sets their number; unset: none.
    std::function<std::uint64_t(const WorkloadConfig&)> flows;
    std::string_view flows_key;
    // Errors through the reader that need the workload's own machine (its CPUs, its host); none
    // for most kinds.
    std::function<void(ParamReader&, const WorkloadConfig&, const MachineConfig&)> check_machine{};

    // This kind, with a check against its own machine.
    template <class P> WorkloadKind with_machine_check(void (*f)(ParamReader&, const P&, const MachineConfig&)) && {
        check_machine = [f](ParamReader& r, const WorkloadConfig& w, const MachineConfig& m) { f(r, w.get<P>(), m); };
        return std::move(*this);
    }

    // This kind, opening f(parameters) flows set by `key`.
    template <class P> WorkloadKind with_flows(std::string_view key, std::uint64_t (*f)(const P&)) && {
        flows = [f](const WorkloadConfig& w) { return f(w.get<P>()); };
        flows_key = key;
        return std::move(*this);
    }

    // A kind from its typed reader and factory.
    template <class P>
    static WorkloadKind of(std::string_view name, std::vector<std::string_view> keys, bool after_machines,
                           void (*read)(ParamReader&, P&),
                           std::unique_ptr<workloads::Workload> (*build)(const P&, BuildContext&),
                           void (*check)(ParamReader&, const P&, const PeerView&) = nullptr) {
        WorkloadKind k{name, typeid(P), std::move(keys), after_machines, [] { return WorkloadConfig(P{}); },
                       [read](ParamReader& r, WorkloadConfig& w) { read(r, w.get<P>()); }, nullptr,
                       [build](const WorkloadConfig& w, BuildContext& b) { return build(w.get<P>(), b); },
                       nullptr, {}, nullptr};
        if (check)
            k.check = [check](ParamReader& r, const WorkloadConfig& w, const PeerView& v) { check(r, w.get<P>(), v); };
        return k;
    }
};

// Every kind, in registration order (src/system/kinds/kinds.cpp).
const std::vector<const WorkloadKind*>& workload_kinds();
// The kind named `name`, or nullptr.
const WorkloadKind* find_workload_kind(std::string_view name);
// The kind of a workload's parameters (every parameter struct has one).
const WorkloadKind& workload_kind_of(const WorkloadConfig& w);

// Reads `alg` and then `impl` (checked against the profile) into a kind that hashes.
template <class P> void read_hash(ParamReader& r, P& x, bool required) {
    if (auto a = r.hash_alg(required)) {
        x.alg = *a;
        x.impl = r.hash_impl(*a);
    }
}

// `peer` (required) and `sender_cpu` of a stream that a peer machine sends.
template <class P> void read_peer_sender(ParamReader& r, P& x) {
    if (auto v = r.string("peer", true)) x.peer = *v;
    if (auto v = r.integer("sender_cpu", false, 0, MAX_CPUS - 1)) x.sender_cpu = static_cast<int>(*v);
}
// A sender_cpu is a CPU of the peer (reported at "sender_cpu").
void check_sender_cpu(ParamReader& r, int sender_cpu, const MachineConfig& peer);
// An affinity list (`key`) names CPUs of machine `m` only, `cpu` (read at `cpu_key`) among them.
void check_affinity(ParamReader& r, std::string_view key, const std::vector<int>& affinity, std::string_view cpu_key,
                    int cpu, const MachineConfig& m);
// A datagram of `length` payload bytes fits the route's MTU with its 28 bytes of IPv4 and UDP
// headers: no IP fragmentation is modelled (reported at "length").
void check_datagram_fits(ParamReader& r, std::uint64_t length, std::uint32_t mtu);

// The factory of a kind whose model needs only its CPU and its parameters.
template <class Model, class P> std::unique_ptr<workloads::Workload> build_on_cpu(const P& x, BuildContext& b) {
    return std::make_unique<Model>(b.env, x);
}

} // namespace kdsim::system
