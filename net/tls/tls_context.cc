#include "net/tls/tls_context.h"

#include <openssl/err.h>
#include <openssl/ssl.h>

#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <utility>

namespace net {
namespace {

struct cipher_name {
  const char* go;
  const char* openssl;
};
// Go's crypto/tls names (what nats-server's cipher_suites takes) for the TLS 1.2 suites.
constexpr cipher_name kTls12Ciphers[] = {
    {"TLS_RSA_WITH_AES_128_CBC_SHA", "AES128-SHA"},
    {"TLS_RSA_WITH_AES_256_CBC_SHA", "AES256-SHA"},
    {"TLS_RSA_WITH_AES_128_GCM_SHA256", "AES128-GCM-SHA256"},
    {"TLS_RSA_WITH_AES_256_GCM_SHA384", "AES256-GCM-SHA384"},
    {"TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA", "ECDHE-ECDSA-AES128-SHA"},
    {"TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA", "ECDHE-ECDSA-AES256-SHA"},
    {"TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA", "ECDHE-RSA-AES128-SHA"},
    {"TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA", "ECDHE-RSA-AES256-SHA"},
    {"TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256", "ECDHE-ECDSA-AES128-GCM-SHA256"},
    {"TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256", "ECDHE-RSA-AES128-GCM-SHA256"},
    {"TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384", "ECDHE-ECDSA-AES256-GCM-SHA384"},
    {"TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384", "ECDHE-RSA-AES256-GCM-SHA384"},
    {"TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305", "ECDHE-ECDSA-CHACHA20-POLY1305"},
    {"TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256", "ECDHE-ECDSA-CHACHA20-POLY1305"},
    {"TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305", "ECDHE-RSA-CHACHA20-POLY1305"},
    {"TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256", "ECDHE-RSA-CHACHA20-POLY1305"},
};
constexpr const char* kTls13Ciphers[] = {"TLS_AES_128_GCM_SHA256", "TLS_AES_256_GCM_SHA384",
                                         "TLS_CHACHA20_POLY1305_SHA256"};

bool readable(const std::string& path, std::string& why) {
  std::FILE* f = std::fopen(path.c_str(), "r");
  if (!f) {
    // Go's words: "open <path>: no such file or directory" (strerror's, lower-cased).
    std::string reason = std::strerror(errno);
    if (!reason.empty()) reason[0] = char(std::tolower(static_cast<unsigned char>(reason[0])));
    why = "open " + path + ": " + reason;
    return false;
  }
  std::fclose(f);
  return true;
}

}  // namespace

std::string last_openssl_error() {
  const unsigned long e = ERR_get_error();
  ERR_clear_error();
  if (e == 0) return "unknown error";
  char buf[256];
  ERR_error_string_n(e, buf, sizeof buf);
  // "error:0A000086:SSL routines::certificate verify failed" -> the reason after the last ':'
  std::string s(buf);
  const auto colon = s.rfind(':');
  return colon == std::string::npos ? s : s.substr(colon + 1);
}

std::string openssl_cipher_name(const std::string& go_name, bool& tls13) {
  for (const auto& c : kTls12Ciphers)
    if (go_name == c.go) {
      tls13 = false;
      return c.openssl;
    }
  for (const char* c : kTls13Ciphers)
    if (go_name == c) {
      tls13 = true;
      return c;
    }
  return "";
}

std::string go_cipher_name(const std::string& openssl_name) {
  for (const auto& c : kTls12Ciphers)
    if (openssl_name == c.openssl) return c.go;  // the first Go name (without _SHA256 for ChaCha)
  return openssl_name;
}

tls_context::~tls_context() { SSL_CTX_free(_ctx); }

SSL* tls_context::new_ssl() const {
  std::lock_guard lk(_mu);
  return SSL_new(_ctx);  // the SSL holds its own reference to the SSL_CTX
}

SSL_CTX* tls_context::raw() const {
  std::lock_guard lk(_mu);
  return _ctx;
}

bool tls_context::reload(const tls_options& o, std::string& error) {
  auto fresh = create_server(o, error);
  if (!fresh) return false;
  SSL_CTX* old = nullptr;
  {
    std::lock_guard lk(_mu);
    old = _ctx;
    _ctx = fresh->_ctx;
    fresh->_ctx = nullptr;
  }
  SSL_CTX_free(old);
  return true;
}

std::shared_ptr<tls_context> tls_context::create_server(const tls_options& o, std::string& error) {
  if (o.cert_file.empty() && o.key_file.empty()) {
    error = "missing 'cert_file' in TLS configuration";
    return nullptr;
  }
  if (o.key_file.empty()) {
    error = "missing 'key_file' in TLS configuration";
    return nullptr;
  }
  if (o.cert_file.empty()) {
    error = "missing 'cert_file' in TLS configuration";
    return nullptr;
  }
  ERR_clear_error();
  SSL_CTX* ctx = SSL_CTX_new(TLS_server_method());
  if (!ctx) {
    error = "cannot create a TLS context: " + last_openssl_error();
    return nullptr;
  }
  const bool verify = o.verify || o.verify_and_map;
  std::shared_ptr<tls_context> out(new tls_context(ctx, true, verify));
  std::string why;
  if (!readable(o.cert_file, why) || !readable(o.key_file, why)) {
    error = "error parsing X509 certificate/key pair: " + why;
    return nullptr;
  }
  if (SSL_CTX_use_certificate_chain_file(ctx, o.cert_file.c_str()) != 1 ||
      SSL_CTX_use_PrivateKey_file(ctx, o.key_file.c_str(), SSL_FILETYPE_PEM) != 1 ||
      SSL_CTX_check_private_key(ctx) != 1) {
    error = "error parsing X509 certificate/key pair: " + last_openssl_error();
    return nullptr;
  }
  if (!o.ca_file.empty()) {
    if (!readable(o.ca_file, why)) {
      error = "failed to parse root ca certificate: " + why;
      return nullptr;
    }
    if (SSL_CTX_load_verify_locations(ctx, o.ca_file.c_str(), nullptr) != 1) {
      error = "failed to parse root ca certificate";
      ERR_clear_error();
      return nullptr;
    }
  }
  int min = TLS1_2_VERSION;
  if (o.min_version == "1.3") {
    min = TLS1_3_VERSION;
  } else if (!o.min_version.empty() && o.min_version != "1.2") {
    error = "unsupported minimum TLS version: " + o.min_version;
    return nullptr;
  }
  SSL_CTX_set_min_proto_version(ctx, min);
  if (!o.cipher_suites.empty()) {
    std::string v12, v13;
    for (const auto& name : o.cipher_suites) {
      bool tls13 = false;
      const std::string ossl = openssl_cipher_name(name, tls13);
      if (ossl.empty()) {
        error = "unrecognized cipher " + name;
        return nullptr;
      }
      std::string& list = tls13 ? v13 : v12;
      list += (list.empty() ? "" : ":") + ossl;
    }
    // As Go: the list picks the TLS 1.2 suites; TLS 1.3's stay on unless some are named.
    if ((!v12.empty() && SSL_CTX_set_cipher_list(ctx, v12.c_str()) != 1) ||
        (!v13.empty() && SSL_CTX_set_ciphersuites(ctx, v13.c_str()) != 1)) {
      error = "unrecognized cipher: " + last_openssl_error();
      return nullptr;
    }
  }
  if (verify) SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, nullptr);
  SSL_CTX_set_read_ahead(ctx, 1);  // whole arrived records per BIO read, not header then body
  SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_OFF);
  SSL_CTX_set_num_tickets(ctx, 0);  // nothing resumes: don't spend a record on tickets
  return out;
}

std::shared_ptr<tls_context> tls_context::create_client(const std::string& ca_file, const std::string& cert_file,
                                                        const std::string& key_file, std::string& error) {
  ERR_clear_error();
  SSL_CTX* ctx = SSL_CTX_new(TLS_client_method());
  if (!ctx) {
    error = "cannot create a TLS context: " + last_openssl_error();
    return nullptr;
  }
  std::shared_ptr<tls_context> out(new tls_context(ctx, false, !ca_file.empty()));
  SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
  if (!ca_file.empty()) {
    if (SSL_CTX_load_verify_locations(ctx, ca_file.c_str(), nullptr) != 1) {
      error = "failed to parse root ca certificate: " + last_openssl_error();
      return nullptr;
    }
    SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, nullptr);
  }
  if (!cert_file.empty()) {
    if (SSL_CTX_use_certificate_chain_file(ctx, cert_file.c_str()) != 1 ||
        SSL_CTX_use_PrivateKey_file(ctx, key_file.c_str(), SSL_FILETYPE_PEM) != 1) {
      error = "error parsing X509 certificate/key pair: " + last_openssl_error();
      return nullptr;
    }
  }
  return out;
}

}  // namespace net
