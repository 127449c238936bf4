// JetStream consumers through the server: the CONSUMER.* API (raw JSON, exact errors),
// libnats pull (js_PullSubscribe + natsSubscription_Fetch) and push subscriptions, every
// ack kind, redelivery after ack_wait, pull status replies, work-queue retention and
// durable consumer state across SIGTERM and kill -9.
#include <algorithm>
#include <thread>

#include "tests/integration/js_fixture.h"

namespace peregrine::test {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;

struct meta_deleter {
  void operator()(jsMsgMetaData* m) const { jsMsgMetaData_Destroy(m); }
};
using meta_ptr = std::unique_ptr<jsMsgMetaData, meta_deleter>;

class js_consumer_api : public js_test {
 protected:
  json create_consumer(const std::string& stream, const std::string& name, const json& cfg,
                       const std::string& action = "") {
    json req = {{"stream_name", stream}, {"config", cfg}};
    if (!action.empty()) req["action"] = action;
    return request("$JS.API.CONSUMER.CREATE." + stream + (name.empty() ? "" : "." + name), req.dump());
  }
  json info(const std::string& stream, const std::string& name) {
    return request("$JS.API.CONSUMER.INFO." + stream + "." + name);
  }
  void orders(int n, const std::string& prefix = "orders.") {
    for (int i = 1; i <= n; ++i) {
      json ack = publish(prefix + (i % 2 ? "new" : "shipped"), "order-" + std::to_string(i));
      ASSERT_TRUE(ack.contains("seq")) << ack;
    }
  }
  // Raw pull: every reply (data and status) until a status or `want` data messages.
  struct reply {
    std::string subject, status, description, data, ack;
    std::string header(const char* name) const { return headers.count(name) ? headers.at(name) : ""; }
    std::map<std::string, std::string> headers;
  };
  std::vector<reply> pull(const std::string& stream, const std::string& consumer, const json& body, int want,
                          std::chrono::milliseconds wait = 2000ms) {
    std::string inbox = "_INBOX.pull." + std::to_string(++inbox_serial_);
    sub_ptr sub = subscribe_sync(nc_.get(), inbox);
    natsConnection_PublishRequestString(nc_.get(), ("$JS.API.CONSUMER.MSG.NEXT." + stream + "." + consumer).c_str(),
                                        inbox.c_str(), body.is_null() ? "" : body.dump().c_str());
    std::vector<reply> out;
    int data = 0;
    while (data < want) {
      msg_ptr m = next_msg(sub.get(), wait);
      if (!m) break;
      reply r;
      r.subject = natsMsg_GetSubject(m.get());
      if (natsMsg_GetReply(m.get())) r.ack = natsMsg_GetReply(m.get());
      r.data.assign(natsMsg_GetData(m.get()), size_t(natsMsg_GetDataLength(m.get())));
      const char* v = nullptr;
      if (natsMsgHeader_Get(m.get(), "Status", &v) == NATS_OK) r.status = v;
      if (natsMsgHeader_Get(m.get(), "Description", &v) == NATS_OK) r.description = v;
      for (const char* h : {"Nats-Pending-Messages", "Nats-Pending-Bytes", "Nats-Msg-Size"})
        if (natsMsgHeader_Get(m.get(), h, &v) == NATS_OK) r.headers[h] = v;
      out.push_back(r);
      if (!r.status.empty()) break;
      ++data;
    }
    return out;
  }
  int inbox_serial_ = 0;
};

TEST_F(js_consumer_api, create_defaults_info_names_list_delete) {
  ASSERT_FALSE(create({{"name", "ORDERS"}, {"subjects", {"orders.>"}}}).contains("error"));
  orders(3);
  json r = create_consumer("ORDERS", "NEW", {{"durable_name", "NEW"}, {"filter_subject", "orders.new"}});
  ASSERT_FALSE(r.contains("error")) << r;
  EXPECT_EQ(r["type"], "io.nats.jetstream.api.v1.consumer_create_response");
  EXPECT_EQ(r["stream_name"], "ORDERS");
  EXPECT_EQ(r["name"], "NEW");
  const json& c = r["config"];
  EXPECT_EQ(c["durable_name"], "NEW");
  EXPECT_EQ(c["deliver_policy"], "all");
  EXPECT_EQ(c["ack_policy"], "none");  // an omitted ack_policy is none
  EXPECT_EQ(c["max_deliver"], -1);
  EXPECT_EQ(c["replay_policy"], "instant");
  EXPECT_EQ(c["max_waiting"], 512);
  EXPECT_FALSE(c.contains("ack_wait"));
  EXPECT_FALSE(c.contains("max_ack_pending"));
  EXPECT_EQ(c["num_replicas"], 0);
  EXPECT_EQ(r["num_pending"], 2);
  EXPECT_EQ(r["delivered"], json({{"consumer_seq", 0}, {"stream_seq", 0}}));
  EXPECT_EQ(r["ack_floor"], json({{"consumer_seq", 0}, {"stream_seq", 0}}));

  json ex = create_consumer("ORDERS", "EX", {{"durable_name", "EX"}, {"ack_policy", "explicit"}});
  EXPECT_EQ(ex["config"]["ack_wait"], 30000000000LL);
  EXPECT_EQ(ex["config"]["max_ack_pending"], 1000);
  EXPECT_EQ(ex["num_pending"], 3);

  json i = info("ORDERS", "NEW");
  EXPECT_EQ(i["type"], "io.nats.jetstream.api.v1.consumer_info_response");
  EXPECT_EQ(i["num_pending"], 2);
  json names = request("$JS.API.CONSUMER.NAMES.ORDERS");
  EXPECT_EQ(names["consumers"], json({"EX", "NEW"}));
  EXPECT_EQ(names["total"], 2);
  EXPECT_EQ(names["limit"], 1024);
  json list = request("$JS.API.CONSUMER.LIST.ORDERS", R"({"offset":1})");
  EXPECT_EQ(list["total"], 2);
  EXPECT_EQ(list["offset"], 1);
  EXPECT_EQ(list["limit"], 256);
  ASSERT_EQ(list["consumers"].size(), 1u);
  EXPECT_EQ(list["consumers"][0]["name"], "NEW");
  EXPECT_EQ(state("ORDERS")["consumer_count"], 2);
  EXPECT_EQ(request("$JS.API.INFO")["consumers"], 2);

  json d = request("$JS.API.CONSUMER.DELETE.ORDERS.NEW");
  EXPECT_EQ(d, json({{"type", "io.nats.jetstream.api.v1.consumer_delete_response"}, {"success", true}}));
  EXPECT_EQ(info("ORDERS", "NEW")["error"],
            json({{"code", 404}, {"err_code", 10014}, {"description", "consumer not found"}}));
  EXPECT_EQ(request("$JS.API.CONSUMER.DELETE.ORDERS.NEW")["error"]["err_code"], 10014);
  EXPECT_EQ(info("NOPE", "X")["error"]["err_code"], 10059);
}

TEST_F(js_consumer_api, create_errors_and_update_rules) {
  ASSERT_FALSE(create({{"name", "S"}, {"subjects", {"s.>"}}, {"max_consumers", 2}}).contains("error"));
  auto err = [](const json& r) { return r.contains("error") ? r["error"]["err_code"].get<int>() : 0; };
  // Subject/body consistency.
  EXPECT_EQ(err(request("$JS.API.CONSUMER.CREATE.S.A", R"({"stream_name":"T","config":{}})")), 10056);
  EXPECT_EQ(err(create_consumer("S", "A", {{"durable_name", "B"}})), 10017);
  EXPECT_EQ(err(create_consumer("S", "", {{"durable_name", "B"}})), 10020);
  EXPECT_EQ(err(request("$JS.API.CONSUMER.CREATE.S.A.s.x", R"({"stream_name":"S","config":{"filter_subject":"s.y"}})")),
            10131);
  EXPECT_EQ(err(request("$JS.API.CONSUMER.DURABLE.CREATE.S.D", R"({"stream_name":"S","config":{}})")), 10018);
  EXPECT_EQ(err(create_consumer("S", "A", {{"ack_policy", "bogus"}})), 10025);
  EXPECT_EQ(err(create_consumer("S", "A", {{"bogus_field", 1}})), 10025);
  EXPECT_EQ(err(create_consumer("NOPE", "A", {})), 10059);
  // Config validation.
  json r = create_consumer("S", "A", {{"deliver_policy", "by_start_sequence"}});
  EXPECT_EQ(r["error"], json({{"code", 400}, {"err_code", 10094},
                              {"description", "consumer delivery policy is deliver by start sequence, but optional "
                                              "start sequence is not set"}}));
  EXPECT_EQ(err(create_consumer("S", "A", {{"flow_control", true}})), 10089);
  EXPECT_EQ(err(create_consumer("S", "A", {{"deliver_subject", "dlv"}, {"flow_control", true}})), 10108);
  EXPECT_EQ(err(create_consumer("S", "A", {{"deliver_subject", "s.loop"}})), 10081);
  EXPECT_EQ(err(create_consumer("S", "A", {{"ack_policy", "explicit"}, {"backoff", {1000000000, 2000000000}},
                                           {"max_deliver", 1}})),
            10116);
  EXPECT_EQ(err(create_consumer("S", "A", {{"filter_subjects", {"s.a", "s.*"}}})), 10138);
  // Actions.
  ASSERT_EQ(err(create_consumer("S", "A", {{"durable_name", "A"}, {"ack_policy", "explicit"}}, "create")), 0);
  EXPECT_EQ(err(create_consumer("S", "A", {{"durable_name", "A"}, {"ack_policy", "explicit"}}, "create")), 0);
  EXPECT_EQ(err(create_consumer("S", "A", {{"durable_name", "A"}, {"ack_policy", "explicit"}, {"description", "x"}},
                                "create")),
            10148);
  EXPECT_EQ(err(create_consumer("S", "Z", {{"durable_name", "Z"}}, "update")), 10149);
  r = create_consumer("S", "A", {{"durable_name", "A"}, {"ack_policy", "all"}});
  EXPECT_EQ(r["error"], json({{"code", 500}, {"err_code", 10012}, {"description", "ack policy can not be updated"}}));
  r = create_consumer("S", "A", {{"durable_name", "A"}, {"ack_policy", "explicit"}, {"max_deliver", 5}}, "update");
  ASSERT_FALSE(r.contains("error")) << r;
  EXPECT_EQ(r["config"]["max_deliver"], 5);
  ASSERT_EQ(err(create_consumer("S", "B", {{"durable_name", "B"}})), 0);
  EXPECT_EQ(err(create_consumer("S", "C", {{"durable_name", "C"}})), 10026);
  EXPECT_EQ(err(request("$JS.API.CONSUMER.LEADER.STEPDOWN.S.A")), 10010);
}

// A filter update moves what the consumer reads next, from where it is (nats-server keeps the
// delivered position and recounts num_pending). With a consumer thread the owner pages the
// thread's window under the filters: an update must reach the owner's half too.
TEST_F(js_consumer_api, a_filter_update_changes_what_is_delivered_next) {
  ASSERT_FALSE(create({{"name", "F"}, {"subjects", {"f.>"}}}).contains("error"));
  for (const char* s : {"f.a", "f.b", "f.a", "f.b"}) ASSERT_TRUE(publish(s, "x").contains("seq"));
  const json base = {{"durable_name", "C"}, {"ack_policy", "explicit"}};
  auto with = [&](const json& extra) {
    json c = base;
    c.update(extra);
    return c;
  };
  ASSERT_FALSE(create_consumer("F", "C", with({{"filter_subject", "f.a"}})).contains("error"));
  // The delivered message's stream sequence (the ack subject's 6th token).
  auto seqs = [&] {
    std::vector<int> out;
    for (const auto& r : pull("F", "C", {{"batch", 10}, {"no_wait", true}}, 10)) {
      if (r.ack.empty()) continue;
      std::vector<std::string> t;
      for (std::size_t at = 0, dot; at <= r.ack.size(); at = dot + 1) {
        dot = std::min(r.ack.find('.', at), r.ack.size());
        t.push_back(r.ack.substr(at, dot - at));
      }
      out.push_back(std::stoi(t.at(5)));
      natsConnection_PublishString(nc_.get(), r.ack.c_str(), "+ACK");
    }
    natsConnection_Flush(nc_.get());
    return out;
  };
  EXPECT_EQ(seqs(), (std::vector<int>{1, 3}));
  json r = create_consumer("F", "C", with({{"filter_subject", "f.b"}}), "update");
  ASSERT_FALSE(r.contains("error")) << r;
  EXPECT_EQ(r.value("num_pending", -1), 1) << r;  // seq 4: after the delivered 3
  for (const char* s : {"f.b", "f.a"}) ASSERT_TRUE(publish(s, "x").contains("seq"));
  EXPECT_EQ(seqs(), (std::vector<int>{4, 5}));
  // Wider again: every subject after the delivered 5.
  r = create_consumer("F", "C", with({{"filter_subjects", {"f.a", "f.b"}}}), "update");
  ASSERT_FALSE(r.contains("error")) << r;
  EXPECT_EQ(r.value("num_pending", -1), 1) << r;
  EXPECT_EQ(seqs(), (std::vector<int>{6}));
  json i = info("F", "C");
  EXPECT_EQ(i["delivered"].value("stream_seq", 0), 6) << i;
  EXPECT_EQ(i.value("num_ack_pending", -1), 0) << i;
}

// A message delivered under the old filter and not acked stays pending through a filter
// update and is redelivered after its ack wait, as nats-server does (a redelivery loads the
// message by sequence, whatever the filter), on an owner's agent and on a consumer thread's,
// and so it does after a restart that restores the consumer's pending set.
TEST_F(js_consumer_api, a_filter_update_keeps_what_is_pending_for_redelivery) {
  auto stream_seq = [](const std::string& ack) {  // the ack subject's 6th token
    std::vector<std::string> t;
    for (std::size_t at = 0, dot; at <= ack.size(); at = dot + 1) {
      dot = std::min(ack.find('.', at), ack.size());
      t.push_back(ack.substr(at, dot - at));
    }
    return std::stoi(t.at(5));
  };
  for (const bool restarted : {false, true}) {
    SCOPED_TRACE(restarted ? "restarted after the update" : "no restart");
    const std::string name = restarted ? "FR1" : "FR0", prefix = restarted ? "fr1" : "fr0";
    ASSERT_FALSE(create({{"name", name}, {"subjects", {prefix + ".>"}}, {"storage", "file"}}).contains("error"));
    for (const char* s : {".a", ".b", ".a"}) ASSERT_TRUE(publish(prefix + s, "x").contains("seq"));
    json cfg = {{"durable_name", "C"}, {"ack_policy", "explicit"}, {"ack_wait", 300'000'000},
                {"filter_subject", prefix + ".a"}};
    ASSERT_FALSE(create_consumer(name, "C", cfg).contains("error"));
    auto first = pull(name, "C", {{"batch", 1}, {"no_wait", true}}, 1);  // seq 1, left unacked
    ASSERT_FALSE(first.empty());
    ASSERT_FALSE(first[0].ack.empty());
    EXPECT_EQ(stream_seq(first[0].ack), 1);
    cfg["filter_subject"] = prefix + ".b";
    json r = create_consumer(name, "C", cfg, "update");
    ASSERT_FALSE(r.contains("error")) << r;
    EXPECT_EQ(r.value("num_ack_pending", -1), 1) << r;
    if (restarted) restart(false);
    std::this_thread::sleep_for(500ms);  // past the ack wait
    std::vector<int> got;
    for (int round = 0; round < 20 && got.size() < 2; ++round) {
      for (const auto& m : pull(name, "C", {{"batch", 5}, {"expires", 200'000'000}}, 2)) {
        if (m.ack.empty()) continue;
        got.push_back(stream_seq(m.ack));
        natsConnection_PublishString(nc_.get(), m.ack.c_str(), "+ACK");
      }
    }
    natsConnection_Flush(nc_.get());
    std::sort(got.begin(), got.end());
    EXPECT_EQ(got, (std::vector<int>{1, 2})) << "the pending message of the old filter was not redelivered";
    std::this_thread::sleep_for(100ms);
    json i = info(name, "C");
    EXPECT_EQ(i.value("num_ack_pending", -1), 0) << i;
  }
}

// On an interest stream a filter update drops what no consumer is interested in any more.
TEST_F(js_consumer_api, a_filter_update_on_an_interest_stream_drops_what_lost_interest) {
  ASSERT_FALSE(create({{"name", "I"}, {"subjects", {"i.>"}}, {"retention", "interest"}}).contains("error"));
  const json a = {{"durable_name", "A"}, {"ack_policy", "explicit"}, {"filter_subject", "i.a"}};
  const json b = {{"durable_name", "B"}, {"ack_policy", "explicit"}, {"filter_subject", "i.b"}};
  ASSERT_FALSE(create_consumer("I", "A", a).contains("error"));
  ASSERT_FALSE(create_consumer("I", "B", b).contains("error"));
  for (const char* s : {"i.a", "i.b", "i.a", "i.c"}) ASSERT_TRUE(publish(s, "x").contains("seq"));
  EXPECT_EQ(state("I").value("messages", 0), 3);  // i.c: no consumer
  json moved = a;
  moved["filter_subject"] = "i.b";
  ASSERT_FALSE(create_consumer("I", "A", moved, "update").contains("error"));
  json st = state("I");
  EXPECT_EQ(st.value("messages", 0), 1) << st;  // only i.b (seq 2) is still wanted
  EXPECT_EQ(st.value("first_seq", 0), 2) << st;
}

TEST_F(js_consumer_api, workqueue_rules_and_retention) {
  ASSERT_FALSE(create({{"name", "WQ"}, {"subjects", {"wq.>"}}, {"retention", "workqueue"}}).contains("error"));
  auto err = [](const json& r) { return r.contains("error") ? r["error"]["err_code"].get<int>() : 0; };
  EXPECT_EQ(err(create_consumer("WQ", "A", {{"durable_name", "A"}})), 10084);  // pull + ack none
  ASSERT_EQ(err(create_consumer("WQ", "A", {{"durable_name", "A"}, {"ack_policy", "explicit"}, {"filter_subject", "wq.a"}})), 0);
  EXPECT_EQ(err(create_consumer("WQ", "B", {{"durable_name", "B"}, {"ack_policy", "explicit"}})), 10099);
  EXPECT_EQ(err(create_consumer("WQ", "B", {{"durable_name", "B"}, {"ack_policy", "explicit"}, {"filter_subject", "wq.*"}})),
            10100);
  EXPECT_EQ(err(create_consumer("WQ", "B", {{"durable_name", "B"}, {"ack_policy", "explicit"}, {"filter_subject", "wq.b"},
                                            {"deliver_policy", "new"}})),
            10101);
  for (int i = 0; i < 3; ++i) publish("wq.a", "job");
  EXPECT_EQ(state("WQ")["messages"], 3);
  auto got = pull("WQ", "A", {{"batch", 3}}, 3);
  ASSERT_EQ(got.size(), 3u);
  for (auto& g : got) natsConnection_PublishString(nc_.get(), g.ack.c_str(), "+ACK");
  natsConnection_Flush(nc_.get());
  std::this_thread::sleep_for(200ms);
  EXPECT_EQ(state("WQ")["messages"], 0);
}

TEST_F(js_consumer_api, pull_fetch_ack_and_metadata) {
  ASSERT_FALSE(create({{"name", "P"}, {"subjects", {"p.>"}}}).contains("error"));
  for (int i = 1; i <= 10; ++i) publish("p.x", "m" + std::to_string(i));
  natsSubscription* raw = nullptr;
  jsErrCode jerr{};
  ASSERT_EQ(js_PullSubscribe(&raw, js_.get(), "p.>", "WORKER", nullptr, nullptr, &jerr), NATS_OK) << int(jerr);
  sub_ptr sub(raw);
  natsMsgList list{};
  ASSERT_EQ(natsSubscription_Fetch(&list, sub.get(), 4, 2000, &jerr), NATS_OK);
  ASSERT_EQ(list.Count, 4);
  for (int i = 0; i < list.Count; ++i) {
    jsMsgMetaData* md = nullptr;
    ASSERT_EQ(natsMsg_GetMetaData(&md, list.Msgs[i]), NATS_OK);
    meta_ptr meta(md);
    EXPECT_EQ(meta->Sequence.Stream, uint64_t(i + 1));
    EXPECT_EQ(meta->Sequence.Consumer, uint64_t(i + 1));
    EXPECT_EQ(meta->NumDelivered, 1u);
    EXPECT_EQ(meta->NumPending, uint64_t(10 - i - 1));
    EXPECT_STREQ(natsMsg_GetSubject(list.Msgs[i]), "p.x");
    EXPECT_EQ(std::string(natsMsg_GetData(list.Msgs[i])), "m" + std::to_string(i + 1));
    EXPECT_EQ(natsMsg_AckSync(list.Msgs[i], nullptr, &jerr), NATS_OK);  // ack sync gets its empty reply
  }
  natsMsgList_Destroy(&list);
  json i = info("P", "WORKER");
  EXPECT_EQ(i["config"]["ack_policy"], "explicit");
  EXPECT_EQ(i["ack_floor"]["stream_seq"], 4);
  EXPECT_EQ(i["delivered"]["stream_seq"], 4);
  EXPECT_EQ(i["num_ack_pending"], 0);
  EXPECT_EQ(i["num_pending"], 6);
  ASSERT_EQ(natsSubscription_Fetch(&list, sub.get(), 10, 2000, &jerr), NATS_OK);
  EXPECT_EQ(list.Count, 6);
  natsMsgList_Destroy(&list);
  // Nothing left: a short fetch times out.
  EXPECT_EQ(natsSubscription_Fetch(&list, sub.get(), 1, 300, &jerr), NATS_TIMEOUT);
}

TEST_F(js_consumer_api, nak_term_progress_and_redelivery_after_ack_wait) {
  ASSERT_FALSE(create({{"name", "R"}, {"subjects", {"r.>"}}}).contains("error"));
  for (int i = 1; i <= 3; ++i) publish("r.x", "m" + std::to_string(i));
  ASSERT_FALSE(create_consumer("R", "C", {{"durable_name", "C"}, {"ack_policy", "explicit"}, {"ack_wait", 600000000},
                                         {"max_deliver", 3}})
                   .contains("error"));
  sub_ptr adv = subscribe_sync(nc_.get(), "$JS.EVENT.ADVISORY.CONSUMER.>");
  natsConnection_Flush(nc_.get());
  auto got = pull("R", "C", {{"batch", 3}}, 3);
  ASSERT_EQ(got.size(), 3u);
  EXPECT_TRUE(got[0].ack.starts_with("$JS.ACK.R.C.1.1.1.")) << got[0].ack;
  // 1: NAK -> back at once with delivery count 2; 2: TERM -> gone; 3: no ack -> after ack_wait.
  natsConnection_PublishString(nc_.get(), got[0].ack.c_str(), "-NAK");
  natsConnection_PublishString(nc_.get(), got[1].ack.c_str(), "+TERM bad order");
  natsConnection_Flush(nc_.get());
  auto again = pull("R", "C", {{"batch", 1}}, 1);
  ASSERT_EQ(again.size(), 1u);
  EXPECT_TRUE(again[0].ack.starts_with("$JS.ACK.R.C.2.1.4.")) << again[0].ack;
  msg_ptr a = next_msg(adv.get(), 1000ms);
  ASSERT_TRUE(a);
  bool terminated = false;
  for (int k = 0; k < 3 && a; ++k, a = next_msg(adv.get(), 500ms)) {
    if (std::string(natsMsg_GetSubject(a.get())) != "$JS.EVENT.ADVISORY.CONSUMER.MSG_TERMINATED.R.C") continue;
    json t = json::parse(std::string(natsMsg_GetData(a.get()), size_t(natsMsg_GetDataLength(a.get()))));
    EXPECT_EQ(t["type"], "io.nats.jetstream.advisory.v1.terminated");
    EXPECT_EQ(t["stream_seq"], 2);
    EXPECT_EQ(t["reason"], "bad order");
    terminated = true;
  }
  EXPECT_TRUE(terminated);
  // +WPI keeps 1 alive; 3 comes back after ack_wait.
  natsConnection_PublishString(nc_.get(), again[0].ack.c_str(), "+WPI");
  natsConnection_Flush(nc_.get());
  auto later = pull("R", "C", {{"batch", 1}, {"expires", 2000000000}}, 1, 2500ms);
  ASSERT_EQ(later.size(), 1u);
  EXPECT_TRUE(later[0].ack.starts_with("$JS.ACK.R.C.2.3.")) << later[0].ack;
  json i = info("R", "C");
  EXPECT_EQ(i["num_redelivered"], 2);
  EXPECT_EQ(i["num_ack_pending"], 2);
}

// sample_freq "100%": every explicit ack produces $JS.EVENT.METRIC.CONSUMER.ACK.<s>.<c>.
TEST_F(js_consumer_api, sample_freq_ack_metrics) {
  ASSERT_FALSE(create({{"name", "SF"}, {"subjects", {"sf.>"}}}).contains("error"));
  for (int i = 1; i <= 2; ++i) publish("sf.x", "m" + std::to_string(i));
  json c = create_consumer("SF", "C", {{"durable_name", "C"}, {"ack_policy", "explicit"}, {"sample_freq", "100%"}});
  ASSERT_FALSE(c.contains("error")) << c;
  EXPECT_EQ(c["config"]["sample_freq"], "100%");
  sub_ptr metrics = subscribe_sync(nc_.get(), "$JS.EVENT.METRIC.CONSUMER.ACK.SF.C");
  natsConnection_Flush(nc_.get());
  auto got = pull("SF", "C", {{"batch", 2}}, 2);
  ASSERT_EQ(got.size(), 2u);
  for (const auto& g : got) natsConnection_PublishString(nc_.get(), g.ack.c_str(), "+ACK");
  natsConnection_Flush(nc_.get());
  for (std::uint64_t seq = 1; seq <= 2; ++seq) {
    msg_ptr m = next_msg(metrics.get(), 2000ms);
    ASSERT_TRUE(m) << "no ack metric for seq " << seq;
    json e = json::parse(std::string(natsMsg_GetData(m.get()), size_t(natsMsg_GetDataLength(m.get()))));
    EXPECT_EQ(e["type"], "io.nats.jetstream.metric.v1.consumer_ack");
    EXPECT_EQ(e["stream"], "SF");
    EXPECT_EQ(e["consumer"], "C");
    EXPECT_EQ(e["stream_seq"], seq);
    EXPECT_EQ(e["consumer_seq"], seq);
    EXPECT_EQ(e["deliveries"], 1);
    EXPECT_GT(e["ack_time"].get<std::int64_t>(), 0);
    EXPECT_TRUE(e.contains("id") && e.contains("timestamp"));
  }
}

// A full purge moves a consumer past what was purged: delivered and ack floor jump to the
// stream's last sequence, pending acks are dropped, the next message keeps the consumer seq.
TEST_F(js_consumer_api, purge_moves_delivered_and_ack_floor) {
  ASSERT_FALSE(create({{"name", "PG"}, {"subjects", {"pg.>"}}}).contains("error"));
  for (int i = 1; i <= 10; ++i) publish("pg.x", "m" + std::to_string(i));
  ASSERT_FALSE(create_consumer("PG", "C", {{"durable_name", "C"}, {"ack_policy", "explicit"}}).contains("error"));
  auto got = pull("PG", "C", {{"batch", 4}}, 4);
  ASSERT_EQ(got.size(), 4u);
  natsConnection_PublishString(nc_.get(), got[0].ack.c_str(), "+ACK");
  natsConnection_Flush(nc_.get());
  json i = info("PG", "C");
  EXPECT_EQ(i["num_ack_pending"], 3);
  ASSERT_EQ(request("$JS.API.STREAM.PURGE.PG")["purged"], 10);
  i = info("PG", "C");
  EXPECT_EQ(i["delivered"]["consumer_seq"], 4);
  EXPECT_EQ(i["delivered"]["stream_seq"], 10);
  EXPECT_EQ(i["ack_floor"]["consumer_seq"], 4);
  EXPECT_EQ(i["ack_floor"]["stream_seq"], 10);
  EXPECT_EQ(i["num_ack_pending"], 0);
  EXPECT_EQ(i["num_pending"], 0);
  publish("pg.x", "after");
  auto next = pull("PG", "C", {{"batch", 1}}, 1);
  ASSERT_EQ(next.size(), 1u);
  EXPECT_TRUE(next[0].ack.starts_with("$JS.ACK.PG.C.1.11.5.")) << next[0].ack;
}

TEST_F(js_consumer_api, pull_status_replies) {
  ASSERT_FALSE(create({{"name", "Q"}, {"subjects", {"q.>"}}}).contains("error"));
  ASSERT_FALSE(create_consumer("Q", "C", {{"durable_name", "C"}, {"ack_policy", "explicit"}, {"max_batch", 3}})
                   .contains("error"));
  auto r = pull("Q", "C", {{"batch", 1}, {"no_wait", true}}, 1);
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].status, "404");
  EXPECT_EQ(r[0].description, "No Messages");
  r = pull("Q", "C", {{"batch", 5}}, 1);
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].status, "409");
  EXPECT_EQ(r[0].description, "Exceeded MaxRequestBatch of 3");
  r = pull("Q", "C", {{"batch", 2}, {"expires", 300000000}}, 1);
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].status, "408");
  EXPECT_EQ(r[0].description, "Request Timeout");
  EXPECT_EQ(r[0].header("Nats-Pending-Messages"), "2");
  // A waiting request learns about the delete.
  std::thread deleter([this] {
    std::this_thread::sleep_for(300ms);
    nc_ptr other = connect(url());
    natsMsg* rep = nullptr;
    natsConnection_RequestString(&rep, other.get(), "$JS.API.CONSUMER.DELETE.Q.C", "", 2000);
    natsMsg_Destroy(rep);
  });
  r = pull("Q", "C", {{"batch", 1}}, 1);
  deleter.join();
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].status, "409");
  EXPECT_EQ(r[0].description, "Consumer Deleted");
}

TEST_F(js_consumer_api, push_subscription_and_headers_only) {
  ASSERT_FALSE(create({{"name", "PU"}, {"subjects", {"pu.>"}}}).contains("error"));
  for (int i = 1; i <= 5; ++i) publish("pu.x", "push-" + std::to_string(i));
  natsSubscription* raw = nullptr;
  jsErrCode jerr{};
  ASSERT_EQ(js_SubscribeSync(&raw, js_.get(), "pu.>", nullptr, nullptr, &jerr), NATS_OK) << int(jerr);
  sub_ptr sub(raw);
  for (int i = 1; i <= 5; ++i) {
    msg_ptr m = next_msg(sub.get(), 2000ms);
    ASSERT_TRUE(m) << i;
    EXPECT_EQ(std::string(natsMsg_GetData(m.get()), size_t(natsMsg_GetDataLength(m.get()))), "push-" + std::to_string(i));
    EXPECT_EQ(natsMsg_Ack(m.get(), nullptr), NATS_OK);
  }
  publish("pu.x", "push-6");
  msg_ptr m = next_msg(sub.get(), 2000ms);
  ASSERT_TRUE(m);
  EXPECT_EQ(std::string(natsMsg_GetData(m.get()), size_t(natsMsg_GetDataLength(m.get()))), "push-6");

  // headers_only on a plain push consumer.
  sub_ptr dlv = subscribe_sync(nc_.get(), "dlv.ho");
  natsConnection_Flush(nc_.get());
  json r = create_consumer("PU", "HO", {{"durable_name", "HO"}, {"deliver_subject", "dlv.ho"}, {"headers_only", true}});
  ASSERT_FALSE(r.contains("error")) << r;
  msg_ptr h = next_msg(dlv.get(), 2000ms);
  ASSERT_TRUE(h);
  EXPECT_STREQ(natsMsg_GetSubject(h.get()), "pu.x");
  EXPECT_EQ(natsMsg_GetDataLength(h.get()), 0);
  const char* size = nullptr;
  ASSERT_EQ(natsMsgHeader_Get(h.get(), "Nats-Msg-Size", &size), NATS_OK);
  EXPECT_STREQ(size, "6");
  EXPECT_EQ(info("PU", "HO")["push_bound"], true);
}

TEST_F(js_consumer_api, ordered_push_with_flow_control_and_heartbeats) {
  ASSERT_FALSE(create({{"name", "OR"}, {"subjects", {"or.>"}}}).contains("error"));
  const std::string big(200 * 1024, 'b');  // 20 x 200 KiB crosses the 2 MiB flow-control window
  for (int i = 0; i < 20; ++i) publish("or.x", big + std::to_string(i));
  jsSubOptions so;
  jsSubOptions_Init(&so);
  so.Ordered = true;
  so.Config.Heartbeat = 200 * 1000 * 1000;
  natsSubscription* raw = nullptr;
  jsErrCode jerr{};
  ASSERT_EQ(js_SubscribeSync(&raw, js_.get(), "or.>", nullptr, &so, &jerr), NATS_OK) << int(jerr);
  sub_ptr sub(raw);
  for (int i = 0; i < 20; ++i) {
    msg_ptr m = next_msg(sub.get(), 3000ms);
    ASSERT_TRUE(m) << i;
    jsMsgMetaData* md = nullptr;
    ASSERT_EQ(natsMsg_GetMetaData(&md, m.get()), NATS_OK);
    meta_ptr meta(md);
    EXPECT_EQ(meta->Sequence.Stream, uint64_t(i + 1));
    EXPECT_EQ(meta->Sequence.Consumer, uint64_t(i + 1));
    EXPECT_EQ(std::string(natsMsg_GetData(m.get()), size_t(natsMsg_GetDataLength(m.get()))), big + std::to_string(i));
  }
  // Heartbeats keep an idle ordered subscription alive (the client would reset it on a gap).
  std::this_thread::sleep_for(700ms);
  publish("or.x", "tail");
  msg_ptr m = next_msg(sub.get(), 2000ms);
  ASSERT_TRUE(m);
  EXPECT_EQ(std::string(natsMsg_GetData(m.get()), size_t(natsMsg_GetDataLength(m.get()))), "tail");
}

TEST_F(js_consumer_api, push_deliver_group_spreads_messages) {
  ASSERT_FALSE(create({{"name", "QG"}, {"subjects", {"qg.>"}}}).contains("error"));
  natsSubscription* a = nullptr;
  natsSubscription* b = nullptr;
  ASSERT_EQ(natsConnection_QueueSubscribeSync(&a, nc_.get(), "dlv.qg", "workers"), NATS_OK);
  ASSERT_EQ(natsConnection_QueueSubscribeSync(&b, nc_.get(), "dlv.qg", "workers"), NATS_OK);
  sub_ptr sa(a), sb(b);
  natsConnection_Flush(nc_.get());
  json r = create_consumer("QG", "Q", {{"durable_name", "Q"}, {"deliver_subject", "dlv.qg"}, {"deliver_group", "workers"},
                                       {"ack_policy", "explicit"}});
  ASSERT_FALSE(r.contains("error")) << r;
  EXPECT_EQ(r["config"]["deliver_group"], "workers");
  for (int i = 0; i < 20; ++i) publish("qg.x", "w" + std::to_string(i));
  int got_a = 0, got_b = 0;
  auto ack = [this](const msg_ptr& m) { natsConnection_PublishString(nc_.get(), natsMsg_GetReply(m.get()), "+ACK"); };
  for (int round = 0; round < 40 && got_a + got_b < 20; ++round) {
    while (msg_ptr m = next_msg(a, 50ms)) ++got_a, ack(m);
    while (msg_ptr m = next_msg(b, 50ms)) ++got_b, ack(m);
  }
  EXPECT_EQ(got_a + got_b, 20);
  EXPECT_GT(got_a, 0);
  EXPECT_GT(got_b, 0);
}

TEST_F(js_consumer_api, replies_to_api_subjects_do_not_break_the_server) {
  // Pull requests whose reply is an API subject. Deliveries carry the stream subject, so the
  // API ignores them; a status reply (404 No Messages) is an API call that deletes the very
  // consumer / stream that is sending it. The server must carry on.
  ASSERT_FALSE(create({{"name", "X"}, {"subjects", {"x.>"}}}).contains("error"));
  for (int i = 0; i < 3; ++i) publish("x.a", "{}");
  ASSERT_FALSE(create_consumer("X", "C", {{"durable_name", "C"}, {"ack_policy", "explicit"}}).contains("error"));
  natsConnection_PublishRequestString(nc_.get(), "$JS.API.CONSUMER.MSG.NEXT.X.C", "$JS.API.CONSUMER.DELETE.X.C",
                                      R"({"batch":3})");
  natsConnection_Flush(nc_.get());
  std::this_thread::sleep_for(200ms);
  EXPECT_EQ(info("X", "C")["num_ack_pending"], 3);
  ASSERT_FALSE(create_consumer("X", "E", {{"durable_name", "E"}, {"filter_subject", "x.none"}}).contains("error"));
  natsConnection_PublishRequestString(nc_.get(), "$JS.API.CONSUMER.MSG.NEXT.X.E", "$JS.API.CONSUMER.DELETE.X.E",
                                      R"({"batch":1,"no_wait":true})");
  natsConnection_Flush(nc_.get());
  std::this_thread::sleep_for(200ms);
  EXPECT_EQ(info("X", "E")["error"]["err_code"], 10014);
  ASSERT_FALSE(create_consumer("X", "F", {{"durable_name", "F"}, {"filter_subject", "x.none"}}).contains("error"));
  natsConnection_PublishRequestString(nc_.get(), "$JS.API.CONSUMER.MSG.NEXT.X.F", "$JS.API.STREAM.DELETE.X",
                                      R"({"batch":1,"no_wait":true})");
  natsConnection_Flush(nc_.get());
  std::this_thread::sleep_for(200ms);
  EXPECT_EQ(request("$JS.API.STREAM.INFO.X")["error"]["err_code"], 10059);
  // Still serving.
  ASSERT_FALSE(create({{"name", "Y"}, {"subjects", {"y.>"}}}).contains("error"));
  EXPECT_EQ(publish("y.a", "ok")["seq"], 1);
}

class js_consumer_restart : public js_consumer_api {
 protected:
  void resume_from_ack_floor(bool hard) {
    ASSERT_FALSE(create({{"name", "D"}, {"subjects", {"d.>"}}}).contains("error"));
    for (int i = 1; i <= 10; ++i) publish("d.x", "m" + std::to_string(i));
    ASSERT_FALSE(create_consumer("D", "C", {{"durable_name", "C"}, {"ack_policy", "explicit"}, {"ack_wait", 1000000000}})
                     .contains("error"));
    auto got = pull("D", "C", {{"batch", 8}}, 8);
    ASSERT_EQ(got.size(), 8u);
    for (int i = 0; i < 5; ++i) {  // 1-5 acked, 6-8 in flight, 9-10 never delivered
      natsMsg* rep = nullptr;
      ASSERT_EQ(natsConnection_RequestString(&rep, nc_.get(), got[size_t(i)].ack.c_str(), "+ACK", 2000), NATS_OK);
      natsMsg_Destroy(rep);
    }
    std::this_thread::sleep_for(300ms);  // the state flush interval
    restart(hard);
    json i = info("D", "C");
    ASSERT_FALSE(i.contains("error")) << i;
    EXPECT_EQ(i["config"]["ack_wait"], 1000000000);
    EXPECT_EQ(i["ack_floor"]["stream_seq"], 5);
    EXPECT_EQ(i["delivered"]["stream_seq"], 8);
    EXPECT_EQ(i["num_ack_pending"], 3);
    EXPECT_EQ(i["num_pending"], 2);
    auto rest = pull("D", "C", {{"batch", 5}, {"expires", 3000000000LL}}, 5, 3500ms);
    std::vector<std::string> seqs;
    for (auto& r : rest)
      if (r.status.empty()) seqs.push_back(r.data);
    std::sort(seqs.begin(), seqs.end());
    EXPECT_EQ(seqs, (std::vector<std::string>{"m10", "m6", "m7", "m8", "m9"}));
  }
};

TEST_F(js_consumer_restart, sigterm_resumes_from_ack_floor) { resume_from_ack_floor(false); }
TEST_F(js_consumer_restart, kill9_resumes_from_ack_floor) { resume_from_ack_floor(true); }

TEST_F(js_consumer_restart, deliver_new_keeps_its_start_across_kill9) {
  ASSERT_FALSE(create({{"name", "N"}, {"subjects", {"n.>"}}}).contains("error"));
  for (int i = 1; i <= 5; ++i) publish("n.x", "old" + std::to_string(i));
  ASSERT_FALSE(create_consumer("N", "C", {{"durable_name", "C"}, {"ack_policy", "explicit"}, {"deliver_policy", "new"}})
                   .contains("error"));
  publish("n.x", "new1");
  publish("n.x", "new2");
  std::this_thread::sleep_for(300ms);
  restart(true);
  auto got = pull("N", "C", {{"batch", 5}, {"expires", 1000000000}}, 5, 1500ms);
  std::vector<std::string> data;
  for (auto& r : got)
    if (r.status.empty()) data.push_back(r.data);
  EXPECT_EQ(data, (std::vector<std::string>{"new1", "new2"}));
}

TEST_F(js_consumer_restart, durable_on_memory_stream_keeps_its_config) {
  ASSERT_FALSE(create({{"name", "M"}, {"subjects", {"m.>"}}, {"storage", "memory"}}).contains("error"));
  publish("m.x", "gone after restart");
  ASSERT_FALSE(create_consumer("M", "C", {{"durable_name", "C"}, {"ack_policy", "explicit"}, {"max_deliver", 4}})
                   .contains("error"));
  ASSERT_FALSE(create_consumer("M", "E", {{"ack_policy", "explicit"}}).contains("error"));  // ephemeral
  restart(false);
  json i = info("M", "C");
  ASSERT_FALSE(i.contains("error")) << i;
  EXPECT_EQ(i["config"]["max_deliver"], 4);
  EXPECT_EQ(i["num_pending"], 0);
  EXPECT_EQ(info("M", "E")["error"]["err_code"], 10014);
  publish("m.x", "after");
  auto got = pull("M", "C", {{"batch", 1}}, 1);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].data, "after");
}

}  // namespace
}  // namespace peregrine::test
