#pragma once
// Creating the DPDK transport without seeing DPDK: this header is safe for every target
// (libdpdk's compile flags stay confined to the pg_dpdk library).
#include <memory>
#include <string>
#include <vector>

#include "net/transport.h"

namespace net {

struct dpdk_options {
  std::string eal_args;  // space-separated EAL arguments, e.g. "-l 0 --no-huge --vdev=net_tap0"
  int port = 0;          // DPDK port id
  std::string ip;        // our IPv4 address on the port (required)
  std::string netmask = "255.255.255.0";
  std::string gateway;   // next hop for peers off the subnet; empty: none
  int queues = 0;        // rx/tx queue pairs to ask for; 0: one per shard
};

// False when the build has no DPDK.
bool dpdk_available();
// Initialises the EAL (once per process) and the port, and returns one transport per shard.
// The port gets one rx/tx queue pair per shard where it has that many (fewer when it has
// fewer, or when `queues` asks for fewer). With a queue per shard, connections
// stay on the queue the port steers them to (RSS on NICs; on net_tap the kernel's per-flow
// queue choice; on net_af_packet its fanout hash with qpairs=N). With fewer queues than
// shards, the queue owners steer each TCP segment in software to the shard its 4-tuple
// hashes to (net/dpdk/steer.h) over rings of mbuf pointers, and shards share the tx queues
// under a lock. On failure returns an empty vector and sets `error` (e.g. "DPDK transport
// unavailable (built without DPDK)").
std::vector<std::unique_ptr<transport>> make_dpdk_transports(const dpdk_options& o, int shards, std::string& error);

}  // namespace net
