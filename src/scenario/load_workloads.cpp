// [[machine.workload]] tables: the kind, name and cpu every workload has, then the keys of its
// kind (workloads/config.h), with the hash algorithm and implementation checks.
#include "scenario/loader.h"

#include <fmt/format.h>

#include <array>

namespace kdsim::scenario::detail {

namespace {

const std::vector<std::string_view> KINDS = {"module_load", "hash_list",    "simd_user",    "cyclictest",
                                            "softirq_load", "tcrypt",      "arp_pingpong", "iperf3",
                                            "rx_flood",    "udp_flows",   "pktgen"};
const std::vector<std::string_view> ALGS = {"sha1", "sha256", "sha512"};

std::vector<std::string_view> workload_keys(std::string_view kind) {
    std::vector<std::string_view> k = {"kind", "name", "cpu"};
    auto add = [&](std::initializer_list<std::string_view> more) { k.insert(k.end(), more); };
    const std::initializer_list<std::string_view> sizes = {"sizes",        "sizes_file", "size_column",
                                                           "match_column", "match",      "sample"};
    if (kind == "module_load") {
        add({"alg", "impl"});
        add(sizes);
        add({"signature_trailer", "blacklist_hash", "user_time", "repeat"});
    } else if (kind == "hash_list") {
        add({"alg", "impl"});
        add(sizes);
        add({"repeat", "cond_resched_between"});
    } else if (kind == "simd_user") {
        add({"chunk"});
    } else if (kind == "cyclictest") {
        add({"priority", "period", "loops"});
    } else if (kind == "softirq_load") {
        add({"period", "jitter", "alg", "impl", "bytes", "count", "hmac", "cryptd"});
    } else if (kind == "tcrypt") {
        add({"alg", "impl", "block_size", "duration"});
    } else if (kind == "arp_pingpong") {
        add({"peer", "count", "interval"});
    } else if (kind == "rx_flood") {
        add({"alg", "payload", "buffer", "flush", "cryptd", "cryptd_qlen", "weight", "budget", "priority"});
    } else if (kind == "iperf3") {
        add({"peer", "sender_cpu", "window", "rcvbuf", "start", "parallel", "protocol", "bitrate", "length"});
    } else if (kind == "udp_flows") {
        add({"peer", "sender_cpu", "flows", "interval", "count", "length", "rcvbuf", "start"});
    } else if (kind == "pktgen") {
        add({"peer", "threads", "frame", "start"});
    }
    return k;
}

} // namespace

std::optional<crypto::HashAlg> ScenarioLoader::read_alg(const toml::table& w, const std::string& wkey, bool required) {
    auto i = r_.choice(w, "alg", wkey + ".alg", required, ALGS);
    if (!i) return std::nullopt;
    return crypto::hash_alg_from_string(ALGS[*i]);
}

std::optional<crypto::HashImpl> ScenarioLoader::read_impl(const toml::table& w, const std::string& wkey,
                                                          crypto::HashAlg alg, const system::Profile* profile) {
    const toml::node* n = w.get("impl");
    if (!n) return std::nullopt;
    std::string key = wkey + ".impl";
    const auto* s = n->as_string();
    auto impl = s ? crypto::hash_impl_from_string(s->get()) : std::nullopt;
    if (!impl) {
        std::vector<std::string> names;
        for (std::size_t i = 0; i < crypto::HASH_IMPLS; ++i)
            names.emplace_back(crypto::to_string(static_cast<crypto::HashImpl>(i)));
        r_.error(*n, key,
                 fmt::format("unknown hash implementation {}; expected one of: {}", s ? quote(s->get()) : describe(n),
                             join_list(names)));
        return std::nullopt;
    }
    if (profile && !profile->hash.has(alg, *impl)) {
        r_.error(*n, key,
                 fmt::format("profile {} has no {} implementation {}; it has: {}", profile->name,
                             crypto::to_string(alg), quote(s->get()), join_list(detail::impls_of(*profile, alg))));
        return std::nullopt;
    }
    return impl;
}

std::optional<system::Workload> ScenarioLoader::read_workload(const toml::table& w, const std::string& wkey,
                                                              const system::MachineConfig& mc, std::optional<int> cpus,
                                                              const system::Profile* profile, bool machine_named,
                                                              std::uint64_t seed,
                                                              std::map<std::string, std::string>& names) {
    auto kind = r_.choice(w, "kind", wkey + ".kind", true, KINDS);
    if (!kind) return std::nullopt;
    std::string_view kname = KINDS[*kind];
    r_.check_keys(w, wkey, fmt::format("a {} workload", kname), workload_keys(kname));
    std::size_t before = r_.errors();

    system::Workload wl;
    switch (*kind) {
    case 0: wl = system::ModuleLoadWorkload{}; break;
    case 1: wl = system::HashListWorkload{}; break;
    case 2: wl = system::SimdUserWorkload{}; break;
    case 3: wl = system::CyclictestWorkload{}; break;
    case 4: wl = system::SoftirqLoadWorkload{}; break;
    case 5: wl = system::TcryptWorkload{}; break;
    case 6: wl = system::ArpPingPongWorkload{}; break;
    case 7: wl = system::Iperf3Workload{}; break;
    case 8: wl = system::RxFloodWorkload{}; break;
    case 9: wl = system::UdpFlowsWorkload{}; break;
    default: wl = system::PktgenWorkload{}; break;
    }
    std::string name = std::visit([](auto& x) { return x.name; }, wl);
    if (auto n = r_.string(w, "name", wkey + ".name", false)) name = *n;
    int cpu = 0;
    if (auto c = r_.integer(w, "cpu", wkey + ".cpu", false, 0, MAX_CPUS - 1)) {
        if (cpus && *c >= *cpus)
            r_.error(*w.get("cpu"), wkey + ".cpu",
                     fmt::format("expected a CPU of machine '{}' (0 to {}, it has cpus = {}), found {}", mc.name,
                                 *cpus - 1, *cpus, *c));
        else
            cpu = static_cast<int>(*c);
    }
    if (auto [it, fresh] = names.emplace(name, wkey); !fresh) {
        const toml::node* at = w.get("name");
        std::string msg = fmt::format("duplicate workload name '{}' on machine '{}' (also {}); give each workload a "
                                      "distinct name",
                                      name, mc.name, it->second);
        if (at)
            r_.error(*at, wkey + ".name", std::move(msg));
        else
            r_.error(w, wkey + ".name", std::move(msg));
    }
    std::optional<std::string> stream;
    if (machine_named) stream = fmt::format("sizes:{}/{}", mc.name, name);

    auto alg_impl = [&](auto& x, bool required) {
        if (auto a = read_alg(w, wkey, required)) {
            x.alg = *a;
            x.impl = read_impl(w, wkey, *a, profile);
        }
    };
    std::visit(
        [&](auto& x) {
            using T = std::decay_t<decltype(x)>;
            x.name = name;
            x.cpu = cpu;
            if constexpr (std::is_same_v<T, system::ModuleLoadWorkload>) {
                alg_impl(x, true);
                if (auto t = r_.bytes(w, "signature_trailer", wkey + ".signature_trailer", false, false))
                    x.signature_trailer = *t;
                if (auto b = r_.boolean(w, "blacklist_hash", wkey + ".blacklist_hash", false)) x.blacklist_hash = *b;
                if (auto t = r_.duration(w, "user_time", wkey + ".user_time", false, false)) x.user_time = *t;
                if (auto v = r_.integer(w, "repeat", wkey + ".repeat", false, 1, UINT32_MAX))
                    x.repeat = static_cast<std::uint32_t>(*v);
                if (auto s = read_sizes(w, wkey, stream, seed, x.signature_trailer, "signature_trailer"))
                    x.sizes = std::move(*s);
            } else if constexpr (std::is_same_v<T, system::HashListWorkload>) {
                alg_impl(x, true);
                if (auto v = r_.integer(w, "repeat", wkey + ".repeat", false, 1, UINT32_MAX))
                    x.repeat = static_cast<std::uint32_t>(*v);
                if (auto b = r_.boolean(w, "cond_resched_between", wkey + ".cond_resched_between", false))
                    x.cond_resched_between = *b;
                if (auto s = read_sizes(w, wkey, stream, seed, 0, "")) x.sizes = std::move(*s);
            } else if constexpr (std::is_same_v<T, system::SimdUserWorkload>) {
                if (auto t = r_.duration(w, "chunk", wkey + ".chunk", false, true)) x.chunk = *t;
            } else if constexpr (std::is_same_v<T, system::CyclictestWorkload>) {
                if (auto v = r_.integer(w, "priority", wkey + ".priority", false, 1, 99))
                    x.priority = static_cast<int>(*v);
                if (auto t = r_.duration(w, "period", wkey + ".period", false, true)) x.period = *t;
                if (auto v = r_.integer(w, "loops", wkey + ".loops", false, 0, INT64_MAX))
                    x.loops = static_cast<std::uint64_t>(*v);
            } else if constexpr (std::is_same_v<T, system::ArpPingPongWorkload>) {
                if (auto v = r_.string(w, "peer", wkey + ".peer", true)) x.peer = *v;
                if (auto v = r_.integer(w, "count", wkey + ".count", false, 1, INT64_MAX))
                    x.count = static_cast<std::uint64_t>(*v);
                if (auto t = r_.duration(w, "interval", wkey + ".interval", false, false)) x.interval = *t;
            } else if constexpr (std::is_same_v<T, system::Iperf3Workload>) {
                if (auto v = r_.string(w, "peer", wkey + ".peer", true)) x.peer = *v;
                if (auto v = r_.integer(w, "sender_cpu", wkey + ".sender_cpu", false, 0, MAX_CPUS - 1))
                    x.sender_cpu = static_cast<int>(*v);
                if (auto b = r_.bytes(w, "window", wkey + ".window", false, true)) x.window = *b;
                if (auto b = r_.bytes(w, "rcvbuf", wkey + ".rcvbuf", false, true)) x.rcvbuf = *b;
                if (auto t = r_.duration(w, "start", wkey + ".start", false, false)) x.start = *t;
                if (auto v = r_.integer(w, "parallel", wkey + ".parallel", false, 1, 128)) x.parallel = static_cast<int>(*v);
                if (auto pr = r_.choice(w, "protocol", wkey + ".protocol", false, {"tcp", "udp"})) x.udp = *pr == 1;
                if (const toml::node* br = w.get("bitrate")) {
                    if (auto bps = r_.rate(*br, wkey + ".bitrate")) x.bitrate = *bps;
                    if (!x.udp) r_.error(*br, wkey + ".bitrate", "bitrate paces a protocol = \"udp\" stream only");
                }
                if (auto b = r_.bytes(w, "length", wkey + ".length", false, true)) {
                    if (!x.udp) r_.error(*w.get("length"), wkey + ".length", "length is the datagram size of a protocol = \"udp\" stream");
                    else if (*b > 65507) r_.error(*w.get("length"), wkey + ".length", fmt::format("expected at most 65507 bytes, found {}", *b));
                    else x.length = static_cast<std::uint32_t>(*b);
                }
            } else if constexpr (std::is_same_v<T, system::PktgenWorkload>) {
                if (auto v = r_.string(w, "peer", wkey + ".peer", true)) x.peer = *v;
                if (auto v = r_.integer(w, "threads", wkey + ".threads", false, 1, MAX_CPUS)) x.threads = static_cast<int>(*v);
                if (auto b = r_.bytes(w, "frame", wkey + ".frame", false, true)) {
                    if (*b < 60 || *b > 1514)
                        r_.error(*w.get("frame"), wkey + ".frame",
                                 fmt::format("expected an Ethernet frame of 60 to 1514 bytes (without FCS), found {}", *b));
                    else x.frame = static_cast<std::uint32_t>(*b);
                }
                if (auto t = r_.duration(w, "start", wkey + ".start", false, false)) x.start = *t;
            } else if constexpr (std::is_same_v<T, system::UdpFlowsWorkload>) {
                if (auto v = r_.string(w, "peer", wkey + ".peer", true)) x.peer = *v;
                if (auto v = r_.integer(w, "sender_cpu", wkey + ".sender_cpu", false, 0, MAX_CPUS - 1))
                    x.sender_cpu = static_cast<int>(*v);
                if (auto v = r_.integer(w, "flows", wkey + ".flows", true, 1, system::UdpFlowsWorkload::MAX_FLOWS))
                    x.flows = static_cast<std::uint32_t>(*v);
                if (auto t = r_.duration(w, "interval", wkey + ".interval", true, true)) x.interval = *t;
                if (auto v = r_.integer(w, "count", wkey + ".count", false, 0, UINT32_MAX))
                    x.count = static_cast<std::uint64_t>(*v);
                if (auto b = r_.bytes(w, "length", wkey + ".length", false, true)) {
                    if (*b > 65507) r_.error(*w.get("length"), wkey + ".length", fmt::format("expected at most 65507 bytes, found {}", *b));
                    else x.length = static_cast<std::uint32_t>(*b);
                }
                if (auto b = r_.bytes(w, "rcvbuf", wkey + ".rcvbuf", false, true)) {
                    if (*b < x.length)
                        r_.error(*w.get("rcvbuf"), wkey + ".rcvbuf",
                                 fmt::format("expected at least one datagram ({} bytes), found {}", x.length, *b));
                    else x.rcvbuf = *b;
                }
                if (auto t = r_.duration(w, "start", wkey + ".start", false, false)) x.start = *t;
            } else if constexpr (std::is_same_v<T, system::RxFloodWorkload>) {
                if (auto a = r_.choice(w, "alg", wkey + ".alg", false, {"aes-128-gcm", "chacha20-poly1305", "aes-256-gcm"}))
                    x.alg = std::array{crypto::AeadAlg::AES_128_GCM, crypto::AeadAlg::CHACHA20_POLY1305,
                                       crypto::AeadAlg::AES_256_GCM}[*a];
                if (auto b = r_.bytes(w, "payload", wkey + ".payload", false, true)) {
                    if (*b > 65535)
                        r_.error(*w.get("payload"), wkey + ".payload", fmt::format("expected at most 65535 bytes, found {}", *b));
                    else
                        x.payload = *b;
                }
                if (auto b = r_.bytes(w, "buffer", wkey + ".buffer", false, true)) {
                    if (*b % 64 != 0)
                        r_.error(*w.get("buffer"), wkey + ".buffer",
                                 fmt::format("expected a multiple of 64 bytes (whole cache lines), found {}", *b));
                    else
                        x.buffer = *b;
                }
                // the frame is written with 16-byte stores: it must fit the buffer rounded up to 16
                if ((workloads::rx_frame_len(x.payload) + 15) / 16 * 16 > x.buffer) {
                    const toml::node* at = w.get("buffer") ? w.get("buffer") : w.get("payload");
                    std::string msg = fmt::format("a frame of {} bytes (payload {} + 66 bytes of headers and ICV, "
                                                  "rounded up to 16) does not fit a {}-byte buffer",
                                                  (workloads::rx_frame_len(x.payload) + 15) / 16 * 16, x.payload, x.buffer);
                    if (at)
                        r_.error(*at, wkey + (w.get("buffer") ? ".buffer" : ".payload"), std::move(msg));
                    else
                        r_.error(w, wkey + ".payload", std::move(msg));
                }
                if (auto f = r_.choice(w, "flush", wkey + ".flush", false, {"none", "full", "rxlen"})) {
                    x.flush = std::array{workloads::RxFlush::NONE, workloads::RxFlush::FULL_BUFFER,
                                         workloads::RxFlush::RECEIVED_LENGTH}[*f];
                    if (x.flush != workloads::RxFlush::NONE && profile && !profile->flush &&
                        (!profile->dma || profile->dma->coherent))
                        r_.error(*w.get("flush"), wkey + ".flush",
                                 fmt::format("flush = \"{}\" is charged with a [flush] table (kdsim calibrate's stand-in) or "
                                             "the [dma] inner_inv_line of a non-coherent platform; profile {} has no [flush] and {}",
                                             *f == 1 ? "full" : "rxlen", profile->name,
                                             profile->dma ? "has a coherent [dma] (coherent = true)" : "has no [dma]"));
                }
                if (auto b = r_.boolean(w, "cryptd", wkey + ".cryptd", false)) x.cryptd = *b;
                if (auto v = r_.integer(w, "cryptd_qlen", wkey + ".cryptd_qlen", false, 1, 1'000'000)) {
                    x.cryptd_qlen = static_cast<std::uint64_t>(*v);
                    if (!x.cryptd)
                        r_.error(*w.get("cryptd_qlen"), wkey + ".cryptd_qlen", "cryptd_qlen bounds the queue of cryptd = true only");
                }
                if (auto v = r_.integer(w, "weight", wkey + ".weight", false, 1, 4096)) x.weight = static_cast<int>(*v);
                if (auto v = r_.integer(w, "budget", wkey + ".budget", false, 1, 1'000'000)) x.budget = static_cast<int>(*v);
                if (auto v = r_.integer(w, "priority", wkey + ".priority", false, 0, 99)) x.priority = static_cast<int>(*v);
            } else if constexpr (std::is_same_v<T, system::TcryptWorkload>) {
                alg_impl(x, true);
                if (auto b = r_.bytes(w, "block_size", wkey + ".block_size", false, true)) x.block_size = *b;
                if (auto t = r_.duration(w, "duration", wkey + ".duration", false, true)) x.duration = *t;
            } else {
                if (auto t = r_.duration(w, "period", wkey + ".period", false, true)) x.period = *t;
                if (auto t = r_.duration(w, "jitter", wkey + ".jitter", false, false)) x.jitter = *t;
                if (auto b = r_.boolean(w, "hmac", wkey + ".hmac", false)) x.hmac = *b;
                if (auto b = r_.boolean(w, "cryptd", wkey + ".cryptd", false)) x.cryptd = *b;
                if (w.contains("alg")) {
                    alg_impl(x, false);
                } else {
                    x.impl = read_impl(w, wkey, x.alg, profile);
                }
                if (auto b = r_.bytes(w, "bytes", wkey + ".bytes", false, true)) x.bytes = *b;
                if (auto v = r_.integer(w, "count", wkey + ".count", false, 0, INT64_MAX))
                    x.count = static_cast<std::uint64_t>(*v);
            }
        },
        wl);
    if (r_.errors() != before) return std::nullopt;
    return wl;
}

} // namespace kdsim::scenario::detail
