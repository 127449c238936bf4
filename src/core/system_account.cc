#include "src/core/system_account.h"

#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>

#include "peregrine_config.h"
#include "src/base/go_text.h"
#include "src/core/server.h"

namespace core {

using ojson = nlohmann::ordered_json;

sys_request parse_sys_request(std::string_view subject, std::string_view server_id) {
  constexpr std::string_view kServer = "$SYS.REQ.SERVER.";
  sys_request r;
  if (!subject.starts_with(kServer)) return r;
  std::string_view rest = subject.substr(kServer.size());
  if (rest == "PING") {
    r.k = sys_request::kind::statsz;
    return r;
  }
  const auto dot = rest.find('.');
  if (dot == std::string_view::npos) return r;
  const std::string_view target = rest.substr(0, dot), ep = rest.substr(dot + 1);
  if (target != "PING" && target != server_id) return r;
  if (ep == "STATSZ") {
    r.k = sys_request::kind::statsz;
    return r;
  }
  static constexpr std::string_view kEndpoints[] = {"VARZ",  "CONNZ",    "SUBSZ", "JSZ",     "HEALTHZ",
                                                    "ROUTEZ", "ACCOUNTZ", "LEAFZ", "GATEWAYZ"};
  for (std::string_view e : kEndpoints)
    if (ep == e) {
      r.k = sys_request::kind::server_api;
      r.endpoint = std::string(e);
    }
  return r;
}

bool sys_query_from_body(std::string_view body, http_query& out, std::string& error) {
  out.clear();
  if (body.empty()) return true;
  const auto j = nlohmann::json::parse(body, nullptr, false);
  if (j.is_discarded() || !j.is_object()) {
    error = "invalid request body: not a JSON object";
    return false;
  }
  for (const auto& [k, v] : j.items()) {
    std::string val = v.is_string() ? v.get<std::string>() : v.dump();
    // ConnzOptions' JSON names for what the HTTP query calls subs=1 / subs=detail.
    if (k == "subscriptions" || k == "subscriptions_detail") {
      if (v == true) out["subs"] = k == "subscriptions" ? "1" : "detail";
      continue;
    }
    out[k] = std::move(val);
  }
  return true;
}

ojson sys_server_json(const sys_server_info& s, std::uint64_t seq, std::int64_t now_wall_ns) {
  ojson j;
  j["name"] = s.name;
  j["host"] = s.host;
  j["id"] = s.id;
  if (!s.cluster.empty()) j["cluster"] = s.cluster;
  if (!s.domain.empty()) j["domain"] = s.domain;
  j["ver"] = s.version;
  j["seq"] = seq;
  j["jetstream"] = s.jetstream;
  j["time"] = base::rfc3339_nano(now_wall_ns);
  return j;
}

ojson sys_statsz_json(const nlohmann::json& varz, std::uint64_t active_accounts) {
  auto num = [&](const char* k) { return varz.contains(k) ? varz[k] : nlohmann::json(0); };
  ojson j;
  j["start"] = varz.value("start", "");
  j["mem"] = num("mem");
  j["cores"] = num("cores");
  j["cpu"] = num("cpu");
  j["connections"] = num("connections");
  j["total_connections"] = num("total_connections");
  j["active_accounts"] = active_accounts;
  j["subscriptions"] = num("subscriptions");
  j["sent"] = ojson{{"msgs", num("out_msgs")}, {"bytes", num("out_bytes")}};
  j["received"] = ojson{{"msgs", num("in_msgs")}, {"bytes", num("in_bytes")}};
  j["slow_consumers"] = num("slow_consumers");
  j["active_servers"] = 1 + varz.value("routes", 0);
  return j;
}

sys_server_info sys_info_of(const server_options& o, const std::string& id, const std::string& name) {
  sys_server_info s;
  s.name = name;
  s.id = id;
  s.host = o.host;
  s.version = PEREGRINE_NATS_LEVEL;
  s.jetstream = o.jetstream;
  s.domain = o.js_domain;
  if (o.cluster) s.cluster = o.cluster_name.empty() ? id : o.cluster_name;
  return s;
}

ojson sys_client_event_json(const conn_snapshot& c, const std::string& account, const ojson& server,
                            const std::string& event_id, std::int64_t now_wall_ns, bool disconnect) {
  ojson j;
  j["type"] = disconnect ? "io.nats.server.advisory.v1.client_disconnect" : "io.nats.server.advisory.v1.client_connect";
  j["id"] = event_id;
  j["timestamp"] = base::rfc3339_nano(now_wall_ns);
  j["server"] = server;
  ojson cl;
  cl["start"] = base::rfc3339_nano(c.start_ns);
  cl["host"] = c.ip;
  cl["id"] = c.cid;
  cl["acc"] = account;
  if (!c.user.empty()) cl["user"] = c.user;
  if (!c.name.empty()) cl["name"] = c.name;
  if (!c.lang.empty()) cl["lang"] = c.lang;
  if (!c.version.empty()) cl["ver"] = c.version;
  if (disconnect && c.rtt_ns > 0) cl["rtt"] = c.rtt_ns;
  if (disconnect) cl["stop"] = base::rfc3339_nano(c.stop_ns);
  cl["kind"] = "Client";
  cl["client_type"] = "nats";
  j["client"] = std::move(cl);
  if (disconnect) {
    j["sent"] = ojson{{"msgs", c.in_msgs}, {"bytes", c.in_bytes}};
    j["received"] = ojson{{"msgs", c.out_msgs}, {"bytes", c.out_bytes}};
    j["reason"] = c.reason;
  }
  return j;
}

std::string sys_event_id(std::uint64_t a, std::uint64_t b) {
  static constexpr char kDigits[] = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
  std::string out(22, '0');
  for (int i = 0; i < 11; ++i) {
    out[std::size_t(i)] = kDigits[a % 62];
    a /= 62;
    out[std::size_t(11 + i)] = kDigits[b % 62];
    b /= 62;
  }
  return out;
}

namespace {

std::int64_t wall_now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// Subscribes the request subjects in the system account on shard 0; each request is queued for
// the worker, which builds the answer and hands the publish back to shard 0.
class system_service final : public service, public internal_handler {
 public:
  system_service(server& srv, std::uint32_t account) : _srv(srv), _account(account) {}
  ~system_service() override { stop(); }

  bool start(service_host& host, std::string& error) override {
    (void)error;
    _shard0 = _srv.shards()[0];
    const std::string& id = host.server_id();
    for (const std::string& s : {std::string("$SYS.REQ.SERVER.PING"), std::string("$SYS.REQ.SERVER.PING.*"),
                                "$SYS.REQ.SERVER." + id + ".*"})
      _shard0->subscribe_in(_account, s, {}, this);
    _info = sys_info_of(host.options(), id, host.server_name());
    _worker = std::thread([this] { run(); });
    return true;
  }

  void stop() override {
    {
      std::lock_guard lk(_mu);
      if (_stopping) return;
      _stopping = true;
    }
    _cv.notify_all();
    if (_worker.joinable()) _worker.join();
  }

  void on_msg(const inbound_msg& m) override {
    if (m.reply.empty()) return;
    sys_request r = parse_sys_request(m.subject, _info.id);
    if (r.k == sys_request::kind::none) return;
    {
      std::lock_guard lk(_mu);
      if (_jobs.size() >= kMaxQueued || _stopping) return;  // a flood of requests: answer what fits
      _jobs.push_back(job{std::move(r), std::string(m.reply), std::string(m.payload)});
    }
    _cv.notify_one();
  }

 private:
  struct job {
    sys_request req;
    std::string reply;
    std::string body;
  };
  static constexpr std::size_t kMaxQueued = 256;

  void run() {
    pthread_setname_np(pthread_self(), "pg-sys");
    for (;;) {
      job j;
      {
        std::unique_lock lk(_mu);
        _cv.wait(lk, [&] { return _stopping || !_jobs.empty(); });
        if (_stopping) return;
        j = std::move(_jobs.front());
        _jobs.pop_front();
      }
      std::string out = answer(j);
      const std::uint32_t acc = _account;
      _shard0->call_on_shard([acc, reply = std::move(j.reply), out = std::move(out)](dispatcher& d) {
        d.publish_in(acc, reply, {}, {}, out);
      });
    }
  }

  std::string answer(const job& j) {
    ojson res;
    res["server"] = sys_server_json(_info, _srv.shared().sys_seq.fetch_add(1) + 1, wall_now_ns());
    http_query q;
    std::string error;
    if (!sys_query_from_body(j.body, q, error)) {
      res["error"] = ojson{{"code", 400}, {"description", error}};
      return res.dump();
    }
    if (j.req.k == sys_request::kind::statsz) {
      const auto varz = nlohmann::json::parse(monitor_varz(_srv, {}, {}).body, nullptr, false);
      const auto acc = nlohmann::json::parse(monitor_accstatz(_srv, {}).body, nullptr, false);
      std::uint64_t active = 0;
      if (acc.is_object() && acc.contains("account_statz")) active = acc["account_statz"].size();
      res["statsz"] = sys_statsz_json(varz.is_object() ? varz : nlohmann::json::object(), active);
      return res.dump();
    }
    const std::string& ep = j.req.endpoint;
    http_reply r = ep == "VARZ"       ? monitor_varz(_srv, q, {})
                   : ep == "CONNZ"    ? monitor_connz(_srv, q)
                   : ep == "SUBSZ"    ? monitor_subsz(_srv, q)
                   : ep == "JSZ"      ? core::monitor_jsz(_srv, q)
                   : ep == "HEALTHZ"  ? monitor_healthz(_srv, q)
                   : ep == "ROUTEZ"   ? monitor_routez(_srv, q)
                   : ep == "ACCOUNTZ" ? monitor_accountz(_srv, q)
                   : ep == "LEAFZ"    ? monitor_leafz(_srv, q)
                                      : monitor_gatewayz(_srv, q);
    auto data = ojson::parse(r.body, nullptr, false);
    if (r.status == 400 || data.is_discarded()) {
      res["error"] = ojson{{"code", r.status}, {"description", r.body}};
    } else {
      res["data"] = std::move(data);
    }
    return res.dump();
  }

  server& _srv;
  const std::uint32_t _account;
  dispatcher* _shard0 = nullptr;
  sys_server_info _info;
  std::mutex _mu;
  std::condition_variable _cv;
  std::deque<job> _jobs;
  bool _stopping = false;
  std::thread _worker;
};

}  // namespace

std::unique_ptr<service> make_system_service(server& srv, std::uint32_t system_account) {
  if (system_account == kGlobalAccount) return nullptr;
  return std::make_unique<system_service>(srv, system_account);
}

}  // namespace core
