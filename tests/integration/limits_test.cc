// Server limits from the config file: max_payload, max_pending (slow consumer), ping keepalive.
#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "tests/integration/server_fixture.h"

namespace peregrine::test {
namespace {

using namespace std::chrono_literals;
using clock_type = std::chrono::steady_clock;

class max_payload : public server_test {
 protected:
  std::string extra_conf() const override { return "max_payload: 1024\n"; }
};

TEST_F(max_payload, info_advertises_configured_limit) {
  raw_client c;
  ASSERT_TRUE(c.connect(port()));
  std::string info = c.read_info();
  EXPECT_NE(info.find("\"max_payload\":1024"), std::string::npos) << info;
}

TEST_F(max_payload, libnats_refuses_oversized_publish_client_side) {
  auto nc = connect(url());
  ASSERT_TRUE(nc);
  EXPECT_EQ(natsConnection_GetMaxPayload(nc.get()), 1024);
  auto sub = subscribe_sync(nc.get(), "big");
  ASSERT_TRUE(sub);
  const std::string too_big(2000, 'x');
  EXPECT_EQ(natsConnection_Publish(nc.get(), "big", too_big.data(), static_cast<int>(too_big.size())),
            NATS_MAX_PAYLOAD);
  const std::string at_limit(1024, 'y');
  ASSERT_EQ(natsConnection_Publish(nc.get(), "big", at_limit.data(), static_cast<int>(at_limit.size())),
            NATS_OK);
  auto m = next_msg(sub.get(), 2s);
  ASSERT_TRUE(m);
  EXPECT_EQ(natsMsg_GetDataLength(m.get()), 1024);
  EXPECT_EQ(natsConnection_Status(nc.get()), NATS_CONN_STATUS_CONNECTED);
}

TEST_F(max_payload, raw_oversized_pub_gets_error_and_close) {
  raw_client c;
  ASSERT_TRUE(c.open(port()));
  // Only the control line: the size alone must trigger the violation.
  ASSERT_TRUE(c.send("PUB foo 1025\r\n"));
  EXPECT_EQ(c.read_line(2s, false), "-ERR 'Maximum Payload Violation'\r\n");
  EXPECT_TRUE(c.read_until_closed(5s)) << "connection still open";
  EXPECT_TRUE(healthy_client_works(url()));
}

TEST_F(max_payload, raw_oversized_hpub_total_gets_error_and_close) {
  raw_client c;
  ASSERT_TRUE(c.open(port()));
  ASSERT_TRUE(c.send("HPUB foo 12 1100\r\n"));
  EXPECT_EQ(c.read_line(2s, false), "-ERR 'Maximum Payload Violation'\r\n");
  EXPECT_TRUE(c.read_until_closed(5s)) << "connection still open";
  EXPECT_TRUE(healthy_client_works(url()));
}

TEST_F(max_payload, raw_pub_at_limit_is_delivered) {
  raw_client c;
  ASSERT_TRUE(c.open(port()));
  const std::string payload(1024, 'z');
  ASSERT_TRUE(c.send("SUB foo 1\r\nPUB foo 1024\r\n" + payload + "\r\n"));
  EXPECT_EQ(c.read_line(), "MSG foo 1 1024\r\n");
  EXPECT_EQ(c.read_bytes(1026), payload + "\r\n");
}

class config_keys : public server_test {
 protected:
  std::string extra_conf() const override {
    return "server_name: \"pg-it-node\"\nmax_control_line: 512\n";
  }
};

TEST_F(config_keys, server_name_and_max_control_line_apply) {
  raw_client c;
  ASSERT_TRUE(c.connect(port()));
  std::string info = c.read_info();
  EXPECT_NE(info.find("\"server_name\":\"pg-it-node\""), std::string::npos) << info;
  ASSERT_TRUE(c.send(std::string(default_connect) + "PING\r\n"));
  ASSERT_EQ(c.read_line(), "PONG\r\n");
  const std::string ok_subject(400, 'k');
  ASSERT_TRUE(c.send("SUB " + ok_subject + " 1\r\nPING\r\n"));
  EXPECT_EQ(c.read_line(), "PONG\r\n") << "a 407-byte control line is under the 512 limit";
  ASSERT_TRUE(c.send("SUB " + std::string(600, 'k') + " 2\r\n"));
  EXPECT_EQ(c.read_line(2s, false), "-ERR 'maximum control line exceeded'\r\n");
  EXPECT_TRUE(c.read_until_closed(5s)) << "connection still open";
  EXPECT_TRUE(healthy_client_works(url()));
}

class slow_consumer : public server_test {
 protected:
  // Both servers hold a publisher back only briefly for a full reader, then cut the reader
  // (max_pending or write_deadline). Small limits keep the test quick; 8 MiB leaves a healthy
  // libnats reader room when the box is loaded.
  std::string extra_conf() const override { return "max_pending: 8388608\nwrite_deadline: \"2s\"\n"; }
};

void count_msg(natsConnection*, natsSubscription*, natsMsg* msg, void* closure) {
  ++*static_cast<std::atomic<int>*>(closure);
  natsMsg_Destroy(msg);
}

TEST_F(slow_consumer, stalled_reader_is_cut_off_others_unaffected) {
  // A raw subscriber with a tiny receive window that never reads after subscribing.
  raw_client stalled;
  ASSERT_TRUE(stalled.connect(port(), 4096));
  ASSERT_EQ(stalled.read_info().rfind("INFO {", 0), 0u);
  ASSERT_TRUE(stalled.send(std::string(default_connect) + "SUB flood 1\r\n"));
  ASSERT_TRUE(stalled.ping_pong());

  // A healthy subscriber on the same subject (libnats reads continuously in its own thread).
  auto healthy = connect(url());
  ASSERT_TRUE(healthy);
  std::atomic<int> healthy_count{0};
  natsSubscription* raw_sub = nullptr;
  ASSERT_EQ(natsConnection_Subscribe(&raw_sub, healthy.get(), "flood", count_msg, &healthy_count), NATS_OK);
  sub_ptr healthy_sub(raw_sub);
  ASSERT_EQ(natsSubscription_SetPendingLimits(raw_sub, -1, -1), NATS_OK);
  ASSERT_EQ(natsConnection_Flush(healthy.get()), NATS_OK);

  // ~64 MB flood, bounded in time.
  auto pub = connect(url());
  ASSERT_TRUE(pub);
  const std::string payload(8192, 'f');
  constexpr int n = 8192;
  const auto deadline = clock_type::now() + 30s;
  int sent = 0;
  for (; sent < n && clock_type::now() < deadline; ++sent)
    ASSERT_EQ(natsConnection_Publish(pub.get(), "flood", payload.data(), static_cast<int>(payload.size())),
              NATS_OK);
  ASSERT_EQ(sent, n) << "publisher could not push the flood within 30 s";
  ASSERT_EQ(natsConnection_FlushTimeout(pub.get(), 10000), NATS_OK);

  // The stalled connection is closed (whatever was buffered before the cut is drained here).
  auto drained = stalled.read_until_closed(15s);
  ASSERT_TRUE(drained) << "slow consumer was not disconnected";
  EXPECT_LT(drained->size(), static_cast<size_t>(n) * payload.size()) << "it got everything: not cut off";

  // Publisher and healthy subscriber keep working.
  EXPECT_EQ(natsConnection_Status(pub.get()), NATS_CONN_STATUS_CONNECTED);
  EXPECT_EQ(natsConnection_Status(healthy.get()), NATS_CONN_STATUS_CONNECTED);
  const auto wait_all = clock_type::now() + 20s;
  while (healthy_count.load() < n && clock_type::now() < wait_all) std::this_thread::sleep_for(10ms);
  EXPECT_EQ(healthy_count.load(), n) << "healthy subscriber lost messages";
  auto check = subscribe_sync(healthy.get(), "after.flood");
  ASSERT_TRUE(check);
  ASSERT_EQ(natsConnection_Flush(healthy.get()), NATS_OK);
  ASSERT_EQ(natsConnection_PublishString(pub.get(), "after.flood", "still here"), NATS_OK);
  ASSERT_EQ(natsConnection_Flush(pub.get()), NATS_OK);
  EXPECT_TRUE(next_msg(check.get(), 2s));
  EXPECT_TRUE(healthy_client_works(url()));
}

class keepalive : public server_test {
 protected:
  std::string extra_conf() const override { return "ping_interval: \"1s\"\nping_max: 1\n"; }
};

TEST_F(keepalive, silent_client_gets_pings_then_stale_connection) {
  auto lib = connect(url());  // answers PINGs on its own
  ASSERT_TRUE(lib);
  raw_client c;
  ASSERT_TRUE(c.open(port()));
  // From here on never answer: expect one or more PINGs, then the stale error and close.
  int pings = 0;
  std::optional<std::string> line;
  const auto deadline = clock_type::now() + 10s;
  while (clock_type::now() < deadline) {
    line = c.read_line(5s, false);
    if (!line || *line != "PING\r\n") break;
    ++pings;
  }
  EXPECT_GE(pings, 1);
  EXPECT_EQ(line, "-ERR 'Stale Connection'\r\n");
  auto rest = c.read_until_closed(5s);
  ASSERT_TRUE(rest) << "connection still open after Stale Connection";
  EXPECT_EQ(*rest, "");

  EXPECT_EQ(natsConnection_Status(lib.get()), NATS_CONN_STATUS_CONNECTED);
  auto sub = subscribe_sync(lib.get(), "ka");
  ASSERT_TRUE(sub);
  ASSERT_EQ(natsConnection_PublishString(lib.get(), "ka", "alive"), NATS_OK);
  EXPECT_TRUE(next_msg(sub.get(), 2s));
}

TEST_F(keepalive, answering_client_stays_connected) {
  raw_client c;
  ASSERT_TRUE(c.open(port()));
  // read_line answers PINGs; 3.5 s covers several ping intervals.
  EXPECT_TRUE(c.quiet_for(3500ms)) << "connection dropped although PINGs were answered";
  EXPECT_TRUE(c.ping_pong());
}

}  // namespace
}  // namespace peregrine::test
