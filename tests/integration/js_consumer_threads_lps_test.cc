// last_per_subject consumers on a consumer thread (js_threads: 2, consumer_threads: 1): their
// start set (the last message of each matching subject when they were made) is resolved on
// the stream's owner, which pages only those into the thread's window below the set's end;
// from there on they are consumers like any other. Their pulls and acks reach the consumer
// thread (/metrics), they deliver exactly the last message per subject and then what is new,
// redeliver, survive a restart; a KV watcher's consumer (nats.js `kv.watch()`: an ordered push
// consumer, last_per_subject, ack none, flow control, heartbeats) sees each key's value once.
// Peregrine only (nats-server has no such placement).
#include <map>
#include <optional>

#include "tests/integration/js_consumer_threads_fixture.h"

namespace peregrine::test {
namespace {

// One delivered message as its ack subject tells it:
// $JS.ACK.<stream>.<consumer>.<delivered>.<stream seq>.<consumer seq>.<ts>.<pending>.
struct got_msg {
  std::string subject;
  std::uint64_t seq = 0, deliveries = 0, pending = 0;
};

std::optional<got_msg> parse_delivery(natsMsg* m) {
  const std::string reply = natsMsg_GetReply(m) ? natsMsg_GetReply(m) : "";
  static const std::regex re("^\\$JS\\.ACK\\.[^.]+\\.[^.]+\\.([0-9]+)\\.([0-9]+)\\.[0-9]+\\.[0-9]+\\.([0-9]+)$");
  std::smatch sm;
  if (!std::regex_search(reply, sm, re)) return std::nullopt;
  return got_msg{natsMsg_GetSubject(m), std::stoull(sm[2]), std::stoull(sm[1]), std::stoull(sm[3])};
}

std::vector<std::uint64_t> seqs_of(const std::vector<got_msg>& v) {
  std::vector<std::uint64_t> out;
  for (const auto& g : v) out.push_back(g.seq);
  return out;
}

class js_consumer_threads_lps : public js_consumer_threads {
 protected:
  // One pull of up to `batch` (expires 2 s, stretched under the sanitizers), each message
  // acked (with a reply: answered once applied) unless `ack` is false.
  std::vector<got_msg> fetch(const std::string& stream, const std::string& consumer, int batch, bool ack = true) {
    std::vector<got_msg> got;
    natsSubscription* raw = nullptr;
    const std::string inbox = "_INBOX.lps." + std::to_string(++fetch_n_);
    if (natsConnection_SubscribeSync(&raw, nc_.get(), inbox.c_str()) != NATS_OK) return got;
    const std::string subj = "$JS.API.CONSUMER.MSG.NEXT." + stream + "." + consumer;
    const std::string body =
        nlohmann::json{{"batch", batch}, {"expires", std::int64_t(2000000000) * time_scale()}}.dump();
    natsConnection_PublishRequestString(nc_.get(), subj.c_str(), inbox.c_str(), body.c_str());
    for (int i = 0; i < batch; ++i) {
      natsMsg* m = nullptr;
      if (natsSubscription_NextMsg(&m, raw, 5000 * time_scale()) != NATS_OK) break;
      auto d = parse_delivery(m);
      if (!d) {  // a status: the batch is over
        natsMsg_Destroy(m);
        break;
      }
      got.push_back(*d);
      if (ack) {
        natsMsg* r = nullptr;
        natsConnection_RequestString(&r, nc_.get(), natsMsg_GetReply(m), "+ACK", 5000 * time_scale());
        natsMsg_Destroy(r);
      }
      natsMsg_Destroy(m);
    }
    natsSubscription_Destroy(raw);
    return got;
  }

  nlohmann::json add_consumer(const std::string& stream, const nlohmann::json& cfg) {
    const std::string name = cfg.value("durable_name", "");
    const std::string subj = name.empty() ? "$JS.API.CONSUMER.CREATE." + stream
                                          : "$JS.API.CONSUMER.DURABLE.CREATE." + stream + "." + name;
    return request(subj, nlohmann::json{{"stream_name", stream}, {"config", cfg}}.dump());
  }

  // lp.b(1) lp.a(2) lp.a(3) lp.c(4) other.x(5) lp.a(6) lp.d(7) lp.c(8): the lasts of lp.> are
  // b=1, a=6, d=7, c=8.
  void publish_lp() {
    ASSERT_FALSE(create({{"name", "LP"}, {"subjects", {"lp.>", "other.>"}}, {"storage", "file"}}).contains("error"));
    int seq = 0;
    for (const char* s : {"lp.b", "lp.a", "lp.a", "lp.c", "other.x", "lp.a", "lp.d", "lp.c"})
      ASSERT_EQ(publish(s, "v" + std::to_string(++seq)).value("seq", 0), seq);
  }

  int fetch_n_ = 0;
};

// Pull, filtered: the last of each subject (and nothing of other.>), redelivered after its
// ack wait, then new messages; every pull and ack handled by the consumer thread, not an
// owner; after a restart it goes on from its acked state, still on the thread.
TEST_F(js_consumer_threads_lps, a_last_per_subject_pull_consumer_runs_on_the_consumer_thread) {
  publish_lp();
  const long long owners_before = owners_handled(), thread_before = consumer_thread_handled();
  ASSERT_GE(owners_before, 0);
  ASSERT_GE(thread_before, 0);
  auto r = add_consumer("LP", {{"durable_name", "L"},
                               {"deliver_policy", "last_per_subject"},
                               {"filter_subject", "lp.>"},
                               {"ack_policy", "explicit"},
                               {"ack_wait", 500000000}});
  ASSERT_FALSE(r.contains("error")) << r.dump();
  EXPECT_EQ(r.value("num_pending", -1), 4) << r.dump();

  auto first = fetch("LP", "L", 4, false);  // (a bigger batch would take the redeliveries too)
  EXPECT_EQ(seqs_of(first), (std::vector<std::uint64_t>{1, 6, 7, 8}));
  ASSERT_EQ(first.size(), 4u);
  EXPECT_EQ(first[0].subject, "lp.b");
  EXPECT_EQ(first[3].subject, "lp.c");
  EXPECT_EQ(first[3].pending, 0u);  // the start set is all there is
  EXPECT_EQ(first[0].pending, 3u);
  // Not acked: back after the ack wait, from the thread's timers.
  auto again = fetch("LP", "L", 4);
  EXPECT_EQ(seqs_of(again), (std::vector<std::uint64_t>{1, 6, 7, 8}));
  for (const auto& g : again) EXPECT_EQ(g.deliveries, 2u);
  // Stored after it was made: every one (lp.a twice), in order.
  for (const char* s : {"lp.a", "other.y", "lp.a", "lp.e"}) ASSERT_GT(publish(s, "new").value("seq", 0), 8);
  auto fresh = fetch("LP", "L", 3);
  EXPECT_EQ(seqs_of(fresh), (std::vector<std::uint64_t>{9, 11, 12}));

  auto info = consumer_info("LP", "L");
  EXPECT_EQ(info["delivered"].value("stream_seq", 0), 12) << info.dump();
  EXPECT_EQ(info["ack_floor"].value("stream_seq", 0), 12);
  EXPECT_EQ(info.value("num_ack_pending", -1), 0);
  EXPECT_EQ(info.value("num_pending", -1), 0);
  EXPECT_EQ(info.value("num_redelivered", -1), 0);  // all acked since
  const long long on_thread = consumer_thread_handled() - thread_before;
  const long long owners = owners_handled() - owners_before;
  std::printf("consumer thread handled %lld, owners %lld\n", on_thread, owners);
  // 3 pulls and 7 acks; the owners saw the create, the publishes' stream and one INFO.
  EXPECT_GE(on_thread, 10) << "the pulls and acks did not reach the consumer thread";
  EXPECT_LT(owners, 10);

  restart(false);
  info = consumer_info("LP", "L");
  EXPECT_EQ(info["ack_floor"].value("stream_seq", 0), 12) << info.dump();
  EXPECT_EQ(info.value("num_pending", -1), 0);
  ASSERT_EQ(publish("lp.b", "after").value("seq", 0), 13);
  const long long restarted = consumer_thread_handled();
  auto after = fetch("LP", "L", 1);
  EXPECT_EQ(seqs_of(after), (std::vector<std::uint64_t>{13}));
  EXPECT_GE(consumer_thread_handled() - restarted, 2) << "after the restart the consumer left its thread";
}

// Several filters, and ">": the last of each matching subject, merged in stream order;
// deliver last with several filters: from the newest of the filters' lasts.
TEST_F(js_consumer_threads_lps, filters_of_a_last_per_subject_consumer_and_deliver_last) {
  publish_lp();
  const long long thread_before = consumer_thread_handled();
  ASSERT_GE(thread_before, 0);
  auto r = add_consumer("LP", {{"durable_name", "M"},
                               {"deliver_policy", "last_per_subject"},
                               {"filter_subjects", {"lp.a", "lp.c", "other.>"}},
                               {"ack_policy", "explicit"}});
  ASSERT_FALSE(r.contains("error")) << r.dump();
  EXPECT_EQ(r.value("num_pending", -1), 3);
  EXPECT_EQ(seqs_of(fetch("LP", "M", 3)), (std::vector<std::uint64_t>{5, 6, 8}));

  // (Without a filter it is 10094, as in nats-server: ">" is every subject.)
  r = add_consumer("LP", {{"durable_name", "ALL"},
                          {"deliver_policy", "last_per_subject"},
                          {"filter_subject", ">"},
                          {"ack_policy", "explicit"}});
  ASSERT_FALSE(r.contains("error")) << r.dump();
  EXPECT_EQ(r.value("num_pending", -1), 5);
  EXPECT_EQ(seqs_of(fetch("LP", "ALL", 5)), (std::vector<std::uint64_t>{1, 5, 6, 7, 8}));

  r = add_consumer("LP", {{"durable_name", "LAST"},
                          {"deliver_policy", "last"},
                          {"filter_subjects", {"lp.a", "lp.b"}},
                          {"ack_policy", "explicit"}});
  ASSERT_FALSE(r.contains("error")) << r.dump();
  EXPECT_EQ(seqs_of(fetch("LP", "LAST", 1)), (std::vector<std::uint64_t>{6}));

  ASSERT_EQ(publish("lp.b", "x").value("seq", 0), 9);
  ASSERT_EQ(publish("lp.c", "x").value("seq", 0), 10);
  ASSERT_EQ(publish("other.z", "x").value("seq", 0), 11);
  EXPECT_EQ(seqs_of(fetch("LP", "M", 2)), (std::vector<std::uint64_t>{10, 11}));
  EXPECT_EQ(seqs_of(fetch("LP", "ALL", 3)), (std::vector<std::uint64_t>{9, 10, 11}));
  EXPECT_EQ(seqs_of(fetch("LP", "LAST", 1)), (std::vector<std::uint64_t>{9}));
  for (const char* c : {"M", "ALL", "LAST"}) {  // nothing else to deliver
    auto info = consumer_info("LP", c);
    EXPECT_EQ(info.value("num_pending", -1), 0) << info.dump();
    EXPECT_EQ(info.value("num_ack_pending", -1), 0) << info.dump();
  }
  // 6 pulls, 3 + 5 + 1 + 2 + 3 + 1 acks.
  EXPECT_GE(consumer_thread_handled() - thread_before, 6 + 15) << "not all three ran on the consumer thread";
}

// A restart before the start set was all delivered: the consumer resumes from its acked state
// as an owner-thread one does (everything matching after what it delivered: the restored
// consumer has no start set any more), and its later deliveries are still the thread's.
TEST_F(js_consumer_threads_lps, a_restart_inside_the_start_set) {
  publish_lp();
  auto r = add_consumer("LP", {{"durable_name", "R"},
                               {"deliver_policy", "last_per_subject"},
                               {"filter_subject", "lp.>"},
                               {"ack_policy", "explicit"}});
  ASSERT_FALSE(r.contains("error")) << r.dump();
  EXPECT_EQ(seqs_of(fetch("LP", "R", 1)), (std::vector<std::uint64_t>{1}));
  restart(false);
  const long long thread_before = consumer_thread_handled();
  EXPECT_EQ(seqs_of(fetch("LP", "R", 6)), (std::vector<std::uint64_t>{2, 3, 4, 6, 7, 8}));
  auto info = consumer_info("LP", "R");
  EXPECT_EQ(info["ack_floor"].value("stream_seq", 0), 8) << info.dump();
  EXPECT_EQ(info.value("num_pending", -1), 0);
  EXPECT_GE(consumer_thread_handled() - thread_before, 7);
}

// What nats.js's kv.watch() makes: an ordered (ephemeral, ack none, flow control, idle
// heartbeat, memory state) push consumer of $KV.<bucket>.>, last_per_subject. It delivers each
// key's newest revision (a delete marker too) with the pending count falling to 0 on the last
// of them (nats.js's "initial values done"), then every update live.
TEST_F(js_consumer_threads_lps, a_kv_watcher_sees_each_keys_last_value_then_updates) {
  ASSERT_FALSE(create({{"name", "KV_B"},
                       {"subjects", {"$KV.B.>"}},
                       {"storage", "file"},
                       {"max_msgs_per_subject", 5},
                       {"allow_rollup_hdrs", true},
                       {"deny_delete", true},
                       {"allow_direct", true}})
                   .contains("error"));
  // 40 keys, three revisions each, and k7 deleted: 121 messages.
  int seq = 0;
  for (int rev = 0; rev < 3; ++rev)
    for (int k = 0; k < 40; ++k)
      ASSERT_EQ(publish("$KV.B.k" + std::to_string(k), "r" + std::to_string(rev)).value("seq", 0), ++seq);
  ASSERT_EQ(publish("$KV.B.k7", "", {{"KV-Operation", "DEL"}}).value("seq", 0), ++seq);

  natsSubscription* raw = nullptr;
  ASSERT_EQ(natsConnection_SubscribeSync(&raw, nc_.get(), "_INBOX.kvwatch"), NATS_OK);
  ASSERT_EQ(natsConnection_Flush(nc_.get()), NATS_OK);
  auto r = add_consumer("KV_B", {{"deliver_subject", "_INBOX.kvwatch"},
                                 {"deliver_policy", "last_per_subject"},
                                 {"ack_policy", "none"},
                                 {"filter_subject", "$KV.B.>"},
                                 {"flow_control", true},
                                 {"idle_heartbeat", 500000000},
                                 {"mem_storage", true},
                                 {"max_deliver", 1},
                                 {"num_replicas", 1},
                                 {"headers_only", false},
                                 {"replay_policy", "instant"}});
  ASSERT_FALSE(r.contains("error")) << r.dump();  // (its num_pending: what it had not pushed yet)
  const std::string name = r.value("name", "");

  // The initial values, then (after the updates below) the live ones.
  std::map<std::string, std::string> values;
  std::vector<got_msg> got;
  bool deleted_seen = false;
  auto read = [&](std::size_t want) {
    const auto deadline = std::chrono::steady_clock::now() + 10s * time_scale();
    while (got.size() < want && std::chrono::steady_clock::now() < deadline) {
      natsMsg* m = nullptr;
      if (natsSubscription_NextMsg(&m, raw, 200) != NATS_OK) continue;
      const std::string reply = natsMsg_GetReply(m) ? natsMsg_GetReply(m) : "";
      if (reply.rfind("$JS.FC.", 0) == 0) natsConnection_PublishString(nc_.get(), reply.c_str(), "");
      if (auto d = parse_delivery(m)) {
        const char* op = nullptr;
        if (natsMsgHeader_Get(m, "KV-Operation", &op) == NATS_OK && std::string(op) == "DEL") deleted_seen = true;
        values[d->subject] = std::string(natsMsg_GetData(m) ? natsMsg_GetData(m) : "", natsMsg_GetDataLength(m));
        got.push_back(*d);
      }
      natsMsg_Destroy(m);
    }
  };
  read(40);
  ASSERT_EQ(got.size(), 40u);
  EXPECT_EQ(got.back().pending, 0u);
  for (std::size_t i = 1; i < got.size(); ++i) {
    EXPECT_LT(got[i - 1].seq, got[i].seq);
    EXPECT_EQ(got[i - 1].pending, got[i].pending + 1);
  }
  EXPECT_EQ(got.front().seq, 81u);  // k0's third revision; k7's is a delete at the end
  EXPECT_EQ(got.back().seq, 121u);
  EXPECT_TRUE(deleted_seen);
  for (int k = 0; k < 40; ++k)
    if (k != 7) {
      EXPECT_EQ(values["$KV.B.k" + std::to_string(k)], "r2") << k;
    }

  // Updates, a new key: delivered as they happen.
  ASSERT_EQ(publish("$KV.B.k3", "r3").value("seq", 0), 122);
  ASSERT_EQ(publish("$KV.B.new", "n0").value("seq", 0), 123);
  read(42);
  ASSERT_EQ(got.size(), 42u);
  EXPECT_EQ(got[40].seq, 122u);
  EXPECT_EQ(got[41].seq, 123u);
  EXPECT_EQ(values["$KV.B.k3"], "r3");
  EXPECT_EQ(values["$KV.B.new"], "n0");
  auto info = consumer_info("KV_B", name);
  EXPECT_EQ(info["delivered"].value("stream_seq", 0), 123) << info.dump();
  EXPECT_EQ(info.value("num_pending", -1), 0);
  EXPECT_TRUE(info.value("push_bound", false));
  natsSubscription_Destroy(raw);
}

}  // namespace
}  // namespace peregrine::test
