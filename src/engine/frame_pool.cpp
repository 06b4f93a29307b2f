#include "engine/frame_pool.h"

#include <new>

namespace kdsim::engine {
namespace detail {
constinit thread_local FrameLists frame_lists{};
} // namespace detail

namespace {

// Frees this thread's pooled frames when the thread ends. Made by the thread's first heap
// allocation, so the inline paths never touch it.
struct Reaper {
    ~Reaper() {
        for (auto*& h : detail::frame_lists.head)
            while (h) {
                detail::FreeNode* n = h->next;
                ::operator delete(h);
                h = n;
            }
    }
};

} // namespace

void* FramePool::allocate_new(std::size_t n) {
    static thread_local Reaper reaper;
    (void)&reaper;
    using L = detail::FrameLists;
    const std::size_t c = (n + L::GRANULE - 1) / L::GRANULE;
    return ::operator new(c < L::CLASSES ? c * L::GRANULE : n);
}

void FramePool::deallocate_large(void* p) noexcept { ::operator delete(p); }

} // namespace kdsim::engine
