#include "workloads/iperf3.h"

#include "kernel/sched.h"

#include <fmt/format.h>

#include <cstdio>

namespace kdsim::workloads {

Iperf3::Iperf3(Env env, Iperf3Workload cfg, Iperf3End rx, kernel::Cpu& peer_cpu, Iperf3End tx, std::uint32_t mtu,
               std::uint32_t first_flow, engine::Tick stop_at, std::vector<kernel::Cpu*> server_cpus,
               std::vector<kernel::Cpu*> client_cpus)
    : Workload(env), cfg_(std::move(cfg)), rx_(std::move(rx)), tx_(std::move(tx)), stack_(*rx_.stack),
      peer_cpu_(peer_cpu), peer_stack_(*tx_.stack), stop_at_(stop_at), mss_(net::tcp_mss_for_mtu(mtu)),
      server_cpus_(std::move(server_cpus)), client_cpus_(std::move(client_cpus)) {
    if (cfg_.udp && cfg_.length == 0) cfg_.length = mtu - net::UDP_IP_HEADERS;
    for (int i = 0; i < cfg_.parallel; ++i) {
        const auto flow = first_flow + static_cast<std::uint32_t>(i);
        auto s = std::make_unique<Stream>();
        if (cfg_.udp) {
            // Without -w the socket keeps sk_rcvbuf = net.core.rmem_default.
            s->usink = std::make_unique<net::UdpSink>(stack_, *rx_.udp, *rx_.net, rx_.tcp->copy_to_user_cold,
                                                      cfg_.rcvbuf ? cfg_.rcvbuf : RMEM_DEFAULT, flow);
            s->usource = std::make_unique<net::UdpSource>(peer_stack_, *tx_.udp, *tx_.net, tx_.tcp->copy_from_user,
                                                          cfg_.length, cfg_.bitrate, flow);
        } else {
            s->sink = std::make_unique<net::TcpSink>(stack_, *rx_.tcp, cfg_.rcvbuf ? cfg_.rcvbuf : 128 * 1024, flow);
            const net::TcpSysctl defaults;
            const net::TcpSysctl& rx_sys = rx_.sysctl ? *rx_.sysctl : defaults;
            const net::TcpSysctl& tx_sys = tx_.sysctl ? *tx_.sysctl : defaults;
            if (!cfg_.rcvbuf) s->sink->autotune(rx_sys.rmem);
            const net::CongestionAlgorithm cc =
                cfg_.congestion ? *cfg_.congestion : tx_.sysctl ? tx_.sysctl->congestion_control : net::CongestionAlgorithm::CUBIC;
            s->source = std::make_unique<net::TcpSource>(peer_stack_, *tx_.tcp, cfg_.window ? cfg_.window : 128 * 1024,
                                                         net::tcp_mss_for_mtu(mtu), flow, 0, cc);
            // the SYN-ACK's window: the receiver's first advertisement
            if (!cfg_.window) s->source->autotune(tx_sys.wmem, cfg_.rcvbuf ? cfg_.rcvbuf : rx_sys.rmem[1] / 2);
        }
        streams_.push_back(std::move(s));
    }
}

void Iperf3::start() {
    for (std::size_t i = 0; i < streams_.size(); ++i) {
        Stream& s = *streams_[i];
        const std::string suffix = streams_.size() > 1 ? "." + std::to_string(i) : "";
        s.server = &env_.cpu.create_task(cfg_.name + "-s" + suffix, kernel::SchedPolicy::NORMAL, 0, false, server(*this, s));
        s.client = &peer_cpu_.create_task(cfg_.name + "-c" + suffix, kernel::SchedPolicy::NORMAL, 0, false, client(*this, s));
        s.server->in_user = s.client->in_user = true;
        if (server_cpus_.size() > 1) kernel::set_cpus_allowed(*s.server, server_cpus_); // before the run
        if (client_cpus_.size() > 1) kernel::set_cpus_allowed(*s.client, client_cpus_);
    }
    if (cfg_.interval > 0 && cfg_.start + cfg_.interval < stop_at_) env_.sim.schedule_at(cfg_.start + cfg_.interval, this);
}

// iperf3's reporter_callback (iperf3's src/iperf_api.c) every -i seconds.
void Iperf3::on_event(std::uint64_t) {
    const engine::Tick now = env_.sim.now();
    samples_.push_back(sample(now));
    if (now + cfg_.interval < stop_at_) env_.sim.schedule_at(now + cfg_.interval, this);
}

Iperf3Sample Iperf3::sample(engine::Tick at) const {
    Iperf3Sample s{.end = at};
    for (const auto& st : streams_) {
        if (st->source) {
            s.written += st->source->bytes_written();
            s.retransmits += st->source->stats().retransmits;
            s.cwnd_bytes += std::uint64_t{st->source->cwnd()} * mss_;
            s.read += st->sink->bytes_read();
        } else {
            s.written += st->usource->bytes();
            s.read += st->usink->bytes_read();
        }
    }
    return s;
}

engine::Task<> Iperf3::server(Iperf3& w, Stream& s) {
    if (s.usink) co_await s.usink->read_loop(*s.server->cpu, *s.server);
    else co_await s.sink->read_loop(*s.server->cpu, *s.server);
}

// The loops take their CPU from their task when it may move (its wake-up after the sleep may
// already place it elsewhere).
engine::Task<> Iperf3::client(Iperf3& w, Stream& s) {
    co_await kernel::hrtimer_sleep_until(*s.client->cpu, w.cfg_.start);
    if (s.usource) co_await s.usource->send_loop(*s.client->cpu, w.stop_at_, s.client);
    else co_await s.source->send_loop(*s.client->cpu, *s.client, w.stop_at_);
}

namespace {
double mbit_per_s(double bytes, double secs) { return secs > 0 ? bytes * 8 / secs / 1e6 : 0; }
// The interval, transfer and bitrate columns of iperf3's lines, for [from, to) seconds of the
// stream. iperf3's units: MBytes = 2^20 bytes (KBytes 2^10), Mbits/sec = 10^6 bits per second.
std::string interval_columns(double from, double to, double bytes) {
    char buf[128];
    std::snprintf(buf, sizeof buf, "%.2f-%.2f sec  %.1f MBytes  %.0f Mbits/sec", from, to, bytes / (1024.0 * 1024.0),
                  mbit_per_s(bytes, to - from));
    return buf;
}
} // namespace

void Iperf3::add_interval_lines(results::WorkloadResult& r) const {
    // One interval would only repeat the closing lines: lines from the second interval on.
    if (cfg_.interval == 0 || samples_.empty()) return;
    const engine::Tick now = std::min(env_.sim.now(), stop_at_);
    Iperf3Sample prev{.end = cfg_.start};
    auto line = [&](const Iperf3Sample& s) {
        const double from = engine::to_s(prev.end - cfg_.start), to = engine::to_s(s.end - cfg_.start);
        std::string tx = interval_columns(from, to, static_cast<double>(s.written - prev.written));
        if (!cfg_.udp)
            tx += fmt::format("  {} Retr  {:.0f} KBytes Cwnd", s.retransmits - prev.retransmits,
                              static_cast<double>(s.cwnd_bytes) / 1024.0);
        r.notes.emplace_back("interval sender  ", tx);
        r.notes.emplace_back("interval receiver", interval_columns(from, to, static_cast<double>(s.read - prev.read)));
        prev = s;
    };
    for (const Iperf3Sample& s : samples_)
        if (s.end <= now) line(s);
    if (prev.end < now) line(sample(now)); // the last, partial interval, as iperf3 prints it at the end
}

double Iperf3::seconds() const {
    const engine::Tick end = std::min(env_.sim.now(), stop_at_);
    return end > cfg_.start ? engine::to_s(end - cfg_.start) : 0;
}

results::WorkloadResult Iperf3::udp_result() const {
    auto r = base_result(cfg_.name, "iperf3 udp");
    const double secs = seconds();
    std::uint64_t sent = 0, got = 0, bytes_read = 0, rcvbuf_drops = 0, sent_bytes = 0, missing = 0, expected = 0;
    for (const auto& st : streams_) {
        sent += st->usource->datagrams();
        sent_bytes += st->usource->bytes();
        got += st->usink->datagrams();
        bytes_read += st->usink->bytes_read();
        rcvbuf_drops += st->usink->rcvbuf_drops();
        missing += st->usink->datagrams_missing();
        expected += st->usink->datagrams_expected();
    }
    if (missing > 0)
        r.data_lost = fmt::format("{} of {} datagrams never read (iperf3's Lost/Total, from the gaps in the "
                                  "sequence numbers read; the socket's receive buffer dropped {} in all, the others "
                                  "were dropped before it); UDP does not recover them",
                                  missing, expected, rcvbuf_drops);
    const double lost = static_cast<double>(sent - std::min(sent, got));
    char buf[96];
    r.notes.emplace_back("sender  ", interval_columns(0, secs, static_cast<double>(sent_bytes)) + "  " + std::to_string(sent) +
                                         " datagrams");
    std::snprintf(buf, sizeof buf, "  %.0f/%llu (%.2g%%) lost or in flight", lost, static_cast<unsigned long long>(sent),
                  sent ? 100.0 * lost / static_cast<double>(sent) : 0.0);
    r.notes.emplace_back("receiver", interval_columns(0, secs, static_cast<double>(bytes_read)) + buf);
    add_interval_lines(r);
    add(r, "sender_mbit_s", mbit_per_s(static_cast<double>(sent_bytes), secs), "Mbit/s");
    add(r, "receiver_mbit_s", mbit_per_s(static_cast<double>(bytes_read), secs), "Mbit/s");
    add(r, "seconds", secs, "s");
    add(r, "datagrams_sent", static_cast<double>(sent), "count");
    add(r, "datagrams_received", static_cast<double>(got), "count");
    add(r, "datagrams_lost", lost, "count");
    add(r, "datagrams_missing", static_cast<double>(missing), "count");
    add(r, "socket_rcvbuf_drops", static_cast<double>(rcvbuf_drops), "count");
    add_placement(r);
    return r;
}

void Iperf3::add_placement(results::WorkloadResult& r) const {
    for (const auto& [tasks, key] : {std::pair{&server_cpus_, "server"}, std::pair{&client_cpus_, "client"}}) {
        if (tasks->size() < 2) continue;
        std::uint64_t moves = 0, balance = 0;
        for (const auto& st : streams_) {
            const kernel::TaskStruct& t = *(tasks == &server_cpus_ ? st->server : st->client);
            moves += t.nr_migrations;
            balance += t.nr_balance_moves;
        }
        const kernel::TaskStruct& first = *(tasks == &server_cpus_ ? streams_.front()->server : streams_.front()->client);
        add(r, fmt::format("{}_cpu", key), static_cast<double>(first.cpu->id()), "cpu");
        add(r, fmt::format("{}_migrations", key), static_cast<double>(moves), "count");
        add(r, fmt::format("{}_balance_moves", key), static_cast<double>(balance), "count");
    }
}

void Iperf3::check_at_end() {
    for (std::size_t i = 0; i < streams_.size(); ++i) {
        const Stream& st = *streams_[i];
        if (!st.source || !st.sink) continue;
        const std::uint64_t acked = st.source->bytes_acked(), in_order = st.sink->rcv_nxt(),
                            read = st.sink->bytes_read();
        if (acked > in_order || read > in_order)
            env_.cpu.report_finding(stats::FindingKind::LOST_DATA, "TCP stream " + std::to_string(i),
                                    "bytes acknowledged " + std::to_string(acked) + " or read " + std::to_string(read) +
                                        " beyond the " + std::to_string(in_order) +
                                        " bytes the receiver took in order",
                                    "iperf3 end-of-run conservation");
    }
}

void Iperf3::progress(std::vector<Progress>& out) const {
    std::uint64_t bytes_read = 0;
    for (const auto& st : streams_) bytes_read += st->usink ? st->usink->bytes_read() : st->sink->bytes_read();
    out.push_back(Progress{"receiver_mbit_s", static_cast<double>(bytes_read) * 8 / 1e6});
}

results::WorkloadResult Iperf3::result() const {
    if (cfg_.udp) return udp_result();
    auto r = base_result(cfg_.name, "iperf3 tcp");
    const double secs = seconds();
    std::uint64_t bytes_read = 0, segments = 0, acks = 0, updates = 0, sent = 0, acked = 0, sent_softirq = 0,
                  backlogged = 0, retr = 0, rto = 0, written = 0, lost = 0, cwnd = 0;
    for (const auto& st : streams_) {
        const net::TcpSource& src = *st->source;
        bytes_read += st->sink->bytes_read();
        segments += st->sink->segments();
        acks += st->sink->acks_sent();
        updates += st->sink->window_updates();
        sent += src.segments_sent();
        acked += src.bytes_acked();
        sent_softirq += src.segments_sent_in_bh();
        backlogged += src.backlogged_acks();
        retr += src.stats().retransmits;
        rto += src.stats().rto;
        written += src.bytes_written();
        cwnd += src.cwnd();
        if (src.aborted()) lost += src.bytes_written() - src.bytes_acked();
    }
    // iperf3's closing lines for both ends: the sender's with its Retr column
    r.notes.emplace_back("sender  ", interval_columns(0, secs, static_cast<double>(acked)) + "  " + std::to_string(retr) +
                                         " Retr  (" + std::to_string(sent) + " segments)");
    r.notes.emplace_back("receiver", interval_columns(0, secs, static_cast<double>(bytes_read)));
    add_interval_lines(r);
    add(r, "receiver_mbit_s", mbit_per_s(static_cast<double>(bytes_read), secs), "Mbit/s");
    add(r, "sender_mbit_s", mbit_per_s(static_cast<double>(acked), secs), "Mbit/s");
    add(r, "seconds", secs, "s");
    add(r, "receiver_bytes", static_cast<double>(bytes_read), "bytes");
    add(r, "segments_received", static_cast<double>(segments), "count");
    add(r, "acks_sent", static_cast<double>(acks), "count");
    add(r, "window_updates", static_cast<double>(updates), "count");
    add(r, "segments_sent", static_cast<double>(sent), "count");
    add(r, "segments_sent_in_bh", static_cast<double>(sent_softirq), "count");
    add(r, "acks_backlogged", static_cast<double>(backlogged), "count");
    add(r, "bytes_acked", static_cast<double>(acked), "bytes");
    add(r, "retransmits", static_cast<double>(retr), "count");
    add(r, "rto", static_cast<double>(rto), "count");
    add(r, "cwnd", static_cast<double>(cwnd), "segments");
    // conservation: what was written is read, or still queued / in flight, or lost (the
    // connection was aborted, which is also a lost-data finding)
    add(r, "bytes_written", static_cast<double>(written), "bytes");
    add(r, "bytes_not_yet_read", static_cast<double>(written - bytes_read - lost), "bytes");
    add(r, "bytes_lost", static_cast<double>(lost), "bytes");
    add_placement(r);
    return r;
}

} // namespace kdsim::workloads
