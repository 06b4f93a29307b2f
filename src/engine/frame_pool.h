// Allocation for coroutine frames. Simulated kernel paths are coroutines, and a packet or a
// hash call creates several short-lived frames; the general-purpose heap would then be on the
// engine's hot path. Frames are recycled through per-thread free lists by 16-byte size class,
// so after warm-up a frame costs two pointer moves. Memory is kept for reuse until the thread
// ends; there is no simulation state here, so two simulations may share a thread.
#pragma once

#include <cstddef>

namespace kdsim::engine {

class FramePool {
public:
    static void* allocate(std::size_t n);
    static void deallocate(void* p, std::size_t n) noexcept;
    // Frames currently handed out on this thread (for leak tests).
    static std::size_t live_frames();
};

} // namespace kdsim::engine
