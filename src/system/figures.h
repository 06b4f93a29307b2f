// Every figure of an architecture profile, declared once: one table per cost struct with each
// figure's key, unit, one-line description and the member it fills (engine/figure.h). The
// scenario layer reads, checks and overrides profiles through these tables only; the
// static_asserts below fail to compile when a struct gains a member that its table does not
// name (and a test checks that no member is named twice).
#pragma once

#include "engine/figure.h"
#include "system/config.h"

#include <array>

namespace kdsim::system {

using engine::Figure;
using engine::Unit;
using arch::SimdCosts;
using crypto::CipherCost;
using crypto::HashCost;
using devices::DmaCosts;
using devices::FlushCosts;
using devices::PcieCosts;
using kernel::IrqMaskCosts;
using kernel::KernelCosts;
using kernel::WorkqueueCosts;
using net::NetCosts;
using net::NetfilterCosts;
using net::TcpCosts;
using net::TunnelCosts;
using net::UdpCosts;
using net::VirtCosts;
using kvm::KvmCosts;
using net::NetVariation;

// [cpu]
inline constexpr std::array<Figure<Profile>, 2> CPU_FIGURES = {{
    {"cpu", "clock", Unit::HZ, "the core clock the cycle figures are counted in", &Profile::clock_hz, true},
    {"cpu", "cache_line", Unit::BYTES, "the data cache line size", &Profile::cache_line, true},
}};

// [sched], [irq], [irqflags], [bh]: the generic kernel model (kernel/costs.h)
inline constexpr std::array<Figure<KernelCosts>, 18> KERNEL_FIGURES = {{
    {"sched", "context_switch", Unit::CYCLES, "__schedule + switch_to, no FPU work", &KernelCosts::context_switch},
    {"sched", "wakeup", Unit::CYCLES, "try_to_wake_up on the waker up to ttwu_queue: pi_lock, state test, select_task_rq", &KernelCosts::wakeup},
    {"sched", "wakeup_activate", Unit::CYCLES, "ttwu_do_activate: rq lock, update_rq_clock, enqueue, check_preempt_curr (the waker's, or the target's from its wake_list)", &KernelCosts::wakeup_activate},
    {"sched", "tick", Unit::CYCLES, "scheduler_tick in the timer interrupt", &KernelCosts::tick},
    {"sched", "cond_resched", Unit::CYCLES, "a cond_resched() call that does not reschedule", &KernelCosts::cond_resched},
    {"sched", "load_balance", Unit::CYCLES, "one load_balance() pulling to an idle CPU: update_blocked_averages, find_busiest_group/queue, detach_tasks, attach", &KernelCosts::load_balance},
    {"irq", "entry", Unit::CYCLES, "interrupt entry: vector, irq_enter, handler dispatch", &KernelCosts::irq_entry},
    {"irq", "exit", Unit::CYCLES, "interrupt exit: irq_exit_rcu, return from the exception", &KernelCosts::irq_exit},
    {"irq", "timer_handler", Unit::CYCLES, "hrtimer_interrupt: expire one timer", &KernelCosts::timer_handler},
    {"irq", "softirq_round", Unit::CYCLES, "__do_softirq overhead per restart round", &KernelCosts::softirq_round},
    {"irq", "guest_timer_delivery", Unit::CYCLES, "a guest's timer interrupt: VM exit, injection, re-entry (guests only)", &KernelCosts::guest_timer_delivery},
    {"irq", "device_delivery", Unit::NS, "a device interrupt from the device raising it (MSI write, wired line) until the CPU can take it (NICs)", &KernelCosts::device_irq_delivery},
    {"irqflags", "local_irq_disable", Unit::CYCLES, "local_irq_disable()", &KernelCosts::local_irq_disable},
    {"irqflags", "local_irq_enable", Unit::CYCLES, "local_irq_enable()", &KernelCosts::local_irq_enable},
    {"irqflags", "local_irq_save", Unit::CYCLES, "local_irq_save()", &KernelCosts::local_irq_save},
    {"irqflags", "local_irq_restore", Unit::CYCLES, "local_irq_restore()", &KernelCosts::local_irq_restore},
    {"bh", "local_bh_disable", Unit::CYCLES, "local_bh_disable()", &KernelCosts::local_bh_disable},
    {"bh", "local_bh_enable", Unit::CYCLES, "local_bh_enable() without pending softirqs", &KernelCosts::local_bh_enable},
}};
// The four masking extras of KernelCosts (irq_entry_extra, exception_return_extra,
// soft_mask_hit, soft_mask_replay) come from the machine's masking implementation, not from
// these sections.
static_assert(sizeof(KernelCosts) == engine::figures_bytes(KERNEL_FIGURES) + 4 * sizeof(engine::Cycles));

// [irqmask.<impl>]: an interrupt-masking implementation (System applies it over KernelCosts)
inline constexpr std::array<Figure<IrqMaskCosts>, 6> IRQMASK_FIGURES = {{
    {"", "local_irq_disable", Unit::CYCLES, "local_irq_disable() with this implementation", &IrqMaskCosts::local_irq_disable},
    {"", "local_irq_enable", Unit::CYCLES, "local_irq_enable() with this implementation", &IrqMaskCosts::local_irq_enable},
    {"", "local_irq_save", Unit::CYCLES, "local_irq_save() with this implementation", &IrqMaskCosts::local_irq_save},
    {"", "local_irq_restore", Unit::CYCLES, "local_irq_restore() with this implementation", &IrqMaskCosts::local_irq_restore},
    {"", "irq_entry_extra", Unit::CYCLES, "extra work on every exception entry", &IrqMaskCosts::irq_entry_extra},
    {"", "exception_return_extra", Unit::CYCLES, "extra work on every exception return", &IrqMaskCosts::exception_return_extra},
}};
static_assert(sizeof(IrqMaskCosts) == engine::figures_bytes(IRQMASK_FIGURES));

// [simd] (arch/config.h); `unit` is a name, read apart; the last two are optional (PowerPC SPE)
inline constexpr std::array<Figure<SimdCosts>, 7> SIMD_FIGURES = {{
    {"", "state_size", Unit::BYTES, "the user SIMD state a save writes", &SimdCosts::state_size},
    {"", "begin", Unit::CYCLES, "kernel_*_begin bookkeeping without a save", &SimdCosts::begin},
    {"", "end", Unit::CYCLES, "kernel_*_end bookkeeping", &SimdCosts::end},
    {"", "save", Unit::CYCLES, "saving live user state (XSAVE, vfp_save_state, fpsimd_save_state)", &SimdCosts::save},
    {"", "restore", Unit::CYCLES, "restoring it (XRSTOR, vfp_load_state, fpsimd load)", &SimdCosts::restore},
    {"", "unavailable_trap", Unit::CYCLES, "SPE-unavailable exception taken from kernel mode", &SimdCosts::unavailable_trap},
    {"", "kernel_use_warning", Unit::CYCLES, "its printk(\"SPE used in kernel ...\") into the log", &SimdCosts::kernel_use_warning},
}};
static_assert(sizeof(SimdCosts) == engine::figures_bytes(SIMD_FIGURES));

// [hash.<alg>.<impl>] (crypto/hash_costs.h); cold_start is optional (hash_cold_after)
inline constexpr std::array<Figure<HashCost>, 3> HASH_FIGURES = {{
    {"", "cycles_per_byte", Unit::CYCLES_PER_BYTE, "per byte hashed", &HashCost::cycles_per_byte},
    {"", "cycles_per_call", Unit::CYCLES, "per call: set-up, padding, the final block", &HashCost::cycles_per_call},
    {"", "cold_start", Unit::CYCLES, "extra for a call whose code and tables are not in the caches", &HashCost::cold_start},
}};
static_assert(sizeof(HashCost) == engine::figures_bytes(HASH_FIGURES));

// [cipher.<prim>.<impl>] (crypto/cipher_costs.h)
inline constexpr std::array<Figure<CipherCost>, 2> CIPHER_FIGURES = {{
    {"", "cycles_per_byte", Unit::CYCLES_PER_BYTE, "per byte of one pass", &CipherCost::cycles_per_byte},
    {"", "cycles_per_call", Unit::CYCLES, "per pass: key schedule, set-up, the final block", &CipherCost::cycles_per_call},
}};
static_assert(sizeof(CipherCost) == engine::figures_bytes(CIPHER_FIGURES));

// [skcipher] (crypto/skcipher.h)
inline constexpr std::array<Figure<crypto::SkcipherCosts>, 3> SKCIPHER_FIGURES = {{
    {"", "request", Unit::CYCLES, "crypto_skcipher_encrypt/decrypt to the driver and skcipher_walk_virt's first step", &crypto::SkcipherCosts::request},
    {"", "walk_step", Unit::CYCLES, "skcipher_walk_done + skcipher_walk_next, per further walk step", &crypto::SkcipherCosts::walk_step},
    {"", "simd_wrapper", Unit::CYCLES, "crypto/simd.c simd_skcipher_encrypt/decrypt staying synchronous: the subrequest to the inner driver", &crypto::SkcipherCosts::simd_wrapper},
}};
static_assert(sizeof(crypto::SkcipherCosts) == engine::figures_bytes(SKCIPHER_FIGURES));

// [net] (net/net_costs.h)
inline constexpr std::array<Figure<NetCosts>, 42> NET_FIGURES = {{
    {"", "syscall", Unit::CYCLES, "system call entry + exit", &NetCosts::syscall},
    {"", "sock_sendmsg", Unit::CYCLES, "packet_sendmsg: skb alloc, copy from user", &NetCosts::sock_sendmsg},
    {"", "dev_queue_xmit", Unit::CYCLES, "__dev_queue_xmit + qdisc, excluding the driver", &NetCosts::dev_queue_xmit},
    {"", "driver_xmit", Unit::CYCLES, "ndo_start_xmit: descriptor, doorbell", &NetCosts::driver_xmit},
    {"", "driver_rx_irq", Unit::CYCLES, "the device's interrupt handler: ack, mask, napi_schedule", &NetCosts::driver_rx_irq},
    {"", "napi_poll", Unit::CYCLES, "per poll call: bookkeeping, napi_complete_done, irq re-enable", &NetCosts::napi_poll},
    {"", "driver_rx", Unit::CYCLES, "per received packet in the driver's poll", &NetCosts::driver_rx},
    {"", "netif_receive_skb", Unit::CYCLES, "protocol demux", &NetCosts::netif_receive_skb},
    {"", "arp_rcv", Unit::CYCLES, "arp_rcv + arp_process, reply built and handed to dev_queue_xmit", &NetCosts::arp_rcv},
    {"", "packet_rcv", Unit::CYCLES, "AF_PACKET delivery to a socket, wake-up excluded", &NetCosts::packet_rcv},
    {"", "sock_recvmsg", Unit::CYCLES, "packet_recvmsg: dequeue, copy to user", &NetCosts::sock_recvmsg},
    {"", "veth_xmit", Unit::CYCLES, "veth_xmit: __dev_forward_skb, __netif_rx, enqueue_to_backlog (veth pairs)", &NetCosts::veth_xmit},
    {"", "process_backlog", Unit::CYCLES, "per frame in process_backlog before __netif_receive_skb (veth pairs, rx_mode = netif_rx)", &NetCosts::process_backlog},
    {"", "netif_rx", Unit::CYCLES, "netif_rx -> enqueue_to_backlog per frame, irq save/restore apart (rx_mode = netif_rx)", &NetCosts::netif_rx},
    {"", "fec_irq_loop", Unit::CYCLES, "per pass of the 3.0 fec_enet_interrupt IEVENT loop, MMIO apart (rx_mode = netif_rx)", &NetCosts::fec_irq_loop},
    {"", "xdp_prog_run", Unit::CYCLES, "bpf_prog_run_xdp per frame: xdp_buff set-up, a trivial program, its verdict (xdp)", &NetCosts::xdp_prog_run},
    {"", "xdp_drop", Unit::CYCLES, "per XDP_DROP frame in the driver: descriptor, page recycled into the ring, no skb (xdp = \"drop\")", &NetCosts::xdp_drop},
    {"", "gro_receive", Unit::CYCLES, "napi_gro_receive per IP packet: gro_list_prepare, inet_gro_receive, udp4_gro_receive's flush (NICs with GRO on)", &NetCosts::gro_receive},
    {"", "gro_tcp", Unit::CYCLES, "napi_gro_receive per TCP segment: tcp4_gro_receive, tcp_gro_receive (NICs with GRO on)", &NetCosts::gro_tcp},
    {"", "gro_merge", Unit::CYCLES, "skb_gro_receive: a segment appended to a held skb (NICs with GRO on)", &NetCosts::gro_merge},
    {"", "gro_complete", Unit::CYCLES, "napi_gro_complete of an skb of several segments (NICs with GRO on)", &NetCosts::gro_complete},
    {"", "gso_segment", Unit::CYCLES, "skb_gso_segment per segment made, copy excluded (devices with GSO on)", &NetCosts::gso_segment},
    {"", "tso_hdr", Unit::CYCLES, "FEC software TSO per segment: tso_build_hdr, the header descriptor", &NetCosts::tso_hdr},
    {"", "tso_data", Unit::CYCLES, "FEC software TSO per data descriptor: tso_build_data, the chunk's descriptor", &NetCosts::tso_data},
    {"", "tx_clean", Unit::CYCLES, "tx completion per descriptor reclaimed: status read, bookkeeping (tx DMA API on)", &NetCosts::tx_clean},
    {"", "tx_skb_free", Unit::CYCLES, "tx completion per skb: dev_kfree_skb_any / napi_consume_skb (tx DMA API on)", &NetCosts::tx_skb_free},
    {"", "fec_xmit", Unit::CYCLES, "FEC fec_enet_start_xmit instructions, DMA API and MMIO excluded (driver = fec)", &NetCosts::fec_xmit},
    {"", "fec_irq", Unit::CYCLES, "FEC fec_enet_interrupt instructions and napi_schedule, MMIO excluded (driver = fec)", &NetCosts::fec_irq},
    {"", "mmio_posted_write", Unit::CYCLES, "writel(): write barrier + posted Device store (driver = fec; the rx tail register)", &NetCosts::mmio_posted_write},
    {"", "mmio_read", Unit::CYCLES, "readl(): non-posted Device load + read barrier (driver = fec)", &NetCosts::mmio_read},
    {"", "fec_itr_clock", Unit::HZ, "the FEC's ahb clock, fep->itr_clk_rate, coalescing microseconds are converted with (coalesce = fec-itr)", &NetCosts::fec_itr_clock},
    {"", "fec_bus_bandwidth", Unit::BYTES_PER_SECOND, "what the SoC's interconnect carries of the FEC's DMA, transmit and receive together (driver = fec; with fec_rx_fifo)", &NetCosts::fec_bus_bandwidth},
    {"", "fec_rx_fifo", Unit::BYTES, "the FEC's receive FIFO, where frames wait for a free descriptor and for the SoC's interconnect (with fec_bus_bandwidth: driver = fec; alone: every NIC of the machine not behind PCIe)", &NetCosts::fec_rx_fifo},
    {"", "pfifo_fast_enqueue", Unit::CYCLES, "pfifo_fast_enqueue: band, skb_array_produce, backlog (qdisc = pfifo_fast)", &NetCosts::pfifo_fast_enqueue},
    {"", "pfifo_fast_dequeue", Unit::CYCLES, "pfifo_fast_dequeue of an skb: the bands' skb_array_consume (qdisc = pfifo_fast)", &NetCosts::pfifo_fast_dequeue},
    {"", "fq_enqueue", Unit::CYCLES, "fq_enqueue: fq_classify's flow lookup, flow queue add (qdisc = fq)", &NetCosts::fq_enqueue},
    {"", "fq_dequeue", Unit::CYCLES, "fq_dequeue of an skb: fq_check_throttled, round robin, pacing (qdisc = fq)", &NetCosts::fq_dequeue},
    {"", "net_tx_action", Unit::CYCLES, "net_tx_action per run: output_queue splice, root lock (a qdisc layer)", &NetCosts::net_tx_action},
    {"", "qdisc_watchdog", Unit::CYCLES, "qdisc_watchdog hrtimer callback: __netif_schedule (qdisc = fq)", &NetCosts::qdisc_watchdog},
    {"", "virtio_rx_buf", Unit::CYCLES, "virtio-net receive_mergeable per rx buffer beyond the first: virtqueue_get_buf_ctx, the frag, its refill (virtio guests)", &NetCosts::virtio_rx_buf},
    {"", "virtio_tx_sg", Unit::CYCLES, "virtio-net xmit_skb per scatter-gather entry beyond the second: skb_to_sgvec, its descriptor (virtio guests)", &NetCosts::virtio_tx_sg},
    {"", "virtio_gso_hdr", Unit::CYCLES, "virtio_net_hdr_from_skb / _to_skb's GSO fields per GSO skb (virtio guests)", &NetCosts::virtio_gso_hdr},
}};
static_assert(sizeof(NetCosts) == engine::figures_bytes(NET_FIGURES));

// [variation] (net/net_costs.h): optional as a whole; absent, every figure is 0
inline constexpr std::array<Figure<NetVariation>, 1> VARIATION_FIGURES = {{
    {"variation", "irq_delivery_jitter", Unit::NS, "a NIC interrupt reaches its CPU uniformly 0 to this after it is raised",
     &NetVariation::irq_delivery_jitter},
}};
static_assert(sizeof(NetVariation) == engine::figures_bytes(VARIATION_FIGURES));

// [tcp] (net/net_costs.h)
inline constexpr std::array<Figure<TcpCosts>, 10> TCP_FIGURES = {{
    {"", "ip_rcv", Unit::CYCLES, "ip_rcv per segment", &TcpCosts::ip_rcv},
    {"", "tcp_v4_rcv", Unit::CYCLES, "tcp_v4_rcv: lookup, established-state processing, queueing", &TcpCosts::tcp_v4_rcv},
    {"", "tcp_ack_send", Unit::CYCLES, "building and sending one ACK", &TcpCosts::tcp_ack_send},
    {"", "tcp_ack_rcv", Unit::CYCLES, "processing one received ACK at the sender", &TcpCosts::tcp_ack_rcv},
    {"", "tcp_sendmsg", Unit::CYCLES, "tcp_sendmsg per segment, copy excluded", &TcpCosts::tcp_sendmsg},
    {"", "tcp_recvmsg", Unit::CYCLES, "tcp_recvmsg per segment, copy excluded", &TcpCosts::tcp_recvmsg},
    {"", "skb_free", Unit::CYCLES, "freeing one skb", &TcpCosts::skb_free},
    {"", "rx_buffer_alloc", Unit::CYCLES, "the driver allocating a fresh rx buffer", &TcpCosts::rx_buffer_alloc},
    {"", "copy_to_user_cold", Unit::CYCLES_PER_BYTE, "copy to user space, source not in the caches, per byte", &TcpCosts::copy_to_user_cold},
    {"", "copy_from_user", Unit::CYCLES_PER_BYTE, "copy from user space, source cached, per byte", &TcpCosts::copy_from_user},
}};
static_assert(sizeof(TcpCosts) == engine::figures_bytes(TCP_FIGURES));

// [udp] (net/net_costs.h)
inline constexpr std::array<Figure<UdpCosts>, 3> UDP_FIGURES = {{
    {"", "udp_sendmsg", Unit::CYCLES, "udp_sendmsg -> ip_make_skb -> udp_send_skb -> ip output, copy excluded", &UdpCosts::udp_sendmsg},
    {"", "udp_rcv", Unit::CYCLES, "ip_rcv + __udp4_lib_rcv + udp_queue_rcv_skb (socket queue), wake excluded", &UdpCosts::udp_rcv},
    {"", "udp_recvmsg", Unit::CYCLES, "udp_recvmsg: dequeue, skb free; copy excluded", &UdpCosts::udp_recvmsg},
}};
static_assert(sizeof(UdpCosts) == engine::figures_bytes(UDP_FIGURES));

// [netfilter] (net/net_costs.h)
inline constexpr std::array<Figure<NetfilterCosts>, 6> NETFILTER_FIGURES = {{
    {"", "ip_rcv_core", Unit::CYCLES, "ip_rcv -> ip_rcv_core up to the NF_INET_PRE_ROUTING hook", &NetfilterCosts::ip_rcv_core},
    {"", "drop_rule", Unit::CYCLES, "nf_hook_slow -> the table's hook -> ipt_do_table: one matching DROP rule", &NetfilterCosts::drop_rule},
    {"", "nf_conntrack_in", Unit::CYCLES, "the conntrack hooks at PRE_ROUTING: tuple, a lookup finding no confirmed entry, the l4 tracker", &NetfilterCosts::nf_conntrack_in},
    {"", "init_conntrack", Unit::CYCLES, "a new, unconfirmed conntrack entry: allocation, tuples, extensions", &NetfilterCosts::init_conntrack},
    {"", "kfree_skb", Unit::CYCLES, "NF_DROP: kfree_skb of the dropped packet (skb and its buffer)", &NetfilterCosts::kfree_skb},
    {"", "nf_ct_destroy", Unit::CYCLES, "the last put of an unconfirmed conntrack entry at the skb's free: its destruction", &NetfilterCosts::nf_ct_destroy},
}};
static_assert(sizeof(NetfilterCosts) == engine::figures_bytes(NETFILTER_FIGURES));

// [tunnel] (net/net_costs.h), with the workqueue figures below in the same table
inline constexpr std::array<Figure<TunnelCosts>, 13> TUNNEL_FIGURES = {{
    {"", "wg_xmit", Unit::CYCLES, "wg_xmit + send_staged_packets: skb checks, queueing, per packet", &TunnelCosts::wg_xmit},
    {"", "wg_encrypt", Unit::CYCLES, "encrypt worker per packet beyond the AEAD: skb_cow, padding, header", &TunnelCosts::wg_encrypt},
    {"", "wg_tx", Unit::CYCLES, "tx worker per packet: keepalive check, udp_tunnel_xmit_skb (IP+UDP)", &TunnelCosts::wg_tx},
    {"", "wg_rx", Unit::CYCLES, "NET_RX: udp_rcv -> encap_rcv -> wg_packet_receive -> consume_data", &TunnelCosts::wg_rx},
    {"", "wg_decrypt", Unit::CYCLES, "decrypt worker per packet beyond the AEAD", &TunnelCosts::wg_decrypt},
    {"", "wg_rx_poll", Unit::CYCLES, "peer NAPI per packet: counter_validate, endpoint, napi_gro_receive", &TunnelCosts::wg_rx_poll},
    {"", "esp_output", Unit::CYCLES, "xfrm_output + esp_output + esp_output_tail, AEAD excluded", &TunnelCosts::esp_output},
    {"", "esp_input", Unit::CYCLES, "xfrm4_rcv + xfrm_input + esp_input + esp_input_done2", &TunnelCosts::esp_input},
    {"", "aead_request", Unit::CYCLES, "crypto_aead_{en,de}crypt: request, scatterlist walk set-up", &TunnelCosts::aead_request},
    {"", "cryptd_enqueue", Unit::CYCLES, "cryptd_enqueue_request under BH off (queue_work apart)", &TunnelCosts::cryptd_enqueue},
    {"", "cryptd_complete", Unit::CYCLES, "per request cryptd completes: cryptd_*_crypt's subrequest for the child, the ->complete dispatch, refcount (the AEAD, the callback's body and the BH pair apart)", &TunnelCosts::cryptd_complete},
    {"", "simd_wrapper", Unit::CYCLES, "crypto/simd.c when the request stays synchronous: the subrequest to the inner driver", &TunnelCosts::simd_wrapper},
    {"", "csum_partial", Unit::CYCLES_PER_BYTE, "the software Internet checksum per byte, data in L1 (csum_partial; skb_segment's copy-and-checksum and skb_checksum_help on the tunnels' transmit path, and the ESP receiver's verification of the CHECKSUM_NONE inner packet)", &TunnelCosts::csum_partial},
}};

// [tunnel]: the workqueue figures of TunnelCosts::workqueue (kernel/costs.h)
inline constexpr std::array<Figure<WorkqueueCosts>, 2> WORKQUEUE_FIGURES = {{
    {"", "queue_work", Unit::CYCLES, "queue_work_on: pool lock, insert (the wake-up is charged apart)", &WorkqueueCosts::queue_work},
    {"", "process_one_work", Unit::CYCLES, "the kworker's overhead per work item", &WorkqueueCosts::process_one_work},
}};
static_assert(sizeof(TunnelCosts) == engine::figures_bytes(TUNNEL_FIGURES) + engine::figures_bytes(WORKQUEUE_FIGURES));

// [virt] (net/net_costs.h)
inline constexpr std::array<Figure<VirtCosts>, 8> VIRT_FIGURES = {{
    {"", "virq_inject", Unit::CYCLES, "host: irqfd -> kvm_set_irq -> vGIC list register, vCPU kick", &VirtCosts::virq_inject},
    {"", "vhost_tx", Unit::CYCLES, "host: handle_tx per frame, tun_get_user, skb build", &VirtCosts::vhost_tx},
    {"", "vhost_rx", Unit::CYCLES, "host: handle_rx per frame, descriptor handling", &VirtCosts::vhost_rx},
    {"", "copy_per_byte", Unit::CYCLES_PER_BYTE, "host: copy between guest memory and skb, per byte", &VirtCosts::copy_per_byte},
    {"", "tun_xmit", Unit::CYCLES, "host: tun_net_xmit per frame (ptr_ring produce)", &VirtCosts::tun_xmit},
    {"", "vhost_desc", Unit::CYCLES, "host: handle_tx per descriptor beyond the second of a chain (indirect table walk, translate_desc)", &VirtCosts::vhost_desc},
    {"", "vhost_rx_buf", Unit::CYCLES, "host: handle_rx per guest rx buffer beyond the first (get_rx_bufs: vhost_get_vq_desc, used element)", &VirtCosts::vhost_rx_buf},
    {"", "vnet_hdr_gso", Unit::CYCLES, "host: virtio_net_hdr_to_skb / _from_skb's GSO fields per GSO skb (tun)", &VirtCosts::vnet_hdr_gso},
}};
static_assert(sizeof(VirtCosts) == engine::figures_bytes(VIRT_FIGURES));

// [kvm] (kvm/kvm.h)
inline constexpr std::array<Figure<KvmCosts>, 15> KVM_FIGURES = {{
    {"", "world_switch", Unit::CYCLES, "exit + entry round trip with handle_exit's dispatch (an HVC exit)", &KvmCosts::world_switch},
    {"", "abort_decode", Unit::CYCLES, "kvm_handle_guest_abort -> io_mem_abort: decode, memslot miss, io bus lookup", &KvmCosts::abort_decode},
    {"", "vgic_mmio", Unit::CYCLES, "dispatch_mmio_read/write: region lookup and register handler", &KvmCosts::vgic_mmio},
    {"", "ioeventfd", Unit::CYCLES, "ioeventfd_write -> eventfd_signal (the wake-up charged apart)", &KvmCosts::ioeventfd},
    {"", "vcpu_put_load", Unit::CYCLES, "kvm_arch_vcpu_put + kvm_arch_vcpu_load", &KvmCosts::vcpu_put_load},
    {"", "user_exit", Unit::CYCLES, "return from the KVM_RUN ioctl and back in, kvm_handle_mmio_return", &KvmCosts::user_exit},
    {"", "vmm_mmio", Unit::CYCLES, "the VMM's KVM_EXIT_MMIO dispatch to its device model", &KvmCosts::vmm_mmio},
    {"", "sgi_trap", Unit::CYCLES, "kvm_handle_sys_reg -> vgic_v3_dispatch_sgi -> kvm_vcpu_kick", &KvmCosts::sgi_trap},
    {"", "ipi_latency", Unit::CYCLES, "a host IPI from its send to the target core taking it", &KvmCosts::ipi_latency},
    {"", "vgic_flush", Unit::CYCLES, "per injected interrupt: list register written on entry, folded on exit", &KvmCosts::vgic_flush},
    {"", "timer_irq", Unit::CYCLES, "kvm_arch_timer_handler -> kvm_timer_update_irq -> kvm_vgic_inject_irq", &KvmCosts::timer_irq},
    {"", "wfi_block", Unit::CYCLES, "kvm_handle_wfx -> kvm_vcpu_block's return path on wake-up", &KvmCosts::wfi_block},
    {"", "icv_access", Unit::CYCLES, "a GICv3 CPU-interface sysreg access virtualised in hardware, with its isb", &KvmCosts::icv_access},
    {"", "spin_poll", Unit::CYCLES, "one iteration of a guest's polling loop", &KvmCosts::spin_poll},
    {"", "fpsimd_trap", Unit::CYCLES, "the guest's first FP/SIMD use since a vCPU load: the trap to EL2, kvm_hyp_handle_fpsimd, the guest's registers loaded", &KvmCosts::fpsimd_trap},
}};
static_assert(sizeof(KvmCosts) == engine::figures_bytes(KVM_FIGURES));

// [dma] (devices/dma_costs.h); `coherent` is a flag, read apart
inline constexpr std::array<Figure<DmaCosts>, 15> DMA_FIGURES = {{
    {"", "map_call", Unit::CYCLES, "dma_map_single: call chain, direction tests, address translation", &DmaCosts::map_call},
    {"", "unmap_call", Unit::CYCLES, "dma_unmap_single_attrs: call chain (and PG_dcache_clean marking on arm32)", &DmaCosts::unmap_call},
    {"", "sync_call", Unit::CYCLES, "dma_sync_single_for_cpu / _for_device: call chain", &DmaCosts::sync_call},
    {"", "inner_inv_line", Unit::CYCLES, "invalidate by VA (DCIMVAC / dc ivac)", &DmaCosts::inner_inv_line},
    {"", "inner_clean_line", Unit::CYCLES, "clean by VA (DCCMVAC / dc cvac)", &DmaCosts::inner_clean_line},
    {"", "inner_flush_line", Unit::CYCLES, "clean+invalidate by VA (DCCIMVAC / dc civac): partial lines of an invalidate", &DmaCosts::inner_flush_line},
    {"", "outer_inv_line", Unit::CYCLES, "write of L2X0_INV_LINE_PA", &DmaCosts::outer_inv_line},
    {"", "outer_clean_line", Unit::CYCLES, "write of L2X0_CLEAN_LINE_PA", &DmaCosts::outer_clean_line},
    {"", "outer_flush_line", Unit::CYCLES, "write of L2X0_CLEAN_INV_LINE_PA (partial lines of an invalidate)", &DmaCosts::outer_flush_line},
    {"", "outer_sync", Unit::CYCLES, "L2X0_CACHE_SYNC at the end of each outer range operation", &DmaCosts::outer_sync},
    {"", "barrier", Unit::CYCLES, "the dsb that ends each inner range operation", &DmaCosts::barrier},
    {"", "swiotlb_map_call", Unit::CYCLES, "swiotlb_tbl_map_single + swiotlb_find_slots: fixed part, the area lock taken and released", &DmaCosts::swiotlb_map_call},
    {"", "swiotlb_unmap_call", Unit::CYCLES, "swiotlb_tbl_unmap_single + swiotlb_release_slots: fixed part, the area lock taken and released", &DmaCosts::swiotlb_unmap_call},
    {"", "swiotlb_slot_probe", Unit::CYCLES, "one slot tested by swiotlb_do_find_slots' search (alignment, segment boundary, free-run count)", &DmaCosts::swiotlb_slot_probe},
    {"", "swiotlb_slot_write", Unit::CYCLES, "one iteration of a loop writing slot entries (list, orig_addr, alloc_size) at allocation or release", &DmaCosts::swiotlb_slot_write},
}};
static_assert(sizeof(DmaCosts) == engine::figures_bytes(DMA_FIGURES) + alignof(engine::Cycles)); // + coherent

// [flush] (devices/dma_costs.h), written by kdsim calibrate
inline constexpr std::array<Figure<FlushCosts>, 4> FLUSH_FIGURES = {{
    {"", "per_call", Unit::CYCLES, "fixed cost of one buffer's flush (+ its re-read when reread_per_call is not given)", &FlushCosts::per_call},
    {"", "reread_per_call", Unit::CYCLES, "fixed cost of the re-read, given apart from the flush's", &FlushCosts::reread_per_call},
    {"", "dirty_line", Unit::CYCLES, "per flushed dirty line", &FlushCosts::dirty_line},
    {"", "reread_line", Unit::CYCLES, "per line the CPU then reads back from memory (the received ones)", &FlushCosts::reread_line},
}};
static_assert(sizeof(FlushCosts) == engine::figures_bytes(FLUSH_FIGURES));

// [pcie] (devices/pcie_costs.h): the PCI Express link behind which a machine's NICs can sit
inline constexpr std::array<Figure<PcieCosts>, 9> PCIE_FIGURES = {{
    {"", "transfer_rate", Unit::HZ, "transfers per second per lane (Gen1 2.5e9, Gen2 5e9, Gen3 8e9)", &PcieCosts::transfer_rate, true},
    {"", "lanes", Unit::COUNT, "lanes of the link", &PcieCosts::lanes, true},
    {"", "encoded_bits", Unit::COUNT, "line coding: symbols per `data_bits` of data (8b/10b: 10)", &PcieCosts::encoded_bits, true},
    {"", "data_bits", Unit::COUNT, "line coding: data bits per `encoded_bits` symbols (8b/10b: 8)", &PcieCosts::data_bits, true},
    {"", "max_payload", Unit::BYTES, "Max Payload Size: data bytes per write TLP at most", &PcieCosts::max_payload, true},
    {"", "tlp_overhead", Unit::BYTES, "per TLP on the wire: framing, sequence number, header, LCRC", &PcieCosts::tlp_overhead},
    {"", "dllp_bytes", Unit::BYTES, "one DLLP (ACK, UpdateFC) with its framing", &PcieCosts::dllp_bytes},
    {"", "rx_descriptor_bytes", Unit::BYTES, "the rx descriptor a NIC writes back per received frame", &PcieCosts::rx_descriptor_bytes},
    {"", "rx_dllps_per_frame", Unit::COUNT, "DLLPs a NIC sends upstream per received frame", &PcieCosts::rx_dllps_per_frame},
}};
static_assert(sizeof(PcieCosts) == engine::figures_bytes(PCIE_FIGURES));

} // namespace kdsim::system
