#pragma once
// The system account (nats-server's $SYS): server requests answered there and the server's
// events published there. The request rules and JSON shapes are pure (unit-tested); the
// service runs on shard 0 and builds answers on a worker thread of its own with the HTTP
// monitor's builders (they wait for shard snapshots, which shard 0 itself cannot do).
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "src/core/auth_types.h"
#include "src/core/monitor.h"
#include "src/core/monitor_types.h"
#include "src/core/service.h"

namespace core {

class server;

// What a subject in the system account asks for.
struct sys_request {
  enum class kind { none, statsz, server_api, account_api } k = kind::none;
  std::string endpoint;  // "VARZ", "CONNZ", ... (server_api), "STATZ", "INFO", ... (account_api)
  std::string account;   // account_api: the account asked about, or "PING" (every account)
};
// $SYS.REQ.SERVER.PING (statsz), $SYS.REQ.SERVER.PING.<EP>, $SYS.REQ.SERVER.<id>.<EP>.
sys_request parse_sys_request(std::string_view subject, std::string_view server_id);

// $SYS.REQ.ACCOUNT.<acc>.{SUBSZ,CONNZ,LEAFZ,JSZ,INFO,STATZ,CONNS}, $SYS.REQ.ACCOUNT.PING.{STATZ,CONNZ}.
bool parse_account_request(std::string_view subject, sys_request& r);

// One account's connections on this server (nats-server's AccountStat, from open
// connections: sent is what was delivered to them, received what they published).
struct account_stat {
  std::uint64_t conns = 0;
  std::uint64_t sent_msgs = 0, sent_bytes = 0, received_msgs = 0, received_bytes = 0;
  std::uint64_t slow_consumers = 0;
  bool operator==(const account_stat&) const = default;
};
std::map<std::string, account_stat> account_stats(const std::vector<conn_snapshot>& open);
nlohmann::ordered_json account_stat_json(const std::string& name, const account_stat& a);
// account_statz's list: the named accounts with connections (or all of them, include_unused).
nlohmann::ordered_json account_statz_list(const std::vector<std::string>& accounts,
                                          const std::map<std::string, account_stat>& stats, bool include_unused);
// $SYS.ACCOUNT.<acc>.SERVER.CONNS (and $SYS.REQ.ACCOUNT.<acc>.CONNS's answer): AccountNumConns.
nlohmann::ordered_json account_conns_event_json(const std::string& name, const account_stat& a,
                                                const nlohmann::ordered_json& server, const std::string& event_id,
                                                std::int64_t now_wall_ns);
// $SYS.REQ.ACCOUNT.<acc>.INFO: nats-server's AccountInfo.
struct account_info_input {
  std::string name;
  const account_config* config = nullptr;  // null for $G and a system account made by the server
  std::int64_t update_wall_ns = 0;
  bool jetstream = false;
  std::uint64_t conns = 0, subscriptions = 0;
  std::string system_account;
  std::vector<std::pair<std::string, std::string>> system_imports;  // (subject, to)
};
nlohmann::ordered_json account_info_json(const account_info_input& in);

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
// On shard 0's thread when the server begins to stop, while clients are still served:
// publishes $SYS.SERVER.<id>.SHUTDOWN (once) when `s` is the system service.
void announce_system_shutdown(service& s);

}  // namespace core
