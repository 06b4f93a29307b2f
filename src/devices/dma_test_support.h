// Test support for the DMA API's tests: a 1 GHz CPU (1 cycle = 1 ns) with round kernel costs,
// round [dma] costs, and a kernel thread running the test's body.
#pragma once

#include "devices/dma.h"
#include "kernel/cpu_test_support.h"

#include <gtest/gtest.h>

#include <functional>

namespace kdsim::devices {

inline kernel::KernelCosts round_kernel_costs() { return kernel::testing::round_costs(); }

inline DmaCosts round_dma_costs(bool coherent = false) {
    return DmaCosts{.coherent = coherent, .map_call = 100, .unmap_call = 80, .sync_call = 60,
                    .inner_inv_line = 10, .inner_clean_line = 12, .inner_flush_line = 14,
                    .outer_inv_line = 5, .outer_clean_line = 6, .outer_flush_line = 7,
                    .outer_sync = 20, .barrier = 30, .swiotlb_map_call = {}, .swiotlb_unmap_call = {},
                    .swiotlb_slot_probe = {}, .swiotlb_slot_write = {}}; // no bounce pool
}

inline kernel::KernelConfig quiet_config() {
    kernel::KernelConfig c;
    c.hz = 100; // first tick at 10 ms, after everything below
    return c;
}

// A CPU, a DMA platform, and a kernel thread running `body`.
struct Harness {
    explicit Harness(DmaCosts costs = round_dma_costs())
        : cpu(sim, 0, engine::Clock(1'000'000'000), round_kernel_costs(), quiet_config()), dma(costs) {}
    engine::Simulation sim{1};
    kernel::Cpu cpu;
    DmaPlatform dma;
    std::function<engine::Task<>()> body;
    bool done = false;

    static engine::Task<> thread_main(Harness& h) {
        co_await h.body();
        h.done = true;
    }
    void run() {
        cpu.create_task("driver", kernel::SchedPolicy::NORMAL, 0, true, thread_main(*this));
        cpu.boot();
        sim.run(5 * engine::PS_PER_S);
        ASSERT_TRUE(done);
    }
    // Cycles (= ns) that `op` took on the CPU.
    engine::Task<> timed(DmaCall op, engine::Cycles& out) {
        Tick t0 = cpu.now();
        co_await std::move(op);
        out = (cpu.now() - t0) / engine::PS_PER_NS;
    }
};

} // namespace kdsim::devices
