// --trace-categories and --trace-cpus as a user writes them, and the ftrace text of a small trace
// built by hand, line by line.
#include "system/trace_ftrace.h"
#include "system/trace_select.h"

#include "kernel/types.h"

#include <gtest/gtest.h>

#include <string>

namespace kdsim::system {
namespace {

using kernel::Cat;
using kernel::CtxKind;
using kernel::TraceKind;
using kernel::TraceRecord;

constexpr unsigned bit(TraceKind k) { return 1u << static_cast<unsigned>(k); }

TEST(TraceCategories, GroupsAndExecCategoriesSetTheFilter) {
    kernel::TraceFilter f;
    ASSERT_EQ(parse_trace_categories("irq, exec:crypto,exec:copy", f), "");
    EXPECT_EQ(f.kinds, bit(TraceKind::HARDIRQ) | bit(TraceKind::EXEC));
    EXPECT_EQ(f.exec_cats, 1u << static_cast<unsigned>(Cat::CRYPTO) | 1u << static_cast<unsigned>(Cat::COPY));
    ASSERT_EQ(parse_trace_categories("sched,simd", f), "");
    EXPECT_EQ(f.kinds, bit(TraceKind::TASK) | bit(TraceKind::IDLE) | bit(TraceKind::SWITCH) | bit(TraceKind::BRACKET) |
                           bit(TraceKind::CLOBBER));
}

TEST(TraceCategories, UnknownNamesAreRefusedWithTheAcceptedOnes) {
    kernel::TraceFilter f;
    const std::string why = parse_trace_categories("irq,exec:cripto", f);
    EXPECT_NE(why.find("unknown cost category 'cripto'"), std::string::npos) << why;
    EXPECT_NE(why.find("crypto"), std::string::npos) << why;
    EXPECT_NE(parse_trace_categories("hardirqs", f).find("unknown category 'hardirqs'"), std::string::npos);
    EXPECT_NE(parse_trace_categories("irq,,exec", f).find("unknown category ''"), std::string::npos);
}

TEST(TraceCpus, NumbersRangesAndMachinesSelectCpus) {
    TraceCpus c;
    ASSERT_EQ(parse_trace_cpus("1, host:2-3, guest", c), "");
    EXPECT_TRUE(c.selects("host", 1));
    EXPECT_TRUE(c.selects("other", 1));
    EXPECT_FALSE(c.selects("host", 0));
    EXPECT_TRUE(c.selects("host", 3));
    EXPECT_FALSE(c.selects("host", 4));
    EXPECT_TRUE(c.selects("guest", 0));
    EXPECT_TRUE(c.selects("guest", 7));
    EXPECT_EQ(check_trace_cpus(c, {{"host", 4}, {"guest", 2}}), "");
}

TEST(TraceCpus, WhatTheScenarioLacksIsRefusedByName) {
    TraceCpus c;
    EXPECT_NE(parse_trace_cpus("3-1", c).find("N <= M"), std::string::npos);
    EXPECT_NE(parse_trace_cpus("host:", c).find("empty item"), std::string::npos);
    EXPECT_NE(parse_trace_cpus("x:y", c).find("'y' is not a CPU number"), std::string::npos);
    const std::vector<std::pair<std::string, int>> machines = {{"host", 4}, {"guest", 2}};
    ASSERT_EQ(parse_trace_cpus("host:4", c), "");
    EXPECT_NE(check_trace_cpus(c, machines).find("machine host has CPUs 0-3, not 4"), std::string::npos);
    ASSERT_EQ(parse_trace_cpus("hots:0", c), "");
    EXPECT_NE(check_trace_cpus(c, machines).find("no machine is named 'hots'"), std::string::npos);
    ASSERT_EQ(parse_trace_cpus("4", c), "");
    EXPECT_NE(check_trace_cpus(c, machines).find("no machine has CPU 4"), std::string::npos);
}

TEST(TraceFtrace, ATraceBuiltByHandPrintsTheKernelsEventLines) {
    // One CPU: task "iperf3" (pid 7) runs 0-10 us and takes irq 33 (eth0) at 2-3 us, whose handler
    // execs 1000 cycles; it switches to "kworker" (pid 8) at 10 us, which runs a NET_RX softirq at
    // 12-13 us and ends at 20 us, when the CPU idles until 25 us. Lines are in time order; the comm-pid prefix is the task
    // running at that instant (the previous one for sched_switch), <idle>-0 when none.
    kernel::TraceRecorder tr(100);
    const std::uint16_t cpu = tr.add_track("m", 0, 0);
    const std::uint32_t iperf = tr.intern("iperf3"), kworker = tr.intern("kworker"), eth0 = tr.intern("eth0");
    const engine::Tick us = engine::PS_PER_US;
    const auto exec_sub = static_cast<std::uint8_t>(static_cast<unsigned>(Cat::DRIVER) |
                                                    static_cast<unsigned>(CtxKind::HARDIRQ) << 5);
    tr.record(TraceRecord{2 * us, 3 * us, 1000, 0, cpu, TraceKind::EXEC, exec_sub});
    tr.record(TraceRecord{2 * us, 3 * us, 33, eth0, cpu, TraceKind::HARDIRQ, 0});
    tr.record(TraceRecord{0, 10 * us, 7, iperf, cpu, TraceKind::TASK, 0});
    tr.record(TraceRecord{10 * us, 10 * us, kworker, iperf, cpu, TraceKind::SWITCH, 0});
    tr.record(TraceRecord{12 * us, 13 * us, 1u << 3, 0, cpu, TraceKind::SOFTIRQ, 0});
    tr.record(TraceRecord{10 * us, 20 * us, 8, kworker, cpu, TraceKind::TASK, 0});
    tr.record(TraceRecord{20 * us, 25 * us, 0, 0, cpu, TraceKind::IDLE, 0});
    std::string text;
    write_trace_ftrace(tr, TraceInfo{"hand", 3, "", ""}, [&](std::string_view s) { text += s; });
    const std::string want =
        "# kdsim run trace of hand, seed 3, in simulated time ('trace-cmd report -t' format)\n"
        "# kdsim_exec, simd_begin, simd_end and simd_clobber are kdsim's own events\n"
        "cpus=1\n"
        "          iperf3-7     [000] 0.000002000: irq_handler_entry: irq=33 name=eth0\n"
        "          iperf3-7     [000] 0.000002000: kdsim_exec: cat=driver ctx=hardirq cycles=1000 dur_ns=1000\n"
        "          iperf3-7     [000] 0.000003000: irq_handler_exit: irq=33 ret=handled\n"
        "          iperf3-7     [000] 0.000010000: sched_switch: prev_comm=iperf3 prev_pid=7 ==> next_comm=kworker next_pid=8\n"
        "         kworker-8     [000] 0.000012000: softirq_entry: vec=3 [action=NET_RX]\n"
        "         kworker-8     [000] 0.000013000: softirq_exit: vec=3 [action=NET_RX]\n"
        "          <idle>-0     [000] 0.000020000: cpu_idle: state=1 cpu_id=0\n"
        "          <idle>-0     [000] 0.000025000: cpu_idle: state=4294967295 cpu_id=0\n";
    EXPECT_EQ(text, want);
}

TEST(TraceFtrace, ATcpProbePrintsTheFlowCwndSsthreshAndCaStateAndTheTcpCategoryKeepsOnlyIt) {
    // tcp_probe of flow 2 at 5 us: cwnd 285, ssthresh 285 << 32, icsk_ca_state 3 (TCP_CA_Recovery),
    // beside an idle slice the "tcp" category leaves out.
    kernel::TraceFilter f;
    ASSERT_EQ(parse_trace_categories("tcp", f), "");
    EXPECT_EQ(f.kinds, bit(TraceKind::TCP_PROBE));
    kernel::TraceRecorder tr(100, f);
    const std::uint16_t cpu = tr.add_track("m", 0, 1);
    const engine::Tick us = engine::PS_PER_US;
    tr.record(TraceRecord{0, 4 * us, 0, 0, cpu, TraceKind::IDLE, 0});
    tr.record(TraceRecord{5 * us, 5 * us, std::uint64_t{285} << 32 | 285, 2, cpu, TraceKind::TCP_PROBE, 3});
    std::string text;
    write_trace_ftrace(tr, TraceInfo{"hand", 1, "", "tcp"}, [&](std::string_view s) { text += s; });
    EXPECT_NE(text.find("          <idle>-0     [001] 0.000005000: tcp_probe: flow=2 snd_cwnd=285 ssthresh=285 "
                        "ca_state=Recovery\n"),
              std::string::npos)
        << text;
    EXPECT_EQ(text.find("cpu_idle"), std::string::npos) << text;
}

} // namespace
} // namespace kdsim::system
