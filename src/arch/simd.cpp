#include "arch/simd.h"

#include "arch/arm/vfp.h"
#include "arch/arm64/fpsimd.h"
#include "arch/powerpc/spe.h"
#include "arch/x86/fpu.h"

#include <bit>

namespace kdsim::arch {

std::string_view to_string(Arch a) {
    switch (a) {
    case Arch::X86_64: return "x86_64";
    case Arch::ARM32: return "arm32";
    case Arch::ARM64: return "arm64";
    case Arch::PPC32_E500: return "ppc32-e500";
    }
    return "?";
}

std::optional<Arch> arch_from_string(std::string_view s) {
    for (Arch a : {Arch::X86_64, Arch::ARM32, Arch::ARM64, Arch::PPC32_E500})
        if (to_string(a) == s) return a;
    return std::nullopt;
}

bool idle_polls(Arch a) { return a == Arch::X86_64; }

void SimdUnit::register_stats(const stats::Scope& s) const {
    s.counter("brackets", stats_.brackets, "count", "kernel_fpu_begin/end (kernel_neon_begin/end, spe_begin/end) brackets")
        .counter("begin_end_cycles", stats_.begin_end_cycles, "cycles", "cycles charged by begin/end, saves included")
        .counter("saves", stats_.saves, "count", "user register-file saves (in begin or at a context switch)")
        .counter("restores", stats_.restores, "count", "user register-file restores")
        .counter("save_restore_cycles", stats_.save_restore_cycles, "cycles", "cycles of those saves and restores")
        .counter("bytes", stats_.bytes, "bytes", "bytes processed inside brackets")
        .counter("fallbacks", stats_.fallbacks, "count", "generic code ran because may_use_simd() was false")
        .counter("kernel_traps", stats_.kernel_traps, "count", "SIMD-unavailable exceptions taken from kernel mode")
        .counter("kernel_use_warnings", stats_.kernel_use_warnings, "count", "log lines they printed (\"SPE used in kernel\")");
    scope_ = s;
    for (const SimdOwnerStats& o : owners_) register_owner(o);
}

void SimdUnit::register_owner(const SimdOwnerStats& o) const {
    if (!scope_) return;
    scope_->sub("alg").sub(o.name)
        .counter("calls", o.calls, "count", "API calls of this driver that ran on the SIMD unit")
        .counter("brackets", o.brackets, "count", "brackets this driver opened")
        .counter("begin_end_cycles", o.begin_end_cycles, "cycles", "cycles charged by its begin/end, saves in begin included")
        .counter("bytes", o.bytes, "bytes", "bytes it processed inside brackets")
        .counter("longest_bracket_cycles", o.longest_bracket_cycles, "cycles", "its longest bracket, begin to end")
        .value("longest_bracket_us", [&o] { return engine::to_us(o.longest_bracket); }, "us", "its longest bracket, begin to end")
        .counter("longest_bracket_bytes", o.longest_bracket_bytes, "bytes", "bytes processed in that bracket");
}

std::size_t SimdUnit::owner(std::string_view name) {
    for (std::size_t i = 0; i < owners_.size(); ++i)
        if (owners_[i].name == name) return i + 1;
    owners_.emplace_back().name = std::string(name);
    register_owner(owners_.back());
    return owners_.size();
}

namespace {
constexpr std::array<std::pair<SimdPolicy, std::string_view>, 9> POLICY_NAMES = {{
    {SimdPolicy::X86_PREEMPT, "x86-preempt-disable"},
    {SimdPolicy::X86_BH_OFF, "x86-bh-disable"},
    {SimdPolicy::X86_UNSAFE_NO_INUSE, "x86-unsafe-no-inuse-check"},
    {SimdPolicy::ARM32_TASK_ONLY, "arm32-task-only"},
    {SimdPolicy::ARM32_SOFTIRQ, "arm32-softirq-neon"},
    {SimdPolicy::ARM32_UNSAFE_SOFTIRQ_NO_BH, "arm32-unsafe-softirq-neon-no-bh"},
    {SimdPolicy::ARM64_BH_OFF, "arm64-bh-disable"},
    {SimdPolicy::PPC_SPE, "ppc-spe"},
    {SimdPolicy::PPC_SPE_NO_ENABLE, "ppc-spe-no-enable"},
}};
} // namespace

std::string_view to_string(SimdPolicy p) {
    for (auto& [pol, name] : POLICY_NAMES)
        if (pol == p) return name;
    return "?";
}

std::optional<SimdPolicy> simd_policy_from_string(std::string_view s) {
    for (auto& [pol, name] : POLICY_NAMES)
        if (name == s) return pol;
    return std::nullopt;
}

Arch arch_of(SimdPolicy p) {
    switch (p) {
    case SimdPolicy::X86_PREEMPT:
    case SimdPolicy::X86_BH_OFF:
    case SimdPolicy::X86_UNSAFE_NO_INUSE: return Arch::X86_64;
    case SimdPolicy::ARM32_TASK_ONLY:
    case SimdPolicy::ARM32_SOFTIRQ:
    case SimdPolicy::ARM32_UNSAFE_SOFTIRQ_NO_BH: return Arch::ARM32;
    case SimdPolicy::ARM64_BH_OFF: return Arch::ARM64;
    case SimdPolicy::PPC_SPE:
    case SimdPolicy::PPC_SPE_NO_ENABLE: return Arch::PPC32_E500;
    }
    return Arch::X86_64;
}

SimdUnit::SimdUnit(Cpu& cpu, SimdPolicy policy, const SimdCosts& costs)
    : cpu_(cpu), policy_(policy), costs_(costs) {}

void SimdUnit::open_bracket(const char* who) {
    ++stats_.brackets;
    if (depth_ == brackets_.size()) return;
    SimdToken tok = cpu_.kernel_simd_token();
    const std::size_t owner = next_owner_;
    next_owner_ = 0;
    if (owner) ++owners_[owner - 1].brackets;
    brackets_[depth_++] = Open{cpu_.now(), 0, tok, who, 0, owner};
    if constexpr (kernel::TRACE_COMPILED)
        if (cpu_.tracing()) [[unlikely]] brackets_[depth_ - 1].serial = cpu_.context_serial();
    cpu_.set_simd_regs(tok); // the kernel code now uses the registers
}

void SimdUnit::close_bracket() {
    if (depth_ == 0) return;
    Open o = brackets_[--depth_];
    if constexpr (kernel::TRACE_COMPILED)
        if (cpu_.tracing()) [[unlikely]] cpu_.trace_bracket(o.start, o.serial, o.who);
    Tick len = cpu_.now() - o.start;
    stats_.bytes += o.bytes;
    unsigned k = o.bytes ? static_cast<unsigned>(std::bit_width(o.bytes) - 1) : 0;
    if (k >= stats_.bytes_hist.size()) k = stats_.bytes_hist.size() - 1;
    ++stats_.bytes_hist[k];
    auto holder = [&] {
        return std::string(o.who) + " in " + std::string(kernel::to_string(cpu_.ctx_kind())) + " context of " +
               (cpu_.current() ? cpu_.current()->describe() : "?");
    };
    if (len > stats_.longest_bracket) {
        stats_.longest_bracket = len;
        stats_.longest_bracket_start = o.start;
        stats_.longest_bracket_bytes = o.bytes;
        stats_.longest_bracket_holder = holder();
    }
    if (o.owner) {
        SimdOwnerStats& w = owners_[o.owner - 1];
        w.bytes += o.bytes;
        if (len > w.longest_bracket) {
            w.longest_bracket = len;
            w.longest_bracket_cycles = cpu_.clock().to_cycles(len);
            w.longest_bracket_bytes = o.bytes;
            w.longest_bracket_holder = holder();
        }
    }
}

Cycles SimdUnit::save_user_state(TaskStruct& t, const char* where) {
    if (cpu_.simd_regs() != t.user_token) cpu_.report_clobber(t.user_token, cpu_.simd_regs(), where);
    t.saved_user = t.user_token;
    t.fpu_state_saved = true;
    ++stats_.saves;
    stats_.save_restore_cycles += costs_.save;
    return costs_.save + guest_fp_trap();
}

Cycles SimdUnit::restore_user_state(TaskStruct& t) {
    cpu_.set_simd_regs(t.saved_user);
    t.fpu_state_saved = false;
    ++stats_.restores;
    stats_.save_restore_cycles += costs_.restore;
    return costs_.restore + guest_fp_trap();
}

std::unique_ptr<SimdUnit> make_simd_unit(Cpu& cpu, SimdPolicy policy, const SimdCosts& costs) {
    std::unique_ptr<SimdUnit> u;
    switch (arch_of(policy)) {
    case Arch::X86_64: u = std::make_unique<x86::Fpu>(cpu, policy, costs); break;
    case Arch::ARM32: u = std::make_unique<arm::Vfp>(cpu, policy, costs); break;
    case Arch::ARM64: u = std::make_unique<arm64::Fpsimd>(cpu, policy, costs); break;
    case Arch::PPC32_E500: u = std::make_unique<powerpc::Spe>(cpu, policy, costs); break;
    }
    cpu.set_arch_fpu(u.get());
    return u;
}

} // namespace kdsim::arch
