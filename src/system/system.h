// A simulated system: builds the machines of a scenario (CPUs with their kernel model, one
// SIMD unit per CPU, the workloads), runs the engine until the scenario's end condition and
// turns the model's counters into plain results. This is where the layers meet; the model
// below knows nothing of scenarios and the report above knows nothing of the model.
#pragma once

#include "arch/simd.h"
#include "engine/simulation.h"
#include "kernel/cpu.h"
#include "devices/dma.h"
#include "devices/dma_port.h"
#include "devices/pcie.h"
#include "net/link.h"
#include "net/link_drops.h"
#include "net/nic.h"
#include "net/stack.h"
#include "net/tunnel.h"
#include "net/veth.h"
#include "kvm/kvm.h"
#include "net/virtio.h"
#include "net/wire.h"
#include "kernel/workqueue.h"
#include "results/results.h"
#include "system/config.h"
#include "system/kernel_text.h"
#include "system/trace_ftrace.h"
#include "system/trace_json.h"
#include "system/trace_select.h"
#include "system/workload_kind.h"
#include "workloads/workload.h"

#include <memory>
#include <stdexcept>
#include <vector>

namespace kdsim::system {

class System {
public:
    explicit System(const ScenarioConfig& cfg);
    ~System();
    System(const System&) = delete;
    System& operator=(const System&) = delete;

    // Runs the scenario to its end and returns what happened. Call once.
    results::RunResults run();

    // The same in steps: start() once, then advance() as often as wanted, then finish() once.
    // Stepping does not change the results: the engine processes the same events in the same
    // order, only pausing between them.
    void start();
    // Runs until simulated time `t` or the scenario's end, whichever comes first. False once the
    // run has ended (its duration reached, its finite workloads done, or nothing left to do).
    bool advance(engine::Tick t);
    // Ends the run (CPU time accounts, end-of-run checks) and collects its results.
    results::RunResults finish();
    // When the run ends at the latest: its duration, or max_duration.
    engine::Tick end() const;
    // Every workload's progress amounts now (workloads::Workload::progress), keyed by the path
    // of their rate metric ("workload.<name>.<key>").
    std::vector<std::pair<std::string, double>> progress() const;

    engine::Simulation& sim() { return sim_; }

    // Records the run trace of the CPUs `req` selects, keeping what its filter keeps, at most
    // `req.limit` records. Call before run(). False when this build compiled the trace hooks out
    // (KDSIM_TRACE=OFF).
    bool enable_trace(const TraceRequest& req);
    bool enable_trace(std::size_t limit) {
        TraceRequest req;
        req.limit = limit;
        return enable_trace(req);
    }
    // Each machine's name and CPU count, in scenario order.
    std::vector<std::pair<std::string, int>> machine_cpus() const;
    // The scheduler's cpus_share_cache() for CPUs `a` and `b` of machine `name` (sched_mc, the
    // arch's default); throws std::out_of_range for an unknown machine or CPU.
    bool cpus_share_cache(const std::string& name, int a, int b) const;
    // The recorded trace (nullptr unless enable_trace() was called).
    const kernel::TraceRecorder* trace() const { return trace_.get(); }
    // Streams the trace as Chrome Trace Event Format JSON (system/trace_json.h), or in ftrace's
    // text format (system/trace_ftrace.h); nothing without trace().
    void write_trace(const std::function<void(std::string_view)>& out) const;
    void write_trace_ftrace(const std::function<void(std::string_view)>& out) const;

    // Every network device, for a packet tap (kdsim run --pcap): "<machine>-<ifname>", the device,
    // its machine's and its link peer's addresses (net/wire.h), its tunnel's channel and side.
    struct Device {
        std::string name;
        net::NetDevice* device = nullptr;
        net::wire::Endpoint self, peer;
        const net::TunnelChannel* channel = nullptr;
        int side = 0;
    };
    std::vector<Device> devices();

private:
    class Builder;
    struct Machine {
        const MachineConfig* cfg = nullptr;
        // A network namespace's machine, whose CPUs, SIMD units, softnet and backlogs it uses
        // (its own vectors of those stay empty); nullptr for a machine of its own.
        Machine* host = nullptr;
        std::vector<std::unique_ptr<kernel::Cpu>> cpus;
        std::unique_ptr<kernel::RootDomain> rd; // its CPUs' sched_domain, with two or more CPUs
        std::vector<std::unique_ptr<arch::SimdUnit>> simd;
        std::vector<std::unique_ptr<crypto::HashCache>> caches;
        std::unique_ptr<devices::DmaPlatform> dma; // when the NIC's rx goes through the DMA API
        std::unique_ptr<mem::MemorySystem> memory; // when the profile's datapath runs on its [memory]
        std::unique_ptr<KernelTextFetch> text;     // with `memory`, when the profile has an L1I
        std::unique_ptr<net::SkbSlab> skb_slab;    // its linear skb heads, with `memory`
        std::unique_ptr<net::PagePlacement> pages; // its sockets' buffer pages in DRAM, with `memory`
        std::vector<std::unique_ptr<net::Softnet>> softnet; // per CPU, on networked machines
        std::vector<std::unique_ptr<net::Backlog>> backlog; // per CPU, on machines with a veth pair or a netif_rx NIC
        std::vector<std::unique_ptr<net::NetTx>> net_tx;    // per CPU, on machines with a qdisc layer
        std::size_t wg_peers = 0; // WireGuard peers made on its CPUs so far (their internal ids)
        std::unique_ptr<kvm::Vm> vm; // a KVM guest's: its CPUs are the VM's vCPUs
        std::unique_ptr<net::NetDevice> device; // NIC (eth0), virtio-net or tap
        // The NICs after the first (eth1, eth2, ...: one per further Ethernet link) and the
        // machine at the other end of each one's link.
        std::vector<std::unique_ptr<net::Nic>> more_nics;
        std::vector<const Machine*> more_peers;
        std::unique_ptr<devices::PcieLink> pcie; // the PCIe link the [machine.nic] pcie devices share
        // each FEC's port on a SoC interconnect slower than its line ([net] fec_bus_bandwidth)
        std::vector<std::unique_ptr<devices::DmaPort>> dma_ports;
        std::unique_ptr<net::Stack> stack;
        std::unique_ptr<net::TunnelBase> tunnel;
        net::TunnelChannel* channel = nullptr;
        int channel_side = 0;
        const Machine* link_peer = nullptr; // the machine at the other end of its device's link
        unsigned next_vector = kernel::Cpu::FIRST_DEVICE_VECTOR;
        kernel::KernelCosts costs;     // the profile's, with the masking implementation applied
        std::vector<std::unique_ptr<workloads::Workload>> workloads;
        std::vector<std::pair<std::string, const net::Vhost*>> vhosts; // workers on this host, by guest
        stats::Findings findings; // what its CPUs caught
    };

    results::RunResults collect() const;
    // Every model object registers its counters under its place in the machine (paths in
    // docs/report-format.md).
    void register_stats();
    // The counters of a machine's NICs after the first and of its PCIe link (build_nic.cpp).
    static void register_nic_stats(const Machine& m, const stats::Scope& machine);
    // `numbers` (host CPU numbers, checked by the loader) as `host`'s CPUs; `what` names the key
    // and its owner in the error for a number that is none.
    static std::vector<kernel::Cpu*> host_cpus(const Machine& host, const std::vector<int>& numbers, const std::string& what);
    void build_network();
    // The machine's next NIC (eth0, eth1, ...) for an Ethernet link: its IRQ on the CPU the
    // affinity gives, its DMA API, memory, PCIe link and GRO/GSO/TSO features as configured;
    // the first one gets the stack, the others join it (build_nic.cpp).
    net::Nic& add_nic(Machine& m);
    void add_qdisc(Machine& m, net::Nic& nic);
    // The machine of that name, or nullptr (names are unique: the loader checks).
    Machine* machine_named(const std::string& name);
    // The machine whose CPUs `m` runs on: its host for a network namespace, else itself.
    static Machine& hw(Machine& m) { return m.host ? *m.host : m; }
    // The per-CPU backlogs of a box (not a namespace: hw()), made at first use with its profile's
    // [net] process_backlog, which the caller has checked.
    std::vector<std::unique_ptr<net::Backlog>>& backlogs(Machine& box);
    // A veth pair between two namespaces of one machine, each end its namespace's device.
    void build_veth(Machine& a, Machine& b);
    // The box's memory hierarchy and skb slab, made at first use, when its profile's datapath runs
    // on its [memory] (a [memory].copy figure); nullptr otherwise.
    mem::MemorySystem* datapath_memory(Machine& box);

    const ScenarioConfig& cfg_;
    engine::Simulation sim_;
    workloads::Completion completion_;
    std::vector<Machine> machines_;
    std::vector<std::unique_ptr<net::Link>> links_;
    // each link's loss pattern (when it has one), with the machine and device of its first end
    struct LinkDrops {
        std::unique_ptr<net::SegmentDrops> drops;
        std::string machine, ifname;
    };
    std::vector<LinkDrops> link_drops_;
    std::vector<std::unique_ptr<net::Vhost>> vhosts_;
    std::vector<std::unique_ptr<net::TunnelChannel>> channels_;
    std::unique_ptr<kernel::TraceRecorder> trace_;
    TraceInfo trace_info_;
    std::uint64_t next_flow_ = 0; // flow numbers of the streams, given in build order
    bool ended_ = false;
    stats::Registry stats_;
};

} // namespace kdsim::system
