#pragma once
// Creating the DPDK transport without seeing DPDK: this header is safe for every target
// (libdpdk's compile flags stay confined to the pg_dpdk library).
#include <memory>
#include <string>

#include "net/transport.h"

namespace net {

struct dpdk_options {
  std::string eal_args;  // space-separated EAL arguments, e.g. "-l 0 --no-huge --vdev=net_tap0"
  int port = 0;          // DPDK port id
  std::string ip;        // our IPv4 address on the port (required)
  std::string netmask = "255.255.255.0";
  std::string gateway;   // next hop for peers off the subnet; empty: none
};

// False when the build has no DPDK.
bool dpdk_available();
// Initialises the EAL (once per process) and the port. On failure returns null and sets
// `error` (e.g. "DPDK transport unavailable (built without DPDK)").
std::unique_ptr<transport> make_dpdk_transport(const dpdk_options& o, std::string& error);

}  // namespace net
