// Streams, configs and acked messages survive SIGTERM and kill -9; sequences never reuse;
// ephemeral consumers of file streams survive until their inactive_threshold.
// Also: JetStream domain prefixes.
#include <chrono>
#include <thread>

#include "tests/integration/js_fixture.h"

namespace peregrine::test {
namespace {

using nlohmann::json;

class js_restart : public js_test {
 protected:
  void fill() {
    ASSERT_FALSE(create({{"name", "F"}, {"subjects", {"f.>"}}, {"max_msgs_per_subject", 100}}).contains("error"));
    ASSERT_FALSE(create({{"name", "MEMS"}, {"subjects", {"m.>"}}, {"storage", "memory"}}).contains("error"));
    for (int i = 1; i <= 50; ++i) {
      json ack = publish("f." + std::to_string(i % 3), "payload-" + std::to_string(i), {{"Nats-Msg-Id", ("id-" + std::to_string(i)).c_str()}});
      ASSERT_EQ(ack["seq"], i) << ack;
    }
    ASSERT_FALSE(request("$JS.API.STREAM.MSG.DELETE.F", R"({"seq":10})").contains("error"));
  }

  void check() {
    json info = request("$JS.API.STREAM.INFO.F");
    ASSERT_FALSE(info.contains("error")) << info;
    EXPECT_EQ(info["config"]["max_msgs_per_subject"], 100);
    EXPECT_EQ(info["state"]["messages"], 49);
    EXPECT_EQ(info["state"]["last_seq"], 50);
    EXPECT_EQ(info["state"]["num_deleted"], 1);
    for (int i = 1; i <= 50; ++i) {
      json r = request("$JS.API.STREAM.MSG.GET.F", json({{"seq", i}}).dump());
      if (i == 10) {
        EXPECT_EQ(r["error"]["err_code"], 10037);
        continue;
      }
      ASSERT_TRUE(r.contains("message")) << i << " " << r;
      EXPECT_EQ(r["message"]["subject"], "f." + std::to_string(i % 3));
    }
    // Dedup state is rebuilt from the stored messages.
    json dup = publish("f.1", "again", {{"Nats-Msg-Id", "id-7"}});
    EXPECT_EQ(dup["seq"], 7);
    EXPECT_EQ(dup["duplicate"], true);
    // Sequences continue.
    EXPECT_EQ(publish("f.1", "next")["seq"], 51);
    // The memory stream's config survives, not its messages.
    json mem = request("$JS.API.STREAM.INFO.MEMS");
    EXPECT_EQ(mem["config"]["storage"], "memory");
  }
};

TEST_F(js_restart, sigterm_keeps_streams_and_messages) {
  fill();
  restart(false);
  check();
}

TEST_F(js_restart, kill9_keeps_every_acked_message) {
  fill();
  restart(true);
  check();
}

TEST_F(js_restart, kill9_after_async_publishes_keeps_all_acked) {
  ASSERT_FALSE(create({{"name", "BULK"}, {"subjects", {"bulk.>"}}}).contains("error"));
  constexpr int kCount = 2000;
  const std::string payload(512, 'p');
  for (int i = 0; i < kCount; ++i)
    ASSERT_EQ(js_PublishAsync(js_.get(), ("bulk." + std::to_string(i % 7)).c_str(), payload.data(),
                              static_cast<int>(payload.size()), nullptr),
              NATS_OK);
  jsPubOptions po;
  jsPubOptions_Init(&po);
  po.MaxWait = 20000;
  ASSERT_EQ(js_PublishAsyncComplete(js_.get(), &po), NATS_OK);
  natsMsgList pending{};
  EXPECT_EQ(js_PublishAsyncGetPendingList(&pending, js_.get()), NATS_NOT_FOUND);  // every publish acked
  restart(true);
  json st = state("BULK");
  EXPECT_EQ(st["messages"], kCount);
  EXPECT_EQ(st["last_seq"], kCount);
  EXPECT_EQ(st["bytes"], kCount * (30 + 6 + 512));
  EXPECT_EQ(publish("bulk.x", "y")["seq"], kCount + 1);
}

TEST_F(js_restart, purge_survives_restart_and_sequences_do_not_reuse) {
  ASSERT_FALSE(create({{"name", "S"}, {"subjects", {"s"}}}).contains("error"));
  for (int i = 0; i < 5; ++i) publish("s", "x");
  ASSERT_EQ(request("$JS.API.STREAM.PURGE.S")["purged"], 5);
  restart(true);
  json st = state("S");
  EXPECT_EQ(st["messages"], 0);
  EXPECT_EQ(st["first_seq"], 6);
  EXPECT_EQ(st["last_seq"], 5);
  EXPECT_EQ(publish("s", "y")["seq"], 6);
}

TEST_F(js_restart, deleted_stream_stays_deleted) {
  ASSERT_FALSE(create({{"name", "GONE"}, {"subjects", {"gone"}}}).contains("error"));
  publish("gone", "x");
  ASSERT_EQ(request("$JS.API.STREAM.DELETE.GONE")["success"], true);
  restart(false);
  EXPECT_EQ(request("$JS.API.STREAM.INFO.GONE")["error"]["err_code"], 10059);
}

// An ephemeral consumer of a file stream is restored after kill -9 with its progress, then
// deleted by its inactive_threshold when no client comes back (as nats-server restores
// them); one with mem_storage has nothing on disk and is gone.
TEST_F(js_restart, ephemeral_of_file_stream_survives_until_inactive_threshold) {
  ASSERT_FALSE(create({{"name", "E"}, {"subjects", {"e.>"}}}).contains("error"));
  for (int i = 1; i <= 5; ++i) publish("e.x", "m" + std::to_string(i));
  auto make = [&](const json& cfg) {
    json r = request("$JS.API.CONSUMER.CREATE.E", json({{"stream_name", "E"}, {"config", cfg}}).dump());
    EXPECT_TRUE(r.contains("name")) << r;
    return r.value("name", std::string());
  };
  const std::string eph = make({{"ack_policy", "explicit"}, {"inactive_threshold", 3000000000LL}});
  const std::string mem = make({{"ack_policy", "explicit"}, {"mem_storage", true}});
  ASSERT_FALSE(eph.empty());
  ASSERT_FALSE(mem.empty());
  // Take two messages and ack them with confirmation.
  sub_ptr inbox = subscribe_sync(nc_.get(), "_INBOX.eph");
  ASSERT_EQ(natsConnection_PublishRequestString(nc_.get(), ("$JS.API.CONSUMER.MSG.NEXT.E." + eph).c_str(),
                                                "_INBOX.eph", R"({"batch":2})"),
            NATS_OK);
  for (int i = 0; i < 2; ++i) {
    msg_ptr m = next_msg(inbox.get(), std::chrono::milliseconds(2000));
    ASSERT_TRUE(m) << "delivery " << i;
    natsMsg* reply = nullptr;
    ASSERT_EQ(natsConnection_RequestString(&reply, nc_.get(), natsMsg_GetReply(m.get()), "+ACK", 2000), NATS_OK);
    natsMsg_Destroy(reply);
  }
  inbox.reset();

  restart(true);
  const auto restarted = std::chrono::steady_clock::now();
  json i = request("$JS.API.CONSUMER.INFO.E." + eph);
  ASSERT_FALSE(i.contains("error")) << i;
  EXPECT_EQ(i["name"], eph);
  EXPECT_FALSE(i["config"].contains("durable_name")) << i;
  EXPECT_EQ(i["config"]["inactive_threshold"], 3000000000LL);
  EXPECT_EQ(i["ack_floor"]["stream_seq"], 2);
  EXPECT_EQ(i["delivered"]["stream_seq"], 2);
  EXPECT_EQ(i["num_pending"], 3);
  json names = request("$JS.API.CONSUMER.NAMES.E");
  EXPECT_EQ(names["consumers"], json::array({eph})) << names;
  EXPECT_EQ(request("$JS.API.CONSUMER.INFO.E." + mem)["error"]["err_code"], 10014);

  // Nobody pulls: it goes after its threshold (plus nats-server's 0.1-1 s jitter), not before.
  json gone;
  while (std::chrono::steady_clock::now() - restarted < std::chrono::seconds(10)) {
    gone = request("$JS.API.CONSUMER.INFO.E." + eph);
    if (gone.contains("error")) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  const auto lived = std::chrono::steady_clock::now() - restarted;
  EXPECT_EQ(gone["error"]["err_code"], 10014) << gone;
  EXPECT_GE(lived, std::chrono::milliseconds(2500));
  // Deleted for good: not back after another restart.
  restart(false);
  EXPECT_EQ(request("$JS.API.CONSUMER.INFO.E." + eph)["error"]["err_code"], 10014);
  EXPECT_EQ(request("$JS.API.CONSUMER.NAMES.E")["consumers"], json::array());
}

class js_domain : public js_test {
 protected:
  std::string extra_conf() const override {
    return "jetstream {\n  store_dir: \"@TMPDIR@/js\"\n  domain: hub\n}\n";
  }
};

TEST_F(js_domain, domain_prefix_and_pub_ack_domain) {
  json info = request("$JS.hub.API.INFO");
  EXPECT_EQ(info["domain"], "hub");
  json r = request("$JS.hub.API.STREAM.CREATE.ORDERS", R"({"name":"ORDERS","subjects":["orders.>"]})");
  ASSERT_FALSE(r.contains("error")) << r;
  EXPECT_EQ(r["domain"], "hub");
  EXPECT_EQ(publish("orders.x", "y"), json::parse(R"({"stream":"ORDERS","domain":"hub","seq":1})"));
  // libnats with the domain option.
  jsOptions o;
  jsOptions_Init(&o);
  o.Domain = "hub";
  jsCtx* js = nullptr;
  ASSERT_EQ(natsConnection_JetStream(&js, nc_.get(), &o), NATS_OK);
  js_ptr jp(js);
  jsStreamInfo* si = nullptr;
  ASSERT_EQ(js_GetStreamInfo(&si, js, "ORDERS", nullptr, nullptr), NATS_OK);
  stream_info_ptr sp(si);
  EXPECT_EQ(si->State.Msgs, 1u);
}

class js_disabled : public server_test {};

TEST_F(js_disabled, no_jetstream_means_no_responders) {
  nc_ptr nc = connect(url());
  ASSERT_TRUE(nc);
  natsMsg* reply = nullptr;
  EXPECT_EQ(natsConnection_RequestString(&reply, nc.get(), "$JS.API.INFO", "", 1000), NATS_NO_RESPONDERS);
  natsMsg_Destroy(reply);
}

}  // namespace
}  // namespace peregrine::test
