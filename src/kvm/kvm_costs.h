// The [kvm] figures of a host's profile: what KVM's exits and injections cost (kvm/kvm.h).
#pragma once

#include "engine/time.h"

namespace kdsim::kvm {

using engine::Cycles;

// [kvm] figures of the host's profile: cycles of the host's cores (the vCPUs run on the same).
struct KvmCosts {
    Cycles world_switch = 0;  // exit + entry round trip with handle_exit's dispatch (an HVC exit)
    Cycles abort_decode = 0;  // kvm_handle_guest_abort -> io_mem_abort: decode, memslot miss, io bus lookup
    Cycles vgic_mmio = 0;     // dispatch_mmio_read/write: region lookup and register handler
    Cycles ioeventfd = 0;     // ioeventfd_write -> eventfd_signal (the wake-up charged apart)
    Cycles vcpu_put_load = 0; // kvm_arch_vcpu_put + kvm_arch_vcpu_load (vgic, timer, EL1 sysregs)
    Cycles user_exit = 0;     // return from the KVM_RUN ioctl and back in, kvm_handle_mmio_return
    Cycles vmm_mmio = 0;      // the VMM's KVM_EXIT_MMIO dispatch to its device model (user space)
    Cycles sgi_trap = 0;      // kvm_handle_sys_reg -> vgic_v3_dispatch_sgi -> kvm_vcpu_kick
    Cycles ipi_latency = 0;   // a host IPI from its send to the target core taking it
    Cycles vgic_flush = 0;    // per injected interrupt: list register written on entry, folded on exit
    Cycles timer_irq = 0;     // kvm_arch_timer_handler -> kvm_timer_update_irq -> kvm_vgic_inject_irq
    Cycles wfi_block = 0;     // kvm_handle_wfx -> kvm_vcpu_block's return path on wake-up
    Cycles icv_access = 0;    // a GICv3 CPU-interface sysreg access the hardware virtualises (ICV_*), with its isb
    Cycles spin_poll = 0;     // one iteration of a guest's polling loop (load, compare, branch, yield)
    Cycles fpsimd_trap = 0;   // the guest's first FP/SIMD use since a vCPU load: trap, kvm_hyp_handle_fpsimd, guest regs loaded
};

} // namespace kdsim::kvm
