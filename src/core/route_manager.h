#pragma once
// Route connections' sockets: the cluster listener and the dialer of the configured and
// gossiped route URLs, on one thread of their own. Accepted and dialed sockets are handed to
// shard 0 (which owns every route); shard 0 reports back which URLs lost their route (redial
// with backoff) and which servers are connected (no second dial to them).
//
// Replication connections (src/repl) share the cluster port: a Peregrine peer's replication
// dialer starts with the line "PGREPL ..." where a route starts with CONNECT (or a TLS
// ClientHello). With a replication handoff set, an accepted socket is held until its first
// bytes tell which it is (peeked, nothing consumed); one that says nothing within
// kClassifyMs is a route (a peer waiting for our INFO first).
#include <atomic>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <string_view>
#include <vector>
#include <thread>

#include "src/base/result.h"
#include "src/core/options.h"

namespace core {

class route_manager {
 public:
  // `handoff(fd, url, implicit)`: url is empty for an accepted socket.
  using handoff_fn = std::function<void(int fd, const std::string& url, bool implicit)>;
  route_manager(const server_options& o, handoff_fn handoff);
  ~route_manager();
  route_manager(const route_manager&) = delete;
  route_manager& operator=(const route_manager&) = delete;

  // Accepted sockets that start with "PGREPL" go here instead of to shard 0 (before start()).
  using repl_handoff_fn = std::function<void(int fd)>;
  void set_repl_handoff(repl_handoff_fn f) { _repl_handoff = std::move(f); }
  static constexpr std::int64_t kClassifyMs = 500;

  // What an accepted socket's first bytes say (pure).
  enum class first_bytes { route, replication, undecided };
  static first_bytes classify(std::string_view peeked);

  // Binds the cluster listener; the thread starts with start().
  base::status listen();
  int bound_port() const { return _port; }
  void start();
  void stop();

  // Thread-safe, from shard 0.
  void want(const std::string& url, bool implicit);   // dial it (a gossiped server)
  void lost(const std::string& url);                  // its route closed: redial after backoff
  void drop(const std::string& url);                  // a route to ourselves: never again
  void remote_is(const std::string& url, const std::string& remote_id);
  void peer_took(const std::string& url);             // the peer took our CONNECT: backoff over
  void set_connected(const std::string& remote_id, bool up);

  // Backoff after `failures` consecutive failed dials (0: the first retry).
  static std::int64_t backoff_ms(int failures);
  static constexpr int kImplicitAttempts = 5;  // a gossiped URL is given up after this

 private:
  struct target {
    bool implicit = false;
    bool busy = false;       // dialed and handed to shard 0: its route is open
    int failures = 0;
    std::int64_t due_ms = 0;  // monotonic
    std::string remote_id;    // learned from its INFO
  };
  struct accepted {
    int fd;
    std::int64_t since_ms;
    bool partial = false;  // sent a prefix of "PGREPL": peeked again each turn, not polled
  };
  void run();
  void accept_all();
  void classify_accepted(const std::vector<short>& revents);
  int dial(const std::string& url);
  const server_options _opts;
  handoff_fn _handoff;
  repl_handoff_fn _repl_handoff;
  std::vector<accepted> _accepted;  // waiting for their first bytes (the thread's)
  int _listen_fd = -1;
  int _port = 0;
  std::atomic<bool> _stop{false};
  std::thread _thread;
  std::mutex _mu;
  std::map<std::string, target> _targets;
  std::set<std::string> _connected_ids;
};

}  // namespace core
