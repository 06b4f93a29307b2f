#include "workloads/rxflood.h"

#include <algorithm>
#include <cmath>

namespace kdsim::workloads {

using kernel::Cat;

RxFlood::RxFlood(Env env, RxFloodWorkload cfg, RxFloodCosts costs)
    : Workload(env), cfg_(std::move(cfg)), costs_(std::move(costs)),
      queue_(cfg_.cryptd_qlen) {
    if (!costs_.memory) return;
    hier_ = std::make_unique<Hierarchy>(*costs_.memory, costs_.clock_hz);
    Hierarchy& h = *hier_;
    // as the harness: one line per descriptor; the ring's buffers, then cryptd's pool after them
    const std::size_t nbuf = RING + (cfg_.cryptd ? cfg_.cryptd_qlen + 2 : 0);
    h.descs = h.mem.alloc(RING * 64, 64);
    h.buffers = h.mem.alloc(nbuf * cfg_.buffer, 4096);
    for (std::size_t d = 0; d < RING; ++d) h.desc_buf.push_back(static_cast<std::uint32_t>(d));
    for (std::size_t b = RING; b < nbuf; ++b) h.free_bufs.push_back(static_cast<std::uint32_t>(b));
    h.free_n = h.free_bufs.size();
    h.queued.assign(cfg_.cryptd ? cfg_.cryptd_qlen : 0, 0);
}

Cycles RxFlood::touch(Tick& t, mem::Addr a, std::size_t len, bool write) {
    const Cycles c = write ? hier_->mem.write(0, t, a, len) : hier_->mem.read(0, t, a, len);
    t += env_.cpu.clock().to_ticks(c);
    return c;
}

Cycles RxFlood::desc_read_stall(std::size_t d) {
    Tick t = env_.cpu.now();
    const Cycles c = touch(t, hier_->descs + d * 64, 16, false); // done, len, buf
    desc_stall_ += c;
    return c;
}

Cycles RxFlood::open_stall(std::uint32_t b) {
    Tick t = env_.cpu.now();
    const mem::Addr f = buffer_addr(b);
    const std::uint64_t len = rx_frame_len(cfg_.payload);
    // memcpy(tag, data + n, 16) and the SPI, sequence number and IV: independent loads, in flight
    // together; each its own load site for the stride prefetcher
    const mem::Access first[] = {{f + len - 16, 16, false, SITE_TAG}, {f + 34, 16, false, SITE_HEADER}};
    Cycles c = hier_->mem.together(0, t, first);
    t += env_.cpu.clock().to_ticks(c);
    // EVP_DecryptUpdate in place reads the payload as it decrypts it: the lines stream in while the
    // cipher works on the ones before (the decrypt's cycles are charged by the caller), then
    const Cycles rd = hier_->mem.consume(0, t, mem::Access{f + 50, cfg_.payload, false, 0}, costs_.decrypt);
    t += env_.cpu.clock().to_ticks(rd);
    c += rd;
    c += touch(t, f + 50, cfg_.payload, true); // writes it back
    frame_stall_ += c;
    return c;
}

void RxFlood::drop_flushed(std::uint32_t b) {
    // CLFLUSHOPT: a dirty line is written back, every copy dropped
    mem::MemorySystem& m = hier_->mem;
    const std::size_t bytes = costs_.flush_lines * m.line_size();
    (void)m.clean(env_.cpu.now(), buffer_addr(b), bytes);
    (void)m.invalidate(buffer_addr(b), bytes);
}

void RxFlood::give_back(std::size_t d) {
    Hierarchy& h = *hier_;
    const Tick now = env_.cpu.now();
    const mem::Addr desc = h.descs + d * 64;
    (void)h.mem.write(0, now, desc, 4); // done = 0: the store retires into the store buffer
    // the device refills it at once: the frame with non-temporal stores (16 B each), then done/len
    h.mem.device_write(now, buffer_addr(h.desc_buf[d]), (rx_frame_len(cfg_.payload) + 15) / 16 * 16);
    (void)h.mem.write(1, now, desc, 16); // the device core's own time, not this CPU's
}

void RxFlood::start() {
    if (hier_) // the device has filled every descriptor before the run
        for (std::size_t d = 0; d < RING; ++d) {
            hier_->mem.device_write(0, buffer_addr(hier_->desc_buf[d]), (rx_frame_len(cfg_.payload) + 15) / 16 * 16);
            (void)hier_->mem.write(1, 0, hier_->descs + d * 64, 16);
        }
    const auto policy = cfg_.priority > 0 ? kernel::SchedPolicy::FIFO : kernel::SchedPolicy::NORMAL;
    rx_ = &user_task(cfg_.name, policy, cfg_.priority, rx_body(*this));
    if (cfg_.cryptd) {
        worker_ = &user_task(cfg_.name + "-cryptd", policy, cfg_.priority, worker_body(*this));
    }
}

engine::Task<> RxFlood::rx_body(RxFlood& w) {
    kernel::Cpu& cpu = w.env_.cpu;
    const RxFloodWorkload& c = w.cfg_;
    for (;;) {
        // One round (net_rx_action): polls of up to `weight` while the budget lasts. The ring is
        // always full, so every poll does its whole weight and every round ends squeezed.
        ++w.rounds_;
        if (Cycles r = cpu.costs().softirq_round) co_await cpu.exec(r, Cat::SOFTIRQ);
        int budget = c.budget;
        while (budget > 0) {
            ++w.polls_;
            for (int n = 0; n < c.weight; ++n) {
                ++w.received_;
                const std::size_t d = w.slot_;
                w.slot_ = (w.slot_ + 1) % RING;
                if (w.hier_)
                    if (Cycles s = w.desc_read_stall(d)) co_await cpu.exec(s, Cat::DRIVER);
                if (w.costs_.flush_per_packet) {
                    co_await cpu.exec(w.costs_.flush_per_packet, Cat::CACHE_MAINT);
                    w.lines_ += w.costs_.flush_lines;
                    if (w.hier_) w.drop_flushed(w.hier_->desc_buf[d]);
                }
                if (!w.worker_) {
                    if (w.hier_)
                        if (Cycles s = w.open_stall(w.hier_->desc_buf[d])) co_await cpu.exec(s, Cat::CRYPTO);
                    co_await cpu.exec(w.costs_.decrypt, Cat::CRYPTO);
                    ++w.decrypted_;
                    if (w.hier_) w.give_back(d);
                    continue;
                }
                // cryptd_enqueue_request(): a full queue refuses the request, the packet is dropped
                if (w.queue_.crypto_enqueue_request(crypto::CryptoAsyncRequest{&w.tfm_, w.received_, 0}) == -ENOSPC) {
                    ++w.queue_drops_;
                    if (w.hier_) w.give_back(d); // with the buffer it had
                    continue;
                }
                if (Hierarchy* h = w.hier_.get()) { // the request keeps the buffer; the ring gets one from the pool
                    h->queued[(h->q_head + h->q_n++) % h->queued.size()] = h->desc_buf[d];
                    h->desc_buf[d] = h->free_bufs[h->free_head];
                    h->free_head = (h->free_head + 1) % h->free_bufs.size();
                    --h->free_n;
                    w.give_back(d);
                }
                w.max_queued_ = std::max<std::uint64_t>(w.max_queued_, w.queue_.qlen());
                if (w.worker_sleeping_) {
                    w.worker_sleeping_ = false;
                    ++w.worker_wakeups_;
                    co_await kernel::try_to_wake_up(cpu, *w.worker_);
                }
            }
            budget -= c.weight;
        }
        ++w.squeezes_;
        if (w.worker_ && w.queue_.qlen() > 0) {
            // sched_yield() with the worker runnable at the same priority: it runs until its queue
            // is empty; it puts this task back on the runqueue when it goes to sleep.
            ++w.yields_;
            w.rx_yielded_ = true;
            co_await cpu.block();
        }
    }
}

engine::Task<> RxFlood::worker_body(RxFlood& w) {
    kernel::Cpu& cpu = w.env_.cpu;
    for (;;) {
        if (w.queue_.qlen() == 0) {
            if (w.rx_yielded_) { // the yielded rx task is runnable again (a requeue, not a wake-up)
                w.rx_yielded_ = false;
                cpu.wake_up_process(*w.rx_);
            }
            w.worker_sleeping_ = true;
            co_await cpu.block();
            continue;
        }
        w.queue_.crypto_dequeue_request(); // one request per pass
        if (Hierarchy* h = w.hier_.get()) {
            const std::uint32_t b = h->queued[h->q_head];
            h->q_head = (h->q_head + 1) % h->queued.size();
            --h->q_n;
            if (Cycles s = w.open_stall(b)) co_await cpu.exec(s, Cat::CRYPTO);
            h->free_bufs[(h->free_head + h->free_n++) % h->free_bufs.size()] = b; // back to the pool
        }
        co_await cpu.exec(w.costs_.decrypt, Cat::CRYPTO);
        ++w.decrypted_; // the completion
    }
}

results::WorkloadResult RxFlood::result() const {
    auto r = base_result(cfg_.name, "rx_flood " + std::string(crypto::to_string(cfg_.alg)) + " " + costs_.impl);
    const kernel::CpuStats& s = env_.cpu.stats();
    const double secs = engine::to_s(env_.sim.now());
    const double busy = static_cast<double>(env_.cpu.clock().to_cycles(s.busy_ticks));
    add(r, "packets_received", static_cast<double>(received_), "count");
    add(r, "packets_decrypted", static_cast<double>(decrypted_), "count");
    add(r, "packets_per_s", secs > 0 ? static_cast<double>(decrypted_) / secs : 0, "1/s");
    add(r, "payload_mbit_s", secs > 0 ? static_cast<double>(decrypted_ * cfg_.payload) * 8 / secs / 1e6 : 0, "Mbit/s");
    add(r, "cycles_per_packet", decrypted_ ? busy / static_cast<double>(decrypted_) : 0, "cycles");
    add(r, "decrypt_cycles", static_cast<double>(costs_.decrypt), "cycles");
    add(r, "flush_lines_per_packet", static_cast<double>(costs_.flush_lines), "count");
    add(r, "lines_flushed", static_cast<double>(lines_), "count");
    add(r, "rounds", static_cast<double>(rounds_), "count");
    add(r, "polls", static_cast<double>(polls_), "count");
    add(r, "time_squeeze", static_cast<double>(squeezes_), "count");
    if (hier_) {
        const mem::MemoryStats& m = hier_->mem.stats();
        const double n = decrypted_ ? static_cast<double>(decrypted_) : 1;
        add(r, "desc_stall_cycles_per_packet", static_cast<double>(desc_stall_) / n, "cycles");
        add(r, "frame_stall_cycles_per_packet", static_cast<double>(frame_stall_) / n, "cycles");
        add(r, "dram_demand_lines", static_cast<double>(m.dram_demand_lines), "count");
        add(r, "dram_stream_lines", static_cast<double>(m.dram_stream_lines), "count");
        add(r, "dram_stride_lines", static_cast<double>(m.dram_stride_lines), "count");
        add(r, "overlapped_misses", static_cast<double>(m.overlapped_misses), "count");
        add(r, "peer_lines", static_cast<double>(m.peer_hits), "count");
    }
    if (worker_) {
        add(r, "queue_drops", static_cast<double>(queue_drops_), "count");
        add(r, "max_cryptd_queue", static_cast<double>(max_queued_), "count");
        add(r, "worker_wakeups", static_cast<double>(worker_wakeups_), "count");
        add(r, "yields", static_cast<double>(yields_), "count");
    }
    return r;
}

} // namespace kdsim::workloads
