// rx_flood (src/workloads/rxflood.*): the predicted packet rate is the clock divided by the
// per-packet cycles computed by hand from a small made-up profile.
#include "helpers.h"

#include "workloads/rxflood.h"

namespace kdsim {
namespace {

constexpr std::uint64_t CLOCK = 1'000'000'000; // 1 GHz: a cycle is a nanosecond

// One machine, one CPU, the x86 base profile with every kernel cost zeroed (ticks, interrupts and
// switches cost nothing unless a test sets them), a made-up cipher table and a non-coherent [dma].
system::ScenarioConfig flood(workloads::RxFloodWorkload w, engine::Tick duration = 20 * engine::PS_PER_MS) {
    system::ScenarioConfig cfg;
    cfg.name = "rx-flood-test";
    cfg.duration = duration;
    cfg.max_duration = duration;
    system::MachineConfig m;
    m.name = "host";
    m.profile = scenario::load_profile(testing::ROOT / "data/profiles/x86/amd-zen3.toml");
    m.profile.clock_hz = CLOCK;
    m.profile.cache_line = 64;
    m.profile.kernel = kernel::KernelCosts{};
    m.profile.cipher = crypto::CipherCostTable{};
    using crypto::CipherImpl;
    using crypto::CipherPrim;
    m.profile.cipher.set(CipherPrim::AES128_GCM, CipherImpl::GENERIC, {20.0, 3000});
    m.profile.cipher.set(CipherPrim::AES128_GCM, CipherImpl::SSSE3, {8.0, 1500});
    m.profile.cipher.set(CipherPrim::AES128_GCM, CipherImpl::AESNI, {2.0, 1000}); // the best SIMD one
    m.profile.cipher.set(CipherPrim::CHACHA20_POLY1305, CipherImpl::GENERIC, {5.0, 700}); // scalar only
    devices::DmaCosts dma;
    dma.coherent = false;
    dma.inner_inv_line = 10;
    dma.barrier = 7;
    m.profile.dma = dma;
    m.profile.flush.reset(); // the [dma] path unless a test sets the [flush] stand-in
    m.workloads.push_back(w);
    cfg.machines.push_back(std::move(m));
    return cfg;
}

results::RunResults run(const system::ScenarioConfig& cfg) {
    system::System sys(cfg);
    return sys.run();
}

// packets/s from the per-packet cycles: the whole packets that fit the run, over its length.
double expected_pps(double cycles_per_packet, double seconds) {
    return std::floor(seconds * static_cast<double>(CLOCK) / cycles_per_packet) / seconds;
}

// 1000-byte payloads in 9 KiB buffers, each flushed whole before it is read.
workloads::RxFloodWorkload flush_9k() {
    workloads::RxFloodWorkload w;
    w.payload = 1000;
    w.buffer = 9216;
    w.flush = workloads::RxFlush::FULL_BUFFER;
    return w;
}

// The packet rate is the clock over `per_packet` cycles, and so is the CPU's cycles per packet,
// both within the relative tolerance `rel`.
void expect_per_packet(const results::RunResults& r, double per_packet, double rel) {
    EXPECT_NEAR(testing::metric(r, "rx", "packets_per_s"), 1e9 / per_packet, 1e9 / per_packet * rel);
    EXPECT_NEAR(testing::metric(r, "rx", "cycles_per_packet"), per_packet, per_packet * rel);
}

TEST(RxFlood, InlinePacketRateIsTheClockOverTheDecryptCycles) {
    workloads::RxFloodWorkload w;
    w.payload = 1000;
    auto r = run(flood(w));
    ASSERT_FALSE(r.failed);
    // aes128-gcm.aesni: 1000 + 1000 x 2.0 = 3000 cycles per packet, nothing else
    EXPECT_EQ(testing::metric(r, "rx", "decrypt_cycles"), 3000);
    EXPECT_NEAR(testing::metric(r, "rx", "packets_per_s"), expected_pps(3000, 0.02), 1e-6);
    EXPECT_NEAR(testing::metric(r, "rx", "cycles_per_packet"), 3000, 3000 * 1.0 / 6000);
    // all of the CPU's task cycles are decryptions (the one the end of the run cut short included)
    const double crypto = testing::cpu0(r).cycles.at("task").at("crypto");
    EXPECT_GE(crypto, 3000 * testing::metric(r, "rx", "packets_decrypted"));
    EXPECT_LT(crypto, 3000 * (testing::metric(r, "rx", "packets_decrypted") + 1));
}

TEST(RxFlood, WithAMeasuredCurveTheDecryptCostsTheCurveAtThePayloadNotTheLine) {
    workloads::RxFloodWorkload w;
    w.payload = 1000;
    auto cfg = flood(w);
    // aes128-gcm.aesni measured at 512 and 2048 bytes: 1000 B lies 488 / 1536 of the way,
    // 1800 + (2600 - 1800) x 488 / 1536 = 2054.2 -> 2054 cycles (the line would say 3000)
    cfg.machines[0].profile.cipher.set_curve(crypto::CipherPrim::AES128_GCM, crypto::CipherImpl::AESNI, {{512, 1800}, {2048, 2600}});
    auto r = run(cfg);
    ASSERT_FALSE(r.failed);
    EXPECT_EQ(testing::metric(r, "rx", "decrypt_cycles"), 2054);
    // 20 ms / 2054 cycles = 9,737.1 packets: within one packet (50 packets/s over the run)
    EXPECT_NEAR(testing::metric(r, "rx", "packets_per_s"), expected_pps(2054, 0.02), 50);
}

TEST(RxFlood, ScalarImplementationWhenThePrimitiveHasNoSimdOne) {
    workloads::RxFloodWorkload w;
    w.alg = crypto::AeadAlg::CHACHA20_POLY1305;
    w.payload = 64;
    auto r = run(flood(w));
    EXPECT_EQ(testing::metric(r, "rx", "decrypt_cycles"), 700 + 64 * 5);
    EXPECT_NEAR(testing::metric(r, "rx", "packets_per_s"), expected_pps(1020, 0.02), 1e-6);
}

TEST(RxFlood, TheCalibratedFlushStandInIsChargedPerCallPlusPerLine) {
    workloads::RxFloodWorkload w = flush_9k();
    auto cfg = flood(w);
    cfg.machines[0].profile.flush = devices::FlushCosts{100, 2.0, 3.0, std::nullopt}; // preferred over [dma]
    auto r = run(cfg);
    // 144 lines flushed x 2 + the received frame's lines read back x 3 + 100, + 3000 decrypt
    const double read_lines = std::ceil(static_cast<double>(workloads::rx_frame_len(1000)) / 64);
    const double per_packet = 100 + 144 * 2.0 + read_lines * 3.0 + 3000;
    EXPECT_NEAR(testing::metric(r, "rx", "packets_per_s"), expected_pps(per_packet, 0.02), 1e-6);
    EXPECT_EQ(testing::metric(r, "rx", "flush_lines_per_packet"), 144);
}

TEST(RxFlood, FlushOfTheFullBufferOrTheReceivedLength) {
    workloads::RxFloodWorkload w;
    w.payload = 1000;
    w.buffer = 9216;
    w.flush = workloads::RxFlush::FULL_BUFFER; // 144 lines x 10 + barrier 7 = 1447
    auto full = run(flood(w));
    EXPECT_EQ(testing::metric(full, "rx", "flush_lines_per_packet"), 144);
    EXPECT_NEAR(testing::metric(full, "rx", "packets_per_s"), expected_pps(3000 + 1447, 0.02), 1e-6);
    w.flush = workloads::RxFlush::RECEIVED_LENGTH; // 1066 bytes: 17 lines x 10 + 7 = 177
    auto rxlen = run(flood(w));
    EXPECT_EQ(testing::metric(rxlen, "rx", "flush_lines_per_packet"), 17);
    EXPECT_NEAR(testing::metric(rxlen, "rx", "packets_per_s"), expected_pps(3000 + 177, 0.02), 1e-6);
}

TEST(RxFlood, PerRoundCostIsPaidOncePerBudgetOfPolls) {
    workloads::RxFloodWorkload w;
    w.payload = 1000;
    auto cfg = flood(w);
    cfg.machines[0].profile.kernel.softirq_round = 3200; // a round = 5 polls of 64 = 320 packets: +10 per packet
    auto r = run(cfg);
    const double rounds = testing::metric(r, "rx", "rounds");
    EXPECT_LE(testing::metric(r, "rx", "polls"), 5 * rounds); // the last round is cut short by the end of the run
    EXPECT_GT(testing::metric(r, "rx", "polls"), 5 * (rounds - 1));
    EXPECT_NEAR(testing::metric(r, "rx", "packets_per_s"), 1e9 / 3010, 1e9 / 3010 * 320 / 6600.0);
}

TEST(RxFlood, CryptdHandOffPaysOneWakeUpAndTwoSwitchesPerRound) {
    workloads::RxFloodWorkload w;
    w.payload = 1000;
    w.cryptd = true;
    w.priority = 50;
    auto cfg = flood(w, 50 * engine::PS_PER_MS);
    cfg.machines[0].profile.kernel.wakeup = 1500; // the worker's wake-up is local: 1500 + 500 on the waker
    cfg.machines[0].profile.kernel.wakeup_activate = 500;
    cfg.machines[0].profile.kernel.context_switch = 3000;
    auto r = run(cfg);
    ASSERT_FALSE(r.failed);
    EXPECT_EQ(testing::metric(r, "rx", "queue_drops"), 0);
    EXPECT_EQ(testing::metric(r, "rx", "max_cryptd_queue"), 320);
    const double rounds = testing::metric(r, "rx", "rounds");
    EXPECT_NEAR(testing::metric(r, "rx", "worker_wakeups"), rounds, 1);
    // per round of 320: 320 decryptions, one wake-up of the worker, a switch to it and back
    expect_per_packet(r, 3000 + (2000 + 2 * 3000) / 320.0, 0.01);
}

TEST(RxFlood, ABoundedQueueDropsWhatDoesNotFit) {
    workloads::RxFloodWorkload w;
    w.payload = 1000;
    w.cryptd = true;
    w.cryptd_qlen = 100; // a round enqueues 320: 220 dropped per round
    w.priority = 50;
    auto r = run(flood(w));
    const double rounds = testing::metric(r, "rx", "rounds");
    EXPECT_EQ(testing::metric(r, "rx", "max_cryptd_queue"), 100);
    EXPECT_NEAR(testing::metric(r, "rx", "queue_drops"), 220 * rounds, 220);
    // every packet received is decrypted, dropped, or still queued at the end (at most the bound)
    const double left = testing::metric(r, "rx", "packets_received") - testing::metric(r, "rx", "packets_decrypted") -
                        testing::metric(r, "rx", "queue_drops");
    EXPECT_GE(left, 0);
    EXPECT_LE(left, 100);
}

// The memory hierarchy of the hand-worked tests below: 1 GHz, 64 B lines, private L1 32 KiB 8-way
// 4 cycles and L2 1 MiB 8-way 14 cycles (no shared level), DRAM 100 ns (a demand miss stalls
// 100 - 4 = 96 cycles) at 6.4 GB/s shared (10 ns a line) and 3.2 GB/s for one core (a streamed
// line 20 cycles), one stream tracker following after 1 line miss, another core's line 50 cycles
// (46 beyond an L1 hit), coherent DMA.
system::ScenarioConfig on_hierarchy(workloads::RxFloodWorkload w, engine::Tick duration = 20 * engine::PS_PER_MS) {
    auto cfg = flood(w, duration);
    mem::MemoryConfig m;
    m.line = 64;
    m.levels = {{"l1d", 32 * 1024, 8, 4, false, mem::Replacement::LRU},
                {"l2", 1024 * 1024, 8, 14, false, mem::Replacement::LRU}};
    m.dram_latency_ns = 100;
    m.dram_bandwidth = 6.4e9;
    m.core_bandwidth = 3.2e9;
    m.prefetch_streams = 1;
    m.prefetch_trigger = 1;
    m.peer_latency = 50;
    m.dma_coherent = true;
    cfg.machines[0].profile.memory = m;
    return cfg;
}

TEST(RxFloodHierarchy, A64BytePacketStallsThePeerDescriptorTwoDemandMissesAndOneStreamedLine) {
    workloads::RxFloodWorkload w;
    w.payload = 64; // frame 130 B: lines 0-2 of its buffer
    auto r = run(on_hierarchy(w));
    ASSERT_FALSE(r.failed);
    // descriptor: the device core's modified line, 46; the tag (bytes 114-129): line 1 a demand miss
    // (96), line 2 continues it (20); the ESP header, line 0, starts a new stream: 96; the payload
    // (lines 0-1) is then in L1, read and written in place for nothing
    EXPECT_NEAR(testing::metric(r, "rx", "desc_stall_cycles_per_packet"), 46, 0.01);
    EXPECT_NEAR(testing::metric(r, "rx", "frame_stall_cycles_per_packet"), 96 + 20 + 96, 1);
    const double per_packet = 1000 + 64 * 2.0 + 46 + 96 + 20 + 96;
    EXPECT_NEAR(testing::metric(r, "rx", "packets_per_s"), 1e9 / per_packet, 1e9 / per_packet * 0.005);
    const double n = testing::metric(r, "rx", "packets_decrypted");
    EXPECT_NEAR(testing::metric(r, "rx", "dram_demand_lines"), 2 * n, 2);
    // each descriptor line moves twice: to the rx CPU's read, back to the device core's store
    EXPECT_NEAR(testing::metric(r, "rx", "peer_lines"), 2 * n, 2);
}

TEST(RxFloodHierarchy, A1420BytePacketStreamsItsPayloadAfterTheTagAndHeaderMisses) {
    workloads::RxFloodWorkload w;
    w.payload = 1420; // frame 1486 B: lines 0-23 of a 1536 B buffer
    auto r = run(on_hierarchy(w));
    // descriptor 46; tag (bytes 1470-1485): line 22 a demand miss, which first waits for the DRAM
    // channel: the device's refill of the descriptor just given back (1488 B, 24 lines x 10 ns)
    // started as the descriptor read did, so 240 - 46 = 194 more, then 96; line 23 streamed 20;
    // header line 0: demand 96; payload bytes 50-1469, consumed by the decrypt (1000 + 1420 x 2 =
    // 3840 cycles over its 23 lines: 167 a line): line 0 in L1, lines 1-21 continue the header's
    // stream, one every 20, line 22 in L1: each has arrived before the decrypt reaches it, so
    // nothing is left (without the overlap: 21 x 20 = 420); the in-place write hits L1. The first
    // packets also wait for the ring's initial fill (128 x 24 lines + 128 descriptor lines at
    // 10 ns: 32 us over ~4,400 packets, under 8 cycles each)
    const double frame = 194 + 96 + 20 + 96;
    EXPECT_GE(testing::metric(r, "rx", "frame_stall_cycles_per_packet"), frame);
    EXPECT_LE(testing::metric(r, "rx", "frame_stall_cycles_per_packet"), frame + 8);
    expect_per_packet(r, 1000 + 1420 * 2.0 + 46 + frame, 0.005);
}

TEST(RxFloodHierarchy, APayloadStreamSlowerThanTheDecryptLeavesItsExcessAsTheStall) {
    workloads::RxFloodWorkload w;
    w.payload = 1420;
    auto cfg = on_hierarchy(w);
    cfg.machines[0].profile.memory->core_bandwidth = 0.32e9; // one core streams a line per 200 ns
    auto r = run(cfg);
    // as above, with the tag's line 23 streamed in 200; the payload: line 0 in L1 (ready at once),
    // lines 1-21 arrive at 200 x k, line 22 in L1 (ready when the cursor passes it, at 4,200). The
    // decrypt, c = 3840 / 23 = 166.96 a line, waits for each streamed line: it is done with line 21
    // at 4,200 + c and line 22 at 4,200 + 2c; less its 23c of work: 4,200 - 21c = 694. The ring's
    // initial fill (32 us, above) now falls on ~3,900 packets of ~5,200 cycles: under 9 each
    const double c = 3840.0 / 23;
    const double payload = 4200 - 21 * c;
    const double frame = 194 + 96 + 200 + 96 + payload;
    EXPECT_GE(testing::metric(r, "rx", "frame_stall_cycles_per_packet"), frame);
    EXPECT_LE(testing::metric(r, "rx", "frame_stall_cycles_per_packet"), frame + 9);
    expect_per_packet(r, 1000 + 1420 * 2.0 + 46 + frame, 0.005);
}

TEST(RxFloodHierarchy, TheCryptdWorkerPaysTheFrameAndTheRxTaskTheDescriptor) {
    workloads::RxFloodWorkload w;
    w.payload = 1420;
    w.cryptd = true;
    w.priority = 50;
    auto r = run(on_hierarchy(w, 50 * engine::PS_PER_MS));
    ASSERT_FALSE(r.failed);
    EXPECT_EQ(testing::metric(r, "rx", "queue_drops"), 0);
    // the same accesses as inline, the frame's by the worker on buffers from the pool; kernel costs
    // 0. The device's refills (240 ns each) queue on the channel while the rx task takes 320
    // descriptors (46 ns each): the worker's first demand misses wait for that backlog, 194 a packet
    // on average as inline; the payload's stream is consumed by the decrypt, as inline
    expect_per_packet(r, 1000 + 1420 * 2.0 + 46 + 194 + 96 + 20 + 96, 0.01);
    // every packet received paid its descriptor; the metric is per packet decrypted
    const double received = testing::metric(r, "rx", "packets_received");
    const double decrypted = testing::metric(r, "rx", "packets_decrypted");
    EXPECT_NEAR(testing::metric(r, "rx", "desc_stall_cycles_per_packet"), 46 * received / decrypted, 0.01);
}

TEST(RxFloodHierarchy, AFlushKeepsItsOwnFiguresAndTimingAndFunctionalModesAgree) {
    workloads::RxFloodWorkload w = flush_9k();
    auto cfg = on_hierarchy(w);
    cfg.machines[0].profile.dma->coherent = false;
    cfg.machines[0].profile.memory->dma_coherent = false;
    auto r = run(cfg); // 144 lines x 10 + barrier 7 + 3000 decrypt, as without the hierarchy
    EXPECT_NEAR(testing::metric(r, "rx", "packets_per_s"), expected_pps(3000 + 1447, 0.02), 1e-6);
    EXPECT_FALSE(results::find_metric(r, "rx", "frame_stall_cycles_per_packet").has_value());
    workloads::RxFloodWorkload i;
    i.payload = 512;
    auto timing = on_hierarchy(i);
    auto functional = on_hierarchy(i);
    functional.mode = system::Mode::FUNCTIONAL;
    const auto a = run(timing), b = run(functional);
    for (const char* k : {"packets_per_s", "frame_stall_cycles_per_packet", "dram_stream_lines"})
        EXPECT_EQ(testing::metric(a, "rx", k), testing::metric(b, "rx", k)) << k;
}

TEST(RxFloodHierarchy, WithTwoFillBuffersTheTagAndHeaderMissesOverlap) {
    workloads::RxFloodWorkload w;
    w.payload = 64; // frame 130 B: lines 0-2
    auto cfg = on_hierarchy(w);
    cfg.machines[0].profile.memory->fill_buffers = 2;
    auto r = run(cfg);
    // from t0 (after the descriptor's 46): the tag's line 1 misses, issued at t0, ready at t0 + 96;
    // its line 2 streams at the core's rate, t0 + 20; the header's line 0 misses while line 1 is in
    // flight, issued at t0 + 20 when the channel is free (lines 1 and 2 took it 10 ns each), ready
    // at t0 + 116: 116 in all, not 96 + 20 + 96
    EXPECT_NEAR(testing::metric(r, "rx", "frame_stall_cycles_per_packet"), 116, 1);
    expect_per_packet(r, 1000 + 64 * 2.0 + 46 + 116, 0.005);
    const double n = testing::metric(r, "rx", "packets_decrypted");
    EXPECT_NEAR(testing::metric(r, "rx", "overlapped_misses"), n, 2);
}

TEST(RxFloodHierarchy, TheStridePrefetcherFetchesEachBuffersTagAndHeaderLinesAhead) {
    workloads::RxFloodWorkload w;
    w.payload = 64;
    auto cfg = on_hierarchy(w);
    cfg.machines[0].profile.memory->stride_trigger = 1;
    cfg.machines[0].profile.memory->stride_degree = 1;
    auto r = run(cfg);
    // each load site strides 24 lines (1536 B) from buffer to buffer: from the third buffer after
    // the ring wraps on, the tag's line 1 and the header's line 0 were fetched ahead and cost their
    // transfer at the core's rate (20), and the tag's line 2 streams (20): 60. Buffers 0 and 1 of
    // each pass over the 128 (the wrap breaks the stride) pay 96 + 20 + 96 = 212
    const double frame = (126 * 60.0 + 2 * 212.0) / 128;
    EXPECT_NEAR(testing::metric(r, "rx", "frame_stall_cycles_per_packet"), frame, 0.5);
    const double n = testing::metric(r, "rx", "packets_decrypted");
    EXPECT_NEAR(testing::metric(r, "rx", "dram_stride_lines"), 2 * n * 126 / 128, 8);
}

TEST(RxFloodHierarchy, ASplitFlushStandInPaysTheFlushAndTakesTheRereadFromTheHierarchy) {
    workloads::RxFloodWorkload w = flush_9k(); // 1000 B payload, frame 1066 B: lines 0-16
    auto cfg = on_hierarchy(w);
    cfg.machines[0].profile.flush = devices::FlushCosts{100, 2.0, 3.0, 50}; // the re-read given apart
    auto r = run(cfg);
    // descriptor 46; flush 100 + 144 x 2 = 388 (reread_per_call and reread_line are not charged);
    // the frame from DRAM: tag line 16 a demand miss (96), header line 0 another (96), payload
    // lines 1-15 continue the header's stream (one per 20), line 16 in L1, all consumed by the
    // decrypt (3000 cycles over 17 lines: 176 a line, more than 20): 192. The first packets also
    // wait for the ring's initial fill (128 x 18 lines at 10 ns: 23 us over ~5,000 packets)
    EXPECT_GE(testing::metric(r, "rx", "frame_stall_cycles_per_packet"), 192);
    EXPECT_LE(testing::metric(r, "rx", "frame_stall_cycles_per_packet"), 192 + 8);
    expect_per_packet(r, 46 + 388 + 192 + 1000 + 1000 * 2.0, 0.005);
    // without [memory] the split figures add up to the old per_call
    auto bare = flood(w);
    bare.machines[0].profile.flush = devices::FlushCosts{100, 2.0, 3.0, 50};
    const double read_lines = 17;
    EXPECT_NEAR(testing::metric(run(bare), "rx", "packets_per_s"),
                expected_pps(150 + 144 * 2.0 + read_lines * 3.0 + 3000, 0.02), 1e-6);
}

TEST(RxFlood, AFlushOnACoherentProfileIsAConfigurationError) {
    workloads::RxFloodWorkload w;
    w.flush = workloads::RxFlush::RECEIVED_LENGTH;
    auto cfg = flood(w);
    cfg.machines[0].profile.dma->coherent = true;
    EXPECT_THROW(system::System{cfg}, system::ConfigError);
    cfg.machines[0].profile.dma.reset();
    EXPECT_THROW(system::System{cfg}, system::ConfigError);
    w.flush = workloads::RxFlush::NONE;
    auto none = flood(w);
    none.machines[0].profile.cipher = crypto::CipherCostTable{};
    EXPECT_THROW(system::System{none}, system::ConfigError); // no [cipher.aes128-gcm.*]
}

} // namespace
} // namespace kdsim
