#pragma once
// An OpenSSL SSL_CTX built from tls_options (server side) or from a CA and an optional
// client certificate (client side: tests and the bench tool). One context is shared by every
// shard: SSL_CTX is safe to use from several threads once configured.
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "net/tls_options.h"

typedef struct ssl_ctx_st SSL_CTX;
typedef struct ssl_st SSL;

namespace net {

class tls_context {
 public:
  // Null with nats-server's error text in `error` ("missing 'key_file' in TLS configuration",
  // "error parsing X509 certificate/key pair: ...", "unrecognized cipher X", ...).
  static std::shared_ptr<tls_context> create_server(const tls_options& o, std::string& error);
  // ca_file empty: the peer is not verified. cert/key empty: no client certificate.
  static std::shared_ptr<tls_context> create_client(const std::string& ca_file, const std::string& cert_file,
                                                    const std::string& key_file, std::string& error);
  ~tls_context();
  tls_context(const tls_context&) = delete;
  tls_context& operator=(const tls_context&) = delete;

  // SIGHUP: a server context built from `o` serves the connections opened from now on (those
  // already open keep theirs). False, with the error and the old settings kept, if it fails.
  bool reload(const tls_options& o, std::string& error);
  // A new connection's SSL from the current settings (any thread).
  SSL* new_ssl() const;
  // The current SSL_CTX, to adjust a client context in tests.
  SSL_CTX* raw() const;
  bool is_server() const { return _server; }
  bool verify_peer() const { return _verify; }

 private:
  tls_context(SSL_CTX* ctx, bool server, bool verify) : _ctx(ctx), _server(server), _verify(verify) {}
  mutable std::mutex _mu;  // guards _ctx: a reload swaps it while shards open connections
  SSL_CTX* _ctx;
  bool _server;
  bool _verify;
};

// OpenSSL names for a Go cipher suite name (TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256 ->
// ECDHE-RSA-AES128-GCM-SHA256); TLS 1.3 names are the same in both. Empty if unknown.
std::string openssl_cipher_name(const std::string& go_name, bool& tls13);

// The reverse, for /connz: Go's name of an OpenSSL cipher name (TLS 1.3's are the same).
std::string go_cipher_name(const std::string& openssl_name);

// The oldest OpenSSL error on this thread's queue as text (and the queue cleared).
std::string last_openssl_error();

}  // namespace net
