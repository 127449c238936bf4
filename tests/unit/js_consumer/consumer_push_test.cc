// Push mode: interest, idle heartbeats, flow control, push-based 409.
#include "tests/unit/js_consumer/fixture.h"

namespace js::test {
namespace {

using base::kMilli;
using base::kSecond;

consumer_params push_params() {
  auto p = explicit_params();
  p.deliver_subject = "dlv.push";
  p.max_waiting = 0;
  p.idle_heartbeat = kSecond;
  return p;
}

TEST(Push, DeliversWhileBoundAndHeartbeats) {
  harness h;
  auto p = push_params();
  p.ack_wait = 5 * kSecond;
  h.make(p);
  h.publish(3);
  EXPECT_TRUE(h.take_deliveries().empty());  // nobody subscribed yet
  EXPECT_FALSE(h.info().push_bound);
  h.c->set_push_interest(true, h.now, h.out);
  EXPECT_TRUE(h.info().push_bound);
  auto d = h.take_deliveries();
  ASSERT_EQ(d.size(), 3u);
  EXPECT_EQ(d[0].to, "dlv.push");
  EXPECT_EQ(d[2].pending, 0u);
  h.ack(d[0], "+ACK");
  h.advance(kSecond);
  auto s = h.take_statuses();
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s[0].to, "dlv.push");
  EXPECT_EQ(s[0].render(),
            "NATS/1.0 100 Idle Heartbeat\r\nNats-Last-Consumer: 3\r\nNats-Last-Stream: 3\r\n\r\n");
  // Redeliveries go straight out on a push consumer.
  h.advance(4 * kSecond);
  d = h.take_deliveries();
  ASSERT_EQ(d.size(), 2u);
  EXPECT_EQ(d[0].stream_seq, 2u);
  EXPECT_EQ(d[0].delivery_count, 2u);
  // Pull requests are refused.
  h.take_statuses();
  h.request("_INBOX.x", pull(1));
  s = h.take_statuses();
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s[0].render(), "NATS/1.0 409 Consumer is push based\r\n\r\n");
  // Interest gone: delivery stops, heartbeats stop.
  h.c->set_push_interest(false, h.now, h.out);
  h.publish(1);
  h.advance(3 * kSecond);
  EXPECT_TRUE(h.take_deliveries().empty());
  for (const auto& x : h.take_statuses()) EXPECT_NE(x.code, 100);
}

// §12.4: 200 kB messages stall after 11 (just past 2 MiB); the answer releases 16 more.
TEST(Push, FlowControlWindow) {
  harness h;
  auto p = push_params();
  p.ack = ack_policy::none;
  p.flow_control = true;
  p.new_fc_token = [] { return "3QDu"; };
  h.make(p);
  for (int i = 0; i < 60; ++i) h.store.add("p6.b", 200000);
  h.c->on_stream_advanced(60, h.now, h.out);
  h.c->set_push_interest(true, h.now, h.out);
  auto d = h.take_deliveries();
  ASSERT_EQ(d.size(), 11u);
  auto s = h.take_statuses();
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s[0].reply, "$JS.FC.S.C.3QDu");
  EXPECT_EQ(s[0].render(), "NATS/1.0 100 FlowControl Request\r\n\r\n");
  EXPECT_EQ(s[0].render().size(), 36u);
  // Stalled: the heartbeat names the outstanding request.
  h.advance(kSecond);
  EXPECT_TRUE(h.take_deliveries().empty());
  s = h.take_statuses();
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s[0].render(), "NATS/1.0 100 Idle Heartbeat\r\nNats-Last-Consumer: 11\r\n"
                           "Nats-Last-Stream: 11\r\nNats-Consumer-Stalled: $JS.FC.S.C.3QDu\r\n\r\n");
  h.c->on_flow_control_reply("$JS.FC.S.C.stale", h.now, h.out);  // ignored
  EXPECT_TRUE(h.take_deliveries().empty());
  h.c->on_flow_control_reply("$JS.FC.S.C.3QDu", h.now, h.out);
  EXPECT_EQ(h.take_deliveries().size(), 16u);
  EXPECT_EQ(h.take_statuses().size(), 1u);  // the next FC request
}

TEST(Push, RateLimit) {
  harness h;
  auto p = push_params();
  p.ack = ack_policy::none;
  p.idle_heartbeat = 0;
  p.rate_limit_bps = 8 * 1000;  // 1000 bytes/s
  p.rate_burst = 1000;
  h.make(p);
  for (int i = 0; i < 10; ++i) h.store.add("s.a", 400);
  h.c->on_stream_advanced(10, h.now, h.out);
  h.c->set_push_interest(true, h.now, h.out);
  auto d = h.take_deliveries();
  ASSERT_EQ(d.size(), 3u);  // burst 1000 allows ~2.x messages of ~450 bytes, then debt
  std::uint64_t bytes = 0;
  for (const auto& x : d) bytes += x.size;
  h.advance(10 * kSecond);
  d = h.take_deliveries();
  ASSERT_EQ(d.size(), 7u);
  // Overall pace: about 1000 bytes/s after the burst.
  for (const auto& x : d) bytes += x.size;
  EXPECT_LE(bytes, 1000 + 10 * 1000 + 500u);
}

TEST(Push, RateLimitRemovedByUpdateReleasesTheRest) {
  harness h;
  auto p = push_params();
  p.ack = ack_policy::none;
  p.idle_heartbeat = 0;
  p.rate_limit_bps = 8 * 1000;
  p.rate_burst = 1000;
  h.make(p);
  for (int i = 0; i < 10; ++i) h.store.add("s.a", 400);
  h.c->on_stream_advanced(10, h.now, h.out);
  h.c->set_push_interest(true, h.now, h.out);
  ASSERT_EQ(h.take_deliveries().size(), 3u);
  p.rate_limit_bps = 0;  // an update lifts the limit: everything left goes at once
  h.c->update(p, h.now, h.out);
  EXPECT_EQ(h.take_deliveries().size(), 7u);
}

TEST(Push, RebindRedeliversPending) {
  harness h;
  h.make(push_params());
  h.publish(2);
  h.c->set_push_interest(true, h.now, h.out);
  EXPECT_EQ(h.take_deliveries().size(), 2u);
  h.c->set_push_interest(false, h.now, h.out);
  h.c->rebind_push("dlv.new", h.now, h.out);
  h.c->set_push_interest(true, h.now, h.out);
  auto d = h.take_deliveries();
  ASSERT_EQ(d.size(), 2u);
  EXPECT_EQ(d[0].to, "dlv.new");
  EXPECT_EQ(d[0].delivery_count, 2u);
}

TEST(Push, PausedStillHeartbeats) {
  harness h;
  h.make(push_params());
  h.c->set_push_interest(true, h.now, h.out);
  h.c->set_pause(h.now + 10 * kSecond, h.now, h.out);
  h.publish(1);
  h.advance(3 * kSecond);
  EXPECT_TRUE(h.take_deliveries().empty());
  EXPECT_EQ(h.take_statuses().size(), 3u);
  h.advance(7 * kSecond);
  EXPECT_EQ(h.take_deliveries().size(), 1u);
}

TEST(Push, InactiveWithoutInterest) {
  harness h;
  auto p = push_params();
  p.inactive_threshold = 5 * kSecond;
  h.make(p);
  h.c->set_push_interest(true, h.now, h.out);
  h.advance(20 * kSecond);
  EXPECT_TRUE(only<inactive>(h.out).empty());
  h.c->set_push_interest(false, h.now, h.out);
  h.advance(5 * kSecond);
  EXPECT_EQ(only<inactive>(h.out).size(), 1u);
}

}  // namespace
}  // namespace js::test
