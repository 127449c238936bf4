// The shard's backlog of a peer's ring: subscription changes past a turn's budget wait, a
// delivery waits behind them (order per peer), acks and sockets never wait, and a PONG gate
// sees only the deliveries held.
#include "src/core/inbox_backlog.h"

#include <gtest/gtest.h>

#include <limits>
#include <vector>

namespace core {
namespace {

using kind = shard_msg::kind;

shard_msg msg(kind k, std::string sid = {}) {
  shard_msg m;
  m.k = k;
  m.sid = std::move(sid);
  return m;
}

TEST(inbox_backlog, changes_wait_past_the_budget_and_deliveries_behind_them) {
  inbox_backlog b;
  EXPECT_FALSE(b.must_wait(kind::sub_add, true));
  EXPECT_FALSE(b.must_wait(kind::deliver, true));
  EXPECT_TRUE(b.must_wait(kind::sub_add, false));
  EXPECT_TRUE(b.must_wait(kind::sub_del, false));
  EXPECT_TRUE(b.must_wait(kind::conn_gone, false));
  EXPECT_FALSE(b.must_wait(kind::deliver, false));  // nothing ahead of it
  b.push(msg(kind::sub_add, "1"), 10);
  // Behind a held change everything ordered waits, budget or not.
  EXPECT_TRUE(b.must_wait(kind::sub_add, true));
  EXPECT_TRUE(b.must_wait(kind::deliver, true));
  EXPECT_FALSE(b.must_wait(kind::sub_ack, false));
  EXPECT_FALSE(b.must_wait(kind::new_conn, false));
  EXPECT_FALSE(b.holds_deliveries());
  EXPECT_EQ(b.first_delivery(), std::numeric_limits<std::uint64_t>::max());
  b.push(msg(kind::deliver, "d1"), 11);
  b.push(msg(kind::sub_del, "2"), 12);
  b.push(msg(kind::deliver, "d2"), 13);
  EXPECT_TRUE(b.holds_deliveries());
  EXPECT_EQ(b.first_delivery(), 11u);
  EXPECT_EQ(b.size(), 4u);
  // Out in the order taken; the oldest held delivery moves on as they leave.
  EXPECT_EQ(b.pop().sid, "1");
  EXPECT_EQ(b.first_delivery(), 11u);
  EXPECT_EQ(b.pop().sid, "d1");
  EXPECT_EQ(b.first_delivery(), 13u);
  EXPECT_EQ(b.front_kind(), kind::sub_del);
  EXPECT_EQ(b.pop().sid, "2");
  EXPECT_EQ(b.pop().sid, "d2");
  EXPECT_TRUE(b.empty());
  EXPECT_FALSE(b.holds_deliveries());
}

shard_msg delivery(std::string sid, std::vector<std::uint64_t> conns) {
  shard_msg m = msg(kind::deliver, std::move(sid));
  for (auto c : conns) m.targets.push_back({c, "s"});
  return m;
}

// A PONG gate asks for the deliveries to its own connection only: a reply to another client
// queued behind a big run of subscription changes does not hold it.
TEST(inbox_backlog, deliveries_are_tracked_per_connection) {
  inbox_backlog b;
  constexpr auto kNone = std::numeric_limits<std::uint64_t>::max();
  for (std::uint64_t i = 0; i < 1000; ++i) b.push(msg(kind::sub_add), i);
  b.push(delivery("to7", {7}), 1000);
  b.push(delivery("to7and9", {7, 9, 9}), 1001);  // a connection listed twice counts once
  b.push(msg(kind::sub_del), 1002);
  b.push(delivery("to9", {9}), 1003);
  EXPECT_EQ(b.first_delivery(), 1000u);
  EXPECT_FALSE(b.holds_deliveries_to(5));
  EXPECT_EQ(b.first_delivery_to(5), kNone);  // a client without messages held: its PONG goes
  EXPECT_TRUE(b.holds_deliveries_to(7));
  EXPECT_EQ(b.first_delivery_to(7), 1000u);
  EXPECT_EQ(b.first_delivery_to(9), 1001u);
  for (int i = 0; i < 1000; ++i) b.pop();
  EXPECT_EQ(b.pop().sid, "to7");
  EXPECT_EQ(b.first_delivery_to(7), 1001u);
  EXPECT_EQ(b.pop().sid, "to7and9");
  EXPECT_FALSE(b.holds_deliveries_to(7));
  EXPECT_EQ(b.first_delivery_to(9), 1003u);
  b.pop();
  EXPECT_EQ(b.pop().sid, "to9");
  EXPECT_FALSE(b.holds_deliveries_to(9));
  EXPECT_FALSE(b.holds_deliveries());
}

TEST(inbox_backlog, changes_alone_queue_without_bound_deliveries_hold_the_ring) {
  inbox_backlog b;
  for (std::size_t i = 0; i < 2 * inbox_backlog::kMaxWithDeliveries; ++i) b.push(msg(kind::sub_add), i);
  EXPECT_TRUE(b.accepting());  // changes only: the ring is emptied (they sat in the peer's overflow)
  b.push(msg(kind::deliver), 2 * inbox_backlog::kMaxWithDeliveries);
  EXPECT_FALSE(b.accepting());  // a delivery held behind a full queue: the ring's back-pressure holds
  while (b.size() >= inbox_backlog::kMaxWithDeliveries) b.pop();
  EXPECT_TRUE(b.accepting());
}

TEST(sub_slice, a_turn_applies_at_least_a_few_then_stops_at_its_time) {
  base::manual_clock clk(1000);
  sub_slice s;
  s.start(clk.monotonic_ns());
  clk.advance(sub_slice::kSliceNs * 10);  // the clock is only read every kCheckEvery changes
  for (std::size_t i = 0; i < sub_slice::kCheckEvery; ++i) {
    ASSERT_TRUE(s.fits(clk)) << i;
    s.spent();
  }
  EXPECT_FALSE(s.fits(clk));
  EXPECT_FALSE(s.fits(clk));
  // A new turn: its own budget.
  s.start(clk.monotonic_ns());
  std::size_t n = 0;
  while (s.fits(clk) && n < 10000) {
    s.spent();
    ++n;
    if (n == 100) clk.advance(sub_slice::kSliceNs);
  }
  EXPECT_EQ(n, 128u);  // the first clock read after the deadline, at a multiple of kCheckEvery
  EXPECT_EQ(s.applied(), 128u);
}

}  // namespace
}  // namespace core
