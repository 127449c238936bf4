#pragma once
// The system account (nats-server's $SYS): server requests answered there and the server's
// events published there. The request rules and JSON shapes are pure (unit-tested); the
// service runs on shard 0 and builds answers on a worker thread of its own with the HTTP
// monitor's builders (they wait for shard snapshots, which shard 0 itself cannot do).
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "src/core/monitor.h"
#include "src/core/monitor_types.h"
#include "src/core/service.h"

namespace core {

class server;

// What a subject in the system account asks for.
struct sys_request {
  enum class kind { none, statsz, server_api } k = kind::none;
  std::string endpoint;  // "VARZ", "CONNZ", ... (server_api)
};
// $SYS.REQ.SERVER.PING (statsz), $SYS.REQ.SERVER.PING.<EP>, $SYS.REQ.SERVER.<id>.<EP>.
sys_request parse_sys_request(std::string_view subject, std::string_view server_id);

// A request body (JSON options, as nats-server's *Options structs) as the HTTP query the
// monitor's builders take; false with `error` set (the 400 description) when it is not JSON.
bool sys_query_from_body(std::string_view body, http_query& out, std::string& error);

// nats-server's ServerInfo of every system message (field names and order of 2.9).
struct sys_server_info {
  std::string name, host, id, cluster, domain, version;
  bool jetstream = false;
};
nlohmann::ordered_json sys_server_json(const sys_server_info& s, std::uint64_t seq, std::int64_t now_wall_ns);
// statsz from /varz's data and the count of accounts with connections.
nlohmann::ordered_json sys_statsz_json(const nlohmann::json& varz, std::uint64_t active_accounts);

// $SYS.ACCOUNT.<acc>.CONNECT / .DISCONNECT (nats-server's ConnectEventMsg and
// DisconnectEventMsg): `c` is the client as connz sees it; `account` its account's name.
// `disconnect` adds rtt, stop, sent (what the client published), received and the reason.
nlohmann::ordered_json sys_client_event_json(const conn_snapshot& c, const std::string& account,
                                             const nlohmann::ordered_json& server, const std::string& event_id,
                                             std::int64_t now_wall_ns, bool disconnect);
// A fresh event id in NUID's form (22 base62 characters) from two random words.
std::string sys_event_id(std::uint64_t a, std::uint64_t b);
sys_server_info sys_info_of(const server_options& o, const std::string& id, const std::string& name);

// The system account's request service; null when the server has no system account.
std::unique_ptr<service> make_system_service(server& srv, std::uint32_t system_account);

}  // namespace core
