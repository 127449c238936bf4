// Mirrors and sources of replicated streams (issue 11), on three real server processes:
// an R3 mirror keeps its origin's sequences (a message deleted in the origin before the copy
// is a gap in the mirror too) and goes on copying after its leader steps down and after its
// leader is killed with SIGKILL, without a gap or a second copy; an R3 stream sourcing two R1
// streams stores each of their messages once, with Nats-Stream-Source, across a leader
// change; an R1 stream with sources scaled to three replicas keeps sourcing. StreamInfo
// carries "mirror" / "sources". The expectations also hold for a 3-node nats-server 2.9.10
// cluster (cluster_stream_sources_nats_server). libnats; every wait polls with a bound.
#include <gtest/gtest.h>
#include <signal.h>

#include "tests/integration/cluster_js_fixture.h"

namespace peregrine::test {
namespace {

class cluster_stream_sources : public cluster_js_fixture {
 protected:
  bool runs_on_reference() const override { return true; }

  // Waits on elections and mirror/source resumption: nats-server's election timeouts are
  // 4-9 s (a split vote after a SIGKILL costs another), so it gets twice Peregrine's bounds.
  static std::chrono::milliseconds election_wait(int ms) { return scaled(reference_server() ? 2 * ms : ms); }

  // An API request that places a stream. nats-server 2.9.10 answers 10005 "no suitable peers
  // for placement" until its meta leader has every peer's first statsz (seen in CI now and
  // then, a few seconds after start, for creates and updates alike): asked of it again.
  // Peregrine places from the meta group's members at once, so it is asked once.
  json placing(int i, const std::string& subject, const std::string& body) {
    json r = api_retry(i, subject, body);
    const auto placed_by = clock_type::now() + scaled(15000);
    while (reference_server() && r.value("error", json::object()).value("err_code", 0) == 10005 &&
           clock_type::now() < placed_by) {
      std::this_thread::sleep_for(500ms);
      r = api_retry(i, subject, body);
    }
    return r;
  }

  json create(int i, const json& cfg) { return placing(i, "$JS.API.STREAM.CREATE." + cfg.value("name", ""), cfg.dump()); }

  // Until the stream's state (asked through server i) has `msgs` messages and last sequence
  // `last`; the last state seen.
  json wait_state(int i, const std::string& stream, std::uint64_t msgs, std::uint64_t last) {
    json st;
    const auto deadline = clock_type::now() + election_wait(15000);
    while (clock_type::now() < deadline) {
      st = info(i, stream).value("state", json::object());
      if (st.value("messages", 0ull) == msgs && st.value("last_seq", 0ull) == last) break;
      std::this_thread::sleep_for(50ms);
    }
    return st;
  }

  // Message `seq` of the stream through server i: (subject, data, headers); subject "" if none.
  struct got {
    std::string subject, data, headers;
    int err_code = 0;
  };
  got get(int i, const std::string& stream, std::uint64_t seq) {
    got g;
    auto nc = connect(servers_[i]->url());
    if (!nc) return g;
    json r;
    for (int attempt = 0; attempt < 3 && r.empty(); ++attempt)
      r = api(nc.get(), "$JS.API.STREAM.MSG.GET." + stream, R"({"seq":)" + std::to_string(seq) + "}");
    g.err_code = r.value("error", json::object()).value("err_code", 0);
    if (!r.contains("message")) return g;
    g.subject = r["message"].value("subject", "");
    g.data = base64_decode(r["message"].value("data", ""));
    g.headers = base64_decode(r["message"].value("hdrs", ""));
    return g;
  }

  void publish_n(int i, const std::string& subject, const std::string& prefix, int from, int to) {
    auto nc = connect(servers_[i]->url());
    ASSERT_TRUE(nc);
    for (int k = from; k <= to; ++k)
      ASSERT_NE(publish(nc.get(), subject, prefix + std::to_string(k), prefix + "-id-" + std::to_string(k),
                        scaled(5000)),
                0u)
          << prefix << k;
  }

  // A server other than `not_this` (index), to ask through.
  int other_than(int not_this) const { return (not_this + 1) % 3; }
};

TEST_F(cluster_stream_sources, r3_mirror_keeps_origin_sequences_across_leader_changes) {
  ASSERT_TRUE(wait_meta_leader(scaled(10000)));
  json o = create(0, {{"name", "ORIGIN"}, {"subjects", {"origin.>"}}, {"storage", "file"}});
  ASSERT_TRUE(o.contains("config")) << o.dump();
  // Where the origin lives (nats-server places an R1 stream on any server): publishes go there.
  const int home = std::max(0, index_of(o.value("cluster", json::object()).value("leader", "")));
  publish_n(home, "origin.created", "o", 1, 5);
  // Removed in the origin before the mirror exists: a gap in the mirror too. Not asked of
  // nats-server 2.9.10, whose mirror of such an origin loses the origin's first message
  // (seen here: first_seq 2, one message short).
  const bool gap = !reference_server();
  const std::uint64_t missing = gap ? 1 : 0;
  if (gap) {
    const json del = api_retry(0, "$JS.API.STREAM.MSG.DELETE.ORIGIN", R"({"seq":3})");
    ASSERT_TRUE(del.value("success", false)) << del.dump();
  }

  const json m = create(1, {{"name", "M3"}, {"num_replicas", 3}, {"mirror", {{"name", "ORIGIN"}}}});
  ASSERT_TRUE(m.contains("config")) << m.dump();
  EXPECT_EQ(m["config"].value("num_replicas", 0), 3);
  json st = wait_state(1, "M3", 5 - missing, 5);
  EXPECT_EQ(st.value("messages", 0ull), 5 - missing) << st.dump();
  EXPECT_EQ(st.value("last_seq", 0ull), 5u) << st.dump();
  if (gap) {
    EXPECT_EQ(get(1, "M3", 3).err_code, 10037);
  }
  EXPECT_EQ(get(1, "M3", 4).data, "o4");
  EXPECT_EQ(get(2, "M3", 5).subject, "origin.created");
  const json mi = info(2, "M3");
  EXPECT_EQ(mi.value("mirror", json::object()).value("name", ""), "ORIGIN") << mi.dump();
  EXPECT_EQ(mi.value("cluster", json::object()).value("replicas", json::array()).size(), 2u) << mi.dump();

  // A stepdown: the next leader copies on from where the replicas are.
  const std::string first = stream_leader("M3", election_wait(10000));
  ASSERT_FALSE(first.empty());
  const json sd = api_retry(index_of(first) >= 0 ? index_of(first) : 0, "$JS.API.STREAM.LEADER.STEPDOWN.M3", "");
  EXPECT_TRUE(sd.value("success", false)) << sd.dump();
  const std::string second = stream_leader("M3", election_wait(15000), first);
  ASSERT_FALSE(second.empty());
  publish_n(home, "origin.shipped", "o", 6, 8);
  st = wait_state(0, "M3", 8 - missing, 8);
  EXPECT_EQ(st.value("messages", 0ull), 8 - missing) << st.dump();
  EXPECT_EQ(st.value("last_seq", 0ull), 8u) << st.dump();

  // SIGKILL of its leader, unless that server also holds the origin: the others go on.
  const int victim = index_of(second);
  if (victim >= 0 && victim != home) {
    ::kill(servers_[victim]->pid(), SIGKILL);
    const int via = other_than(victim);
    ASSERT_FALSE(stream_leader("M3", election_wait(20000), second).empty());
    publish_n(home, "origin.canceled", "o", 9, 10);
    st = wait_state(via, "M3", 10 - missing, 10);
    EXPECT_EQ(st.value("messages", 0ull), 10 - missing) << st.dump();
    EXPECT_EQ(st.value("last_seq", 0ull), 10u) << st.dump();
    EXPECT_EQ(get(via, "M3", 10).data, "o10");
    ASSERT_TRUE(servers_[victim]->start()) << servers_[victim]->error();
  }
  for (std::uint64_t seq : {1u, 2u, 4u, 5u, 6u, 7u, 8u})
    EXPECT_EQ(get(home, "M3", seq).data, "o" + std::to_string(seq)) << seq;
}

TEST_F(cluster_stream_sources, r3_sources_store_each_message_once_across_a_leader_change) {
  ASSERT_TRUE(wait_meta_leader(scaled(10000)));
  ASSERT_TRUE(create(0, {{"name", "US"}, {"subjects", {"us.orders.>"}}}).contains("config"));
  ASSERT_TRUE(create(2, {{"name", "EU"}, {"subjects", {"eu.orders.>"}}}).contains("config"));
  publish_n(0, "us.orders.created", "us", 1, 2);
  publish_n(2, "eu.orders.created", "eu", 1, 2);

  const json a = create(1, {{"name", "ALL"}, {"num_replicas", 3}, {"sources", {{{"name", "US"}}, {{"name", "EU"}}}}});
  ASSERT_TRUE(a.contains("config")) << a.dump();
  json st = wait_state(1, "ALL", 4, 4);
  EXPECT_EQ(st.value("messages", 0ull), 4u) << st.dump();
  const got first_msg = get(1, "ALL", 1);
  EXPECT_NE(first_msg.headers.find("Nats-Stream-Source"), std::string::npos) << first_msg.headers;
  const json ai = info(0, "ALL");
  ASSERT_TRUE(ai.contains("sources")) << ai.dump();
  EXPECT_EQ(ai["sources"].size(), 2u) << ai.dump();

  const std::string first = stream_leader("ALL", election_wait(10000));
  ASSERT_FALSE(first.empty());
  const json sd = api_retry(index_of(first) >= 0 ? index_of(first) : 1, "$JS.API.STREAM.LEADER.STEPDOWN.ALL", "");
  EXPECT_TRUE(sd.value("success", false)) << sd.dump();
  ASSERT_FALSE(stream_leader("ALL", election_wait(15000), first).empty());
  publish_n(0, "us.orders.shipped", "us", 3, 4);
  publish_n(2, "eu.orders.shipped", "eu", 3, 4);
  st = wait_state(2, "ALL", 8, 8);
  EXPECT_EQ(st.value("messages", 0ull), 8u) << st.dump();
  // Nothing comes a second time.
  std::this_thread::sleep_for(scaled(1500));
  st = info(2, "ALL").value("state", json::object());
  EXPECT_EQ(st.value("messages", 0ull), 8u) << st.dump();
  std::map<std::string, int> seen;
  for (std::uint64_t seq = 1; seq <= 8; ++seq) ++seen[get(0, "ALL", seq).data];
  for (const char* want : {"us1", "us2", "us3", "us4", "eu1", "eu2", "eu3", "eu4"}) EXPECT_EQ(seen[want], 1) << want;
}

TEST_F(cluster_stream_sources, r1_stream_with_sources_scaled_to_three_keeps_sourcing) {
  ASSERT_TRUE(wait_meta_leader(scaled(10000)));
  ASSERT_TRUE(create(0, {{"name", "FEED"}, {"subjects", {"feed.>"}}}).contains("config"));
  publish_n(0, "feed.a", "f", 1, 3);
  const json agg = {{"name", "AGG"}, {"sources", {{{"name", "FEED"}}}}};
  ASSERT_TRUE(create(1, agg).contains("config"));
  EXPECT_EQ(wait_state(1, "AGG", 3, 3).value("messages", 0ull), 3u);
  json up = agg;
  up["num_replicas"] = 3;
  const json r = placing(1, "$JS.API.STREAM.UPDATE.AGG", up.dump());
  ASSERT_TRUE(r.contains("config")) << r.dump();
  EXPECT_EQ(r["config"].value("num_replicas", 0), 3);
  ASSERT_FALSE(stream_leader("AGG", election_wait(15000)).empty());
  publish_n(0, "feed.b", "f", 4, 5);
  const json st = wait_state(2, "AGG", 5, 5);
  EXPECT_EQ(st.value("messages", 0ull), 5u) << st.dump();
  EXPECT_EQ(info(2, "AGG").value("config", json::object()).value("num_replicas", 0), 3);
  for (std::uint64_t seq = 1; seq <= 5; ++seq) EXPECT_EQ(get(2, "AGG", seq).data, "f" + std::to_string(seq)) << seq;
}

}  // namespace
}  // namespace peregrine::test
