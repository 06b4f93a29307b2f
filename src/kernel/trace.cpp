// The run trace's recorder: string interning and tracks (see trace.h).
#include "kernel/trace.h"

#include <algorithm>
#include <stdexcept>

namespace kdsim::kernel {

TraceRecorder::TraceRecorder(std::size_t limit, TraceFilter filter) : limit_(limit), filter_(filter) {
    records_.reserve(std::min<std::size_t>(limit, 1u << 16));
}

std::uint16_t TraceRecorder::add_track(std::string process, int process_index, int cpu) {
    if (tracks_.size() >= UINT16_MAX) throw std::length_error("too many CPUs to trace");
    tracks_.push_back(Track{std::move(process), process_index, cpu});
    return static_cast<std::uint16_t>(tracks_.size() - 1);
}

std::uint32_t TraceRecorder::intern(std::string_view s) {
    if (s.empty()) return 0;
    auto [it, added] = ids_.try_emplace(std::string(s), static_cast<std::uint32_t>(strings_.size()));
    if (added) strings_.emplace_back(s);
    return it->second;
}

std::uint32_t TraceRecorder::intern_static(const char* s) {
    auto it = static_ids_.find(s);
    if (it != static_ids_.end()) return it->second;
    std::uint32_t id = intern(s);
    static_ids_.emplace(s, id);
    return id;
}

} // namespace kdsim::kernel
