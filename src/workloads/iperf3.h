// iperf3-like TCP bulk stream (E5): `iperf3 -c` on the peer machine writes as fast as the window
// allows; `iperf3 -s` on this machine reads and discards. Reports the receiver's and the
// sender's throughput like iperf3's closing lines, packets per second, and the cycles per
// packet the receiving NIC's DMA API spent on cache maintenance.
#pragma once

#include "net/tcp.h"
#include "workloads/config.h"
#include "workloads/workload.h"

#include <memory>

namespace kdsim::workloads {

class Iperf3 final : public Workload {
public:
    // `env` is the receiver's; the sender runs on `peer_cpu` with `peer_stack`.
    Iperf3(Env env, Iperf3Workload cfg, net::Stack& stack, const net::TcpCosts& rx_costs, kernel::Cpu& peer_cpu,
           net::Stack& peer_stack, const net::TcpCosts& tx_costs, engine::Tick stop_at);
    void start() override;
    bool finite() const override { return false; }
    results::WorkloadResult result() const override;

private:
    static engine::Task<> server(Iperf3& w);
    static engine::Task<> client(Iperf3& w);
    Iperf3Workload cfg_;
    net::Stack& stack_;
    kernel::Cpu& peer_cpu_;
    net::Stack& peer_stack_;
    engine::Tick stop_at_;
    net::TcpSink sink_;
    net::TcpSource source_;
    kernel::TaskStruct* server_task_ = nullptr;
    kernel::TaskStruct* client_task_ = nullptr;
};

} // namespace kdsim::workloads
