// Retention of replicated (R3) streams on three real peregrine-server processes (issue 11):
// a work-queue stream loses each message once its ack is committed, on every replica (the
// next leader after a kill -9 of the stream's leader holds only the unacknowledged ones), and
// refuses the consumers nats-server refuses on a work queue (10084, 10099-10101); an
// interest stream keeps a message until every consumer that matches it acknowledged it, and
// drops what only a deleted consumer needed, and what was acked when a limits stream becomes
// an interest stream; an ack-all consumer's ack covers every earlier
// delivery in the replicated state too (a new leader after a stepdown has nothing pending).
// Every wait polls with a bound.
#include <signal.h>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <set>
#include <vector>

#include "tests/integration/cluster_js_fixture.h"

namespace peregrine::test {
namespace {

class cluster_retention : public cluster_js_fixture {
 protected:
  void create_stream(const std::string& name, const std::string& subjects, const std::string& retention) {
    const json r = api_retry(0, "$JS.API.STREAM.CREATE." + name,
                             json{{"name", name}, {"subjects", {subjects}}, {"retention", retention},
                                  {"storage", "file"}, {"num_replicas", 3}}
                                 .dump());
    ASSERT_TRUE(r.contains("config")) << r.dump();
    ASSERT_FALSE(stream_leader(name, scaled(10000)).empty());
  }

  // A durable pull consumer; its answer.
  json durable(const std::string& stream, const std::string& name, const std::string& extra = "") {
    return api_retry(1, "$JS.API.CONSUMER.DURABLE.CREATE." + stream + "." + name,
                     R"({"stream_name":")" + stream + R"(","config":{"durable_name":")" + name +
                         R"(","ack_policy":"explicit")" + extra + "}}");
  }

  void publish_to(int i, const std::string& subject, int n) {
    auto nc = connect(servers_[i]->url());
    ASSERT_TRUE(nc);
    for (int k = 0; k < n; ++k)
      ASSERT_NE(publish(nc.get(), subject, "m", subject + "-" + std::to_string(k), scaled(5000)), 0u) << subject << " " << k;
  }

  // Fetches `n` messages of durable `name` through server i; acks (sync) each one whose
  // stream sequence is in `ack` (all when `ack_all_fetched`), or only the last fetched with
  // `ack_last`. The fetched stream sequences.
  std::vector<std::uint64_t> fetch(int i, const std::string& stream, const std::string& name, int n,
                                   const std::set<std::uint64_t>& ack, bool ack_all_fetched, bool ack_last = false) {
    std::vector<std::uint64_t> seqs;
    auto nc = connect(servers_[i]->url());
    if (!nc) return seqs;
    jsCtx* js = nullptr;
    if (natsConnection_JetStream(&js, nc.get(), nullptr) != NATS_OK) return seqs;
    jsSubOptions so;
    jsSubOptions_Init(&so);
    so.Stream = stream.c_str();
    so.Consumer = name.c_str();
    natsSubscription* sub = nullptr;
    jsErrCode jerr{};
    const auto deadline = clock_type::now() + scaled(10000);
    while (clock_type::now() < deadline &&
           js_PullSubscribe(&sub, js, nullptr, name.c_str(), nullptr, &so, &jerr) != NATS_OK)
      std::this_thread::sleep_for(100ms);
    if (!sub) {
      jsCtx_Destroy(js);
      return seqs;
    }
    std::vector<natsMsg*> held;
    while (clock_type::now() < deadline && int(seqs.size()) < n) {
      natsMsgList list{};
      if (natsSubscription_Fetch(&list, sub, n - int(seqs.size()), 1000, &jerr) != NATS_OK) continue;
      for (int k = 0; k < list.Count; ++k) {
        jsMsgMetaData* md = nullptr;
        if (natsMsg_GetMetaData(&md, list.Msgs[k]) != NATS_OK) continue;
        const std::uint64_t seq = md->Sequence.Stream;
        jsMsgMetaData_Destroy(md);
        seqs.push_back(seq);
        if (ack_all_fetched || ack.count(seq)) {
          EXPECT_EQ(natsMsg_AckSync(list.Msgs[k], nullptr, &jerr), NATS_OK) << seq;
        }
        if (ack_last) {
          held.push_back(list.Msgs[k]);
          list.Msgs[k] = nullptr;
        }
      }
      natsMsgList_Destroy(&list);
    }
    if (ack_last && !held.empty()) {
      EXPECT_EQ(natsMsg_AckSync(held.back(), nullptr, &jerr), NATS_OK);
    }
    for (auto* m : held) natsMsg_Destroy(m);
    natsSubscription_Destroy(sub);
    jsCtx_Destroy(js);
    return seqs;
  }

  // The stream's state on server i once it holds `messages` (the last answer otherwise).
  json state_when(int i, const std::string& stream, std::uint64_t messages) {
    json st;
    const auto deadline = clock_type::now() + scaled(10000);
    while (clock_type::now() < deadline) {
      st = info(i, stream).value("state", json::object());
      if (st.value("messages", std::uint64_t(~0ull)) == messages) break;
      std::this_thread::sleep_for(50ms);
    }
    return st;
  }
};

int err_code(const json& r) { return r.value("error", json::object()).value("err_code", 0); }

TEST_F(cluster_retention, work_queue_loses_each_acked_message_on_every_replica) {
  create_stream("JOBS", "jobs.>", "workqueue");
  publish_to(0, "jobs.a", 6);
  publish_to(0, "jobs.b", 4);
  // ack_wait 1 s: what the kill leaves unacknowledged comes back soon.
  const json w = durable("JOBS", "W", R"(,"filter_subject":"jobs.a","ack_wait":1000000000)");
  ASSERT_FALSE(w.contains("error")) << w.dump();
  // The work-queue rules, as on a standalone server.
  EXPECT_EQ(err_code(durable("JOBS", "ALL")), 10099) << "unfiltered beside a filtered one";
  EXPECT_EQ(err_code(durable("JOBS", "OVER", R"(,"filter_subject":"jobs.*")")), 10100);
  EXPECT_EQ(err_code(durable("JOBS", "NEW", R"(,"filter_subject":"jobs.b","deliver_policy":"new")")), 10101);
  EXPECT_EQ(err_code(api_retry(1, "$JS.API.CONSUMER.DURABLE.CREATE.JOBS.NONE",
                               R"({"stream_name":"JOBS","config":{"durable_name":"NONE","ack_policy":"none",)"
                               R"("filter_subject":"jobs.b"}})")),
            10084);  // a pull consumer of a work queue needs acks
  const json b = durable("JOBS", "B", R"(,"filter_subject":"jobs.b")");
  ASSERT_FALSE(b.contains("error")) << b.dump();

  // W takes 4 of its 6 and acks 1, 2 and 4; B takes both of its first two and acks them.
  const auto got = fetch(2, "JOBS", "W", 4, {1, 2, 4}, false);
  ASSERT_EQ(got, (std::vector<std::uint64_t>{1, 2, 3, 4}));
  ASSERT_EQ(fetch(1, "JOBS", "B", 2, {}, true), (std::vector<std::uint64_t>{7, 8}));
  json st = state_when(0, "JOBS", 5);
  EXPECT_EQ(st.value("messages", 0), 5) << st.dump();
  EXPECT_EQ(st.value("first_seq", 0), 3) << st.dump();

  // The stream's leader goes (kill -9): the next one removed the same messages itself.
  const std::string leader = stream_leader("JOBS", scaled(10000));
  ASSERT_FALSE(leader.empty());
  const int li = index_of(leader);
  ::kill(servers_[li]->pid(), SIGKILL);
  servers_[li]->stop();
  const int other = (li + 1) % 3;
  ASSERT_FALSE(stream_leader("JOBS", scaled(15000), leader).empty());
  st = state_when(other, "JOBS", 5);
  EXPECT_EQ(st.value("messages", 0), 5) << st.dump();
  EXPECT_EQ(st.value("first_seq", 0), 3) << st.dump();
  EXPECT_EQ(st.value("last_seq", 0), 10) << st.dump();
  // The rest of W's work is still there (3 again after its ack wait); the killed server is back.
  ASSERT_TRUE(servers_[li]->start()) << servers_[li]->error();
  const auto rest = fetch(other, "JOBS", "W", 3, {}, true);
  EXPECT_EQ(std::set<std::uint64_t>(rest.begin(), rest.end()), (std::set<std::uint64_t>{3, 5, 6}));
  st = state_when(other, "JOBS", 2);
  EXPECT_EQ(st.value("messages", 0), 2) << st.dump();
  EXPECT_EQ(st.value("first_seq", 0), 9) << st.dump();
}

TEST_F(cluster_retention, interest_stream_keeps_a_message_until_every_matching_consumer_acked_it) {
  create_stream("EVENTS", "events.>", "interest");
  ASSERT_FALSE(durable("EVENTS", "ALL").contains("error"));
  ASSERT_FALSE(durable("EVENTS", "B", R"(,"filter_subject":"events.b")").contains("error"));
  publish_to(0, "events.a", 2);  // 1, 2
  publish_to(1, "events.b", 2);  // 3, 4
  ASSERT_EQ(state_when(2, "EVENTS", 4).value("messages", 0), 4);

  // ALL acks everything: only B's two stay.
  ASSERT_EQ(fetch(0, "EVENTS", "ALL", 4, {}, true).size(), 4u);
  json st = state_when(2, "EVENTS", 2);
  EXPECT_EQ(st.value("messages", 0), 2) << st.dump();
  EXPECT_EQ(st.value("first_seq", 0), 3) << st.dump();
  // B's count of what it has yet to get survives the removals. B's leader counts on its own
  // replica of the stream, which may lag the stream leader's (as in nats-server; STREAM.INFO
  // answers from the leader): polled, so only a count that stays wrong fails.
  json bi;
  for (const auto deadline = clock_type::now() + scaled(5000); clock_type::now() < deadline;
       std::this_thread::sleep_for(50ms))
    if ((bi = consumer_info(1, "EVENTS", "B")).value("num_pending", -1) == 2) break;
  EXPECT_EQ(bi.value("num_pending", -1), 2) << bi.dump();
  // B takes 3 and 4 and acks 3.
  ASSERT_EQ(fetch(2, "EVENTS", "B", 2, {3}, false), (std::vector<std::uint64_t>{3, 4}));
  st = state_when(1, "EVENTS", 1);
  EXPECT_EQ(st.value("messages", 0), 1) << st.dump();
  EXPECT_EQ(st.value("first_seq", 0), 4) << st.dump();
  // B goes: 4 was only its.
  const json del = api_retry(0, "$JS.API.CONSUMER.DELETE.EVENTS.B", "");
  EXPECT_TRUE(del.value("success", false)) << del.dump();
  st = state_when(0, "EVENTS", 0);
  EXPECT_EQ(st.value("messages", 1), 0) << st.dump();
  EXPECT_EQ(st.value("last_seq", 0), 4) << st.dump();
  // A stepdown: the next leader of the stream agrees.
  const std::string leader = stream_leader("EVENTS", scaled(10000));
  const json sd = api_retry(0, "$JS.API.STREAM.LEADER.STEPDOWN.EVENTS", "");
  EXPECT_TRUE(sd.value("success", false)) << sd.dump();
  ASSERT_FALSE(stream_leader("EVENTS", scaled(15000), leader).empty());
  st = state_when(0, "EVENTS", 0);
  EXPECT_EQ(st.value("messages", 1), 0) << st.dump();
}

// As on one server (and nats-server): a publish no consumer matches is acknowledged with its
// sequence and not stored; a Msg-Id retried is still a duplicate; a matching one is stored.
TEST_F(cluster_retention, interest_stream_stores_nothing_no_consumer_matches) {
  create_stream("NOBODY", "nobody.>", "interest");
  auto nc = connect(servers_[2]->url());
  ASSERT_TRUE(nc);
  EXPECT_EQ(publish(nc.get(), "nobody.x", "m", "n-1", scaled(5000)), 1u);
  EXPECT_EQ(publish(nc.get(), "nobody.x", "m", "n-2", scaled(5000)), 2u);
  EXPECT_EQ(publish(nc.get(), "nobody.x", "m", "n-1", scaled(5000)), 1u);  // a duplicate of the first
  json st = state_when(0, "NOBODY", 0);
  EXPECT_EQ(st.value("messages", 1), 0) << st.dump();
  EXPECT_EQ(st.value("last_seq", 0), 2) << st.dump();
  ASSERT_FALSE(durable("NOBODY", "A", R"(,"filter_subject":"nobody.a")").contains("error"));
  // The stream's leader knows the consumer once its StreamInfo counts it.
  for (const auto deadline = clock_type::now() + scaled(5000); clock_type::now() < deadline;
       std::this_thread::sleep_for(50ms))
    if (info(0, "NOBODY").value("state", json::object()).value("consumer_count", 0) == 1) break;
  std::uint64_t seq = 0;
  for (int i = 0; i < 50 && seq == 0; ++i) seq = publish(nc.get(), "nobody.a", "m", "a-1", scaled(1000));
  EXPECT_EQ(seq, 3u);
  EXPECT_EQ(publish(nc.get(), "nobody.b", "m", "b-1", scaled(5000)), 4u);
  st = state_when(1, "NOBODY", 1);
  EXPECT_EQ(st.value("messages", 0), 1) << st.dump();
  EXPECT_EQ(st.value("first_seq", 0), 3) << st.dump();
  EXPECT_EQ(st.value("last_seq", 0), 4) << st.dump();
}

TEST_F(cluster_retention, ack_all_covers_every_earlier_delivery_under_the_next_leader) {
  create_stream("LOG", "log.>", "limits");
  publish_to(0, "log.x", 10);
  const json c = api_retry(1, "$JS.API.CONSUMER.DURABLE.CREATE.LOG.A",
                           R"({"stream_name":"LOG","config":{"durable_name":"A","ack_policy":"all"}})");
  ASSERT_FALSE(c.contains("error")) << c.dump();
  ASSERT_EQ(fetch(0, "LOG", "A", 8, {}, false, true).size(), 8u);  // only the 8th acked
  json ci = consumer_info(2, "LOG", "A");
  EXPECT_EQ(ci.value("ack_floor", json::object()).value("stream_seq", 0), 8) << ci.dump();
  EXPECT_EQ(ci.value("num_ack_pending", -1), 0) << ci.dump();
  std::string leader;
  for (const auto deadline = clock_type::now() + scaled(10000); clock_type::now() < deadline && leader.empty();)
    leader = consumer_info(0, "LOG", "A").value("cluster", json::object()).value("leader", "");
  const json sd = api_retry(0, "$JS.API.CONSUMER.LEADER.STEPDOWN.LOG.A", "");
  EXPECT_TRUE(sd.value("success", false)) << sd.dump();
  for (const auto deadline = clock_type::now() + scaled(15000); clock_type::now() < deadline;) {
    ci = consumer_info(1, "LOG", "A");
    const std::string now_leader = ci.value("cluster", json::object()).value("leader", "");
    if (!now_leader.empty() && now_leader != leader) break;
    std::this_thread::sleep_for(100ms);
  }
  EXPECT_NE(ci.value("cluster", json::object()).value("leader", ""), leader) << ci.dump();
  EXPECT_EQ(ci.value("ack_floor", json::object()).value("stream_seq", 0), 8) << ci.dump();
  EXPECT_EQ(ci.value("num_ack_pending", -1), 0) << ci.dump();
  EXPECT_EQ(ci.value("num_pending", -1), 2) << ci.dump();
  // Nothing comes back: the next fetch starts at 9.
  EXPECT_EQ(fetch(2, "LOG", "A", 2, {}, true), (std::vector<std::uint64_t>{9, 10}));
}

// A limits stream switched to interest retention (STREAM.UPDATE): what its consumer acked goes
// at the update, on every replica, as on a standalone server.
TEST_F(cluster_retention, limits_stream_switched_to_interest_drops_what_was_acked) {
  create_stream("AUDIT", "audit.>", "limits");
  ASSERT_FALSE(durable("AUDIT", "R").contains("error"));
  publish_to(0, "audit.x", 5);
  ASSERT_EQ(fetch(1, "AUDIT", "R", 3, {}, true).size(), 3u);
  ASSERT_EQ(state_when(2, "AUDIT", 5).value("messages", 0), 5);  // limits: acks remove nothing
  const json up = api_retry(2, "$JS.API.STREAM.UPDATE.AUDIT",
                            json{{"name", "AUDIT"}, {"subjects", {"audit.>"}}, {"retention", "interest"},
                                 {"storage", "file"}, {"num_replicas", 3}}
                                .dump());
  ASSERT_EQ(up.value("config", json::object()).value("retention", ""), "interest") << up.dump();
  json st = state_when(0, "AUDIT", 2);
  EXPECT_EQ(st.value("messages", 0), 2) << st.dump();
  EXPECT_EQ(st.value("first_seq", 0), 4) << st.dump();
  // The next leader agrees; the rest goes as it is acked.
  const std::string leader = stream_leader("AUDIT", scaled(10000));
  const json sd = api_retry(0, "$JS.API.STREAM.LEADER.STEPDOWN.AUDIT", "");
  EXPECT_TRUE(sd.value("success", false)) << sd.dump();
  ASSERT_FALSE(stream_leader("AUDIT", scaled(15000), leader).empty());
  EXPECT_EQ(state_when(1, "AUDIT", 2).value("messages", 0), 2);
  ASSERT_EQ(fetch(2, "AUDIT", "R", 2, {}, true), (std::vector<std::uint64_t>{4, 5}));
  st = state_when(1, "AUDIT", 0);
  EXPECT_EQ(st.value("messages", 1), 0) << st.dump();
}

// Ack none on an interest stream: a delivery is all the consumer needs.
TEST_F(cluster_retention, ack_none_consumer_releases_on_delivery) {
  create_stream("TICKS", "ticks.>", "interest");
  const json c = api_retry(1, "$JS.API.CONSUMER.DURABLE.CREATE.TICKS.N",
                           R"({"stream_name":"TICKS","config":{"durable_name":"N","ack_policy":"none"}})");
  ASSERT_FALSE(c.contains("error")) << c.dump();
  publish_to(0, "ticks.x", 5);
  ASSERT_EQ(fetch(2, "TICKS", "N", 3, {}, false).size(), 3u);
  const json st = state_when(0, "TICKS", 2);
  EXPECT_EQ(st.value("messages", 0), 2) << st.dump();
  EXPECT_EQ(st.value("first_seq", 0), 4) << st.dump();
  const json ci = consumer_info(0, "TICKS", "N");
  EXPECT_EQ(ci.value("ack_floor", json::object()).value("stream_seq", 0), 3) << ci.dump();
  EXPECT_EQ(ci.value("num_ack_pending", -1), 0) << ci.dump();
}

}  // namespace
}  // namespace peregrine::test
