// The DPDK factory of a build without libdpdk.
#include "net/dpdk/dpdk_factory.h"

namespace net {

bool dpdk_available() { return false; }

std::unique_ptr<transport> make_dpdk_transport(const dpdk_options&, std::string& error) {
  error = "DPDK transport unavailable (built without DPDK)";
  return nullptr;
}

}  // namespace net
