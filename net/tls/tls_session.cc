#include "net/tls/tls_session.h"

#include <arpa/inet.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include <algorithm>
#include <climits>

#include "net/tls/tls_context.h"

namespace net {

tls_session::tls_session(std::shared_ptr<tls_context> ctx, const std::string& server_name) : _ctx(std::move(ctx)) {
  _ssl = _ctx->new_ssl();
  _in = BIO_new(BIO_s_mem());
  _out = BIO_new(BIO_s_mem());
  if (!_ssl || !_in || !_out) {
    _state = state::failed;
    _error = "cannot create a TLS session: " + last_openssl_error();
    BIO_free(_in);
    BIO_free(_out);
    _in = _out = nullptr;
    return;
  }
  BIO_set_mem_eof_return(_in, -1);  // an empty input buffer means "wait", not end of stream
  BIO_set_mem_eof_return(_out, -1);
  SSL_set_bio(_ssl, _in, _out);     // the session owns both now
  if (_ctx->is_server()) {
    SSL_set_accept_state(_ssl);
    return;
  }
  SSL_set_connect_state(_ssl);
  if (server_name.empty()) return;
  in6_addr addr{};
  const bool is_ip = inet_pton(AF_INET, server_name.c_str(), &addr) == 1 ||
                     inet_pton(AF_INET6, server_name.c_str(), &addr) == 1;
  if (!is_ip) SSL_set_tlsext_host_name(_ssl, server_name.c_str());
  if (_ctx->verify_peer()) {
    X509_VERIFY_PARAM* p = SSL_get0_param(_ssl);
    if (is_ip) {
      X509_VERIFY_PARAM_set1_ip_asc(p, server_name.c_str());
    } else {
      X509_VERIFY_PARAM_set1_host(p, server_name.c_str(), 0);
    }
  }
}

tls_session::~tls_session() { SSL_free(_ssl); }

void tls_session::drain(std::string& cipher_out) {
  const std::size_t pending = BIO_ctrl_pending(_out);
  if (pending == 0) return;
  const std::size_t old = cipher_out.size();
  cipher_out.resize(old + pending);
  const int n = BIO_read(_out, cipher_out.data() + old, int(std::min<std::size_t>(pending, INT_MAX)));
  cipher_out.resize(old + std::size_t(std::max(n, 0)));
}

void tls_session::fail(int ssl_result) {
  const int err = SSL_get_error(_ssl, ssl_result);
  _state = state::failed;
  const long verify = SSL_get_verify_result(_ssl);
  if (err == SSL_ERROR_SSL && verify != X509_V_OK) {
    _error = X509_verify_cert_error_string(verify);
    ERR_clear_error();
  } else if (err == SSL_ERROR_SSL) {
    _error = last_openssl_error();
  } else {
    _error = "TLS error " + std::to_string(err);
    ERR_clear_error();
  }
}

void tls_session::start(std::string& cipher_out) {
  if (_state != state::handshaking) return;
  const int r = SSL_do_handshake(_ssl);
  if (r != 1 && SSL_get_error(_ssl, r) != SSL_ERROR_WANT_READ) fail(r);
  drain(cipher_out);
}

tls_session::state tls_session::feed(std::string_view cipher_in, std::string& plain_out, std::string& cipher_out) {
  if (_state == state::failed || _state == state::closed) return _state;
  while (!cipher_in.empty()) {
    const int chunk = int(std::min<std::size_t>(cipher_in.size(), INT_MAX));
    const int w = BIO_write(_in, cipher_in.data(), chunk);
    if (w <= 0) break;
    cipher_in.remove_prefix(std::size_t(w));
  }
  if (_state == state::handshaking) {
    const int r = SSL_do_handshake(_ssl);
    if (r == 1) {
      _state = state::established;
    } else if (SSL_get_error(_ssl, r) != SSL_ERROR_WANT_READ) {
      fail(r);
      drain(cipher_out);  // the alert telling the peer why
      return _state;
    }
  }
  if (_state == state::established) {
    static thread_local char buf[16 * 1024];
    for (;;) {
      std::size_t n = 0;
      const int r = SSL_read_ex(_ssl, buf, sizeof buf, &n);
      if (r == 1) {
        plain_out.append(buf, n);
        continue;
      }
      const int err = SSL_get_error(_ssl, r);
      if (err == SSL_ERROR_WANT_READ) break;
      if (err == SSL_ERROR_ZERO_RETURN) {
        _state = state::closed;  // the peer's close_notify
      } else {
        fail(r);
      }
      break;
    }
  }
  drain(cipher_out);
  return _state;
}

bool tls_session::write(std::string_view plain, std::string& cipher_out) {
  if (_state != state::established) return false;
  while (!plain.empty()) {
    std::size_t n = 0;
    if (SSL_write_ex(_ssl, plain.data(), plain.size(), &n) != 1) {
      fail(0);
      drain(cipher_out);
      return false;
    }
    plain.remove_prefix(n);
  }
  drain(cipher_out);
  return true;
}

void tls_session::close(std::string& cipher_out) {
  if (_state == state::established) SSL_shutdown(_ssl);
  _state = state::closed;
  drain(cipher_out);
}

std::string tls_session::peer_subject() const {
  X509* cert = SSL_get1_peer_certificate(_ssl);
  if (!cert) return "";
  BIO* mem = BIO_new(BIO_s_mem());
  X509_NAME_print_ex(mem, X509_get_subject_name(cert), 0, XN_FLAG_RFC2253);
  char* data = nullptr;
  const long len = BIO_get_mem_data(mem, &data);
  std::string out(data, std::size_t(std::max(len, 0L)));
  BIO_free(mem);
  X509_free(cert);
  return out;
}

std::string tls_session::protocol() const { return SSL_get_version(_ssl); }

std::string tls_session::cipher() const {
  const char* c = SSL_get_cipher_name(_ssl);
  return c ? c : "";
}

}  // namespace net
