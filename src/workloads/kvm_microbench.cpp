#include "workloads/kvm_microbench.h"

namespace kdsim::workloads {

using kernel::Cat;

namespace {
constexpr Tick TIMER_DELAY = 10 * engine::PS_PER_MS;
// The spin before a timer's expiry runs as one exec that ends this long before it; the rest is
// polled, so that an interrupt taken meanwhile (the tick) cannot hide the expiry.
constexpr Tick TIMER_POLL_WINDOW = 20 * engine::PS_PER_US;
} // namespace

const char* micro_bench_name(MicroBenchTest t) {
    switch (t) {
    case MicroBenchTest::HVC: return "hvc";
    case MicroBenchTest::MMIO_READ_USER: return "mmio_read_user";
    case MicroBenchTest::MMIO_READ_VGIC: return "mmio_read_vgic";
    case MicroBenchTest::EOI: return "eoi";
    case MicroBenchTest::IPI: return "ipi";
    case MicroBenchTest::TIMER_10MS: return "timer_10ms";
    }
    return "?";
}

KvmMicroBench::KvmMicroBench(Env env, KvmMicroBenchWorkload cfg, kvm::Vm& vm, unsigned vector)
    : Workload(env), cfg_(std::move(cfg)), vm_(vm), vector_(vector) {}

void KvmMicroBench::start() {
    env_.completion.add();
    if (cfg_.test == MicroBenchTest::IPI) {
        kernel::Cpu& target = vm_.vcpu(cfg_.cpu + 1).cpu();
        target.request_irq(vector_, &KvmMicroBench::sgi_handler, this, "micro-bench-sgi");
        if (cfg_.target == MicroBenchTarget::SPIN)
            target.create_task("micro-bench-secondary", kernel::SchedPolicy::NORMAL, 0, true, target_spin(target));
    }
    env_.cpu.create_task(cfg_.name, kernel::SchedPolicy::NORMAL, 0, true, bench(*this));
}

// gic_secondary_entry: interrupts on, then cpu_relax() forever.
engine::Task<> KvmMicroBench::target_spin(kernel::Cpu& cpu) {
    for (;;) co_await cpu.exec(cpu.clock().to_cycles(engine::PS_PER_S), Cat::OTHER);
}

// gic_irq_handler: IAR, the flag, EOIR (the entry and exit are the guest profile's [irq]).
engine::Task<> KvmMicroBench::sgi_handler(kernel::Cpu&, void* ctx) {
    static_cast<KvmMicroBench*>(ctx)->received_ = true;
    co_return;
}

Cycles KvmMicroBench::vtimer_fn(kernel::Cpu&, void* ctx, Tick) {
    static_cast<KvmMicroBench*>(ctx)->received_ = true;
    return 0;
}

// while (!irq_received && tries--) cpu_relax();
engine::Task<> KvmMicroBench::spin_until_received() {
    while (!received_) co_await env_.cpu.exec(vm_.paths().k.spin_poll, Cat::OTHER);
}

engine::Task<> KvmMicroBench::exec_one() {
    kvm::Vcpu& v = vm_.vcpu(cfg_.cpu);
    switch (cfg_.test) {
    case MicroBenchTest::HVC: co_await v.hvc(); break;
    case MicroBenchTest::MMIO_READ_USER: co_await v.mmio_user(); break;
    case MicroBenchTest::MMIO_READ_VGIC: co_await v.mmio_read_vgic(); break;
    case MicroBenchTest::EOI: co_await env_.cpu.exec(vm_.paths().k.icv_access, Cat::OTHER); break;
    case MicroBenchTest::IPI:
        received_ = false;
        co_await v.send_sgi(vm_.vcpu(cfg_.cpu + 1), vector_);
        co_await spin_until_received();
        break;
    case MicroBenchTest::TIMER_10MS: {
        received_ = false;
        kernel::Cpu& cpu = env_.cpu;
        cpu.hrtimer_start(cpu.now() + TIMER_DELAY, &KvmMicroBench::vtimer_fn, this);
        co_await cpu.exec(cpu.clock().to_cycles(TIMER_DELAY - TIMER_POLL_WINDOW), Cat::OTHER);
        co_await spin_until_received();
        waited_ += TIMER_DELAY; // timer_post: the 10 ms are not latency
        break;
    }
    }
}

// The batch: `ntimes` calls of the test's exec() between two counter reads.
// (kvm-unit-tests arm/micro-bench.c: the loop in main around each test's exec)
engine::Task<> KvmMicroBench::bench(KvmMicroBench& w) {
    kernel::Cpu& cpu = w.env_.cpu;
    if (cpu.now() < w.cfg_.start) co_await cpu.exec(cpu.clock().to_cycles(w.cfg_.start - cpu.now()), Cat::OTHER);
    const Tick t0 = cpu.now();
    for (; w.done_ < w.cfg_.iterations; ++w.done_) {
        co_await cpu.exec(w.vm_.paths().k.spin_poll, Cat::OTHER); // the loop and the indirect call
        co_await w.exec_one();
    }
    w.total_ = cpu.now() - t0 - w.waited_;
    w.env_.completion.done();
}

results::WorkloadResult KvmMicroBench::result() const {
    auto r = base_result(cfg_.name, "kvm_microbench");
    add(r, "iterations", static_cast<double>(done_), "count");
    add(r, "avg_ns", done_ && done_ == cfg_.iterations ? engine::to_us(total_) * 1e3 / static_cast<double>(done_) : 0, "ns");
    r.notes.emplace_back("test", micro_bench_name(cfg_.test));
    if (cfg_.target == MicroBenchTarget::WFI) r.notes.emplace_back("target", "wfi");
    return r;
}

} // namespace kdsim::workloads
