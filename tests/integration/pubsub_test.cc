// Core pub/sub routing through libnats: plain subjects, wildcards, queue groups, echo, auto-unsub.
#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "tests/integration/server_fixture.h"

namespace peregrine::test {
namespace {

using namespace std::chrono_literals;

class pubsub : public server_test {};

// Binary payload with CR/LF and NUL: the server must treat payloads as opaque bytes.
std::string payload_for(int i) {
  return std::to_string(i) + std::string("\r\n\0x", 4) + std::string(static_cast<size_t>(i % 97), 'z');
}

TEST_F(pubsub, publish_reaches_subscriber_on_other_connection) {
  auto pub = connect(url());
  auto sub_nc = connect(url());
  ASSERT_TRUE(pub && sub_nc);
  auto sub = subscribe_sync(sub_nc.get(), "greet.hello");
  ASSERT_TRUE(sub);
  ASSERT_EQ(natsConnection_Flush(sub_nc.get()), NATS_OK);

  ASSERT_EQ(natsConnection_PublishString(pub.get(), "greet.hello", "world"), NATS_OK);
  ASSERT_EQ(natsConnection_Publish(pub.get(), "greet.hello", nullptr, 0), NATS_OK);  // empty payload
  ASSERT_EQ(natsConnection_Flush(pub.get()), NATS_OK);

  auto m1 = next_msg(sub.get(), 2s);
  ASSERT_TRUE(m1);
  EXPECT_STREQ(natsMsg_GetSubject(m1.get()), "greet.hello");
  EXPECT_EQ(std::string(natsMsg_GetData(m1.get()), natsMsg_GetDataLength(m1.get())), "world");
  EXPECT_EQ(natsMsg_GetReply(m1.get()), nullptr);
  auto m2 = next_msg(sub.get(), 2s);
  ASSERT_TRUE(m2);
  EXPECT_EQ(natsMsg_GetDataLength(m2.get()), 0);
}

TEST_F(pubsub, messages_keep_publish_order_and_bytes) {
  auto nc = connect(url());
  ASSERT_TRUE(nc);
  auto sub = subscribe_sync(nc.get(), "order");
  ASSERT_TRUE(sub);
  constexpr int n = 1000;
  for (int i = 0; i < n; ++i) {
    std::string payload = payload_for(i);
    ASSERT_EQ(natsConnection_Publish(nc.get(), "order", payload.data(), static_cast<int>(payload.size())),
              NATS_OK);
  }
  ASSERT_EQ(natsConnection_Flush(nc.get()), NATS_OK);
  for (int i = 0; i < n; ++i) {
    auto m = next_msg(sub.get(), 2s);
    ASSERT_TRUE(m) << "message " << i;
    ASSERT_EQ(std::string(natsMsg_GetData(m.get()), natsMsg_GetDataLength(m.get())), payload_for(i));
  }
}

TEST_F(pubsub, no_delivery_without_matching_subscription) {
  auto nc = connect(url());
  ASSERT_TRUE(nc);
  auto sub = subscribe_sync(nc.get(), "a.b");
  ASSERT_TRUE(sub);
  for (const char* s : {"a", "a.b.c", "a.bb", "A.b", "b.a"})
    ASSERT_EQ(natsConnection_PublishString(nc.get(), s, "x"), NATS_OK);
  ASSERT_EQ(natsConnection_Flush(nc.get()), NATS_OK);
  EXPECT_EQ(pending_msgs(sub.get()), 0);
}

TEST_F(pubsub, wildcards_star_and_gt) {
  auto nc = connect(url());
  ASSERT_TRUE(nc);
  std::map<std::string, sub_ptr> subs;
  for (const char* s : {"a.*", "a.>", "a.*.c", "*.b", ">", "a.b.>", "*"}) {
    subs[s] = subscribe_sync(nc.get(), s);
    ASSERT_TRUE(subs[s]) << s;
  }
  const std::vector<std::string> published = {"a", "a.b", "a.b.c", "a.x.c", "a.b.c.d", "x.b", "a.c.d"};
  for (const auto& s : published)
    ASSERT_EQ(natsConnection_PublishString(nc.get(), s.c_str(), "w"), NATS_OK);
  ASSERT_EQ(natsConnection_Flush(nc.get()), NATS_OK);

  using v = std::vector<std::string>;
  const std::map<std::string, v> expected = {
      {"a.*", v{"a.b"}},
      {"a.>", v{"a.b", "a.b.c", "a.x.c", "a.b.c.d", "a.c.d"}},
      {"a.*.c", v{"a.b.c", "a.x.c"}},
      {"*.b", v{"a.b", "x.b"}},
      {">", published},
      {"a.b.>", v{"a.b.c", "a.b.c.d"}},
      {"*", v{"a"}},
  };
  for (const auto& [pattern, want] : expected)
    EXPECT_EQ(drain_subjects(subs[pattern].get()), want) << "subscription " << pattern;
}

TEST_F(pubsub, wildcard_tokens_in_publish_subject_route_literally) {
  // nats clients create filtered consumers by publishing to subjects containing '*'/'>' tokens;
  // non-pedantic servers route them as literal tokens (spec 1.6).
  auto nc = connect(url());
  ASSERT_TRUE(nc);
  auto sub = subscribe_sync(nc.get(), "api.create.*.>");
  ASSERT_TRUE(sub);
  ASSERT_EQ(natsConnection_PublishString(nc.get(), "api.create.s1.orders.*", "{}"), NATS_OK);
  ASSERT_EQ(natsConnection_PublishString(nc.get(), "api.create.s1.>", "{}"), NATS_OK);
  ASSERT_EQ(natsConnection_Flush(nc.get()), NATS_OK);
  EXPECT_EQ(drain_subjects(sub.get()), (std::vector<std::string>{"api.create.s1.orders.*", "api.create.s1.>"}));
}

TEST_F(pubsub, queue_group_distributes_and_plain_subs_get_everything) {
  constexpr int members = 3;
  constexpr int n = 300;
  std::vector<nc_ptr> conns;
  std::vector<sub_ptr> queue_subs;
  for (int i = 0; i < members; ++i) {
    conns.push_back(connect(url()));
    ASSERT_TRUE(conns.back());
    queue_subs.push_back(subscribe_sync(conns.back().get(), "work.items", "workers"));
    ASSERT_TRUE(queue_subs.back());
  }
  // A second group on the same subject gets its own copy of every message.
  auto other_group = subscribe_sync(conns[0].get(), "work.*", "auditors");
  auto plain_nc = connect(url());
  ASSERT_TRUE(plain_nc && other_group);
  auto plain = subscribe_sync(plain_nc.get(), "work.items");
  ASSERT_TRUE(plain);
  for (auto& c : conns) ASSERT_EQ(natsConnection_Flush(c.get()), NATS_OK);
  ASSERT_EQ(natsConnection_Flush(plain_nc.get()), NATS_OK);

  auto pub = connect(url());
  ASSERT_TRUE(pub);
  for (int i = 0; i < n; ++i)
    ASSERT_EQ(natsConnection_PublishString(pub.get(), "work.items", std::to_string(i).c_str()), NATS_OK);
  ASSERT_EQ(natsConnection_Flush(pub.get()), NATS_OK);
  // The publisher's PONG means the server routed everything; each subscriber's own PONG then
  // means its share is queued locally.
  for (auto& c : conns) ASSERT_EQ(natsConnection_Flush(c.get()), NATS_OK);
  ASSERT_EQ(natsConnection_Flush(plain_nc.get()), NATS_OK);

  int total = 0;
  for (int i = 0; i < members; ++i) {
    int got = pending_msgs(queue_subs[static_cast<size_t>(i)].get());
    EXPECT_GT(got, 0) << "queue member " << i << " got nothing out of " << n;
    total += got;
  }
  EXPECT_EQ(total, n) << "each message goes to exactly one member of the group";
  EXPECT_EQ(pending_msgs(other_group.get()), n);
  EXPECT_EQ(pending_msgs(plain.get()), n);
}

TEST_F(pubsub, queue_group_survives_member_leaving) {
  auto a = connect(url());
  auto b = connect(url());
  ASSERT_TRUE(a && b);
  auto qa = subscribe_sync(a.get(), "jobs", "g");
  auto qb = subscribe_sync(b.get(), "jobs", "g");
  ASSERT_TRUE(qa && qb);
  ASSERT_EQ(natsConnection_Flush(a.get()), NATS_OK);
  ASSERT_EQ(natsConnection_Flush(b.get()), NATS_OK);
  ASSERT_EQ(natsSubscription_Unsubscribe(qa.get()), NATS_OK);
  ASSERT_EQ(natsConnection_Flush(a.get()), NATS_OK);
  for (int i = 0; i < 20; ++i) ASSERT_EQ(natsConnection_PublishString(a.get(), "jobs", "j"), NATS_OK);
  ASSERT_EQ(natsConnection_Flush(a.get()), NATS_OK);
  ASSERT_EQ(natsConnection_Flush(b.get()), NATS_OK);
  EXPECT_EQ(pending_msgs(qb.get()), 20);
}

// A PONG promises that what was published before the PING is already queued to subscribers
// ahead of it. On two shards the deliveries cross a ring; the subscriber's PONG must not
// overtake them (it did under load: the subscriber's PING was read before the ring drained).
TEST_F(pubsub, flush_after_publisher_flush_sees_every_message) {
  auto pub = connect(url());
  auto sub_conn = connect(url());
  ASSERT_TRUE(pub && sub_conn);
  auto sub = subscribe_sync(sub_conn.get(), "rounds");
  ASSERT_TRUE(sub);
  ASSERT_EQ(natsConnection_Flush(sub_conn.get()), NATS_OK);
  int expected = 0;
  for (int round = 0; round < 200; ++round) {
    const int n = 1 + round % 7;
    for (int i = 0; i < n; ++i) ASSERT_EQ(natsConnection_PublishString(pub.get(), "rounds", "r"), NATS_OK);
    expected += n;
    ASSERT_EQ(natsConnection_Flush(pub.get()), NATS_OK);
    ASSERT_EQ(natsConnection_Flush(sub_conn.get()), NATS_OK);
    ASSERT_EQ(pending_msgs(sub.get()), expected) << "round " << round;
  }
}

TEST_F(pubsub, echo_off_suppresses_own_messages_only) {
  auto opts = make_opts(url());
  ASSERT_EQ(natsOptions_SetNoEcho(opts.get(), true), NATS_OK);
  auto quiet = connect(opts.get());
  auto other = connect(url());
  ASSERT_TRUE(quiet && other);
  auto own = subscribe_sync(quiet.get(), "echo.test");
  auto theirs = subscribe_sync(other.get(), "echo.test");
  ASSERT_TRUE(own && theirs);
  ASSERT_EQ(natsConnection_Flush(other.get()), NATS_OK);

  ASSERT_EQ(natsConnection_PublishString(quiet.get(), "echo.test", "from-quiet"), NATS_OK);
  ASSERT_EQ(natsConnection_Flush(quiet.get()), NATS_OK);
  ASSERT_EQ(natsConnection_Flush(other.get()), NATS_OK);
  EXPECT_EQ(pending_msgs(own.get()), 0) << "no-echo connection received its own publish";
  EXPECT_EQ(pending_msgs(theirs.get()), 1);

  // Messages from other connections still reach the no-echo connection.
  ASSERT_EQ(natsConnection_PublishString(other.get(), "echo.test", "from-other"), NATS_OK);
  ASSERT_EQ(natsConnection_Flush(other.get()), NATS_OK);
  ASSERT_EQ(natsConnection_Flush(quiet.get()), NATS_OK);
  auto m = next_msg(own.get(), 2s);
  ASSERT_TRUE(m);
  EXPECT_EQ(std::string(natsMsg_GetData(m.get())), "from-other");
}

TEST_F(pubsub, auto_unsubscribe_after_max_msgs) {
  auto nc = connect(url());
  ASSERT_TRUE(nc);
  auto sub = subscribe_sync(nc.get(), "limited");
  ASSERT_TRUE(sub);
  ASSERT_EQ(natsSubscription_AutoUnsubscribe(sub.get(), 3), NATS_OK);
  auto witness = subscribe_sync(nc.get(), "limited");
  ASSERT_TRUE(witness);
  for (int i = 0; i < 10; ++i) ASSERT_EQ(natsConnection_PublishString(nc.get(), "limited", "m"), NATS_OK);
  ASSERT_EQ(natsConnection_Flush(nc.get()), NATS_OK);
  EXPECT_EQ(pending_msgs(witness.get()), 10);
  int got = 0;
  while (next_msg(sub.get(), 200ms)) ++got;
  EXPECT_EQ(got, 3);
}

TEST_F(pubsub, unsubscribe_stops_delivery) {
  auto nc = connect(url());
  ASSERT_TRUE(nc);
  auto sub = subscribe_sync(nc.get(), "gone");
  ASSERT_TRUE(sub);
  ASSERT_EQ(natsSubscription_Unsubscribe(sub.get()), NATS_OK);
  auto witness = subscribe_sync(nc.get(), "gone");
  ASSERT_TRUE(witness);
  ASSERT_EQ(natsConnection_PublishString(nc.get(), "gone", "m"), NATS_OK);
  ASSERT_EQ(natsConnection_Flush(nc.get()), NATS_OK);
  EXPECT_EQ(pending_msgs(witness.get()), 1);
}

// Raw-socket checks of the exact MSG framing (spec 1.4 observed examples).
TEST_F(pubsub, raw_msg_framing_and_unsub_max) {
  raw_client c;
  ASSERT_TRUE(c.open(port()));
  ASSERT_TRUE(c.send("SUB foo 1\r\nSUB bar.* q 2\r\nPUB foo 5\r\nhello\r\nPUB foo reply.x 5\r\nhello\r\n"
                     "PUB bar.z 0\r\n\r\n"));
  EXPECT_EQ(c.read_line(), "MSG foo 1 5\r\n");
  EXPECT_EQ(c.read_bytes(7), "hello\r\n");
  EXPECT_EQ(c.read_line(), "MSG foo 1 reply.x 5\r\n");
  EXPECT_EQ(c.read_bytes(7), "hello\r\n");
  EXPECT_EQ(c.read_line(), "MSG bar.z 2 0\r\n");
  EXPECT_EQ(c.read_bytes(2), "\r\n");
  ASSERT_TRUE(c.ping_pong());

  // UNSUB with max counts deliveries already made (sid 1 has had 2 so far).
  ASSERT_TRUE(c.send("UNSUB 1 3\r\nPUB foo 1\r\na\r\nPUB foo 1\r\nb\r\nPUB foo 1\r\nc\r\nPING\r\n"));
  EXPECT_EQ(c.read_line(), "MSG foo 1 1\r\n");
  EXPECT_EQ(c.read_bytes(3), "a\r\n");
  EXPECT_EQ(c.read_line(), "PONG\r\n") << "sid 1 must be gone after its 3rd delivery";

  // Lower-case ops, tab separators and an unknown sid in UNSUB are all fine.
  ASSERT_TRUE(c.send("sub\tlow 7\r\npub low  2\r\nhi\r\nunsub 99\r\nping\r\n"));
  EXPECT_EQ(c.read_line(), "MSG low 7 2\r\n");
  EXPECT_EQ(c.read_bytes(4), "hi\r\n");
  EXPECT_EQ(c.read_line(), "PONG\r\n");
}

TEST_F(pubsub, raw_duplicate_sid_keeps_first_subscription) {
  raw_client c;
  ASSERT_TRUE(c.open(port()));
  ASSERT_TRUE(c.send("SUB one 5\r\nSUB two 5\r\nPUB two 1\r\nx\r\nPUB one 1\r\ny\r\nPING\r\n"));
  EXPECT_EQ(c.read_line(), "MSG one 5 1\r\n");
  EXPECT_EQ(c.read_bytes(3), "y\r\n");
  EXPECT_EQ(c.read_line(), "PONG\r\n");
}

}  // namespace
}  // namespace peregrine::test
