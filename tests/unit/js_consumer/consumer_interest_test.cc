// Interest: pull requests whose reply subject has no subscriber are dropped when the machine
// would serve them (not sooner), and push consumers expire after inactive_threshold without
// interest even with unacked deliveries (nats-server's behaviour).
#include <set>

#include "tests/unit/js_consumer/fixture.h"

namespace js::test {
namespace {

using base::kMilli;
using base::kSecond;

// Explicit-ack pull params whose interest is the `live` set.
consumer_params with_interest(const std::set<std::string>& live) {
  auto p = explicit_params();
  p.has_interest = [&live](const std::string& reply) { return live.count(reply) > 0; };
  return p;
}

TEST(Interest, RequestWithoutInterestIsDroppedAtDelivery) {
  std::set<std::string> live{"a", "b"};
  harness h;
  h.make(with_interest(live));
  h.request("a", pull(10, 60 * kSecond));
  live.erase("a");  // its client unsubscribed the inbox
  h.publish(3);
  EXPECT_TRUE(h.take_deliveries().empty());  // nothing sent into the void
  EXPECT_TRUE(h.take_statuses().empty());    // and no status either: dropped silently
  EXPECT_EQ(h.info().num_waiting, 0u);
  pull_request nw = pull(5);
  nw.no_wait = true;
  h.request("b", nw);
  auto d = h.take_deliveries();
  ASSERT_EQ(d.size(), 3u);
  for (const auto& x : d) EXPECT_EQ(x.to, "b");
  auto s = h.take_statuses();
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s[0].code, 408);  // partly filled no_wait: 408, not 404
  EXPECT_EQ(s[0].pending_msgs, 2);
}

TEST(Interest, NoWaitIgnoresRequestsWithoutInterest) {
  std::set<std::string> live{"a", "b"};
  harness h;
  h.make(with_interest(live));
  h.request("a", pull(10, 60 * kSecond));
  live.erase("a");
  // Stored without the machine being told (as between two agent polls).
  h.store.add("s.a");
  h.store.add("s.a");
  pull_request nw = pull(5);
  nw.no_wait = true;
  h.request("b", nw);  // the dead request's 10 do not make this a 408 Requests Pending
  EXPECT_EQ(h.take_deliveries().size(), 2u);
  auto s = h.take_statuses();
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s[0].code, 408);
  EXPECT_EQ(s[0].description, "Request Timeout");
}

TEST(Interest, RequestSurvivesWhileNothingIsDeliveredAndInterestReturns) {
  std::set<std::string> live{"r"};
  harness h;
  h.make(with_interest(live));
  h.request("r", pull(2, 10 * kSecond));
  live.erase("r");  // the client's connection dropped
  h.advance(3 * kSecond);
  EXPECT_EQ(h.info().num_waiting, 1u);  // nothing asked for the inbox meanwhile
  live.insert("r");  // reconnected and re-subscribed
  h.publish(2);
  auto d = h.take_deliveries();
  ASSERT_EQ(d.size(), 2u);
  EXPECT_EQ(d[0].to, "r");
}

TEST(Interest, HeartbeatOnlyWhileInterested) {
  std::set<std::string> live{"r"};
  harness h;
  h.make(with_interest(live));
  pull_request r = pull(1, 10 * kSecond);
  r.idle_heartbeat = kSecond;
  h.request("r", r);
  h.advance(kSecond);
  EXPECT_EQ(h.take_statuses().size(), 1u);  // 100 Idle Heartbeat
  live.erase("r");
  h.advance(kSecond);
  EXPECT_TRUE(h.take_statuses().empty());
  EXPECT_EQ(h.info().num_waiting, 0u);
}

TEST(Interest, PushConsumerExpiresWithUnackedDeliveries) {
  harness h;
  auto p = explicit_params();
  p.deliver_subject = "dlv";
  p.max_waiting = 0;
  p.ack_wait = 30 * kSecond;
  p.inactive_threshold = 50 * kMilli;
  h.make(p);
  h.c->set_push_interest(true, h.now, h.out);
  h.publish(2);
  ASSERT_EQ(h.take_deliveries().size(), 2u);  // never acked
  h.advance(kSecond);
  EXPECT_TRUE(only<inactive>(h.out).empty());  // bound: stays
  h.c->set_push_interest(false, h.now, h.out);
  h.advance(40 * kMilli);
  EXPECT_TRUE(only<inactive>(h.out).empty());
  h.advance(10 * kMilli);
  EXPECT_EQ(only<inactive>(h.out).size(), 1u);  // at the threshold, not after the ack wait
}

TEST(Interest, PullConsumerPendingAcksStillCountAsActivity) {
  harness h;
  auto p = explicit_params();
  p.ack_wait = 30 * kSecond;
  p.inactive_threshold = 5 * kSecond;
  h.make(p);
  h.publish(1);
  h.request("r", pull(1));
  ASSERT_EQ(h.take_deliveries().size(), 1u);
  h.advance(10 * kSecond);
  EXPECT_TRUE(only<inactive>(h.out).empty());
}

}  // namespace
}  // namespace js::test
