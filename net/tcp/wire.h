#pragma once
// Ethernet / ARP / IPv4 / ICMP echo / TCP header parsing and building over byte spans.
// Pure code: no DPDK types, no allocation; the DPDK transport and the unit tests share it.
// Multi-byte fields in the structs are host order; IPv4 addresses are host-order u32.
#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>

namespace net::tcp {

using bytes = std::span<const std::uint8_t>;
using mac_addr = std::array<std::uint8_t, 6>;
constexpr mac_addr kBroadcastMac{0xff, 0xff, 0xff, 0xff, 0xff, 0xff};

constexpr std::uint16_t kEtherIpv4 = 0x0800;
constexpr std::uint16_t kEtherArp = 0x0806;
constexpr std::uint8_t kProtoIcmp = 1;
constexpr std::uint8_t kProtoTcp = 6;
constexpr std::size_t kEtherHdr = 14;
constexpr std::size_t kIpv4Hdr = 20;  // we never send IP options
constexpr std::size_t kTcpHdr = 20;
constexpr std::size_t kArpLen = 28;

// TCP flag bits as on the wire.
enum : std::uint8_t { kFin = 0x01, kSyn = 0x02, kRst = 0x04, kPsh = 0x08, kAck = 0x10 };

// RFC 1071 one's-complement sum; `seed` lets callers chain a pseudo-header.
std::uint32_t sum16(bytes b, std::uint32_t seed = 0);
std::uint16_t fold_checksum(std::uint32_t sum);
std::uint32_t pseudo_header_sum(std::uint32_t src, std::uint32_t dst, std::uint8_t proto, std::uint16_t len);

struct ether_frame {
  mac_addr dst{}, src{};
  std::uint16_t type = 0;
  bytes payload;
};
std::optional<ether_frame> parse_ether(bytes frame);
void write_ether(std::uint8_t* out, const mac_addr& dst, const mac_addr& src, std::uint16_t type);

struct arp_packet {
  std::uint16_t op = 0;  // 1 request, 2 reply
  mac_addr sha{}, tha{};
  std::uint32_t spa = 0, tpa = 0;
};
std::optional<arp_packet> parse_arp(bytes b);
void write_arp(std::uint8_t* out, const arp_packet& a);  // kArpLen bytes

struct ipv4_packet {
  std::uint32_t src = 0, dst = 0;
  std::uint8_t proto = 0, ttl = 0;
  bytes payload;  // trimmed to total_length (Ethernet padding removed)
};
enum class ipv4_verdict { ok, malformed, bad_checksum, fragment };
// `verify_checksum` is false when the NIC already checked it.
ipv4_verdict parse_ipv4(bytes b, ipv4_packet& out, bool verify_checksum = true);
// Writes a 20-byte header (DF set, no options) with its checksum.
void write_ipv4(std::uint8_t* out, std::uint32_t src, std::uint32_t dst, std::uint8_t proto,
                std::uint16_t payload_len, std::uint16_t id);

// ICMP echo request -> reply, in place on the ICMP bytes; false when it is no echo request.
bool icmp_echo_to_reply(std::uint8_t* icmp, std::size_t len);

struct tcp_header {
  std::uint16_t src_port = 0, dst_port = 0;
  std::uint32_t seq = 0, ack = 0;
  std::uint8_t flags = 0;
  std::uint16_t window = 0;  // raw 16-bit field, unscaled
  std::optional<std::uint16_t> mss;
  std::optional<std::uint8_t> wscale;
};
struct tcp_segment {
  tcp_header h;
  bytes payload;
};
enum class tcp_verdict { ok, malformed, bad_checksum };
tcp_verdict parse_tcp(bytes b, std::uint32_t src_ip, std::uint32_t dst_ip, tcp_segment& out,
                      bool verify_checksum = true);
// Header length `h` needs on the wire (20 + options, padded to 4).
std::size_t tcp_header_len(const tcp_header& h);
// Writes the header at `out` followed (already) by `payload_len` payload bytes at
// out + tcp_header_len(h), then fills the checksum over both.
void write_tcp(std::uint8_t* out, const tcp_header& h, std::uint32_t src_ip, std::uint32_t dst_ip,
               std::size_t payload_len);
// The same header for a NIC that finishes the checksum: the field holds the folded,
// uncomplemented pseudo-header sum (what DPDK's rte_ipv4_phdr_cksum gives).
void write_tcp_for_offload(std::uint8_t* out, const tcp_header& h, std::uint32_t src_ip, std::uint32_t dst_ip,
                           std::size_t payload_len);

}  // namespace net::tcp
