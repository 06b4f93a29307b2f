// The pcap writer: what libpcap reads back from a file written through an AtomicFile, and the
// magic number of a nanosecond-resolution classic pcap file (0xa1b23c4d, pcap-savefile(5)).
#include "capture/capture.h"

#include <gtest/gtest.h>
#include <pcap/pcap.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <unistd.h>

namespace kdsim::capture {
namespace {

namespace fs = std::filesystem;

struct TempDir {
    fs::path path = fs::temp_directory_path() / ("kdsim-capture-test-" + std::to_string(::getpid()));
    TempDir() { fs::create_directories(path); }
    ~TempDir() { fs::remove_all(path); }
};

TEST(PcapFile, FramesReadBackWithNanosecondSimulatedTimestampsAndTheirBytes) {
    TempDir d;
    const fs::path file = d.path / "a.pcap";
    {
        report::AtomicFile f(file);
        PcapFile pcap(f);
        const std::vector<std::uint8_t> one(60, 0xab), two(1514, 0x11);
        pcap.write(1'500'000'123'456ull, one); // 1.500000123456 s in ps -> 1 s + 500000123 ns
        pcap.write(2 * engine::PS_PER_S, two);
        pcap.finish();
        EXPECT_EQ(pcap.frames(), 2u);
        f.close();
        f.commit();
    }
    std::ifstream raw(file, std::ios::binary);
    unsigned char magic[4];
    raw.read(reinterpret_cast<char*>(magic), 4);
    EXPECT_EQ(magic[0] | magic[1] << 8 | magic[2] << 16 | static_cast<unsigned>(magic[3]) << 24, 0xa1b23c4du);

    char err[PCAP_ERRBUF_SIZE];
    pcap_t* p = pcap_open_offline_with_tstamp_precision(file.c_str(), PCAP_TSTAMP_PRECISION_NANO, err);
    ASSERT_NE(p, nullptr) << err;
    EXPECT_EQ(pcap_datalink(p), DLT_EN10MB);
    pcap_pkthdr* h;
    const u_char* data;
    ASSERT_EQ(pcap_next_ex(p, &h, &data), 1);
    EXPECT_EQ(h->ts.tv_sec, 1);
    EXPECT_EQ(h->ts.tv_usec, 500'000'123);
    EXPECT_EQ(h->caplen, 60u);
    EXPECT_EQ(data[59], 0xab);
    ASSERT_EQ(pcap_next_ex(p, &h, &data), 1);
    EXPECT_EQ(h->ts.tv_sec, 2);
    EXPECT_EQ(h->len, 1514u);
    EXPECT_EQ(pcap_next_ex(p, &h, &data), PCAP_ERROR_BREAK);
    pcap_close(p);
}

TEST(PcapFile, AFileNeverCommittedLeavesNothingBehind) {
    TempDir d;
    {
        report::AtomicFile f(d.path / "b.pcap");
        PcapFile pcap(f);
        pcap.write(0, std::vector<std::uint8_t>(42, 1));
        pcap.finish();
    }
    EXPECT_TRUE(fs::is_empty(d.path));
}

TEST(EspSaTable, OneRecordPerDirectionWithTheKeyAndSaltInHex) {
    net::TunnelChannel ch(net::TunnelKind::ESP, crypto::AeadAlg::AES_128_GCM, false);
    TapPoint a{"a-eth0", nullptr, net::wire::machine_endpoint(0), net::wire::machine_endpoint(1), &ch, 0};
    TapPoint b{"b-eth0", nullptr, net::wire::machine_endpoint(1), net::wire::machine_endpoint(0), &ch, 1};
    const std::string t = esp_sa_table({a, b, a});
    EXPECT_EQ(t,
              "\"IPv4\",\"192.0.2.1\",\"192.0.2.2\",\"0x00001001\",\"AES-GCM with 16 octet ICV [RFC4106]\","
              "\"0x404142434445464748494a4b4c4d4e4fa0a1a2a3\",\"NULL\",\"\"\n"
              "\"IPv4\",\"192.0.2.2\",\"192.0.2.1\",\"0x00001002\",\"AES-GCM with 16 octet ICV [RFC4106]\","
              "\"0x606162636465666768696a6b6c6d6e6fa4a5a6a7\",\"NULL\",\"\"\n");
}

} // namespace
} // namespace kdsim::capture
