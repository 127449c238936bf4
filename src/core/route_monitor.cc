// /routez and varz "cluster", in nats-server 2.9's field order.
#include "src/base/clock.h"
#include "src/base/go_text.h"
#include "src/core/monitor.h"
#include "src/core/monitor_format.h"
#include "src/core/monitor_types.h"
#include "src/core/server.h"

namespace core {

using ojson = nlohmann::ordered_json;

ojson cluster_varz(server& srv) {
  const auto& o = srv.shared().opts;
  ojson j = ojson::object();
  if (!o.cluster) return j;
  j["name"] = srv.shared().route_info.value("cluster", "");
  j["addr"] = o.cluster_host;
  j["cluster_port"] = srv.cluster_port();
  auto seconds = [](std::int64_t ms) {  // Go prints the float64 2.0 as 2
    return ms % 1000 == 0 ? ojson(ms / 1000) : ojson(double(ms) / 1000.0);
  };
  j["auth_timeout"] = seconds(o.cluster_auth_timeout_ms);
  if (!o.routes.empty()) {  // host:port only, as nats-server (no credentials on the page)
    ojson urls = ojson::array();
    for (const auto& r : o.routes) {
      std::string host;
      int port = 0;
      if (!parse_route_url(r, host, port)) continue;
      urls.push_back((host.find(':') != std::string::npos ? "[" + host + "]" : host) + ":" + std::to_string(port));
    }
    j["urls"] = std::move(urls);
  }
  j["tls_timeout"] = seconds(o.cluster_tls.timeout_ms);
  if (o.cluster_tls.enabled) j["tls_required"] = true;
  if (o.cluster_tls.enabled && o.cluster_tls.verify) j["tls_verify"] = true;
  return j;
}

http_reply monitor_routez(server& srv, const http_query& q) {
  snapshot_request req;
  req.routes = true;
  const auto snaps = collect_snapshots(srv, req);
  const bool subs = q.count("subs") && (q.at("subs") == "1" || q.at("subs") == "true");
  const std::int64_t now = base::system_clock::instance().wall_ns();
  ojson list = ojson::array();
  for (const auto& s : snaps) {
    for (const auto& r : s.route_list) {
      ojson e;
      e["rid"] = r.rid;
      e["remote_id"] = r.remote_id;
      e["did_solicit"] = r.did_solicit;
      e["is_configured"] = r.is_configured;
      e["ip"] = r.ip;
      e["port"] = r.port;
      e["start"] = base::rfc3339_nano(r.start_ns);
      e["last_activity"] = base::rfc3339_nano(r.last_ns);
      if (r.rtt_ns > 0) e["rtt"] = rtt_text(r.rtt_ns);
      e["uptime"] = uptime_text(now - r.start_ns);
      e["idle"] = uptime_text(now - r.last_ns);
      e["pending_size"] = r.pending_bytes;
      e["in_msgs"] = r.in_msgs;
      e["out_msgs"] = r.out_msgs;
      e["in_bytes"] = r.in_bytes;
      e["out_bytes"] = r.out_bytes;
      e["subscriptions"] = r.subs.size();
      if (subs) e["subscriptions_list"] = r.subs;
      list.push_back(std::move(e));
    }
  }
  ojson j;
  j["server_id"] = srv.shared().server_id;
  j["now"] = base::rfc3339_nano(now);
  j["num_routes"] = list.size();
  j["routes"] = std::move(list);
  return {200, "application/json", j.dump(2)};
}

}  // namespace core
