#include "src/js/ack_confirm.h"

#include <gtest/gtest.h>

namespace js {
namespace {

using strings = std::vector<std::string>;

TEST(held_ack_replies, a_burst_is_confirmed_by_one_snapshot) {
  held_ack_replies h;
  // Three acks before the next hand-over (generation 1).
  h.hold("r1", 1);
  h.hold("r2", 1);
  h.hold("r3", 1);
  EXPECT_TRUE(h.needs_snapshot(0));
  EXPECT_FALSE(h.needs_snapshot(1));  // handed over: now it waits for the write
  EXPECT_EQ(h.written(0), strings{});
  EXPECT_EQ(h.written(1), (strings{"r1", "r2", "r3"}));
  EXPECT_TRUE(h.empty());
}

TEST(held_ack_replies, acks_during_a_write_wait_for_the_next_snapshot) {
  held_ack_replies h;
  h.hold("a", 1);
  // Snapshot 1 is being written; this ack is not in it.
  h.hold("b", 2);
  EXPECT_TRUE(h.needs_snapshot(1));
  EXPECT_EQ(h.written(1), strings{"a"});
  EXPECT_EQ(h.size(), 1u);
  EXPECT_EQ(h.written(1), strings{});
  EXPECT_EQ(h.written(2), strings{"b"});
}

TEST(held_ack_replies, a_later_snapshot_covers_earlier_acks) {
  held_ack_replies h;
  h.hold("a", 1);
  h.hold("b", 3);
  EXPECT_EQ(h.written(5), (strings{"a", "b"}));
}

TEST(held_ack_replies, a_failed_write_moves_every_reply_to_the_next_snapshot) {
  held_ack_replies h;
  h.hold("a", 1);
  h.hold("b", 2);
  h.failed(2);  // snapshot 1 failed: nothing is confirmed until snapshot 2 is written
  EXPECT_TRUE(h.needs_snapshot(1));
  EXPECT_EQ(h.written(1), strings{});
  EXPECT_EQ(h.written(2), (strings{"a", "b"}));
}

TEST(held_ack_replies, take_all_ignores_generations) {
  held_ack_replies h;
  h.hold("a", 4);
  h.hold("b", 9);
  EXPECT_EQ(h.take_all(), (strings{"a", "b"}));
  EXPECT_TRUE(h.empty());
  EXPECT_FALSE(h.needs_snapshot(0));
}

}  // namespace
}  // namespace js
