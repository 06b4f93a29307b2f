// Packet captures of a run (kdsim run --pcap DIR): one classic pcap file per network device,
// written by libpcap (pcap_open_dead_with_tstamp_precision + pcap_dump_fopen + pcap_dump; libpcap
// 1.10 writes classic pcap, not pcapng), Ethernet link type, nanosecond timestamps of simulated
// time since the run's start (shown as 1970-01-01 00:00:00 + t). Each device gets a tap
// (net::FrameTap) that turns every frame it transmits or hands to the stack into its bytes
// (net/wire.h) and dumps them. Nothing of this runs, and libpcap is not called, without --pcap.
//
// The files are written through report::AtomicFile: into temporary files beside the final names
// during the run, published by rename only when the whole run's outputs are. Beside them,
// esp_sa holds the ESP security associations in Wireshark's ESP SA table format (the "esp_sa"
// UAT), so tshark -o "uat:esp_sa:..." or Wireshark's preferences decrypt the captures.
#pragma once

#include "engine/time.h"
#include "net/netdevice.h"
#include "net/tunnel_channel.h"
#include "net/wire.h"
#include "report/output_file.h"

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace kdsim::capture {

// A pcap file being written into `file` (which it does not own) through libpcap.
class PcapFile {
public:
    explicit PcapFile(report::AtomicFile& file, int snaplen = 65535);
    ~PcapFile();
    PcapFile(const PcapFile&) = delete;
    PcapFile& operator=(const PcapFile&) = delete;
    // Dumps one frame captured at simulated time `t`.
    void write(engine::Tick t, std::span<const std::uint8_t> frame);
    // Flushes libpcap's buffer into the file. Throws std::runtime_error naming the file if any
    // write failed (the file is then left unpublished).
    void finish();
    std::uint64_t frames() const { return frames_; }

    // For the stdio cookie that feeds libpcap's writes into the AtomicFile.
    report::AtomicFile& file() { return file_; }
    std::string error; // the first write error, if any

private:
    report::AtomicFile& file_;
    void* pcap_ = nullptr;   // pcap_t
    void* dumper_ = nullptr; // pcap_dumper_t
    std::uint64_t frames_ = 0;
    bool finished_ = false;
};

// What a tap needs to know of its device: its machine's and its link peer's addresses, and the
// tunnel channel (nullptr: none) and the side of it this machine is.
struct TapPoint {
    std::string name; // "<machine>-<ifname>": the file is <name>.pcap
    net::NetDevice* device = nullptr;
    net::wire::Endpoint self, peer;
    const net::TunnelChannel* channel = nullptr;
    int side = 0;
};

// The tap on one device: frames to bytes to its pcap file.
class DeviceTap final : public net::FrameTap {
public:
    DeviceTap(const TapPoint& at, report::AtomicFile& file);
    void frame(Dir dir, engine::Tick now, const net::Packet& p) override;
    PcapFile& pcap() { return pcap_; }

private:
    TapPoint at_;
    PcapFile pcap_;
    std::vector<std::uint8_t> bytes_;
};

// Wireshark's ESP SA table (UAT "esp_sa", one record a line) for the ESP tunnels among `points`:
// per direction, protocol, source and destination address, SPI, "AES-GCM with 16 octet ICV
// [RFC4106]" and the key with its salt in hex, no separate authentication. Empty when no point
// has an ESP channel with an algorithm Wireshark 4.0 can decrypt (it has no RFC 7634
// ChaCha20-Poly1305; such an SA is written as a comment line saying so).
std::string esp_sa_table(const std::vector<TapPoint>& points);

} // namespace kdsim::capture
