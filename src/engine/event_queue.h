// The pending-event set, ordered by (time, insertion sequence). Ties are broken by insertion
// order, never by pointer values, so a run is reproducible on any machine and the order does
// not depend on how the set is built. Cancellation is the owner's business: an owner that may
// invalidate an event puts a generation number in `arg` and ignores stale ones, which is
// cheaper than removing from the middle of the set.
//
// Two tiers, after the ladder queue (Tang, Goh and Thng, ACM TOMACS 15(3), 2005):
//  - near: every event earlier than `limit_`, in a short sorted run or an 8-ary heap (EventHeap);
//  - far: the later events, unsorted, in buckets of 2^shift_ ps that together span one "year"
//    [base_, year_end_), and beyond the year in an overflow list. Buckets are lists of
//    8-event chunks from one pool, so storage is contiguous per chunk and never doubles.
// When the near tier runs dry, the next non-empty bucket moves into it and `limit_` advances to
// that bucket's end. When the year is used up, the overflow is spread over a new year whose
// bucket width is chosen from the overflow's time span and count (about `per_bucket` events a
// bucket). While few events are pending, the near tier alone holds them (`limit_` = TICK_MAX, only
// events at TICK_MAX itself wait in the overflow) and nothing is bucketed; it spills into the
// far tier when it grows past `spill_at`. The near tier is the sorted run while it holds at most
// SORTED_MAX events and the heap above that; a heap that shrinks to RUN_AGAIN events becomes the
// run again (the gap between the two stops a population near one size from switching at every
// push). With a dozen events pending, as in a machine's run, a take, the next time and a push
// near the front cost a few moves in the run against two 8-way comparisons in the heap.
// Each event is copied a bounded number of times (into a bucket or the overflow, at most once
// from the overflow into a bucket, once into the near tier), and the near tier stays small, so the cost
// per event no longer grows with the log of the pending count. docs/performance.md has the
// measurements.
#pragma once

#include "engine/event_heap.h"
#include "engine/time.h"

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

namespace kdsim::engine {

class EventQueue {
public:
    struct Tuning {
        std::size_t per_bucket = 6;    // events per bucket aimed at when a year is laid out (docs/performance.md: 6 against 8 and 3)
        std::size_t spill_at = 256;    // heap-only size at which events are spread over buckets
        std::size_t heap_only_max = 64; // a year is not laid out for this many events or fewer
    };

    EventQueue() = default;
    explicit EventQueue(Tuning t) : tuning_(t) {}
    EventQueue(const EventQueue&) = delete;
    EventQueue& operator=(const EventQueue&) = delete;

    void reserve(std::size_t n) { heap_.reserve(n < tuning_.spill_at ? n : tuning_.spill_at + 1); }
    bool empty() const { return size() == 0; }
    std::size_t size() const { return near_size() - held_ + far_count_; }
    // The earliest event. Precondition: !empty().
    const Event& top() {
        if (near_empty()) refill();
        return near_front();
    }

    // Its seq is the largest yet, so it sorts after every pending event at its time: the run's
    // walk compares times alone. The run's paths take the event's fields as they are, so that
    // the event is written once, into its slot; the other paths make it whole.
    [[gnu::always_inline]] void push(Tick time, EventTarget* target, std::uint64_t arg) {
        const std::uint64_t seq = next_seq_++;
        if (time < limit_) [[likely]] {
            if (held_) {
                // The event being handled is still the near tier's least: the first event its
                // handler schedules there takes its place (in the run, its slot run_n_).
                held_ = 0;
                if (sorted_) [[likely]] return run_insert_newest(run_n_, time, seq, target, arg);
                return heap_replace_top(Event{time, seq, target, arg});
            }
            if (sorted_ && run_n_ < SORTED_MAX) [[likely]] {
                run_insert_newest(++run_n_, time, seq, target, arg);
                if (heap_only_ && run_n_ > tuning_.spill_at) [[unlikely]]
                    spill();
                return;
            }
            return heap_push_newest(Event{time, seq, target, arg});
        }
        push_far(Event{time, seq, target, arg});
    }
    // A sequence number taken now for an event pushed later by push_seq: among the events at its
    // time, that event then sorts as if it had been pushed when the number was taken.
    std::uint64_t reserve_seq() { return next_seq_++; }
    // Pushes an event with a number from reserve_seq() (each used once). Precondition: it sorts
    // after a taken event, as every push does (time >= the taken event's, seq taken after its).
    [[gnu::always_inline]] void push_seq(Tick time, EventTarget* target, std::uint64_t arg, std::uint64_t seq) {
        push_event<false>(Event{time, seq, target, arg});
    }

    // The earliest event, nullptr when none is pending (the run loop's empty() and top() in one).
    // Precondition: nothing taken.
    const Event* peek() {
        if (near_empty()) {
            if (far_count_ == 0) return nullptr;
            refill();
        }
        return &near_front();
    }
    // take() after peek() returned an event: the near tier holds it.
    Event take_peeked() {
        held_ = 1;
        return near_front();
    }

    // Takes the earliest event for handling. It stays at the heap's root until the handler's
    // first push into the heap replaces it or finish_take() removes it.
    // Precondition: !empty(), nothing taken.
    Event take() {
        if (near_empty()) refill();
        held_ = 1;
        return near_front();
    }
    // Ends the handling of the taken event (removes it unless a push already replaced it).
    void finish_take() {
        if (held_) {
            held_ = 0;
            near_pop();
        }
    }
    // A lower bound on the time of every pending event other than a taken one (exact while that
    // event is in the near tier); TICK_MAX when there is none. With a taken event in the heap, it
    // finds the root's least child, which the handler's first push then reuses (replace_top_known):
    // the heap does not change between the two, since any push while an event is taken is that push.
    Tick next_time_bound() {
        const Tick far = far_count_ ? limit_ : TICK_MAX; // far events are at limit_ or later
        if (held_) {
            // The taken event is still the near tier's least: the next is the second least.
            // (the sentinel's TICK_MAX when it is the only one; an event of the run is before far)
            if (sorted_) return std::min(run()[run_n_ - 1].time, far);
            return heap_next_bound(far);
        }
        return near_empty() ? far : near_front().time;
    }
    // Removes and returns the earliest event. Precondition: !empty(), nothing taken.
    Event pop() {
        if (near_empty()) refill();
        return near_pop();
    }

    // Bytes held by the set's storage (heap array, chunk pool, bucket table).
    std::size_t storage_bytes() const {
        return sizeof(slots_) + heap_.capacity() * sizeof(Event) + slabs_.size() * SLAB * sizeof(Chunk) +
               buckets_.capacity() * sizeof(List);
    }

private:
    // push_seq's steps (push has its own, for the same cases). NEWEST: ev's seq is the largest
    // yet, so it sorts after every pending event at its time, and the run's walk compares times alone.
    template <bool NEWEST>
    [[gnu::always_inline]] void push_event(const Event& ev) {
        if (ev.time < limit_) [[likely]] {
            if (held_) {
                // The event being handled is still the near tier's least: the first event its
                // handler schedules there takes its place (one sift-down in the heap, which
                // starts below the root when next_time_bound() found the root's least child).
                held_ = 0;
                near_replace_top<NEWEST>(ev);
                return;
            }
            near_push<NEWEST>(ev);
            return;
        }
        push_far(ev);
    }

    // The near tier is a sorted run while it holds at most SORTED_MAX events (its least event is
    // taken in O(1) and a near-term push is an insertion from the least end) and the heap
    // otherwise (a run that outgrew its array, or a bucket too large for it), until the heap
    // shrinks to RUN_AGAIN events.
    static constexpr std::size_t SORTED_MAX = 128;
    static constexpr std::size_t RUN_AGAIN = 64;

    bool near_empty() const { return sorted_ ? run_n_ == 0 : heap_.empty(); }
    std::size_t near_size() const { return sorted_ ? run_n_ : heap_.size(); }
    const Event& near_front() const { return sorted_ ? run()[run_n_] : heap_.front(); }
    Event near_pop() {
        if (sorted_) return run()[run_n_--];
        return heap_pop();
    }
    // Spills into the far tier (spill()) when the near tier alone holds all and grows past spill_at.
    template <bool NEWEST>
    void near_push(const Event& ev) {
        if (sorted_) {
            if (run_n_ < SORTED_MAX) {
                run_insert<NEWEST>(ev);
                if (heap_only_ && run_n_ > tuning_.spill_at) [[unlikely]]
                    spill();
                return;
            }
            near_to_heap();
        }
        heap_push(ev);
    }
    // push's near_push when the run is full or the heap is the near tier.
    [[gnu::noinline]] void heap_push_newest(const Event& ev) {
        if (sorted_) near_to_heap();
        heap_push(ev);
    }
    template <bool NEWEST>
    void near_replace_top(const Event& ev) {
        if (!sorted_) return heap_replace_top(ev);
        --run_n_;
        run_insert<NEWEST>(ev);
    }
    // The heap's steps, out of line: with the run taking the small sets, the inline paths (push,
    // take, the next bound) keep few values live and save no registers.
    [[gnu::noinline]] Tick heap_next_bound(Tick far) {
        child_ = heap_.least_child();
        child_known_ = true;
        return child_ && heap_.data()[child_].time < far ? heap_.data()[child_].time : far;
    }
    [[gnu::noinline]] Event heap_pop() {
        child_known_ = false; // a taken event's hold ends here or in heap_replace_top
        const Event ev = heap_.pop();
        if (heap_.size() <= RUN_AGAIN) [[unlikely]]
            heap_to_run();
        return ev;
    }
    [[gnu::noinline]] void heap_push(const Event& ev) {
        heap_.push(ev);
        if (heap_only_ && heap_.size() > tuning_.spill_at) [[unlikely]]
            spill();
    }
    [[gnu::noinline]] void heap_replace_top(const Event& ev) {
        if (child_known_) {
            child_known_ = false;
            heap_.replace_top_known(child_, ev);
        } else {
            heap_.replace_top(ev);
        }
    }
    // The run's events are run()[1 .. run_n_], in descending (time, seq) order, its least event
    // last; run()[-NEAR_STEPS .. 0] are sentinels that sort after every event, so neither the walk
    // nor the deep test needs a bound.
    // Most pushes land within NEAR_STEPS of the least end (a CPU's next completion, a packet's
    // next step) and are placed by the linear walk from there; a push that sorts after the event
    // NEAR_STEPS + 1 from that end (a timer, a later flow's event in a run of a hundred) is placed
    // by run_insert_deep, so the walk stops at that event or before it.
    static constexpr std::size_t NEAR_STEPS = 8;
    template <bool NEWEST>
    static bool run_before(const Event& e, const Event& ev) {
        if constexpr (NEWEST) return e.time <= ev.time;
        else return event_before(e, ev);
    }
    template <bool NEWEST>
    void run_insert(const Event& ev) {
        const std::size_t j = ++run_n_; // the free slot
        if (run_before<NEWEST>(run()[j - 1 - NEAR_STEPS], ev)) [[unlikely]]
            return run_insert_deep(j, ev);
        Event* p = run() + j;
        while (run_before<NEWEST>(p[-1], ev)) {
            *p = p[-1];
            --p;
        }
        *p = ev;
    }
    // run_insert<true> into the free slot j of push's event, from its fields.
    [[gnu::always_inline]] void run_insert_newest(std::size_t j, Tick time, std::uint64_t seq, EventTarget* target,
                                                  std::uint64_t arg) {
        Event* const r = run();
        if (r[j - 1 - NEAR_STEPS].time <= time) [[unlikely]]
            return run_insert_deep(j, Event{time, seq, target, arg});
        Event* p = r + j;
        while (p[-1].time <= time) {
            *p = p[-1];
            --p;
        }
        p->time = time;
        p->seq = seq;
        p->target = target;
        p->arg = arg;
    }
    // run_insert for an event that sorts after run()[j - 1 - NEAR_STEPS] (slot j free): a binary
    // search of the run below that event for ev's place, then one move of the events from there
    // to j - 1 up by a slot.
    [[gnu::noinline]] void run_insert_deep(std::size_t j, const Event& ev) {
        Event* const r = run();
        const Event* at = std::partition_point(r + 1, r + (j - 1 - NEAR_STEPS),
                                               [&ev](const Event& e) { return !event_before(e, ev); });
        const std::size_t p = static_cast<std::size_t>(at - r);
        std::memmove(&r[p + 1], &r[p], (j - p) * sizeof(Event));
        r[p] = ev;
    }
    [[gnu::noinline]] void near_to_heap() {
        heap_.clear();
        for (std::size_t i = run_n_; i > 0; --i) heap_.push(run()[i]); // ascending: no sift moves
        run_n_ = 0;
        sorted_ = false;
    }
    // The heap, down to RUN_AGAIN events, becomes the run: popped least first into the run's last
    // slot. Precondition: the near tier is the heap, nothing taken.
    [[gnu::noinline]] void heap_to_run() {
        const std::size_t n = heap_.size();
        for (std::size_t i = n; i > 0; --i) run()[i] = heap_.pop();
        run_n_ = n;
        sorted_ = true;
    }

    // The far tier's push. Inlined into push: every push of the hold model lands here.
    void push_far(const Event& ev) {
        ++far_count_;
        list_push(ev.time < year_end_ ? buckets_[(ev.time - base_) >> shift_] : overflow_, ev);
    }

    static constexpr std::uint32_t NIL = 0xffffffffu;
    static constexpr unsigned CHUNK = 8;
    static constexpr unsigned SLAB_BITS = 8; // 256 chunks of 264 B per slab
    static constexpr std::uint32_t SLAB = 1u << SLAB_BITS;

    struct Chunk {
        Event ev[CHUNK];
        std::uint32_t next;
    };
    struct List {
        std::uint32_t head = NIL, tail = NIL, count = 0;
    };

    Chunk& chunk(std::uint32_t i) { return slabs_[i >> SLAB_BITS][i & (SLAB - 1)]; }

    std::uint32_t alloc_chunk() {
        if (free_ != NIL) [[likely]] {
            const std::uint32_t i = free_;
            free_ = chunk(i).next;
            return i;
        }
        return new_chunk();
    }
    // A chunk never used before, from a new slab every SLAB chunks. Out of line: the slab's
    // allocation kept push (into which push_far and so alloc_chunk inline) saving six registers.
    [[gnu::noinline]] std::uint32_t new_chunk() {
        if (nchunks_ % SLAB == 0) slabs_.emplace_back(new Chunk[SLAB]);
        return nchunks_++;
    }
    void free_chunk(std::uint32_t i) {
        chunk(i).next = free_;
        free_ = i;
    }

    void list_push(List& l, const Event& ev) {
        const unsigned k = l.count % CHUNK;
        if (k == 0) {
            const std::uint32_t c = alloc_chunk();
            chunk(c).next = NIL;
            if (l.count == 0) l.head = c;
            else chunk(l.tail).next = c;
            l.tail = c;
        }
        chunk(l.tail).ev[k] = ev;
        ++l.count;
    }
    // Calls f on every event of `l` in insertion order, returning its chunks to the pool as
    // they are emptied (f may push onto other lists), and leaves `l` empty.
    template <class F>
    void list_drain(List& l, F&& f) {
        std::uint32_t c = l.head;
        for (std::uint32_t left = l.count; left > 0;) {
            Chunk& ch = chunk(c);
            const unsigned n = left < CHUNK ? left : CHUNK;
            for (unsigned k = 0; k < n; ++k) f(ch.ev[k]);
            left -= n;
            const std::uint32_t next = ch.next;
            free_chunk(c);
            c = next;
        }
        l = List{};
    }

    // Moves the next non-empty bucket into the heap, laying out a new year first if this one
    // is used up. Precondition: the heap is empty and the far tier is not.
    // Out of line, like the other cold paths, so that push, take and finish_take inline.
    [[gnu::noinline]] void refill() {
        for (;;) {
            while (cur_ < nb_) {
                List& b = buckets_[cur_++];
                if (b.count == 0) continue;
                far_count_ -= b.count;
                sorted_ = b.count <= SORTED_MAX;
                if (sorted_) list_drain(b, [this](const Event& ev) { run_insert<false>(ev); });
                else list_drain(b, [this](const Event& ev) { heap_.push(ev); });
                limit_ = cur_ == nb_ ? year_end_ : base_ + (Tick(cur_) << shift_);
                return;
            }
            lay_out_year();
            if (!near_empty()) return;
        }
    }

    // Spreads the overflow over a new year, or, for a few events, puts them all in the heap.
    // Precondition: the heap and every bucket are empty; the overflow is not.
    void lay_out_year() {
        Tick lo = TICK_MAX, hi = 0;
        {
            std::uint32_t c = overflow_.head;
            for (std::uint32_t left = overflow_.count; left > 0;) {
                const Chunk& ch = chunk(c);
                const unsigned n = left < CHUNK ? left : CHUNK;
                for (unsigned k = 0; k < n; ++k) {
                    lo = ch.ev[k].time < lo ? ch.ev[k].time : lo;
                    hi = ch.ev[k].time > hi ? ch.ev[k].time : hi;
                }
                left -= n;
                c = ch.next;
            }
        }
        const std::size_t n = overflow_.count;
        far_count_ -= n;
        nb_ = cur_ = 0;
        if (n <= tuning_.heap_only_max) {
            sorted_ = n <= SORTED_MAX;
            if (sorted_) list_drain(overflow_, [this](const Event& ev) { run_insert<false>(ev); });
            else list_drain(overflow_, [this](const Event& ev) { heap_.push(ev); });
            limit_ = TICK_MAX;
            year_end_ = 0;
            heap_only_ = true;
            return;
        }
        const Tick span = hi - lo;
        const std::size_t want = n / tuning_.per_bucket > 0 ? n / tuning_.per_bucket : 1;
        // The bucket width is the power of two just above span / want, so at most want + 1
        // buckets cover the span.
        unsigned shift = static_cast<unsigned>(std::bit_width(span / want));
        if (shift > 63) shift = 63;
        nb_ = static_cast<std::size_t>(span >> shift) + 1;
        if (buckets_.size() < nb_) buckets_.resize(nb_);
        base_ = lo;
        shift_ = shift;
        const unsigned __int128 end = static_cast<unsigned __int128>(lo) + (static_cast<unsigned __int128>(nb_) << shift);
        year_end_ = end > TICK_MAX ? TICK_MAX : static_cast<Tick>(end);
        far_count_ += n;
        list_drain(overflow_, [this](const Event& ev) { list_push(buckets_[(ev.time - base_) >> shift_], ev); });
        limit_ = lo;
        heap_only_ = false;
    }

    // The near tier alone has grown past spill_at: moves its events to the overflow, so the next
    // take lays out a year. Precondition: heap_only_, nothing taken (held_ == 0).
    [[gnu::noinline]] void spill() {
        const Event* h = sorted_ ? run() + 1 : heap_.data();
        const std::size_t n = near_size();
        for (std::size_t i = 0; i < n; ++i) list_push(overflow_, h[i]);
        far_count_ += n;
        heap_.clear();
        run_n_ = 0;
        limit_ = 0;
        year_end_ = 0;
        nb_ = cur_ = 0;
        heap_only_ = false;
    }

    Tuning tuning_{};
    EventHeap heap_;
    static_assert(NEAR_STEPS == 8, "one sentinel below the run for each near step, and run()[0]");
    static constexpr Event SENTINEL{TICK_MAX, ~std::uint64_t{0}, nullptr, 0};
    // run()[k] is slots_[NEAR_STEPS + k]: the sentinels, then the run.
    Event slots_[NEAR_STEPS + 1 + SORTED_MAX]{SENTINEL, SENTINEL, SENTINEL, SENTINEL, SENTINEL,
                                              SENTINEL, SENTINEL, SENTINEL, SENTINEL};
    Event* run() { return slots_ + NEAR_STEPS; }
    const Event* run() const { return slots_ + NEAR_STEPS; }
    std::size_t run_n_ = 0;
    bool sorted_ = true; // the near tier is the run (else heap_)
    Tick limit_ = TICK_MAX; // every event earlier than this is in near_, every other in the far tier
    bool heap_only_ = true; // no year laid out: the heap holds all but events at TICK_MAX
    std::size_t held_ = 0;  // 1 while a taken event still occupies the heap's root
    // While held_: the root's least child, once next_time_bound() found it (the heap unchanged
    // since); cleared where the hold ends in the heap (heap_replace_top, heap_pop).
    bool child_known_ = false;
    std::size_t child_ = 0;
    std::uint64_t next_seq_ = 0;

    std::size_t far_count_ = 0;
    std::vector<List> buckets_;
    std::size_t nb_ = 0, cur_ = 0; // buckets in this year; the next one to move into the heap
    Tick base_ = 0, year_end_ = 0;
    unsigned shift_ = 0;
    List overflow_;

    std::vector<std::unique_ptr<Chunk[]>> slabs_;
    std::uint32_t nchunks_ = 0, free_ = NIL;
};

} // namespace kdsim::engine
