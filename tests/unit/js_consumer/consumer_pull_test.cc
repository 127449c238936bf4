// Pull requests: waiting queue, statuses with their exact bytes, heartbeats, priority
// groups, pause.
#include "tests/unit/js_consumer/fixture.h"

namespace js::test {
namespace {

using base::kMilli;
using base::kSecond;

pull_request nowait(std::int64_t batch, base::nanos expires = 0) {
  auto r = pull(batch, expires);
  r.no_wait = true;
  return r;
}

TEST(Pull, BatchAndRoundRobinAcrossRequests) {
  harness h;
  h.make(explicit_params());
  h.request("w1", pull(2, 10 * kSecond));
  h.request("w2", pull(2, 10 * kSecond));
  h.request("w3", pull(2, 10 * kSecond));
  EXPECT_EQ(h.info().num_waiting, 3u);
  h.publish(7);
  auto d = h.take_deliveries();
  ASSERT_EQ(d.size(), 6u);
  const char* order[] = {"w1", "w2", "w3", "w1", "w2", "w3"};
  for (std::size_t i = 0; i < 6; ++i) {
    EXPECT_EQ(d[i].to, order[i]);
    EXPECT_EQ(d[i].stream_seq, i + 1);
  }
  EXPECT_EQ(h.info().num_waiting, 0u);
  EXPECT_TRUE(h.take_statuses().empty());  // batches end silently
  EXPECT_EQ(h.info().num_pending, 1u);
}

TEST(Pull, ExpiryIs408WithPendingHeaders) {
  harness h;
  h.make(explicit_params());
  h.publish(1);
  h.request("_INBOX.p", pull(5, 2 * kSecond));
  EXPECT_EQ(h.take_deliveries().size(), 1u);
  h.advance(2 * kSecond - 1);
  EXPECT_TRUE(h.take_statuses().empty());
  h.advance(1);
  auto s = h.take_statuses();
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s[0].to, "_INBOX.p");
  EXPECT_EQ(s[0].render(),
            "NATS/1.0 408 Request Timeout\r\nNats-Pending-Messages: 4\r\nNats-Pending-Bytes: 0\r\n\r\n");
  EXPECT_EQ(h.info().num_waiting, 0u);
}

TEST(Pull, NoWait) {
  harness h;
  auto p = explicit_params();
  p.max_ack_pending = 1;
  h.make(p);
  h.request("a", nowait(5));
  auto s = h.take_statuses();
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s[0].render(), "NATS/1.0 404 No Messages\r\n\r\n");
  EXPECT_EQ(s[0].render().size(), 28u);  // §5.2 bytes
  // One message for a batch of 5: the message, then 408 with 4 pending (2.9–2.12).
  h.publish(1);
  h.request("b", nowait(5));
  EXPECT_EQ(h.take_deliveries().size(), 1u);
  s = h.take_statuses();
  ASSERT_EQ(s.size(), 0u);  // blocked by max_ack_pending: waits
  h.ack_seq(1, "+ACK");
  s = h.take_statuses();
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s[0].to, "b");
  EXPECT_EQ(s[0].code, 408);
  EXPECT_EQ(s[0].pending_msgs, 4);
  // Requests Pending: 4 available but 10 already asked for by waiting requests.
  h.publish(5);
  h.request("c", pull(10, 10 * kSecond));
  EXPECT_EQ(h.take_deliveries().size(), 1u);
  h.request("d", nowait(1));
  s = h.take_statuses();
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s[0].render(), "NATS/1.0 408 Requests Pending\r\n\r\n");
  // no_wait with expires and nothing to give waits for the first message, then 408.
  harness e;
  e.make(explicit_params());
  e.request("x", nowait(3, kSecond));
  EXPECT_TRUE(e.take_statuses().empty());
  e.advance(kSecond);
  s = e.take_statuses();
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s[0].code, 408);
  EXPECT_EQ(s[0].pending_msgs, 3);
}

TEST(Pull, MaxBytes) {
  harness h;
  h.make(explicit_params());
  for (int i = 0; i < 4; ++i) h.store.add("p4.a", 100);
  h.c->on_stream_advanced(4, h.now, h.out);
  pull_request r = pull(3);
  r.max_bytes = 150;
  h.request("m1", r);
  auto d = h.take_deliveries();
  ASSERT_EQ(d.size(), 1u);
  const std::uint64_t size =
      4 + 100 + encode_ack_subject("S", "C", 1, 1, 1, h.store.msgs[1].ts, 3).size();
  EXPECT_EQ(d[0].size, size);
  auto s = h.take_statuses();
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s[0].render(), "NATS/1.0 409 Message Size Exceeds MaxBytes\r\nNats-Pending-Messages: 2\r\n"
                           "Nats-Pending-Bytes: " + std::to_string(150 - size) + "\r\n\r\n");
  r.max_bytes = 50;
  h.request("m2", r);
  EXPECT_TRUE(h.take_deliveries().empty());
  s = h.take_statuses();
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s[0].pending_msgs, 3);
  EXPECT_EQ(s[0].pending_bytes, 50);
  r = pull(1);
  r.max_bytes = 1000;
  h.request("m3", r);
  d = h.take_deliveries();
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].stream_seq, 2u);  // seq 2 stayed for the next request
  s = h.take_statuses();
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s[0].render(), "NATS/1.0 409 Batch Completed\r\nNats-Pending-Messages: 0\r\n"
                           "Nats-Pending-Bytes: " + std::to_string(1000 - d[0].size) + "\r\n\r\n");
  // A budget used up exactly ends silently.
  r = pull(5);
  r.max_bytes = std::int64_t(d[0].size);  // same-sized message next
  h.request("m4", r);
  EXPECT_EQ(h.take_deliveries().size(), 1u);
  EXPECT_TRUE(h.take_statuses().empty());
}

TEST(Pull, MaxWaiting) {
  harness h;
  auto p = explicit_params();
  p.max_waiting = 2;
  h.make(p);
  h.request("w0", pull(1, 2 * kSecond));
  h.request("w1", pull(1, 2 * kSecond));
  h.request("w2", pull(1, 2 * kSecond));
  auto s = h.take_statuses();
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s[0].to, "w2");
  EXPECT_EQ(s[0].render(), "NATS/1.0 409 Exceeded MaxWaiting\r\n\r\n");
  EXPECT_EQ(s[0].render().size(), 36u);
  EXPECT_EQ(h.info().num_waiting, 2u);
  h.advance(2 * kSecond);
  s = h.take_statuses();
  ASSERT_EQ(s.size(), 2u);
  EXPECT_EQ(s[0].code, 408);
  EXPECT_EQ(s[0].pending_msgs, 1);
  // Expired requests are pruned before the limit is checked.
  h.request("a", pull(1, kSecond));
  h.request("b", pull(1, kSecond));
  h.now += kSecond;  // no tick: both are expired but still queued
  h.request("c", pull(1, kSecond));
  s = h.take_statuses();
  ASSERT_EQ(s.size(), 2u);
  EXPECT_EQ(s[0].code, 408);
  EXPECT_EQ(h.info().num_waiting, 1u);
}

TEST(Pull, RequestLimits) {
  harness h;
  auto p = explicit_params();
  p.max_batch = 3;
  p.max_expires = 2 * kSecond;
  p.max_bytes = 1000;
  h.make(p);
  h.request("p1", pull(4));
  pull_request r = pull(1, 3 * kSecond);
  h.request("p2", r);
  r = pull(1);
  r.max_bytes = 1001;
  h.request("p3", r);
  auto s = h.take_statuses();
  ASSERT_EQ(s.size(), 3u);
  EXPECT_EQ(s[0].render(), "NATS/1.0 409 Exceeded MaxRequestBatch of 3\r\n\r\n");
  EXPECT_EQ(s[0].render().size(), 46u);
  EXPECT_EQ(s[1].render(), "NATS/1.0 409 Exceeded MaxRequestExpires of 2s\r\n\r\n");
  EXPECT_EQ(s[1].render().size(), 49u);
  EXPECT_EQ(s[2].render(), "NATS/1.0 409 Exceeded MaxRequestMaxBytes of 1000\r\n\r\n");
  EXPECT_EQ(s[2].render().size(), 52u);
  EXPECT_EQ(h.info().num_waiting, 0u);
}

// §12.4: expires 3.5s, heartbeat 1s, empty consumer.
TEST(Pull, IdleHeartbeats) {
  harness h;
  h.make(explicit_params());
  pull_request r = pull(1, 3500 * kMilli);
  r.idle_heartbeat = kSecond;
  h.request("_INBOX.p.hb", r);
  std::vector<std::pair<base::nanos, status_reply>> seen;
  const base::nanos t0 = h.now;
  for (int i = 0; i < 40; ++i) {
    h.advance(100 * kMilli);
    for (auto& s : h.take_statuses()) seen.emplace_back(h.now - t0, s);
  }
  ASSERT_EQ(seen.size(), 4u);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(seen[i].first, (i + 1) * kSecond);
    EXPECT_EQ(seen[i].second.render(),
              "NATS/1.0 100 Idle Heartbeat\r\nNats-Last-Consumer: 0\r\nNats-Last-Stream: 0\r\n\r\n");
    EXPECT_EQ(seen[i].second.render().size(), 75u);
  }
  EXPECT_EQ(seen[3].first, 3500 * kMilli);
  EXPECT_EQ(seen[3].second.render().size(), 81u);
  EXPECT_EQ(seen[3].second.pending_msgs, 1);
  // A message resets the heartbeat timer; Last-* report the last delivered pair.
  r = pull(5, 10 * kSecond);
  r.idle_heartbeat = kSecond;
  h.request("q", r);
  h.advance(600 * kMilli);
  h.publish(1);
  h.advance(900 * kMilli);
  EXPECT_TRUE(h.take_statuses().empty());
  h.advance(100 * kMilli);
  auto s = h.take_statuses();
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s[0].last_consumer, 1u);
  EXPECT_EQ(s[0].last_stream, 1u);
}

TEST(Pull, ManyWorkersGetDistinctMessages) {
  harness h;
  auto p = explicit_params();
  h.make(p);
  h.publish(100);
  std::set<std::uint64_t> got;
  for (int w = 0; w < 30; ++w) h.request("w" + std::to_string(w), pull(3, 10 * kSecond));
  h.publish(20);
  for (const auto& d : h.take_deliveries()) EXPECT_TRUE(got.insert(d.stream_seq).second);
  EXPECT_EQ(got.size(), 90u);
  EXPECT_EQ(h.info().num_pending, 30u);
}

TEST(Pull, ReplayOriginalPacesByStoredTimes) {
  harness h;
  auto p = explicit_params();
  p.replay_original = true;
  h.make(p);
  for (int i = 0; i < 3; ++i) h.store.add("s.a");
  h.store.msgs[2].ts = h.store.msgs[1].ts + 1 * kSecond;
  h.store.msgs[3].ts = h.store.msgs[1].ts + 4 * kSecond;
  h.c->on_stream_advanced(3, h.now, h.out);
  h.request("r", pull(10, 30 * kSecond));
  EXPECT_EQ(h.take_deliveries().size(), 1u);
  EXPECT_EQ(h.c->next_deadline(), h.now + kSecond);
  h.advance(kSecond - 1);
  EXPECT_TRUE(h.take_deliveries().empty());
  h.advance(1);
  EXPECT_EQ(h.take_deliveries().size(), 1u);
  h.advance(3 * kSecond);
  auto d = h.take_deliveries();
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].stream_seq, 3u);
}

TEST(Pull, ConsumerDeleted) {
  harness h;
  h.make(explicit_params());
  h.request("_INBOX.p.8", pull(3, 2 * kSecond));
  h.c->on_delete(h.out);
  auto s = h.take_statuses();
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s[0].render(), "NATS/1.0 409 Consumer Deleted\r\n\r\n");
  EXPECT_EQ(s[0].render().size(), 33u);
}

TEST(Pull, ServerShutdown) {
  harness h;
  h.make(explicit_params());
  h.request("p", pull(3, 2 * kSecond));
  h.c->on_shutdown(h.out);
  auto s = h.take_statuses();
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s[0].render(),
            "NATS/1.0 409 Server Shutdown\r\nNats-Pending-Messages: 3\r\nNats-Pending-Bytes: 0\r\n\r\n");
}

consumer_params grouped(priority_policy pol) {
  auto p = explicit_params();
  p.priority = pol;
  p.priority_groups = {"jobs"};
  if (pol == priority_policy::pinned_client) p.priority_timeout = 120 * kSecond;
  return p;
}

pull_request in_group(std::int64_t batch, base::nanos expires) {
  auto r = pull(batch, expires);
  r.group = "jobs";
  return r;
}

TEST(Priority, RequestValidation) {
  harness h;
  h.make(grouped(priority_policy::overflow));
  h.request("a", pull(1));
  auto r = pull(1);
  r.group = "other";
  h.request("b", r);
  r = in_group(1, 0);
  r.id = "x";
  h.request("c", r);
  auto s = h.take_statuses();
  ASSERT_EQ(s.size(), 3u);
  EXPECT_EQ(s[0].render(), "NATS/1.0 400 Bad Request - Priority Group missing\r\n\r\n");
  EXPECT_EQ(s[1].description, "Bad Request - Invalid Priority Group");
  EXPECT_EQ(s[2].description, "Bad Request - Not a Pinned Client Priority consumer");
  harness n;
  n.make(explicit_params());
  r = pull(1);
  r.min_pending = 3;
  n.request("d", r);
  s = n.take_statuses();
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s[0].description, "Bad Request - Not a Overflow Priority consumer");
}

TEST(Priority, OverflowMinPending) {
  harness h;
  h.make(grouped(priority_policy::overflow));
  h.publish(3);
  auto r = in_group(10, 60 * kSecond);
  r.min_pending = 5;
  h.request("over", r);
  EXPECT_TRUE(h.take_deliveries().empty());  // backlog 3 < 5: skipped, stays queued
  EXPECT_EQ(h.info().num_waiting, 1u);
  h.publish(3);
  auto d = h.take_deliveries();
  ASSERT_EQ(d.size(), 2u);  // backlog counted with the message: 6, 5 ... then 4 < 5
  // A request without thresholds is always served.
  h.request("main", in_group(10, 60 * kSecond));
  d = h.take_deliveries();
  EXPECT_EQ(d.size(), 4u);
  for (const auto& x : d) EXPECT_EQ(x.to, "main");
}

TEST(Priority, OverflowMinAckPending) {
  harness h;
  h.make(grouped(priority_policy::overflow));
  h.publish(5);
  auto r = in_group(10, 60 * kSecond);
  r.min_ack_pending = 2;
  h.request("over", r);
  EXPECT_TRUE(h.take_deliveries().empty());
  h.request("main", in_group(2, 60 * kSecond));
  auto d = h.take_deliveries();
  // main takes 1, 2 (round robin puts "over" first once it is eligible: 2 unacked).
  ASSERT_EQ(d.size(), 5u);
  EXPECT_EQ(d[0].to, "main");
  EXPECT_EQ(d[1].to, "main");
  EXPECT_EQ(d[2].to, "over");
  h.ack(d[0], "");
  h.ack(d[1], "");
  h.ack(d[2], "");
  h.ack(d[3], "");
  h.ack(d[4], "");
  h.publish(1);
  EXPECT_TRUE(h.take_deliveries().empty());  // 0 unacked < 2
}

TEST(Priority, PinnedClient) {
  harness h;
  int n = 0;
  auto p = grouped(priority_policy::pinned_client);
  p.new_pin_id = [&n] { return "PIN" + std::to_string(++n); };
  p.ack_wait = 3600 * kSecond;  // no redeliveries in this test
  h.make(p);
  h.request("A", in_group(1, 300 * kSecond));
  h.request("B", in_group(5, 300 * kSecond));
  h.publish(3);
  auto adv = h.take_advisories();
  ASSERT_EQ(adv.size(), 1u);
  EXPECT_EQ(adv[0].kind, advisory_kind::pinned);
  EXPECT_EQ(adv[0].pin_id, "PIN1");
  EXPECT_EQ(adv[0].group, "jobs");
  auto d = h.take_deliveries();
  ASSERT_EQ(d.size(), 1u);  // B is standby while A holds the pin
  EXPECT_EQ(d[0].to, "A");
  EXPECT_EQ(d[0].pin_id, "PIN1");
  EXPECT_EQ(h.info().pinned_id, "PIN1");
  // The pinned client pulls again with its id.
  auto r = in_group(5, 300 * kSecond);
  r.id = "PIN1";
  h.request("A2", r);
  d = h.take_deliveries();
  ASSERT_EQ(d.size(), 2u);
  EXPECT_EQ(d[1].to, "A2");
  // A different id while pinned: 423 at once.
  r.id = "OLD";
  h.request("C", r);
  auto s = h.take_statuses();
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s[0].render(), "NATS/1.0 423 Nats-Pin-Id mismatch\r\n\r\n");
  // A2 keeps pulling every minute; the pin stays.
  for (int i = 0; i < 3; ++i) {
    h.advance(60 * kSecond);
    r.id = "PIN1";
    h.request("A3", r);
  }
  EXPECT_TRUE(h.take_advisories().empty());
  // Silence for priority_timeout: unpinned, B (standby) gets pinned on the next message;
  // A's queued request with the stale id gets 423 Nats-Wrong-Pin-Id.
  h.advance(120 * kSecond);
  adv = h.take_advisories();
  ASSERT_EQ(adv.size(), 1u);
  EXPECT_EQ(adv[0].kind, advisory_kind::unpinned);
  EXPECT_EQ(adv[0].reason, "timeout");
  h.take_statuses();
  h.request("B2", in_group(5, 300 * kSecond));
  r.id = "PIN1";
  h.publish(1);
  d = h.take_deliveries();
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].pin_id, "PIN2");
  adv = h.take_advisories();
  ASSERT_EQ(adv.size(), 1u);
  EXPECT_EQ(adv[0].pin_id, "PIN2");
  s = h.take_statuses();
  ASSERT_EQ(s.size(), 3u);  // the three A3 requests still queued with PIN1
  for (const auto& x : s) {
    EXPECT_EQ(x.to, "A3");
    EXPECT_EQ(x.render(), "NATS/1.0 423 Nats-Wrong-Pin-Id\r\nNats-Pending-Messages: 5\r\n"
                          "Nats-Pending-Bytes: 0\r\n\r\n");
  }
  // Admin unpin.
  EXPECT_FALSE(h.c->unpin("other", h.now, h.out));
  EXPECT_TRUE(h.c->unpin("jobs", h.now, h.out));
  adv = h.take_advisories();
  ASSERT_EQ(adv.size(), 1u);
  EXPECT_EQ(adv[0].reason, "admin");
  EXPECT_EQ(h.info().pinned_id, "");
}

TEST(Priority, PinnedRequestTakesItsWholeBatch) {
  harness h;
  h.make(grouped(priority_policy::pinned_client));
  h.request("A", in_group(3, 60 * kSecond));
  h.request("B", in_group(3, 60 * kSecond));
  h.publish(5);
  auto d = h.take_deliveries();
  ASSERT_EQ(d.size(), 3u);
  for (const auto& x : d) {
    EXPECT_EQ(x.to, "A");
    EXPECT_EQ(x.pin_id, d[0].pin_id);
  }
  EXPECT_EQ(h.info().num_waiting, 1u);  // B on standby
  // max_bytes refusing the first message leaves nobody pinned and no advisory.
  harness m;
  m.make(grouped(priority_policy::pinned_client));
  auto r = in_group(3, 60 * kSecond);
  r.max_bytes = 10;
  m.request("small", r);
  m.publish(1);
  EXPECT_TRUE(m.take_advisories().empty());
  EXPECT_EQ(m.take_statuses()[0].description, "Message Size Exceeds MaxBytes");
  EXPECT_EQ(m.info().pinned_id, "");
}

TEST(Priority, Prioritized) {
  harness h;
  h.make(grouped(priority_policy::prioritized));
  auto low = in_group(2, 60 * kSecond);
  low.priority = 5;
  auto high = in_group(2, 60 * kSecond);
  high.priority = 1;
  auto high2 = high;
  h.request("low", low);
  h.request("high", high);
  h.request("high2", high2);
  h.publish(5);
  auto d = h.take_deliveries();
  ASSERT_EQ(d.size(), 5u);
  const char* order[] = {"high", "high2", "high", "high2", "low"};
  for (int i = 0; i < 5; ++i) EXPECT_EQ(d[i].to, order[i]);
}

TEST(Pause, NoDeliveriesButHeartbeatsAndExpiry) {
  harness h;
  auto p = explicit_params();
  p.ack_wait = 2 * kSecond;
  h.make(p);
  h.publish(2);
  h.request("r0", pull(1));
  auto d0 = h.take_deliveries();
  h.c->set_pause(h.now + 10 * kSecond, h.now, h.out);
  auto adv = h.take_advisories();
  ASSERT_EQ(adv.size(), 1u);
  EXPECT_TRUE(adv[0].paused);
  EXPECT_TRUE(h.info().paused);
  EXPECT_EQ(h.info().pause_remaining, 10 * kSecond);
  pull_request r = pull(5, 5 * kSecond);
  r.idle_heartbeat = kSecond;
  h.request("r1", r);
  h.advance(5 * kSecond);
  EXPECT_TRUE(h.take_deliveries().empty());  // not even the ack-wait redelivery
  auto s = h.take_statuses();
  ASSERT_EQ(s.size(), 5u);
  EXPECT_EQ(s[3].code, 100);
  EXPECT_EQ(s[4].code, 408);
  EXPECT_EQ(s[4].pending_msgs, 5);
  EXPECT_EQ(h.c->redelivery_queue().size(), 1u);  // expiry queued for later
  h.ack(d0[0], "+ACK");                            // acks still processed
  EXPECT_EQ(h.info().num_ack_pending, 0u);
  h.request("r2", pull(5, 20 * kSecond));
  h.advance(5 * kSecond - 1);
  EXPECT_TRUE(h.take_deliveries().empty());
  h.advance(1);
  adv = h.take_advisories();
  ASSERT_EQ(adv.size(), 1u);
  EXPECT_FALSE(adv[0].paused);
  auto d = h.take_deliveries();
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].stream_seq, 2u);
  EXPECT_FALSE(h.info().paused);
}

TEST(Pause, ResumeViaApi) {
  harness h;
  h.make(explicit_params());
  h.c->set_pause(h.now + 60 * kSecond, h.now, h.out);
  h.publish(1);
  h.request("r", pull(1, 30 * kSecond));
  EXPECT_TRUE(h.take_deliveries().empty());
  h.request("nw", nowait(1));  // nothing available while paused
  EXPECT_EQ(h.take_statuses()[0].code, 404);
  h.c->set_pause(0, h.now, h.out);
  EXPECT_EQ(h.take_deliveries().size(), 1u);
  EXPECT_EQ(h.take_advisories().size(), 2u);
}

}  // namespace
}  // namespace js::test
