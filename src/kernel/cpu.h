// One simulated CPU running the Linux kernel's execution contexts.
//
// State tracked: a stack of running contexts (the current task at the bottom, then a softirq,
// a hardirq, an NMI), preempt_count, the IRQ mask, need_resched, pending interrupts and
// softirqs, the per-CPU runqueue and hrtimers, the SIMD register file's owner token, and the
// cycle clock of the current busy period.
//
// Every context runs a coroutine (engine::Task) written like the kernel code it models. A
// coroutine spends CPU time only through `co_await cpu.exec(cycles, category)`; the CPU turns
// that into one engine event at the exact completion tick. A worked sequence:
//   1. task modprobe runs `co_await cpu.exec(40'000, Cat::CRYPTO)` inside kernel_fpu_begin/end;
//      the CPU schedules its completion 40'000 cycles later.
//   2. the timer's interrupt line fires 10'000 cycles in: the CPU charges those cycles, keeps
//      30'000 as the exec's remainder, invalidates the completion event (generation counter),
//      enters hardirq (preempt_count += HARDIRQ_OFFSET, IRQs masked) and starts the handler.
//   3. the handler wakes the RT probe (need_resched). At irq_exit no softirq is pending; the
//      return path sees preempt_count != 0 (the FPU bracket disabled preemption), so the
//      30'000 cycles resume. kernel_fpu_end's preempt_enable() is the preemption point where
//      a PREEMPT=full kernel switches to the probe; under voluntary the switch waits for
//      cond_resched().
// Preemption points are exactly the kernel's: preempt_enable() reaching zero, local_bh_enable()
// (which first runs pending softirqs), return from interrupt to a preemptible context,
// cond_resched(), return to user space, and blocking.
//
// Mirrors: kernel/softirq.c (irq_exit, __do_softirq, ksoftirqd), kernel/sched/core.c
// (__schedule, preempt_schedule_irq, scheduler_tick, try_to_wake_up), kernel/time/hrtimer.c.
// Simplified: a task runs on one CPU unless it has several allowed CPUs (cpus_allowed: placed at
// wake-ups, pulled by an idle CPU's load balance while queued, pushed by its CPU's stopper once
// preempted by it: active balance); CFS is reduced to vruntime
// order with the latency/min-granularity slice; RT is SCHED_FIFO only; one hardirq nests at
// a time (handlers run with IRQs masked, as Linux runs them).
#pragma once

#include "engine/rng.h"
#include "engine/simulation.h"
#include "engine/task.h"
#include "engine/time.h"
#include "kernel/config.h"
#include "kernel/costs.h"
#include "kernel/preempt.h"
#include "kernel/text.h"
#include "kernel/trace.h"
#include "kernel/types.h"
#include "stats/findings.h"
#include "stats/registry.h"

#include <algorithm>
#include <array>
#include <coroutine>
#include <memory>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace kdsim::kernel {

using engine::Cycles;
using engine::Tick;

class Cpu;
class GuestRun;
class TimerBase;
struct TaskStruct;

// The kernel's preemption points, each with its own rule for what may happen there.
enum class Point : std::uint8_t {
    IRQ_ENABLE,     // local_irq_enable/restore: pending interrupts are taken
    BH_ENABLE,      // local_bh_enable: pending softirqs run, then preempt_enable's rule
    PREEMPT_ENABLE, // preempt_enable: reschedules under PREEMPT=full when the count hits 0
    COND_RESCHED,   // cond_resched: reschedules under none/voluntary
    MIGHT_RESCHED,  // might_sleep(): reschedules under voluntary only
    RETURN_TO_USER, // exit_to_user_mode: reschedule, then the arch's user-state restore
    IRQ_RESTORE,    // local_irq_restore/enable after its exec: the mask takes the saved state
                    // (Frame::restore_irqs_disabled); what it lets through is taken at once
};

// WAKING: TASK_WAKING, a wake-up has claimed the sleeping task and not yet enqueued it (the waker
// activates it after its own work, or it waits on its CPU's wake_list).
enum class TaskState : std::uint8_t { RUNNING, RUNNABLE, SLEEPING, WAKING, DEAD };
enum class SchedPolicy : std::uint8_t { NORMAL, FIFO };

// Architecture hooks for SIMD/FPU state on the scheduler and user-return paths (arch/*).
class ArchFpu {
public:
    virtual ~ArchFpu() = default;
    // __switch_to: FPU state handling for prev -> next; returns the cycles it costs.
    virtual Cycles switch_fpu(Cpu& cpu, TaskStruct& prev, TaskStruct& next) = 0;
    // arch_exit_to_user_mode_prepare: lazy restore of current's user state; returns cycles.
    virtual Cycles exit_to_user(Cpu& cpu, TaskStruct& t) = 0;
    // Kernel code is about to execute SIMD instructions (once per exec): the cycles of an
    // exception this takes first (e.g. PowerPC's SPE-unavailable trap), or 0.
    virtual Cycles kernel_simd_exec(Cpu& cpu) { return 0; }
};

// Work a context still has to do before its coroutine continues.
struct PendingExec {
    Cycles remaining = 0;
    Cat cat = Cat::OTHER;
    bool simd_check = false; // the work uses SIMD registers that must hold `expect`
    bool arch_checked = false; // ArchFpu::kernel_simd_exec was consulted
    SimdToken expect{};
    SimdToken reported{}; // the foreign contents already reported for this work (each overwrite once)
};

// One execution context on a CPU's stack: a task's, or a softirq/hardirq activation.
struct Frame {
    // GUEST: a vCPU thread in guest mode (Cpu::run_guest), the host CPU runs its guest.
    // IRQ_*: a hardirq (or NMI) frame's own steps around its handler (Cpu::irq_steps), the next
    // one to take: the entry's two execs, the handler's start (or a plain handler's next step),
    // irq_exit after a plain handler's last exec (IrqStep::end), the exit's second exec, the end.
    // SOFTIRQ_*: the softirq frame's __do_softirq steps around its vectors' handlers (irq_steps):
    // the start, after a round's exec, after its local_irq_enable's exec, the next vector's
    // handler, after its local_irq_disable's exec.
    enum class St : std::uint8_t {
        READY, POINT, BLOCKED, IDLE, DONE, GUEST,
        IRQ_ENTRY, IRQ_ENTRY_EXTRA, IRQ_HANDLER, IRQ_EXIT, IRQ_EXIT_EXTRA, IRQ_RETURN,
        SOFTIRQ_START, SOFTIRQ_ROUND, SOFTIRQ_ENABLED, SOFTIRQ_ACTION, SOFTIRQ_DISABLED
    };

    CtxKind kind = CtxKind::TASK;
    St st = St::READY;
    Point point = Point::IRQ_ENABLE;
    bool saved_irqs_disabled = false; // IRQ mask of the interrupted context
    bool from_irq_exit = false;       // softirq frame started by irq_exit (vs local_bh_enable)
    bool simd_clobbered = false;      // the current (or last) SIMD exec found foreign register contents
    bool restore_irqs_disabled = false; // the mask state of a pending Point::IRQ_RESTORE
    std::uint8_t nexecs = 0;
    std::array<PendingExec, 8> execs{};
    std::coroutine_handle<> cont;
    engine::Task<> root;        // the context's coroutine (a hardirq frame's: its handler, once started)
    TaskStruct* task = nullptr; // for TASK frames
    unsigned vector = 0;        // for HARDIRQ frames
    unsigned irq_step = 0;      // a plain handler's next step (IrqStepsHandler); a softirq frame's vectors left
    std::uint64_t serial = 0;   // identifies this activation of the context (its saved MSR etc.)
    Tick trace_begin = 0;       // when this activation's trace slice began (tracing only)
};

struct TaskStruct {
    int pid = 0;
    std::string comm;
    SchedPolicy policy = SchedPolicy::NORMAL;
    int rt_priority = 0; // 1..99 for FIFO; 100: the stopper (stop class, above every FIFO task)
    Tick timer_slack = 50 * engine::PS_PER_US; // timer_slack_ns: init_task's 50 us; prctl(PR_SET_TIMERSLACK)
    bool kthread = false; // PF_KTHREAD: owns no user FPU state
    bool in_user = false; // executing in user mode
    bool uses_user_simd = false;
    GuestRun* guest = nullptr; // a vCPU thread's guest while it awaits Cpu::run_guest
    TaskState state = TaskState::RUNNABLE;
    Cpu* cpu = nullptr;
    Frame frame;
    // scheduler bookkeeping
    Tick vruntime = 0;
    Tick slice_start = 0;
    Tick sum_exec = 0;
    Tick last_ran = 0;
    std::uint64_t nr_switches = 0;
    // The CPUs it may run on (sched_setaffinity), sharing one last-level cache; empty: only `cpu`.
    // A task with several is placed at each wake-up (Cpu::select_task_rq) and may be pulled to
    // another CPU while it is queued, preempted mid-body (Cpu::load_balance), or, when it was
    // running, preempted by its CPU's stopper and pushed (active balance). Contract of such a
    // task's body: after every await at which it can be preempted it takes its CPU from `cpu`
    // again and holds no Cpu& across such an await (docs/architecture.md).
    std::vector<Cpu*> cpus_allowed;
    // cpumask_test_cpu(cpu, p->cpus_ptr) for a task with cpus_allowed.
    bool allowed_on(const Cpu* c) const {
        return std::find(cpus_allowed.begin(), cpus_allowed.end(), c) != cpus_allowed.end();
    }
    Cpu* recent_used_cpu = nullptr; // p->recent_used_cpu: the CPU before the last placement's prev
    std::uint64_t nr_migrations = 0;      // moves to another CPU (se.nr_migrations): placements and balances
    std::uint64_t nr_balance_moves = 0;   // load balances that pulled it to another CPU
    // When it last went to the head of its runqueue's cfs_tasks list (picked, or enqueued by a
    // wake-up): detach_tasks looks at the queued tasks from the oldest.
    Tick list_stamp = 0;
    // SIMD bookkeeping, interpreted by the arch (TIF_NEED_FPU_LOAD, TIF_FOREIGN_FPSTATE, ...)
    SimdToken user_token{};    // the token this task's user state carries
    SimdToken saved_user{};    // what was saved into thread.fpu / vfpstate
    SimdToken kernel_token{};  // token of this task's kernel-mode SIMD use
    bool fpu_state_saved = false; // registers do not hold our latest user state (NEED_FPU_LOAD)
    std::uint32_t trace_name = 0; // comm's id in the trace's string table, once interned
    // a name for reports
    std::string describe() const;
};

using IrqHandler = engine::Task<> (*)(Cpu&, void* ctx);
// A hardirq handler's step in plain steps: its code up to its next exec, `c` cycles of `cat`
// (none when 0); with `end`, the handler returns after that exec (at once when c is 0) and
// irq_exit follows it: a last step need not be called only to say so.
struct IrqStep {
    Cycles c;
    Cat cat;
    bool end;
};
// A hardirq handler that suspends on nothing but execs, as plain steps: called with step 0, 1, ...
// (no coroutine frame); each step's exec is taken as `co_await cpu.exec(...)` would take it.
using IrqStepsHandler = IrqStep (*)(Cpu&, void* ctx, unsigned step);
using SoftirqHandler = engine::Task<> (*)(Cpu&, void* ctx);
// Runs in hardirq context at expiry; returns the cycles its work costs beyond the expiry itself.
using TimerFn = Cycles (*)(Cpu&, void* ctx, Tick expiry);

// Softirq vectors, include/linux/interrupt.h order.
enum SoftirqNr : unsigned {
    HI_SOFTIRQ,
    TIMER_SOFTIRQ,
    NET_TX_SOFTIRQ,
    NET_RX_SOFTIRQ,
    BLOCK_SOFTIRQ,
    IRQ_POLL_SOFTIRQ,
    TASKLET_SOFTIRQ,
    SCHED_SOFTIRQ,
    HRTIMER_SOFTIRQ,
    RCU_SOFTIRQ,
    NR_SOFTIRQS
};
std::string_view softirq_name(unsigned nr);

// The hypervisor under a CPU that is a KVM vCPU (kvm/kvm.h): the cycles the vCPU's core spends
// before the guest takes interrupt `vector` (the exit, the host's handling and the re-entry, or the
// wake-up from WFI when the guest was idle).
class Hypervisor {
public:
    virtual ~Hypervisor() = default;
    virtual Cycles irq_delivery(Cpu& cpu, unsigned vector, bool idle) = 0;
    // The vCPU is stalled (Cpu::vcpu_stall: its thread is off the host CPU) and interrupt `vector`
    // was raised for it: kvm_vcpu_kick, which wakes the thread when it is blocked.
    virtual void stalled_irq(Cpu& cpu, unsigned vector) {}
    // The vCPU enters WFI: nothing to run, no interrupt pending.
    virtual void wfi(Cpu& cpu) {}
    // Guest code is about to touch the FP/SIMD registers (kernel-mode NEON, a save or load of a
    // task's state): the cycles of the hypervisor's lazy switch when the vCPU does not own them
    // (a trap on the first use since they were given back), else 0.
    virtual Cycles fpsimd_access(Cpu& cpu) { return 0; }
};

// A vCPU thread's guest as its host CPU runs it (kvm/vcpu_thread.h): the host task in
// Cpu::run_guest() is in guest mode while the host CPU has nothing else to do.
class GuestRun {
public:
    virtual ~GuestRun() = default;
    // Whether the guest has work (false: in WFI with nothing pending; the thread blocks).
    virtual bool runnable() const = 0;
    // The host CPU enters the guest: the guest CPU runs from now.
    virtual void enter(Cpu& host) = 0;
    // Host work takes the core, or the guest stopped on its own: the guest CPU stops now.
    // `host_irq`: a host interrupt takes it (the guest exits on the IRQ). Returns the cycles the exit
    // and the later re-entry cost the thread (0 when the guest went idle or was already exiting).
    virtual Cycles exit(Cpu& host, bool host_irq) = 0;
    // Cycles the thread pays before it enters the guest again (the put and load around a switch
    // away from it), 0 when none are owed.
    virtual Cycles entry_cost(Cpu& host) = 0;
    // Whether the thread is halt-polling (kvm_vcpu_halt): it then keeps the host CPU only while no
    // other task is runnable there, so a wake-up on that CPU makes it look again.
    virtual bool polls() const { return false; }
    // The host's kernel_neon_begin in the thread's context (a host interrupt or softirq while it
    // is in KVM_RUN): the cycles of fpsimd_save for the registers the loaded vCPU's binding says
    // are live, after which they are free; none: the host's own task bookkeeping applies.
    virtual std::optional<Cycles> host_kernel_neon_begin() { return std::nullopt; }
};

struct CpuStats {
    std::array<std::array<Cycles, CATS>, CTX_KINDS> cycles{};
    Tick busy_ticks = 0;
    Tick idle_ticks = 0;
    std::uint64_t hardirqs = 0;
    std::uint64_t softirq_runs = 0;     // __do_softirq invocations
    std::uint64_t softirq_restarts = 0; // extra rounds inside one invocation
    std::uint64_t ksoftirqd_wakeups = 0;
    std::array<std::uint64_t, NR_SOFTIRQS> softirq_handled{};
    std::uint64_t context_switches = 0;
    std::uint64_t preemptions = 0; // involuntary switches
    // load balancing onto this CPU (newidle_balance, nohz_idle_balance)
    std::uint64_t lb_newidle = 0;  // newidle balances run (past rd->overload, avg_idle and NI_RANDOM)
    std::uint64_t lb_idle = 0;     // CPU_IDLE balances run from the nohz kick
    std::uint64_t lb_pulled = 0;   // tasks those pulled here
    std::uint64_t nohz_kicks = 0;  // nohz_balancer_kick: this CPU kicked an idle one
    std::uint64_t active_balances = 0; // running tasks this CPU's stopper pushed to an idle CPU (alb_pushed)
    std::array<std::uint64_t, 4> irqflag_ops{}; // disable, enable, save, restore
    std::uint64_t bh_disable_ops = 0;
    // watchdog view
    Tick longest_np_span = 0;
    Tick longest_np_span_start = 0;
    std::string longest_np_holder;
    std::uint64_t rcu_stall_warnings = 0;
    std::uint64_t rcu_exp_stall_warnings = 0;
    std::uint64_t soft_lockups = 0;
    // SIMD findings
    std::uint64_t simd_clobbers = 0;
};

// What the CPUs of one machine share for load balancing: the root domain's overload flag
// (rd->overload: some runqueue had two or more tasks since a balance last found none) and the
// nohz idle balancer's next time (nohz.next_balance). One sched_domain spans the machine's CPUs
// (MC with CONFIG_SCHED_MC, else DIE): `span`.
// Mirrors struct root_domain (kernel/sched/sched.h) and fair.c's nohz.next_balance.
struct RootDomain {
    std::vector<Cpu*> span;
    bool overload = false;
    std::uint64_t nohz_next_balance = 0; // jiffies
};

// The load balancer's view of one balance: which kind of CPU pulls (enum cpu_idle_type).
enum class CpuIdleType : std::uint8_t { CPU_IDLE, CPU_NEWLY_IDLE };

class Cpu final : public engine::EventTarget {
public:
    Cpu(engine::Simulation& sim, int id, engine::Clock clock, const KernelCosts& costs,
        const KernelConfig& cfg);
    Cpu(const Cpu&) = delete;
    Cpu& operator=(const Cpu&) = delete;
    ~Cpu();

    // --- identity and time -------------------------------------------------------------
    int id() const { return id_; }
    Tick now() const { return sim_.now(); }
    engine::Simulation& sim() { return sim_; }
    const engine::Clock& clock() const { return clock_; }
    const KernelCosts& costs() const { return costs_; }
    const KernelConfig& config() const { return cfg_; }
    void set_arch_fpu(ArchFpu* fpu) { fpu_ = fpu; }
    // This CPU is a vCPU of `h`: every interrupt first costs its delivery, and an idle (WFI) CPU
    // learns of a wake-up through a reschedule IPI rather than by polling.
    void set_hypervisor(Hypervisor* h) { hyp_ = h; }
    Hypervisor* hypervisor() const { return hyp_; }
    ArchFpu* arch_fpu() const { return fpu_; }

    // --- preempt_count and masks --------------------------------------------------------
    std::uint32_t preempt_count() const { return preempt_count_; }
    void preempt_count_add(std::uint32_t v) { preempt_count_ += v; }
    void preempt_count_sub(std::uint32_t v);
    bool irqs_disabled() const { return irqs_disabled_; }
    void set_irqs_disabled(bool d) { irqs_disabled_ = d; }
    // Whether an interrupt is pending that the current mask state lets through.
    bool irqs_deliverable() const { return deliverable_irqs() != 0; }
    bool need_resched() const { return need_resched_; }
    // No task but the current one is runnable here (single_task_running()).
    bool single_task_running() const { return runqueue_.empty(); }
    void set_need_resched() { need_resched_ = true; }
    // Label of whoever last raised the PREEMPT field from zero (for "what held it").
    void set_preempt_holder(const char* what) { preempt_holder_ = what; }
    // What keeps the CPU from rescheduling at this instant, and since when ("" if nothing):
    // for explaining a late wake-up.
    std::string describe_np_state() const;
    // Records that a reschedule request would be honoured here if one were pending (the
    // need_resched() checks of yielding loops); closes the current non-preemptible span.
    void note_resched_check() { np_mark(true); }

    // --- contexts -----------------------------------------------------------------------
    TaskStruct* current() const { return current_task_; }
    CtxKind ctx_kind() const { return stack_[depth_ - 1]->kind; }
    // A number naming the running context's activation: a task keeps one for its life, every
    // interrupt or softirq activation gets a new one.
    std::uint64_t context_serial() const { return stack_[depth_ - 1]->serial; }
    std::uint64_t new_context_serial() { return ++serial_counter_; }
    // A token naming the running context's kernel-mode SIMD use; a new generation each call.
    SimdToken kernel_simd_token();
    std::string describe_token(SimdToken t) const;

    // --- the SIMD register file (hardware state) ---------------------------------------
    SimdToken simd_regs() const { return simd_regs_; }
    void set_simd_regs(SimdToken t) { simd_regs_ = t; }
    // Whether the last exec_simd of the running context found its registers clobbered.
    bool last_simd_clobbered() const { return stack_[depth_ - 1]->simd_clobbered; }

    // --- awaitables: the only ways simulated code gives up the CPU ----------------------
    // An exec without SIMD work: only what its pending exec needs lives in the awaiter (in the
    // coroutine's frame, written at every co_await); the PendingExec is made where it suspends.
    struct [[nodiscard]] ExecAwaiter {
        Cpu& cpu;
        Cycles remaining;
        Cat cat;
        // Without suspending when there is nothing to do, or when nothing can come between the
        // exec's start and its end (Cpu::exec_in_place). Inline at every co_await is only
        // exec_in_place_plain; exec_in_place's rare calls are in ready_asked, so that the common
        // path saves no registers (inline, below the class). False: cpu.refused_due_ is written
        // (exec_in_place's `due`), for await_suspend, which the caller makes next.
        bool await_ready() noexcept;
        bool ready_asked() noexcept; // cpu.cpp
        PendingExec pending() const noexcept { return {remaining, cat, false, false, {}}; }
        void await_suspend(std::coroutine_handle<> h) noexcept {
            if (const Tick due = cpu.refused_due_) cpu.suspend_exec_started(h, pending(), due);
            else cpu.suspend_exec(h, pending());
        }
        void await_resume() const noexcept {}
    };
    // An exec of SIMD work: it always suspends (the dispatch checks the register file at its
    // start and end); yields true when it found foreign contents in the register file.
    struct [[nodiscard]] SimdExecAwaiter {
        Cpu& cpu;
        PendingExec e;
        bool await_ready() const noexcept { return false; }
        void await_suspend(std::coroutine_handle<> h) noexcept { cpu.suspend_exec(h, e); }
        bool await_resume() const noexcept { return cpu.last_simd_clobbered(); }
    };
    // Spends `c` cycles of the running context on category `cat`.
    ExecAwaiter exec(Cycles c, Cat cat) { return {*this, c, cat}; }
    // The same, running the kernel code `t`: `c` warm cycles and the stall of its instruction fetch.
    ExecAwaiter exec(Cycles c, Cat cat, Text t) { return exec(c + text(t), cat); }
    // The instruction fetch stall of running `t` now (0 without an instruction cache modelled).
    Cycles text(Text t) { return text_ ? text_->fetch(id_, t) : 0; }
    // The machine's instruction fetch (nullptr: code is warm).
    void set_text_fetch(TextFetch* f) { text_ = f; }
    // Spends `c` cycles computing with SIMD registers that must hold `expect` throughout.
    SimdExecAwaiter exec_simd(Cycles c, Cat cat, SimdToken expect) {
        return {*this, PendingExec{c, cat, true, false, expect, {}}};
    }

    // RETURN_TO_USER is passed in place when nothing is to be rescheduled or restored
    // (Cpu::return_to_user_in_place); with a restore owed, the caller waits for its exec.
    struct [[nodiscard]] PointAwaiter {
        Cpu& cpu;
        Point p;
        Cycles restore = 0;
        bool await_ready() noexcept { return p == Point::RETURN_TO_USER && cpu.return_to_user_in_place(restore); }
        void await_suspend(std::coroutine_handle<> h) noexcept {
            if (restore) cpu.suspend_exec(h, PendingExec{restore, Cat::SIMD_SAVE_RESTORE, false, false, {}});
            else cpu.suspend_point(h, p);
        }
        void await_resume() const noexcept {}
    };
    PointAwaiter point(Point p) { return {*this, p}; }

    // `c` cycles on `cat`, then the point `p`, with nothing of the caller's between them: the
    // shape of the primitives that end in a preemption point (local_bh_enable, cond_resched).
    // `skip`: neither (the primitive is a no-op under this configuration).
    // The exec is done in place when exec_in_place takes it, and then the point too when it
    // would change nothing (Cpu::point_in_place): the caller goes on without suspending.
    struct [[nodiscard]] ExecPointAwaiter {
        Cpu& cpu;
        PendingExec e;
        Point p;
        bool skip;
        bool exec_done = false;
        bool await_ready() noexcept {
            if (skip) return true;
            Tick due = 0;
            if (e.remaining != 0 && !(cpu.defer_exec_ && cpu.exec_in_place(e, due))) return false;
            exec_done = true;
            return cpu.point_in_place(p);
        }
        void await_suspend(std::coroutine_handle<> h) noexcept {
            if (exec_done) cpu.suspend_point(h, p);
            else cpu.suspend_exec_point(h, e, p);
        }
        void await_resume() const noexcept {}
    };
    ExecPointAwaiter exec_point(Cycles c, Cat cat, Point p, bool skip = false) {
        return {*this, PendingExec{c, cat, false, false, {}}, p, skip};
    }

    // The running task sleeps until wake_up_process(). Precondition: task context.
    struct [[nodiscard]] BlockAwaiter {
        Cpu& cpu;
        bool await_ready() const noexcept { return false; }
        void await_suspend(std::coroutine_handle<> h) noexcept { cpu.suspend_block(h); }
        void await_resume() const noexcept {}
    };
    BlockAwaiter block() { return {*this}; }

    // The running task enters guest mode (the KVM_RUN loop of a vCPU thread) and stays there
    // while this CPU has nothing else to do: interrupts, softirqs and other tasks take the CPU
    // from the guest (GuestRun::exit) and give it back (GuestRun::enter); the task returns from
    // the await when the guest is no longer runnable. Guest time is the task's user time
    // (account_guest_time). Precondition: task context.
    struct [[nodiscard]] GuestAwaiter {
        Cpu& cpu;
        GuestRun& g;
        bool await_ready() const noexcept { return false; }
        void await_suspend(std::coroutine_handle<> h) noexcept { cpu.suspend_guest(h, g); }
        void await_resume() const noexcept {}
    };
    GuestAwaiter run_guest(GuestRun& g) { return {*this, g}; }
    bool in_guest() const { return in_guest_ != nullptr; }
    // The category of the guest-mode time from now on (USER at each entry: account_guest_time);
    // a halt-polling vCPU thread's poll is KVM's (VIRT), not the guest's.
    void guest_time_as(Cat cat);

    // --- this CPU as a vCPU whose thread shares a host CPU (kvm/vcpu_thread.h) ----------------
    // The vCPU thread leaves guest mode: nothing here makes progress until vcpu_resume(); an exec
    // in flight keeps its remaining cycles, interrupts raised meanwhile stay pending (and are
    // told to the Hypervisor), and the stalled time is neither busy nor idle (steal).
    void vcpu_stall();
    void vcpu_resume();
    // The host CPU this vCPU's thread runs on: a task this vCPU wakes there is a local wake-up
    // (the thread, in its exit, sees need_resched before it enters again), not an IPI.
    void set_vcpu_host(Cpu* host) { vcpu_host_ = host; }
    bool stalled() const { return stalled_; }
    // This CPU looks at its state again now (an event): what a reschedule IPI's arrival does.
    void kick() { sim_.schedule_at(now(), this, EV_KICK); }
    bool idle() const { return idle_; }
    // An idle CPU that a remote wake-up reaches without a reschedule IPI: its idle loop polls
    // TIF_NEED_RESCHED (KernelConfig::idle_polling), or it is a vCPU, whose wake-up KVM delivers.
    bool idle_wakes_without_ipi() const { return idle_ && (cfg_.idle_polling || hyp_); }

    // --- interrupts ---------------------------------------------------------------------
    void request_irq(unsigned vector, IrqHandler fn, void* ctx, std::string name);
    void request_irq(unsigned vector, IrqStepsHandler fn, void* ctx, std::string name);
    // request_nmi: with pseudo-NMI, the vector is delivered even while interrupts are masked
    // (the PMR lets its priority through); otherwise it is an ordinary interrupt.
    void request_nmi(unsigned vector, IrqHandler fn, void* ctx, std::string name);
    std::uint64_t soft_masked_irqs() const { return soft_masked_irqs_; }
    std::uint64_t nmis() const { return nmis_; }
    // The interrupt line `vector` of this CPU fires now (called from device/timer events).
    void raise_irq(unsigned vector);
    std::uint64_t irq_count(unsigned vector) const { return irqs_[vector].count; }

    // --- softirqs (kernel/softirq.c) ---------------------------------------------------
    void open_softirq(unsigned nr, SoftirqHandler fn, void* ctx);
    // raise_softirq_irqoff: marks pending; outside interrupt context wakes ksoftirqd.
    void raise_softirq_irqoff(unsigned nr);
    // __raise_softirq_irqoff: marks pending only; it runs at the next irq exit or
    // local_bh_enable (napi_schedule uses this form).
    void __raise_softirq_irqoff(unsigned nr) { softirq_pending_ |= 1u << nr; }
    std::uint32_t softirq_pending() const { return softirq_pending_; }

    // --- timers (kernel/time/hrtimer.c) -------------------------------------------------
    // Arms a one-shot hrtimer; `fn` runs in hardirq context at expiry. Returns a handle.
    std::uint32_t hrtimer_start(Tick expiry, TimerFn fn, void* ctx) { return hrtimer_start_range(expiry, 0, fn, ctx); }
    // hrtimer_start_range_ns: the timer may expire anywhere in [soft, soft + slack]. It is queued at
    // soft + slack (the hard expiry, which programs the timer interrupt); an earlier timer
    // interrupt expires it once `soft` has passed. `fn` gets `soft`.
    std::uint32_t hrtimer_start_range(Tick soft, Tick slack, TimerFn fn, void* ctx);
    void hrtimer_cancel(std::uint32_t handle);
    // This CPU's timer-wheel base (kernel/timer.h), made at first use; owns TIMER_SOFTIRQ.
    TimerBase& timer_base();
    std::uint64_t jiffies() const { return now() / tick_period_; }
    Tick tick_period() const { return tick_period_; }

    // --- tasks and the scheduler (kernel/sched) ----------------------------------------
    // Creates a task pinned to this CPU, runnable at once; `body` is its (suspended) coroutine.
    TaskStruct& create_task(std::string comm, SchedPolicy policy, int rt_priority, bool kthread,
                            engine::Task<> body);
    // try_to_wake_up at once, all of it on this CPU (the waker): makes a sleeping task runnable and
    // decides whether it preempts. A task with cpus_allowed is first placed by select_task_rq, from
    // this CPU. For callers whose own figures hold the whole wake-up (KVM's exits, a softirq's
    // ksoftirqd); no wake_list.
    void wake_up_process(TaskStruct& t);
    // try_to_wake_up's placement and ttwu_queue_wakelist, from this CPU: a sleeping `t` becomes
    // TASK_WAKING and is placed; when ttwu_queue_cond holds for its CPU it goes on that CPU's
    // wake_list, which the CPU empties itself (ttwu_do_activate there): in its call-function IPI,
    // or in its idle loop when that polls and no IPI is sent. False: `t` was not sleeping, or this
    // CPU activates it (ttwu_do_activate, after charging sched.wakeup_activate).
    bool ttwu_queue_wakelist(TaskStruct& t);
    // ttwu_do_activate from this CPU of a task that ttwu_queue_wakelist left TASK_WAKING: enqueue on
    // its CPU, check_preempt_curr, and the reschedule IPI or kick a remote CPU then needs. Does
    // nothing for a task in another state.
    void ttwu_do_activate(TaskStruct& t);
    // try_to_wake_up whose cycles the caller returns (an hrtimer function): wakes `t` now and returns
    // sched.wakeup, plus sched.wakeup_activate unless `t` went to its CPU's wake_list.
    Cycles ttwu_cycles(TaskStruct& t);
    // cpus_share_cache(): one sched_domain with SD_SHARE_PKG_RESOURCES (the last-level cache's)
    // spans both CPUs (their sd_llc_id agree). System gives each machine's CPUs one id.
    bool cpus_share_cache(const Cpu& other) const { return sd_llc_id_ == other.sd_llc_id_; }
    // `llc_domain`: whether such a domain exists (sd_llc); without one (an arm32 kernel without
    // CONFIG_SCHED_MC) each CPU has an id of its own and select_idle_sibling scans no CPU.
    void set_sd_llc_id(int id, bool llc_domain = true) {
        sd_llc_id_ = id;
        llc_domain_ = llc_domain;
    }
    // Tasks queued on this CPU's wake_list, not yet activated.
    std::size_t wake_list_len() const { return wake_list_.size(); }
    // select_task_rq_fair for a wake-up from this CPU: the CPU the sleeping task `t` runs on next.
    Cpu& select_task_rq(TaskStruct& t);
    // Joins the machine's root domain (System, for a machine of two or more CPUs); `rng` is this
    // CPU's sched_rng (NI_RANDOM's dice). Without it the CPU balances nothing (no sched_domain).
    // Makes this CPU's stopper (migration/N), which only the load balancer uses here.
    void set_root_domain(RootDomain* rd, engine::Rng rng);
    // The stopper thread (migration/N), nullptr without a root domain.
    TaskStruct* stopper() const { return stopper_; }
    // rq->nr_running: the runnable tasks here, the current one included (not the idle task).
    std::size_t nr_running() const {
        const bool curr = current_task_ && current_task_ != idle_task_ && current_task_->state == TaskState::RUNNING;
        return runqueue_.size() + (curr ? 1 : 0);
    }
    // rq->avg_idle (the mean idle time newidle_balance weighs its cost against).
    Tick avg_idle() const { return avg_idle_; }
    // idle_cpu(): the idle task is current and nothing is runnable (an interrupt taken from idle
    // keeps the CPU idle in this sense).
    bool available_idle() const { return current_task_ == idle_task_ && runqueue_.empty(); }
    const std::vector<TaskStruct*>& tasks() const { return tasks_; }
    TaskStruct& ksoftirqd() { return *ksoftirqd_; }

    // Starts the periodic tick and the first task. Call once, before Simulation::run().
    void boot();
    // Closes the open accounting at the end of the run.
    void finish();

    const CpuStats& stats() const { return stats_; }
    CpuStats& stats() { return stats_; }
    // Registers this CPU's counters under `s` (<machine>/cpu<N>); kernel/cpu_stats.cpp.
    void register_stats(const stats::Scope& s) const;
    // Where this CPU's findings go (its machine's log); none: they are only counted.
    void set_findings(stats::Findings* f) { findings_ = f; }
    // Pushes a finding caught on this CPU now (kernel/cpu_stats.cpp).
    void report_finding(stats::FindingKind kind, std::string culprit, std::string victim, std::string where);
    // What is running here, for a finding's victim or culprit ("task modprobe", "softirq NET_RX").
    std::string running_context() const;
    // Counts a primitive of the IRQ-masking implementation (index: 0 disable .. 3 restore).
    void count_irqflag_op(int which) { ++stats_.irqflag_ops[which]; }

    // Reports a SIMD clobber finding (also called by arch code that detects one itself).
    void report_clobber(SimdToken expected, SimdToken found, const char* where);

    // The engine delivers this CPU's events here.
    void on_event(std::uint64_t arg) override;

    // --- the run trace (kernel/trace.h) ----------------------------------------------
    // Records this CPU's slices into `t` on track `track` (nullptr: no recording). Call
    // before boot().
    void set_trace(TraceRecorder* t, std::uint16_t track) {
        trace_ = t;
        trace_track_ = track;
        plain_end_update();
    }
    bool tracing() const {
        if constexpr (TRACE_COMPILED) return trace_ != nullptr;
        else return false;
    }
    // A kernel-mode SIMD bracket opened at `begin` by `who` (static string) in the context
    // activation `serial` closes now; recorded when it closes in that same activation.
    void trace_bracket(Tick begin, std::uint64_t serial, const char* who);
    // An instant record of `kind` now, for a tracepoint of a layer above this one (tcp:tcp_probe).
    void trace_instant(TraceKind kind, std::uint32_t name, std::uint64_t arg, std::uint8_t sub) {
        if (tracing()) trace_->record(TraceRecord{now(), now(), arg, name, trace_track_, kind, sub});
    }

    // Interrupt vectors the model itself uses.
    static constexpr unsigned LOCAL_TIMER_VECTOR = 0;
    static constexpr unsigned RESCHEDULE_VECTOR = 1;
    static constexpr unsigned CALL_FUNCTION_SINGLE_VECTOR = 2; // IPI_CALL_FUNC, CALL_FUNCTION_SINGLE_VECTOR
    static constexpr unsigned FIRST_DEVICE_VECTOR = 8;

private:
    friend struct CpuTestAccess;
    friend class IrqRestoreAwaiter;
    // EV_IPI carries its vector above the two kind bits (ipi_event).
    enum EventKind : std::uint64_t { EV_EXEC_DONE = 0, EV_TIMER = 1, EV_KICK = 2, EV_IPI = 3 };
    static constexpr std::uint64_t ipi_event(unsigned vector) { return (std::uint64_t{vector} << 2) | EV_IPI; }

    struct IrqDesc {
        IrqHandler fn = nullptr;
        IrqStepsHandler steps = nullptr; // instead of fn
        void* ctx = nullptr;
        std::string name;
        std::uint64_t count = 0;
        std::uint32_t trace_name = 0; // name's id in the trace's string table, once interned
    };
    struct SoftirqAction {
        SoftirqHandler fn = nullptr;
        void* ctx = nullptr;
    };
    struct HrTimer {
        Tick expiry; // hard expiry (_expires): the queue's order and the interrupt's time
        Tick soft;   // soft expiry (_softexpires): <= expiry
        TimerFn fn;
        void* ctx;
        std::uint32_t id;
        bool armed;
    };

    // dispatch
    void run();
    // run()'s loop, inline in run() and (IN_LOOP) in on_event's completion loop, which keeps
    // in_run_ set across its dispatches itself
    template <bool IN_LOOP> inline void dispatch();
    void start_exec(Frame& f);
    void complete_exec();
    void account(CtxKind kind, Cat cat, Cycles c) {
        stats_.cycles[static_cast<std::size_t>(kind)][static_cast<std::size_t>(cat)] += c;
    }
    void interrupt_exec();
    void push_frame(Frame& f, CtxKind kind);
    void pop_frame();
    void handle_point(Frame& f);
    // What preemption point `p` of frame `f` (BH_ENABLE, PREEMPT_ENABLE, MIGHT_RESCHED or
    // COND_RESCHED) must do now: run the pending softirqs, switch, or nothing; the watchdog view's
    // mark made where the point is a preemption point (handle_point's steps for those points).
    enum class PointDue : std::uint8_t { NOTHING, SOFTIRQ, SCHEDULE };
    PointDue point_due(const Frame& f, Point p);
    // Whether the running frame, with nothing queued, may pass point `p` now without suspending:
    // no interrupt is deliverable and handle_point would only make the watchdog view's mark (made
    // here) and set the frame READY, which the dispatch loop would resume at once.
    bool point_in_place(Point p);
    // handle_point's RETURN_TO_USER for the running frame, now, when nothing is queued, no
    // interrupt is deliverable and nothing is to be rescheduled: true when no user state is to be
    // restored; else `restore` is the exec that handle_point would queue (false, nothing changed,
    // when it returns with `restore` 0).
    bool return_to_user_in_place(Cycles& restore);
    void return_from_interrupt(bool saved_irqs_disabled);
    // Takes the first of `ready` (deliverable_irqs(), not 0); returns its new frame, now on top.
    Frame& push_hardirq(std::uint64_t ready);
    void push_softirq(bool from_irq_exit);
    void end_idle();
    void suspend_exec(std::coroutine_handle<> h, const PendingExec& e);
    bool exec_in_place(const PendingExec& e, Tick& due); // inline, below the class
    enum class InPlace : std::uint8_t { REFUSED, DONE, ASK };
    InPlace exec_in_place_plain(Cycles remaining, Cat cat, Tick& due); // inline, below the class
    // The watchdog view's mark that an exec starting now makes (np_mark(false)), which does
    // nothing in an interrupt context whose span is already open, nor in task context while the
    // open span is the current task's kernel code (np_quiet_).
    // Kept in np_due_, set by np_due_update() at each change of idle_, depth_, np_quiet_, np_open_.
    bool np_mark_due() const { return np_due_; }
    // Also updates plain_end_, which depends on np_due_.
    void np_due_update() {
        np_due_ = idle_ || (depth_ == 1 ? !np_quiet_ : !np_open_);
        plain_end_update();
    }
    void plain_end_update() { plain_end_ = tracing() || np_due_ || pending_irqs_ != 0 ? 0 : clock_.ceil_fast_end(); }
    // exec_in_place's work after its first test and the mark (and exec_in_place_marked_slow's).
    bool exec_in_place_marked(const PendingExec& e, Tick& due);    // inline, below the class
    InPlace exec_in_place_below(Cycles remaining, Cat cat, Tick& due, Cycles bound); // inline, below
    bool exec_in_place_marked_slow(const PendingExec& e, Tick& due); // out of line, cpu.cpp
    void suspend_exec_started(std::coroutine_handle<> h, const PendingExec& e, Tick due); // inline, below
    void exec_started(Frame& f, const PendingExec& e, Tick due); // inline, below
    void trace_exec_in_place(Frame& f, const PendingExec& e, Tick start);
    void suspend_exec_point(std::coroutine_handle<> h, const PendingExec& e, Point p);
    void suspend_exec_irq_restore(std::coroutine_handle<> h, const PendingExec& e, bool flags, Tick due);
    void suspend_point(std::coroutine_handle<> h, Point p);
    void suspend_block(std::coroutine_handle<> h);
    void suspend_guest(std::coroutine_handle<> h, GuestRun& g);
    void enter_guest(GuestRun& g);
    void leave_guest();
    bool check_simd(PendingExec& e, const char* where);

    // scheduler
    void enqueue(TaskStruct& t);
    void dequeue(TaskStruct& t);
    TaskStruct* pick_next_task();
    void schedule(bool preempt);
    bool preempts(const TaskStruct& woken, const TaskStruct& curr) const;
    void update_curr();
    // set_task_cpu -> migrate_task_rq_fair: moves sleeping `t` to `to`, its vruntime renormalised
    // from this CPU's min_vruntime to `to`'s.
    void migrate_task(TaskStruct& t, Cpu& to);
    static engine::Task<> tick_handler(Cpu& cpu, void* ctx);
    static IrqStep scheduler_ipi(Cpu& cpu, void* ctx, unsigned step);
    static IrqStep call_function_single_ipi(Cpu& cpu, void* ctx, unsigned step);
    // load balancing (kernel/sched/fair.c), onto this CPU
    // newidle_balance() from schedule() with nothing to pick: true when it pulled a task here;
    // `cost` gets the cycles of the balance it ran (0: none ran).
    bool newidle_balance(Cycles& cost);
    // One load_balance() of the machine's domain pulling to this CPU: the task moved, or none.
    // `stop_kick`: set to the busiest CPU when the balance queued an active balance there
    // (stop_one_cpu_nowait), whose stopper the caller then wakes (stop_one_cpu_nowait_wake).
    TaskStruct* load_balance(CpuIdleType idle, Cpu*& stop_kick);
    // can_migrate_task() of a task queued on another CPU for a balance to this CPU.
    bool can_migrate_task(const TaskStruct& t) const;
    // The queued SCHED_NORMAL task of this CPU's cfs_tasks list that follows `after` from the
    // tail (the oldest first; nullptr: start at the tail). The running task is not in runqueue_.
    TaskStruct* cfs_tasks_prev(const TaskStruct* after) const;
    // The per-CPU stopper (migration/N), stop class: created with the root domain.
    static engine::Task<> cpu_stopper_thread(Cpu& cpu);
    // active_load_balance_cpu_stop's detach_one_task (LBF_ACTIVE_LB) and attach_one_task.
    TaskStruct* detach_one_task(Cpu& dst);
    void attach_one_task(TaskStruct& p);
    void nohz_balancer_kick();
    static engine::Task<> run_rebalance_domains(Cpu& cpu, void* ctx);
    std::uint64_t msecs_to_jiffies(std::uint64_t ms) const { return (ms * cfg_.hz + 999) / 1000; }
    // try_to_wake_up up to ttwu_queue: claims a sleeping `t` (TASK_WAKING) and places it; false
    // when `t` is not sleeping.
    bool ttwu_claim(TaskStruct& t);
    bool ttwu_queue_cond(const Cpu& rq) const;
    // Takes the first task off the wake_list (llist_del_all's order reversed: FIFO).
    TaskStruct& wake_list_pop();
    static Cycles sched_tick_fn(Cpu& cpu, void* ctx, Tick expiry);
    void push_exec(Frame& f, const PendingExec& e);

    // softirq
    engine::Task<> handle_softirqs(); // ksoftirqd's; a softirq frame runs the same as steps (irq_steps)
    void wakeup_softirqd();
    static engine::Task<> ksoftirqd_body(Cpu& cpu);
    // The hardirq context's steps without a coroutine of their own (irq_enter/irq_exit), and the
    // softirq context's (__do_softirq), from the stage in f.st; true when a handler is to start
    // now (f.root, f.cont set, f.st READY).
    bool irq_steps(Frame& f);
    // One exec (c > 0) of those steps, as `co_await exec(c, cat)` in a coroutine: true when done
    // in place; else the frame waits for it and then takes stage `next`.
    bool irq_step_exec(Frame& f, Cycles c, Cat cat, Frame::St next);
    bool irq_step_asked(Frame& f, Cycles c, Cat cat, Frame::St next);
    bool irq_step_queued(Frame& f, Cycles c, Cat cat, Frame::St next, Tick due);
    // The softirq frame's handler just started by irq_steps, resumed here, and the steps and
    // handlers after it (softirq.cpp).
    void softirq_resume(Frame& f);
    // A hardirq's, NMI's or softirq's steps have ended: the pop that the dispatch loop's next pass
    // would make (softirq.cpp); true when the softirq frame's steps are to run now (irq_steps).
    bool irq_frame_end(Frame& f);
    static engine::Task<> idle_body(Cpu& cpu);

    // timers
    void arm_next_timer_event();
    void expire_timers();

    // trace hooks' out-of-line parts, called only when trace_ is set
    std::uint32_t trace_comm(TaskStruct& t);
    void trace_exec_end(const Frame& f, Cat cat, Cycles done);
    void trace_ctx_begin(Frame& f);
    void trace_ctx_end(const Frame& f);
    void trace_idle_begin();
    void trace_idle_end();
    void trace_switch(TaskStruct& prev, TaskStruct& next);
    void trace_clobber(SimdToken expected, SimdToken found, const char* where);
    void trace_finish();

    // watchdog view: non-preemptible spans
    struct NpHolder {
        enum Why : std::uint8_t { KERNEL_CODE, PREEMPT_OFF, BH_OFF, IRQS_OFF, SOFTIRQ, HARDIRQ } why;
        const TaskStruct* task;
        const char* holder;
        unsigned vector;
    };
    bool preemptible_now() const;
    NpHolder np_holder() const;
    std::string describe(const NpHolder& h) const;
    void np_mark(bool honour_point);
    inline void np_mark_exec(); // np_mark(false), defined in cpu.cpp
    void np_close(Tick end);

    engine::Simulation& sim_;
    int id_;
    engine::Clock clock_;
    KernelCosts costs_;
    KernelConfig cfg_;
    ArchFpu* fpu_ = nullptr;
    Hypervisor* hyp_ = nullptr;
    TextFetch* text_ = nullptr;

    std::uint32_t preempt_count_ = 0;
    bool irqs_disabled_ = false;
    bool need_resched_ = false;
    const char* preempt_holder_ = "";

    // context stack: [task, softirq, hardirq, nmi]
    std::array<Frame*, 4> stack_{};
    std::size_t depth_ = 0;
    TaskStruct* current_task_ = nullptr;
    Frame* running_ = nullptr; // frame whose coroutine is executing right now
    bool in_run_ = false;
    Frame softirq_frame_;
    Frame hardirq_frame_;

    // exec in flight
    bool exec_inflight_ = false;
    // The exec in flight's completion event arg: its generation << 2 | EV_EXEC_DONE, the
    // generation moved (+4) by each start and by interrupt_exec, so that an older one is stale.
    std::uint64_t exec_done_arg_ = EV_EXEC_DONE;
    Tick busy_base_ = 0;      // start of the current busy period
    Cycles busy_cycles_ = 0;  // cycles completed since busy_base_
    Cycles exec_start_cycles_ = 0;
    // exec_in_place_plain converts a busy-period end below this itself: Clock::ceil_fast_end(),
    // or 0 while tracing, np_mark_due() or an interrupt pending, each of which exec_in_place
    // takes out of line (ExecAwaiter::ready_asked). Kept by plain_end_update(), at set_trace,
    // np_due_update() and raise_irq (push_hardirq's clear is followed by push_frame's update).
    Cycles plain_end_ = 0;
    // Merged execs: while the completion handler's dispatch runs, start_exec leaves the next
    // completion (at exec_done_at_) to the handler, which takes it in place when nothing can
    // come before it (Simulation::run_inline) and schedules it otherwise.
    bool defer_exec_ = false;
    bool exec_deferred_ = false;
    Tick exec_done_at_ = 0;
    // exec_in_place's `due` of the exec an awaiter's await_ready has just refused (written on each
    // of its false returns, read by the await_suspend that follows it): in the CPU rather than in
    // the awaiter, so that an exec taken in place stores nothing for it.
    Tick refused_due_ = 0;
    bool idle_ = false;
    Tick idle_since_ = 0;
    // guest mode of the running task (a vCPU thread), and this CPU's own stall as a vCPU
    GuestRun* in_guest_ = nullptr;
    Tick guest_since_ = 0;
    Cat guest_cat_ = Cat::USER;
    bool stalled_ = false;
    // Nonzero exactly while in_guest_ or stalled_: the dispatch pass tests it with pending_irqs_.
    std::uint64_t guest_or_stalled_ = 0;
    Tick stalled_since_ = 0;
    Cpu* vcpu_host_ = nullptr;

    // interrupts
    std::array<IrqDesc, 64> irqs_{};
    std::uint64_t pending_irqs_ = 0;
    std::uint64_t nmi_vectors_ = 0;   // vectors requested as NMIs (effective with pseudo_nmi)
    bool hard_disabled_ = false;      // soft masking: an interrupt arrived and the CPU hard-disabled
    std::uint64_t soft_masked_irqs_ = 0;
    std::uint64_t nmis_ = 0;
    Frame nmi_frame_;
    // The pending interrupts the mask lets through (all, or with pseudo-NMI the NMI vectors alone).
    std::uint64_t unmasked_irqs() const {
        if (!irqs_disabled_) return pending_irqs_;
        return cfg_.pseudo_nmi ? (pending_irqs_ & nmi_vectors_) : 0;
    }
    std::uint64_t deliverable_irqs() const {
        if (depth_ > 0 && stack_[depth_ - 1]->kind == CtxKind::NMI) return 0; // NMIs do not nest
        return unmasked_irqs();
    }
    // The same, `top` being the frame on top of the stack (the dispatch loop's, the running
    // coroutine's): its kind is at hand, without the stack's depth and slot.
    std::uint64_t deliverable_irqs_at(const Frame& top) const {
        return top.kind == CtxKind::NMI ? 0 : unmasked_irqs(); // NMIs do not nest
    }
    unsigned timer_vector_ = 0;

    // softirqs
    std::array<SoftirqAction, NR_SOFTIRQS> softirq_vec_{};
    std::unique_ptr<TimerBase> timer_base_;
    std::uint32_t softirq_pending_ = 0;
    // The softirq frame's __do_softirq: its start (MAX_SOFTIRQ_TIME counts from it) and the
    // rounds it may still run (max_restart).
    Tick softirq_start_ = 0;
    std::uint32_t softirq_restarts_left_ = 0;

    // timers: a small heap of armed timers; one engine event for the earliest
    std::vector<HrTimer> timers_;
    std::vector<HrTimer> expired_;
    std::uint32_t next_timer_id_ = 1;
    Tick timer_event_at_ = engine::TICK_MAX;
    Tick tick_period_;

    // scheduler
    std::vector<TaskStruct*> tasks_; // owned
    std::vector<TaskStruct*> runqueue_;
    TaskStruct* idle_task_ = nullptr;
    TaskStruct* ksoftirqd_ = nullptr;
    Tick min_vruntime_ = 0;
    // rq->wake_list (the call_single_queue's TTWU entries), FIFO; and whether the idle loop has
    // already charged the activation of its first task (do_idle's flush_smp_call_function_queue)
    std::vector<TaskStruct*> wake_list_;
    bool idle_flush_charged_ = false;
    int sd_llc_id_ = 0;
    bool llc_domain_ = true;
    // load balancing: the machine's root domain, and this CPU's copy of the sched_domain's state
    RootDomain* rd_ = nullptr;
    engine::Rng sched_rng_{0, ""};
    Tick avg_idle_ = 0;               // rq->avg_idle, 2 * sysctl_sched_migration_cost at boot
    Tick idle_stamp_ = 0;             // rq->idle_stamp: when newidle_balance began, 0 when not idle
    bool idle_stamped_ = false;
    Tick max_idle_balance_cost_ = 0;  // rq->max_idle_balance_cost, sysctl_sched_migration_cost at boot
    Tick max_newidle_lb_cost_ = 0;    // sd->max_newidle_lb_cost
    std::uint32_t nr_balance_failed_ = 0; // sd->nr_balance_failed
    std::uint32_t newidle_call_ = 512, newidle_success_ = 256, newidle_ratio_ = 512; // NI_RANDOM
    std::uint64_t balance_interval_ms_ = 0; // sd->balance_interval, sd_weight at boot
    std::uint64_t last_balance_ = 0;  // sd->last_balance, jiffies
    std::uint64_t next_balance_ = 0;  // rq->next_balance, jiffies
    bool nohz_kick_pending_ = false;  // NOHZ_BALANCE_KICK in nohz_flags: the csd is queued
    // active balancing: rq->active_balance (a stop work is queued or running here), rq->push_cpu,
    // the stopper's queued work (its works list: the one active_balance_work), and the stopper
    TaskStruct* stopper_ = nullptr;
    bool active_balance_ = false;
    bool stop_work_pending_ = false;
    Cpu* push_cpu_ = nullptr;

    // SIMD register file and owner descriptions
    SimdToken simd_regs_{};
    std::vector<std::string> owner_names_{""};
    std::array<std::uint32_t, NR_SOFTIRQS> softirq_owner_{};
    std::uint32_t hardirq_owner_ = 0;
    std::uint32_t simd_gen_ = 0;
    std::uint32_t softirq_running_nr_ = 0;

    // watchdog view
    bool np_open_ = false;
    // The open span's holder is KERNEL_CODE, set by a mark of the current task (not the idle
    // task, in kernel mode, under a preemption model with no point there): until the span
    // closes or the task switches, a mark in task context changes nothing.
    bool np_quiet_ = false;
    bool np_due_ = true; // np_mark_due(): idle_ || (depth_ == 1 ? !np_quiet_ : !np_open_)
    Tick np_start_ = 0;
    NpHolder np_holder_{};

    // the run trace
    TraceRecorder* trace_ = nullptr;
    stats::Findings* findings_ = nullptr;
    std::uint16_t trace_track_ = 0;
    Tick trace_exec_begin_ = 0;
    bool trace_idle_open_ = false;
    Tick trace_idle_begin_ = 0;
    std::uint32_t trace_softirq_mask_ = 0; // vectors the running softirq activation handled

    CpuStats stats_;
    int next_pid_ = 1;
    std::uint64_t serial_counter_ = 0;
};

// An exec of the running coroutine, inside on_event's completion loop (defer_exec_): the
// dispatch would defer it, find it due before every other pending event (Simulation::run_inline)
// and complete it in place, with nothing between its start and its end. This does the same
// without suspending the coroutine and dispatching it again, when the dispatch would have
// nothing to do first (no queued work, no deliverable interrupt); every result is unchanged
// (the merged-exec test runs every shipped scenario with and without in-place events). False:
// nothing has changed but the watchdog view's mark (np_mark(false), which start_exec would make
// at this instant too), and the caller suspends; `due` is then the exec's completion time when
// the dispatch would start it next (suspend_exec_started), else left 0. Inline: it is most of an
// E5 event's CPU model.
inline bool Cpu::exec_in_place(const PendingExec& e, Tick& due) {
    Frame& f = *running_;
    // The dispatch loop would first take an interrupt that the coroutine raised on this CPU.
    if (f.nexecs != 0 || (pending_irqs_ != 0 && deliverable_irqs_at(f))) return false; // running_ is the stack's top
    if (np_mark_due()) np_mark(false);
    return exec_in_place_marked(e, due);
}

inline bool Cpu::exec_in_place_marked(const PendingExec& e, Tick& due) {
    Frame& f = *running_;
    const Tick start = now();
    const Tick done = engine::sat_add(busy_base_, clock_.to_ticks_ceil(busy_cycles_ + e.remaining));
    if (!sim_.run_inline(done)) {
        if (!idle_ && !stalled_) due = done; // (both false here: the dispatch runs after a completion)
        return false;
    }
    // No completion is scheduled for this exec, so exec_done_arg_ need not move: a stale completion
    // event is already told apart by exec_inflight_, which is false here.
    busy_cycles_ += e.remaining;
    account(f.kind, e.cat, e.remaining);
    if constexpr (TRACE_COMPILED)
        if (trace_) [[unlikely]] trace_exec_in_place(f, e, start);
    return true;
}

// exec_in_place for a caller that pays for its rare calls (a pending interrupt, the watchdog
// view's mark, the trace, the clock's slow conversion: plain_end_ is 0 for the first three) in
// its prologue on every exec: with none of them due, DONE or REFUSED as exec_in_place answers;
// else ASK, with nothing changed, and the caller asks exec_in_place out of line
// (ExecAwaiter::ready_asked). The same work and result as exec_in_place, with no call.
inline Cpu::InPlace Cpu::exec_in_place_plain(Cycles remaining, Cat cat, Tick& due) {
    if (running_->nexecs != 0) return InPlace::REFUSED;
    return exec_in_place_below(remaining, cat, due, plain_end_);
}

// exec_in_place_plain's work after its first test (and after the mark when `bound` is not
// plain_end_): ASK when the busy period's end reaches `bound`.
inline Cpu::InPlace Cpu::exec_in_place_below(Cycles remaining, Cat cat, Tick& due, Cycles bound) {
    const Cycles end = busy_cycles_ + remaining;
    if (end >= bound) [[unlikely]] return InPlace::ASK;
    const Tick done = engine::sat_add(busy_base_, clock_.to_ticks_ceil_fast(end));
    if (!sim_.run_inline(done)) {
        if (!idle_ && !stalled_) due = done; // as exec_in_place_marked
        return InPlace::REFUSED;
    }
    busy_cycles_ = end;
    account(running_->kind, cat, remaining);
    return InPlace::DONE;
}

inline bool Cpu::ExecAwaiter::await_ready() noexcept {
    if (remaining == 0) return true;
    Tick due = 0;
    if (cpu.defer_exec_) {
        switch (cpu.exec_in_place_plain(remaining, cat, due)) {
        case InPlace::REFUSED: break;
        case InPlace::DONE: return true;
        case InPlace::ASK: return ready_asked();
        }
    }
    cpu.refused_due_ = due;
    return false;
}

// An exec that exec_in_place could not take: the coroutine suspends and the exec starts now, as
// the dispatch loop would start it at its next step (the frame has no other work and no
// interrupt is deliverable, so that step is start_exec of this exec, whose np_mark(false)
// exec_in_place made and whose completion time is `due`). The loop sees exec_inflight_ when the
// coroutine returns to it and ends, as after start_exec; the completion is deferred to
// on_event's loop as start_exec defers it there. Saves the loop's step and start_exec's work.
inline void Cpu::suspend_exec_started(std::coroutine_handle<> h, const PendingExec& e, Tick due) {
    Frame& f = *running_;
    f.cont = h;
    f.st = Frame::St::READY;
    exec_started(f, e, due);
}

// suspend_exec_started's part after the frame's continuation and state.
inline void Cpu::exec_started(Frame& f, const PendingExec& e, Tick due) {
    f.execs[0] = e;
    f.nexecs = 1;
    exec_start_cycles_ = busy_cycles_;
    exec_inflight_ = true;
    if constexpr (TRACE_COMPILED)
        if (trace_) [[unlikely]] trace_exec_begin_ = now();
    exec_done_arg_ += 4;
    exec_deferred_ = true;
    exec_done_at_ = due;
}

} // namespace kdsim::kernel
