#pragma once
// What the server asks of whoever picks its transports. Choosing one (io_uring, epoll, DPDK)
// is wiring, done in src/main.cc, so core sees only net/transport.h.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "net/transport.h"
#include "src/base/result.h"

namespace core {

class transport_factory {
 public:
  virtual ~transport_factory() = default;
  // One transport per client shard, at most `shards` of them: a DPDK port may have fewer
  // queues, and the server then runs that many shards. An error (reason logged) if none.
  virtual base::result<std::vector<std::unique_ptr<net::transport>>> client_transports(std::uint32_t shards) = 0;
  // The JetStream thread's transport (--js_thread): it never listens.
  virtual std::unique_ptr<net::transport> idle_transport() = 0;
  // Which transport the client shards got ("io_uring", "epoll", "dpdk"), for the log.
  virtual std::string name() const = 0;
};

}  // namespace core
