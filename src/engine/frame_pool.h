// Allocation for coroutine frames. Simulated kernel paths are coroutines, and a packet or a
// hash call creates several short-lived frames; the general-purpose heap would then be on the
// engine's hot path. Frames are recycled through per-thread free lists by 16-byte size class,
// so after warm-up a frame costs two pointer moves. The common case is inline (a coroutine's
// frame size is a constant at its call site, so the class folds away); the free lists are a
// constant-initialised, trivially destructible thread_local, so reaching them needs no guard
// or wrapper call. Memory is kept for reuse until the thread ends; there is no simulation
// state here, so two simulations may share a thread.
#pragma once

#include <cstddef>

namespace kdsim::engine {

namespace detail {
struct FreeNode {
    FreeNode* next;
};
struct FrameLists {
    static constexpr std::size_t GRANULE = 16;
    static constexpr std::size_t CLASSES = 128; // frames up to 2 KiB are pooled
    FreeNode* head[CLASSES];
    std::size_t live; // frames handed out
};
extern constinit thread_local FrameLists frame_lists;
} // namespace detail

class FramePool {
public:
    static void* allocate(std::size_t n) {
        using L = detail::FrameLists;
        L& l = detail::frame_lists;
        ++l.live;
        const std::size_t c = (n + L::GRANULE - 1) / L::GRANULE;
        if (c < L::CLASSES) [[likely]]
            if (detail::FreeNode* f = l.head[c]) [[likely]] {
                l.head[c] = f->next;
                return f;
            }
        return allocate_new(n);
    }
    static void deallocate(void* p, std::size_t n) noexcept {
        using L = detail::FrameLists;
        L& l = detail::frame_lists;
        --l.live;
        const std::size_t c = (n + L::GRANULE - 1) / L::GRANULE;
        if (c >= L::CLASSES) [[unlikely]] return deallocate_large(p);
        auto* f = static_cast<detail::FreeNode*>(p);
        f->next = l.head[c];
        l.head[c] = f;
    }
    // Frames currently handed out on this thread (for leak tests).
    static std::size_t live_frames() { return detail::frame_lists.live; }

private:
    // A frame from the general-purpose heap (a class with an empty list, or a large frame).
    [[gnu::noinline]] static void* allocate_new(std::size_t n);
    [[gnu::noinline]] static void deallocate_large(void* p) noexcept;
};

} // namespace kdsim::engine
