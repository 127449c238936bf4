// HTTP monitoring: the endpoints' JSON field names and order against nats-server 2.9.10's
// (both servers run side by side, same requests, differences listed below and in the
// README), connz/subsz query options and their errors, healthz, http_base_path.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <thread>

#include "tests/integration/ops_harness.h"
#include "tests/integration/raw_client.h"
#include "tests/integration/server_process.h"

namespace peregrine::test {
namespace {

using namespace std::chrono_literals;
using ojson = nlohmann::ordered_json;

std::string reference_binary() {
  if (const char* e = std::getenv("NATS_SERVER_BIN"); e && *e) return e;
  for (const char* p : {"/usr/sbin/nats-server", "/usr/bin/nats-server", "/usr/local/bin/nats-server"})
    if (access(p, X_OK) == 0) return p;
  return {};
}

// Every key path in document order ("connections[].cid"); arrays contribute their first
// element. Paths in `opaque` are listed but not descended into.
void flatten(const ojson& j, const std::string& path, const std::set<std::string>& opaque,
             std::vector<std::string>& out) {
  if (j.is_object()) {
    for (const auto& [k, v] : j.items()) {
      const std::string p = path.empty() ? k : path + "." + k;
      out.push_back(p);
      if (!opaque.count(p)) flatten(v, p, opaque, out);
    }
  } else if (j.is_array() && !j.empty()) {
    flatten(j[0], path + "[]", opaque, out);
  }
}

struct monitored {
  std::unique_ptr<ops_server> srv;
  int nats = 0;
  int http = 0;
};

class monitor_test : public ::testing::Test {
 protected:
  void SetUp() override {
    if (server_binary().empty()) GTEST_SKIP() << "no server binary";
    base_ = make_test_dir(::testing::UnitTest::GetInstance()->current_test_info()->name());
  }
  void TearDown() override {
    for (auto* m : {&a_, &b_})
      if (HasFailure() && m->srv) std::cerr << "---- log ----\n" << m->srv->log() << "----\n";
    a_.srv.reset();
    b_.srv.reset();
    std::error_code ec;
    std::filesystem::remove_all(base_, ec);
  }
  static bool launch(monitored& m, const std::filesystem::path& dir, const std::string& bin, const std::string& extra) {
    std::filesystem::create_directories(dir / "ports");
    m.srv = std::make_unique<ops_server>(dir, bin);
    m.srv->write_config("listen: \"127.0.0.1:-1\"\nhttp: \"127.0.0.1:-1\"\nports_file_dir: \"" + (dir / "ports").string() +
                        "\"\nserver_tags: [\"t:1\"]\n" + extra);
    if (!m.srv->start()) return false;
    m.nats = m.srv->port_from_ports_file("nats");
    m.http = m.srv->port_from_ports_file("monitoring");
    return m.nats > 0 && m.http > 0;
  }
  static ojson get(const monitored& m, const std::string& path) {
    const http_result r = http_get(m.http, path);
    EXPECT_EQ(r.status, 200) << path << ": " << r.body;
    return ojson::parse(r.body, nullptr, false);
  }
  // A request over a raw connection; returns the reply payload.
  static std::string request(raw_client& c, const std::string& subject, const std::string& body) {
    c.send("PUB " + subject + " _R." + subject + " " + std::to_string(body.size()) + "\r\n" + body + "\r\n");
    for (;;) {
      auto line = c.read_line(5s);
      if (!line) return {};
      if (line->rfind("MSG ", 0) != 0) continue;
      const auto sp = line->rfind(' ');
      return c.read_bytes(std::size_t(std::stoul(line->substr(sp + 1))) + 2, 5s).value_or("");
    }
  }

  std::filesystem::path base_;
  monitored a_, b_;
};

TEST_F(monitor_test, json_fields_and_order_match_nats_server) {
  const std::string ref = reference_binary();
  if (ref.empty()) GTEST_SKIP() << "nats-server not installed";
  const std::string js = "jetstream { store_dir: \"@DIR@\" }\n";
  auto js_at = [&](const std::filesystem::path& d) {
    std::string s = js;
    s.replace(s.find("@DIR@"), 5, (d / "js").string());
    return s;
  };
  ASSERT_TRUE(launch(a_, base_ / "peregrine", server_binary(), js_at(base_ / "peregrine")));
  ASSERT_TRUE(launch(b_, base_ / "nats", ref, js_at(base_ / "nats")));

  // The same traffic on both: one named client with a plain and a queue subscription that
  // received its own message.
  raw_client ca, cb;
  const std::string connect = "CONNECT {\"verbose\":false,\"name\":\"mon\",\"lang\":\"raw\",\"version\":\"1.0\"}\r\n";
  for (auto pr : {std::pair{&ca, &a_}, std::pair{&cb, &b_}}) {
    ASSERT_TRUE(pr.first->open(pr.second->nats, connect));
    pr.first->send("SUB foo 1\r\nSUB bar 2\r\nSUB baz q 3\r\nPUB foo 5\r\nhello\r\n");
    ASSERT_TRUE(pr.first->read_line(5s).value_or("").rfind("MSG foo 1 5", 0) == 0);
    pr.first->read_line(5s);
    ASSERT_TRUE(pr.first->ping_pong());
  }
  struct endpoint {
    std::string path;
    std::set<std::string> opaque;      // compared by presence only
    std::set<std::string> nats_only;   // fields Peregrine does not have (explained below)
    std::set<std::string> ours_only;   // fields nats-server 2.9.10 does not have
    std::vector<std::string> same_values;
  };
  const std::vector<endpoint> endpoints = {
      // varz: git_commit is empty (so omitted) in Debian's build.
      {"/varz", {"http_req_stats", "jetstream"}, {}, {"git_commit"},
       {"proto", "max_connections", "ping_interval", "ping_max", "http_host", "http_port", "http_base_path",
        "https_port", "auth_timeout", "max_control_line", "max_payload", "max_pending", "cluster", "gateway", "leaf",
        "mqtt", "websocket", "tls_timeout", "write_deadline", "connections", "total_connections", "routes", "remotes",
        "leafnodes", "in_msgs", "out_msgs", "in_bytes", "out_bytes", "slow_consumers", "tags", "system_account"}},
      {"/connz?subs=1", {}, {}, {}, {"num_connections", "total", "offset", "limit"}},
      {"/connz?subs=detail", {"connections[].subscriptions_list_detail"}, {}, {}, {"num_connections", "total"}},
      {"/subsz?subs=1&test=foo", {}, {}, {}, {"total", "offset", "limit"}},
      {"/routez", {}, {}, {}, {"num_routes", "routes"}},
      {"/leafz", {}, {}, {}, {"leafnodes", "leafs"}},
      {"/gatewayz", {}, {}, {}, {"outbound_gateways", "inbound_gateways"}},
      {"/accountz", {}, {}, {}, {}},
      {"/accstatz", {}, {}, {}, {"account_statz"}},
      {"/jsz", {}, {}, {}, {}},
  };
  for (const auto& e : endpoints) {
    const ojson ours = get(a_, e.path), theirs = get(b_, e.path);
    std::vector<std::string> ko, kt;
    flatten(ours, "", e.opaque, ko);
    flatten(theirs, "", e.opaque, kt);
    // Only the fields both have (so the test also holds with nats-server under test).
    auto one_sided = [&](const std::string& k) { return e.ours_only.count(k) > 0 || e.nats_only.count(k) > 0; };
    std::erase_if(ko, one_sided);
    std::erase_if(kt, one_sided);
    EXPECT_EQ(ko, kt) << e.path << "\nours:   " << ours.dump() << "\nnats:   " << theirs.dump();
    for (const auto& k : e.same_values) EXPECT_EQ(ours[k], theirs[k]) << e.path << " " << k;
  }
  // The connection as both servers describe it.
  const ojson co = get(a_, "/connz?subs=1")["connections"][0], ct = get(b_, "/connz?subs=1")["connections"][0];
  for (const char* k : {"kind", "type", "ip", "pending_bytes", "in_msgs", "out_msgs", "in_bytes", "out_bytes",
                        "subscriptions", "name", "lang", "version"})
    EXPECT_EQ(co[k], ct[k]) << "connz " << k;
  // rtt in Go's duration text, e.g. "441µs" or "1.234567ms".
  for (const ojson* c : {&co, &ct}) {
    const std::string rtt = (*c)["rtt"].get<std::string>();
    EXPECT_TRUE(rtt.size() > 2 && (rtt.ends_with("\u00b5s") || rtt.ends_with("ms") || rtt.ends_with("ns"))) << rtt;
  }
  // A queue subscription's detail (list order is a Go map's in nats-server: find it by sid).
  auto queue_sub = [&](const monitored& m) {
    const ojson connz = get(m, "/connz?subs=detail");
    for (const auto& d : connz["connections"][0]["subscriptions_list_detail"])
      if (d["sid"] == "3") return d;
    return ojson();
  };
  std::vector<std::string> qo, qt;
  flatten(queue_sub(a_), "", {}, qo);
  flatten(queue_sub(b_), "", {}, qt);
  EXPECT_EQ(qo, qt);
  EXPECT_EQ(queue_sub(a_)["qgroup"], "q");
  const ojson so = get(a_, "/subsz?subs=1&test=foo")["subscriptions_list"][0];
  const ojson st = get(b_, "/subsz?subs=1&test=foo")["subscriptions_list"][0];
  for (const char* k : {"account", "subject", "sid", "msgs"}) EXPECT_EQ(so[k], st[k]) << "subsz " << k;

  // JetStream: a stream with a message and a durable consumer on both.
  for (auto* c : {&ca, &cb}) {
    c->send("SUB _R.> 9\r\n");
    EXPECT_NE(request(*c, "$JS.API.STREAM.CREATE.S1", "{\"name\":\"S1\",\"subjects\":[\"s1.>\"]}").find("\"S1\""),
              std::string::npos);
    EXPECT_NE(request(*c, "$JS.API.CONSUMER.DURABLE.CREATE.S1.C1",
                      "{\"stream_name\":\"S1\",\"config\":{\"durable_name\":\"C1\",\"ack_policy\":\"explicit\"}}")
                  .find("\"C1\""),
              std::string::npos);
    EXPECT_NE(request(*c, "s1.a", "hi").find("\"seq\":1"), std::string::npos);
  }
  const std::set<std::string> js_opaque = {"account_details[].stream_detail[].config", "account_details[].stream_detail[].state",
                                           "account_details[].stream_detail[].consumer_detail"};
  for (const std::string path : {"/jsz", "/jsz?accounts=true&streams=true&consumers=true&config=true"}) {
    const ojson ours = get(a_, path), theirs = get(b_, path);
    std::vector<std::string> ko, kt;
    flatten(ours, "", js_opaque, ko);
    flatten(theirs, "", js_opaque, kt);
    EXPECT_EQ(ko, kt) << path << "\nours: " << ours.dump() << "\nnats: " << theirs.dump();
    for (const char* k : {"streams", "consumers", "messages", "accounts", "ha_assets"}) EXPECT_EQ(ours[k], theirs[k]) << path << " " << k;
  }
  const ojson hz = get(a_, "/healthz"), hzt = get(b_, "/healthz");
  EXPECT_EQ(hz, hzt);
}

TEST_F(monitor_test, connz_options_sort_page_filter_and_closed_connections) {
  ASSERT_TRUE(launch(a_, base_ / "s", server_binary(), ""));
  std::vector<std::unique_ptr<raw_client>> cs;
  for (int i = 0; i < 3; ++i) {
    cs.push_back(std::make_unique<raw_client>());
    ASSERT_TRUE(cs.back()->open(a_.nats, "CONNECT {\"verbose\":false,\"name\":\"c" + std::to_string(i) + "\"}\r\n"));
    std::string subs;
    for (int s = 0; s <= i; ++s) subs += "SUB s" + std::to_string(s) + " " + std::to_string(s + 1) + "\r\n";
    cs.back()->send(subs);
    ASSERT_TRUE(cs.back()->ping_pong());
  }
  ojson all = get(a_, "/connz");
  ASSERT_EQ(all["total"], 3);
  EXPECT_EQ(all["limit"], 1024);
  ojson by_subs = get(a_, "/connz?sort=subs");
  EXPECT_EQ(by_subs["connections"][0]["name"], "c2");
  EXPECT_EQ(by_subs["connections"][2]["name"], "c0");
  ojson page = get(a_, "/connz?sort=subs&limit=1&offset=1");
  EXPECT_EQ(page["num_connections"], 1);
  EXPECT_EQ(page["total"], 3);
  EXPECT_EQ(page["offset"], 1);
  EXPECT_EQ(page["limit"], 1);
  EXPECT_EQ(page["connections"][0]["name"], "c1");
  const auto cid = by_subs["connections"][0]["cid"].get<std::uint64_t>();
  ojson one = get(a_, "/connz?subs=1&cid=" + std::to_string(cid));
  ASSERT_EQ(one["num_connections"], 1);
  EXPECT_EQ(one["connections"][0]["subscriptions_list"].size(), 3u);

  cs[0].reset();  // c0 leaves
  ASSERT_TRUE(eventually([&] { return get(a_, "/connz?state=closed")["total"] == 1; }, 5s));
  ojson closed = get(a_, "/connz?state=closed");
  EXPECT_EQ(closed["connections"][0]["name"], "c0");
  EXPECT_EQ(closed["connections"][0]["reason"], "Client Closed");
  EXPECT_TRUE(closed["connections"][0].contains("stop"));
  EXPECT_EQ(get(a_, "/connz?state=all")["total"], 3);

  auto bad = [&](const std::string& path, const std::string& text) {
    const http_result r = http_get(a_.http, path);
    EXPECT_EQ(r.status, 400) << path;
    EXPECT_EQ(r.body, text) << path;
  };
  bad("/connz?sort=bogus", "invalid sorting option: bogus");
  bad("/connz?state=bogus", "Error decoding state for bogus");
  bad("/connz?cid=abc", "Error decoding uint64 for 'cid': strconv.ParseUint: parsing \"abc\": invalid syntax");
  bad("/subsz?subs=1&test=foo..bar", "invalid test subject, must be valid publish subject: foo..bar");
  bad("/connz?limit=abc", "Error decoding int for 'limit': strconv.Atoi: parsing \"abc\": invalid syntax");
  bad("/connz?sort=stop", "sort by stop only valid on closed connections");
  bad("/connz?subs=foo", "Error decoding boolean for 'subs': strconv.ParseBool: parsing \"foo\": invalid syntax");
  bad("/jsz?accounts=x", "Error decoding boolean for 'accounts': strconv.ParseBool: parsing \"x\": invalid syntax");
  EXPECT_EQ(get(a_, "/connz?state=ALL")["total"], 3);
  EXPECT_EQ(http_get(a_.http, "/varz/nope").status, 404);
}

TEST_F(monitor_test, varz_counts_traffic_and_subsz_filters_by_test_subject) {
  ASSERT_TRUE(launch(a_, base_ / "s", server_binary(), ""));
  const ojson before = get(a_, "/subsz");
  raw_client sub, pub;
  ASSERT_TRUE(sub.open(a_.nats));
  ASSERT_TRUE(pub.open(a_.nats));
  sub.send("SUB a.* 1\r\nSUB b 2\r\n");
  ASSERT_TRUE(sub.ping_pong());
  pub.send("PUB a.x 3\r\nabc\r\nPUB a.y 2\r\nde\r\nPUB nobody 1\r\nz\r\n");
  ASSERT_TRUE(pub.ping_pong());
  for (int i = 0; i < 2; ++i) {
    ASSERT_EQ(sub.read_line(5s).value_or("").rfind("MSG a.", 0), 0u);
    sub.read_line(5s);
  }
  const ojson v = get(a_, "/varz");
  EXPECT_EQ(v["in_msgs"], 3);
  EXPECT_EQ(v["in_bytes"], 6);
  EXPECT_EQ(v["out_msgs"], 2);
  EXPECT_EQ(v["out_bytes"], 5);
  EXPECT_EQ(v["connections"], 2);
  EXPECT_EQ(v["total_connections"], 2);
  const ojson acc = get(a_, "/accstatz")["account_statz"][0];
  EXPECT_EQ(acc["acc"], "$G");
  EXPECT_EQ(acc["conns"], 2);
  EXPECT_EQ(acc["received"]["msgs"], 3);
  EXPECT_EQ(acc["sent"]["msgs"], 2);
  // Relative to the start: nats-server also counts its system account's subscriptions.
  const ojson stats = get(a_, "/subsz");
  auto delta = [&](const char* k) { return stats[k].get<long>() - before[k].get<long>(); };
  EXPECT_EQ(delta("num_subscriptions"), 2);
  EXPECT_GE(delta("num_inserts"), 2);
  EXPECT_GE(delta("num_matches"), 3);  // the three publishes
  EXPECT_GE(stats["max_fanout"].get<long>(), 1);
  const ojson s = get(a_, "/subsz?subs=1&test=a.z");
  ASSERT_EQ(s["total"], 1);
  EXPECT_EQ(s["subscriptions_list"][0]["subject"], "a.*");
}

TEST_F(monitor_test, accounts_show_in_connz_subsz_and_accountz) {
  const std::string ref = reference_binary();
  const std::string conf = "accounts { A: { users: [ {user: a, password: pa} ] } }\n"
                           "authorization { users: [ {user: g, password: pg} ] }\n";
  ASSERT_TRUE(launch(a_, base_ / "peregrine", server_binary(), conf));
  if (!ref.empty()) {
    ASSERT_TRUE(launch(b_, base_ / "nats", ref, conf));
  }
  for (monitored* m : {&a_, &b_}) {
    if (!m->srv) continue;
    raw_client ca, cg;
    ASSERT_TRUE(ca.open(m->nats, "CONNECT {\"verbose\":false,\"user\":\"a\",\"pass\":\"pa\"}\r\n"));
    ASSERT_TRUE(ca.send("SUB in.a 1\r\n"));
    ASSERT_TRUE(ca.ping_pong());
    ASSERT_TRUE(cg.open(m->nats, "CONNECT {\"verbose\":false,\"user\":\"g\",\"pass\":\"pg\"}\r\n"));
    ASSERT_TRUE(cg.ping_pong());
    const ojson connz = get(*m, "/connz?auth=1");
    int seen = 0;
    for (const auto& c : connz["connections"]) {
      const std::string user = c.value("authorized_user", "");
      if (user == "a") {
        ++seen;
        EXPECT_EQ(c.value("account", ""), "A");
        // nats-server puts the account right after authorized_user.
        std::vector<std::string> keys;
        for (auto it = c.begin(); it != c.end(); ++it) keys.push_back(it.key());
        EXPECT_EQ(keys.back(), "account");
        EXPECT_EQ(keys[keys.size() - 2], "authorized_user");
      } else if (user == "g") {
        ++seen;
        EXPECT_FALSE(c.contains("account")) << "the global account is not shown";
      }
    }
    EXPECT_EQ(seen, 2);
    const ojson accountz = get(*m, "/accountz");
    std::set<std::string> names;
    for (const auto& n : accountz["accounts"]) names.insert(n.get<std::string>());
    EXPECT_TRUE(names.count("$G") && names.count("A")) << accountz.dump();
    const ojson subsz = get(*m, "/subsz?subs=1&test=in.a");
    bool found = false;
    for (const auto& s : subsz["subscriptions_list"])
      if (s.value("subject", "") == "in.a") found = s.value("account", "") == "A";
    EXPECT_TRUE(found) << subsz.dump();
  }
}

TEST_F(monitor_test, healthz_and_base_path) {
  ASSERT_TRUE(launch(a_, base_ / "s", server_binary(), "http_base_path: \"/mon\"\n"));
  EXPECT_EQ(http_get(a_.http, "/varz").status, 404);
  const http_result h = http_get(a_.http, "/mon/healthz");
  EXPECT_EQ(h.status, 200);
  EXPECT_EQ(h.body, "{\"status\":\"ok\"}");
  EXPECT_EQ(http_get(a_.http, "/mon/varz").status, 200);
  EXPECT_EQ(http_get(a_.http, "/mon").content_type.rfind("text/html", 0), 0u);
  // Beyond 2.9.10 (which answers ok): with JetStream off, js-enabled-only is unhealthy, as in
  // later nats-server releases.
  const http_result js = http_get(a_.http, "/mon/healthz?js-enabled-only=true");
  if (server_binary().find("nats-server") == std::string::npos) {
    EXPECT_EQ(js.status, 503);
    const ojson j = ojson::parse(js.body, nullptr, false);
    EXPECT_EQ(j["status"], "unavailable");
    EXPECT_EQ(j["status_code"], 503);
    EXPECT_EQ(j["error"], "JetStream not enabled");
  }
}

// Beyond nats-server (which has no /metrics): Prometheus text with server, shard, stream and
// consumer series and the PubAck latency histogram.
TEST_F(monitor_test, metrics_in_prometheus_text) {
  if (server_binary().find("nats-server") != std::string::npos) GTEST_SKIP() << "nats-server has no /metrics";
  ASSERT_TRUE(launch(a_, base_ / "s", server_binary(), "jetstream { store_dir: \"" + (base_ / "s" / "js").string() + "\" }\n"));
  raw_client c;
  ASSERT_TRUE(c.open(a_.nats));
  c.send("SUB _R.> 9\r\n");
  ASSERT_NE(request(c, "$JS.API.STREAM.CREATE.M1", "{\"name\":\"M1\",\"subjects\":[\"m1.>\"]}").find("\"M1\""), std::string::npos);
  ASSERT_NE(request(c, "$JS.API.CONSUMER.DURABLE.CREATE.M1.D1",
                    "{\"stream_name\":\"M1\",\"config\":{\"durable_name\":\"D1\",\"ack_policy\":\"explicit\"}}")
                .find("\"D1\""),
            std::string::npos);
  for (int i = 1; i <= 3; ++i)
    ASSERT_NE(request(c, "m1.x", "abc").find("\"seq\":" + std::to_string(i)), std::string::npos);
  const http_result r = http_get(a_.http, "/metrics");
  ASSERT_EQ(r.status, 200);
  EXPECT_EQ(r.content_type.rfind("text/plain; version=0.0.4", 0), 0u) << r.content_type;
  std::map<std::string, std::string> samples;
  std::istringstream lines(r.body);
  for (std::string line; std::getline(lines, line);) {
    if (line.empty() || line[0] == '#') continue;
    const auto sp = line.rfind(' ');
    ASSERT_NE(sp, std::string::npos) << line;
    samples[line.substr(0, sp)] = line.substr(sp + 1);
  }
  EXPECT_EQ(samples["peregrine_connections"], "1");
  EXPECT_EQ(samples["peregrine_stream_messages{stream=\"M1\"}"], "3");
  EXPECT_EQ(samples["peregrine_stream_puback_latency_seconds_count{stream=\"M1\"}"], "3");
  EXPECT_EQ(samples["peregrine_stream_puback_latency_seconds_bucket{stream=\"M1\",le=\"+Inf\"}"], "3");
  EXPECT_EQ(samples["peregrine_consumer_num_pending{stream=\"M1\",consumer=\"D1\"}"], "3");
  EXPECT_EQ(samples["peregrine_consumer_ack_latency_seconds_count{stream=\"M1\",consumer=\"D1\"}"], "0");
  EXPECT_TRUE(samples.count("peregrine_shard_in_msgs_total{shard=\"0\"}"));
  EXPECT_TRUE(samples.count("peregrine_shard_ring_depth{shard=\"0\"}"));
  EXPECT_GE(std::stoi(samples["peregrine_shard_in_msgs_total{shard=\"0\"}"]), 5);
  ASSERT_TRUE(samples.count("peregrine_shard_uring_completions_total{shard=\"0\"}"));
  if (a_.srv->log_has("io_uring transport")) {  // not on the epoll fallback
    EXPECT_GT(std::stod(samples["peregrine_shard_uring_completions_total{shard=\"0\"}"]), 0);
  }
}


// The system account's worker sleeps while nobody listens to its events (issue 12): an idle
// server with a system account runs nothing on its shards but what the scrapes themselves cost
// (one call each); a CONNS listener still gets its event at once, and then, while no client comes
// or goes, the shards are not asked for connection counts either. Main's old worker asked shard 0
// every second, and every shard every second once someone listened.
TEST_F(monitor_test, idle_system_account_wakes_no_shard) {
  if (server_binary().find("nats-server") != std::string::npos) GTEST_SKIP() << "nats-server has no /metrics";
  ASSERT_TRUE(launch(a_, base_ / "s", server_binary(),
                     "accounts { $SYS { users: [ {user: sys, password: ps} ] }\n"
                     "           A { users: [ {user: a, password: pa} ] } }\n"));
  // shard -> peregrine_shard_calls_total
  auto calls = [&] {
    std::map<std::string, long> out;
    const http_result r = http_get(a_.http, "/metrics");
    std::istringstream lines(r.body);
    const std::string name = "peregrine_shard_calls_total{shard=\"";
    for (std::string line; std::getline(lines, line);)
      if (line.rfind(name, 0) == 0) out[line.substr(name.size(), line.find('"', name.size()) - name.size())] =
                                        std::stol(line.substr(line.rfind(' ') + 1));
    return out;
  };
  // Over a quiet window each shard ran only what a scrape itself costs (measured by a second
  // scrape right after: one snapshot per shard, and the services' metrics on shard 0).
  auto quiet_for = [&](std::chrono::milliseconds window, std::string& detail) {
    const auto before = calls();
    std::this_thread::sleep_for(window);  // absence of wakes: only a span of time shows it
    const auto after = calls();
    const auto again = calls();
    detail.clear();
    bool quiet = !before.empty() && before.size() == after.size() && after.size() == again.size();
    for (const auto& [shard, n] : after) {
      const long d = n - (before.count(shard) ? before.at(shard) : 0);
      const long scrape = (again.count(shard) ? again.at(shard) : 0) - n;
      detail += "shard " + shard + ": +" + std::to_string(d) + " over the window, +" + std::to_string(scrape) +
                " for a scrape; ";
      quiet = quiet && d == scrape && scrape > 0;
    }
    return quiet;
  };
  std::string detail;
  // Start-up asks once who listens; then the server is idle. A loaded machine gets three tries.
  bool quiet = false;
  for (int i = 0; i < 3 && !quiet; ++i) quiet = quiet_for(3s, detail);
  EXPECT_TRUE(quiet) << "with nobody listening: " << detail;

  raw_client sys, a;
  ASSERT_TRUE(sys.open(a_.nats, "CONNECT {\"verbose\":false,\"user\":\"sys\",\"pass\":\"ps\"}\r\n"));
  ASSERT_TRUE(sys.send("SUB $SYS.ACCOUNT.A.SERVER.CONNS 1\r\n"));
  ASSERT_TRUE(sys.ping_pong());
  ASSERT_TRUE(a.open(a_.nats, "CONNECT {\"verbose\":false,\"user\":\"a\",\"pass\":\"pa\"}\r\n"));
  ASSERT_TRUE(a.ping_pong());
  std::optional<std::string> line;
  while ((line = sys.read_line(5s)) && line->rfind("MSG $SYS.ACCOUNT.A.SERVER.CONNS 1 ", 0) != 0) {
  }
  ASSERT_TRUE(line) << "no CONNS event for A";
  const auto body = sys.read_line(5s);
  ASSERT_TRUE(body);
  const ojson ev = ojson::parse(*body, nullptr, false);
  EXPECT_EQ(ev.value("acc", ""), "A") << *body;
  EXPECT_EQ(ev.value("conns", -1), 1) << *body;
  quiet = false;
  for (int i = 0; i < 3 && !quiet; ++i) quiet = quiet_for(3s, detail);
  EXPECT_TRUE(quiet) << "with a CONNS listener and no client coming or going: " << detail;
}

}  // namespace
}  // namespace peregrine::test
