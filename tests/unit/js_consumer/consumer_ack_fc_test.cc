// ack_policy flow_control (2.14, ADR-58): acks ride on the receiver's flow-control answers
// (Nats-Last-Consumer / Nats-Last-Stream); a full max_ack_pending or an idle heartbeat with
// unacked deliveries asks for one; nothing is redelivered by time.
#include "tests/unit/js_consumer/fixture.h"

namespace js::test {
namespace {

using base::kSecond;

consumer_params fc_params(std::int64_t max_ack_pending) {
  auto p = explicit_params();
  p.ack = ack_policy::flow_control;
  p.deliver_subject = "src.dlv";
  p.max_waiting = 0;
  p.idle_heartbeat = kSecond;
  p.flow_control = true;
  p.max_ack_pending = max_ack_pending;
  p.max_deliver = -1;
  int n = 0;
  p.new_fc_token = [n]() mutable { return "T" + std::to_string(++n); };
  return p;
}

std::vector<status_reply> fc_requests(const std::vector<status_reply>& s) {
  std::vector<status_reply> r;
  for (const auto& x : s)
    if (x.description == "FlowControl Request") r.push_back(x);
  return r;
}

TEST(AckFlowControl, FullWindowAsksAtOnceAndTheAnswerAcks) {
  harness h;
  h.make(fc_params(3));
  h.publish(5);
  h.c->set_push_interest(true, h.now, h.out);
  auto d = h.take_deliveries();
  ASSERT_EQ(d.size(), 3u);  // max_ack_pending
  auto fc = fc_requests(h.take_statuses());
  ASSERT_EQ(fc.size(), 1u);  // no wait for a heartbeat
  EXPECT_EQ(fc[0].reply, "$JS.FC.S.C.T1");
  EXPECT_TRUE(h.take_released().empty());
  // The receiver stored 1..3: the answer acks them (released) and lets 4..5 go.
  h.c->on_flow_control_reply("$JS.FC.S.C.T1", h.now, h.out, sequence_pair{3, 3});
  EXPECT_EQ(h.take_released(), (std::vector<std::uint64_t>{1, 2, 3}));
  d = h.take_deliveries();
  ASSERT_EQ(d.size(), 2u);
  EXPECT_EQ(d[0].stream_seq, 4u);
  EXPECT_EQ(h.info().ack_floor, (sequence_pair{3, 3}));
  EXPECT_EQ(h.info().num_ack_pending, 2u);
}

TEST(AckFlowControl, IdleHeartbeatAsksForTheFloorAndNothingRedeliversByTime) {
  harness h;
  h.make(fc_params(100));
  h.publish(2);
  h.c->set_push_interest(true, h.now, h.out);
  ASSERT_EQ(h.take_deliveries().size(), 2u);
  EXPECT_TRUE(fc_requests(h.take_statuses()).empty());  // far from any limit
  h.advance(kSecond);
  auto s = h.take_statuses();
  auto fc = fc_requests(s);
  ASSERT_EQ(fc.size(), 1u);
  ASSERT_EQ(s.size(), 2u);  // the request, then the heartbeat naming it
  EXPECT_EQ(s[1].stalled, fc[0].reply);
  // A partial answer acks what it names, from a stale subject too.
  h.c->on_flow_control_reply("$JS.FC.S.C.old", h.now, h.out, sequence_pair{1, 1});
  EXPECT_EQ(h.take_released(), (std::vector<std::uint64_t>{1}));
  // No ack_wait: an hour later nothing came again.
  h.advance(3600 * kSecond);
  EXPECT_TRUE(h.take_deliveries().empty());
  h.c->on_flow_control_reply(fc[0].reply, h.now, h.out, sequence_pair{2, 2});
  EXPECT_EQ(h.take_released(), (std::vector<std::uint64_t>{2}));
  EXPECT_EQ(h.info().num_ack_pending, 0u);
  // Idle and nothing pending: heartbeats only.
  h.take_statuses();
  h.advance(2 * kSecond);
  EXPECT_TRUE(fc_requests(h.take_statuses()).empty());
}

TEST(AckFlowControl, AnswerBeyondDeliveredIsClampedAndResetRedelivers) {
  harness h;
  h.make(fc_params(10));
  h.publish(4);
  h.c->set_push_interest(true, h.now, h.out);
  ASSERT_EQ(h.take_deliveries().size(), 4u);
  h.c->on_flow_control_reply("$JS.FC.S.C.x", h.now, h.out, sequence_pair{99, 99});
  EXPECT_EQ(h.take_released().size(), 4u);
  EXPECT_EQ(h.info().ack_floor, (sequence_pair{4, 4}));
  h.publish(2);
  ASSERT_EQ(h.take_deliveries().size(), 2u);
  // A gap on the receiver's side: the copier resets; 5..6 come again from delivery seq 1.
  h.c->reset(4, h.now, h.out);
  auto d = h.take_deliveries();
  ASSERT_EQ(d.size(), 2u);
  EXPECT_EQ(d[0].stream_seq, 5u);
  EXPECT_EQ(d[0].consumer_seq, 1u);
}

TEST(AckFlowControl, InterestRetentionNeedsUnackedOnly) {
  harness h;
  h.make(fc_params(10));
  h.publish(3);
  h.c->set_push_interest(true, h.now, h.out);
  ASSERT_EQ(h.take_deliveries().size(), 3u);
  EXPECT_TRUE(h.c->needs(2));
  h.c->on_flow_control_reply("$JS.FC.S.C.x", h.now, h.out, sequence_pair{2, 2});
  EXPECT_FALSE(h.c->needs(2));
  EXPECT_TRUE(h.c->needs(3));
}

}  // namespace
}  // namespace js::test
