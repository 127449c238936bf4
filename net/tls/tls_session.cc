#include "net/tls/tls_session.h"

#include <arpa/inet.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include <algorithm>
#include <climits>
#include <cstring>

#include "net/tls/tls_context.h"

namespace net {
namespace {

// A BIO over tls_session_io: reads consume `in`, writes append to `*out`.
int bio_write(BIO* b, const char* data, int len) {
  auto* io = static_cast<tls_session_io*>(BIO_get_data(b));
  if (!io->out) return -1;
  io->out->append(data, std::size_t(len));
  return len;
}

int bio_read(BIO* b, char* buf, int len) {
  auto* io = static_cast<tls_session_io*>(BIO_get_data(b));
  BIO_clear_retry_flags(b);
  if (io->in.empty()) {
    BIO_set_retry_read(b);
    return -1;
  }
  const std::size_t n = std::min(io->in.size(), std::size_t(len));
  std::memcpy(buf, io->in.data(), n);
  io->in.remove_prefix(n);
  return int(n);
}

long bio_ctrl(BIO* b, int cmd, long, void*) {
  auto* io = static_cast<tls_session_io*>(BIO_get_data(b));
  switch (cmd) {
    case BIO_CTRL_FLUSH: return 1;
    case BIO_CTRL_PENDING: return long(io->in.size());
    default: return 0;
  }
}

int bio_create(BIO* b) {
  BIO_set_init(b, 1);
  return 1;
}

BIO_METHOD* session_bio_method() {
  static BIO_METHOD* const m = [] {
    BIO_METHOD* method = BIO_meth_new(BIO_get_new_index() | BIO_TYPE_SOURCE_SINK, "peregrine-tls-session");
    BIO_meth_set_write(method, bio_write);
    BIO_meth_set_read(method, bio_read);
    BIO_meth_set_ctrl(method, bio_ctrl);
    BIO_meth_set_create(method, bio_create);
    return method;
  }();
  return m;
}

// Points the BIO's output at `out` for one call, and at nothing after it.
struct out_scope {
  tls_session_io& io;
  out_scope(tls_session_io& i, std::string& out) : io(i) { io.out = &out; }
  ~out_scope() { io.out = nullptr; }
};

}  // namespace

tls_session::tls_session(std::shared_ptr<tls_context> ctx, const std::string& server_name) : _ctx(std::move(ctx)) {
  _ssl = _ctx->new_ssl();
  BIO* bio = _ssl ? BIO_new(session_bio_method()) : nullptr;
  if (!_ssl || !bio) {
    _state = state::failed;
    _error = "cannot create a TLS session: " + last_openssl_error();
    return;
  }
  BIO_set_data(bio, &_io);
  SSL_set_bio(_ssl, bio, bio);  // one BIO both ways; the SSL owns it
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

void tls_session::keep_unread() {
  // `in` points into the caller's bytes or into `carry`; what is left must outlive the call.
  if (_io.in.empty()) {
    _io.carry.clear();
  } else if (!_io.carry.empty() && _io.in.data() >= _io.carry.data() &&
             _io.in.data() < _io.carry.data() + _io.carry.size()) {
    _io.carry.erase(0, std::size_t(_io.in.data() - _io.carry.data()));
  } else {
    _io.carry.assign(_io.in);
  }
  _io.in = {};
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
  out_scope scope(_io, cipher_out);
  const int r = SSL_do_handshake(_ssl);
  if (r != 1 && SSL_get_error(_ssl, r) != SSL_ERROR_WANT_READ) fail(r);
}

tls_session::state tls_session::feed(std::string_view cipher_in, std::string& plain_out, std::string& cipher_out) {
  if (_state == state::failed || _state == state::closed) return _state;
  if (_io.carry.empty()) {
    _io.in = cipher_in;
  } else {
    _io.carry.append(cipher_in);
    _io.in = _io.carry;
  }
  out_scope scope(_io, cipher_out);
  if (_state == state::handshaking) {
    const int r = SSL_do_handshake(_ssl);
    if (r == 1) {
      _state = state::established;
    } else if (SSL_get_error(_ssl, r) != SSL_ERROR_WANT_READ) {
      fail(r);  // the alert telling the peer why is in cipher_out
      _io.in = {};
      _io.carry.clear();
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
  keep_unread();
  return _state;
}

bool tls_session::write(std::string_view plain, std::string& cipher_out) {
  if (_state != state::established) return false;
  out_scope scope(_io, cipher_out);
  while (!plain.empty()) {
    std::size_t n = 0;
    if (SSL_write_ex(_ssl, plain.data(), plain.size(), &n) != 1) {
      fail(0);
      return false;
    }
    plain.remove_prefix(n);
  }
  return true;
}

void tls_session::close(std::string& cipher_out) {
  out_scope scope(_io, cipher_out);
  if (_state == state::established) SSL_shutdown(_ssl);
  _state = state::closed;
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

std::vector<std::string> tls_session::peer_names() const {
  std::vector<std::string> out;
  X509* cert = SSL_get1_peer_certificate(_ssl);
  if (!cert) return out;
  auto* sans = static_cast<GENERAL_NAMES*>(X509_get_ext_d2i(cert, NID_subject_alt_name, nullptr, nullptr));
  for (int kind : {GEN_EMAIL, GEN_DNS}) {
    for (int i = 0; sans && i < sk_GENERAL_NAME_num(sans); ++i) {
      const GENERAL_NAME* n = sk_GENERAL_NAME_value(sans, i);
      if (n->type != kind) continue;
      const ASN1_IA5STRING* s = kind == GEN_EMAIL ? n->d.rfc822Name : n->d.dNSName;
      out.emplace_back(reinterpret_cast<const char*>(ASN1_STRING_get0_data(s)), std::size_t(ASN1_STRING_length(s)));
    }
  }
  GENERAL_NAMES_free(sans);
  X509_free(cert);
  out.push_back(peer_subject());
  return out;
}

std::string tls_session::protocol() const { return SSL_get_version(_ssl); }

std::string tls_session::cipher() const {
  const char* c = SSL_get_cipher_name(_ssl);
  return c ? c : "";
}

}  // namespace net
