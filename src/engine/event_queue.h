// The pending-event set: a 4-ary min-heap of 32-byte POD events in one contiguous array,
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
    bool empty() const { return heap_.empty(); }
    std::size_t size() const { return heap_.size(); }
    const Event& top() const { return heap_.front(); }

    void push(Tick time, EventTarget* target, std::uint64_t arg) {
        Event ev{time, next_seq_++, target, arg};
        heap_.push_back(ev);
        sift_up(heap_.size() - 1, ev);
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
    static constexpr std::size_t D = 4;

    static bool before(const Event& a, const Event& b) {
        return a.time < b.time || (a.time == b.time && a.seq < b.seq);
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
        std::size_t i = 0;
        for (;;) {
            std::size_t first = i * D + 1;
            if (first >= n) break;
            std::size_t best = first;
            std::size_t end = first + D < n ? first + D : n;
            for (std::size_t c = first + 1; c < end; ++c)
                if (before(heap_[c], heap_[best])) best = c;
            if (!before(heap_[best], ev)) break;
            heap_[i] = heap_[best];
            i = best;
        }
        heap_[i] = ev;
    }

    std::vector<Event> heap_;
    std::uint64_t next_seq_ = 0;
};

} // namespace kdsim::engine
