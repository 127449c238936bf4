#pragma once
// What a layer above net/ sees of one TLS connection over its own buffers (the concrete
// net::tls_session is wired in by src/main.cc): ciphertext in, plaintext out, and the
// reverse. Used by src/repl's replication links, which do their own socket I/O.
#include <functional>
#include <memory>
#include <string>
#include <string_view>

namespace net {

class tls_stream {
 public:
  enum class state { handshaking, established, failed, closed };
  virtual ~tls_stream() = default;
  // A client's first flight (ClientHello), appended to `cipher_out`.
  virtual void start(std::string& cipher_out) = 0;
  // Ciphertext from the peer: application bytes to `plain_out`, what the peer must get to
  // `cipher_out`.
  virtual state feed(std::string_view cipher_in, std::string& plain_out, std::string& cipher_out) = 0;
  // Encrypts `plain` into `cipher_out`; only once established.
  virtual bool write(std::string_view plain, std::string& cipher_out) = 0;
  virtual bool established() const = 0;
  virtual const std::string& error() const = 0;
};

// A new stream: a client (verifying `server_name`, a host or an IP) or a server side.
using tls_stream_factory = std::function<std::unique_ptr<tls_stream>(bool client, const std::string& server_name)>;

}  // namespace net
