// JetStream per account: accounts { A { jetstream: ... } } gives each account its own streams
// and $JS.API (two accounts may each have an ORDERS, fully isolated), its own limits and usage
// in $JS.API.INFO; an account without JetStream gets 10039. Runs against nats-server 2.9.10
// as well (js_accounts_nats_server), which answers every check here the same way.
#include <algorithm>
#include <filesystem>
#include <map>
#include <string>
#include <vector>
#include <thread>

#include <nlohmann/json.hpp>

#include "tests/integration/ops_harness.h"
#include "tests/integration/server_fixture.h"

namespace peregrine::test {
namespace {

using namespace std::chrono_literals;
using json = nlohmann::json;

bool reference_server() {
  const std::string bin = server_binary();
  return bin.size() >= 11 && bin.compare(bin.size() - 11, 11, "nats-server") == 0;
}

class js_accounts : public server_test {
 protected:
  std::string extra_conf() const override {
    return "http_port: " + std::to_string(http_port_) + R"(
jetstream { store_dir: "@TMPDIR@/js" }
accounts {
  A: { users: [ { user: a, password: pa } ], jetstream: enabled,
       exports: [ { service: "$JS.API.>" }, { service: "shared.>" } ] }
  D: { users: [ { user: d, password: pd } ],
       imports: [ { service: { account: A, subject: "$JS.API.>" }, to: "JS.A.API.>" },
                  { service: { account: A, subject: "shared.>" } } ] }
  B: { users: [ { user: b, password: pb } ], jetstream: enabled }
  L: { users: [ { user: l, password: pl } ],
       jetstream: { max_memory: 4K, max_file: 4K, max_streams: 3, max_consumers: 1 } }
  C: { users: [ { user: c, password: pc } ] }
  K: { users: [ { user: k, password: pk } ],
       jetstream: { max_bytes_required: true, max_ack_pending: 50, memory_max_stream_bytes: 2K,
                    store_max_stream_bytes: 3K } }
}
authorization { users: [ { user: g, password: pg } ] }
)";
  }

  const int http_port_ = pick_free_port();

  nc_ptr as(const std::string& user, const std::string& pass) {
    std::string err;
    auto nc = connect("nats://" + user + ":" + pass + "@127.0.0.1:" + std::to_string(port()), &err);
    EXPECT_TRUE(nc) << err;
    return nc;
  }
  // The reply's JSON (a string "timeout" when none came).
  static json request(natsConnection* nc, const std::string& subject, const std::string& body = {}) {
    natsMsg* reply = nullptr;
    if (natsConnection_RequestString(&reply, nc, subject.c_str(), body.c_str(), 2000) != NATS_OK) return "timeout";
    msg_ptr m(reply);
    const std::string data(natsMsg_GetData(m.get()), std::size_t(natsMsg_GetDataLength(m.get())));
    auto j = json::parse(data, nullptr, false);
    return j.is_discarded() ? json(data) : j;
  }
  static json create(natsConnection* nc, const json& cfg) {
    return request(nc, "$JS.API.STREAM.CREATE." + cfg["name"].get<std::string>(), cfg.dump());
  }
  static int err_code(const json& j) { return j.is_object() && j.contains("error") ? j["error"].value("err_code", 0) : 0; }
  static std::uint64_t messages(natsConnection* nc, const std::string& stream) {
    json j = request(nc, "$JS.API.STREAM.INFO." + stream);
    return j.is_object() && j.contains("state") ? j["state"]["messages"].get<std::uint64_t>() : ~0ull;
  }
};

TEST_F(js_accounts, same_stream_name_in_two_accounts_is_isolated) {
  auto a = as("a", "pa");
  auto b = as("b", "pb");
  ASSERT_TRUE(a && b);
  // B listens for stream advisories: A's create must not reach it.
  sub_ptr b_events = subscribe_sync(b.get(), "$JS.EVENT.ADVISORY.STREAM.>");
  sub_ptr a_events = subscribe_sync(a.get(), "$JS.EVENT.ADVISORY.STREAM.>");
  ASSERT_EQ(natsConnection_Flush(a.get()), NATS_OK);
  ASSERT_EQ(natsConnection_Flush(b.get()), NATS_OK);
  const json cfg = {{"name", "ORDERS"}, {"subjects", {"orders.>"}}, {"allow_direct", true}};
  json ca = create(a.get(), cfg);
  ASSERT_TRUE(ca.is_object() && ca.value("did_create", false)) << ca.dump();
  EXPECT_TRUE(next_msg(a_events.get(), 2s)) << "A's own advisory";
  ASSERT_EQ(natsConnection_Flush(b.get()), NATS_OK);
  EXPECT_EQ(pending_msgs(b_events.get()), 0) << "A's advisory reached B";
  json cb = create(b.get(), cfg);
  ASSERT_TRUE(cb.is_object() && cb.value("did_create", false)) << "the same name in B: " << cb.dump();

  for (int i = 0; i < 3; ++i) {
    json ack = request(a.get(), "orders.new", "a" + std::to_string(i));
    ASSERT_EQ(ack.value("stream", ""), "ORDERS") << ack.dump();
    EXPECT_EQ(ack.value("seq", 0), i + 1);
  }
  json bk = request(b.get(), "orders.new", "b0");
  EXPECT_EQ(bk.value("seq", 0), 1) << "B's stream counts on its own: " << bk.dump();
  EXPECT_EQ(messages(a.get(), "ORDERS"), 3u);
  EXPECT_EQ(messages(b.get(), "ORDERS"), 1u);

  // Direct get and message get read the account's own stream.
  json da = request(a.get(), "$JS.API.DIRECT.GET.ORDERS", R"({"seq":1})");
  EXPECT_EQ(da, json("a0"));
  json db = request(b.get(), "$JS.API.DIRECT.GET.ORDERS", R"({"seq":1})");
  EXPECT_EQ(db, json("b0"));

  // A pull consumer in A: its deliveries and acks stay in A; B's stream keeps its message.
  json cons = request(a.get(), "$JS.API.CONSUMER.DURABLE.CREATE.ORDERS.work",
                      R"({"stream_name":"ORDERS","config":{"durable_name":"work","ack_policy":"explicit"}})");
  ASSERT_EQ(cons.value("name", ""), "work") << cons.dump();
  EXPECT_EQ(err_code(request(b.get(), "$JS.API.CONSUMER.INFO.ORDERS.work")), 10014) << "A's consumer seen in B";
  sub_ptr inbox = subscribe_sync(a.get(), "pull.inbox");
  ASSERT_EQ(natsConnection_PublishRequestString(a.get(), "$JS.API.CONSUMER.MSG.NEXT.ORDERS.work", "pull.inbox",
                                                R"({"batch":3,"expires":2000000000})"),
            NATS_OK);
  for (int i = 0; i < 3; ++i) {
    msg_ptr m = next_msg(inbox.get(), 3s);
    ASSERT_TRUE(m) << "delivery " << i;
    EXPECT_EQ(std::string(natsMsg_GetData(m.get()), std::size_t(natsMsg_GetDataLength(m.get()))),
              "a" + std::to_string(i));
    ASSERT_NE(natsMsg_GetReply(m.get()), nullptr);
    ASSERT_EQ(natsConnection_PublishString(a.get(), natsMsg_GetReply(m.get()), "+ACK"), NATS_OK);
  }
  json info;
  for (int i = 0; i < 100; ++i) {  // the acks are applied on the stream's thread
    info = request(a.get(), "$JS.API.CONSUMER.INFO.ORDERS.work");
    if (info.is_object() && info["ack_floor"]["stream_seq"] == 3) break;
    std::this_thread::sleep_for(20ms);
  }
  EXPECT_EQ(info["ack_floor"]["stream_seq"], 3) << info.dump();
  // B's MSG.NEXT for a consumer only A has: nothing delivered to B.
  sub_ptr b_inbox = subscribe_sync(b.get(), "pull.b");
  ASSERT_EQ(natsConnection_PublishRequestString(b.get(), "$JS.API.CONSUMER.MSG.NEXT.ORDERS.work", "pull.b",
                                                R"({"batch":1,"no_wait":true})"),
            NATS_OK);
  if (msg_ptr m = next_msg(b_inbox.get(), 500ms)) {
    EXPECT_EQ(natsMsg_GetDataLength(m.get()), 0) << "a message of A in B";
  }

  // Names, info and delete in one account do not touch the other.
  json names = request(b.get(), "$JS.API.STREAM.NAMES");
  EXPECT_EQ(names["streams"], json::array({"ORDERS"})) << names.dump();
  json del = request(a.get(), "$JS.API.STREAM.DELETE.ORDERS");
  EXPECT_EQ(del.value("success", false), true) << del.dump();
  EXPECT_EQ(err_code(request(a.get(), "$JS.API.STREAM.INFO.ORDERS")), 10059);
  EXPECT_EQ(messages(b.get(), "ORDERS"), 1u) << "B's ORDERS survives A's delete";
  json bk2 = request(b.get(), "orders.new", "b1");
  EXPECT_EQ(bk2.value("seq", 0), 2) << bk2.dump();
  ASSERT_EQ(natsConnection_Flush(b.get()), NATS_OK);
  int b_advisories = 0;
  while (msg_ptr m = next_msg(b_events.get(), 100ms))
    if (std::string(natsMsg_GetSubject(m.get())).find("DELETED") != std::string::npos) ++b_advisories;
  EXPECT_EQ(b_advisories, 0) << "A's delete advisory reached B";
}

// Account D uses A's JetStream through a service import of "$JS.API.>" mapped to
// "JS.A.API.>" (a wildcard `to`) and publishes into A's stream through an import of its
// subjects: libnats with the API prefix "JS.A.API" creates the stream and gets PubAcks.
TEST_F(js_accounts, another_account_uses_jetstream_through_an_api_import) {
  auto a = as("a", "pa");
  auto d = as("d", "pd");
  ASSERT_TRUE(a && d);
  jsOptions o;
  jsOptions_Init(&o);
  o.Prefix = "JS.A.API";
  jsCtx* js = nullptr;
  ASSERT_EQ(natsConnection_JetStream(&js, d.get(), &o), NATS_OK);
  jsStreamConfig sc;
  jsStreamConfig_Init(&sc);
  sc.Name = "SHARED";
  const char* subjects[] = {"shared.>"};
  sc.Subjects = subjects;
  sc.SubjectsLen = 1;
  jsStreamInfo* si = nullptr;
  jsErrCode jerr = static_cast<jsErrCode>(0);
  EXPECT_EQ(js_AddStream(&si, js, &sc, nullptr, &jerr), NATS_OK) << "err_code " << int(jerr);
  if (si) jsStreamInfo_Destroy(si);
  for (int i = 1; i <= 3; ++i) {
    jsPubAck* pa = nullptr;
    ASSERT_EQ(js_Publish(&pa, js, "shared.x", "m", 1, nullptr, &jerr), NATS_OK) << i;
    ASSERT_NE(pa, nullptr);
    EXPECT_EQ(std::string(pa->Stream), "SHARED");
    EXPECT_EQ(pa->Sequence, std::uint64_t(i));
    jsPubAck_Destroy(pa);
  }
  si = nullptr;
  ASSERT_EQ(js_GetStreamInfo(&si, js, "SHARED", nullptr, &jerr), NATS_OK);
  EXPECT_EQ(si->State.Msgs, 3u);
  jsStreamInfo_Destroy(si);
  jsCtx_Destroy(js);
  // The stream is A's: A sees it under its own API, D's own namespace has no JetStream.
  EXPECT_EQ(messages(a.get(), "SHARED"), 3u);
  EXPECT_EQ(err_code(request(d.get(), "$JS.API.INFO")), 10039) << "D has no JetStream of its own";
  // A wildcard token past the mapping reaches the right API subject.
  json names = request(d.get(), "JS.A.API.STREAM.NAMES");
  ASSERT_TRUE(names.is_object()) << names.dump();
  EXPECT_NE(names.dump().find("SHARED"), std::string::npos) << names.dump();
}

TEST_F(js_accounts, account_without_jetstream_gets_10039) {
  auto c = as("c", "pc");
  auto g = as("g", "pg");
  ASSERT_TRUE(c && g);
  for (natsConnection* nc : {c.get(), g.get()}) {  // $G too: an accounts block gives it none
    json info = request(nc, "$JS.API.INFO");
    EXPECT_EQ(info.value("type", ""), "io.nats.jetstream.api.v1.account_info_response") << info.dump();
    EXPECT_EQ(err_code(info), 10039) << info.dump();
    EXPECT_EQ(info["error"].value("description", ""), "JetStream not enabled for account");
    EXPECT_EQ(info["error"].value("code", 0), 503);
    json names = request(nc, "$JS.API.STREAM.NAMES");
    EXPECT_EQ(err_code(names), 10039) << names.dump();
    EXPECT_TRUE(names.contains("streams") && names["streams"].is_null()) << names.dump();
    EXPECT_EQ(err_code(create(nc, {{"name", "ORDERS"}, {"subjects", {"orders.>"}}})), 10039);
  }
  // A's streams are not C's: C's publishes to A's subjects store nothing.
  auto a = as("a", "pa");
  ASSERT_TRUE(a);
  ASSERT_TRUE(create(a.get(), {{"name", "ORDERS"}, {"subjects", {"orders.>"}}}).value("did_create", false));
  ASSERT_EQ(natsConnection_PublishString(c.get(), "orders.x", "c"), NATS_OK);
  ASSERT_EQ(natsConnection_Flush(c.get()), NATS_OK);
  EXPECT_EQ(messages(a.get(), "ORDERS"), 0u);
}

TEST_F(js_accounts, account_limits_are_enforced) {
  auto l = as("l", "pl");
  ASSERT_TRUE(l);
  // Reservations against the account's max_memory / max_file (4000 bytes each).
  EXPECT_EQ(err_code(create(l.get(), {{"name", "M"}, {"subjects", {"m"}}, {"storage", "memory"}, {"max_bytes", 5000}})),
            10028);
  EXPECT_EQ(err_code(create(l.get(), {{"name", "F"}, {"subjects", {"f"}}, {"max_bytes", 5000}})), 10047);
  // A stream may not allow more consumers than the account.
  EXPECT_EQ(err_code(create(l.get(), {{"name", "F"}, {"subjects", {"f"}}, {"max_consumers", 5}})), 10026);
  ASSERT_TRUE(create(l.get(), {{"name", "F"}, {"subjects", {"f"}}}).value("did_create", false));
  ASSERT_TRUE(create(l.get(), {{"name", "M"}, {"subjects", {"m"}}, {"storage", "memory"}}).value("did_create", false));
  ASSERT_TRUE(create(l.get(), {{"name", "S3"}, {"subjects", {"s3"}}}).value("did_create", false));
  json fourth = create(l.get(), {{"name", "S4"}, {"subjects", {"s4"}}});
  EXPECT_EQ(err_code(fourth), 10027) << fourth.dump();
  EXPECT_EQ(fourth["error"].value("description", ""), "maximum number of streams reached");
  // max_consumers: 1 per stream.
  const std::string durable = R"({"stream_name":"F","config":{"durable_name":"D","ack_policy":"explicit"}})";
  json d1 = json::parse(durable);
  d1["config"]["durable_name"] = "d1";
  json c1 = request(l.get(), "$JS.API.CONSUMER.DURABLE.CREATE.F.d1", d1.dump());
  EXPECT_EQ(c1.value("name", ""), "d1") << c1.dump();
  json d2 = d1;
  d2["config"]["durable_name"] = "d2";
  json c2 = request(l.get(), "$JS.API.CONSUMER.DURABLE.CREATE.F.d2", d2.dump());
  EXPECT_EQ(err_code(c2), 10026) << c2.dump();
  EXPECT_EQ(c2["error"].value("description", ""), "maximum consumers limit reached");
  // Publishes past the account's storage: 10002 for the one that would not fit.
  const std::string kilo(1000, 'x');
  for (const char* subject : {"f", "m"}) {
    int stored = 0, refused = 0;
    for (int i = 0; i < 6; ++i) {
      json ack = request(l.get(), subject, kilo);
      if (ack.is_object() && ack.contains("seq") && !ack.contains("error")) ++stored;
      if (err_code(ack) == 10002) {
        ++refused;
        EXPECT_EQ(ack["error"].value("description", ""), "resource limits exceeded for account");
      }
    }
    EXPECT_EQ(stored, 3) << subject;
    EXPECT_EQ(refused, 3) << subject;
  }
}

// The account's per-stream and per-consumer rules: every stream sets max_bytes (10113), at
// most the account's per-stream ceiling of its storage type (10122); a consumer's
// max_ack_pending defaults to the account's limit and may not exceed it (10121).
TEST_F(js_accounts, account_stream_bytes_and_ack_pending_limits) {
  auto k = as("k", "pk");
  ASSERT_TRUE(k);
  const json unset = create(k.get(), {{"name", "F"}, {"subjects", {"f"}}});
  EXPECT_EQ(err_code(unset), 10113) << unset.dump();
  EXPECT_EQ(unset["error"].value("description", ""), "account requires a stream config to have max bytes set");
  const json big = create(k.get(), {{"name", "F"}, {"subjects", {"f"}}, {"max_bytes", 3001}});
  EXPECT_EQ(err_code(big), 10122) << big.dump();
  EXPECT_EQ(big["error"].value("description", ""), "stream max bytes exceeds account limit max stream bytes");
  const json mem = create(k.get(), {{"name", "M"}, {"subjects", {"m"}}, {"storage", "memory"}, {"max_bytes", 2001}});
  EXPECT_EQ(err_code(mem), 10122) << mem.dump();
  ASSERT_TRUE(create(k.get(), {{"name", "F"}, {"subjects", {"f"}}, {"max_bytes", 3000}}).value("did_create", false));
  ASSERT_TRUE(create(k.get(), {{"name", "M"}, {"subjects", {"m"}}, {"storage", "memory"}, {"max_bytes", 2000}})
                  .value("did_create", false));
  // An update may not lift max_bytes past the ceiling either.
  const json up = request(k.get(), "$JS.API.STREAM.UPDATE.F",
                          json{{"name", "F"}, {"subjects", {"f"}}, {"max_bytes", 5000}}.dump());
  EXPECT_EQ(err_code(up), 10122) << up.dump();

  const json d = request(k.get(), "$JS.API.CONSUMER.DURABLE.CREATE.F.d",
                         R"({"stream_name":"F","config":{"durable_name":"d","ack_policy":"explicit"}})");
  ASSERT_TRUE(d.contains("config")) << d.dump();
  EXPECT_EQ(d["config"].value("max_ack_pending", 0), 50) << d.dump();
  const json over = request(k.get(), "$JS.API.CONSUMER.DURABLE.CREATE.F.e",
                            R"({"stream_name":"F","config":{"durable_name":"e","ack_policy":"explicit","max_ack_pending":51}})");
  EXPECT_EQ(err_code(over), 10121) << over.dump();
  EXPECT_EQ(over["error"].value("description", ""), "consumer max ack pending exceeds system limit of 50");

  const json info = request(k.get(), "$JS.API.INFO");
  ASSERT_TRUE(info.is_object() && info.contains("limits")) << info.dump();
  EXPECT_EQ(info["limits"].value("max_ack_pending", 0), 50) << info.dump();
  EXPECT_EQ(info["limits"].value("memory_max_stream_bytes", 0), 2000) << info.dump();
  EXPECT_EQ(info["limits"].value("storage_max_stream_bytes", 0), 3000) << info.dump();
  EXPECT_EQ(info["limits"].value("max_bytes_required", false), true) << info.dump();
}

// An atomic batch is judged as a whole against the account's storage: one that would take the
// account past max_file is refused (10002) and none of it is stored; a small one fits.
TEST_F(js_accounts, atomic_batch_past_the_account_limit_is_refused_whole) {
  if (reference_server()) GTEST_SKIP() << "nats-server 2.9.10 has no atomic batches";
  auto l = as("l", "pl");
  ASSERT_TRUE(l);
  ASSERT_TRUE(create(l.get(), {{"name", "AB"}, {"subjects", {"ab"}}, {"allow_atomic", true}}).value("did_create", false));
  auto batch = [&](const std::string& id, int count) {
    const std::string kilo(1000, 'x');
    json last;
    for (int i = 1; i <= count; ++i) {
      natsMsg* m = nullptr;
      EXPECT_EQ(natsMsg_Create(&m, "ab", nullptr, kilo.data(), int(kilo.size())), NATS_OK);
      msg_ptr owned(m);
      natsMsgHeader_Set(m, "Nats-Batch-Id", id.c_str());
      natsMsgHeader_Set(m, "Nats-Batch-Sequence", std::to_string(i).c_str());
      if (i == count) natsMsgHeader_Set(m, "Nats-Batch-Commit", "1");
      natsMsg* reply = nullptr;
      if (natsConnection_RequestMsg(&reply, l.get(), m, 2000) != NATS_OK) return json("timeout");
      msg_ptr r(reply);
      const std::string data(natsMsg_GetData(r.get()), std::size_t(natsMsg_GetDataLength(r.get())));
      if (i == count) last = json::parse(data, nullptr, false);
    }
    return last;
  };
  const json big = batch("big", 5);  // ~5 KB into a 4 KB account
  EXPECT_EQ(err_code(big), 10002) << big.dump();
  EXPECT_EQ(messages(l.get(), "AB"), 0u);
  const json small = batch("small", 2);
  EXPECT_EQ(small.value("count", 0), 2) << small.dump();
  EXPECT_EQ(messages(l.get(), "AB"), 2u);
}

TEST_F(js_accounts, info_shows_each_accounts_usage_and_limits) {
  auto a = as("a", "pa");
  auto b = as("b", "pb");
  auto l = as("l", "pl");
  ASSERT_TRUE(a && b && l);
  ASSERT_TRUE(create(a.get(), {{"name", "ORDERS"}, {"subjects", {"orders.>"}}}).value("did_create", false));
  ASSERT_TRUE(create(a.get(), {{"name", "MEM"}, {"subjects", {"mem"}}, {"storage", "memory"}}).value("did_create", false));
  ASSERT_EQ(request(a.get(), "orders.x", std::string(100, 'o')).value("seq", 0), 1);
  ASSERT_EQ(request(a.get(), "mem", std::string(50, 'm')).value("seq", 0), 1);
  ASSERT_EQ(request(a.get(), "$JS.API.CONSUMER.DURABLE.CREATE.ORDERS.d",
                    R"({"stream_name":"ORDERS","config":{"durable_name":"d","ack_policy":"explicit"}})")
                .value("name", ""),
            "d");
  json ia = request(a.get(), "$JS.API.INFO");
  ASSERT_TRUE(ia.is_object()) << ia.dump();
  EXPECT_EQ(ia.value("type", ""), "io.nats.jetstream.api.v1.account_info_response");
  EXPECT_EQ(ia["streams"], 2);
  EXPECT_EQ(ia["consumers"], 1);
  EXPECT_GT(ia["storage"].get<std::int64_t>(), 100);
  EXPECT_GT(ia["memory"].get<std::int64_t>(), 50);
  EXPECT_EQ(ia["limits"]["max_streams"], -1);
  json ib = request(b.get(), "$JS.API.INFO");
  EXPECT_EQ(ib["streams"], 0) << ib.dump();
  EXPECT_EQ(ib["consumers"], 0);
  EXPECT_EQ(ib["storage"], 0);
  EXPECT_EQ(ib["memory"], 0);
  json il = request(l.get(), "$JS.API.INFO");
  const json want_limits = {{"max_memory", 4000}, {"max_storage", 4000}, {"max_streams", 3}, {"max_consumers", 1}};
  for (const auto& [k, v] : want_limits.items()) EXPECT_EQ(il["limits"][k], v) << k << ": " << il.dump();
  // nats-server's field order: type, memory, storage, [reserved_*], streams, consumers, limits, ..., api.
  natsMsg* raw = nullptr;
  ASSERT_EQ(natsConnection_RequestString(&raw, l.get(), "$JS.API.INFO", "", 2000), NATS_OK);
  msg_ptr rm(raw);
  const std::string text(natsMsg_GetData(rm.get()), std::size_t(natsMsg_GetDataLength(rm.get())));
  std::size_t at = 0;
  for (const char* k : {"\"type\"", "\"memory\"", "\"storage\"", "\"streams\"", "\"consumers\"", "\"limits\"",
                        "\"max_memory\"", "\"max_storage\"", "\"max_streams\"", "\"max_consumers\"", "\"api\"",
                        "\"total\"", "\"errors\""}) {
    const std::size_t p = text.find(k, at);
    EXPECT_NE(p, std::string::npos) << k << " in order in " << text;
    if (p != std::string::npos) at = p;
  }
}

TEST_F(js_accounts, jsz_lists_each_account_and_healthz_finds_its_streams) {
  auto a = as("a", "pa");
  auto b = as("b", "pb");
  ASSERT_TRUE(a && b);
  ASSERT_TRUE(create(a.get(), {{"name", "ORDERS"}, {"subjects", {"orders.>"}}}).value("did_create", false));
  ASSERT_TRUE(create(b.get(), {{"name", "ORDERS"}, {"subjects", {"orders.>"}}}).value("did_create", false));
  ASSERT_TRUE(create(b.get(), {{"name", "ONLY_B"}, {"subjects", {"b.>"}}}).value("did_create", false));
  ASSERT_EQ(request(a.get(), "orders.x", "a").value("seq", 0), 1);
  const http_result r = http_get(http_port_, "/jsz?accounts=true&streams=true");
  ASSERT_EQ(r.status, 200) << r.body;
  const json jsz = json::parse(r.body, nullptr, false);
  ASSERT_TRUE(jsz.is_object()) << r.body;
  EXPECT_EQ(jsz["streams"], 3) << r.body;
  EXPECT_EQ(jsz["messages"], 1);
  std::map<std::string, std::vector<std::string>> streams;
  for (const auto& acc : jsz["account_details"]) {
    auto& list = streams[acc["name"].get<std::string>()];
    for (const auto& s : acc.value("stream_detail", json::array())) list.push_back(s["name"].get<std::string>());
    std::sort(list.begin(), list.end());  // nats-server lists them in no set order
  }
  EXPECT_EQ(streams["A"], std::vector<std::string>{"ORDERS"}) << r.body;
  EXPECT_EQ(streams["B"], (std::vector<std::string>{"ONLY_B", "ORDERS"})) << r.body;
  EXPECT_EQ(streams.count("C"), 0u) << "an account without JetStream: " << r.body;
  EXPECT_EQ(http_get(http_port_, "/healthz").status, 200);
  if (server_binary().find("nats-server") != std::string::npos) return;  // 2.9.10 checks no stream by name
  EXPECT_EQ(http_get(http_port_, "/healthz?account=B&stream=ONLY_B").status, 200);
  EXPECT_EQ(http_get(http_port_, "/healthz?account=A&stream=ONLY_B").status, 503);
}

TEST_F(js_accounts, restart_keeps_every_accounts_streams) {
  {
    auto a = as("a", "pa");
    auto b = as("b", "pb");
    ASSERT_TRUE(a && b);
    ASSERT_TRUE(create(a.get(), {{"name", "ORDERS"}, {"subjects", {"orders.>"}}}).value("did_create", false));
    ASSERT_TRUE(create(b.get(), {{"name", "ORDERS"}, {"subjects", {"orders.>"}}}).value("did_create", false));
    ASSERT_TRUE(create(b.get(), {{"name", "ONLY_B"}, {"subjects", {"b.>"}}}).value("did_create", false));
    for (int i = 0; i < 2; ++i) ASSERT_GT(request(a.get(), "orders.x", "a").value("seq", 0), 0);
    ASSERT_GT(request(b.get(), "orders.x", "b").value("seq", 0), 0);
    ASSERT_GT(request(a.get(), "$JS.API.CONSUMER.DURABLE.CREATE.ORDERS.d",
                      R"({"stream_name":"ORDERS","config":{"durable_name":"d","ack_policy":"explicit"}})")
                  .count("name"),
              0u);
  }
  // nats-server's layout: <store_dir>/jetstream/<account>/streams/<name>.
  const auto js = server_->tmp_dir() / "js" / "jetstream";
  EXPECT_TRUE(std::filesystem::is_directory(js / "A" / "streams" / "ORDERS"));
  EXPECT_TRUE(std::filesystem::is_directory(js / "B" / "streams" / "ORDERS"));
  EXPECT_TRUE(std::filesystem::is_directory(js / "B" / "streams" / "ONLY_B"));
  server_->stop();
  ASSERT_TRUE(server_->start()) << server_->error();
  auto a = as("a", "pa");
  auto b = as("b", "pb");
  ASSERT_TRUE(a && b);
  EXPECT_EQ(messages(a.get(), "ORDERS"), 2u);
  EXPECT_EQ(messages(b.get(), "ORDERS"), 1u);
  EXPECT_EQ(err_code(request(a.get(), "$JS.API.STREAM.INFO.ONLY_B")), 10059);
  EXPECT_EQ(request(b.get(), "$JS.API.STREAM.NAMES")["streams"], json::array({"ONLY_B", "ORDERS"}));
  EXPECT_EQ(request(a.get(), "$JS.API.CONSUMER.INFO.ORDERS.d").value("name", ""), "d");
  EXPECT_EQ(err_code(request(b.get(), "$JS.API.CONSUMER.INFO.ORDERS.d")), 10014);
  EXPECT_EQ(request(b.get(), "orders.y", "b").value("seq", 0), 2);
}

}  // namespace
}  // namespace peregrine::test
