// The `peregrine` CLI's connection to a server: natscli's global flags (--server, NATS_URL,
// --user/--password, --creds, TLS files, --timeout), JetStream API requests as plain JSON
// requests to $JS.API.*, and errors worded as natscli words them.
#pragma once

#include <nats/nats.h>

#include <memory>
#include <stdexcept>
#include <string>

#include <nlohmann/json.hpp>

namespace peregrine::cli {

using ordered_json = nlohmann::ordered_json;

// A failure reported to the user as "peregrine: error: <what>" with exit status 1.
struct cli_error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct connect_options {
  std::string server;  // comma separated URLs; empty: $NATS_URL, else nats://127.0.0.1:4222
  std::string user, password, token, creds;
  std::string tls_ca, tls_cert, tls_key;
  double timeout_s = 5;
};

// libnats status as natscli prints Go's errors: "nats: no responders available for request".
std::string status_text(natsStatus s);

struct msg_deleter {
  void operator()(natsMsg* m) const { natsMsg_Destroy(m); }
};
using msg_ptr = std::unique_ptr<natsMsg, msg_deleter>;

class client {
 public:
  explicit client(const connect_options& opts);  // throws cli_error when it cannot connect
  ~client();
  client(const client&) = delete;
  client& operator=(const client&) = delete;

  natsConnection* nc() const { return nc_; }
  int64_t timeout_ms() const { return timeout_ms_; }

  // Request on $JS.API.<api> with `body` (empty: no payload). Returns the reply JSON; an API
  // error reply becomes cli_error "<context><description> (<err_code>)".
  ordered_json js_api(const std::string& api, const ordered_json& body, const std::string& context = "");
  // The same, but an error reply is returned as is (callers that map codes themselves).
  ordered_json js_api_raw(const std::string& api, const std::string& body);
  // Plain request; throws cli_error on timeout / no responders.
  msg_ptr request(natsMsg* msg);

 private:
  natsConnection* nc_ = nullptr;
  int64_t timeout_ms_;
};

// Raises cli_error for a JetStream API error object in `reply`.
void throw_api_error(const ordered_json& reply, const std::string& context);

}  // namespace peregrine::cli
