#pragma once
// A non-blocking TCP listener on host:port (empty host: every interface; port 0: the kernel
// picks one), and the port it got. Shared by the route listener (src/core/route_manager) and
// any other listener that needs the same bind/listen/getsockname steps.
#include "src/base/result.h"

#include <string>

namespace base {

struct tcp_listener {
  int fd = -1;
  int port = 0;  // the bound port (the kernel's choice for port 0)
};

// SO_REUSEADDR when `reuse_addr`; the socket is CLOEXEC and NONBLOCK. An unresolvable host is
// invalid_argument; a bind or listen failure is io_error with its errno.
result<tcp_listener> listen_tcp(const std::string& host, int port, int backlog, bool reuse_addr);

}  // namespace base
