// The DPDK factory of a build without libdpdk.
#include "net/dpdk/dpdk_factory.h"

namespace net {

bool dpdk_available() { return false; }

std::vector<std::unique_ptr<transport>> make_dpdk_transports(const dpdk_options&, int, std::string& error) {
  error = "DPDK transport unavailable (built without DPDK)";
  return {};
}

}  // namespace net
