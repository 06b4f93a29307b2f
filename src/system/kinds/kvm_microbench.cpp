// kvm_microbench (workloads/kvm_microbench.h): kvm-unit-tests' arm/micro-bench in a KVM guest.
#include "system/workload_kind.h"
#include "workloads/kvm_microbench.h"

#include <fmt/format.h>

namespace kdsim::system {

namespace {

using workloads::KvmMicroBenchWorkload;
using workloads::MicroBenchTest;

void read(ParamReader& r, KvmMicroBenchWorkload& x) {
    static const std::vector<std::string_view> tests = {"hvc", "mmio_read_user", "mmio_read_vgic", "eoi", "ipi", "timer_10ms"};
    if (auto i = r.choice("test", true, tests)) x.test = static_cast<MicroBenchTest>(*i);
    if (auto i = r.choice("target", false, {"spin", "wfi"})) x.target = static_cast<workloads::MicroBenchTarget>(*i);
    if (auto n = r.integer("iterations", false, 1, 1'000'000)) x.iterations = static_cast<std::uint64_t>(*n);
    if (auto t = r.duration("start", false, false)) x.start = *t;
}

void check(ParamReader& r, const KvmMicroBenchWorkload& x, const MachineConfig& m) {
    if (m.kvm_host.empty())
        r.error("kind", "kvm_microbench runs in a KVM guest: its machine needs kvm_host = \"<host machine>\"");
    if (x.test == MicroBenchTest::IPI && x.cpu + 1 >= m.cpus)
        r.error("test", fmt::format("ipi sends to vCPU {} (cpu + 1): the guest has {} vCPUs", x.cpu + 1, m.cpus));
    if (x.target != workloads::MicroBenchTarget::SPIN && x.test != MicroBenchTest::IPI)
        r.error("target", "target belongs to test = \"ipi\" (what the SGI's target vCPU does)");
}

std::unique_ptr<workloads::Workload> build(const KvmMicroBenchWorkload& x, BuildContext& b) {
    kvm::Vm* vm = b.kvm();
    require(vm != nullptr, "kvm_microbench '" + x.name + "': its machine is no KVM guest");
    return std::make_unique<workloads::KvmMicroBench>(b.env, x, *vm, b.next_vector());
}

} // namespace

extern const WorkloadKind kvm_microbench_kind =
    WorkloadKind::of<KvmMicroBenchWorkload>("kvm_microbench", {"test", "target", "iterations", "start"}, false, read, build)
        .with_machine_check(check);

} // namespace kdsim::system
