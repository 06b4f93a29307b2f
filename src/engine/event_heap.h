// An 8-ary min-heap of 32-byte POD events in one contiguous array, ordered by (time, insertion
// sequence). It is the near tier of EventQueue, and HeapEventQueue wraps it as a complete
// pending-event set of its own (the engine's event set before the two-tier queue; kept as the
// control in the benchmarks).
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

// (time, seq) compared as one 128-bit number: a compare and a subtract-with-borrow, no branch.
// Heap comparisons follow random keys, so a branch here would often mispredict.
inline bool event_before(const Event& a, const Event& b) {
    using U = unsigned __int128;
    return ((U(a.time) << 64) | a.seq) < ((U(b.time) << 64) | b.seq);
}

class EventHeap {
public:
    void reserve(std::size_t n) { h_.reserve(n); }
    bool empty() const { return h_.empty(); }
    std::size_t size() const { return h_.size(); }
    std::size_t capacity() const { return h_.capacity(); }
    const Event& front() const { return h_.front(); }
    const Event* data() const { return h_.data(); }
    void clear() { h_.clear(); }

    void push(const Event& ev) {
        h_.push_back(ev);
        sift_up(h_.size() - 1, ev);
    }
    // The index of the least of the root's children by (time, seq) (the second least event),
    // or 0 when the root has none.
    std::size_t least_child() const {
        const std::size_t n = h_.size();
        if (n >= D + 1) return least_of_full_node(h_.data(), 1);
        std::size_t best = 0;
        for (std::size_t c = 1; c < n; ++c)
            if (best == 0 || event_before(h_[c], h_[best])) best = c;
        return best;
    }
    // Removes the least event and inserts `ev` (one sift-down). Precondition: !empty().
    void replace_top(const Event& ev) {
        if (h_.size() == 1) h_[0] = ev;
        else sift_down(0, ev);
    }
    // replace_top with the root's least child already known (`child`, from least_child() on the
    // heap as it is): the root's level needs no comparison of the children. Either `ev` sorts
    // before that child and takes the root, or the child moves up and `ev` sifts down from the
    // child's slot, as sift_down would place them.
    void replace_top_known(std::size_t child, const Event& ev) {
        Event* h = h_.data();
        if (child == 0 || !event_before(h[child], ev)) {
            h[0] = ev;
            return;
        }
        h[0] = h[child];
        sift_down(child, ev);
    }
    // Removes and returns the least event. Precondition: !empty().
    Event pop() {
        Event out = h_.front();
        Event last = h_.back();
        h_.pop_back();
        if (!h_.empty()) sift_down(0, last);
        return out;
    }

private:
    // Arity. 8 rather than 2 or 4: half or a third of the levels to descend, and the children
    // of a level are compared by the branch-free tournament below, so the extra comparisons run
    // in parallel. See docs/performance.md for the measurements behind the choice.
    static constexpr std::size_t D = 8;

    // Index of the least of h[f] .. h[f + 7], by a tournament compiled without branches.
    static std::size_t least_of_full_node(const Event* h, std::size_t f) {
        static_assert(D == 8);
        std::size_t a0 = f + event_before(h[f + 1], h[f]);
        std::size_t a1 = f + 2 + event_before(h[f + 3], h[f + 2]);
        std::size_t a2 = f + 4 + event_before(h[f + 5], h[f + 4]);
        std::size_t a3 = f + 6 + event_before(h[f + 7], h[f + 6]);
        std::size_t b0 = event_before(h[a1], h[a0]) ? a1 : a0;
        std::size_t b1 = event_before(h[a3], h[a2]) ? a3 : a2;
        return event_before(h[b1], h[b0]) ? b1 : b0;
    }

    void sift_up(std::size_t i, const Event& ev) {
        while (i > 0) {
            std::size_t parent = (i - 1) / D;
            if (!event_before(ev, h_[parent])) break;
            h_[i] = h_[parent];
            i = parent;
        }
        h_[i] = ev;
    }

    // Places `ev` starting from slot `i` (the root's, or a vacated child's of a known path).
    void sift_down(std::size_t i, const Event& ev) {
        const std::size_t n = h_.size();
        Event* h = h_.data();
        // Nodes with all D children.
        for (;;) {
            std::size_t first = i * D + 1;
            if (first + D > n) break;
            std::size_t best = least_of_full_node(h, first);
            if (!event_before(h[best], ev)) {
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
                if (event_before(h[c], h[best])) best = c;
            if (event_before(h[best], ev)) {
                h[i] = h[best];
                i = best;
            }
        }
        h[i] = ev;
    }

    std::vector<Event> h_;
};

// The whole pending-event set as one heap (the engine's before the two-tier EventQueue). Same
// interface and order as EventQueue.
class HeapEventQueue {
public:
    void reserve(std::size_t n) { heap_.reserve(n); }
    bool empty() const { return heap_.size() == held_; }
    std::size_t size() const { return heap_.size() - held_; }
    const Event& top() const { return heap_.front(); }

    void push(Tick time, EventTarget* target, std::uint64_t arg) {
        Event ev{time, next_seq_++, target, arg};
        if (held_) {
            held_ = 0;
            heap_.replace_top(ev);
            return;
        }
        heap_.push(ev);
    }
    Event take() {
        held_ = 1;
        return heap_.front();
    }
    void finish_take() {
        if (held_) {
            held_ = 0;
            heap_.pop();
        }
    }
    Event pop() { return heap_.pop(); }

private:
    EventHeap heap_;
    std::uint64_t next_seq_ = 0;
    std::size_t held_ = 0;
};

} // namespace kdsim::engine
