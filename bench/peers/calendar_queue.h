// A calendar queue (R. Brown, CACM 1988) with the engine's EventQueue interface, kept in bench/
// as an experiment: does an O(1)-amortised pending-event set beat the engine's 8-ary heap at
// 1e3 and 1e5 pending events? Not used by the engine; see docs/performance.md, "Experiment:
// a calendar queue".
//
// Buckets of width 2^shift ps, nb = 2^k of them; an event at time t lives in bucket
// (t >> shift) & (nb - 1), in a singly linked list sorted by (time, insertion order): a new event
// goes after every event with time <= its own, so equal times stay FIFO, exactly the engine's
// (time, seq) order. Dequeue scans from the current bucket for an event of the current "year";
// after a full lap without one it falls back to a direct search of the minimum. The table is
// rebuilt (bucket count ~ pending count, width ~ 3 x mean separation of pending events) when the
// pending count leaves [nb/2, 2nb]. Nodes (32 B) come from a free list, buckets are 8 B heads, so
// a pending event costs 32 B + 4..16 B of bucket array.
#pragma once

#include "engine/event_queue.h"
#include "engine/time.h"

#include <algorithm>
#include <cstdint>
#include <memory>
#include <vector>

namespace peers {

class CalendarQueue {
public:
    using Tick = kdsim::engine::Tick;
    using EventTarget = kdsim::engine::EventTarget;

    struct Node {
        Tick time;
        EventTarget* target;
        std::uint64_t arg;
        Node* next;
    };
    static_assert(sizeof(Node) == 32);

    CalendarQueue() { rebuild(16, 10); }

    bool empty() const { return size_ == 0; }
    std::size_t size() const { return size_; }

    void push(Tick t, EventTarget* target, std::uint64_t arg) {
        Node* n = alloc();
        n->time = t;
        n->target = target;
        n->arg = arg;
        insert(n);
        if (++size_ > 2 * nb_) resize(nb_ * 2);
    }

    // Precondition: !empty().
    kdsim::engine::Event pop() {
        Node* n = take_min();
        kdsim::engine::Event ev{n->time, 0, n->target, n->arg};
        free_node(n);
        if (--size_ < nb_ / 2 && nb_ > 2) resize(nb_ / 2);
        return ev;
    }

private:
    void insert(Node* n) {
        Node** p = &buckets_[(n->time >> shift_) & mask_];
        while (*p && (*p)->time <= n->time) p = &(*p)->next;
        n->next = *p;
        *p = n;
        // An event earlier than the current position moves the position back.
        if (n->time < last_) {
            last_ = n->time;
            cur_ = (n->time >> shift_) & mask_;
            top_ = ((n->time >> shift_) + 1) << shift_;
        }
    }

    Node* take_min() {
        for (std::size_t lap = 0; lap <= nb_; ++lap) {
            Node* h = buckets_[cur_];
            if (h && h->time < top_) {
                buckets_[cur_] = h->next;
                last_ = h->time;
                return h;
            }
            cur_ = (cur_ + 1) & mask_;
            top_ += Tick{1} << shift_;
        }
        // A whole year is empty: jump to the earliest event directly.
        std::size_t best = 0;
        Node* bn = nullptr;
        for (std::size_t i = 0; i < nb_; ++i)
            if (Node* h = buckets_[i]; h && (!bn || h->time < bn->time)) {
                bn = h;
                best = i;
            }
        buckets_[best] = bn->next;
        last_ = bn->time;
        cur_ = best;
        top_ = ((bn->time >> shift_) + 1) << shift_;
        return bn;
    }

    void resize(std::size_t nb) {
        // Width: 3 x the mean separation of pending events, rounded to a power of two.
        std::vector<Node*> all;
        all.reserve(size_);
        Tick lo = ~Tick{0}, hi = 0;
        for (Node* h : buckets_)
            for (; h; h = h->next) {
                all.push_back(h);
                lo = std::min(lo, h->time);
                hi = std::max(hi, h->time);
            }
        Tick sep = all.size() > 1 ? (hi - lo) / (all.size() - 1) : 1;
        unsigned shift = 0;
        while ((Tick{1} << shift) < 3 * sep && shift < 62) ++shift;
        // Re-insert in (time, old order) so that equal times keep their FIFO order.
        std::stable_sort(all.begin(), all.end(), [](Node* a, Node* b) { return a->time < b->time; });
        rebuild(nb, shift);
        for (Node* n : all) insert_sorted_tail(n);
        if (!all.empty()) {
            last_ = all.front()->time;
            cur_ = (last_ >> shift_) & mask_;
            top_ = ((last_ >> shift_) + 1) << shift_;
        }
    }

    // Appends to the end of its bucket (callers insert in ascending order).
    void insert_sorted_tail(Node* n) {
        Node** p = &buckets_[(n->time >> shift_) & mask_];
        while (*p) p = &(*p)->next;
        n->next = nullptr;
        *p = n;
    }

    void rebuild(std::size_t nb, unsigned shift) {
        nb_ = nb;
        mask_ = nb - 1;
        shift_ = shift;
        buckets_.assign(nb, nullptr);
        cur_ = 0;
        last_ = 0;
        top_ = Tick{1} << shift_;
    }

    Node* alloc() {
        if (!free_) {
            constexpr std::size_t CHUNK = 4096;
            chunks_.push_back(std::make_unique<Node[]>(CHUNK));
            Node* c = chunks_.back().get();
            for (std::size_t i = 0; i < CHUNK; ++i) {
                c[i].next = free_;
                free_ = &c[i];
            }
        }
        Node* n = free_;
        free_ = n->next;
        return n;
    }
    void free_node(Node* n) {
        n->next = free_;
        free_ = n;
    }

    std::vector<Node*> buckets_;
    std::size_t nb_ = 0, mask_ = 0, size_ = 0, cur_ = 0;
    unsigned shift_ = 0;
    Tick last_ = 0, top_ = 0; // time of the last event taken; end of the current bucket's day
    Node* free_ = nullptr;
    std::vector<std::unique_ptr<Node[]>> chunks_;
};

// The engine's run loop (src/engine/simulation.cpp) over any queue with EventQueue's interface.
template <class Queue>
class BenchSim {
public:
    using Tick = kdsim::engine::Tick;
    Tick now() const { return now_; }
    void schedule_at(Tick t, kdsim::engine::EventTarget* target, std::uint64_t arg = 0) {
        q_.push(t < now_ ? now_ : t, target, arg);
    }
    void schedule_in(Tick d, kdsim::engine::EventTarget* target, std::uint64_t arg = 0) {
        q_.push(now_ + d, target, arg);
    }
    std::uint64_t run() {
        std::uint64_t n = 0;
        while (!q_.empty()) {
            kdsim::engine::Event ev = q_.pop();
            now_ = ev.time;
            ev.target->on_event(ev.arg);
            ++n;
        }
        return n;
    }

private:
    Queue q_;
    Tick now_ = 0;
};

} // namespace peers
