// iperf3-like TCP bulk stream (E1, E5): `iperf3 -c` on the peer machine writes as fast as the
// window allows; `iperf3 -s` on this machine reads and discards. Reports the receiver's and the
// sender's throughput like iperf3's closing lines, packets per second, drops and where they
// happened, the tunnels' counters (authentication failures, sync vs cryptd crypts) and, per
// machine, the cycles per segment broken down by mechanism.
#pragma once

#include "net/tcp.h"
#include "net/udp.h"
#include "net/tunnel.h"
#include "workloads/config.h"
#include "workloads/workload.h"

#include <memory>

namespace kdsim::workloads {

// One end of the stream: its stack, its tunnel (if any) and all CPUs of its machine.
struct Iperf3End {
    net::Stack* stack = nullptr;
    const net::TcpCosts* tcp = nullptr;
    const net::UdpCosts* udp = nullptr; // with a UDP stream
    const net::NetCosts* net = nullptr;
    const net::TcpSysctl* sysctl = nullptr; // the machine's net.ipv4.tcp_*
};

// iperf3's periodic report (-i): at each interval's end the counters of every stream, read as
// iperf3's reporter reads them (bytes written, retransmits and snd_cwnd from TCP_INFO, bytes read).
struct Iperf3Sample {
    engine::Tick end = 0;
    std::uint64_t written = 0;    // TCP: bytes the client wrote; UDP: bytes sent
    std::uint64_t retransmits = 0;
    std::uint64_t cwnd_bytes = 0; // snd_cwnd x mss, summed over the streams
    std::uint64_t read = 0;       // bytes the server read
};

class Iperf3 final : public Workload, private engine::EventTarget {
public:
    // `env` is the receiver's; the sender runs on `peer_cpu`.
    // The streams use flows first_flow .. first_flow + parallel - 1. `mtu` is the route's (the
    // tunnel's inner MTU, or 1500). `server_cpus` / `client_cpus`: the CPUs each server / client
    // task may run on (cpus_allowed, placed by the scheduler); empty: pinned to env.cpu / peer_cpu.
    Iperf3(Env env, Iperf3Workload cfg, Iperf3End rx, kernel::Cpu& peer_cpu, Iperf3End tx, std::uint32_t mtu,
           std::uint32_t first_flow, engine::Tick stop_at, std::vector<kernel::Cpu*> server_cpus = {},
           std::vector<kernel::Cpu*> client_cpus = {});
    void start() override;
    bool finite() const override { return false; }
    results::WorkloadResult result() const override;
    // Conservation per TCP stream: the sender never holds more bytes acknowledged than the
    // receiver took in order (rcv_nxt), and the reader never read past it.
    void check_at_end() override;
    // receiver_mbit_s: the megabits the receiving application has read so far
    void progress(std::vector<Progress>& out) const override;

private:
    struct Stream {
        std::unique_ptr<net::TcpSink> sink; // TCP
        std::unique_ptr<net::TcpSource> source;
        std::unique_ptr<net::UdpSink> usink; // UDP
        std::unique_ptr<net::UdpSource> usource;
        kernel::TaskStruct* server = nullptr;
        kernel::TaskStruct* client = nullptr;
    };
    results::WorkloadResult udp_result() const;
    // The reporter's timer: records a sample and sets the next one.
    void on_event(std::uint64_t) override;
    Iperf3Sample sample(engine::Tick at) const;
    // iperf3's interval lines, one sender and one receiver line per interval, the last one ending now.
    void add_interval_lines(results::WorkloadResult& r) const;
    double seconds() const; // the stream's length so far: from its start to now or its end
    static engine::Task<> server(Iperf3& w, Stream& s);
    static engine::Task<> client(Iperf3& w, Stream& s);
    Iperf3Workload cfg_;
    Iperf3End rx_, tx_;
    net::Stack& stack_;
    kernel::Cpu& peer_cpu_;
    net::Stack& peer_stack_;
    engine::Tick stop_at_;
    std::vector<std::unique_ptr<Stream>> streams_;
    std::uint32_t mss_;
    std::vector<Iperf3Sample> samples_; // one per interval ended so far
    std::vector<kernel::Cpu*> server_cpus_, client_cpus_;
    // With an affinity: where the tasks are and how often they moved (summed over the streams).
    void add_placement(results::WorkloadResult& r) const;
};

} // namespace kdsim::workloads
