// Three peregrine-server processes with clustered JetStream (a meta group over routes), for
// the replicated-stream and replicated-consumer suites: started and torn down per test, with
// helpers to create R3 streams with libnats, ask $JS.API on any server, find a stream's leader
// and publish with retried sync PubAcks. Every wait polls with a bound.
#pragma once

#include <signal.h>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <array>
#include <cstdlib>
#include <iostream>
#include <map>
#include <utility>

#include "tests/integration/cluster_fixture.h"

namespace peregrine::test {

using json = nlohmann::ordered_json;

inline double timeout_mult() {
  const char* m = std::getenv("TIMEOUT_MULT");
  return m ? std::max(1.0, std::atof(m)) : 1.0;
}

inline std::chrono::milliseconds scaled(int ms) { return std::chrono::milliseconds(int(ms * timeout_mult())); }

class cluster_js_fixture : public ::testing::Test {
 protected:
  void SetUp() override {
    if (server_binary().empty()) GTEST_SKIP() << "PEREGRINE_SERVER_BIN not set";
    if (reference_server() && !runs_on_reference())
      GTEST_SKIP() << "uses $JS.API requests and /jsz fields of Peregrine's replication only";
    cport_.resize(std::size_t(nodes()));
    http_.resize(std::size_t(nodes()));
    for (int i = 0; i < nodes(); ++i) {
      cport_[i] = pick_free_port();
      http_[i] = pick_free_port();
    }
    const std::vector<int> all(cport_.begin(), cport_.end());
    for (int i = 0; i < nodes(); ++i)
      servers_.push_back(std::make_unique<server_process>(
          cluster_conf(std::string(1, char('A' + i)), cport_[i], all) +
          "jetstream { store_dir: \"@TMPDIR@/js\" }\nhttp_port: " + std::to_string(http_[i]) + "\n" + extra_conf() +
          server_conf(i)));
    for (auto& s : servers_) ASSERT_TRUE(s->start()) << s->error();
    ASSERT_TRUE(wait_meta_leader(scaled(15000))) << logs();
  }

  // More of every server's config (users, accounts), and of server i's alone (server_tags).
  virtual std::string extra_conf() const { return {}; }
  virtual std::string server_conf(int i) const {
    (void)i;
    return {};
  }
  // A suite that checks only what nats-server 2.9.10 does too runs against it as well.
  virtual bool runs_on_reference() const { return false; }
  static bool reference_server() { return server_binary().find("nats-server") != std::string::npos; }

  void TearDown() override {
    if (HasFailure()) std::cerr << logs();
    servers_.clear();
  }

  std::string logs() const {
    std::string out;
    for (std::size_t i = 0; i < servers_.size(); ++i)
      out += "---- server " + std::string(1, char('A' + i)) + " log ----\n" + servers_[i]->log();
    return out;
  }

  bool wait_meta_leader(std::chrono::milliseconds limit) {
    const auto deadline = clock_type::now() + limit;
    while (clock_type::now() < deadline) {
      int agree = 0;
      std::string leader;
      for (int i = 0; i < nodes(); ++i) {
        if (!servers_[i]->running()) continue;
        const json j = json::parse(http_get(http_[i], "/jsz"), nullptr, false);
        const std::string l = j.is_object() ? j.value("meta_cluster", json::object()).value("leader", "") : "";
        if (!l.empty() && (leader.empty() || l == leader)) {
          leader = l;
          ++agree;
        }
      }
      if (agree > nodes() / 2) return true;
      std::this_thread::sleep_for(50ms);
    }
    return false;
  }

  // A $JS.API request as JSON (an empty object on timeout).
  json api(natsConnection* nc, const std::string& subject, const std::string& body, int timeout_ms = 3000) {
    natsMsg* reply = nullptr;
    if (natsConnection_RequestString(&reply, nc, subject.c_str(), body.c_str(), timeout_ms) != NATS_OK)
      return json::object();
    json j = json::parse(data_of(reply), nullptr, false);
    natsMsg_Destroy(reply);
    return j.is_object() ? j : json::object();
  }

  // A $JS.API request on server i, retried while the cluster answers 10008 or nothing.
  json api_retry(int i, const std::string& subject, const std::string& body) {
    auto nc = connect(servers_[i]->url());
    if (!nc) return json::object();
    json r;
    const auto deadline = clock_type::now() + scaled(10000);
    while (clock_type::now() < deadline) {
      r = api(nc.get(), subject, body);
      if (!r.empty() && r.value("error", json::object()).value("err_code", 0) != 10008) break;
      std::this_thread::sleep_for(100ms);
    }
    return r;
  }

  json consumer_info(int i, const std::string& stream, const std::string& name) {
    auto nc = connect(servers_[i]->url());
    if (!nc) return json::object();
    return api(nc.get(), "$JS.API.CONSUMER.INFO." + stream + "." + name, "");
  }

  // STREAM.CREATE with libnats on server i, retried while the cluster answers 10008.
  void create_r3(int i, const std::string& name, const std::string& subject) {
    auto nc = connect(servers_[i]->url());
    ASSERT_TRUE(nc);
    jsCtx* js = nullptr;
    ASSERT_EQ(natsConnection_JetStream(&js, nc.get(), nullptr), NATS_OK);
    jsStreamConfig cfg;
    jsStreamConfig_Init(&cfg);
    cfg.Name = name.c_str();
    const char* subjects[] = {subject.c_str()};
    cfg.Subjects = subjects;
    cfg.SubjectsLen = 1;
    cfg.Replicas = 3;
    cfg.Storage = js_FileStorage;
    jsStreamInfo* si = nullptr;
    jsErrCode jerr = jsErrCode(0);
    natsStatus s = NATS_ERR;
    const auto deadline = clock_type::now() + scaled(10000);
    while (clock_type::now() < deadline) {
      s = js_AddStream(&si, js, &cfg, nullptr, &jerr);
      if (s == NATS_OK || (jerr != 10008 && s != NATS_TIMEOUT)) break;
      std::this_thread::sleep_for(100ms);
    }
    ASSERT_EQ(s, NATS_OK) << "err_code " << int(jerr) << " " << nats_GetLastError(nullptr);
    ASSERT_NE(si->Cluster, nullptr);
    EXPECT_STREQ(si->Cluster->Name, "pgtest");
    ASSERT_NE(si->Cluster->Leader, nullptr);
    EXPECT_EQ(si->Cluster->ReplicasLen, 2) << "the leader is not among the replicas";
    EXPECT_EQ(si->Config->Replicas, 3);
    jsStreamInfo_Destroy(si);
    jsCtx_Destroy(js);
  }

  // StreamInfo asked on server i (an empty object on timeout).
  json info(int i, const std::string& name) {
    auto nc = connect(servers_[i]->url());
    if (!nc) return json::object();
    return api(nc.get(), "$JS.API.STREAM.INFO." + name, "");
  }

  // The leader every asked server reports, once they agree and it is not `not_this`.
  std::string stream_leader(const std::string& name, std::chrono::milliseconds limit, const std::string& not_this = {}) {
    const auto deadline = clock_type::now() + limit;
    while (clock_type::now() < deadline) {
      std::set<std::string> seen;
      for (int i = 0; i < nodes(); ++i) {
        if (!servers_[i]->running()) continue;
        seen.insert(info(i, name).value("cluster", json::object()).value("leader", ""));
      }
      if (seen.size() == 1 && !seen.begin()->empty() && *seen.begin() != not_this) return *seen.begin();
      std::this_thread::sleep_for(50ms);
    }
    return {};
  }

  // A sync publish (request), retried until acknowledged or the limit passes; 0 on failure.
  std::uint64_t publish(natsConnection* nc, const std::string& subject, const std::string& data,
                        const std::string& msg_id, std::chrono::milliseconds limit) {
    const auto deadline = clock_type::now() + limit;
    while (clock_type::now() < deadline) {
      natsMsg* m = nullptr;
      natsMsg* reply = nullptr;
      natsMsg_Create(&m, subject.c_str(), nullptr, data.data(), int(data.size()));
      natsMsgHeader_Set(m, "Nats-Msg-Id", msg_id.c_str());
      const natsStatus s = natsConnection_RequestMsg(&reply, nc, m, 500);
      natsMsg_Destroy(m);
      if (s == NATS_OK) {
        const json ack = json::parse(data_of(reply), nullptr, false);
        natsMsg_Destroy(reply);
        if (ack.is_object() && ack.contains("seq") && !ack.contains("error")) return ack["seq"].get<std::uint64_t>();
      }
      std::this_thread::sleep_for(20ms);
    }
    return 0;
  }

  // Every acknowledged message read back through server i (MSG.GET reaches the leader).
  void expect_all(int i, const std::string& name, const std::map<std::uint64_t, std::string>& acked) {
    auto nc = connect(servers_[i]->url());
    ASSERT_TRUE(nc);
    for (const auto& [seq, data] : acked) {
      // A request can be lost while a restarted server's duplicate routes are resolved (core
      // NATS is at most once): a timeout is asked again; what is checked is the stored data.
      json r;
      for (int attempt = 0; attempt < 3 && r.empty(); ++attempt)
        r = api(nc.get(), "$JS.API.STREAM.MSG.GET." + name, R"({"seq":)" + std::to_string(seq) + "}");
      ASSERT_TRUE(r.contains("message")) << "seq " << seq << " via " << char('A' + i) << ": " << r.dump();
      EXPECT_EQ(r["message"].value("seq", 0u), seq);
      EXPECT_EQ(base64_decode(r["message"].value("data", "")), data) << "seq " << seq;
    }
  }

  // One publish with a Nats-Msg-Id as a request: its PubAck (an empty object on timeout).
  json publish_with_id(natsConnection* nc, const std::string& subject, const std::string& data,
                       const std::string& msg_id) {
    natsMsg* m = nullptr;
    natsMsg* reply = nullptr;
    natsMsg_Create(&m, subject.c_str(), nullptr, data.data(), int(data.size()));
    natsMsgHeader_Set(m, "Nats-Msg-Id", msg_id.c_str());
    const natsStatus st = natsConnection_RequestMsg(&reply, nc, m, 3000);
    natsMsg_Destroy(m);
    if (st != NATS_OK) return json::object();
    json ack = json::parse(data_of(reply), nullptr, false);
    natsMsg_Destroy(reply);
    return ack.is_object() ? ack : json::object();
  }

  // The state of `name` in server i's own /jsz (its replica's, for a replicated stream).
  json replica_state(int i, const std::string& name) {
    const json j = json::parse(http_get(http_[i], "/jsz?streams=true"), nullptr, false);
    if (!j.is_object() || !j.contains("account_details")) return json::object();
    for (const auto& sd : j["account_details"][0].value("stream_detail", json::array()))
      if (sd.value("name", "") == name) return sd.value("state", json::object());
    return json::object();
  }

  int index_of(const std::string& server) const { return server.empty() ? -1 : server[0] - 'A'; }

  // Servers in the cluster (A, B, C...); three unless a suite says otherwise.
  virtual int nodes() const { return 3; }

  std::vector<int> cport_, http_;
  std::vector<std::unique_ptr<server_process>> servers_;
};

// The same with one client connection (and JetStream context) on each of the three servers.
class cluster_js_clients : public cluster_js_fixture {
 protected:
  void SetUp() override {
    cluster_js_fixture::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    for (int i = 0; i < 3; ++i) {
      nc_[i] = connect(servers_[i]->url());
      ASSERT_TRUE(nc_[i]);
      ASSERT_EQ(natsConnection_JetStream(&js_[i], nc_[i].get(), nullptr), NATS_OK);
    }
  }

  void TearDown() override {
    for (auto*& js : js_)
      if (js) jsCtx_Destroy(std::exchange(js, nullptr));
    for (auto& nc : nc_) nc.reset();
    cluster_js_fixture::TearDown();
  }

  using cluster_js_fixture::api;
  // A $JS.API request through server i's connection (an empty object on timeout).
  json api(int i, const std::string& subject, const std::string& body, int timeout_ms = 3000) {
    return api(nc_[i].get(), subject, body, timeout_ms);
  }

  std::array<nc_ptr, 3> nc_;
  std::array<jsCtx*, 3> js_{};
};

}  // namespace peregrine::test
