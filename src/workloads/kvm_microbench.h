// The kvm-unit-tests micro-benchmark for arm64 (arm/micro-bench.c) as a guest workload: a vCPU
// runs one test in a loop and times the batch with the virtual counter. What each test's exec()
// does, and what it costs here (kvm/kvm.h has the host side):
//  - hvc: `hvc #0` with an unknown SMCCC function id: an HVC exit, kvm_handle_hvc answers
//    NOT_SUPPORTED;
//  - mmio_read_user: readl of a virtio-mmio register that QEMU emulates: a data abort, io_mem_abort
//    finds no in-kernel device, KVM_EXIT_MMIO to the VMM and back;
//  - mmio_read_vgic: readl(GICD_IIDR): a data abort handled in the kernel by the vGIC;
//  - eoi: a write of the spurious INTID 1023 to ICC_EOIR1_EL1 and an isb: the GICv3 CPU
//    interface virtualises it (ICV_EOIR1_EL1), no exit;
//  - ipi: an SGI to vCPU 1 (a trapped ICC_SGI1R_EL1 write), then a spin until vCPU 1's handler has
//    set a flag; vCPU 1 spins in the guest with interrupts enabled (or, target WFI, a variant that
//    is not in micro-bench.c: vCPU 1 has nothing to run and idles in WFI, so each SGI wakes it);
//  - timer_10ms: the virtual timer armed 10 ms ahead, a spin until its handler (IAR, EOIR, timer
//    masked) sets a flag; the test subtracts the 10 ms.
// Each iteration also costs the loop's own instructions (one spin_poll). Not modelled: the cache
// line of the flag moving between cores (ipi), the lpi test (no ITS in the model).
#pragma once

#include "kvm/kvm.h"
#include "workloads/config.h"
#include "workloads/workload.h"

namespace kdsim::workloads {

const char* micro_bench_name(MicroBenchTest t);

class KvmMicroBench final : public Workload {
public:
    // `vector`: the SGI the ipi test sends to vCPU cpu+1 (unused by the other tests).
    KvmMicroBench(Env env, KvmMicroBenchWorkload cfg, kvm::Vm& vm, unsigned vector);
    void start() override;
    bool finite() const override { return true; }
    results::WorkloadResult result() const override;

private:
    static engine::Task<> bench(KvmMicroBench& w);
    static engine::Task<> target_spin(kernel::Cpu& cpu);
    static engine::Task<> sgi_handler(kernel::Cpu& cpu, void* ctx);
    static Cycles vtimer_fn(kernel::Cpu& cpu, void* ctx, Tick expiry);
    engine::Task<> exec_one();
    engine::Task<> spin_until_received();

    KvmMicroBenchWorkload cfg_;
    kvm::Vm& vm_;
    unsigned vector_;
    bool received_ = false;
    std::uint64_t done_ = 0;
    Tick waited_ = 0; // timer_10ms: the 10 ms of each iteration
    Tick total_ = 0;  // the batch's time less waited_
};

} // namespace kdsim::workloads
