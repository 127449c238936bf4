// Ack policies, redelivery timing, floors, max_deliver, snapshot/restore.
#include "tests/unit/js_consumer/fixture.h"

namespace js::test {
namespace {

using base::kMilli;
using base::kSecond;

// consumers-and-core.md §4.5 (newest behaviour: +TERM with a reason terminates).
TEST(Consumer, WorkedExample) {
  harness h;
  auto p = explicit_params();
  p.ack_wait = 30 * kSecond;
  p.max_deliver = 3;
  h.make(p);
  h.publish(6);
  h.request("_INBOX.1", pull(6));
  auto d = h.take_deliveries();
  ASSERT_EQ(d.size(), 6u);
  for (std::uint64_t i = 0; i < 6; ++i) {
    EXPECT_EQ(d[i].stream_seq, i + 1);
    EXPECT_EQ(d[i].consumer_seq, i + 1);
    EXPECT_EQ(d[i].delivery_count, 1u);
    EXPECT_EQ(d[i].pending, 5 - i);
    EXPECT_EQ(d[i].to, "_INBOX.1");
  }
  EXPECT_TRUE(h.ack(d[0], "+ACK"));
  EXPECT_EQ(h.info().ack_floor, (sequence_pair{1, 1}));
  EXPECT_TRUE(h.ack(d[0], "+ACK"));  // re-ack: reply, no change
  EXPECT_EQ(h.info().ack_floor, (sequence_pair{1, 1}));
  EXPECT_TRUE(h.ack(d[1], ""));
  EXPECT_EQ(h.info().ack_floor, (sequence_pair{2, 2}));
  EXPECT_EQ(h.take_released(), (std::vector<std::uint64_t>{1, 2}));

  EXPECT_TRUE(h.ack(d[2], "-NAK"));
  h.request("_INBOX.2", pull(1));
  auto r = h.take_deliveries();
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].stream_seq, 3u);
  EXPECT_EQ(r[0].delivery_count, 2u);
  EXPECT_EQ(r[0].consumer_seq, 7u);

  EXPECT_TRUE(h.ack(d[3], "-NAK {\"delay\":1000000000}"));
  h.request("_INBOX.3", pull(1, 2 * kSecond));
  EXPECT_TRUE(h.take_deliveries().empty());
  h.advance(999 * kMilli);
  EXPECT_TRUE(h.take_deliveries().empty());
  h.advance(1 * kMilli);
  r = h.take_deliveries();
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].stream_seq, 4u);
  EXPECT_EQ(r[0].delivery_count, 2u);
  EXPECT_EQ(r[0].consumer_seq, 8u);
  EXPECT_EQ(r[0].to, "_INBOX.3");

  h.take_advisories();
  EXPECT_TRUE(h.ack(d[4], "+TERM bad data"));
  auto adv = h.take_advisories();
  ASSERT_EQ(adv.size(), 1u);
  EXPECT_EQ(adv[0].kind, advisory_kind::terminated);
  EXPECT_EQ(adv[0].reason, "bad data");
  EXPECT_EQ(adv[0].stream_seq, 5u);
  EXPECT_EQ(adv[0].consumer_seq, 5u);
  EXPECT_EQ(adv[0].deliveries, 1u);
  EXPECT_EQ(h.take_released(), (std::vector<std::uint64_t>{5}));

  EXPECT_TRUE(h.ack(d[5], "+WPI"));
  auto n = h.info();
  EXPECT_EQ(n.delivered, (sequence_pair{8, 6}));
  EXPECT_EQ(n.ack_floor, (sequence_pair{2, 2}));
  EXPECT_EQ(n.num_ack_pending, 3u);  // 2.9.10 ignored "+TERM reason" and showed 4
  EXPECT_EQ(n.num_redelivered, 2u);
  EXPECT_EQ(n.num_waiting, 0u);
  EXPECT_EQ(n.num_pending, 0u);
}

TEST(Consumer, AckNoneIsAckedAtDelivery) {
  harness h;
  auto p = explicit_params();
  p.ack = ack_policy::none;
  h.make(p);
  h.publish(3);
  h.request("r", pull(2));
  auto d = h.take_deliveries();
  ASSERT_EQ(d.size(), 2u);
  EXPECT_EQ(h.take_released(), (std::vector<std::uint64_t>{1, 2}));
  auto n = h.info();
  EXPECT_EQ(n.ack_floor, (sequence_pair{2, 2}));
  EXPECT_EQ(n.delivered, (sequence_pair{2, 2}));
  EXPECT_EQ(n.num_ack_pending, 0u);
  EXPECT_EQ(n.num_pending, 1u);
  EXPECT_FALSE(h.ack(d[0], "+ACK"));  // no ack subscription
  EXPECT_EQ(h.c->next_deadline(), consumer_state_machine::kNever);
}

TEST(Consumer, AckAllAcksEverythingBelow) {
  harness h;
  auto p = explicit_params();
  p.ack = ack_policy::all;
  h.make(p);
  h.publish(5);
  h.request("r", pull(5));
  auto d = h.take_deliveries();
  h.take_released();
  EXPECT_TRUE(h.ack(d[2], "+ACK"));
  EXPECT_EQ(h.take_released(), (std::vector<std::uint64_t>{1, 2, 3}));
  EXPECT_EQ(h.info().ack_floor, (sequence_pair{3, 3}));
  EXPECT_EQ(h.info().num_ack_pending, 2u);
  EXPECT_TRUE(h.ack(d[1], "+ACK"));  // at/below the floor: no-op
  EXPECT_TRUE(h.take_released().empty());
  EXPECT_TRUE(h.ack(d[4], "+ACK"));
  EXPECT_EQ(h.take_released(), (std::vector<std::uint64_t>{4, 5}));
  EXPECT_EQ(h.info().ack_floor, (sequence_pair{5, 5}));
  EXPECT_EQ(h.info().num_ack_pending, 0u);
}

TEST(Consumer, AckLatencyHistogramCountsDeliveryToAck) {
  harness h;
  h.make(explicit_params());
  h.publish(3);
  h.request("r", pull(3));
  auto d = h.take_deliveries();
  ASSERT_EQ(d.size(), 3u);
  h.now += 5 * base::kMilli;
  EXPECT_TRUE(h.ack(d[0], "+ACK"));
  h.now += 5 * base::kMilli;
  EXPECT_TRUE(h.ack(d[1], "+ACK"));
  EXPECT_TRUE(h.ack(d[1], "+ACK"));  // a repeated ack is not counted again
  const auto& lat = h.c->ack_latency();
  EXPECT_EQ(lat.count(), 2u);
  EXPECT_EQ(lat.bucket(13), 1u);  // 5 ms: <= 8.192 ms
  EXPECT_EQ(lat.bucket(14), 1u);  // 10 ms: <= 16.384 ms
  EXPECT_DOUBLE_EQ(lat.sum_seconds(), 0.015);
}

TEST(Consumer, FloorsMoveOnlyOverContiguousAcks) {
  harness h;
  h.make(explicit_params());
  h.publish(5);
  h.request("r", pull(5));
  auto d = h.take_deliveries();
  h.ack(d[1], "+ACK");
  h.ack(d[2], "+ACK");
  EXPECT_EQ(h.info().ack_floor, (sequence_pair{0, 0}));
  h.ack(d[0], "+ACK");
  EXPECT_EQ(h.info().ack_floor, (sequence_pair{3, 3}));
  h.ack(d[4], "+ACK");
  EXPECT_EQ(h.info().ack_floor, (sequence_pair{3, 3}));
  h.ack(d[3], "+ACK");
  EXPECT_EQ(h.info().ack_floor, (sequence_pair{5, 5}));
  EXPECT_EQ(h.info().num_ack_pending, 0u);
}

TEST(Consumer, FloorSkipsFilteredOutMessages) {
  harness h;
  h.store.filter = [](const std::string& s) { return s == "s.a"; };
  h.make(explicit_params());
  h.store.add("s.a");
  h.store.add("s.b");
  h.store.add("s.a");
  h.c->on_stream_advanced(3, h.now, h.out);
  h.request("r", pull(5, 10 * kSecond));
  auto d = h.take_deliveries();
  ASSERT_EQ(d.size(), 2u);
  EXPECT_EQ(d[1].stream_seq, 3u);
  EXPECT_EQ(d[1].consumer_seq, 2u);
  EXPECT_EQ(d[0].pending, 1u);
  h.ack(d[0], "");
  EXPECT_EQ(h.info().ack_floor, (sequence_pair{1, 2}));  // just below the next outstanding
  h.ack(d[1], "");
  EXPECT_EQ(h.info().ack_floor, (sequence_pair{2, 3}));
}

TEST(Consumer, AckWaitRedeliversWithNewConsumerSeq) {
  harness h;
  auto p = explicit_params();
  p.ack_wait = 2 * kSecond;
  h.make(p);
  h.publish(1);
  h.request("r", pull(10, 60 * kSecond));
  auto d = h.take_deliveries();
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(h.c->next_deadline(), h.now + 2 * kSecond);
  h.advance(2 * kSecond - 1);
  EXPECT_TRUE(h.take_deliveries().empty());
  h.advance(1);
  d = h.take_deliveries();
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].delivery_count, 2u);
  EXPECT_EQ(d[0].consumer_seq, 2u);
  EXPECT_EQ(d[0].stream_seq, 1u);
  h.advance(2 * kSecond);
  d = h.take_deliveries();
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].delivery_count, 3u);
  EXPECT_EQ(d[0].consumer_seq, 3u);
  EXPECT_EQ(h.info().num_redelivered, 1u);
  EXPECT_EQ(h.info().delivered, (sequence_pair{3, 1}));
}

// §12.4: backoff [500ms, 1s], max_deliver 3, two messages never acked.
TEST(Consumer, BackoffScheduleAndMaxDeliver) {
  harness h;
  auto p = explicit_params();
  p.backoff = {500 * kMilli, 1 * kSecond};
  p.ack_wait = p.backoff[0];
  p.max_deliver = 3;
  h.make(p);
  h.publish(2);
  const base::nanos t0 = h.now;
  h.request("r", pull(20, 4 * kSecond));
  ASSERT_EQ(h.take_deliveries().size(), 2u);
  std::vector<std::pair<base::nanos, delivery>> seen;
  std::vector<advisory> adv;
  std::vector<status_reply> st;
  for (int i = 0; i < 4000; ++i) {
    h.advance(kMilli);
    for (auto& d : h.take_deliveries()) seen.emplace_back(h.now - t0, d);
    for (auto& a : h.take_advisories()) adv.push_back(a);
    for (auto& s : h.take_statuses()) st.push_back(s);
  }
  ASSERT_EQ(seen.size(), 4u);  // the first two went out at t0, before the loop
  EXPECT_EQ(seen[0].first, 500 * kMilli);
  EXPECT_EQ(seen[0].second.consumer_seq, 3u);
  EXPECT_EQ(seen[0].second.delivery_count, 2u);
  EXPECT_EQ(seen[1].second.consumer_seq, 4u);
  EXPECT_EQ(seen[2].first, 1500 * kMilli);
  EXPECT_EQ(seen[2].second.consumer_seq, 5u);
  EXPECT_EQ(seen[2].second.delivery_count, 3u);
  EXPECT_EQ(seen[3].second.stream_seq, 2u);
  ASSERT_EQ(adv.size(), 2u);
  EXPECT_EQ(adv[0].kind, advisory_kind::max_deliveries);
  EXPECT_EQ(adv[0].stream_seq, 1u);
  EXPECT_EQ(adv[0].deliveries, 3u);
  EXPECT_EQ(adv[1].stream_seq, 2u);
  ASSERT_EQ(st.size(), 1u);
  EXPECT_EQ(st[0].code, 408);
  EXPECT_EQ(st[0].pending_msgs, 14);
  EXPECT_EQ(st[0].pending_bytes, 0);
  auto n = h.info();
  EXPECT_EQ(n.num_ack_pending, 0u);
  EXPECT_EQ(n.ack_floor, (sequence_pair{6, 2}));  // newest: floor moves past
  EXPECT_EQ(n.num_redelivered, 2u);
  // Kept for inspection (interest/work-queue streams keep it) until acked or termed.
  EXPECT_TRUE(h.c->needs(1));
  EXPECT_TRUE(h.take_released().empty());
  h.ack_seq(1, "+ACK");
  EXPECT_EQ(h.take_released(), (std::vector<std::uint64_t>{1}));
  EXPECT_FALSE(h.c->needs(1));
  h.ack_seq(2, "+TERM");
  EXPECT_EQ(h.take_released(), (std::vector<std::uint64_t>{2}));
  EXPECT_EQ(h.info().num_redelivered, 0u);
}

TEST(Consumer, NakDelayUsesBackoffStep) {
  harness h;
  auto p = explicit_params();
  p.backoff = {1 * kSecond, 5 * kSecond};
  p.ack_wait = p.backoff[0];
  h.make(p);
  h.publish(1);
  h.request("r", pull(1));
  auto d = h.take_deliveries();
  h.ack(d[0], "-NAK 2s");
  EXPECT_EQ(h.c->next_deadline(), h.now + 2 * kSecond);  // first step == ack_wait
  h.request("r2", pull(1, 60 * kSecond));
  h.advance(2 * kSecond);
  d = h.take_deliveries();
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].delivery_count, 2u);
  // Now on the second backoff step: delay + (5s - 1s).
  h.ack(d[0], "-NAK {\"delay\":2000000000}");
  EXPECT_EQ(h.c->next_deadline(), h.now + 6 * kSecond);
  auto adv = h.take_advisories();
  ASSERT_EQ(adv.size(), 2u);
  EXPECT_EQ(adv[1].kind, advisory_kind::nak);
  EXPECT_EQ(adv[1].deliveries, 2u);
}

TEST(Consumer, WpiRestartsTheTimer) {
  harness h;
  auto p = explicit_params();
  p.ack_wait = 10 * kSecond;
  h.make(p);
  h.publish(1);
  h.request("r", pull(5, 60 * kSecond));
  auto d = h.take_deliveries();
  h.advance(8 * kSecond);
  EXPECT_TRUE(h.ack(d[0], "+WPI"));
  h.advance(2 * kSecond);
  EXPECT_TRUE(h.take_deliveries().empty());
  h.advance(7 * kSecond);
  EXPECT_TRUE(h.ack(d[0], "+WPI"));  // may repeat
  h.advance(9 * kSecond);
  EXPECT_TRUE(h.take_deliveries().empty());
  h.advance(1 * kSecond);
  d = h.take_deliveries();
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].delivery_count, 2u);  // WPI is not a delivery
}

TEST(Consumer, TermStopsRedelivery) {
  harness h;
  auto p = explicit_params();
  p.ack_wait = 1 * kSecond;
  h.make(p);
  h.publish(2);
  h.request("r", pull(5, 60 * kSecond));
  auto d = h.take_deliveries();
  h.take_released();
  EXPECT_TRUE(h.ack(d[0], "+TERM"));
  EXPECT_EQ(h.take_released(), (std::vector<std::uint64_t>{1}));
  EXPECT_EQ(h.info().ack_floor, (sequence_pair{1, 1}));
  h.advance(1 * kSecond);
  d = h.take_deliveries();
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].stream_seq, 2u);
  EXPECT_EQ(h.take_advisories()[0].reason, "");
}

TEST(Consumer, MaxAckPendingBlocksNewButNotRedeliveries) {
  harness h;
  auto p = explicit_params();
  p.max_ack_pending = 2;
  p.ack_wait = 5 * kSecond;
  h.make(p);
  h.publish(5);
  h.request("r", pull(10, 60 * kSecond));
  auto d = h.take_deliveries();
  ASSERT_EQ(d.size(), 2u);
  EXPECT_EQ(h.info().num_pending, 3u);
  h.advance(5 * kSecond);
  d = h.take_deliveries();
  ASSERT_EQ(d.size(), 2u);  // redeliveries flow while full
  EXPECT_EQ(d[0].stream_seq, 1u);
  EXPECT_EQ(d[1].stream_seq, 2u);
  h.ack(d[0], "+ACK");
  d = h.take_deliveries();
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].stream_seq, 3u);
  // Raising the limit resumes.
  p.max_ack_pending = 10;
  h.c->update(p, h.now, h.out);
  EXPECT_EQ(h.take_deliveries().size(), 2u);
}

TEST(Consumer, AckSyncReplyRules) {
  harness h;
  h.make(explicit_params());
  h.publish(2);
  h.request("r", pull(1));
  auto d = h.take_deliveries();
  EXPECT_TRUE(h.ack(d[0], "bogus"));  // unknown body still answered
  delivery never = d[0];
  never.stream_seq = 2;  // not delivered yet
  EXPECT_FALSE(h.ack(never, "+ACK"));
  EXPECT_EQ(h.info().num_ack_pending, 1u);
  EXPECT_FALSE(h.ack(d[0], "+NXT"));  // acks, the caller pulls on the reply subject
  EXPECT_EQ(h.info().num_ack_pending, 0u);
}

TEST(Consumer, RemovedMessagesAreTerminated) {
  harness h;
  h.make(explicit_params());
  h.publish(3);
  h.request("r", pull(3));
  h.take_deliveries();
  h.store.msgs.erase(1);
  h.c->on_removed(1, h.now, h.out);
  auto adv = h.take_advisories();
  ASSERT_EQ(adv.size(), 1u);
  EXPECT_EQ(adv[0].reason, "Unacknowledged message was deleted");
  EXPECT_EQ(h.info().ack_floor, (sequence_pair{1, 1}));
  // Deleted while queued for redelivery: terminated when it comes up.
  h.ack_seq(2, "-NAK");
  h.store.msgs.erase(2);
  h.request("r2", pull(1, kSecond));
  EXPECT_TRUE(h.take_deliveries().empty());
  EXPECT_EQ(h.info().num_ack_pending, 1u);
  EXPECT_EQ(h.info().ack_floor, (sequence_pair{2, 2}));
}

TEST(Consumer, InterestNeeds) {
  harness h;
  h.make(explicit_params());
  h.publish(3);
  h.request("r", pull(2));
  auto d = h.take_deliveries();
  EXPECT_TRUE(h.c->needs(1));
  EXPECT_TRUE(h.c->needs(3));  // not yet delivered
  h.ack(d[1], "");
  EXPECT_FALSE(h.c->needs(2));
  EXPECT_TRUE(h.c->needs(1));
  h.ack(d[0], "");
  EXPECT_FALSE(h.c->needs(1));
}

TEST(Consumer, SnapshotRestoreResumesExactly) {
  harness a;
  auto p = explicit_params();
  p.ack_wait = 10 * kSecond;
  p.max_deliver = 5;
  a.make(p);
  a.publish(6);
  a.request("r", pull(4));
  auto d = a.take_deliveries();
  a.ack(d[0], "");
  a.ack(d[2], "");
  a.ack(d[1], "-NAK");
  a.request("r", pull(1));  // redelivers 2
  ASSERT_EQ(a.take_deliveries().size(), 1u);
  a.advance(4 * kSecond);
  auto snap = a.c->snapshot();
  EXPECT_EQ(snap.delivered, (sequence_pair{5, 4}));
  EXPECT_EQ(snap.ack_floor, (sequence_pair{1, 1}));
  ASSERT_EQ(snap.pending.size(), 2u);
  EXPECT_EQ(snap.redelivered.size(), 1u);

  // "Restart": a fresh machine over the same store.
  harness b;
  b.store = a.store;
  b.now = a.now;
  b.make(p);
  b.c->restore(snap, b.now);
  EXPECT_EQ(b.c->snapshot(), snap);
  auto na = a.info();
  auto nb = b.info();
  EXPECT_EQ(nb.delivered, na.delivered);
  EXPECT_EQ(nb.ack_floor, na.ack_floor);
  EXPECT_EQ(nb.num_ack_pending, na.num_ack_pending);
  EXPECT_EQ(nb.num_redelivered, na.num_redelivered);
  EXPECT_EQ(nb.num_pending, na.num_pending);
  EXPECT_EQ(b.c->next_deadline(), a.c->next_deadline());
  // Both continue identically: new messages first, then redeliveries at the same times.
  a.request("q", pull(10, 30 * kSecond));
  b.request("q", pull(10, 30 * kSecond));
  a.advance(20 * kSecond);
  b.advance(20 * kSecond);
  auto da = a.take_deliveries();
  auto db = b.take_deliveries();
  ASSERT_EQ(da.size(), db.size());
  for (std::size_t i = 0; i < da.size(); ++i) {
    EXPECT_EQ(da[i].stream_seq, db[i].stream_seq);
    EXPECT_EQ(da[i].consumer_seq, db[i].consumer_seq);
    EXPECT_EQ(da[i].delivery_count, db[i].delivery_count);
  }
  EXPECT_EQ(a.c->snapshot(), b.c->snapshot());
}

TEST(Consumer, UpdateRearmsAckWait) {
  harness h;
  auto p = explicit_params();
  p.ack_wait = 30 * kSecond;
  h.make(p);
  h.publish(1);
  h.request("r", pull(5, 60 * kSecond));
  ASSERT_EQ(h.take_deliveries().size(), 1u);
  h.advance(2 * kSecond);
  p.ack_wait = 5 * kSecond;
  h.c->update(p, h.now, h.out);
  EXPECT_EQ(h.c->next_deadline(), h.now + 3 * kSecond);  // measured from the delivery
  h.advance(3 * kSecond);
  EXPECT_EQ(h.take_deliveries().size(), 1u);
}

TEST(Consumer, AckAllWithNakAndTerm) {
  harness h;
  auto p = explicit_params();
  p.ack = ack_policy::all;
  h.make(p);
  h.publish(4);
  h.request("r", pull(4));
  auto d = h.take_deliveries();
  h.ack(d[1], "-NAK");  // per-message NAK still works under ack all
  h.request("r2", pull(1));
  auto r = h.take_deliveries();
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].stream_seq, 2u);
  h.ack(d[3], "+TERM");
  EXPECT_EQ(h.take_released(), (std::vector<std::uint64_t>{4}));
  h.ack(r[0], "+ACK");  // acks 1 and 2 (the redelivered one)
  EXPECT_EQ(h.take_released(), (std::vector<std::uint64_t>{1, 2}));
  EXPECT_EQ(h.info().ack_floor.stream_seq, 2u);
  EXPECT_EQ(h.info().num_ack_pending, 1u);
}

TEST(Consumer, HeadersOnlyAndPinHeaderSizes) {
  harness h;
  auto p = explicit_params();
  p.headers_only = true;
  h.make(p);
  h.publish(1);  // subject "s.a", 10-byte payload, no headers
  h.request("r", pull(1));
  auto d = h.take_deliveries();
  ASSERT_EQ(d.size(), 1u);
  const std::size_t hdr = std::string("NATS/1.0\r\nNats-Msg-Size: 10\r\n\r\n").size();
  EXPECT_EQ(d[0].size, 3 + hdr + encode_ack_subject("S", "C", 1, 1, 1, h.store.msgs[1].ts, 0).size());
}

TEST(Consumer, DropRequestsOnLostInterest) {
  harness h;
  h.make(explicit_params());
  h.request("gone", pull(5, 60 * kSecond));
  h.request("here", pull(5, 60 * kSecond));
  h.c->drop_requests("gone");
  EXPECT_EQ(h.info().num_waiting, 1u);
  h.publish(2);
  for (const auto& d : h.take_deliveries()) EXPECT_EQ(d.to, "here");
  EXPECT_TRUE(h.take_statuses().empty());  // dropped silently
}

TEST(Consumer, InactiveThreshold) {
  harness h;
  auto p = explicit_params();
  p.inactive_threshold = 5 * kSecond;
  h.make(p);
  h.request("r", pull(1, 3 * kSecond));
  h.advance(4 * kSecond);
  EXPECT_TRUE(only<inactive>(h.out).empty());  // 5s after the last pull, none waiting
  h.advance(1 * kSecond);
  EXPECT_EQ(only<inactive>(h.out).size(), 1u);
}

}  // namespace
}  // namespace js::test

namespace js::test {

// sample_freq: explicit acks produce ack metrics at the configured rate (the roll is
// injected), with the time from delivery to ack; ack-all and naks produce none.
TEST(Consumer, AckMetricsFollowSampleFreq) {
  harness h;
  auto p = explicit_params();
  p.sample_pct = 50;
  std::vector<int> rolls{70, 20, 50};  // above the rate: no metric; at or below: metric
  std::size_t next = 0;
  p.sample_roll = [&] { return rolls[next++ % rolls.size()]; };
  h.make(p);
  h.publish(4);
  h.request("r", pull(4));
  auto d = h.take_deliveries();
  ASSERT_EQ(d.size(), 4u);
  h.now += 3 * kSecond;
  EXPECT_TRUE(h.ack(d[0], "+ACK"));  // roll 70
  EXPECT_TRUE(h.take_advisories().empty());
  EXPECT_TRUE(h.ack(d[1], "+ACK"));  // roll 20
  auto a = h.take_advisories();
  ASSERT_EQ(a.size(), 1u);
  EXPECT_EQ(a[0].kind, advisory_kind::ack_metric);
  EXPECT_EQ(a[0].stream_seq, 2u);
  EXPECT_EQ(a[0].consumer_seq, 2u);
  EXPECT_EQ(a[0].deliveries, 1u);
  EXPECT_EQ(a[0].ack_time, 3 * kSecond);
  h.ack(d[2], "-NAK");  // a nak is no ack: its own advisory, no roll
  a = h.take_advisories();
  ASSERT_EQ(a.size(), 1u);
  EXPECT_EQ(a[0].kind, advisory_kind::nak);
  EXPECT_TRUE(h.ack(d[3], "+ACK"));  // roll 50 (== rate)
  a = h.take_advisories();
  ASSERT_EQ(a.size(), 1u);
  EXPECT_EQ(a[0].stream_seq, 4u);
  EXPECT_EQ(next, 3u);
}

TEST(Consumer, AckMetricsAtHundredPercentAndNotForAckAll) {
  for (auto policy : {ack_policy::explicit_, ack_policy::all}) {
    harness h;
    auto p = explicit_params();
    p.ack = policy;
    p.sample_pct = 100;  // no roll needed
    h.make(p);
    h.publish(3);
    h.request("r", pull(3));
    auto d = h.take_deliveries();
    ASSERT_EQ(d.size(), 3u);
    for (const auto& x : d) h.ack(x, "+ACK");
    const auto a = h.take_advisories();
    EXPECT_EQ(a.size(), policy == ack_policy::explicit_ ? 3u : 0u);
  }
}

}  // namespace js::test

namespace js::test {

// A purge (nats-server's consumer purge): pending messages it took leave without advisories,
// delivery skips to the new first sequence and the floors follow.
TEST(Consumer, PurgeMovesDeliveryAndFloors) {
  harness h;
  h.make(explicit_params());
  h.publish(10);
  h.request("r", pull(4));
  auto d = h.take_deliveries();
  ASSERT_EQ(d.size(), 4u);
  h.take_released();
  EXPECT_TRUE(h.ack(d[0], "+ACK"));
  h.take_released();
  // Purge below 3: seq 2 goes; 3 and 4 stay pending.
  h.c->on_purged(3, {2}, h.now, h.out);
  EXPECT_TRUE(h.take_advisories().empty());
  auto n = h.info();
  EXPECT_EQ(n.ack_floor, (sequence_pair{2, 2}));
  EXPECT_EQ(n.num_ack_pending, 2u);
  EXPECT_EQ(n.delivered, (sequence_pair{4, 4}));
  // Purge everything (stream now starts at 11): delivered and floors jump to 10.
  h.c->on_purged(11, {3, 4}, h.now, h.out);
  n = h.info();
  EXPECT_EQ(n.delivered, (sequence_pair{4, 10}));
  EXPECT_EQ(n.ack_floor, (sequence_pair{4, 10}));
  EXPECT_EQ(n.num_ack_pending, 0u);
  EXPECT_TRUE(h.take_advisories().empty());
  // The next message is delivered as consumer seq 5.
  h.publish(1);
  h.request("r", pull(1));
  d = h.take_deliveries();
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].stream_seq, 11u);
  EXPECT_EQ(d[0].consumer_seq, 5u);
}

}  // namespace js::test
