// A scenario as typed data: machines with their profile, kernel policies and workloads.
// Built by the scenario layer from TOML (which it alone parses) and consumed by System,
// which assembles the model. Everything here is already validated. Only the layers' small
// config and cost headers are included here, never a model class.
#pragma once

#include "arch/config.h"
#include "crypto/aead.h"
#include "crypto/chunking.h"
#include "crypto/cipher_costs.h"
#include "crypto/skcipher.h"
#include "crypto/hash_costs.h"
#include "devices/dma_costs.h"
#include "devices/swiotlb.h"
#include "devices/pcie_costs.h"
#include "engine/time.h"
#include "kernel/config.h"
#include "kernel/costs.h"
#include "kvm/kvm_costs.h"
#include "net/virtio_offload.h"
#include "mem/config.h"
#include "net/config.h"
#include "net/net_costs.h"

#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <typeindex>
#include <typeinfo>
#include <vector>

namespace kdsim::system {

using engine::Tick;

// A loaded architecture profile (data/profiles/<family>/<part>.toml).
struct Profile {
    std::string name;
    // The shipped file's "data/profiles/<name>.toml", or the absolute path of a private one.
    std::string path;
    std::string sha256; // of the file's bytes, lower-case hex
    // The file is byte for byte the one this build ships under `name` (else it is private: a copy
    // in another folder, an edited one, or one given by path, such as a calibrated profile).
    bool stock = false;
    std::string description;
    arch::Arch arch = arch::Arch::X86_64;
    std::string simd_unit; // "x86-fpu", "arm32-neon", "arm64-fpsimd"
    std::uint64_t clock_hz = 0;
    std::uint64_t cache_line = 0;
    kernel::KernelCosts kernel;
    arch::SimdCosts simd;
    crypto::HashCostTable hash;
    // Optional sections, required by the mechanisms that use them:
    std::optional<net::NetCosts> net;           // [net]: needed by machines with a NIC
    std::optional<net::TcpCosts> tcp;           // [tcp]: needed by TCP streams (and copy figures for UDP)
    std::optional<net::UdpCosts> udp;           // [udp]: needed by UDP streams
    std::optional<net::NetfilterCosts> netfilter; // [netfilter]: needed by [machine.netfilter]
    std::optional<devices::FlushCosts> flush;    // [flush]: rx_flood's flush on a coherent machine
    std::map<std::string, kernel::IrqMaskCosts> irqmask; // [irqmask.<impl>]: alternative masking implementations
    std::optional<devices::DmaCosts> dma;        // [dma]: needed by machines whose NIC uses the DMA API
    crypto::CipherCostTable cipher;              // [cipher.<prim>.<impl>]: needed by tunnels
    std::optional<net::TunnelCosts> tunnel;      // [tunnel]: needed by machines with a tunnel
    std::optional<crypto::SkcipherCosts> skcipher; // [skcipher]: needed by tcrypt's skcipher tests
    std::optional<net::VirtCosts> virt;          // [virt]: needed by hosts of a virtio link
    std::optional<kvm::KvmCosts> kvm;            // [kvm]: needed by hosts of a KVM guest
    std::optional<mem::MemoryConfig> memory;     // [memory.*]: the caches and DRAM (src/mem)
    std::optional<devices::PcieCosts> pcie;      // [pcie]: needed by machines with NICs behind a PCIe link
    net::NetVariation variation;                 // [variation]: run-to-run variation (absent: all 0, none)
};

enum class Mode : std::uint8_t { TIMING, FUNCTIONAL };

// CPUs of a machine at most.
inline constexpr int MAX_CPUS = 64;

// One [[machine.workload]]: the parameters of its kind (a struct of workloads/config.h), held by
// value. The kind that reads, checks and builds it is found from the struct's type
// (system/workload_kind.h), so this header names no kind.
class WorkloadConfig {
public:
    template <class P>
        requires(!std::is_same_v<std::decay_t<P>, WorkloadConfig>)
    WorkloadConfig(P params) : p_(std::make_unique<Holder<P>>(std::move(params))) {}
    WorkloadConfig(const WorkloadConfig& o) : p_(o.p_->clone()) {}
    WorkloadConfig& operator=(const WorkloadConfig& o) {
        if (this != &o) p_ = o.p_->clone();
        return *this;
    }
    WorkloadConfig(WorkloadConfig&&) noexcept = default;
    WorkloadConfig& operator=(WorkloadConfig&&) noexcept = default;

    std::type_index type() const { return p_->type(); }
    template <class P> P* get_if() { return type() == typeid(P) ? &static_cast<Holder<P>&>(*p_).p : nullptr; }
    template <class P> const P* get_if() const {
        return type() == typeid(P) ? &static_cast<const Holder<P>&>(*p_).p : nullptr;
    }
    template <class P> P& get() { return *checked(get_if<P>()); }
    template <class P> const P& get() const { return *checked(get_if<P>()); }

    // What every kind has: its name and CPU; the peer machine of those that have one; the hash
    // algorithm and implementation (absent: the best the CPU has) of those that hash.
    const std::string& name() const { return p_->name(); }
    int cpu() const { return p_->cpu(); }
    const std::string* peer() const { return p_->peer(); }
    struct HashUse {
        crypto::HashAlg alg;
        std::optional<crypto::HashImpl> impl;
    };
    std::optional<HashUse> hash() const { return p_->hash(); }
    void set_name_cpu(std::string name, int cpu) { p_->set_name_cpu(std::move(name), cpu); }

private:
    struct Base {
        virtual ~Base() = default;
        virtual std::unique_ptr<Base> clone() const = 0;
        virtual std::type_index type() const = 0;
        virtual const std::string& name() const = 0;
        virtual int cpu() const = 0;
        virtual const std::string* peer() const = 0;
        virtual std::optional<HashUse> hash() const = 0;
        virtual void set_name_cpu(std::string name, int cpu) = 0;
    };
    template <class P> struct Holder final : Base {
        explicit Holder(P x) : p(std::move(x)) {}
        P p;
        std::unique_ptr<Base> clone() const override { return std::make_unique<Holder>(p); }
        std::type_index type() const override { return typeid(P); }
        const std::string& name() const override { return p.name; }
        int cpu() const override { return p.cpu; }
        const std::string* peer() const override {
            if constexpr (requires { p.peer; }) return &p.peer;
            else return nullptr;
        }
        std::optional<HashUse> hash() const override {
            if constexpr (requires { p.alg; p.impl; }) return HashUse{p.alg, p.impl};
            else return std::nullopt;
        }
        void set_name_cpu(std::string name, int cpu) override {
            p.name = std::move(name);
            p.cpu = cpu;
        }
    };
    template <class P> static P* checked(P* x) {
        if (!x) throw std::bad_cast();
        return x;
    }
    std::unique_ptr<Base> p_;
};

struct MachineConfig {
    std::string name;
    // A network namespace of machine `netns_of` (empty: a machine of its own): it has its own
    // devices, stack, tunnel, sysctls and workloads, and runs on that machine's CPUs (its profile,
    // cpus and kernel settings are copies of that machine's).
    std::string netns_of;
    // A KVM guest of machine `kvm_host` (empty: not a guest): its CPUs are vCPUs, each on a host
    // core of its own (or vcpu_cpus), and its exits and injections cost the host profile's [kvm] figures.
    std::string kvm_host;
    // vcpu_cpus: the host CPU each vCPU's thread runs on, shared with the host's work
    // (kvm/vcpu_thread.h); empty: each vCPU on a host core of its own.
    std::vector<int> vcpu_cpus;
    // vcpu_affinity: the host CPUs every vCPU thread may run on (QEMU's affinity); the threads start
    // on vcpu_cpus and the host's scheduler places them at each wake-up. Empty: pinned.
    std::vector<int> vcpu_affinity;
    Profile profile;
    std::vector<std::string> overrides; // "section.key: new (profile: old)"
    int cpus = 1;
    kernel::KernelConfig kernel;
    arch::SimdPolicy simd_policy = arch::SimdPolicy::X86_PREEMPT;
    bool crypto_simd_disabled_for_test = false; // [machine.kernel]: crypto_simd_usable() always false
    // [machine.kernel] halt_poll_ns of a KVM host (kvm.ko's parameter); absent: the arch's
    // KVM_HALT_POLL_NS_DEFAULT (kvm::default_halt_poll).
    std::optional<Tick> halt_poll_ns;
    // [machine.kernel] sched_mc: CONFIG_SCHED_MC, a scheduler domain for the CPUs' shared cache
    // (cpus_share_cache); absent: off for ARM32 (arch/arm/Kconfig's default, unset in
    // multi_v7_defconfig, imx_v6_v7_defconfig and Debian's armmp), on for the others
    std::optional<bool> sched_mc;
    crypto::Chunking chunking;
    // Hash code and tables count as evicted from the caches when an implementation has not run
    // on a CPU for this long (0: every call is cold); absent: always warm.
    std::optional<Tick> hash_cold_after;
    // The interrupt-masking implementation: empty = the profile's [irqflags]; otherwise the name
    // of one of its [irqmask.<impl>] tables (arm64: daif, pmr_off, pmr).
    std::string irq_masking;
    // [machine.nic]: the rx buffer strategy of the NIC's driver (absent: no DMA API modelled)
    std::optional<net::RxDmaConfig> nic_rx;
    std::optional<net::TxDmaConfig> nic_tx; // the transmit side through the DMA API (tx_dma, driver = "fec")
    std::size_t nic_rx_ring = 128;
    std::size_t nic_rx_tail_batch = 16; // rx descriptors per rx tail write (igb's IGB_RX_BUFFER_WRITE); 0: none
    // [machine.nic.ethN]: one NIC's own driver choices where the machine's NICs differ (a SoC MAC
    // beside a PCIe card): its rx strategy and rx tail batch, over [machine.nic]'s.
    struct NicOverride {
        std::string ifname;
        std::optional<net::RxStrategy> rx_strategy;
        std::optional<std::size_t> rx_tail_batch;
    };
    std::vector<NicOverride> nic_overrides;
    Tick nic_rx_usecs = 0; // interrupt moderation: minimum time between two rx interrupts
    bool nic_gro = true;   // NETIF_F_GRO (ethtool -K gro on|off): on by default, as in Linux
    net::RxMode nic_rx_mode = net::RxMode::NAPI; // [machine.nic] rx_mode: NAPI poll, or netif_rx from the hardirq
    net::PollLoop nic_poll_loop = net::PollLoop::NONE; // [machine.nic] poll_loop: the FEC's loop over IEVENT in its poll
    bool nic_fec_itr = false; // [machine.nic] coalesce = "fec-itr": rx_usecs as the FEC driver programs it
    net::XdpAction nic_xdp = net::XdpAction::NONE; // [machine.nic] xdp: the attached program's verdict
    bool nic_gso = true;   // NETIF_F_GSO (ethtool -K gso): the TCP sender builds skbs of several segments
    bool nic_sg = true;    // NETIF_F_SG: the driver takes page fragments (without: skb_segment copies)
    net::TsoKind nic_tso = net::TsoKind::HARDWARE; // NETIF_F_TSO and who segments (lan743x, igb: hardware)
    net::QdiscConfig nic_qdisc; // each NIC's root qdisc ([machine.nic] qdisc, txqueuelen, [machine.nic.fq])
    // Several NICs (one per Ethernet link of the machine, eth0, eth1, ... in link order): the CPU
    // each one's interrupt is affine to (/proc/irq/N/smp_affinity; absent: CPU 0, as without
    // irqbalance), and the ones behind the machine's PCIe link ([pcie]), whose rx FIFO holds
    // `nic_rx_fifo` bytes while their DMA writes wait for the link.
    std::vector<int> nic_irq_cpus;
    std::vector<std::string> nic_pcie;
    std::size_t nic_rx_fifo = 0;
    // [machine.nic] pause: 802.3x flow control on the receive side of a NIC with an rx FIFO (behind
    // PCIe, or a FEC behind its SoC port): a frame that would overrun the FIFO waits at the partner.
    bool nic_rx_pause = false;
    // [machine.nic] dma_mask: the NICs' DMA mask in bits (dma_set_mask(DMA_BIT_MASK(n)))
    unsigned nic_dma_mask = 64;
    // [machine.dram]: the physical memory, for dma_capable (absent: every mask reaches every buffer)
    std::optional<devices::DramLayout> dram;
    // [machine.kernel] swiotlb and swiotlb_size: the command line's swiotlb= and the pool's size
    devices::SwiotlbMode swiotlb = devices::SwiotlbMode::AUTO;
    std::uint64_t swiotlb_size = devices::IO_TLB_DEFAULT_SIZE;
    // [machine.tunnel]: a WireGuard or ESP tunnel to `peer` carrying this machine's IP traffic
    struct Tunnel {
        net::TunnelKind kind = net::TunnelKind::WIREGUARD;
        crypto::AeadAlg aead = crypto::AeadAlg::CHACHA20_POLY1305;
        std::string peer;
        // ESP: the AEAD behind crypto/simd.c (true) or its inner driver called directly (false);
        // unset: as the kernel registers it on this arch (crypto::select_esp_driver)
        std::optional<bool> simd_wrapper;
    };
    std::optional<Tunnel> tunnel;
    // [machine.netfilter]: an iptables DROP rule at PRE_ROUTING for every IPv4 packet
    std::optional<net::PreroutingDrop> prerouting_drop;
    // [machine.sysctl]: net.ipv4.tcp_* (congestion control, buffer limits)
    net::TcpSysctl tcp;
    std::vector<WorkloadConfig> workloads;
};

// A FEC whose DMA goes through its SoC's port slower than its line (the profile's [net]
// fec_bus_bandwidth, devices/dma_port.h): its frames wait in an rx FIFO.
inline bool fec_on_soc_port(const MachineConfig& mc) {
    return mc.nic_tx && mc.nic_tx->driver == net::NicDriver::FEC && mc.profile.net && mc.profile.net->fec_bus_bandwidth;
}

// The SoC's own MAC (a NIC not behind PCIe) on a profile whose [net] gives fec_rx_fifo and no
// fec_bus_bandwidth: its interconnect keeps up with the line, and frames wait in its rx FIFO only
// for a free descriptor.
inline bool soc_mac_rx_fifo(const MachineConfig& mc, const std::string& ifname) {
    return mc.profile.net && mc.profile.net->fec_rx_fifo && !mc.profile.net->fec_bus_bandwidth &&
           std::find(mc.nic_pcie.begin(), mc.nic_pcie.end(), ifname) == mc.nic_pcie.end();
}

// A link between two machines: an Ethernet cable between their NICs, virtio-net between a KVM
// guest (a) and its host (b), whose vhost worker runs on the host's `vhost_cpu`, or a veth pair
// between two network namespaces of one machine.
struct LinkConfig {
    enum class Kind : std::uint8_t { ETHERNET, VIRTIO, VETH };
    Kind kind = Kind::ETHERNET;
    std::string a, b;          // machine names
    std::uint64_t rate_bps = 1'000'000'000;
    Tick latency = engine::PS_PER_US;
    std::size_t queue = 1000; // frames per direction waiting for the wire or being serialised (txqueuelen + the NIC)
    int vhost_cpu = 0;
    // vhost_affinity: the host CPUs the vhost worker may run on (a 6.1 vhost worker is a kthread,
    // allowed on every housekeeping CPU unless pinned); it starts on vhost_cpu and the host's
    // scheduler places it at each wake-up. Empty: pinned to vhost_cpu
    std::vector<int> vhost_affinity;
    // virtio: the features the device offers (features = { host_tso4 = false, ... }; QEMU's
    // virtio-net-pci with vhost=on offers them all)
    net::VirtioFeatures virtio;
    // A loss pattern on the wire (net/link_drops.h): TCP data segments by index, lost on their
    // first crossing, and every drop_every-th one (0: none)
    std::vector<std::uint64_t> drop;
    std::uint64_t drop_every = 0;
};

struct ScenarioConfig {
    std::string name;
    std::string path;
    std::string description;
    std::uint64_t seed = 1;
    Mode mode = Mode::TIMING;
    Tick max_duration = 60 * engine::PS_PER_S; // the run stops here at the latest
    std::optional<Tick> duration;              // run exactly this long (else: until finite workloads end)
    std::vector<MachineConfig> machines;
    std::vector<LinkConfig> links;
};

} // namespace kdsim::system
