#include "src/cli/client.h"

#include <cctype>
#include <cstdlib>

namespace peregrine::cli {

std::string status_text(natsStatus s) {
  switch (s) {
    case NATS_NO_RESPONDERS: return "nats: no responders available for request";
    case NATS_TIMEOUT: return "nats: timeout";
    case NATS_NO_SERVER: return "nats: no servers available for connection";
    case NATS_CONNECTION_CLOSED: return "nats: connection closed";
    case NATS_NOT_PERMITTED: return "nats: permissions violation";
    default: break;
  }
  std::string t = natsStatus_GetText(s);
  for (char& c : t) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return "nats: " + t;
}

namespace {

void check(natsStatus s, const std::string& what) {
  if (s == NATS_OK) return;
  std::string detail = status_text(s);
  const char* last = nats_GetLastError(nullptr);
  if (last != nullptr && *last != '\0' && s != NATS_NO_SERVER) detail += " (" + std::string(last) + ")";
  throw cli_error(what + detail);
}

}  // namespace

client::client(const connect_options& o) : timeout_ms_(static_cast<int64_t>(o.timeout_s * 1000)) {
  natsOptions* opts = nullptr;
  check(natsOptions_Create(&opts), "");
  std::unique_ptr<natsOptions, void (*)(natsOptions*)> guard(opts, natsOptions_Destroy);
  std::string servers = o.server;
  if (servers.empty()) {
    const char* env = std::getenv("NATS_URL");
    servers = env != nullptr && *env != '\0' ? env : "nats://127.0.0.1:4222";
  }
  check(natsOptions_SetServers(opts, nullptr, 0), "");
  check(natsOptions_SetURL(opts, servers.c_str()), "invalid server URL: ");
  check(natsOptions_SetName(opts, "peregrine CLI"), "");
  check(natsOptions_SetTimeout(opts, timeout_ms_), "");
  check(natsOptions_SetMaxReconnect(opts, 0), "");
  if (!o.user.empty()) check(natsOptions_SetUserInfo(opts, o.user.c_str(), o.password.c_str()), "");
  if (!o.token.empty()) check(natsOptions_SetToken(opts, o.token.c_str()), "");
  if (!o.creds.empty()) check(natsOptions_SetUserCredentialsFromFiles(opts, o.creds.c_str(), nullptr), "credentials: ");
  if (!o.tls_ca.empty() || !o.tls_cert.empty()) {
    check(natsOptions_SetSecure(opts, true), "tls: ");
    if (!o.tls_ca.empty()) check(natsOptions_LoadCATrustedCertificates(opts, o.tls_ca.c_str()), "tls ca: ");
    if (!o.tls_cert.empty())
      check(natsOptions_LoadCertificatesChain(opts, o.tls_cert.c_str(), o.tls_key.c_str()), "tls certificate: ");
  }
  check(natsConnection_Connect(&nc_, opts), "");
}

client::~client() {
  if (nc_ != nullptr) {
    natsConnection_FlushTimeout(nc_, 1000);
    natsConnection_Destroy(nc_);
  }
}

msg_ptr client::request(natsMsg* msg) {
  natsMsg* reply = nullptr;
  const natsStatus s = natsConnection_RequestMsg(&reply, nc_, msg, timeout_ms_);
  if (s != NATS_OK) throw cli_error(status_text(s));
  return msg_ptr(reply);
}

ordered_json client::js_api_raw(const std::string& api, const std::string& body) {
  natsMsg* reply = nullptr;
  const std::string subject = "$JS.API." + api;
  const natsStatus s = natsConnection_Request(&reply, nc_, subject.c_str(), body.data(), static_cast<int>(body.size()),
                                              timeout_ms_);
  if (s != NATS_OK) throw cli_error(status_text(s));
  msg_ptr guard(reply);
  const char* data = natsMsg_GetData(reply);
  ordered_json j = ordered_json::parse(data, data + natsMsg_GetDataLength(reply), nullptr, false);
  if (j.is_discarded() || !j.is_object()) throw cli_error("invalid JetStream API reply on " + subject);
  return j;
}

void throw_api_error(const ordered_json& reply, const std::string& context) {
  auto it = reply.find("error");
  if (it == reply.end() || !it->is_object()) return;
  std::string text = context + it->value("description", std::string("unknown error"));
  if (it->contains("err_code")) text += " (" + std::to_string((*it)["err_code"].get<int64_t>()) + ")";
  throw cli_error(text);
}

ordered_json client::js_api(const std::string& api, const ordered_json& body, const std::string& context) {
  ordered_json reply = js_api_raw(api, body.is_null() ? "" : body.dump());
  throw_api_error(reply, context);
  return reply;
}

}  // namespace peregrine::cli
