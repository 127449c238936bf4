// Fast-ingest batch publishing (streams.md §4.3) through libnats: control data in the reply
// subject `_INBOX.<id>.<flow>.<gap>.<seq>.<op>.$FI`, replies read on `_INBOX.<id>.>` the way
// Orbit's fast publisher does (initial ack, flow acks, gap, err, the final PubAck).
#include <gtest/gtest.h>

#include "tests/integration/js_fixture.h"

namespace peregrine::test {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;

class js_fast_batch : public js_test {
 protected:
  // One publisher: its inbox, subscribed before the first message.
  struct batch {
    std::string id;
    sub_ptr sub;
  };
  batch open(const std::string& id) {
    batch b{id, subscribe_sync(nc_.get(), "_INBOX." + id + ".>")};
    natsConnection_Flush(nc_.get());
    return b;
  }
  static std::string reply(const batch& b, std::uint64_t seq, int op, const std::string& gap = "fail", int flow = 100) {
    return "_INBOX." + b.id + "." + std::to_string(flow) + "." + gap + "." + std::to_string(seq) + "." +
           std::to_string(op) + ".$FI";
  }
  void send(const std::string& subject, const std::string& rep, const std::string& data = "x",
            const std::vector<std::pair<const char*, const char*>>& headers = {}) {
    natsMsg* msg = nullptr;
    natsMsg_Create(&msg, subject.c_str(), rep.c_str(), data.data(), static_cast<int>(data.size()));
    for (const auto& [k, v] : headers) natsMsgHeader_Set(msg, k, v);
    ASSERT_EQ(natsConnection_PublishMsg(nc_.get(), msg), NATS_OK);
    natsMsg_Destroy(msg);
  }
  // The next reply as raw text (clients match substrings, so the bytes matter), "" on timeout.
  static std::string next(const batch& b, std::chrono::milliseconds t = 2s) {
    msg_ptr m = next_msg(b.sub.get(), t);
    if (!m) return "";
    return std::string(natsMsg_GetData(m.get()), static_cast<size_t>(natsMsg_GetDataLength(m.get())));
  }
  bool quiet(const batch& b) {
    natsConnection_Flush(nc_.get());
    return next(b, 300ms).empty();
  }
};

TEST_F(js_fast_batch, config_allows_batched_and_needs_level_4) {
  json r = create({{"name", "M"}, {"subjects", {"m.>"}}, {"allow_batched", true}});
  ASSERT_FALSE(r.contains("error")) << r;
  EXPECT_EQ(r["config"]["allow_batched"], true);
  EXPECT_EQ(r["config"]["metadata"]["_nats.req.level"], "4");
}

TEST_F(js_fast_batch, disabled_stream_answers_10205_and_stores_nothing) {
  ASSERT_FALSE(create({{"name", "M"}, {"subjects", {"m.>"}}}).contains("error"));
  auto b = open("Off1");
  send("m.a", reply(b, 1, 0));
  EXPECT_EQ(next(b), R"({"error":{"code":400,"err_code":10205,"description":"batch publish is disabled"},"stream":"M","seq":0})");
  EXPECT_EQ(state("M")["messages"], 0);
}


TEST_F(js_fast_batch, flow_acks_then_pub_ack_memory) {
  ASSERT_FALSE(create({{"name", "M"}, {"subjects", {"m.>"}}, {"allow_batched", true}, {"storage", "memory"}})
                   .contains("error"));
  auto b = open("Xy");
  send("m.a", reply(b, 1, 0));
  EXPECT_EQ(next(b), R"({"type":"ack","seq":0,"msgs":100})");
  for (int i = 2; i <= 249; ++i) send("m.a", reply(b, i, 1));
  send("m.b", reply(b, 250, 2));
  EXPECT_EQ(next(b), R"({"type":"ack","seq":100,"msgs":100})");
  EXPECT_EQ(next(b), R"({"type":"ack","seq":200,"msgs":100})");
  EXPECT_EQ(next(b), R"({"stream":"M","seq":250,"batch":"Xy","count":250})");
  EXPECT_TRUE(quiet(b));
  EXPECT_EQ(state("M")["messages"], 250);
  EXPECT_EQ(state("M")["last_seq"], 250);
}

TEST_F(js_fast_batch, file_stream_acks_at_durability_and_survives_restart) {
  ASSERT_FALSE(create({{"name", "F"}, {"subjects", {"f.>"}}, {"allow_batched", true}, {"storage", "file"}})
                   .contains("error"));
  publish("f.before", "plain");  // interleaves with plain publishes: the batch starts at seq 2
  auto b = open("Fb");
  send("f.a", reply(b, 1, 0, "fail", 50));
  EXPECT_EQ(next(b), R"({"type":"ack","seq":0,"msgs":50})");
  for (int i = 2; i <= 60; ++i) send("f.a", reply(b, i, 1, "fail", 50));
  EXPECT_EQ(next(b), R"({"type":"ack","seq":50,"msgs":50})");  // once the disk has 50
  for (int i = 61; i <= 120; ++i) send("f.a", reply(b, i, 1, "fail", 50));
  send("f.a", reply(b, 121, 3, "fail", 50));  // EOB: not stored
  // The ack for 100 goes only if the disk reported 100 before the EOB came; the PubAck always
  // comes, once all 120 are durable.
  std::string r = next(b);
  if (r == R"({"type":"ack","seq":100,"msgs":50})") r = next(b);
  EXPECT_EQ(r, R"({"stream":"F","seq":121,"batch":"Fb","count":120})");
  restart(true);  // kill -9 after the PubAck: everything acknowledged is on disk
  EXPECT_EQ(state("F")["messages"], 121);
}

TEST_F(js_fast_batch, gap_fail_ends_the_batch_gap_ok_continues) {
  ASSERT_FALSE(create({{"name", "M"}, {"subjects", {"m.>"}}, {"allow_batched", true}}).contains("error"));
  auto f = open("GapF");
  send("m.a", reply(f, 1, 0));
  next(f);
  send("m.a", reply(f, 2, 1));
  send("m.a", reply(f, 5, 1));
  EXPECT_EQ(next(f), R"({"type":"gap","last_seq":3,"seq":5})");
  EXPECT_EQ(next(f), R"({"stream":"M","seq":2,"batch":"GapF","count":2})");
  send("m.a", reply(f, 6, 1));  // the batch is over: its id is unknown now
  EXPECT_NE(next(f).find(R"("err_code":10208,"description":"batch publish ID unknown")"), std::string::npos);
  EXPECT_EQ(state("M")["messages"], 2);

  auto o = open("GapO");
  send("m.a", reply(o, 1, 0, "ok"));
  next(o);
  send("m.a", reply(o, 3, 1, "ok"));
  EXPECT_EQ(next(o), R"({"type":"gap","last_seq":2,"seq":3})");
  send("m.a", reply(o, 4, 2, "ok"));
  EXPECT_EQ(next(o), R"({"stream":"M","seq":5,"batch":"GapO","count":4})");
  EXPECT_EQ(state("M")["messages"], 5);
}

TEST_F(js_fast_batch, per_message_err_in_ok_mode_and_error_puback_on_first_in_fail_mode) {
  ASSERT_FALSE(create({{"name", "M"}, {"subjects", {"m.>"}}, {"allow_batched", true}}).contains("error"));
  auto o = open("ErrO");
  send("m.a", reply(o, 1, 0, "ok"));
  next(o);
  send("m.a", reply(o, 2, 1, "ok"), "x", {{"Nats-Expected-Last-Sequence", "99"}});
  EXPECT_EQ(next(o), R"({"type":"err","seq":2,"error":{"code":400,"err_code":10071,"description":"wrong last sequence: 1"}})");
  send("m.a", reply(o, 3, 2, "ok"));
  EXPECT_EQ(next(o), R"({"stream":"M","seq":2,"batch":"ErrO","count":3})");

  auto f = open("ErrF");
  send("m.a", reply(f, 1, 0), "x", {{"Nats-TTL", "5s"}});  // TTLs are off on M
  EXPECT_EQ(next(f), R"({"type":"ack","seq":0,"msgs":100})");
  EXPECT_EQ(next(f), R"({"error":{"code":400,"err_code":10166,"description":"per-message TTL is disabled"},"stream":"M","seq":0})");
  EXPECT_EQ(state("M")["messages"], 2);
}

TEST_F(js_fast_batch, bad_patterns_ids_and_api_level) {
  ASSERT_FALSE(create({{"name", "M"}, {"subjects", {"m.>"}}, {"allow_batched", true}}).contains("error"));
  auto b = open("Pat");
  const std::string pattern =
      R"({"error":{"code":400,"err_code":10206,"description":"batch publish pattern is invalid"},"stream":"M","seq":0})";
  for (const char* r : {"_INBOX.Pat.100.maybe.1.0.$FI", "_INBOX.Pat.100.fail.2.0.$FI", "_INBOX.Pat.100.fail.1.9.$FI",
                        "_INBOX.Pat.100.fail.1.1.$FI"}) {
    send("m.a", r);
    EXPECT_EQ(next(b), pattern) << r;
  }
  const std::string long_id(65, 'L');
  auto l = open(long_id);
  send("m.a", "_INBOX." + long_id + ".100.fail.1.0.$FI");
  EXPECT_EQ(next(l), R"({"error":{"code":400,"err_code":10207,"description":"batch publish ID is invalid"},"stream":"M","seq":0})");
  send("m.a", reply(b, 1, 0), "x", {{"Nats-Required-Api-Level", "9"}});
  EXPECT_EQ(next(b),
            R"({"error":{"code":412,"err_code":10185,"description":"JetStream minimum api level required"},"stream":"M","seq":0})");
  EXPECT_EQ(state("M")["messages"], 0);
}

TEST_F(js_fast_batch, ping_resends_the_latest_ack_and_reveals_lost_messages) {
  ASSERT_FALSE(create({{"name", "M"}, {"subjects", {"m.>"}}, {"allow_batched", true}}).contains("error"));
  auto b = open("Png");
  send("m.a", reply(b, 1, 0, "fail", 2));
  EXPECT_EQ(next(b), R"({"type":"ack","seq":0,"msgs":2})");
  send("m.a", reply(b, 2, 1, "fail", 2));
  EXPECT_EQ(next(b), R"({"type":"ack","seq":2,"msgs":2})");
  send("m.a", reply(b, 2, 4, "fail", 2), "");
  EXPECT_EQ(next(b), R"({"type":"ack","seq":2,"msgs":2})");
  send("m.a", reply(b, 4, 4, "fail", 2), "");  // we sent 4, the server has 2
  EXPECT_EQ(next(b), R"({"type":"gap","last_seq":3,"seq":5})");
  EXPECT_EQ(next(b), R"({"stream":"M","seq":2,"batch":"Png","count":2})");
  EXPECT_EQ(state("M")["messages"], 2);  // pings are not stored
}

TEST_F(js_fast_batch, second_batch_starts_slow_and_doubles_and_disabling_drops_batches) {
  const json cfg = {{"name", "M"}, {"subjects", {"m.>"}}, {"allow_batched", true}, {"storage", "memory"}};
  ASSERT_FALSE(create(cfg).contains("error"));
  auto a = open("TwoA");
  auto b = open("TwoB");
  send("m.a", reply(a, 1, 0));
  EXPECT_EQ(next(a), R"({"type":"ack","seq":0,"msgs":100})");  // alone: min(500, 100)
  send("m.b", reply(b, 1, 0));
  EXPECT_EQ(next(b), R"({"type":"ack","seq":0,"msgs":1})");    // beside another: 1
  EXPECT_EQ(next(b), R"({"type":"ack","seq":1,"msgs":2})");    // then doubling
  send("m.b", reply(b, 2, 1));
  send("m.b", reply(b, 3, 1));
  EXPECT_EQ(next(b), R"({"type":"ack","seq":3,"msgs":4})");
  json off = cfg;
  off["allow_batched"] = false;
  json up = request("$JS.API.STREAM.UPDATE.M", off.dump());
  ASSERT_FALSE(up.contains("error")) << up;
  send("m.a", reply(a, 2, 1));
  EXPECT_EQ(next(a), R"({"error":{"code":400,"err_code":10205,"description":"batch publish is disabled"},"stream":"M","seq":0})");
  ASSERT_FALSE(request("$JS.API.STREAM.UPDATE.M", cfg.dump()).contains("error"));
  send("m.a", reply(a, 3, 1));  // the open batches were dropped with the flag
  EXPECT_NE(next(a).find("10208"), std::string::npos);
  EXPECT_EQ(state("M")["messages"], 4);
}

}  // namespace
}  // namespace peregrine::test
