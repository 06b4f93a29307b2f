#include "kernel/types.h"
#include "engine/enum_names.h"

namespace kdsim::kernel {

std::string_view to_string(CtxKind k) {
    switch (k) {
    case CtxKind::TASK: return "task";
    case CtxKind::SOFTIRQ: return "softirq";
    case CtxKind::HARDIRQ: return "hardirq";
    case CtxKind::NMI: return "nmi";
    case CtxKind::COUNT: break;
    }
    return "?";
}

std::string_view to_string(Cat c) {
    static constexpr std::array<std::string_view, CATS> names = {
        "user",    "crypto",   "simd_begin_end", "simd_save_restore", "simd_trap", "irq_entry_exit",
        "irq_mask", "bh_mask", "softirq",        "timer",             "scheduler",
        "protocol", "driver",  "copy",           "cache_maintenance", "syscall",
        "queueing", "virt",    "other"};
    return names[static_cast<std::size_t>(c)];
}

std::string_view to_string(PreemptModel m) {
    static constexpr engine::EnumNames<PreemptModel, 3> names{{"none", "voluntary", "full"}};
    return names(m);
}

} // namespace kdsim::kernel
