// $JS.API.STREAM.SNAPSHOT / RESTORE through libnats, as `nats stream backup` / `restore` and
// nats.go's SnapshotStream drive them: chunks to a deliver subject acked through their reply
// subjects under a window, an empty EOF, a restore fed chunk by chunk (each acked) and ended
// by an empty message whose reply gets the stream info. A file stream with an interior gap,
// headers and a durable consumer with pending acks is snapshotted, deleted, restored and
// compared (messages, sequences, timestamps, consumer delivered/ack floor/pending), also
// after a restart; bad input (existing stream, truncated or corrupted archive, bad requests)
// gets nats-server's errors and leaves no stream behind.
#include <gtest/gtest.h>

#include <chrono>
#include <map>
#include <tuple>

#include "tests/integration/js_fixture.h"

namespace peregrine::test {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;

class js_snapshot : public js_test {
 protected:
  struct snapshot_result {
    json response;
    std::string archive;
    int chunks = 0;
    std::string eof_status;
  };

  snapshot_result snapshot(const std::string& stream, json req) {
    snapshot_result out;
    const std::string deliver = "_INBOX.snap." + std::to_string(++serial_);
    sub_ptr sub = subscribe_sync(nc_.get(), deliver);
    natsConnection_Flush(nc_.get());
    req["deliver_subject"] = deliver;
    out.response = request("$JS.API.STREAM.SNAPSHOT." + stream, req.dump());
    if (out.response.is_null() || out.response.contains("error")) return out;
    while (true) {
      msg_ptr m = next_msg(sub.get(), 10s);
      if (!m) {
        ADD_FAILURE() << "snapshot stalled after " << out.chunks << " chunks";
        return out;
      }
      const int n = natsMsg_GetDataLength(m.get());
      if (n == 0) {
        const char* st = nullptr;
        if (natsMsgHeader_Get(m.get(), "Status", &st) == NATS_OK && st) out.eof_status = st;
        return out;
      }
      out.archive.append(natsMsg_GetData(m.get()), size_t(n));
      ++out.chunks;
      const char* reply = natsMsg_GetReply(m.get());
      EXPECT_TRUE(reply && std::string(reply).starts_with("$JS.SNAPSHOT.ACK." + stream + "."));
      if (reply) natsConnection_Publish(nc_.get(), reply, nullptr, 0);
    }
  }

  // Feeds the archive in `chunk`-byte pieces, each acked; returns the final answer.
  json restore(const std::string& stream, const json& cfg, const std::string& archive, std::size_t chunk = 1024) {
    json r = request("$JS.API.STREAM.RESTORE." + stream, json{{"config", cfg}, {"state", json::object()}}.dump());
    if (r.is_null() || r.contains("error")) return r;
    EXPECT_EQ(r["type"], "io.nats.jetstream.api.v1.stream_restore_response");
    const std::string to = r["deliver_subject"].get<std::string>();
    EXPECT_TRUE(to.starts_with("$JS.SNAPSHOT.RESTORE." + stream + ".")) << to;
    for (std::size_t off = 0; off < archive.size(); off += chunk) {
      natsMsg* reply = nullptr;
      const std::string piece = archive.substr(off, chunk);
      if (natsConnection_Request(&reply, nc_.get(), to.c_str(), piece.data(), int(piece.size()), 5000) != NATS_OK) {
        ADD_FAILURE() << "chunk at " << off << " not acked";
        return nullptr;
      }
      EXPECT_EQ(natsMsg_GetDataLength(reply), 0);
      natsMsg_Destroy(reply);
    }
    natsMsg* reply = nullptr;
    if (natsConnection_Request(&reply, nc_.get(), to.c_str(), nullptr, 0, 10000) != NATS_OK) return nullptr;
    msg_ptr m(reply);
    return json::parse(std::string(natsMsg_GetData(m.get()), size_t(natsMsg_GetDataLength(m.get()))), nullptr, false);
  }

  // seq -> (subject, data, time) through MSG.GET.
  std::map<std::uint64_t, std::tuple<std::string, std::string, std::string>> messages(const std::string& stream,
                                                                                     std::uint64_t last) {
    std::map<std::uint64_t, std::tuple<std::string, std::string, std::string>> out;
    for (std::uint64_t seq = 1; seq <= last; ++seq) {
      json r = request("$JS.API.STREAM.MSG.GET." + stream, json{{"seq", seq}}.dump());
      if (r.contains("message"))
        out[seq] = {r["message"]["subject"], r["message"]["data"], r["message"]["time"]};
    }
    return out;
  }

  // A file stream with a gap (seq 5 deleted) and a durable consumer: 8 delivered, 1-4 acked.
  void populate() {
    ASSERT_FALSE(create({{"name", "S"}, {"subjects", {"s.>"}}, {"storage", "file"}}).contains("error"));
    for (int i = 1; i <= 12; ++i)
      ASSERT_FALSE(publish("s." + std::to_string(i % 3), std::string(300 * i, char('a' + i)),
                           {{"Nats-Msg-Id", std::to_string(i).c_str()}})
                       .contains("error"));
    ASSERT_EQ(request("$JS.API.STREAM.MSG.DELETE.S", json{{"seq", 5}}.dump())["success"], true);
    json c = request("$JS.API.CONSUMER.DURABLE.CREATE.S.D",
                     json{{"stream_name", "S"}, {"config", {{"durable_name", "D"}, {"ack_policy", "explicit"}}}}.dump());
    ASSERT_FALSE(c.contains("error")) << c.dump();
    const std::string inbox = "_INBOX.fetch";
    sub_ptr sub = subscribe_sync(nc_.get(), inbox);
    natsConnection_PublishRequestString(nc_.get(), "$JS.API.CONSUMER.MSG.NEXT.S.D", inbox.c_str(),
                                        json{{"batch", 8}, {"expires", 2'000'000'000}}.dump().c_str());
    for (int i = 0; i < 8; ++i) {
      msg_ptr m = next_msg(sub.get(), 5s);
      ASSERT_TRUE(m && natsMsg_GetReply(m.get()));
      if (i < 4) {
        natsMsg* r = nullptr;
        ASSERT_EQ(natsConnection_RequestString(&r, nc_.get(), natsMsg_GetReply(m.get()), "+ACK", 2000), NATS_OK);
        natsMsg_Destroy(r);
      }
    }
  }

  int serial_ = 0;
};

TEST_F(js_snapshot, round_trip_keeps_messages_sequences_times_and_consumer) {
  populate();
  if (HasFatalFailure()) return;
  const json before = request("$JS.API.STREAM.INFO.S");
  const json cbefore = request("$JS.API.CONSUMER.INFO.S.D");
  const auto msgs = messages("S", 12);
  ASSERT_EQ(msgs.size(), 11u);

  // Small chunks and window: many chunks, each waiting for acks.
  snapshot_result snap = snapshot("S", {{"chunk_size", 1024}, {"window_size", 4096}});
  ASSERT_FALSE(snap.response.contains("error")) << snap.response.dump();
  EXPECT_EQ(snap.response["type"], "io.nats.jetstream.api.v1.stream_snapshot_response");
  EXPECT_EQ(snap.response["config"]["name"], "S");
  EXPECT_EQ(snap.response["state"]["messages"], 11);
  EXPECT_EQ(snap.response["state"]["last_seq"], 12);
  EXPECT_GT(snap.chunks, 15);
  EXPECT_EQ(snap.eof_status, "");

  ASSERT_EQ(request("$JS.API.STREAM.DELETE.S")["success"], true);
  json r = restore("S", snap.response["config"], snap.archive);
  ASSERT_FALSE(r.is_null());
  ASSERT_FALSE(r.contains("error")) << r.dump();
  EXPECT_EQ(r["type"], "io.nats.jetstream.api.v1.stream_create_response");
  EXPECT_EQ(r["state"]["messages"], 11);

  for (int round = 0; round < 2; ++round) {
    SCOPED_TRACE(round == 0 ? "restored" : "after restart");
    const json after = request("$JS.API.STREAM.INFO.S");
    for (const char* k : {"messages", "bytes", "first_seq", "last_seq", "first_ts", "last_ts", "num_deleted"})
      EXPECT_EQ(after["state"][k], before["state"][k]) << k;
    EXPECT_EQ(after["created"], before["created"]);
    EXPECT_EQ(messages("S", 12), msgs);
    const json names = request("$JS.API.STREAM.NAMES");  // the restored stream is listed
    ASSERT_TRUE(names.contains("streams")) << names.dump();
    EXPECT_EQ(names["streams"], json::array({"S"}));
    const json cafter = request("$JS.API.CONSUMER.INFO.S.D");
    ASSERT_FALSE(cafter.contains("error")) << cafter.dump();
    for (const char* k : {"delivered", "ack_floor"})  // last_active is not kept (nor across restarts)
      for (const char* s : {"consumer_seq", "stream_seq"}) EXPECT_EQ(cafter[k][s], cbefore[k][s]) << k << "." << s;
    EXPECT_EQ(cafter["ack_floor"]["stream_seq"], 5);  // 1-4 acked, 5 deleted
    EXPECT_EQ(cafter["num_ack_pending"], 4);
    EXPECT_EQ(cafter["num_pending"], cbefore["num_pending"]);
    EXPECT_EQ(cafter["config"]["ack_policy"], "explicit");
    if (round == 0) restart(false);
    if (HasFatalFailure()) return;
  }
  // Dedup state is rebuilt from the restored headers: a repeated Msg-Id is a duplicate.
  json dup = publish("s.1", "again", {{"Nats-Msg-Id", "12"}});
  EXPECT_EQ(dup["duplicate"], true) << dup.dump();
  // The next fetch continues after what the consumer had delivered.
  sub_ptr sub = subscribe_sync(nc_.get(), "_INBOX.more");
  natsConnection_PublishRequestString(nc_.get(), "$JS.API.CONSUMER.MSG.NEXT.S.D", "_INBOX.more",
                                      json{{"batch", 1}, {"expires", 2'000'000'000}}.dump().c_str());
  msg_ptr m = next_msg(sub.get(), 5s);
  ASSERT_TRUE(m && natsMsg_GetReply(m.get()));
  EXPECT_NE(std::string(natsMsg_GetReply(m.get())).find(".1.10.9."), std::string::npos) << natsMsg_GetReply(m.get());
}

TEST_F(js_snapshot, no_consumers_leaves_them_out) {
  populate();
  if (HasFatalFailure()) return;
  snapshot_result snap = snapshot("S", {{"no_consumers", true}});
  ASSERT_FALSE(snap.response.contains("error"));
  EXPECT_EQ(snap.chunks, 1);  // default 128 KiB chunk
  ASSERT_EQ(request("$JS.API.STREAM.DELETE.S")["success"], true);
  json r = restore("S", snap.response["config"], snap.archive, 64 * 1024);
  ASSERT_FALSE(r.contains("error")) << r.dump();
  EXPECT_EQ(request("$JS.API.CONSUMER.INFO.S.D")["error"]["err_code"], 10014);
}

TEST_F(js_snapshot, bad_input_gets_errors_and_leaves_no_stream) {
  populate();
  if (HasFatalFailure()) return;
  snapshot_result snap = snapshot("S", {});
  ASSERT_FALSE(snap.response.contains("error"));
  const json cfg = snap.response["config"];

  json e = request("$JS.API.STREAM.RESTORE.S", json{{"config", cfg}}.dump());
  EXPECT_EQ(e["type"], "io.nats.jetstream.api.v1.stream_restore_response");
  EXPECT_EQ(e["error"], (json{{"code", 400}, {"err_code", 10130}, {"description", "stream name already in use, cannot restore"}}));

  ASSERT_EQ(request("$JS.API.STREAM.DELETE.S")["success"], true);
  std::string corrupt = snap.archive;
  corrupt[corrupt.size() / 2] ^= 0x01;
  for (const auto& [what, bytes] : {std::pair<std::string, std::string>{"truncated", snap.archive.substr(0, snap.archive.size() - 7)},
                                    {"corrupt", corrupt}}) {
    SCOPED_TRACE(what);
    json r = restore("S", cfg, bytes);
    ASSERT_TRUE(r.contains("error")) << r.dump();
    EXPECT_EQ(r["type"], "io.nats.jetstream.api.v1.stream_create_response");
    EXPECT_EQ(r["error"]["code"], 500);
    EXPECT_EQ(r["error"]["err_code"], 10062);
    EXPECT_TRUE(r["error"]["description"].get<std::string>().starts_with("restore failed: snapshot ")) << r.dump();
    EXPECT_EQ(request("$JS.API.STREAM.INFO.S")["error"]["err_code"], 10059);
  }
  // A good restore after the failed ones works: nothing was left in the way.
  json ok = restore("S", cfg, snap.archive);
  EXPECT_FALSE(ok.contains("error")) << ok.dump();

  EXPECT_EQ(request("$JS.API.STREAM.SNAPSHOT.S", "")["error"]["err_code"], 10003);
  EXPECT_EQ(request("$JS.API.STREAM.SNAPSHOT.NOPE", json{{"deliver_subject", "x"}}.dump())["error"]["err_code"], 10059);
  json bad = request("$JS.API.STREAM.SNAPSHOT.S", json{{"deliver_subject", "a..b"}}.dump());
  EXPECT_EQ(bad["error"], (json{{"code", 400}, {"err_code", 10015}, {"description", "deliver subject not valid"}}));
  EXPECT_EQ(request("$JS.API.STREAM.SNAPSHOT.S", json{{"no_consumers", true}}.dump())["error"]["err_code"], 10015);
  EXPECT_EQ(request("$JS.API.STREAM.RESTORE.T", "")["error"]["err_code"], 10003);
  EXPECT_EQ(request("$JS.API.STREAM.RESTORE.T", "{bad")["error"]["err_code"], 10025);
}

TEST_F(js_snapshot, unacked_snapshot_ends_with_no_flow_response) {
  ASSERT_FALSE(create({{"name", "S"}, {"subjects", {"s.>"}}, {"storage", "file"}}).contains("error"));
  for (int i = 0; i < 40; ++i) ASSERT_FALSE(publish("s.x", std::string(1000, 'x')).contains("error"));
  const std::string deliver = "_INBOX.noack";
  sub_ptr sub = subscribe_sync(nc_.get(), deliver);
  natsConnection_Flush(nc_.get());
  json r = request("$JS.API.STREAM.SNAPSHOT.S", json{{"deliver_subject", deliver}, {"chunk_size", 1024}, {"window_size", 4096}}.dump());
  ASSERT_FALSE(r.contains("error"));
  int chunks = 0;
  std::string status, description;
  while (msg_ptr m = next_msg(sub.get(), 20s)) {
    if (natsMsg_GetDataLength(m.get()) > 0) {
      ++chunks;
      continue;
    }
    const char* v = nullptr;
    if (natsMsgHeader_Get(m.get(), "Status", &v) == NATS_OK) status = v;
    if (natsMsgHeader_Get(m.get(), "Description", &v) == NATS_OK) description = v;
    break;
  }
  EXPECT_LE(chunks, 5);  // the window: 4 KiB of 1 KiB chunks
  EXPECT_EQ(status, "408");
  EXPECT_EQ(description, "No Flow Response");
}

}  // namespace
}  // namespace peregrine::test
