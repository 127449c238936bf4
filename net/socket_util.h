#pragma once
// Kernel socket helpers shared by the io_uring and epoll transports.
#include <string>

#include "src/base/result.h"

namespace net {

// A listening TCP socket with SO_REUSEADDR (restart at once on the same port).
base::result<int> open_listener(const std::string& host, int port, bool nonblocking);
// TCP_NODELAY and friends on an accepted socket.
void tune_accepted(int fd);
// Local port of a bound socket (0 if unknown).
int local_port(int fd);
// Peer address of a connected socket.
void peer_of(int fd, std::string& ip, int& port);

}  // namespace net
