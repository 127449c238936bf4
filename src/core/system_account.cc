#include "src/core/system_account.h"

#include <chrono>
#include <deque>
#include <future>
#include <optional>
#include <random>
#include <mutex>
#include <thread>

#include "peregrine_config.h"
#include "src/base/go_text.h"
#include "src/core/server.h"
#include "src/core/sys_event_pacer.h"

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

using namespace std::chrono_literals;

std::int64_t wall_now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

constexpr base::nanos kInterestRetry = base::kSecond;  // shard 0 did not answer who listens

// Subscribes the request subjects in the system account on shard 0; each request is queued for
// the worker, which builds the answer and hands the publish back to shard 0. The worker also
// sends the periodic events, each only while someone subscribes to it (sys_event_pacer), and
// otherwise sleeps on the server's sys_bell: it asks shard 0 who listens only after the system
// account's subscriptions changed, and the shards for connection counts only after a client
// came or went while someone listens to CONNS (or a heartbeat is due).
class system_service final : public service, public internal_handler {
 public:
  system_service(server& srv, std::uint32_t account) : _srv(srv), _account(account) {}
  ~system_service() override { stop(); }

  bool start(service_host& host, std::string& error) override {
    (void)error;
    _shard0 = _srv.shards()[0];
    const std::string& id = host.server_id();
    for (const std::string& s : {std::string("$SYS.REQ.SERVER.PING"), std::string("$SYS.REQ.SERVER.PING.*"),
                                "$SYS.REQ.SERVER." + id + ".*", std::string("$SYS.REQ.ACCOUNT.*.*")})
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
    _srv.shared().sys_wake.ring();
    // Not announced yet (a stop without server::shutdown): before the join, since the
    // worker may be waiting for shard 0, which then is here.
    if (_worker.joinable()) announce_stop();
    if (_worker.joinable()) _worker.join();
  }

  // On shard 0's thread: the last word goes out before the clients and routes close.
  void announce_stop() {
    if (!_shard0 || _shutdown_sent) return;
    _shutdown_sent = true;
    const auto body = sys_server_json(_info, _srv.shared().sys_seq.fetch_add(1) + 1, wall_now_ns()).dump();
    _shard0->publish_in(_account, "$SYS.SERVER." + _info.id + ".SHUTDOWN", {}, {}, body);
  }

  void on_msg(const inbound_msg& m) override {
    if (m.reply.empty()) return;
    sys_request r = parse_sys_request(m.subject, _info.id);
    if (r.k == sys_request::kind::none && !parse_account_request(m.subject, r)) return;
    {
      std::lock_guard lk(_mu);
      if (_jobs.size() >= kMaxQueued || _stopping) return;  // a flood of requests: answer what fits
      _jobs.push_back(job{std::move(r), std::string(m.reply), std::string(m.payload)});
    }
    _srv.shared().sys_wake.ring();
  }

 private:
  struct job {
    sys_request req;
    std::string reply;
    std::string body;
  };
  static constexpr std::size_t kMaxQueued = 256;
  using steady = std::chrono::steady_clock;

  static base::nanos mono_ns() {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(steady::now().time_since_epoch()).count();
  }

  void run() {
    pthread_setname_np(pthread_self(), "pg-sys");
    sys_bell& bell = _srv.shared().sys_wake;
    sys_event_pacer pacer(mono_ns());
    std::uint64_t interest_seen = bell.interest_gen(), conns_seen = bell.conns_gen();
    for (;;) {
      const std::uint64_t rung = bell.rings();  // before looking, so no ring is missed
      std::optional<job> j;
      {
        std::lock_guard lk(_mu);
        if (_stopping) return;
        if (!_jobs.empty()) {
          j = std::move(_jobs.front());
          _jobs.pop_front();
        }
      }
      if (j) {
        std::string out = answer(*j);
        if (!out.empty()) send(j->reply, std::move(out));
      }
      if (const auto g = bell.interest_gen(); g != interest_seen) {
        interest_seen = g;
        pacer.interest_changed();
      }
      if (const auto g = bell.conns_gen(); g != conns_seen) {
        conns_seen = g;
        pacer.connections_changed();
      }
      const base::nanos wake = periodic(pacer, mono_ns());
      bell.want_connections(pacer.wants_connections());
      if (j) continue;  // more may be queued
      if (wake == sys_event_pacer::kNever)
        bell.wait(rung);
      else
        bell.wait(rung, steady::time_point(std::chrono::nanoseconds(wake)));
    }
  }

  void send(std::string subject, std::string body) {
    const std::uint32_t acc = _account;
    _shard0->call_on_shard([acc, subject = std::move(subject), body = std::move(body)](dispatcher& d) {
      d.publish_in(acc, subject, {}, {}, body);
    });
  }

  ojson server_json() { return sys_server_json(_info, _srv.shared().sys_seq.fetch_add(1) + 1, wall_now_ns()); }

  // Which of `subjects` someone subscribes to in the system account (shard 0's sublist holds
  // every subscription, route interest included).
  std::vector<bool> listened(std::vector<std::string> subjects) {
    auto done = std::make_shared<std::promise<std::vector<bool>>>();
    auto f = done->get_future();
    const std::uint32_t acc = _account;
    _shard0->call_on_shard([done, acc, subjects = std::move(subjects)](dispatcher& d) {
      std::vector<bool> r;
      for (const auto& s : subjects) r.push_back(d.has_interest_in(acc, s));
      done->set_value(std::move(r));
    });
    for (int i = 0; i < 40; ++i) {  // up to 2 s, but not past a stop (shard 0 then waits for us)
      if (f.wait_for(50ms) == std::future_status::ready) return f.get();
      std::lock_guard lk(_mu);
      if (_stopping) return {};
    }
    return {};
  }

  std::vector<std::string> account_names() const {
    std::vector<std::string> names;
    for (const auto& a : _srv.shared().live()->auth->accounts) names.push_back(a.name);
    return names;
  }

  std::map<std::string, account_stat> stats_now() {
    snapshot_request q;
    q.conns = true;
    std::vector<conn_snapshot> open;
    for (auto& s : collect_snapshots(_srv, q))
      for (auto& c : s.open) open.push_back(std::move(c));
    return account_stats(open);
  }

  // The events due now; returns when the worker must run next.
  base::nanos periodic(sys_event_pacer& pacer, base::nanos now) {
    const std::string statsz_subject = "$SYS.SERVER." + _info.id + ".STATSZ";
    if (pacer.needs_interest()) {
      _srv.shared().sys_wake.want_connections(true);  // no count change missed while asking
      const auto accounts = account_names();
      std::vector<std::string> subjects{statsz_subject};
      for (const auto& a : accounts) {
        subjects.push_back("$SYS.ACCOUNT." + a + ".SERVER.CONNS");
        subjects.push_back("$SYS.SERVER.ACCOUNT." + a + ".CONNS");
      }
      const std::vector<bool> heard = listened(subjects);
      if (heard.size() != subjects.size()) return now + kInterestRetry;
      std::vector<sys_event_pacer::listener> conns;
      for (std::size_t i = 0; i < accounts.size(); ++i) conns.push_back({accounts[i], heard[1 + 2 * i], heard[2 + 2 * i]});
      pacer.set_interest(heard[0], std::move(conns));
    }
    if (pacer.statsz_due(now)) send(statsz_subject, statsz_answer().dump());
    if (pacer.conns_due(now)) {
      const auto stats = stats_now();
      std::map<std::string, std::uint64_t> counts;
      for (const auto& [name, st] : stats) counts[name] = st.conns;
      for (const auto& l : pacer.conns_events(now, counts)) {
        auto it = stats.find(l.account);
        const std::string body = account_conns_event_json(l.account, it == stats.end() ? account_stat{} : it->second,
                                                          server_json(), sys_event_id(_rng(), _rng()), wall_now_ns())
                                     .dump();
        if (l.old_subject) send("$SYS.SERVER.ACCOUNT." + l.account + ".CONNS", body);  // nats-server sends both
        if (l.new_subject) send("$SYS.ACCOUNT." + l.account + ".SERVER.CONNS", body);
      }
    }
    return pacer.next_wake();
  }

  ojson statsz_answer() {
    ojson res;
    res["server"] = server_json();
    const auto varz = nlohmann::json::parse(monitor_varz(_srv, {}, {}).body, nullptr, false);
    std::uint64_t active = 0;
    for (const auto& [name, st] : stats_now()) active += st.conns > 0 ? 1 : 0;
    res["statsz"] = sys_statsz_json(varz.is_object() ? varz : nlohmann::json::object(), active);
    return res;
  }

  std::string answer(const job& j) {
    if (j.req.k == sys_request::kind::account_api) return answer_account(j);
    http_query q;
    std::string error;
    if (!sys_query_from_body(j.body, q, error)) {
      ojson res;
      res["server"] = server_json();
      res["error"] = ojson{{"code", 400}, {"description", error}};
      return res.dump();
    }
    if (j.req.k == sys_request::kind::statsz) return statsz_answer().dump();
    ojson res;
    res["server"] = server_json();
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
    if (r.status == 400 && r.body.starts_with("filtered response")) return {};  // JSZ leader_only elsewhere
    wrap(res, r);
    return res.dump();
  }

  static void wrap(ojson& res, const http_reply& r) {
    auto data = ojson::parse(r.body, nullptr, false);
    if (r.status == 400 || data.is_discarded()) {
      res["error"] = ojson{{"code", r.status}, {"description", r.body}};
    } else {
      res["data"] = std::move(data);
    }
  }

  // $SYS.REQ.ACCOUNT.<acc>.<EP>; empty when nats-server stays silent (no such account, or an
  // account without connections for STATZ and CONNS).
  std::string answer_account(const job& j) {
    const auto body = nlohmann::json::parse(j.body.empty() ? std::string("{}") : j.body, nullptr, false);
    if (body.is_discarded() || !body.is_object()) {
      ojson res;
      res["server"] = server_json();
      res["error"] = ojson{{"code", 400}, {"description", "invalid request body: not a JSON object"}};
      return res.dump();
    }
    const auto live = _srv.shared().live();
    const auto& auth = *live->auth;
    std::string acc = j.req.account;
    const std::string& ep = j.req.endpoint;
    const bool ping = acc == "PING";
    if (ping && ep == "CONNZ") acc = auth.accounts[_account].name;  // the system account's own
    const auto names = account_names();
    if (!ping || ep == "CONNZ")
      if (std::find(names.begin(), names.end(), acc) == names.end()) return {};
    ojson res;
    if (ep == "STATZ" || ep == "CONNS") {
      const auto stats = stats_now();
      if (ep == "CONNS") {
        auto it = stats.find(acc);
        if (it == stats.end() || it->second.conns == 0) return {};
        return account_conns_event_json(acc, it->second, server_json(), sys_event_id(_rng(), _rng()), wall_now_ns())
            .dump();
      }
      std::vector<std::string> wanted;
      if (!ping) {
        wanted.push_back(acc);
      } else if (body.contains("accounts") && body["accounts"].is_array()) {
        for (const auto& a : body["accounts"])
          if (a.is_string()) wanted.push_back(a.get<std::string>());
      } else {
        wanted = names;
      }
      const bool unused = body.value("include_unused", false);
      ojson list = account_statz_list(wanted, stats, unused);
      if (list.empty()) return {};
      res["server"] = server_json();
      ojson data;
      data["server_id"] = _info.id;
      data["now"] = base::rfc3339_nano(wall_now_ns());
      data["account_statz"] = std::move(list);
      res["data"] = std::move(data);
      return res.dump();
    }
    res["server"] = server_json();
    http_query q;
    std::string error;
    sys_query_from_body(j.body, q, error);
    if (ep == "CONNZ") {
      q["acc"] = acc;
      wrap(res, monitor_connz(_srv, q));
    } else if (ep == "SUBSZ") {
      q["acc"] = acc;
      q["subs"] = "1";
      wrap(res, monitor_subsz(_srv, q));
    } else if (ep == "LEAFZ") {
      ojson data;
      data["server_id"] = _info.id;
      data["now"] = base::rfc3339_nano(wall_now_ns());
      data["leafnodes"] = 0;
      data["leafs"] = nullptr;
      res["data"] = std::move(data);
    } else if (ep == "JSZ") {
      if (!_srv.shared().opts.jetstream || acc != "$G") {
        res["data"] = nullptr;
        res["error"] = ojson{{"code", 500}, {"description", "jetstream not enabled"}};  // nats-server's words
      } else {
        q["acc"] = acc;
        q["accounts"] = "true";
        wrap(res, core::monitor_jsz(_srv, q));
      }
    } else {  // INFO
      account_info_input in;
      in.name = acc;
      for (const auto& a : live->opts.accounts)
        if (a.name == acc) in.config = &a;
      in.update_wall_ns = _srv.start_wall_ns();  // accounts change only with a restart
      in.jetstream = acc == "$G" && _srv.shared().opts.jetstream;
      const auto stats = stats_now();
      if (auto it = stats.find(acc); it != stats.end()) in.conns = it->second.conns;
      http_query sq{{"acc", acc}, {"subs", "1"}};
      const auto subsz = nlohmann::json::parse(monitor_subsz(_srv, sq).body, nullptr, false);
      if (subsz.is_object()) in.subscriptions = subsz.value("total", 0);
      in.system_account = auth.accounts[_account].name;
      const std::uint32_t id = std::uint32_t(std::find(names.begin(), names.end(), acc) - names.begin());
      if (id < auth.accounts.size())
        for (const auto& f : auth.accounts[id].services_out)
          if (f.to_account == _account && f.local.starts_with("$SYS.")) in.system_imports.emplace_back(f.local, f.remote);
      res["data"] = account_info_json(in);
    }
    return res.dump();
  }

  server& _srv;
  const std::uint32_t _account;
  dispatcher* _shard0 = nullptr;
  sys_server_info _info;
  std::mutex _mu;
  std::deque<job> _jobs;
  bool _stopping = false;
  bool _shutdown_sent = false;  // shard 0's thread
  std::thread _worker;
  // worker thread only
  std::mt19937_64 _rng{std::random_device{}()};
};

}  // namespace

void announce_system_shutdown(service& s) {
  if (auto* sys = dynamic_cast<system_service*>(&s)) sys->announce_stop();
}

std::unique_ptr<service> make_system_service(server& srv, std::uint32_t system_account) {
  if (system_account == kGlobalAccount) return nullptr;
  return std::make_unique<system_service>(srv, system_account);
}

}  // namespace core
