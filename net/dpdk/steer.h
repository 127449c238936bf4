#pragma once
// Software steering for ports with fewer rx queues than shards: which shard handles a
// received frame. Pure code over frame bytes (no DPDK), so it is unit-tested on its own.
// Every segment of one TCP connection maps to the same shard (a stable hash of the
// 4-tuple); everything else stays with the shard that received it, except ARP replies,
// which every shard learns from (each shard's stack keeps its own ARP cache).
#include <cstdint>

#include "net/tcp/wire.h"

namespace net::dpdk {

enum class steer_kind : std::uint8_t {
  receiver,     // handle on the shard that owns the rx queue (ARP requests, ICMP, junk)
  connection,   // a TCP segment: handle on `shard`
  every_shard,  // an ARP reply: every shard learns the sender's address
};

struct steer_decision {
  steer_kind kind = steer_kind::receiver;
  std::uint32_t shard = 0;  // meaningful for `connection`
};

// The shard owning the TCP connection (peer ip:port -> local ip:port), in [0, shards).
std::uint32_t connection_shard(std::uint32_t peer_ip, std::uint16_t peer_port, std::uint32_t local_ip,
                               std::uint16_t local_port, std::uint32_t shards);

// Decides for one received Ethernet frame (only its headers are read).
steer_decision steer_frame(tcp::bytes frame, std::uint32_t shards);

}  // namespace net::dpdk
