#pragma once
// The client listener's TLS settings, as nats-server's `tls { ... }` block, `allow_non_tls`
// and the --tls* flags give them. Plain data: the options layer fills it, net/tls turns it
// into an OpenSSL context.
#include <cstdint>
#include <string>
#include <vector>

namespace net {

struct tls_options {
  bool enabled = false;            // a tls block, --tls, or a --tlscert/--tlskey/--tlsverify flag
  std::string cert_file;
  std::string key_file;
  std::string ca_file;
  bool verify = false;             // require a client certificate signed by ca_file
  bool verify_and_map = false;     // verify, and the certificate's subject names the user
  std::int64_t timeout_ms = 2000;  // handshake deadline (nats-server's default: 2 s)
  bool handshake_first = false;    // TLS before the INFO instead of after it
  bool allow_non_tls = false;      // plaintext clients may stay plaintext (INFO tls_available)
  std::vector<std::string> cipher_suites;  // Go names, as nats-server takes them
  std::string min_version;         // "1.2" or "1.3"; empty: 1.2
};

}  // namespace net
