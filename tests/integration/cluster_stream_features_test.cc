// Stream features across three real peregrine-server processes (issue 11): an atomic batch
// on an R3 stream is stored whole on every replica with one PubAck carrying "batch" and
// "count" (a batch breaking a batch rule stores nothing); what replicated streams do not
// carry yet (message schedules) is refused with a 10052 naming it, on create and on a
// scale-up; subject delete markers replace expired messages at the same sequences everywhere; counters keep their totals on an R3 stream across leaders and a scale-up; a refused scale leaves the R1 stream taking publishes; a mirror of an R3 origin
// gets the origin's messages whichever server it lives on; STREAM.INFO of an R3 stream takes
// subjects_filter and deleted_details as a standalone one does; an R3 stream updated with
// RePublish sends one copy of each stored message (from its leader), and one with a
// subject_transform stores the transformed subject; a fast-ingest batch on an R3 stream gets
// its flow acks and PubAck once committed, across a stepdown. Every wait polls with a bound.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/integration/cluster_js_fixture.h"

namespace peregrine::test {
namespace {

class cluster_stream_features : public cluster_js_fixture {
 protected:
  // A request carrying `headers` (name, value pairs); the reply's body ("<timeout>" if none).
  std::string request(natsConnection* nc, const std::string& subject, const std::string& data,
                      const std::vector<std::pair<std::string, std::string>>& headers) {
    natsMsg* m = nullptr;
    natsMsg* reply = nullptr;
    natsMsg_Create(&m, subject.c_str(), nullptr, data.data(), int(data.size()));
    for (const auto& [k, v] : headers) natsMsgHeader_Set(m, k.c_str(), v.c_str());
    const natsStatus s = natsConnection_RequestMsg(&reply, nc, m, int(scaled(3000).count()));
    natsMsg_Destroy(m);
    if (s != NATS_OK) return "<timeout>";
    std::string body = data_of(reply);
    natsMsg_Destroy(reply);
    return body;
  }

  std::uint64_t messages_on(int i, const std::string& stream, std::uint64_t want) {
    std::uint64_t n = ~0ull;
    const auto deadline = clock_type::now() + scaled(10000);
    while (clock_type::now() < deadline) {
      n = info(i, stream).value("state", json::object()).value("messages", ~0ull);
      if (n == want) break;
      std::this_thread::sleep_for(50ms);
    }
    return n;
  }

  json create(int i, const json& cfg) {
    return api_retry(i, "$JS.API.STREAM.CREATE." + cfg.value("name", ""), cfg.dump());
  }
};

int err_code(const json& r) { return r.value("error", json::object()).value("err_code", 0); }

TEST_F(cluster_stream_features, r3_atomic_batch_is_stored_whole_on_every_replica) {
  const json c = create(0, {{"name", "BATCH"}, {"subjects", {"batch.>"}}, {"num_replicas", 3},
                            {"storage", "file"}, {"allow_atomic", true}});
  ASSERT_TRUE(c.contains("config")) << c.dump();
  ASSERT_FALSE(stream_leader("BATCH", scaled(10000)).empty());
  // Through a server that may well not lead: routing carries each message to the leader.
  auto nc = connect(servers_[1]->url());
  ASSERT_TRUE(nc);
  auto part = [&](int seq, const std::string& commit, const std::string& extra_name = "",
                  const std::string& extra_value = "") {
    std::vector<std::pair<std::string, std::string>> h{{"Nats-Batch-Id", "b1"},
                                                       {"Nats-Batch-Sequence", std::to_string(seq)}};
    if (!commit.empty()) h.emplace_back("Nats-Batch-Commit", commit);
    if (!extra_name.empty()) h.emplace_back(extra_name, extra_value);
    return request(nc.get(), "batch.o" + std::to_string(seq), "m" + std::to_string(seq), h);
  };
  EXPECT_EQ(part(1, ""), "");  // staged: a zero-byte ack
  EXPECT_EQ(part(2, ""), "");
  const json ack = json::parse(part(3, "1"), nullptr, false);
  ASSERT_TRUE(ack.is_object()) << "no PubAck for the commit";
  EXPECT_EQ(ack.value("stream", ""), "BATCH") << ack.dump();
  EXPECT_EQ(ack.value("seq", 0), 3) << ack.dump();
  EXPECT_EQ(ack.value("batch", ""), "b1") << ack.dump();
  EXPECT_EQ(ack.value("count", 0), 3) << ack.dump();
  for (int i = 0; i < 3; ++i) EXPECT_EQ(messages_on(i, "BATCH", 3), 3u) << char('A' + i);
  // A batch whose commit breaks a batch rule is refused whole.
  EXPECT_EQ(part(1, ""), "");
  const json bad = json::parse(part(2, "1", "Nats-Expected-Last-Msg-Id", "x"), nullptr, false);
  EXPECT_EQ(err_code(bad), 10177) << bad.dump();
  // A later plain publish lands right after the first batch on every replica.
  EXPECT_EQ(publish(nc.get(), "batch.after", "p", "after-1", scaled(5000)), 4u);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(messages_on(i, "BATCH", 4), 4u) << char('A' + i);
  // An open batch given up (a message asking for an API level above ours) is advised by the
  // leader, as a standalone stream does, to a listener on any server.
  auto listener = connect(servers_[2]->url());
  ASSERT_TRUE(listener);
  auto adv = subscribe_sync(listener.get(), "$JS.EVENT.ADVISORY.STREAM.BATCH_ABANDONED.BATCH");
  ASSERT_TRUE(adv);
  natsConnection_FlushTimeout(listener.get(), 2000);
  std::this_thread::sleep_for(300ms);  // the interest reaches the leader's server
  auto part_of = [&](const std::string& id, int seq, const std::string& extra_name, const std::string& extra_value) {
    std::vector<std::pair<std::string, std::string>> h{{"Nats-Batch-Id", id}, {"Nats-Batch-Sequence", std::to_string(seq)}};
    if (!extra_name.empty()) h.emplace_back(extra_name, extra_value);
    return request(nc.get(), "batch.x", "m", h);
  };
  EXPECT_EQ(part_of("gone", 1, "", ""), "");
  const json refused = json::parse(part_of("gone", 2, "Nats-Required-Api-Level", "99"), nullptr, false);
  EXPECT_NE(err_code(refused), 0) << refused.dump();
  auto m = next_msg(adv.get(), scaled(5000));
  ASSERT_TRUE(m) << "no stream_batch_abandoned advisory";
  const json a = json::parse(data_of(m.get()), nullptr, false);
  EXPECT_EQ(a.value("type", ""), "io.nats.jetstream.advisory.v1.stream_batch_abandoned") << a.dump();
  EXPECT_EQ(a.value("stream", ""), "BATCH") << a.dump();
  EXPECT_EQ(a.value("batch", ""), "gone") << a.dump();
  EXPECT_EQ(a.value("reason", ""), "unsupported") << a.dump();
}

TEST_F(cluster_stream_features, r3_stream_info_pages_subjects_and_lists_deleted) {
  const json c = create(0, {{"name", "SUBJ"}, {"subjects", {"subj.>"}}, {"num_replicas", 3}, {"storage", "file"}});
  ASSERT_TRUE(c.contains("config")) << c.dump();
  ASSERT_FALSE(stream_leader("SUBJ", scaled(10000)).empty());
  auto nc = connect(servers_[1]->url());
  ASSERT_TRUE(nc);
  ASSERT_EQ(publish(nc.get(), "subj.a", "1", "s1", scaled(5000)), 1u);
  ASSERT_EQ(publish(nc.get(), "subj.b", "2", "s2", scaled(5000)), 2u);
  ASSERT_EQ(publish(nc.get(), "subj.a", "3", "s3", scaled(5000)), 3u);
  ASSERT_EQ(publish(nc.get(), "subj.c", "4", "s4", scaled(5000)), 4u);
  ASSERT_TRUE(api_retry(1, "$JS.API.STREAM.MSG.DELETE.SUBJ", R"({"seq":2})").value("success", false));  // inside: a gap
  const json all = api(nc.get(), "$JS.API.STREAM.INFO.SUBJ", R"({"subjects_filter":">","deleted_details":true})");
  EXPECT_EQ(all.value("total", 0), 2) << all.dump();
  EXPECT_EQ(all.value("limit", 0), 100000) << all.dump();
  const json st = all.value("state", json::object());
  EXPECT_EQ(st.value("subjects", json::object()), (json{{"subj.a", 2}, {"subj.c", 1}})) << all.dump();
  EXPECT_EQ(st.value("deleted", json::array()), json::array({2})) << all.dump();
  EXPECT_EQ(st.value("num_deleted", 0), 1) << all.dump();
  const json one = api(nc.get(), "$JS.API.STREAM.INFO.SUBJ", R"({"subjects_filter":"subj.c"})");
  EXPECT_EQ(one.value("state", json::object()).value("subjects", json::object()), (json{{"subj.c", 1}})) << one.dump();
  EXPECT_FALSE(one.value("state", json::object()).contains("deleted")) << one.dump();
  const json paged = api(nc.get(), "$JS.API.STREAM.INFO.SUBJ", R"({"subjects_filter":">","offset":1})");
  EXPECT_EQ(paged.value("offset", 0), 1) << paged.dump();
  EXPECT_EQ(paged.value("state", json::object()).value("subjects", json::object()), (json{{"subj.c", 1}})) << paged.dump();
  const json none = api(nc.get(), "$JS.API.STREAM.INFO.SUBJ", R"({"subjects_filter":"other"})");
  EXPECT_EQ(none.value("total", -1), 0) << none.dump();
  EXPECT_EQ(none.value("limit", -1), 0) << none.dump();
  EXPECT_FALSE(none.value("state", json::object()).contains("subjects")) << none.dump();
  const json bad = api(nc.get(), "$JS.API.STREAM.INFO.SUBJ", R"({"offset":"x"})");
  EXPECT_NE(err_code(bad), 0) << bad.dump();
  EXPECT_EQ(bad.value("total", -1), 0) << bad.dump();
}

TEST_F(cluster_stream_features, r3_republishes_once_and_transforms_ingested_subjects) {
  json cfg{{"name", "ORD"}, {"subjects", {"ord.>"}}, {"num_replicas", 3}, {"storage", "file"}};
  ASSERT_TRUE(create(0, cfg).contains("config"));
  ASSERT_FALSE(stream_leader("ORD", scaled(10000)).empty());
  cfg["republish"] = {{"src", "ord.>"}, {"dest", "dash.ord.>"}};
  const json up = api_retry(1, "$JS.API.STREAM.UPDATE.ORD", cfg.dump());
  ASSERT_EQ(up.value("config", json::object()).value("republish", json::object()).value("dest", ""), "dash.ord.>")
      << up.dump();
  auto sub_nc = connect(servers_[2]->url());
  ASSERT_TRUE(sub_nc);
  natsSubscription* sub = nullptr;
  ASSERT_EQ(natsConnection_SubscribeSync(&sub, sub_nc.get(), "dash.ord.>"), NATS_OK);
  ASSERT_EQ(natsConnection_FlushTimeout(sub_nc.get(), 2000), NATS_OK);
  std::this_thread::sleep_for(200ms);  // the interest reaches the routes
  auto nc = connect(servers_[0]->url());
  ASSERT_TRUE(nc);
  // The update applies at its entry in the stream's log: publish until a copy comes.
  natsMsg* copy = nullptr;
  std::uint64_t seq = 0;
  for (int k = 0; k < 20 && !copy; ++k) {
    seq = publish(nc.get(), "ord.created", "order", "ord-" + std::to_string(k), scaled(5000));
    ASSERT_NE(seq, 0u);
    natsSubscription_NextMsg(&copy, sub, 500);
  }
  ASSERT_NE(copy, nullptr) << "no republished copy";
  EXPECT_STREQ(natsMsg_GetSubject(copy), "dash.ord.created");
  const char* v = nullptr;
  ASSERT_EQ(natsMsgHeader_Get(copy, "Nats-Stream", &v), NATS_OK);
  EXPECT_STREQ(v, "ORD");
  ASSERT_EQ(natsMsgHeader_Get(copy, "Nats-Sequence", &v), NATS_OK);
  EXPECT_EQ(std::string(v), std::to_string(seq));
  EXPECT_EQ(std::string(natsMsg_GetData(copy), natsMsg_GetDataLength(copy)), "order");
  natsMsg_Destroy(copy);
  // One more publish: exactly one copy (only the leader republishes).
  const std::uint64_t next = publish(nc.get(), "ord.shipped", "ship", "ord-ship", scaled(5000));
  ASSERT_EQ(next, seq + 1);
  int copies = 0;
  for (natsMsg* m = nullptr; natsSubscription_NextMsg(&m, sub, 700) == NATS_OK; m = nullptr) {
    if (std::string(natsMsg_GetSubject(m)) == "dash.ord.shipped") ++copies;
    natsMsg_Destroy(m);
  }
  EXPECT_EQ(copies, 1);
  natsSubscription_Destroy(sub);

  const json t = create(1, {{"name", "SHARD"}, {"subjects", {"ingest.*"}}, {"num_replicas", 3}, {"storage", "file"},
                            {"subject_transform", {{"src", "ingest.*"}, {"dest", "sharded.{{wildcard(1)}}"}}}});
  ASSERT_TRUE(t.contains("config")) << t.dump();
  ASSERT_FALSE(stream_leader("SHARD", scaled(10000)).empty());
  ASSERT_EQ(publish(nc.get(), "ingest.acme", "a", "i-1", scaled(5000)), 1u);
  const json got = api(nc.get(), "$JS.API.STREAM.MSG.GET.SHARD", R"({"seq":1})");
  EXPECT_EQ(got.value("message", json::object()).value("subject", ""), "sharded.acme") << got.dump();
}

TEST_F(cluster_stream_features, r3_refuses_what_it_does_not_carry_by_name) {
  ASSERT_TRUE(wait_meta_leader(scaled(10000)));
  const json k = create(2, {{"name", "K3"}, {"subjects", {"k.>"}}, {"num_replicas", 3}, {"allow_msg_schedules", true}});
  EXPECT_EQ(err_code(k), 10052) << k.dump();
  EXPECT_EQ(k.value("error", json::object()).value("description", ""),
            "replicated streams do not support message schedules yet, use num_replicas 1")
      << k.dump();
  // An R1 schedules stream asked to scale up: refused, and it stays R1.
  ASSERT_TRUE(create(0, {{"name", "SCH"}, {"subjects", {"sch.>"}}, {"allow_msg_schedules", true}}).contains("config"));
  const json up = api_retry(
      0, "$JS.API.STREAM.UPDATE.SCH",
      json{{"name", "SCH"}, {"subjects", {"sch.>"}}, {"allow_msg_schedules", true}, {"num_replicas", 3}}.dump());
  EXPECT_EQ(err_code(up), 10052) << up.dump();
  EXPECT_EQ(info(0, "SCH").value("config", json::object()).value("num_replicas", 0), 1);
}

// Subject delete markers on an R3 stream: max_age takes each subject's last message and
// leaves a marker (Nats-Marker-Reason: MaxAge, Nats-TTL) in its place, at the same sequence
// on every replica; publishing goes on after the markers; the markers expire by their TTL.
TEST_F(cluster_stream_features, r3_subject_delete_markers_replace_expired_messages_everywhere) {
  ASSERT_TRUE(wait_meta_leader(scaled(10000)));
  const json c = create(1, {{"name", "MK"}, {"subjects", {"mk.>"}}, {"num_replicas", 3},
                            {"max_age", 1'000'000'000}, {"subject_delete_marker_ttl", 2'000'000'000}});
  ASSERT_TRUE(c.contains("config")) << c.dump();
  EXPECT_TRUE(c["config"].value("allow_rollup_hdrs", false)) << c.dump();
  ASSERT_FALSE(stream_leader("MK", scaled(10000)).empty());
  auto nc = connect(servers_[2]->url());
  ASSERT_TRUE(nc);
  ASSERT_EQ(publish(nc.get(), "mk.a", "a", "a1", scaled(5000)), 1u);
  ASSERT_EQ(publish(nc.get(), "mk.b", "b", "b1", scaled(5000)), 2u);
  // Both expire after a second: two markers, sequences 3 and 4, on every server.
  for (int i = 0; i < 3; ++i) {
    json st;
    const auto deadline = clock_type::now() + scaled(10000);
    while (clock_type::now() < deadline) {
      st = replica_state(i, "MK");
      if (st.value("first_seq", 0) == 3 && st.value("last_seq", 0) == 4) break;
      std::this_thread::sleep_for(50ms);
    }
    EXPECT_EQ(st.value("messages", 0), 2) << i << ": " << st.dump() << logs();
    EXPECT_EQ(st.value("first_seq", 0), 3) << i << ": " << st.dump();
    EXPECT_EQ(st.value("last_seq", 0), 4) << i << ": " << st.dump();
  }
  const json got = api(nc.get(), "$JS.API.STREAM.MSG.GET.MK", R"({"last_by_subj":"mk.a"})");
  const auto& msg = got.value("message", json::object());
  EXPECT_EQ(msg.value("seq", 0), 3) << got.dump();
  const std::string hdrs = base64_decode(msg.value("hdrs", ""));
  EXPECT_NE(hdrs.find("Nats-Marker-Reason: MaxAge"), std::string::npos) << hdrs;
  EXPECT_NE(hdrs.find("Nats-TTL: 2s"), std::string::npos) << hdrs;
  // Publishing goes on after the markers.
  EXPECT_EQ(publish(nc.get(), "mk.c", "c", "c1", scaled(5000)), 5u);
  // The markers expire by their own TTL; mk.c's message leaves a marker in turn.
  const auto deadline = clock_type::now() + scaled(10000);
  json st;
  while (clock_type::now() < deadline) {
    st = info(0, "MK").value("state", json::object());
    if (st.value("first_seq", 0) >= 6) break;
    std::this_thread::sleep_for(100ms);
  }
  EXPECT_GE(st.value("first_seq", 0), 6) << st.dump();
  EXPECT_EQ(st.value("last_seq", 0), 6) << st.dump();  // the markers left no marker of their own
}

// Message counters (allow_msg_counter) on an R3 stream: each Nats-Incr's PubAck carries the
// new total ("val"), totals continue across a stepdown and an atomic batch of increments, and
// an R1 counter stream scaled to three replicas keeps counting from its total.
TEST_F(cluster_stream_features, r3_counters_keep_their_totals_across_leaders) {
  ASSERT_TRUE(wait_meta_leader(scaled(10000)));
  const json c = create(1, {{"name", "CNT3"}, {"subjects", {"cnt3.>"}}, {"num_replicas", 3},
                            {"allow_msg_counter", true}, {"allow_atomic", true}});
  ASSERT_TRUE(c.contains("config")) << c.dump();
  const std::string leader = stream_leader("CNT3", scaled(10000));
  ASSERT_FALSE(leader.empty());
  auto nc = connect(servers_[2]->url());
  ASSERT_TRUE(nc);
  auto incr = [&](const std::string& subject, const std::string& by) {
    return request(nc.get(), subject, "", {{"Nats-Incr", by}});
  };
  EXPECT_EQ(incr("cnt3.a", "5"), R"({"stream":"CNT3","seq":1,"val":"5"})");
  EXPECT_EQ(incr("cnt3.a", "+3"), R"({"stream":"CNT3","seq":2,"val":"8"})");
  EXPECT_EQ(incr("cnt3.b", "-2"), R"({"stream":"CNT3","seq":3,"val":"-2"})");
  const json bad = json::parse(incr("cnt3.a", "x1"), nullptr, false);
  EXPECT_EQ(err_code(bad), 10171) << bad.dump();  // not an integer
  const json sd = api_retry(index_of(leader), "$JS.API.STREAM.LEADER.STEPDOWN.CNT3", "");
  EXPECT_TRUE(sd.value("success", false)) << sd.dump();
  ASSERT_FALSE(stream_leader("CNT3", scaled(15000), leader).empty());
  std::string after;
  for (int i = 0; i < 50 && after.find("val") == std::string::npos; ++i) {  // the new leader settles
    after = incr("cnt3.a", "10");
    if (after.find("val") == std::string::npos) std::this_thread::sleep_for(100ms);
  }
  EXPECT_EQ(after, R"({"stream":"CNT3","seq":4,"val":"18"})");
  // An atomic batch of increments: each adds to the total before it.
  EXPECT_EQ(request(nc.get(), "cnt3.b", "", {{"Nats-Incr", "1"}, {"Nats-Batch-Id", "cb"}, {"Nats-Batch-Sequence", "1"}}),
            "");
  EXPECT_EQ(request(nc.get(), "cnt3.b", "",
                    {{"Nats-Incr", "4"}, {"Nats-Batch-Id", "cb"}, {"Nats-Batch-Sequence", "2"}, {"Nats-Batch-Commit", "1"}}),
            R"({"stream":"CNT3","seq":6,"batch":"cb","count":2})");  // as the standalone batch PubAck: no val
  const json last = api(nc.get(), "$JS.API.STREAM.MSG.GET.CNT3", R"({"last_by_subj":"cnt3.b"})");
  EXPECT_EQ(base64_decode(last.value("message", json::object()).value("data", "")), R"({"val":"3"})") << last.dump();

  // An R1 counter stream scaled up keeps its total.
  ASSERT_TRUE(create(0, {{"name", "CNT1"}, {"subjects", {"cnt1.>"}}, {"allow_msg_counter", true}}).contains("config"));
  auto nc0 = connect(servers_[0]->url());
  ASSERT_TRUE(nc0);
  EXPECT_EQ(request(nc0.get(), "cnt1.x", "", {{"Nats-Incr", "7"}}), R"({"stream":"CNT1","seq":1,"val":"7"})");
  const json up = api_retry(
      0, "$JS.API.STREAM.UPDATE.CNT1",
      json{{"name", "CNT1"}, {"subjects", {"cnt1.>"}}, {"allow_msg_counter", true}, {"num_replicas", 3}}.dump());
  ASSERT_TRUE(up.contains("config")) << up.dump();
  ASSERT_FALSE(stream_leader("CNT1", scaled(15000)).empty());
  std::string scaled_ack;
  for (int i = 0; i < 50 && scaled_ack.find("val") == std::string::npos; ++i) {
    scaled_ack = request(nc0.get(), "cnt1.x", "", {{"Nats-Incr", "1"}});
    if (scaled_ack.find("val") == std::string::npos) std::this_thread::sleep_for(100ms);
  }
  EXPECT_EQ(scaled_ack, R"({"stream":"CNT1","seq":2,"val":"8"})");
}

TEST_F(cluster_stream_features, refused_scale_leaves_the_stream_taking_publishes) {
  ASSERT_TRUE(wait_meta_leader(scaled(10000)));
  ASSERT_TRUE(create(0, {{"name", "R1"}, {"subjects", {"r1.>"}}, {"storage", "file"}}).contains("config"));
  auto nc = connect(servers_[0]->url());
  ASSERT_TRUE(nc);
  ASSERT_EQ(publish(nc.get(), "r1.a", "x", "r1-1", scaled(5000)), 1u);
  // Five replicas on three servers: no placement.
  const json up = api_retry(0, "$JS.API.STREAM.UPDATE.R1",
                            json{{"name", "R1"}, {"subjects", {"r1.>"}}, {"storage", "file"}, {"num_replicas", 5}}.dump());
  EXPECT_EQ(err_code(up), 10005) << up.dump();
  // At once, not after the scale's window: one try of 1 s.
  EXPECT_EQ(publish(nc.get(), "r1.a", "y", "r1-2", std::chrono::milliseconds(1000)), 2u);
  EXPECT_EQ(info(0, "R1").value("state", json::object()).value("messages", 0), 2);
}

TEST_F(cluster_stream_features, mirror_of_an_r3_origin_gets_its_messages_on_every_server) {
  const json c = create(0, {{"name", "SRC3"}, {"subjects", {"src3.>"}}, {"num_replicas", 3}, {"storage", "file"}});
  ASSERT_TRUE(c.contains("config")) << c.dump();
  ASSERT_FALSE(stream_leader("SRC3", scaled(10000)).empty());
  auto nc = connect(servers_[2]->url());
  ASSERT_TRUE(nc);
  for (int k = 1; k <= 3; ++k)
    ASSERT_EQ(publish(nc.get(), "src3.x", "m", "s-" + std::to_string(k), scaled(5000)), std::uint64_t(k));
  // One mirror per server: the origin's consumer for at least one of them leads elsewhere.
  for (int i = 0; i < 3; ++i) {
    const std::string name = std::string("MIR") + char('A' + i);
    const json m = create(i, {{"name", name}, {"mirror", {{"name", "SRC3"}}}});
    ASSERT_TRUE(m.contains("config")) << m.dump();
  }
  for (int i = 0; i < 3; ++i) {
    const std::string name = std::string("MIR") + char('A' + i);
    EXPECT_EQ(messages_on(i, name, 3), 3u) << name;
  }
}

// Fast-ingest batches (`allow_batched`) on an R3 stream, published through a server that may
// not lead it: the initial ack, flow acks, the final PubAck, every message stored once; after a
// stepdown a new batch goes on from the stream's last sequence.
TEST_F(cluster_stream_features, r3_fast_ingest_batch_acks_after_commit) {
  ASSERT_TRUE(wait_meta_leader(scaled(10000)));
  const json c = create(1, {{"name", "FB"}, {"subjects", {"fb.>"}}, {"num_replicas", 3}, {"allow_batched", true}});
  ASSERT_TRUE(c.contains("config")) << c.dump();
  EXPECT_EQ(c["config"].value("allow_batched", false), true);
  const std::string leader = stream_leader("FB", scaled(10000));
  ASSERT_FALSE(leader.empty());
  auto nc = connect(servers_[2]->url());
  ASSERT_TRUE(nc);
  auto run_batch = [&](const std::string& id, int n, std::uint64_t last_seq) {
    auto sub = subscribe_sync(nc.get(), "_INBOX." + id + ".>");
    natsConnection_Flush(nc.get());
    auto reply = [&](int seq, int op) {
      return "_INBOX." + id + ".100.fail." + std::to_string(seq) + "." + std::to_string(op) + ".$FI";
    };
    auto next = [&] {
      msg_ptr m = next_msg(sub.get(), scaled(5000));
      return m ? std::string(natsMsg_GetData(m.get()), std::size_t(natsMsg_GetDataLength(m.get()))) : std::string();
    };
    for (int i = 1; i <= n; ++i) {
      const std::string r = reply(i, i == 1 ? 0 : i == n ? 2 : 1);
      const std::string data = id + "-" + std::to_string(i);
      ASSERT_EQ(natsConnection_PublishRequest(nc.get(), "fb.x", r.c_str(), data.data(), int(data.size())), NATS_OK);
      if (i == 1) {
        EXPECT_EQ(next(), R"({"type":"ack","seq":0,"msgs":100})");
      } else if (i % 100 == 0 && i < n) {  // as a publisher does: on once the window is acknowledged
        natsConnection_Flush(nc.get());
        EXPECT_EQ(next(), R"({"type":"ack","seq":)" + std::to_string(i) + R"(,"msgs":100})");
      }
    }
    natsConnection_Flush(nc.get());
    EXPECT_EQ(next(), R"({"stream":"FB","seq":)" + std::to_string(last_seq) + R"(,"batch":")" + id +
                          R"(","count":)" + std::to_string(n) + "}");
  };
  run_batch("Fa", 250, 250);
  EXPECT_EQ(info(0, "FB").value("state", json::object()).value("messages", 0ull), 250u);
  const json sd = api_retry(index_of(leader), "$JS.API.STREAM.LEADER.STEPDOWN.FB", "");
  EXPECT_TRUE(sd.value("success", false)) << sd.dump();
  ASSERT_FALSE(stream_leader("FB", scaled(15000), leader).empty());
  run_batch("Fb", 120, 370);
  const json st = info(2, "FB").value("state", json::object());
  EXPECT_EQ(st.value("messages", 0ull), 370u) << st.dump();
  const json last = api(nc.get(), "$JS.API.STREAM.MSG.GET.FB", R"({"seq":370})");
  EXPECT_EQ(base64_decode(last.value("message", json::object()).value("data", "")), "Fb-120") << last.dump();
}

}  // namespace
}  // namespace peregrine::test
