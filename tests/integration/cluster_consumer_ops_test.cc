// The consumer API calls that change a replicated (R3) consumer after its create, on three
// real peregrine-server processes, each sent through a server that does not lead the
// consumer: PAUSE (and its advisory), UNPIN of a pinned_client priority group, RESET (2.14) and
// a config update (CREATE of an existing consumer). After a CONSUMER.LEADER.STEPDOWN the new
// leader still has the paused / reset / updated state, and deliveries follow it. Answers as a
// standalone server gives them (js_consumer_reset_test, js_consumer_scenario_test). Every wait
// polls with a bound.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <set>

#include "tests/integration/cluster_js_fixture.h"

namespace peregrine::test {
namespace {

constexpr std::int64_t kSec = 1'000'000'000;
constexpr const char* kZeroTime = "0001-01-01T00:00:00Z";

// What a pull through a raw inbox got: data messages and the status that ended it.
struct pulled {
  std::vector<std::uint64_t> seqs;      // stream sequences, from the ack subjects
  std::vector<std::uint64_t> dseqs;     // consumer sequences
  std::vector<std::string> pin_ids;
  std::string status;                   // "408", "404", ... or empty
};

class cluster_consumer_ops : public cluster_js_fixture {
 protected:
  // INFO on server i, asked again until `ok` holds (the last answer either way).
  template <class Pred>
  json info_until(int i, const std::string& stream, const std::string& name, Pred ok) {
    json ci;
    for (const auto deadline = clock_type::now() + scaled(10000); clock_type::now() < deadline;) {
      ci = consumer_info(i, stream, name);
      if (ci.contains("config") && ok(ci)) break;
      std::this_thread::sleep_for(50ms);
    }
    return ci;
  }

  // Server i's own replica's view (LIST is answered from it), asked again until `ok` holds:
  // once every server's holds a state, whichever leads next has it.
  template <class Pred>
  json local_until(int i, const std::string& stream, const std::string& name, Pred ok) {
    json c;
    for (const auto deadline = clock_type::now() + scaled(10000); clock_type::now() < deadline;) {
      auto nc = connect(servers_[i]->url());
      const json l = nc ? api(nc.get(), "$JS.API.CONSUMER.LIST." + stream, "") : json::object();
      c = json::object();
      for (const auto& x : l.value("consumers", json::array()))
        if (x.value("name", "") == name) c = x;
      if (c.contains("config") && ok(c)) break;
      std::this_thread::sleep_for(50ms);
    }
    return c;
  }

  std::string consumer_leader(const std::string& stream, const std::string& name, std::chrono::milliseconds limit,
                              const std::string& not_this = {}) {
    const auto deadline = clock_type::now() + limit;
    while (clock_type::now() < deadline) {
      std::set<std::string> seen;
      for (int i = 0; i < 3; ++i)
        seen.insert(consumer_info(i, stream, name).value("cluster", json::object()).value("leader", ""));
      if (seen.size() == 1 && !seen.begin()->empty() && *seen.begin() != not_this) return *seen.begin();
      std::this_thread::sleep_for(50ms);
    }
    return {};
  }

  // Steps the consumer's leader down through server `via`; the new leader's index.
  int stepdown(int via, const std::string& stream, const std::string& name, const std::string& leader) {
    const json sd = api_retry(via, "$JS.API.CONSUMER.LEADER.STEPDOWN." + stream + "." + name, "");
    EXPECT_TRUE(sd.value("success", false)) << sd.dump();
    const std::string next = consumer_leader(stream, name, scaled(10000), leader);
    EXPECT_FALSE(next.empty()) << "the consumer's leader did not move from " << leader;
    return index_of(next);
  }

  void publish_to(int i, const std::vector<std::string>& subjects) {
    auto nc = connect(servers_[i]->url());
    ASSERT_TRUE(nc);
    static int serial = 0;
    for (const auto& s : subjects) {
      const std::string id = "id-" + std::to_string(++serial);
      ASSERT_NE(publish(nc.get(), s, "m-" + id, id, scaled(5000)), 0u) << s;
    }
  }

  json create(int i, const std::string& stream, const std::string& name, const json& config) {
    json c = config;
    c["durable_name"] = name;
    return api_retry(i, "$JS.API.CONSUMER.DURABLE.CREATE." + stream + "." + name,
                     json{{"stream_name", stream}, {"config", c}}.dump());
  }

  // One MSG.NEXT through server i, read until `want` messages or a status ends it. A pull
  // made during an election is not answered: asked again (up to the limit) while nothing came.
  pulled pull(int i, const std::string& stream, const std::string& name, const std::string& body, std::size_t want,
              bool retry_silence = true) {
    pulled out;
    auto nc = connect(servers_[i]->url());
    if (!nc) return out;
    static int serial = 0;
    const std::string inbox = "_INBOX.ops." + std::to_string(++serial);
    auto sub = subscribe_sync(nc.get(), inbox);
    natsConnection_Flush(nc.get());
    const auto deadline = clock_type::now() + scaled(10000);
    do {
      natsConnection_PublishRequestString(nc.get(), ("$JS.API.CONSUMER.MSG.NEXT." + stream + "." + name).c_str(),
                                          inbox.c_str(), body.c_str());
      while (out.seqs.size() < want) {
        auto m = next_msg(sub.get(), scaled(3000));
        if (!m) break;
        const char* st = nullptr;
        if (natsMsg_GetDataLength(m.get()) == 0 && natsMsgHeader_Get(m.get(), "Status", &st) == NATS_OK && st) {
          out.status = st;
          if (out.status != "100") break;
          out.status.clear();
          continue;
        }
        // $JS.ACK.<stream>.<consumer>.<delivered>.<sseq>.<dseq>.<ts>.<pending>
        std::vector<std::string> t;
        std::string reply = natsMsg_GetReply(m.get());
        for (std::size_t p = 0; p != std::string::npos;) {
          const auto q = reply.find('.', p);
          t.push_back(reply.substr(p, q == std::string::npos ? q : q - p));
          p = q == std::string::npos ? q : q + 1;
        }
        out.seqs.push_back(t.size() > 6 ? std::stoull(t[5]) : 0);
        out.dseqs.push_back(t.size() > 6 ? std::stoull(t[6]) : 0);
        const char* pin = nullptr;
        out.pin_ids.push_back(natsMsgHeader_Get(m.get(), "Nats-Pin-Id", &pin) == NATS_OK && pin ? pin : "");
      }
    } while (retry_silence && out.seqs.empty() && out.status.empty() && clock_type::now() < deadline);
    return out;
  }

  // Ack-syncs stream sequence `seq` delivered as the dseq-th message (delivered once).
  bool ack_sync(int i, const std::string& stream, const std::string& name, std::uint64_t seq, std::uint64_t dseq) {
    auto nc = connect(servers_[i]->url());
    if (!nc) return false;
    const std::string subject = "$JS.ACK." + stream + "." + name + ".1." + std::to_string(seq) + "." +
                                std::to_string(dseq) + ".0.0";
    natsMsg* reply = nullptr;
    const bool ok = natsConnection_RequestString(&reply, nc.get(), subject.c_str(), "+ACK", 5000) == NATS_OK;
    natsMsg_Destroy(reply);
    return ok;
  }
};

std::vector<std::string> keys_of(const json& j) {
  std::vector<std::string> k;
  for (auto it = j.begin(); it != j.end(); ++it) k.push_back(it.key());
  return k;
}

TEST_F(cluster_consumer_ops, pause_sent_through_a_follower_survives_a_leader_stepdown) {
  create_r3(0, "PS", "ps.>");
  ASSERT_FALSE(stream_leader("PS", scaled(10000)).empty());
  publish_to(0, {"ps.x", "ps.x", "ps.x", "ps.x", "ps.x"});
  ASSERT_FALSE(create(0, "PS", "P", {{"ack_policy", "explicit"}}).contains("error"));
  const std::string leader = consumer_leader("PS", "P", scaled(10000));
  ASSERT_FALSE(leader.empty());
  const int li = index_of(leader), fi = (li + 1) % 3;

  // The leader advises the pause (nats-server: the consumer leader, on applying the config).
  auto adv_nc = connect(servers_[li]->url());
  auto adv = subscribe_sync(adv_nc.get(), "$JS.EVENT.ADVISORY.CONSUMER.PAUSE.PS.P");
  ASSERT_EQ(natsConnection_Flush(adv_nc.get()), NATS_OK);

  const std::string until = "2099-01-01T00:00:00Z";
  const json r = api_retry(fi, "$JS.API.CONSUMER.PAUSE.PS.P", json{{"pause_until", until}}.dump());
  EXPECT_EQ(keys_of(r), (std::vector<std::string>{"type", "paused", "pause_until", "pause_remaining"})) << r.dump();
  EXPECT_EQ(r.value("type", ""), "io.nats.jetstream.api.v1.consumer_pause_response");
  EXPECT_TRUE(r.value("paused", false));
  EXPECT_EQ(r.value("pause_until", ""), until);
  EXPECT_GT(r.value("pause_remaining", std::int64_t(0)), 3600 * kSec);
  {
    auto m = next_msg(adv.get(), scaled(5000));
    ASSERT_TRUE(m) << "no pause advisory";
    const json a = json::parse(data_of(m.get()));
    EXPECT_EQ(a.value("type", ""), "io.nats.jetstream.advisory.v1.consumer_pause");
    EXPECT_EQ(a.value("stream", ""), "PS");
    EXPECT_EQ(a.value("consumer", ""), "P");
    EXPECT_TRUE(a.value("paused", false));
    EXPECT_EQ(a.value("pause_until", ""), until);
  }
  // Every server's INFO shows it (the config comes through the meta group).
  for (int i = 0; i < 3; ++i) {
    const json ci = info_until(i, "PS", "P", [](const json& c) { return c.value("paused", false); });
    EXPECT_TRUE(ci.value("paused", false)) << ci.dump();
    EXPECT_EQ(ci["config"].value("pause_until", ""), until);
    EXPECT_GT(ci.value("pause_remaining", std::int64_t(0)), 3600 * kSec);
  }
  for (int i = 0; i < 3; ++i) {
    const json c = local_until(i, "PS", "P", [](const json& x) { return x.value("paused", false); });
    EXPECT_TRUE(c.value("paused", false)) << "replica " << char('A' + i) << ": " << c.dump();
  }
  // Paused: a pull gets nothing before it expires.
  pulled p = pull(fi, "PS", "P", R"({"batch":5,"expires":500000000})", 5, false);
  EXPECT_TRUE(p.seqs.empty()) << "delivered while paused";

  // A new leader starts paused.
  const int ni = stepdown(fi, "PS", "P", leader);
  ASSERT_GE(ni, 0);
  const json after = consumer_info(ni, "PS", "P");
  EXPECT_EQ(after["cluster"].value("leader", ""), std::string(1, char('A' + ni)));
  EXPECT_TRUE(after.value("paused", false)) << after.dump();
  EXPECT_EQ(after["config"].value("pause_until", ""), until);
  p = pull((ni + 1) % 3, "PS", "P", R"({"batch":5,"expires":500000000})", 5, false);
  EXPECT_TRUE(p.seqs.empty()) << "the new leader delivered while paused";

  // Resumed (empty body) through a follower of the new leader: advised, and delivery starts.
  auto adv2_nc = connect(servers_[ni]->url());
  auto adv2 = subscribe_sync(adv2_nc.get(), "$JS.EVENT.ADVISORY.CONSUMER.PAUSE.PS.P");
  ASSERT_EQ(natsConnection_Flush(adv2_nc.get()), NATS_OK);
  const json res = api_retry((ni + 2) % 3, "$JS.API.CONSUMER.PAUSE.PS.P", "");
  EXPECT_EQ(res.dump(),
            json({{"type", "io.nats.jetstream.api.v1.consumer_pause_response"}, {"paused", false},
                  {"pause_until", kZeroTime}})
                .dump());
  {
    auto m = next_msg(adv2.get(), scaled(5000));
    ASSERT_TRUE(m) << "no resume advisory";
    const json a = json::parse(data_of(m.get()));
    EXPECT_FALSE(a.value("paused", true));
    EXPECT_EQ(a.value("pause_until", ""), kZeroTime);
  }
  const json ci = info_until(ni, "PS", "P", [](const json& c) { return !c.contains("paused"); });
  EXPECT_FALSE(ci.contains("paused")) << ci.dump();
  EXPECT_FALSE(ci["config"].contains("pause_until")) << ci.dump();
  p = pull(fi, "PS", "P", R"({"batch":5,"expires":3000000000})", 5);
  EXPECT_EQ(p.seqs, (std::vector<std::uint64_t>{1, 2, 3, 4, 5}));

  // Errors as the standalone PAUSE: the response's fields stay.
  const json missing = api_retry(fi, "$JS.API.CONSUMER.PAUSE.PS.NOPE", "");
  EXPECT_EQ(missing.value("error", json::object()).value("err_code", 0), 10014) << missing.dump();
  EXPECT_FALSE(missing.value("paused", true));
  EXPECT_EQ(missing.value("pause_until", ""), kZeroTime);
}

TEST_F(cluster_consumer_ops, unpin_through_a_follower_clears_the_leaders_pin) {
  create_r3(0, "PN", "pn.>");
  ASSERT_FALSE(stream_leader("PN", scaled(10000)).empty());
  publish_to(1, {"pn.a", "pn.a", "pn.a", "pn.a"});
  const json c = create(1, "PN", "G",
                        {{"ack_policy", "explicit"}, {"priority_policy", "pinned_client"}, {"priority_groups", {"jobs"}}});
  ASSERT_FALSE(c.contains("error")) << c.dump();
  const std::string leader = consumer_leader("PN", "G", scaled(10000));
  ASSERT_FALSE(leader.empty());
  const int li = index_of(leader), fi = (li + 1) % 3;

  pulled p = pull(fi, "PN", "G", R"({"batch":1,"expires":2000000000,"group":"jobs"})", 1);
  ASSERT_EQ(p.seqs.size(), 1u) << p.status;
  const std::string pin = p.pin_ids[0];
  ASSERT_FALSE(pin.empty());
  json ci = consumer_info(fi, "PN", "G");
  ASSERT_TRUE(ci.contains("priority_groups")) << ci.dump();
  EXPECT_EQ(ci["priority_groups"][0].value("group", ""), "jobs");
  EXPECT_EQ(ci["priority_groups"][0].value("pinned_client_id", ""), pin);

  // Errors as the standalone UNPIN.
  EXPECT_EQ(api_retry(fi, "$JS.API.CONSUMER.UNPIN.PN.G", "").value("error", json::object()).value("err_code", 0), 10025);
  EXPECT_EQ(api_retry(fi, "$JS.API.CONSUMER.UNPIN.PN.G", R"({"group":"bad name"})")
                .value("error", json::object()).value("err_code", 0), 10162);
  EXPECT_EQ(api_retry(fi, "$JS.API.CONSUMER.UNPIN.PN.G", R"({"group":"other"})")
                .value("error", json::object()).value("err_code", 0), 10160);
  EXPECT_EQ(api_retry(fi, "$JS.API.CONSUMER.UNPIN.PN.NOPE", R"({"group":"jobs"})")
                .value("error", json::object()).value("err_code", 0), 10014);

  auto adv_nc = connect(servers_[li]->url());
  auto adv = subscribe_sync(adv_nc.get(), "$JS.EVENT.ADVISORY.CONSUMER.UNPINNED.PN.G");
  ASSERT_EQ(natsConnection_Flush(adv_nc.get()), NATS_OK);
  const json r = api_retry(fi, "$JS.API.CONSUMER.UNPIN.PN.G", R"({"group":"jobs"})");
  EXPECT_EQ(r.dump(), R"({"type":"io.nats.jetstream.api.v1.consumer_unpin_response"})");
  {
    auto m = next_msg(adv.get(), scaled(5000));
    ASSERT_TRUE(m) << "no unpinned advisory";
    const json a = json::parse(data_of(m.get()));
    EXPECT_EQ(keys_of(a), (std::vector<std::string>{"type", "id", "timestamp", "account", "stream", "consumer",
                                                   "group", "reason"}))
        << a.dump();
    EXPECT_EQ(a.value("type", ""), "io.nats.jetstream.advisory.v1.consumer_group_unpinned");
    EXPECT_EQ(a.value("reason", ""), "admin");
    EXPECT_EQ(a.value("group", ""), "jobs");
  }
  ci = consumer_info(fi, "PN", "G");
  EXPECT_FALSE(ci["priority_groups"][0].contains("pinned_client_id")) << ci.dump();
  p = pull(fi, "PN", "G", R"({"batch":1,"expires":2000000000,"group":"jobs"})", 1);
  ASSERT_EQ(p.seqs.size(), 1u) << p.status;
  EXPECT_FALSE(p.pin_ids[0].empty());
  EXPECT_NE(p.pin_ids[0], pin) << "pinned again with the old id";

  // After a stepdown the new leader serves UNPIN too (pins are not replicated).
  const int ni = stepdown(fi, "PN", "G", leader);
  ASSERT_GE(ni, 0);
  EXPECT_EQ(api_retry((ni + 1) % 3, "$JS.API.CONSUMER.UNPIN.PN.G", R"({"group":"jobs"})").dump(),
            R"({"type":"io.nats.jetstream.api.v1.consumer_unpin_response"})");
}

TEST_F(cluster_consumer_ops, reset_through_a_follower_is_kept_by_the_next_leader) {
  create_r3(0, "RS", "rs.>");
  ASSERT_FALSE(stream_leader("RS", scaled(10000)).empty());
  publish_to(2, std::vector<std::string>(10, "rs.x"));
  ASSERT_FALSE(create(2, "RS", "R", {{"ack_policy", "explicit"}}).contains("error"));
  const std::string leader = consumer_leader("RS", "R", scaled(10000));
  ASSERT_FALSE(leader.empty());
  const int li = index_of(leader), fi = (li + 1) % 3;

  pulled p = pull(fi, "RS", "R", R"({"batch":6,"expires":3000000000})", 6);
  ASSERT_EQ(p.seqs, (std::vector<std::uint64_t>{1, 2, 3, 4, 5, 6}));
  for (std::uint64_t s = 1; s <= 6; ++s) ASSERT_TRUE(ack_sync(fi, "RS", "R", s, s)) << s;
  EXPECT_EQ(consumer_info(fi, "RS", "R")["ack_floor"].value("stream_seq", 0u), 6u);

  // Back to sequence 3: the answer is the ConsumerInfo after the reset plus reset_seq.
  const json r = api_retry(fi, "$JS.API.CONSUMER.RESET.RS.R", R"({"seq":3})");
  ASSERT_FALSE(r.contains("error")) << r.dump();
  EXPECT_EQ(r.value("type", ""), "io.nats.jetstream.api.v1.consumer_reset_response");
  EXPECT_EQ(keys_of(r).back(), "reset_seq");
  EXPECT_EQ(r.value("reset_seq", 0u), 3u);
  EXPECT_EQ(r.value("name", ""), "R");
  EXPECT_EQ(r["delivered"].value("stream_seq", 0u), 2u) << r.dump();
  EXPECT_EQ(r["delivered"].value("consumer_seq", 9u), 0u);
  EXPECT_EQ(r["ack_floor"].value("stream_seq", 0u), 2u);
  EXPECT_EQ(r.value("num_ack_pending", 9u), 0u);
  EXPECT_EQ(r.value("num_pending", 0u), 8u);
  // The replicated state: every server's replica holds it.
  for (int i = 0; i < 3; ++i) {
    const json c = local_until(i, "RS", "R", [](const json& x) { return x["ack_floor"].value("stream_seq", 0u) == 2u; });
    EXPECT_EQ(c["ack_floor"].value("stream_seq", 0u), 2u) << "replica " << char('A' + i) << ": " << c.dump();
    EXPECT_EQ(c["delivered"].value("stream_seq", 0u), 2u);
    EXPECT_EQ(c["delivered"].value("consumer_seq", 9u), 0u);
  }

  // The next leader delivers from 3 on, consumer sequences from 1.
  const int ni = stepdown(fi, "RS", "R", leader);
  ASSERT_GE(ni, 0);
  const json ci = consumer_info(ni, "RS", "R");
  EXPECT_EQ(ci["delivered"].value("stream_seq", 0u), 2u) << ci.dump();
  EXPECT_EQ(ci["delivered"].value("consumer_seq", 9u), 0u);
  EXPECT_EQ(ci.value("num_pending", 0u), 8u);
  p = pull((ni + 1) % 3, "RS", "R", R"({"batch":3,"expires":3000000000})", 3);
  EXPECT_EQ(p.seqs, (std::vector<std::uint64_t>{3, 4, 5}));
  EXPECT_EQ(p.dseqs, (std::vector<std::uint64_t>{1, 2, 3}));

  // An empty body goes back to the ack floor (2: nothing acked since).
  const json back = api_retry((ni + 2) % 3, "$JS.API.CONSUMER.RESET.RS.R", "");
  EXPECT_EQ(back.value("reset_seq", 0u), 3u) << back.dump();
  EXPECT_EQ(back.value("num_ack_pending", 9u), 0u);
  p = pull((ni + 1) % 3, "RS", "R", R"({"batch":1,"expires":3000000000})", 1);
  EXPECT_EQ(p.seqs, (std::vector<std::uint64_t>{3}));

  // Where the deliver policy does not allow a sequence: 10204, as the standalone RESET.
  ASSERT_FALSE(create(0, "RS", "NEW", {{"ack_policy", "explicit"}, {"deliver_policy", "new"}}).contains("error"));
  const json bad = api_retry(1, "$JS.API.CONSUMER.RESET.RS.NEW", R"({"seq":1})");
  EXPECT_EQ(bad.value("error", json::object()),
            json::parse(R"({"code":400,"err_code":10204,"description":"invalid reset: not allowed"})"));
  const json missing = api_retry(1, "$JS.API.CONSUMER.RESET.RS.NOPE", "");
  EXPECT_EQ(missing.value("error", json::object()).value("err_code", 0), 10014) << missing.dump();
}

TEST_F(cluster_consumer_ops, config_update_through_a_follower_is_used_by_the_next_leader) {
  create_r3(0, "UP", "up.>");
  ASSERT_FALSE(stream_leader("UP", scaled(10000)).empty());
  publish_to(0, {"up.a", "up.b", "up.a", "up.b", "up.a", "up.b", "up.a", "up.b"});  // b: 2, 4, 6, 8
  const json v1 = {{"ack_policy", "explicit"}, {"description", "v1"}, {"filter_subject", "up.a"}};
  const json c = create(0, "UP", "U", v1);
  ASSERT_FALSE(c.contains("error")) << c.dump();
  const std::string leader = consumer_leader("UP", "U", scaled(10000));
  ASSERT_FALSE(leader.empty());
  const int li = index_of(leader), fi = (li + 1) % 3;

  // The same config again: idempotent, answered with the consumer's info.
  const json same = create(fi, "UP", "U", v1);
  EXPECT_FALSE(same.contains("error")) << same.dump();
  EXPECT_EQ(same["config"].value("description", ""), "v1");
  // Refused changes, with the standalone update's errors.
  json bad = v1;
  bad["deliver_policy"] = "last";
  EXPECT_EQ(create(fi, "UP", "U", bad).value("error", json::object()),
            json::parse(R"({"code":500,"err_code":10012,"description":"deliver policy can not be updated"})"));
  bad = v1;
  bad["ack_policy"] = "all";
  EXPECT_EQ(create(fi, "UP", "U", bad).value("error", json::object()).value("description", ""),
            "ack policy can not be updated");
  json v2 = v1;
  v2["description"] = "v2";
  v2["durable_name"] = "U";
  const json exists = api_retry(fi, "$JS.API.CONSUMER.DURABLE.CREATE.UP.U",
                                json{{"stream_name", "UP"}, {"config", v2}, {"action", "create"}}.dump());
  EXPECT_EQ(exists.value("error", json::object()).value("err_code", 0), 10148) << exists.dump();

  // The update: a new description, max_ack_pending, ack_wait and filter.
  v2 = {{"ack_policy", "explicit"}, {"description", "v2"}, {"filter_subject", "up.b"}, {"max_ack_pending", 2},
        {"ack_wait", 5 * kSec}};
  const json u = create(fi, "UP", "U", v2);
  ASSERT_FALSE(u.contains("error")) << u.dump();
  EXPECT_EQ(u.value("type", ""), "io.nats.jetstream.api.v1.consumer_create_response");
  EXPECT_EQ(u["config"].value("description", ""), "v2") << u.dump();
  EXPECT_EQ(u["config"].value("filter_subject", ""), "up.b");
  EXPECT_EQ(u["config"].value("max_ack_pending", 0), 2);
  EXPECT_EQ(u["config"].value("ack_wait", std::int64_t(0)), 5 * kSec);
  EXPECT_EQ(u.value("num_pending", 0u), 4u) << "num_pending counts the new filter";
  for (int i = 0; i < 3; ++i) {
    const json ci = info_until(i, "UP", "U", [](const json& j) { return j["config"].value("description", "") == "v2"; });
    EXPECT_EQ(ci["config"].value("description", ""), "v2") << ci.dump();
    EXPECT_EQ(ci["config"].value("max_ack_pending", 0), 2);
    const json c = local_until(i, "UP", "U", [](const json& x) { return x["config"].value("description", "") == "v2"; });
    EXPECT_EQ(c["config"].value("description", ""), "v2") << "replica " << char('A' + i) << ": " << c.dump();
    EXPECT_EQ(c["config"].value("filter_subject", ""), "up.b");
  }
  // The same v2 again is idempotent too.
  EXPECT_EQ(create((li + 2) % 3, "UP", "U", v2)["config"].value("description", ""), "v2");

  // The next leader delivers by the new config: up.b only, two pending at most.
  const int ni = stepdown(fi, "UP", "U", leader);
  ASSERT_GE(ni, 0);
  EXPECT_EQ(consumer_info(ni, "UP", "U")["config"].value("filter_subject", ""), "up.b");
  const pulled p = pull((ni + 1) % 3, "UP", "U", R"({"batch":5,"expires":1000000000})", 5);
  EXPECT_EQ(p.seqs, (std::vector<std::uint64_t>{2, 4})) << "status " << p.status;  // up.b's
}

}  // namespace
}  // namespace peregrine::test
