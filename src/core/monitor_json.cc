// The monitoring endpoints but the connection and subscription lists (monitor_conns.cc), with
// nats-server's JSON field names and order (checked against nats-server 2.9.10; differences
// are listed in README.md). Data comes from shard snapshots, collected here for all of them.
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <fstream>
#include <functional>
#include <map>
#include <optional>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "peregrine_config.h"
#include "src/core/monitor.h"
#include "src/core/cluster_replication.h"
#include "src/base/go_text.h"
#include "src/core/monitor_format.h"
#include "src/core/monitor_query.h"
#include "src/core/server.h"
#include "src/core/subject.h"

namespace core {
namespace {

using ojson = nlohmann::ordered_json;
constexpr auto kSnapshotTimeout = std::chrono::seconds(2);

std::int64_t wall_now() { return base::system_clock::instance().wall_ns(); }

// Runs `fn` on every shard (in parallel) and waits for all; a shard that does not answer
// within the timeout (stopping) is left out.
template <typename T>
std::vector<T> ask_shards(server& srv, std::function<T(dispatcher&)> fn, bool only_service_shard = false) {
  struct state {
    std::mutex mu;
    std::condition_variable cv;
    std::vector<std::optional<T>> out;
    std::size_t done = 0;
  };
  auto st = std::make_shared<state>();
  std::vector<dispatcher*> shards = srv.shards();
  if (only_service_shard) {
    std::erase_if(shards, [](dispatcher* d) { return d->services().empty(); });
  }
  st->out.resize(shards.size());
  for (std::size_t i = 0; i < shards.size(); ++i) {
    shards[i]->call_on_shard([st, fn, i](dispatcher& d) {
      T v = fn(d);
      std::lock_guard lk(st->mu);
      st->out[i] = std::move(v);
      ++st->done;
      st->cv.notify_all();
    });
  }
  std::unique_lock lk(st->mu);
  st->cv.wait_for(lk, kSnapshotTimeout, [&] { return st->done == shards.size(); });
  std::vector<T> res;
  for (auto& o : st->out)
    if (o) res.push_back(std::move(*o));
  return res;
}

std::vector<shard_snapshot> snapshots(server& srv, snapshot_request q) {
  return ask_shards<shard_snapshot>(srv, [q](dispatcher& d) { return d.snapshot(q); });
}

// JetStream's /jsz body from the service's threads (each owner thread gives its part, the
// service adds them up); empty when JetStream is off.
std::optional<ojson> jetstream_json(server& srv, const http_query& q) {
  using part = std::pair<const service*, ojson>;
  // Every JetStream service of the shard answers (one per account it runs for).
  auto r = ask_shards<std::vector<part>>(
      srv,
      [q](dispatcher& d) {
        std::vector<part> out;
        for (const auto& s : d.services()) {
          ojson j;
          if (s->monitor_jsz(q, j)) out.emplace_back(s.get(), std::move(j));
        }
        return out;
      },
      true);
  std::vector<ojson> parts;
  const service* merger = nullptr;
  for (auto& v : r)
    for (auto& [s, j] : v) {
      if (!merger) merger = s;
      parts.push_back(std::move(j));
    }
  if (parts.empty()) return std::nullopt;
  ojson out;
  merger->merge_jsz(std::move(parts), out);
  return out;
}

// Prometheus text from several services: one "# HELP/# TYPE" header per family, followed by
// every part's samples of it, families in order of first appearance.
std::string merge_metric_families(const std::vector<std::string>& parts) {
  std::vector<std::string> order;
  std::map<std::string, std::pair<std::string, std::string>> families;  // name -> header, samples
  for (const auto& text : parts) {
    std::string current;
    std::size_t at = 0;
    while (at < text.size()) {
      std::size_t end = text.find('\n', at);
      if (end == std::string::npos) end = text.size();
      const std::string line = text.substr(at, end - at + 1);
      at = end + 1;
      if (line.starts_with("# HELP ")) {
        current = line.substr(7, line.find(' ', 7) - 7);
        auto [it, fresh] = families.try_emplace(current);
        if (fresh) order.push_back(current);
        if (fresh) it->second.first += line;
      } else if (line.starts_with("# TYPE ")) {
        auto& f = families[current];
        if (f.first.find("# TYPE ") == std::string::npos) f.first += line;
      } else {
        families[current].second += line;
      }
    }
  }
  std::string out;
  for (const auto& name : order) out += families[name].first + families[name].second;
  return out;
}

// The meta group's MetaClusterInfo, when this server is in one.
std::optional<ojson> meta_json(server& srv) {
  if (!srv.shared().replication) return std::nullopt;
  const meta_status m = srv.shared().replication->meta();
  if (!m.running) return std::nullopt;
  return meta_cluster_json(m);
}

}  // namespace

std::vector<shard_snapshot> collect_snapshots(server& srv, const snapshot_request& q) { return snapshots(srv, q); }

std::string collect_service_metrics(server& srv) {
  auto r = ask_shards<std::string>(
      srv,
      [](dispatcher& d) {
        std::string out;
        for (const auto& s : d.services()) s->monitor_metrics(out);
        return out;
      },
      true);
  return merge_metric_families(r);
}

namespace {

std::uint64_t rss_bytes() {
  std::ifstream f("/proc/self/statm");
  std::uint64_t size = 0, resident = 0;
  f >> size >> resident;
  return resident * std::uint64_t(sysconf(_SC_PAGESIZE));
}

double cpu_percent(std::int64_t start_wall_ns) {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  const double used = double(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) + double(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
  const double elapsed = double(wall_now() - start_wall_ns) / 1e9;
  return elapsed > 0 ? std::round(used / elapsed * 1000.0) / 10.0 : 0.0;
}

}  // namespace

std::string monitor_index_html() {
  return "<html lang=\"en\">\n<head><title>peregrine-server</title></head>\n<body>\n"
         "  <a href=./varz>General</a><br>\n  <a href=./jsz>JetStream</a><br>\n"
         "  <a href=./connz>Connections</a><br>\n  <a href=./accountz>Accounts</a><br>\n"
         "  <a href=./accstatz>Account Stats</a><br>\n  <a href=./subsz>Subscriptions</a><br>\n"
         "  <a href=./routez>Routes</a><br>\n  <a href=./leafz>LeafNodes</a><br>\n"
         "  <a href=./gatewayz>Gateways</a><br>\n  <a href=./healthz>Health Probe</a><br>\n"
         "  <a href=./metrics>Prometheus Metrics</a>\n</body>\n</html>\n";
}

http_reply monitor_varz(server& srv, const http_query& q, const std::map<std::string, std::uint64_t>& req_stats) {
  const auto snaps = snapshots(srv, {});
  const auto live = srv.shared().live();
  const server_options& o = live->opts;
  const server_options& started = srv.shared().opts;
  const std::int64_t now = wall_now();
  ojson j;
  j["server_id"] = srv.shared().server_id;
  j["server_name"] = srv.shared().server_name;
  j["version"] = PEREGRINE_NATS_LEVEL;
  j["proto"] = 1;
  j["git_commit"] = std::string("peregrine-") + PEREGRINE_VERSION;
  j["go"] = std::string("peregrine ") + PEREGRINE_VERSION;
  j["host"] = started.host;
  j["port"] = started.port;
  if (live->auth_required) j["auth_required"] = true;
  if (started.tls.enabled && !started.tls.allow_non_tls) j["tls_required"] = true;
  if (o.tls.verify || o.tls.verify_and_map) j["tls_verify"] = true;
  j["max_connections"] = o.max_connections;
  j["ping_interval"] = o.ping_interval_ms * 1'000'000;
  j["ping_max"] = o.ping_max;
  j["http_host"] = started.http_host.empty() ? started.host : started.http_host;
  j["http_port"] = started.http_port;
  j["http_base_path"] = started.http_base_path;
  j["https_port"] = 0;
  if (o.auth_timeout_ms % 1000 == 0) {  // Go prints a whole float64 without a fraction
    j["auth_timeout"] = o.auth_timeout_ms / 1000;
  } else {
    j["auth_timeout"] = double(o.auth_timeout_ms) / 1000.0;
  }
  j["max_control_line"] = o.max_control_line;
  j["max_payload"] = o.max_payload;
  j["max_pending"] = o.max_pending;
  j["cluster"] = cluster_varz(srv);
  j["gateway"] = ojson::object();
  j["leaf"] = ojson::object();
  j["mqtt"] = ojson::object();
  j["websocket"] = ojson::object();
  ojson js = ojson::object();
  if (started.jetstream) {
    if (auto jsz = jetstream_json(srv, {})) {
      js["config"] = (*jsz)["config"];
      ojson stats;
      for (const char* k : {"memory", "storage", "reserved_memory", "reserved_storage", "accounts", "ha_assets", "api"})
        stats[k] = (*jsz)[k];
      js["stats"] = stats;
    }
    if (auto meta = meta_json(srv)) js["meta"] = *meta;
  }
  j["jetstream"] = js;
  if (started.tls.timeout_ms % 1000 == 0) {  // Go's float64 seconds: a whole one without a fraction
    j["tls_timeout"] = started.tls.timeout_ms / 1000;
  } else {
    j["tls_timeout"] = double(started.tls.timeout_ms) / 1000.0;
  }
  j["write_deadline"] = o.write_deadline_ms * 1'000'000;
  j["start"] = base::rfc3339_nano(srv.start_wall_ns());
  j["now"] = base::rfc3339_nano(now);
  j["uptime"] = uptime_text(now - srv.start_wall_ns());
  j["mem"] = rss_bytes();
  j["cores"] = sysconf(_SC_NPROCESSORS_ONLN);
  j["gomaxprocs"] = srv.shared().shard_count;
  j["cpu"] = cpu_percent(srv.start_wall_ns());
  shard_counters total;
  std::uint64_t subs = 0;
  for (const auto& s : snaps) {
    total.in_msgs += s.counters.in_msgs;
    total.out_msgs += s.counters.out_msgs;
    total.in_bytes += s.counters.in_bytes;
    total.out_bytes += s.counters.out_bytes;
    subs += s.subscriptions;
  }
  j["connections"] = srv.shared().connections.load();
  j["total_connections"] = srv.shared().total_connections.load();
  std::uint64_t routes = 0;
  for (const auto& s : snaps) routes += s.routes;
  j["routes"] = routes;
  j["remotes"] = routes;
  j["leafnodes"] = 0;
  j["in_msgs"] = total.in_msgs;
  j["out_msgs"] = total.out_msgs;
  j["in_bytes"] = total.in_bytes;
  j["out_bytes"] = total.out_bytes;
  j["slow_consumers"] = srv.shared().slow_consumers.load();
  j["subscriptions"] = subs;
  ojson rs = ojson::object();
  for (const auto& [k, v] : req_stats) rs[k] = v;
  j["http_req_stats"] = rs;
  j["config_load_time"] = base::rfc3339_nano(srv.config_load_wall_ns());
  if (!o.server_tags.empty()) j["tags"] = o.server_tags;
  if (const auto& auth = *srv.shared().live()->auth; auth.system_account != kGlobalAccount)
    j["system_account"] = auth.accounts[auth.system_account].name;
  (void)q;
  return json_reply(j);
}


http_reply monitor_jsz(server& srv, const http_query& q) {
  http_reply err;
  if (!bool_args_ok(q, {"accounts", "streams", "consumers", "config", "leader-only", "leader_only", "raft"}, err))
    return err;
  // leader-only: only the meta leader answers (a standalone server leads itself); nats-server's
  // error, which the system account's PING.JSZ turns into silence.
  if (truthy(q, "leader-only") || truthy(q, "leader_only")) {
    const bool leads = srv.shared().opts.jetstream &&
                       (!srv.shared().replication || srv.shared().replication->meta().self_leader);
    if (!leads) return bad_request("filtered response: not leader");
  }
  ojson j;
  j["server_id"] = srv.shared().server_id;
  j["now"] = base::rfc3339_nano(wall_now());
  if (!srv.shared().opts.jetstream) {  // nats-server's shape: the fields, all zero
    j["disabled"] = true;
    j["config"] = ojson{{"max_memory", 0}, {"max_storage", 0}};
    for (const char* k : {"memory", "storage", "reserved_memory", "reserved_storage", "accounts", "ha_assets"}) j[k] = 0;
    j["api"] = ojson{{"total", 0}, {"errors", 0}};
    for (const char* k : {"streams", "consumers", "messages", "bytes"}) j[k] = 0;
    return json_reply(j);
  }
  if (auto body = jetstream_json(srv, q)) {
    const auto meta = meta_json(srv);
    for (auto& [k, v] : body->items()) {
      if (k == "account_details" && meta) j["meta_cluster"] = *meta;  // nats-server's order
      j[k] = v;
    }
    if (meta && !j.contains("meta_cluster")) j["meta_cluster"] = *meta;
  }
  return json_reply(j);
}

http_reply monitor_healthz(server& srv, const http_query& q) {
  auto unavailable = [](const std::string& why) {
    ojson j;
    j["status"] = "unavailable";
    j["status_code"] = 503;
    j["error"] = why;
    return http_reply{503, "application/json", j.dump()};
  };
  http_reply err;
  if (!bool_args_ok(q, {"js-enabled-only", "js-enabled", "js-server-only"}, err)) return err;
  const bool js_on = srv.shared().opts.jetstream;
  const bool enabled_only = truthy(q, "js-enabled-only") || truthy(q, "js-enabled");
  const bool js_only = enabled_only || truthy(q, "js-server-only");
  if (js_only && !js_on) return unavailable("JetStream not enabled");
  if (srv.shared().lame_duck_since_ns.load() != 0) return unavailable("lame duck mode");
  // Every shard must answer: a stuck shard makes the server unhealthy.
  const auto snaps = snapshots(srv, {});
  if (snaps.size() != srv.shards().size()) return unavailable("a shard did not answer in time");
  if (enabled_only) return {200, "application/json", "{\"status\":\"ok\"}"};
  // Clustered JetStream: healthy only with a meta leader known (nats-server's check and text);
  // js-server-only stops there, before the streams.
  if (js_on && srv.shared().replication) {
    const meta_status m = srv.shared().replication->meta();
    if (!m.running || m.leader.empty()) return unavailable("JetStream has not established contact with a meta leader");
  }
  if (truthy(q, "js-server-only")) return {200, "application/json", "{\"status\":\"ok\"}"};
  auto stream = q.find("stream");
  if (js_on && stream != q.end() && !stream->second.empty()) {
    auto body = jetstream_json(srv, {{"streams", "true"}, {"consumers", "true"}});
    bool found = false, consumer_found = false;
    const auto consumer = q.find("consumer");
    const std::string account = q.count("account") ? q.at("account") : "$G";
    if (body && body->contains("account_details")) {
      for (const auto& acc : (*body)["account_details"]) {
        if (acc.value("name", "") != account) continue;  // each account has its own streams
        for (const auto& s : acc.value("stream_detail", ojson::array())) {
          if (s.value("name", "") != stream->second) continue;
          found = true;
          for (const auto& c : s.value("consumer_detail", ojson::array()))
            if (consumer != q.end() && c.value("name", "") == consumer->second) consumer_found = true;
        }
      }
    }
    const std::string& acc = account;
    if (!found) return unavailable(fmt::format("JetStream stream '{} > {}' could not be found", acc, stream->second));
    if (consumer != q.end() && !consumer->second.empty() && !consumer_found)
      return unavailable(fmt::format("JetStream consumer '{} > {} > {}' could not be found", acc, stream->second,
                                     consumer->second));
  }
  return {200, "application/json", "{\"status\":\"ok\"}"};
}

http_reply monitor_leafz(server& srv, const http_query&) {
  ojson j;
  j["server_id"] = srv.shared().server_id;
  j["now"] = base::rfc3339_nano(wall_now());
  j["leafnodes"] = 0;
  j["leafs"] = nullptr;
  return json_reply(j);
}

http_reply monitor_gatewayz(server& srv, const http_query&) {
  ojson j;
  j["server_id"] = srv.shared().server_id;
  j["now"] = base::rfc3339_nano(wall_now());
  j["outbound_gateways"] = ojson::object();
  j["inbound_gateways"] = ojson::object();
  return json_reply(j);
}

http_reply monitor_accountz(server& srv, const http_query&) {
  ojson j;
  j["server_id"] = srv.shared().server_id;
  j["now"] = base::rfc3339_nano(wall_now());
  const auto& auth = *srv.shared().live()->auth;
  j["system_account"] = auth.system_account != kGlobalAccount ? auth.accounts[auth.system_account].name : "";
  ojson names = ojson::array({"$G"});
  for (const auto& a : srv.shared().live()->auth->accounts)
    if (a.name != "$G") names.push_back(a.name);
  j["accounts"] = names;
  return json_reply(j);
}

http_reply monitor_accstatz(server& srv, const http_query& q) {
  shard_counters total;
  for (const auto& s : snapshots(srv, {})) {
    total.in_msgs += s.counters.in_msgs;
    total.out_msgs += s.counters.out_msgs;
    total.in_bytes += s.counters.in_bytes;
    total.out_bytes += s.counters.out_bytes;
  }
  ojson j;
  j["server_id"] = srv.shared().server_id;
  j["now"] = base::rfc3339_nano(wall_now());
  ojson list = ojson::array();
  const int conns = srv.shared().connections.load();
  if (conns > 0 || truthy(q, "unused")) {  // one account ($G) until accounts exist
    ojson a;
    a["acc"] = "$G";
    a["conns"] = conns;
    a["leafnodes"] = 0;
    a["total_conns"] = conns;
    a["sent"] = ojson{{"msgs", total.out_msgs}, {"bytes", total.out_bytes}};
    a["received"] = ojson{{"msgs", total.in_msgs}, {"bytes", total.in_bytes}};
    a["slow_consumers"] = srv.shared().slow_consumers.load();
    list.push_back(a);
  }
  j["account_statz"] = list;
  return json_reply(j);
}

}  // namespace core
