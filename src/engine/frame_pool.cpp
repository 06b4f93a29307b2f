#include "engine/frame_pool.h"

#include <new>

namespace kdsim::engine {
namespace {

constexpr std::size_t GRANULE = 16;
constexpr std::size_t CLASSES = 64; // frames up to 1 KiB are pooled

struct FreeNode {
    FreeNode* next;
};

struct Lists {
    FreeNode* head[CLASSES] = {};
    std::size_t live = 0;
    ~Lists() {
        for (auto*& h : head)
            while (h) {
                FreeNode* n = h->next;
                ::operator delete(h);
                h = n;
            }
    }
};

thread_local Lists lists;

std::size_t class_of(std::size_t n) { return (n + GRANULE - 1) / GRANULE; }

} // namespace

void* FramePool::allocate(std::size_t n) {
    ++lists.live;
    std::size_t c = class_of(n);
    if (c >= CLASSES) return ::operator new(n);
    if (FreeNode* f = lists.head[c]) {
        lists.head[c] = f->next;
        return f;
    }
    return ::operator new(c * GRANULE);
}

void FramePool::deallocate(void* p, std::size_t n) noexcept {
    --lists.live;
    std::size_t c = class_of(n);
    if (c >= CLASSES) {
        ::operator delete(p);
        return;
    }
    auto* f = static_cast<FreeNode*>(p);
    f->next = lists.head[c];
    lists.head[c] = f;
}

std::size_t FramePool::live_frames() { return lists.live; }

} // namespace kdsim::engine
