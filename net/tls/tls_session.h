#pragma once
// One TLS connection over in-memory buffers: ciphertext from the peer in, plaintext out;
// plaintext in, ciphertext out. No sockets and no clock, so a server and a client session
// can be driven against each other in a unit test; the transport feeds it what it received
// and sends what it produced.
#include <memory>
#include <string>
#include <string_view>
#include <vector>

typedef struct ssl_st SSL;

namespace net {

class tls_context;

// What a session's BIO reads and writes (no OpenSSL memory BIO: records go straight into the
// caller's buffer, and ciphertext is read from the caller's span).
struct tls_session_io {
  std::string_view in;          // ciphertext OpenSSL has not read yet
  std::string carry;            // an incomplete record kept between feeds
  std::string* out = nullptr;   // where OpenSSL's records go during a call
};

class tls_session {
 public:
  enum class state { handshaking, established, failed, closed };

  tls_session(std::shared_ptr<tls_context> ctx, const std::string& server_name = "");
  ~tls_session();
  tls_session(const tls_session&) = delete;
  tls_session& operator=(const tls_session&) = delete;

  // A client session's first flight (ClientHello), appended to `cipher_out`.
  void start(std::string& cipher_out);
  // Ciphertext from the peer. Decrypted application bytes are appended to `plain_out`;
  // bytes the peer must get (handshake, alerts, tickets) to `cipher_out`.
  state feed(std::string_view cipher_in, std::string& plain_out, std::string& cipher_out);
  // Encrypts `plain` into `cipher_out` (in records of up to 16 KiB). Only once established.
  bool write(std::string_view plain, std::string& cipher_out);
  // A close_notify alert to `cipher_out`.
  void close(std::string& cipher_out);

  state current() const { return _state; }
  bool established() const { return _state == state::established; }
  // Why the handshake or the session failed (OpenSSL's reason, or the verify result).
  const std::string& error() const { return _error; }
  // The verified peer certificate's subject as an RFC 2253 string ("CN=alice,O=Peregrine"),
  // empty without one.
  std::string peer_subject() const;
  // E-mail SANs, DNS SANs, then the subject (verify_and_map's order); empty without a certificate.
  std::vector<std::string> peer_names() const;
  std::string protocol() const;  // "TLSv1.3"
  std::string cipher() const;

 private:
  void fail(int ssl_result);
  void keep_unread();
  std::shared_ptr<tls_context> _ctx;
  SSL* _ssl = nullptr;
  tls_session_io _io;
  state _state = state::handshaking;
  std::string _error;
};

}  // namespace net
