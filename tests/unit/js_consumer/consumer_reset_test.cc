// CONSUMER.RESET on the pure machine (ADR-57): pending, redeliveries and the consumer
// sequence start over after the given floor; waiting requests are served from there.
#include "tests/unit/js_consumer/fixture.h"

namespace js::test {
namespace {

using base::kSecond;

TEST(ConsumerReset, RestartsAfterTheFloorWithConsumerSeqOne) {
  harness h;
  h.make(explicit_params());
  h.publish(5);
  h.request("_INBOX.1", pull(3));
  auto d = h.take_deliveries();
  ASSERT_EQ(d.size(), 3u);
  EXPECT_TRUE(h.ack(d[0], "+ACK"));
  EXPECT_TRUE(h.ack(d[2], "-NAK"));  // queued for redelivery
  ASSERT_EQ(h.info().num_ack_pending, 2u);
  h.c->reset(h.info().ack_floor.stream_seq, h.now, h.out);
  auto n = h.info();
  EXPECT_EQ(n.delivered, (sequence_pair{0, 1}));
  EXPECT_EQ(n.ack_floor, (sequence_pair{0, 1}));
  EXPECT_EQ(n.num_ack_pending, 0u);
  EXPECT_EQ(n.num_redelivered, 0u);
  EXPECT_EQ(n.num_pending, 4u);
  EXPECT_TRUE(h.c->redelivery_queue().empty());
  h.request("_INBOX.2", pull(4));
  d = h.take_deliveries();
  ASSERT_EQ(d.size(), 4u);
  for (std::uint64_t i = 0; i < 4; ++i) {
    EXPECT_EQ(d[i].stream_seq, i + 2);
    EXPECT_EQ(d[i].consumer_seq, i + 1);
    EXPECT_EQ(d[i].delivery_count, 1u);  // a fresh start, not a redelivery
  }
  // No ack-wait timer of the old deliveries survives: nothing comes back early.
  h.advance(29 * kSecond);
  EXPECT_TRUE(h.take_deliveries().empty());
}

TEST(ConsumerReset, ForwardSkipsAhead) {
  harness h;
  h.make(explicit_params());
  h.publish(10);
  h.request("_INBOX.1", pull(2));
  ASSERT_EQ(h.take_deliveries().size(), 2u);
  h.c->reset(7, h.now, h.out);  // as {"seq":8}
  EXPECT_EQ(h.info().num_pending, 3u);
  EXPECT_EQ(h.info().ack_floor, (sequence_pair{0, 7}));
  h.request("_INBOX.2", pull(5));
  auto d = h.take_deliveries();
  ASSERT_EQ(d.size(), 3u);
  EXPECT_EQ(d[0].stream_seq, 8u);
  EXPECT_EQ(d[0].consumer_seq, 1u);
  EXPECT_EQ(d[2].stream_seq, 10u);
  EXPECT_EQ(d[2].consumer_seq, 3u);
  EXPECT_TRUE(h.ack(d[0], "+ACK"));
  EXPECT_EQ(h.info().ack_floor, (sequence_pair{1, 8}));
}

TEST(ConsumerReset, WaitingRequestsGetTheRestartedStream) {
  harness h;
  h.make(explicit_params());
  h.publish(3);
  h.request("_INBOX.1", pull(3));
  ASSERT_EQ(h.take_deliveries().size(), 3u);
  h.request("_INBOX.2", pull(2, 10 * kSecond));  // nothing left: it waits
  EXPECT_TRUE(h.take_deliveries().empty());
  h.c->reset(0, h.now, h.out);
  auto d = h.take_deliveries();  // the reset delivers to it at once
  ASSERT_EQ(d.size(), 2u);
  EXPECT_EQ(d[0].to, "_INBOX.2");
  EXPECT_EQ(d[0].stream_seq, 1u);
  EXPECT_EQ(d[0].consumer_seq, 1u);
}

}  // namespace
}  // namespace js::test
