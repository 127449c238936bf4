// Deep Dive chapter replay, consumer pages (deep-dive.md 13.3-13.11, 13.13): the chapter's
// consumers (billing, analytics, shipping, dispatch, sequencer, shippers) on the ORDERS and
// FULFILLMENT streams, checking what the chapter prints: counts, pending, delivery metadata,
// status lines (byte-exact over a raw socket) and error codes. Validated against nats-server
// 2.9.10; the priority-group and pause pages (2.11+) run only against Peregrine.
#include <atomic>
#include <iterator>
#include <set>
#include <sstream>
#include <thread>
#include <utility>
#include <vector>

#include "tests/integration/js_fixture.h"

namespace peregrine::test {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;

constexpr int64_t kSec = 1000000000LL;
const std::string kOrd8w2k = R"({"order_id":"ord_8w2k","customer":"acme-co","total_cents":4200,"ts":"2026-05-22T10:14:22Z"})";
const std::string kOrd2zr9 = R"({"order_id":"ord_2zr9","customer":"globex","total_cents":1500,"ts":"2026-05-22T10:14:25Z"})";
const std::string kOrd8w2kShipped = R"({"order_id":"ord_8w2k","customer":"acme-co","total_cents":4200,"ts":"2026-05-22T10:14:31Z"})";
const std::string kOrd5xk1 = R"({"order_id":"ord_5xk1","customer":"initech","total_cents":1500,"ts":"2026-05-22T11:02:00Z"})";

bool reference_server() {
  const std::string bin = server_binary();
  return bin.size() >= 11 && bin.compare(bin.size() - 11, 11, "nats-server") == 0;
}

struct meta_deleter {
  void operator()(jsMsgMetaData* m) const { jsMsgMetaData_Destroy(m); }
};
using meta_ptr = std::unique_ptr<jsMsgMetaData, meta_deleter>;

// One MSG/HMSG read off a raw socket: a message (ack reply set) or a status (empty payload).
struct raw_delivery {
  std::string subject, reply, headers, payload;
};

class consumer_scenario : public js_test {
 protected:
  // The chapter's state at the start of the consumer pages: ORDERS with three orders.
  void orders_stream() {
    json r = create({{"name", "ORDERS"}, {"subjects", {"orders.>"}}, {"storage", "file"}});
    ASSERT_FALSE(r.contains("error")) << r;
    ASSERT_EQ(publish("orders.created", kOrd8w2k)["seq"], 1);
    ASSERT_EQ(publish("orders.created", kOrd2zr9)["seq"], 2);
    ASSERT_EQ(publish("orders.shipped", kOrd8w2kShipped)["seq"], 3);
  }

  // `nats consumer add <stream> <name> --pull --ack explicit --defaults` plus extra fields.
  json add_consumer(const std::string& stream, const std::string& name, json extra = json::object()) {
    json cfg = {{"durable_name", name}, {"deliver_policy", "all"}, {"ack_policy", "explicit"},
                {"replay_policy", "instant"}};
    cfg.update(extra);
    return request("$JS.API.CONSUMER.CREATE." + stream + "." + name,
                   json{{"stream_name", stream}, {"config", cfg}}.dump());
  }
  json info(const std::string& stream, const std::string& c) { return request("$JS.API.CONSUMER.INFO." + stream + "." + c); }
  // After a fetch that timed out on the client: wait until the server has expired that pull
  // too. libnats 3.4 reuses one reply subject for every fetch, so a 408 the server sends a
  // little after the client gave up (the request expires 10 ms before the client's timeout;
  // a loaded sanitizer build can miss that) would end the next fetch at once. Once INFO shows
  // no waiting request, the 408 is already queued ahead of the reply and the next fetch drops it.
  void settle_pulls(const std::string& stream, const std::string& c) {
    for (int i = 0; i < 200 && info(stream, c)["num_waiting"] != 0; i++)
      std::this_thread::sleep_for(10ms);
  }

  // A libnats pull subscription bound to an existing durable.
  sub_ptr bind(const std::string& stream, const std::string& consumer, natsConnection* nc = nullptr) {
    jsCtx* own = nullptr;
    if (nc && natsConnection_JetStream(&own, nc, nullptr) != NATS_OK) ADD_FAILURE() << "no jsCtx";
    jsSubOptions so;
    jsSubOptions_Init(&so);
    so.Stream = stream.c_str();
    so.Consumer = consumer.c_str();
    natsSubscription* sub = nullptr;
    jsErrCode ec = static_cast<jsErrCode>(0);
    natsStatus s = js_PullSubscribe(&sub, own ? own : js_.get(), nullptr, consumer.c_str(), nullptr, &so, &ec);
    if (own) jsCtx_Destroy(own);
    EXPECT_EQ(s, NATS_OK) << status_text(s) << " err_code " << ec;
    return sub_ptr(sub);
  }

  // natsSubscription_Fetch; returns the messages (owned) and the status.
  std::vector<msg_ptr> fetch(natsSubscription* sub, int batch, int64_t timeout_ms, natsStatus* out = nullptr) {
    natsMsgList list{};
    natsStatus s = natsSubscription_Fetch(&list, sub, batch, timeout_ms, nullptr);
    if (out) *out = s;
    std::vector<msg_ptr> msgs;
    for (int i = 0; i < list.Count; i++) msgs.emplace_back(std::exchange(list.Msgs[i], nullptr));
    natsMsgList_Destroy(&list);
    return msgs;
  }

  static meta_ptr meta(natsMsg* m) {
    jsMsgMetaData* md = nullptr;
    EXPECT_EQ(natsMsg_GetMetaData(&md, m), NATS_OK);
    return meta_ptr(md);
  }

  // Raw socket subscribed to _INBOX.raw.*; pull() publishes a request with reply _INBOX.raw.<n>.
  void open_raw() {
    ASSERT_TRUE(raw_.open(port()));
    ASSERT_TRUE(raw_.send("SUB _INBOX.raw.* 1\r\n"));
    ASSERT_TRUE(raw_.ping_pong());
  }
  std::string pull(const std::string& stream, const std::string& consumer, const std::string& body) {
    const std::string inbox = "_INBOX.raw." + std::to_string(++raw_serial_);
    raw_.send("PUB $JS.API.CONSUMER.MSG.NEXT." + stream + "." + consumer + " " + inbox + " " +
              std::to_string(body.size()) + "\r\n" + body + "\r\n");
    return inbox;
  }
  // The next MSG/HMSG; skip_heartbeats drops "100 Idle Heartbeat" statuses on the way.
  std::optional<raw_delivery> next_raw(bool skip_heartbeats = false) {
    for (;;) {
      auto line = raw_.read_line(2s);
      if (!line) return std::nullopt;
      std::istringstream in(line->substr(0, line->size() - 2));
      std::vector<std::string> tok{std::istream_iterator<std::string>(in), std::istream_iterator<std::string>()};
      const bool hmsg = !tok.empty() && tok[0] == "HMSG";
      if (tok.empty() || (!hmsg && tok[0] != "MSG")) {
        ADD_FAILURE() << "unexpected line: " << *line;
        return std::nullopt;
      }
      raw_delivery d;
      d.subject = tok[1];
      if (tok.size() == (hmsg ? 6u : 5u)) d.reply = tok[3];
      const size_t total = std::stoul(tok.back());
      const size_t hlen = hmsg ? std::stoul(tok[tok.size() - 2]) : 0;
      auto body = raw_.read_bytes(total + 2);
      if (!body) return std::nullopt;
      d.headers = body->substr(0, hlen);
      d.payload = body->substr(hlen, total - hlen);
      if (skip_heartbeats && d.headers.rfind("NATS/1.0 100 ", 0) == 0) continue;
      return d;
    }
  }
  // Sends a pull and returns the status block answering it ("<nothing>" if none arrived).
  std::string pull_status(const std::string& stream, const std::string& consumer, const std::string& body,
                          bool skip_heartbeats = false) {
    const std::string inbox = pull(stream, consumer, body);
    auto d = next_raw(skip_heartbeats);
    if (!d) return "<nothing>";
    EXPECT_EQ(d->subject, inbox);
    EXPECT_EQ(d->payload, "");
    return d->headers;
  }
  // Updates a consumer with a full config (what `nats consumer edit` sends).
  json update(const std::string& stream, const std::string& name, const json& cfg) {
    return request("$JS.API.CONSUMER.CREATE." + stream + "." + name,
                   json{{"stream_name", stream}, {"config", cfg}}.dump());
  }
  // Every field of `expected` (recursively for objects) equals the one in `actual`.
  static void expect_fields(const json& actual, const json& expected, const std::string& path = "") {
    for (const auto& [k, v] : expected.items()) {
      if (v.is_object() && actual.contains(k)) expect_fields(actual[k], v, path + k + ".");
      else EXPECT_EQ(actual.contains(k) ? actual[k] : json(), v) << path + k;
    }
  }
  // A delivery as `nats consumer next` prints it.
  static std::string delivery(natsMsg* m) {
    auto md = meta(m);
    return std::string("subj: ") + natsMsg_GetSubject(m) + " / tries: " + std::to_string(md->NumDelivered) +
           " / cons seq: " + std::to_string(md->Sequence.Consumer) + " / str seq: " +
           std::to_string(md->Sequence.Stream) + " / pending: " + std::to_string(md->NumPending);
  }
  // "consumer_seq/stream_seq" of a SequenceInfo.
  static std::string seqs(const json& j) { return j["consumer_seq"].dump() + "/" + j["stream_seq"].dump(); }
  static json body_json(natsMsg* m) { return json::parse(std::string(natsMsg_GetData(m), natsMsg_GetDataLength(m))); }

  raw_client raw_;
  int raw_serial_ = 0;
};

// 13.3 Reading back the stream: durable `billing` reads every order from sequence 1.
TEST_F(consumer_scenario, reading_back_the_stream_billing) {
  orders_stream();
  // The CLI's --defaults through the legacy durable subject.
  json r = request("$JS.API.CONSUMER.DURABLE.CREATE.ORDERS.billing",
                   R"({"stream_name":"ORDERS","config":{"durable_name":"billing","deliver_policy":"all",
                       "ack_policy":"explicit","replay_policy":"instant"}})");
  ASSERT_FALSE(r.contains("error")) << r;
  EXPECT_EQ(r["type"], "io.nats.jetstream.api.v1.consumer_create_response");
  json ci = info("ORDERS", "billing");
  EXPECT_EQ(ci["type"], "io.nats.jetstream.api.v1.consumer_info_response");
  EXPECT_EQ(seqs(ci["delivered"]), "0/0");
  EXPECT_EQ(seqs(ci["ack_floor"]), "0/0");
  // Outstanding Acks: 0 out of maximum 1,000; Unprocessed Messages: 3; Waiting Pulls: 0 of maximum 512.
  expect_fields(ci, {{"num_ack_pending", 0}, {"num_redelivered", 0}, {"num_pending", 3}, {"num_waiting", 0},
                     {"config", {{"max_ack_pending", 1000}, {"max_waiting", 512}}}});

  sub_ptr sub = bind("ORDERS", "billing");
  ASSERT_TRUE(sub);
  auto msgs = fetch(sub.get(), 3, 2000);
  ASSERT_EQ(msgs.size(), 3u);
  const char* shown[] = {"subj: orders.created / tries: 1 / cons seq: 1 / str seq: 1 / pending: 2",
                         "subj: orders.created / tries: 1 / cons seq: 2 / str seq: 2 / pending: 1",
                         "subj: orders.shipped / tries: 1 / cons seq: 3 / str seq: 3 / pending: 0"};
  for (size_t i = 0; i < 3; i++) {
    EXPECT_EQ(delivery(msgs[i].get()), shown[i]);
    EXPECT_STREQ(meta(msgs[i].get())->Stream, "ORDERS");
    EXPECT_STREQ(meta(msgs[i].get())->Consumer, "billing");
    EXPECT_EQ(natsMsg_AckSync(msgs[i].get(), nullptr, nullptr), NATS_OK);
  }
  ci = info("ORDERS", "billing");
  EXPECT_EQ(seqs(ci["delivered"]), "3/3");  // consumer / stream sequence
  EXPECT_EQ(seqs(ci["ack_floor"]), "3/3");
  EXPECT_EQ(ci["num_pending"], 0);

  // A fourth order arrives: "stream: ORDERS seq: 4 / pending: 0".
  ASSERT_EQ(publish("orders.created", kOrd5xk1)["seq"], 4);
  msgs = fetch(sub.get(), 1, 2000);
  ASSERT_EQ(msgs.size(), 1u);
  EXPECT_EQ(meta(msgs[0].get())->Sequence.Stream, 4u);
  EXPECT_EQ(meta(msgs[0].get())->NumPending, 0u);
  EXPECT_EQ(std::string(natsMsg_GetData(msgs[0].get()), natsMsg_GetDataLength(msgs[0].get())), kOrd5xk1);
  EXPECT_EQ(natsMsg_AckSync(msgs[0].get(), nullptr, nullptr), NATS_OK);

  // `nats sub "orders.>" --all`: an ephemeral consumer replays all four.
  natsSubscription* eph = nullptr;
  jsSubOptions so;
  jsSubOptions_Init(&so);
  so.Config.DeliverPolicy = js_DeliverAll;
  so.Config.AckPolicy = js_AckNone;
  ASSERT_EQ(js_SubscribeSync(&eph, js_.get(), "orders.>", nullptr, &so, nullptr), NATS_OK);
  sub_ptr eph_sub(eph);
  for (uint64_t seq = 1; seq <= 4; seq++) {
    msg_ptr m = next_msg(eph, 2s);
    ASSERT_TRUE(m) << "seq " << seq;
    EXPECT_EQ(meta(m.get())->Sequence.Stream, seq);
  }
  EXPECT_EQ(state("ORDERS")["consumer_count"], 2);
}

// 13.4 Filtering: `analytics` reads only orders.shipped; a typo filter is accepted and times out.
TEST_F(consumer_scenario, filtering_analytics) {
  orders_stream();
  json r = add_consumer("ORDERS", "analytics", {{"filter_subject", "orders.shipped"}});
  ASSERT_FALSE(r.contains("error")) << r;
  EXPECT_EQ(r["name"], "analytics");
  // Pull Mode: true (no deliver_subject); Ack Wait: 30.00s; Max Ack Pending: 1,000; Max Waiting Pulls: 512.
  expect_fields(r["config"], {{"filter_subject", "orders.shipped"}, {"deliver_policy", "all"},
                              {"ack_policy", "explicit"}, {"ack_wait", 30 * kSec}, {"replay_policy", "instant"},
                              {"max_ack_pending", 1000}, {"max_waiting", 512}, {"deliver_subject", nullptr}});
  EXPECT_EQ(r["num_pending"], 1);

  sub_ptr sub = bind("ORDERS", "analytics");
  natsStatus s;
  auto msgs = fetch(sub.get(), 5, 1000, &s);
  ASSERT_EQ(msgs.size(), 1u) << status_text(s);
  EXPECT_STREQ(natsMsg_GetSubject(msgs[0].get()), "orders.shipped");
  EXPECT_EQ(meta(msgs[0].get())->Sequence.Stream, 3u);
  EXPECT_EQ(meta(msgs[0].get())->Sequence.Consumer, 1u);
  natsMsg_Ack(msgs[0].get(), nullptr);

  r = add_consumer("ORDERS", "typo", {{"filter_subject", "orders.shiped"}});
  ASSERT_FALSE(r.contains("error")) << r;
  EXPECT_EQ(r["num_pending"], 0);
  sub_ptr typo = bind("ORDERS", "typo");
  msgs = fetch(typo.get(), 1, 500, &s);
  EXPECT_TRUE(msgs.empty());
  EXPECT_EQ(s, NATS_TIMEOUT);
  // The stream itself is unchanged.
  EXPECT_EQ(state("ORDERS")["messages"], 3);
}

// 13.5 / 13.6 Delivery and acknowledgment: `shipping`, in flight vs acked, redelivery, edits,
// nak / in-progress / term, MAX_DELIVERIES advisory, backoff.
TEST_F(consumer_scenario, delivery_and_acknowledgment_shipping) {
  orders_stream();
  ASSERT_FALSE(add_consumer("ORDERS", "shipping", {{"ack_wait", 30 * kSec}}).contains("error"));
  sub_ptr sub = bind("ORDERS", "shipping");
  // `nats consumer next ORDERS shipping --ack`: tries 1, cons seq 1, str seq 1, pending 2.
  auto msgs = fetch(sub.get(), 1, 2000);
  ASSERT_EQ(msgs.size(), 1u);
  EXPECT_EQ(delivery(msgs[0].get()), "subj: orders.created / tries: 1 / cons seq: 1 / str seq: 1 / pending: 2");
  // Ack sync: the server answers an ack that has a reply subject with an empty message.
  natsMsg* ack_reply = nullptr;
  ASSERT_EQ(natsConnection_RequestString(&ack_reply, nc_.get(), natsMsg_GetReply(msgs[0].get()), "+ACK", 2000),
            NATS_OK);
  EXPECT_EQ(natsMsg_GetDataLength(ack_reply), 0);
  natsMsg_Destroy(ack_reply);
  // `--no-ack`: delivered 2/2 vs ack floor 1/1, one outstanding.
  msgs = fetch(sub.get(), 1, 2000);
  ASSERT_EQ(msgs.size(), 1u);
  json ci = info("ORDERS", "shipping");
  EXPECT_EQ(seqs(ci["delivered"]), "2/2");
  EXPECT_EQ(seqs(ci["ack_floor"]), "1/1");
  EXPECT_EQ(ci["num_ack_pending"], 1);

  // `nats consumer edit ORDERS shipping --wait=10s --max-deliver=5` and `--max-pending 1`.
  json cfg = ci["config"];
  cfg["ack_wait"] = 10 * kSec;
  cfg["max_deliver"] = 5;
  cfg["max_ack_pending"] = 1;
  json r = update("ORDERS", "shipping", cfg);
  ASSERT_FALSE(r.contains("error")) << r;
  expect_fields(r["config"], {{"ack_wait", 10 * kSec}, {"max_deliver", 5}, {"max_ack_pending", 1}});
  // With one message outstanding and max_ack_pending 1 nothing new is handed out.
  natsStatus s;
  EXPECT_TRUE(fetch(sub.get(), 1, 300, &s).empty());
  settle_pulls("ORDERS", "shipping");
  // nak: immediate redelivery of seq 2, tries 2.
  EXPECT_EQ(natsMsg_Nak(msgs[0].get(), nullptr), NATS_OK);
  msgs = fetch(sub.get(), 1, 2000);
  ASSERT_EQ(msgs.size(), 1u);
  EXPECT_EQ(delivery(msgs[0].get()), "subj: orders.created / tries: 2 / cons seq: 3 / str seq: 2 / pending: 1");
  // in progress then ack.
  EXPECT_EQ(natsMsg_InProgress(msgs[0].get(), nullptr), NATS_OK);
  EXPECT_EQ(natsMsg_AckSync(msgs[0].get(), nullptr, nullptr), NATS_OK);
  ci = info("ORDERS", "shipping");
  // Nothing outstanding is a redelivery any more.
  expect_fields(ci, {{"num_redelivered", 0}, {"ack_floor", {{"stream_seq", 2}}}});

  // term: seq 3 is given up on, the MSG_TERMINATED advisory tells who.
  sub_ptr adv = subscribe_sync(nc_.get(), "$JS.EVENT.ADVISORY.CONSUMER.MSG_TERMINATED.ORDERS.shipping");
  ASSERT_EQ(natsConnection_Flush(nc_.get()), NATS_OK);
  msgs = fetch(sub.get(), 1, 2000);
  ASSERT_EQ(msgs.size(), 1u);
  EXPECT_EQ(natsMsg_Term(msgs[0].get(), nullptr), NATS_OK);
  msg_ptr a = next_msg(adv.get(), 2s);
  ASSERT_TRUE(a);
  json aj = body_json(a.get());
  expect_fields(aj, {{"type", "io.nats.jetstream.advisory.v1.terminated"}, {"stream", "ORDERS"},
                     {"consumer", "shipping"}, {"stream_seq", 3}, {"deliveries", 1}});
  ci = info("ORDERS", "shipping");
  expect_fields(ci, {{"num_ack_pending", 0}, {"ack_floor", {{"stream_seq", 3}}}});

  // Redelivery after ack wait until max_deliver, then the MAX_DELIVERIES advisory.
  cfg = ci["config"];
  cfg["ack_wait"] = kSec / 2;
  cfg["max_deliver"] = 2;
  ASSERT_FALSE(update("ORDERS", "shipping", cfg)
                   .contains("error"));
  sub_ptr maxd = subscribe_sync(nc_.get(), "$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES.ORDERS.shipping");
  ASSERT_EQ(natsConnection_Flush(nc_.get()), NATS_OK);
  ASSERT_EQ(publish("orders.created", kOrd5xk1)["seq"], 4);
  msgs = fetch(sub.get(), 1, 2000);
  ASSERT_EQ(msgs.size(), 1u);
  msgs = fetch(sub.get(), 1, 2000);  // back after 0.5 s
  ASSERT_EQ(msgs.size(), 1u);
  EXPECT_EQ(delivery(msgs[0].get()).substr(0, 46), "subj: orders.created / tries: 2 / cons seq: 6 ");
  EXPECT_EQ(meta(msgs[0].get())->Sequence.Stream, 4u);
  // A third pull finds seq 4 exhausted: nothing delivered, the advisory is published.
  EXPECT_TRUE(fetch(sub.get(), 1, 1000, &s).empty());
  a = next_msg(maxd.get(), 2s);
  ASSERT_TRUE(a);
  aj = body_json(a.get());
  expect_fields(aj, {{"type", "io.nats.jetstream.advisory.v1.max_deliver"}, {"stream_seq", 4}, {"deliveries", 2}});
  EXPECT_EQ(state("ORDERS")["messages"], 4);  // a limits stream keeps it

  // `--backoff=linear --backoff-steps=5 --backoff-min=1s --backoff-max=30s`.
  cfg["backoff"] = {1 * kSec, 8250000000LL, 15500000000LL, 22750000000LL, 30 * kSec};
  cfg["max_deliver"] = 4;
  r = update("ORDERS", "shipping", cfg);
  EXPECT_EQ(r["error"]["err_code"], 10116) << r;  // more backoff steps than deliveries
  cfg["max_deliver"] = 6;
  r = update("ORDERS", "shipping", cfg);
  ASSERT_FALSE(r.contains("error")) << r;
  EXPECT_EQ(r["config"]["backoff"].size(), 5u);
  // Deliver policy is fixed.
  cfg["deliver_policy"] = "new";
  r = update("ORDERS", "shipping", cfg);
  EXPECT_EQ(r["error"]["description"], "deliver policy can not be updated") << r;
}

// 13.7 Pull consumers in depth: the statuses a pull ends with, byte-exact.
TEST_F(consumer_scenario, pull_consumers_in_depth_statuses) {
  orders_stream();
  ASSERT_FALSE(add_consumer("ORDERS", "shipping", {{"max_batch", 10}, {"max_expires", 2 * kSec}, {"max_waiting", 1}})
                   .contains("error"));
  open_raw();
  // Three single pulls get seq 1..3 with ack subjects carrying pending 2, 1, 0.
  for (int i = 1; i <= 3; i++) {
    pull("ORDERS", "shipping", R"({"batch":1,"expires":1000000000})");
    auto d = next_raw();
    ASSERT_TRUE(d);
    EXPECT_EQ(d->reply.rfind("$JS.ACK.ORDERS.shipping.1." + std::to_string(i) + "." + std::to_string(i) + ".", 0), 0u)
        << d->reply;
    EXPECT_EQ(d->reply.substr(d->reply.rfind('.') + 1), std::to_string(3 - i));
    raw_.send("PUB " + d->reply + " 4\r\n+ACK\r\n");
  }
  // Nothing left: no_wait -> 404, expires -> 408 with pending headers.
  EXPECT_EQ(pull_status("ORDERS", "shipping", R"({"batch":1,"no_wait":true})"),
            "NATS/1.0 404 No Messages\r\n\r\n");
  EXPECT_EQ(pull_status("ORDERS", "shipping", R"({"batch":4,"expires":300000000})"),
            "NATS/1.0 408 Request Timeout\r\nNats-Pending-Messages: 4\r\nNats-Pending-Bytes: 0\r\n\r\n");
  // The knobs that bound a pull.
  EXPECT_EQ(pull_status("ORDERS", "shipping", R"({"batch":11})"),
            "NATS/1.0 409 Exceeded MaxRequestBatch of 10\r\n\r\n");
  EXPECT_EQ(pull_status("ORDERS", "shipping", R"({"batch":1,"expires":3000000000})"),
            "NATS/1.0 409 Exceeded MaxRequestExpires of 2s\r\n\r\n");
  EXPECT_EQ(pull_status("ORDERS", "shipping", R"({"batch":1,"expires":1000000000,"idle_heartbeat":600000000})"),
            "NATS/1.0 400 Bad Request - heartbeat value too large\r\n\r\n");
  EXPECT_EQ(pull_status("ORDERS", "shipping", R"({"batch":1,"expires":bad})").rfind("NATS/1.0 400 Bad Request - ", 0),
            0u);
  // Idle heartbeats on a waiting pull: last delivered consumer / stream sequence 3 / 3.
  EXPECT_EQ(pull_status("ORDERS", "shipping", R"({"batch":1,"expires":1900000000,"idle_heartbeat":250000000})"),
            "NATS/1.0 100 Idle Heartbeat\r\nNats-Last-Consumer: 3\r\nNats-Last-Stream: 3\r\n\r\n");
  // max_waiting 1: a second concurrent pull is refused.
  EXPECT_EQ(pull_status("ORDERS", "shipping", R"({"batch":1,"expires":1000000000})", true),
            "NATS/1.0 409 Exceeded MaxWaiting\r\n\r\n");
  // Deleting the consumer ends the waiting pull.
  json r = request("$JS.API.CONSUMER.DELETE.ORDERS.shipping");
  EXPECT_EQ(r, json::parse(R"({"type":"io.nats.jetstream.api.v1.consumer_delete_response","success":true})"));
  auto d = next_raw(true);
  ASSERT_TRUE(d);
  EXPECT_EQ(d->headers, "NATS/1.0 409 Consumer Deleted\r\n\r\n");
  // MSG.NEXT on a consumer that does not exist: 2.9.10 never answers, newer servers answer 503.
  natsMsg* reply = nullptr;
  const natsStatus gone =
      natsConnection_RequestString(&reply, nc_.get(), "$JS.API.CONSUMER.MSG.NEXT.ORDERS.shipping", "", 500);
  EXPECT_TRUE(gone == NATS_TIMEOUT || gone == NATS_NO_RESPONDERS) << status_text(gone);
}

// 13.8 Scaling a consumer: three workers loop `next --count 1 --ack`; each order goes to one.
TEST_F(consumer_scenario, scaling_a_consumer_worker_pool) {
  orders_stream();
  ASSERT_FALSE(add_consumer("ORDERS", "shipping", {{"filter_subject", "orders.shipped"}}).contains("error"));
  constexpr int kOrders = 30;
  std::mutex mu;
  std::vector<uint64_t> seen;
  std::atomic<int> workers_with_work{0};
  std::vector<std::thread> pool;
  for (int w = 0; w < 3; w++) {
    pool.emplace_back([&] {
      nc_ptr nc = connect(url());
      if (!nc) return;
      sub_ptr sub = bind("ORDERS", "shipping", nc.get());
      if (!sub) return;
      int mine = 0;
      for (int idle = 0; idle < 3;) {  // stop after ~1 s without work
        auto msgs = fetch(sub.get(), 1, 300);
        idle = msgs.empty() ? idle + 1 : 0;
        if (msgs.empty()) continue;
        mine++;
        natsMsg_AckSync(msgs[0].get(), nullptr, nullptr);
        std::lock_guard lk(mu);
        seen.push_back(meta(msgs[0].get())->Sequence.Stream);
      }
      if (mine) workers_with_work++;
    });
  }
  for (int i = 0; i < kOrders; i++) ASSERT_FALSE(publish("orders.shipped", kOrd8w2kShipped).contains("error"));
  for (auto& t : pool) t.join();
  std::set<uint64_t> distinct(seen.begin(), seen.end());
  EXPECT_EQ(seen.size(), static_cast<size_t>(kOrders + 1));  // the chapter's seq 3 plus 30 new ones
  EXPECT_EQ(distinct.size(), seen.size()) << "an order went to two workers";
  EXPECT_GE(workers_with_work.load(), 2);
  json ci = info("ORDERS", "shipping");
  expect_fields(ci, {{"num_ack_pending", 0}, {"num_redelivered", 0}, {"num_pending", 0}});
}

// 13.9 Ordered consumers: a throwaway in-order read (libnats ordered push subscription).
TEST_F(consumer_scenario, ordered_consumer_reconciliation) {
  orders_stream();
  for (int i = 0; i < 7; i++) ASSERT_FALSE(publish("orders.created", kOrd5xk1).contains("error"));
  jsSubOptions so;
  jsSubOptions_Init(&so);
  so.Ordered = true;
  natsSubscription* sub = nullptr;
  ASSERT_EQ(js_SubscribeSync(&sub, js_.get(), "orders.>", nullptr, &so, nullptr), NATS_OK);
  sub_ptr s(sub);
  for (uint64_t seq = 1; seq <= 10; seq++) {
    msg_ptr m = next_msg(sub, 2s);
    ASSERT_TRUE(m) << seq;
    auto md = meta(m.get());
    EXPECT_EQ(md->Sequence.Stream, seq);
    EXPECT_EQ(md->NumPending, 10 - seq);
  }
  json names = request("$JS.API.CONSUMER.LIST.ORDERS");
  ASSERT_EQ(names["total"], 1) << names;
  const json& c = names["consumers"][0]["config"];
  EXPECT_EQ(c["ack_policy"], "none");
  EXPECT_EQ(c["mem_storage"], true);
  EXPECT_EQ(c["flow_control"], true);
  EXPECT_EQ(c["max_deliver"], 1);
  EXPECT_FALSE(c.contains("durable_name"));
}

// 13.10 Priority groups (2.11+): `dispatch` with overflow on "regions"; pinned `sequencer`.
TEST_F(consumer_scenario, priority_groups_dispatch_and_sequencer) {
  if (reference_server()) GTEST_SKIP() << "priority groups need nats-server 2.11+";
  orders_stream();
  json r = add_consumer("ORDERS", "dispatch", {{"priority_groups", {"regions"}}, {"priority_policy", "overflow"}});
  ASSERT_FALSE(r.contains("error")) << r;
  expect_fields(r["config"], {{"priority_policy", "overflow"}, {"priority_groups", {"regions"}}});
  open_raw();
  EXPECT_EQ(pull_status("ORDERS", "dispatch", R"({"batch":1,"expires":500000000})"),
            "NATS/1.0 400 Bad Request - Priority Group missing\r\n\r\n");
  EXPECT_EQ(pull_status("ORDERS", "dispatch", R"({"batch":1,"expires":500000000,"group":"nope"})"),
            "NATS/1.0 400 Bad Request - Invalid Priority Group\r\n\r\n");
  // 3 pending < min_pending 5: the overflow pull waits and expires; >= 2: served.
  EXPECT_EQ(pull_status("ORDERS", "dispatch", R"({"batch":1,"expires":300000000,"group":"regions","min_pending":5})")
                .rfind("NATS/1.0 408 Request Timeout\r\n", 0), 0u);
  pull("ORDERS", "dispatch", R"({"batch":1,"expires":1000000000,"group":"regions","min_pending":2})");
  auto d = next_raw();
  ASSERT_TRUE(d);
  EXPECT_EQ(d->subject, "orders.created");

  r = add_consumer("ORDERS", "sequencer", {{"priority_groups", {"ordered"}}, {"priority_policy", "pinned_client"},
                                           {"priority_timeout", 90 * kSec}});
  ASSERT_FALSE(r.contains("error")) << r;
  EXPECT_EQ(r["config"]["priority_timeout"], 90 * kSec);
  pull("ORDERS", "sequencer", R"({"batch":1,"expires":1000000000,"group":"ordered"})");
  d = next_raw();
  ASSERT_TRUE(d);
  const std::string key = "Nats-Pin-Id: ";
  size_t at = d->headers.find(key);
  ASSERT_NE(at, std::string::npos) << d->headers;
  std::string pin = d->headers.substr(at + key.size(), d->headers.find("\r\n", at) - at - key.size());
  json ci = info("ORDERS", "sequencer");
  expect_fields(ci["priority_groups"][0], {{"group", "ordered"}, {"pinned_client_id", pin}});
  EXPECT_EQ(pull_status("ORDERS", "sequencer", R"({"batch":1,"expires":500000000,"group":"ordered","id":"wrong"})")
                .rfind("NATS/1.0 423 ", 0), 0u);
  // `nats consumer unpin ORDERS sequencer ordered`.
  r = request("$JS.API.CONSUMER.UNPIN.ORDERS.sequencer", R"({"group":"ordered"})");
  EXPECT_EQ(r["type"], "io.nats.jetstream.api.v1.consumer_unpin_response") << r;
  EXPECT_FALSE(r.contains("error")) << r;
  ci = info("ORDERS", "sequencer");
  EXPECT_FALSE(ci["priority_groups"][0].contains("pinned_client_id")) << ci;
}

// 13.11 Pausing a consumer (2.11+): pause `shipping` for an hour, resume, past deadline.
TEST_F(consumer_scenario, pausing_shipping) {
  if (reference_server()) GTEST_SKIP() << "pause needs nats-server 2.11+";
  orders_stream();
  ASSERT_FALSE(add_consumer("ORDERS", "shipping").contains("error"));
  const auto until = std::chrono::system_clock::now() + std::chrono::hours(1);
  std::time_t tt = std::chrono::system_clock::to_time_t(until);
  char buf[64];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&tt));
  json r = request("$JS.API.CONSUMER.PAUSE.ORDERS.shipping", json{{"pause_until", buf}}.dump());
  EXPECT_EQ(r["type"], "io.nats.jetstream.api.v1.consumer_pause_response") << r;
  EXPECT_EQ(r["paused"], true);
  EXPECT_GT(r["pause_remaining"].get<int64_t>(), 3500 * kSec);
  json ci = info("ORDERS", "shipping");
  EXPECT_EQ(ci["paused"], true);
  // Paused: pulls wait (and heartbeat) but get nothing; the cursor and counts stay.
  open_raw();
  EXPECT_EQ(pull_status("ORDERS", "shipping", R"({"batch":1,"expires":800000000,"idle_heartbeat":300000000})"),
            "NATS/1.0 100 Idle Heartbeat\r\nNats-Last-Consumer: 0\r\nNats-Last-Stream: 0\r\n\r\n");
  // Resume (empty body): delivery restarts at seq 1.
  r = request("$JS.API.CONSUMER.PAUSE.ORDERS.shipping", "");
  EXPECT_EQ(r["paused"], false) << r;
  auto d = next_raw(true);
  ASSERT_TRUE(d);
  EXPECT_EQ(d->subject, "orders.created");
  // A deadline in the past does not pause.
  r = request("$JS.API.CONSUMER.PAUSE.ORDERS.shipping", R"({"pause_until":"2020-01-01T00:00:00Z"})");
  EXPECT_EQ(r["paused"], false) << r;
}

// 13.13 Retention policies: FULFILLMENT work queue with `shippers`; the WQ consumer rules;
// an interest stream keeps a message until every consumer acked.
TEST_F(consumer_scenario, retention_policies_fulfillment) {
  json r = create({{"name", "FULFILLMENT"}, {"subjects", {"fulfill.>"}}, {"retention", "workqueue"}});
  ASSERT_FALSE(r.contains("error")) << r;
  EXPECT_EQ(r["config"]["retention"], "workqueue");
  ASSERT_EQ(publish("fulfill.us", kOrd8w2k)["seq"], 1);
  ASSERT_FALSE(add_consumer("FULFILLMENT", "shippers").contains("error"));
  sub_ptr sub = bind("FULFILLMENT", "shippers");
  auto msgs = fetch(sub.get(), 1, 2000);
  ASSERT_EQ(msgs.size(), 1u);
  EXPECT_EQ(natsMsg_AckSync(msgs[0].get(), nullptr, nullptr), NATS_OK);
  EXPECT_EQ(state("FULFILLMENT")["messages"], 0);  // "Messages: 0"

  r = add_consumer("FULFILLMENT", "eu-shippers");
  EXPECT_EQ(r["error"], json::parse(R"({"code":400,"err_code":10099,
      "description":"multiple non-filtered consumers not allowed on workqueue stream"})"));
  sub.reset();
  r = request("$JS.API.CONSUMER.DELETE.FULFILLMENT.shippers");
  EXPECT_EQ(r["success"], true) << r;
  ASSERT_FALSE(add_consumer("FULFILLMENT", "us-shippers", {{"filter_subject", "fulfill.us"}}).contains("error"));
  ASSERT_FALSE(add_consumer("FULFILLMENT", "eu-shippers", {{"filter_subject", "fulfill.eu"}}).contains("error"));
  r = add_consumer("FULFILLMENT", "all-shippers", {{"filter_subject", "fulfill.>"}});
  EXPECT_EQ(r["error"], json::parse(R"({"code":400,"err_code":10100,
      "description":"filtered consumer not unique on workqueue stream"})"));
  // Retention can't change to/from workqueue.
  json cfg = request("$JS.API.STREAM.INFO.FULFILLMENT")["config"];
  cfg["retention"] = "limits";
  r = request("$JS.API.STREAM.UPDATE.FULFILLMENT", cfg.dump());
  // 2.9.10 ends the text at "policy"; newer servers (and the chapter) add " to/from workqueue".
  EXPECT_EQ(r["error"]["err_code"], 10052) << r;
  EXPECT_EQ(r["error"]["description"].get<std::string>().rfind(
                "stream configuration update can not change retention policy", 0), 0u) << r;

  // Interest: two consumers; the message goes once both acked.
  ASSERT_FALSE(create({{"name", "NOTIFY"}, {"subjects", {"notify.>"}}, {"retention", "interest"}}).contains("error"));
  ASSERT_FALSE(add_consumer("NOTIFY", "email").contains("error"));
  ASSERT_FALSE(add_consumer("NOTIFY", "sms").contains("error"));
  ASSERT_EQ(publish("notify.shipped", kOrd8w2kShipped)["seq"], 1);
  EXPECT_EQ(state("NOTIFY")["messages"], 1);
  for (const char* name : {"email", "sms"}) {
    sub_ptr s = bind("NOTIFY", name);
    auto got = fetch(s.get(), 1, 2000);
    ASSERT_EQ(got.size(), 1u);
    EXPECT_EQ(natsMsg_AckSync(got[0].get(), nullptr, nullptr), NATS_OK);
    EXPECT_EQ(state("NOTIFY")["messages"], std::string(name) == "email" ? 1 : 0) << name;
  }
}

}  // namespace
}  // namespace peregrine::test
