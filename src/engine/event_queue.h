// The pending-event set: an 8-ary min-heap of 32-byte POD events in one contiguous array,
// ordered by (time, insertion sequence). Ties are broken by insertion order, never by pointer
// values, so a run is reproducible on any machine. Cancellation is the owner's business: an
// owner that may invalidate an event puts a generation number in `arg` and ignores stale ones,
// which is cheaper than removing from the middle of the heap.
#pragma once

#include "engine/time.h"

#include <cstddef>
#include <cstdint>
#include <vector>

namespace kdsim::engine {

// Something that receives events. `arg` is the owner's own payload (often a generation).
class EventTarget {
public:
    virtual void on_event(std::uint64_t arg) = 0;

protected:
    ~EventTarget() = default;
};

struct Event {
    Tick time;
    std::uint64_t seq;
    EventTarget* target;
    std::uint64_t arg;
};
static_assert(sizeof(Event) == 32);

class EventQueue {
public:
    void reserve(std::size_t n) { heap_.reserve(n); }
    bool empty() const { return heap_.size() == held_; }
    std::size_t size() const { return heap_.size() - held_; }
    const Event& top() const { return heap_.front(); }

    void push(Tick time, EventTarget* target, std::uint64_t arg) {
        Event ev{time, next_seq_++, target, arg};
        if (held_) {
            // The event being handled still sits at the root: the first event its handler
            // schedules takes its place with one sift-down, instead of a pop and a push.
            held_ = 0;
            sift_down(ev);
            return;
        }
        heap_.push_back(ev);
        sift_up(heap_.size() - 1, ev);
    }

    // Takes the earliest event for handling. It stays at the root until the handler's first
    // push replaces it or finish_take() removes it. Precondition: !empty(), nothing taken.
    Event take() {
        held_ = 1;
        return heap_.front();
    }
    // Ends the handling of the taken event (removes it unless a push already replaced it).
    void finish_take() {
        if (held_) {
            held_ = 0;
            pop();
        }
    }

    // Removes and returns the earliest event. Precondition: !empty().
    Event pop() {
        Event out = heap_.front();
        Event last = heap_.back();
        heap_.pop_back();
        if (!heap_.empty()) sift_down(last);
        return out;
    }

private:
    // Arity. 8 rather than 2 or 4: half or a third of the levels to descend, and the children
    // of a level are compared by the branch-free tournament below, so the extra comparisons run
    // in parallel. See docs/performance.md for the measurements behind the choice.
    static constexpr std::size_t D = 8;

    // (time, seq) compared as one 128-bit number: a compare and a subtract-with-borrow, no
    // branch. Heap comparisons follow random keys, so a branch here would often mispredict.
    static bool before(const Event& a, const Event& b) {
        using U = unsigned __int128;
        return ((U(a.time) << 64) | a.seq) < ((U(b.time) << 64) | b.seq);
    }

    // Index of the least of h[f] .. h[f + 7], by a tournament compiled without branches.
    static std::size_t least_of_full_node(const Event* h, std::size_t f) {
        static_assert(D == 8);
        std::size_t a0 = f + before(h[f + 1], h[f]);
        std::size_t a1 = f + 2 + before(h[f + 3], h[f + 2]);
        std::size_t a2 = f + 4 + before(h[f + 5], h[f + 4]);
        std::size_t a3 = f + 6 + before(h[f + 7], h[f + 6]);
        std::size_t b0 = before(h[a1], h[a0]) ? a1 : a0;
        std::size_t b1 = before(h[a3], h[a2]) ? a3 : a2;
        return before(h[b1], h[b0]) ? b1 : b0;
    }

    void sift_up(std::size_t i, const Event& ev) {
        while (i > 0) {
            std::size_t parent = (i - 1) / D;
            if (!before(ev, heap_[parent])) break;
            heap_[i] = heap_[parent];
            i = parent;
        }
        heap_[i] = ev;
    }

    void sift_down(const Event& ev) {
        const std::size_t n = heap_.size();
        Event* h = heap_.data();
        std::size_t i = 0;
        // Nodes with all D children.
        for (;;) {
            std::size_t first = i * D + 1;
            if (first + D > n) break;
            std::size_t best = least_of_full_node(h, first);
            if (!before(h[best], ev)) {
                h[i] = ev;
                return;
            }
            h[i] = h[best];
            i = best;
        }
        // At most one node has between 1 and D - 1 children, and they are leaves.
        std::size_t first = i * D + 1;
        if (first < n) {
            std::size_t best = first;
            for (std::size_t c = first + 1; c < n; ++c)
                if (before(h[c], h[best])) best = c;
            if (before(h[best], ev)) {
                h[i] = h[best];
                i = best;
            }
        }
        h[i] = ev;
    }

    std::vector<Event> heap_;
    std::uint64_t next_seq_ = 0;
    std::size_t held_ = 0; // 1 while a taken event still occupies the root
};

} // namespace kdsim::engine
