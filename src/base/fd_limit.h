#pragma once
// Raising RLIMIT_NOFILE's soft limit to the hard limit at start, as nats-server does (the Go
// runtime raises it for every Go program since Go 1.19): thousands of streams and clients
// need descriptors, and the default soft limit (often 1024) is far below the hard one.
#include <cstdint>

namespace base {

struct fd_limit {
  std::uint64_t before = 0;  // soft limit found
  std::uint64_t now = 0;     // soft limit in force
  std::uint64_t hard = 0;
  int error = 0;             // errno of a failed setrlimit, else 0
};

fd_limit raise_fd_limit();

}  // namespace base
