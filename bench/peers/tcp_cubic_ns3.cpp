// ns-3's TcpCubic (Debian's ns-3 3.37) over the link of scenarios/tcp-peer/ (docs/tcp.md): one
// bulk flow (BulkSend -> PacketSink) over a point-to-point link with the scenario's rate, one-way
// delay, 1000-frame drop-tail queue (no queue disc) and MSS, initial cwnd 10, SACK, buffers well
// above the path's window, and the same loss pattern as the scenario's link `drop` /
// `drop_every`: TCP data segments by index in the stream, each lost on its first crossing only.
// Prints, as tools/tcp_peer_compare.py reads it:
//   # comment lines
//   t0 <s>                          the first data segment's transmission
//   probe <s> <cwnd> <ssthresh> <state>   (segments; state as enum tcp_ca_state) on every change
//   goodput <bytes> <s>             bytes the sink received in the <s> seconds from t0
//   retransmits <n>                 data segments sent again, in those seconds
//   dropped <n>                     segments the loss pattern discarded
// Usage: kdsim_tcp_cubic_ns3 --rate=100e6 --delay-ms=10 --seconds=6 [--drop=3000,3001] [--drop-every=1000]
// `rate` is the Ethernet link's bit rate in kdsim: a 1500-byte IP packet takes 1538 bytes' time
// there (14 header, 4 FCS, 8 preamble, 12 gap) and 1502 on ns-3's PPP, so ns-3's DataRate is
// rate x 1502 / 1538, which gives a data frame the same time on the wire.

#include <ns3/applications-module.h>
#include <ns3/core-module.h>
#include <ns3/internet-module.h>
#include <ns3/network-module.h>
#include <ns3/point-to-point-module.h>
#include <ns3/ppp-header.h>
#include <ns3/traffic-control-helper.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <sstream>
#include <string>
#include <vector>

using namespace ns3;

namespace {

constexpr std::uint32_t MSS = 1448; // 1500 - 20 (IP) - 32 (TCP with timestamps), as kdsim's TCP_MSS

// The loss pattern of net/link_drops.h: a data segment on its first crossing (above the highest
// index seen) whose index is listed, or every `every`-th one.
class SegmentDrops : public ErrorModel {
public:
    static TypeId GetTypeId() {
        static TypeId tid = TypeId("kdsim::SegmentDrops").SetParent<ErrorModel>().AddConstructor<SegmentDrops>();
        return tid;
    }
    std::vector<std::uint64_t> indexes;
    std::uint64_t every = 0;
    std::uint64_t dropped = 0;

private:
    bool DoCorrupt(Ptr<Packet> p) override {
        Ptr<Packet> c = p->Copy();
        PppHeader ppp;
        c->RemoveHeader(ppp);
        if (ppp.GetProtocol() != 0x0021) return false; // IPv4
        Ipv4Header ip;
        c->RemoveHeader(ip);
        if (ip.GetProtocol() != 6) return false;
        TcpHeader tcp;
        c->RemoveHeader(tcp);
        if (c->GetSize() == 0) return false; // no data
        const std::uint64_t index = (tcp.GetSequenceNumber().GetValue() - 1) / MSS; // the SYN took 0
        if (index < next_new_) return false; // a retransmission
        next_new_ = index + 1;
        const bool hit = (every && (index + 1) % every == 0) || std::binary_search(indexes.begin(), indexes.end(), index);
        if (hit) ++dropped;
        return hit;
    }
    void DoReset() override {}
    std::uint64_t next_new_ = 0;
};

struct Probe {
    double t0 = -1;
    std::uint32_t cwnd = 10, ssthresh = 0x7fffffff; // ns-3's initial ssthresh is UINT32_MAX bytes
    int state = 0;
    bool seen = false;
    void print() {
        std::printf("probe %.9f %u %u %d\n", Simulator::Now().GetSeconds(), cwnd, ssthresh, state);
        seen = true;
    }
    void on_cwnd(std::uint32_t, std::uint32_t v) {
        cwnd = v / MSS;
        print();
    }
    void on_ssthresh(std::uint32_t, std::uint32_t v) {
        ssthresh = v == UINT32_MAX ? 0x7fffffff : v / MSS; // the infinite one printed as the kernel's
        print();
    }
    void on_state(TcpSocketState::TcpCongState_t, TcpSocketState::TcpCongState_t v) {
        state = static_cast<int>(v);
        print();
    }
};

Probe probe;
Ptr<PacketSink> sink;
double seconds = 6;
bool started = false;
std::uint32_t highest_seq = 0;
std::uint64_t retransmits = 0;

void report_goodput() {
    std::printf("goodput %llu %.9f\n", static_cast<unsigned long long>(sink->GetTotalRx()), seconds);
    std::printf("retransmits %llu\n", static_cast<unsigned long long>(retransmits));
    Simulator::Stop();
}

// The sender's first data segment: the flow's t0 (kdsim's iperf3 start).
void on_tx(Ptr<const Packet> p, const TcpHeader& h, Ptr<const TcpSocketBase>) {
    if (p->GetSize() == 0) return;
    const std::uint32_t seq = h.GetSequenceNumber().GetValue();
    if (seq < highest_seq) ++retransmits;
    highest_seq = std::max(highest_seq, seq + p->GetSize());
    if (started) return;
    started = true;
    probe.t0 = Simulator::Now().GetSeconds();
    std::printf("t0 %.9f\n", probe.t0);
    Simulator::Schedule(Seconds(seconds), &report_goodput);
}

void connect_traces() {
    const std::string sock = "/NodeList/0/$ns3::TcpL4Protocol/SocketList/0/";
    Config::ConnectWithoutContext(sock + "CongestionWindow", MakeCallback(&Probe::on_cwnd, &probe));
    Config::ConnectWithoutContext(sock + "SlowStartThreshold", MakeCallback(&Probe::on_ssthresh, &probe));
    Config::ConnectWithoutContext(sock + "CongState", MakeCallback(&Probe::on_state, &probe));
    Config::ConnectWithoutContext(sock + "Tx", MakeCallback(&on_tx));
}

std::vector<std::uint64_t> parse_list(const std::string& s) {
    std::vector<std::uint64_t> v;
    std::stringstream in(s);
    for (std::string item; std::getline(in, item, ',');)
        if (!item.empty()) v.push_back(std::stoull(item));
    return v;
}

} // namespace

int main(int argc, char** argv) {
    double rate = 100e6, delay_ms = 10;
    std::uint32_t queue = 1000;
    std::string drop;
    std::uint64_t drop_every = 0;
    CommandLine cmd;
    cmd.AddValue("rate", "kdsim's Ethernet link rate, bit/s", rate);
    cmd.AddValue("delay-ms", "one-way delay, ms", delay_ms);
    cmd.AddValue("queue", "the link's queue, frames", queue);
    cmd.AddValue("seconds", "run this long from the first data segment", seconds);
    cmd.AddValue("drop", "segment indexes lost on their first crossing, comma-separated, increasing", drop);
    cmd.AddValue("drop-every", "also every k-th segment", drop_every);
    cmd.Parse(argc, argv);

    Config::SetDefault("ns3::TcpL4Protocol::SocketType", TypeIdValue(TcpCubic::GetTypeId()));
    Config::SetDefault("ns3::TcpSocket::SegmentSize", UintegerValue(MSS));
    Config::SetDefault("ns3::TcpSocket::InitialCwnd", UintegerValue(10));
    // kdsim's tcp_wmem / tcp_rmem of 16 MiB: the send buffer holds 16 MiB x 1448 / 4096 bytes of
    // data (one 4 KiB truesize per segment), the receiver advertises half of 16 MiB
    Config::SetDefault("ns3::TcpSocket::SndBufSize", UintegerValue(16u * 1024 * 1024 / 4096 * MSS));
    Config::SetDefault("ns3::TcpSocket::RcvBufSize", UintegerValue(8u * 1024 * 1024));
    Config::SetDefault("ns3::TcpSocket::DelAckCount", UintegerValue(2));
    Config::SetDefault("ns3::TcpSocket::DelAckTimeout", TimeValue(MilliSeconds(40))); // Linux's TCP_ATO_MIN
    Config::SetDefault("ns3::TcpSocketBase::MinRto", TimeValue(MilliSeconds(200)));   // Linux's TCP_RTO_MIN
    Config::SetDefault("ns3::TcpSocketBase::Sack", BooleanValue(true));
    Config::SetDefault("ns3::TcpSocketBase::Timestamp", BooleanValue(true));

    NodeContainer nodes;
    nodes.Create(2);
    PointToPointHelper p2p;
    p2p.SetDeviceAttribute("DataRate", DataRateValue(DataRate(static_cast<std::uint64_t>(rate * 1502.0 / 1538.0))));
    p2p.SetChannelAttribute("Delay", TimeValue(MicroSeconds(static_cast<std::int64_t>(delay_ms * 1000))));
    p2p.SetQueue("ns3::DropTailQueue<Packet>", "MaxSize", QueueSizeValue(QueueSize(std::to_string(queue) + "p")));
    NetDeviceContainer devs = p2p.Install(nodes);

    Ptr<SegmentDrops> em = CreateObject<SegmentDrops>();
    em->indexes = parse_list(drop);
    em->every = drop_every;
    devs.Get(1)->SetAttribute("ReceiveErrorModel", PointerValue(em));

    InternetStackHelper stack;
    stack.Install(nodes);
    Ipv4AddressHelper addr;
    addr.SetBase("10.1.1.0", "255.255.255.0");
    Ipv4InterfaceContainer ifs = addr.Assign(devs);
    TrafficControlHelper().Uninstall(devs); // the device's queue alone, as kdsim's link queue

    const std::uint16_t port = 5201;
    BulkSendHelper src("ns3::TcpSocketFactory", InetSocketAddress(ifs.GetAddress(1), port));
    src.SetAttribute("MaxBytes", UintegerValue(0));
    src.SetAttribute("SendSize", UintegerValue(128 * 1024)); // iperf3's write size
    ApplicationContainer tx = src.Install(nodes.Get(0));
    tx.Start(Seconds(0));
    PacketSinkHelper sk("ns3::TcpSocketFactory", InetSocketAddress(Ipv4Address::GetAny(), port));
    ApplicationContainer rx = sk.Install(nodes.Get(1));
    rx.Start(Seconds(0));
    sink = DynamicCast<PacketSink>(rx.Get(0));
    Simulator::Schedule(NanoSeconds(1), &connect_traces);

    std::printf("# ns-3 3.37 TcpCubic: rate %.0f bit/s (ns-3 DataRate %.0f), delay %.3f ms, queue %u frames, MSS %u\n",
                rate, rate * 1502.0 / 1538.0, delay_ms, queue, MSS);
    Simulator::Stop(Seconds(seconds + 10));
    Simulator::Run();
    std::printf("dropped %llu\n", static_cast<unsigned long long>(em->dropped));
    Simulator::Destroy();
    return 0;
}
