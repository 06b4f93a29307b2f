#include "capture/capture.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <pcap/pcap.h>

#include <cstdio>
#include <set>
#include <stdexcept>
#include <tuple>

namespace kdsim::capture {

namespace {

// stdio cookie: libpcap's fwrite()s go to the AtomicFile; an error is kept, not thrown through C.
ssize_t cookie_write(void* c, const char* buf, size_t size) {
    auto& f = *static_cast<PcapFile*>(c);
    if (!f.error.empty()) return -1;
    try {
        f.file().write(std::string_view(buf, size));
    } catch (const std::runtime_error& e) {
        f.error = e.what();
        return -1;
    }
    return static_cast<ssize_t>(size);
}

std::string ip_text(std::uint32_t ip) {
    return fmt::format("{}.{}.{}.{}", ip >> 24, (ip >> 16) & 0xff, (ip >> 8) & 0xff, ip & 0xff);
}

} // namespace

PcapFile::PcapFile(report::AtomicFile& file, int snaplen) : file_(file) {
    pcap_t* p = pcap_open_dead_with_tstamp_precision(DLT_EN10MB, snaplen, PCAP_TSTAMP_PRECISION_NANO);
    if (!p) throw std::runtime_error("libpcap: pcap_open_dead failed");
    pcap_ = p;
    cookie_io_functions_t io{};
    io.write = cookie_write;
    FILE* fp = fopencookie(this, "w", io);
    if (!fp) {
        pcap_close(p);
        throw std::runtime_error("cannot write " + file.path().string() + ": fopencookie failed");
    }
    std::setvbuf(fp, nullptr, _IOFBF, 1 << 20);
    pcap_dumper_t* d = pcap_dump_fopen(p, fp);
    if (!d) {
        std::fclose(fp);
        pcap_close(p);
        throw std::runtime_error("cannot write " + file.path().string() + ": " + pcap_geterr(p));
    }
    dumper_ = d;
}

PcapFile::~PcapFile() {
    if (dumper_) pcap_dump_close(static_cast<pcap_dumper_t*>(dumper_)); // closes the cookie stream
    if (pcap_) pcap_close(static_cast<pcap_t*>(pcap_));
}

void PcapFile::write(engine::Tick t, std::span<const std::uint8_t> frame) {
    const std::uint64_t ns = t / engine::PS_PER_NS;
    pcap_pkthdr h{};
    h.ts.tv_sec = static_cast<time_t>(ns / 1'000'000'000);
    h.ts.tv_usec = static_cast<suseconds_t>(ns % 1'000'000'000); // nanoseconds: the file's precision
    h.caplen = h.len = static_cast<bpf_u_int32>(frame.size());
    pcap_dump(static_cast<u_char*>(dumper_), &h, frame.data());
    ++frames_;
}

void PcapFile::finish() {
    if (finished_) return;
    finished_ = true;
    const int rc = pcap_dump_flush(static_cast<pcap_dumper_t*>(dumper_));
    if (!error.empty()) throw std::runtime_error(error);
    if (rc != 0) throw std::runtime_error("cannot write " + file_.path().string() + ": libpcap could not flush it");
}

DeviceTap::DeviceTap(const TapPoint& at, report::AtomicFile& file) : at_(at), pcap_(file) {}

void DeviceTap::frame(Dir dir, engine::Tick now, const net::Packet& p) {
    const bool tx = dir == Dir::TX;
    net::wire::build_frame(bytes_, p, tx ? at_.self : at_.peer, tx ? at_.peer : at_.self, at_.channel,
                           tx ? at_.side : 1 - at_.side);
    pcap_.write(now, bytes_);
}

std::string esp_sa_table(const std::vector<TapPoint>& points) {
    std::string out;
    std::set<std::tuple<const net::TunnelChannel*, int>> done;
    for (const TapPoint& t : points) {
        if (!t.channel || t.channel->kind() != net::TunnelKind::ESP) continue;
        if (!done.insert({t.channel, t.side}).second) continue;
        const net::TunnelChannel::Sa sa = t.channel->sa(t.side);
        if (t.channel->alg() == crypto::AeadAlg::CHACHA20_POLY1305) {
            out += fmt::format("# {} -> {} SPI 0x{:08x}: rfc7539esp(chacha20,poly1305) key 0x{:02x}: Wireshark 4.0 cannot decrypt RFC 7634\n",
                               ip_text(t.self.ip), ip_text(t.peer.ip), sa.spi, fmt::join(sa.key, ""));
            continue;
        }
        out += fmt::format("\"IPv4\",\"{}\",\"{}\",\"0x{:08x}\",\"AES-GCM with 16 octet ICV [RFC4106]\",\"0x{:02x}\",\"NULL\",\"\"\n",
                           ip_text(t.self.ip), ip_text(t.peer.ip), sa.spi, fmt::join(sa.key, ""));
    }
    return out;
}

} // namespace kdsim::capture
