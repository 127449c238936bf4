#include "net/dpdk/steer.h"

namespace net::dpdk {
namespace {
std::uint16_t be16(const std::uint8_t* p) { return std::uint16_t(p[0] << 8 | p[1]); }
std::uint32_t be32(const std::uint8_t* p) {
  return std::uint32_t(p[0]) << 24 | std::uint32_t(p[1]) << 16 | std::uint32_t(p[2]) << 8 | p[3];
}
// splitmix64's finaliser: every input bit moves every output bit, so ephemeral ports that
// differ in one bit still spread over the shards.
std::uint64_t mix(std::uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}
}  // namespace

std::uint32_t connection_shard(std::uint32_t peer_ip, std::uint16_t peer_port, std::uint32_t local_ip,
                               std::uint16_t local_port, std::uint32_t shards) {
  if (shards <= 1) return 0;
  const std::uint64_t h = mix((std::uint64_t(peer_ip) << 32 | std::uint64_t(peer_port) << 16 | local_port) ^
                              mix(local_ip));
  return std::uint32_t(h % shards);
}

steer_decision steer_frame(tcp::bytes frame, std::uint32_t shards) {
  constexpr std::size_t kIp = tcp::kEtherHdr;
  if (frame.size() < kIp) return {};
  const std::uint8_t* f = frame.data();
  const std::uint16_t type = be16(f + 12);
  if (type == tcp::kEtherArp) {
    // op sits 6 bytes into the ARP payload; 2 = reply.
    if (frame.size() >= kIp + tcp::kArpLen && be16(f + kIp + 6) == 2) return {steer_kind::every_shard, 0};
    return {};
  }
  if (type != tcp::kEtherIpv4 || frame.size() < kIp + tcp::kIpv4Hdr) return {};
  const std::uint8_t* ip = f + kIp;
  const std::size_t ihl = std::size_t(ip[0] & 0x0f) * 4;
  if ((ip[0] >> 4) != 4 || ihl < tcp::kIpv4Hdr || ip[9] != tcp::kProtoTcp) return {};
  // Fragments (MF set or an offset) carry no usable ports; the receiver drops them.
  if ((be16(ip + 6) & 0x3fff) != 0) return {};
  if (frame.size() < kIp + ihl + 4) return {};
  const std::uint8_t* tcp = ip + ihl;
  return {steer_kind::connection, connection_shard(be32(ip + 12), be16(tcp), be32(ip + 16), be16(tcp + 2), shards)};
}

}  // namespace net::dpdk
