// The SIMD/FPU unit of one CPU as the kernel drives it: who owns the register file, whether a
// task's user state is live or saved, kernel-mode brackets (kernel_fpu_begin/end,
// kernel_neon_begin/end) and may_use_simd(). One subclass per architecture mirrors that
// architecture's code (x86/fpu.cpp, arm/vfp.cpp, arm64/fpsimd.cpp); the policy selects the
// kernel version or variant. Register contents are functional: every bracket writes its own
// owner token into the register file, and SIMD work checks the token it expects (see
// Cpu::exec_simd), so a policy that lets one context overwrite another's live registers
// produces a clobber finding through the mechanism itself, with no policy-specific detector.
#pragma once

#include "arch/config.h"
#include "engine/task.h"
#include "kernel/cpu.h"

#include <array>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

namespace kdsim::arch {

using engine::Cycles;
using engine::Tick;
using kernel::Cpu;
using kernel::SimdToken;
using kernel::TaskStruct;

// Brackets and their costs, as reported.
struct SimdStats {
    std::uint64_t brackets = 0;
    Cycles begin_end_cycles = 0;   // everything begin/end charged, saves included
    std::uint64_t saves = 0;       // of user state, in begin or at context switch
    std::uint64_t restores = 0;
    Cycles save_restore_cycles = 0;
    std::uint64_t bytes = 0;       // processed inside brackets
    std::array<std::uint64_t, 24> bytes_hist{}; // bucket k: bytes in [2^k, 2^(k+1)), bucket 0 also holds 0
    Tick longest_bracket = 0;
    Tick longest_bracket_start = 0;
    std::uint64_t longest_bracket_bytes = 0;
    std::string longest_bracket_holder;
    std::uint64_t fallbacks = 0;   // may_use_simd() was false where SIMD was wanted
    std::uint64_t kernel_traps = 0;        // SIMD-unavailable exceptions from kernel mode
    std::uint64_t kernel_use_warnings = 0; // log lines they printed
};

// The brackets of one user of the unit (a crypto driver such as "sha512-avx2"): the CPU-wide
// bracket counters, restricted to the brackets that user opened. Over all owners they add up to
// the CPU's figures when every bracket was claimed (saves at context switches are no owner's).
struct SimdOwnerStats {
    std::string name;
    std::uint64_t calls = 0;       // API calls that ran on the unit (counted by the owner)
    std::uint64_t brackets = 0;
    Cycles begin_end_cycles = 0;   // saves in begin included, as in SimdStats
    std::uint64_t bytes = 0;
    Tick longest_bracket = 0;
    std::uint64_t longest_bracket_cycles = 0;
    std::uint64_t longest_bracket_bytes = 0;
    std::string longest_bracket_holder;
};

class SimdUnit : public kernel::ArchFpu {
public:
    SimdUnit(Cpu& cpu, SimdPolicy policy, const SimdCosts& costs);
    ~SimdUnit() override = default;

    SimdPolicy policy() const { return policy_; }
    Cpu& cpu() { return cpu_; }

    // may_use_simd() / irq_fpu_usable() of this architecture and policy, for the running context.
    virtual bool may_use_simd() const = 0;
    // kernel_fpu_begin / kernel_neon_begin. Precondition: may_use_simd().
    virtual engine::Task<> begin() = 0;
    // kernel_fpu_end / kernel_neon_end; a preemption point. Must pair with begin().
    virtual engine::Task<> end() = 0;
    // The token the running bracket's SIMD work must find in the registers.
    SimdToken bracket_token() const { return depth_ ? brackets_[depth_ - 1].token : SimdToken{}; }
    bool in_bracket() const { return depth_ > 0; }

    // The per-CPU crypto_simd_disabled_for_test of crypto/testmgr.c (set by a machine's
    // [machine.kernel] crypto_simd_disabled_for_test): crypto code then sees SIMD as unusable.
    void set_crypto_simd_disabled_for_test(bool v) { crypto_simd_disabled_for_test_ = v; }
    bool crypto_simd_disabled_for_test() const { return crypto_simd_disabled_for_test_; }

    // A user task is about to execute SIMD instructions (the lazy-restore trap on arm32/ppc).
    virtual Cycles user_simd_use(TaskStruct& t) { return 0; }

    // Bytes the running bracket processed (for the bytes-per-bracket histogram).
    void add_bracket_bytes(std::uint64_t n) {
        if (depth_) brackets_[depth_ - 1].bytes += n;
    }
    void count_fallback() { ++stats_.fallbacks; }
    const SimdStats& stats() const { return stats_; }
    // Registers the bracket counters under `s` (<machine>/cpu<N>/simd); each owner's, when it
    // first appears, under <s>/alg/<owner>.
    void register_stats(const stats::Scope& s) const;

    // The id (>= 1) of the owner named `name`, created on first use. Not for a hot path.
    std::size_t owner(std::string_view name);
    // The next bracket opened on this unit belongs to owner `id` (0: to none). Call right before
    // begin(): every architecture opens its bracket before its first suspension.
    void claim_next_bracket(std::size_t id) { next_owner_ = id; }
    SimdOwnerStats& owner_stats(std::size_t id) { return owners_[id - 1]; }
    const std::deque<SimdOwnerStats>& owners() const { return owners_; }

protected:
    // Bracket bookkeeping shared by all architectures.
    void open_bracket(const char* who);
    void close_bracket();
    // Saves the registers as `t`'s user state, checking that they hold it. The cycles include
    // guest_fp_trap().
    Cycles save_user_state(TaskStruct& t, const char* where);
    // Loads `t`'s saved user state into the registers. The cycles include guest_fp_trap().
    Cycles restore_user_state(TaskStruct& t);
    // On a KVM vCPU, the first touch of the registers since the hypervisor took them back traps
    // (kvm/kvm.h, Vcpu::fpsimd_access): its cycles, else 0. Call where guest code touches them.
    Cycles guest_fp_trap() {
        kernel::Hypervisor* h = cpu_.hypervisor();
        return h ? h->fpsimd_access(cpu_) : 0;
    }
    void charge_begin_end(Cycles c) {
        stats_.begin_end_cycles += c;
        if (depth_ && brackets_[depth_ - 1].owner) owners_[brackets_[depth_ - 1].owner - 1].begin_end_cycles += c;
    }

    Cpu& cpu_;
    SimdPolicy policy_;
    SimdCosts costs_;
    SimdStats stats_;
    bool crypto_simd_disabled_for_test_ = false;

private:
    struct Open {
        Tick start;
        std::uint64_t bytes;
        SimdToken token;
        const char* who;
        std::uint64_t serial; // the opening context activation (set only when tracing)
        std::size_t owner;    // 0: none
    };
    void register_owner(const SimdOwnerStats& o) const;
    std::array<Open, 4> brackets_{};
    std::size_t depth_ = 0;
    std::deque<SimdOwnerStats> owners_; // stable addresses: the registry points into them
    std::size_t next_owner_ = 0;
    mutable std::optional<stats::Scope> scope_;
};

// Builds the unit for `policy` on `cpu` and installs it as the CPU's ArchFpu.
std::unique_ptr<SimdUnit> make_simd_unit(Cpu& cpu, SimdPolicy policy, const SimdCosts& costs);

// crypto_simd_usable(): the name crypto glue code uses; false everywhere on a CPU whose
// crypto_simd_disabled_for_test is set, so crypto/simd.c sends every request to cryptd and the
// library routines run their scalar code.
// Models: crypto_simd_usable() (include/crypto/internal/simd.h)
inline bool crypto_simd_usable(const SimdUnit& u) { return u.may_use_simd() && !u.crypto_simd_disabled_for_test(); }

} // namespace kdsim::arch
