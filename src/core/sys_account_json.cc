// The system account's per-account answers ($SYS.REQ.ACCOUNT.<acc>.<EP>) and events
// ($SYS.ACCOUNT.<acc>.SERVER.CONNS): pure builders from connection snapshots and the config,
// in nats-server 2.9's field order.
#include <algorithm>
#include <cctype>

#include "src/base/go_text.h"
#include "src/core/system_account.h"

namespace core {

using ojson = nlohmann::ordered_json;

bool parse_account_request(std::string_view subject, sys_request& r) {
  constexpr std::string_view kAccount = "$SYS.REQ.ACCOUNT.";
  if (!subject.starts_with(kAccount)) return false;
  const std::string_view rest = subject.substr(kAccount.size());
  const auto dot = rest.rfind('.');
  if (dot == std::string_view::npos || dot == 0) return false;
  const std::string_view acc = rest.substr(0, dot), ep = rest.substr(dot + 1);
  if (acc.find('.') != std::string_view::npos) return false;
  static constexpr std::string_view kEndpoints[] = {"SUBSZ", "CONNZ", "LEAFZ", "JSZ", "INFO", "STATZ", "CONNS"};
  if (std::find(std::begin(kEndpoints), std::end(kEndpoints), ep) == std::end(kEndpoints)) return false;
  // $SYS.REQ.ACCOUNT.PING.<EP> asks every account: only STATZ and CONNZ (nats-server's).
  if (acc == "PING" && ep != "STATZ" && ep != "CONNZ") return false;
  r.k = sys_request::kind::account_api;
  r.account = std::string(acc);
  r.endpoint = std::string(ep);
  return true;
}

std::map<std::string, account_stat> account_stats(const std::vector<conn_snapshot>& open) {
  std::map<std::string, account_stat> out;
  for (const auto& c : open) {
    account_stat& a = out[c.account.empty() ? "$G" : c.account];
    ++a.conns;
    a.sent_msgs += c.out_msgs;
    a.sent_bytes += c.out_bytes;
    a.received_msgs += c.in_msgs;
    a.received_bytes += c.in_bytes;
  }
  return out;
}

ojson account_stat_json(const std::string& name, const account_stat& a) {
  ojson j;
  j["acc"] = name;
  j["conns"] = a.conns;
  j["leafnodes"] = 0;
  j["total_conns"] = a.conns;
  j["sent"] = ojson{{"msgs", a.sent_msgs}, {"bytes", a.sent_bytes}};
  j["received"] = ojson{{"msgs", a.received_msgs}, {"bytes", a.received_bytes}};
  j["slow_consumers"] = a.slow_consumers;
  return j;
}

ojson account_statz_list(const std::vector<std::string>& accounts, const std::map<std::string, account_stat>& stats,
                         bool include_unused) {
  ojson list = ojson::array();
  for (const auto& name : accounts) {
    auto it = stats.find(name);
    const account_stat none;
    const account_stat& a = it == stats.end() ? none : it->second;
    if (a.conns == 0 && !include_unused) continue;
    list.push_back(account_stat_json(name, a));
  }
  return list;
}

ojson account_conns_event_json(const std::string& name, const account_stat& a, const ojson& server,
                               const std::string& event_id, std::int64_t now_wall_ns) {
  ojson j;
  j["type"] = "io.nats.server.advisory.v1.account_connections";
  j["id"] = event_id;
  j["timestamp"] = base::rfc3339_nano(now_wall_ns);
  j["server"] = server;
  const ojson stat = account_stat_json(name, a);
  for (const auto& [k, v] : stat.items()) j[k] = v;
  return j;
}

namespace {

std::string response_type_name(const std::string& configured) {
  std::string rt = configured;
  for (char& ch : rt) ch = char(std::tolower(static_cast<unsigned char>(ch)));
  if (rt.starts_with("stream")) return "Streamed";
  if (rt.starts_with("chunk")) return "Chunked";
  return "Singleton";
}

}  // namespace

ojson account_info_json(const account_info_input& in) {
  ojson j;
  j["account_name"] = in.name;
  j["update_time"] = base::rfc3339_nano(in.update_wall_ns);
  j["expired"] = false;
  j["complete"] = true;
  j["jetstream_enabled"] = in.jetstream;
  j["leafnode_connections"] = 0;
  j["client_connections"] = in.conns;
  j["subscriptions"] = in.subscriptions;
  ojson exports = ojson::array();
  if (in.config)
    for (const auto& e : in.config->exports) {
      ojson x;
      x["subject"] = e.subject;
      x["type"] = e.service ? "service" : "stream";
      if (e.service) x["response_type"] = response_type_name(e.response_type);
      exports.push_back(std::move(x));
    }
  if (!exports.empty()) j["exports"] = std::move(exports);
  ojson imports = ojson::array();
  auto add_import = [&](const std::string& subject, const std::string& account, const std::string& to, bool service) {
    ojson x;
    x["subject"] = subject;
    x["account"] = account;
    if (!to.empty()) x["to"] = to;
    x["type"] = service ? "service" : "stream";
    x["invalid"] = false;
    x["share"] = false;
    x["tracking"] = false;
    imports.push_back(std::move(x));
  };
  if (in.config)
    for (const auto& i : in.config->imports)
      add_import(i.subject, i.account, i.service ? i.to : (i.prefix.empty() ? i.to : i.prefix + "." + i.subject),
                 i.service);
  for (const auto& [local, remote] : in.system_imports) add_import(local, in.system_account, remote, true);
  if (!imports.empty()) j["imports"] = std::move(imports);
  return j;
}

}  // namespace core
