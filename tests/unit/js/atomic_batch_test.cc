#include "src/js/atomic_batch.h"

#include <gtest/gtest.h>

namespace js {
namespace {

using kind = atomic_batch_table::outcome::kind;

batch_msg msg(std::string subject) { return batch_msg{std::move(subject), "", "x"}; }

TEST(atomic_batch, stages_then_commits_in_order) {
  atomic_batch_table t;
  EXPECT_EQ(t.add("B1", "1", std::nullopt, msg("a"), 0).what, kind::staged);
  EXPECT_EQ(t.add("B1", "2", std::nullopt, msg("b"), 1).what, kind::staged);
  auto c = t.add("B1", "3", "1", msg("c"), 2);
  ASSERT_EQ(c.what, kind::commit);
  ASSERT_EQ(c.msgs.size(), 3u);
  EXPECT_EQ(c.msgs[0].subject, "a");
  EXPECT_EQ(c.msgs[2].subject, "c");
  EXPECT_FALSE(c.eob);
  EXPECT_TRUE(t.empty());
}

// The table remembers the batch it staged last: interleaved batches, a gap, an expired or
// committed batch and a reused id must all behave as without that shortcut.
TEST(atomic_batch, the_last_batch_shortcut_changes_nothing) {
  atomic_batch_table t({.max_inflight = 4, .max_msgs = 4, .timeout_ns = 100});
  EXPECT_EQ(t.add("A", "1", std::nullopt, msg("a1"), 0).what, kind::staged);
  EXPECT_EQ(t.add("A", "2", std::nullopt, msg("a2"), 0).what, kind::staged);
  EXPECT_EQ(t.add("B", "1", std::nullopt, msg("b1"), 0).what, kind::staged);
  EXPECT_EQ(t.add("A", "3", std::nullopt, msg("a3"), 0).what, kind::staged);
  EXPECT_EQ(t.add("B", "2", std::nullopt, msg("b2"), 0).what, kind::staged);
  auto gap = t.add("B", "4", std::nullopt, msg("b4"), 0);  // B's last, then a gap
  EXPECT_EQ(gap.error->err_code, 10176);
  EXPECT_EQ(gap.abandoned, "incomplete");
  EXPECT_EQ(t.add("B", "3", std::nullopt, msg("b3"), 0).error->err_code, 10176) << "B is gone";
  EXPECT_EQ(t.add("A", "4", std::nullopt, msg("a4"), 0).what, kind::staged);
  EXPECT_EQ(t.add("A", "5", std::nullopt, msg("a5"), 0).error->err_code, 10199) << "over max_msgs";
  EXPECT_TRUE(t.empty());
  EXPECT_EQ(t.add("A", "1", std::nullopt, msg("again"), 50).what, kind::staged);  // the id reused
  EXPECT_EQ(t.expire(200), std::vector<std::string>{"A"});
  EXPECT_EQ(t.add("A", "2", std::nullopt, msg("late"), 200).error->err_code, 10176) << "expired";
  EXPECT_EQ(t.add("C", "1", std::nullopt, msg("c1"), 300).what, kind::staged);
  auto c = t.add("C", "2", "1", msg("c2"), 300);
  ASSERT_EQ(c.what, kind::commit);
  ASSERT_EQ(c.msgs.size(), 2u);
  EXPECT_EQ(c.msgs[0].subject, "c1");
  EXPECT_EQ(t.add("C", "3", std::nullopt, msg("c3"), 300).error->err_code, 10176) << "committed";
}

TEST(atomic_batch, eob_commits_without_the_marker) {
  atomic_batch_table t;
  t.add("B", "1", std::nullopt, msg("a"), 0);
  auto c = t.add("B", "2", "eob", msg("ignored"), 0);
  ASSERT_EQ(c.what, kind::commit);
  EXPECT_TRUE(c.eob);
  ASSERT_EQ(c.msgs.size(), 1u);
  EXPECT_EQ(t.add("C", "1", "eob", msg("a"), 0).error->err_code, 10176);  // eob on 1 is invalid
}

TEST(atomic_batch, errors_and_abandon_reasons) {
  atomic_batch_table t({.max_inflight = 2, .max_msgs = 3, .timeout_ns = 100});
  EXPECT_EQ(t.add("", "1", std::nullopt, msg("a"), 0).error->err_code, 10179);
  EXPECT_EQ(t.add(std::string(65, 'x'), "1", std::nullopt, msg("a"), 0).error->err_code, 10179);
  EXPECT_EQ(t.add("B", std::nullopt, std::nullopt, msg("a"), 0).error->err_code, 10175);
  EXPECT_EQ(t.add("B", "zero", std::nullopt, msg("a"), 0).error->err_code, 10175);
  EXPECT_EQ(t.add("B", "2", std::nullopt, msg("a"), 0).error->err_code, 10176);  // unknown batch
  EXPECT_EQ(t.add("B", "9", std::nullopt, msg("a"), 0).error->description, "atomic publish batch is too large: 3");
  // A gap drops the open batch with reason "incomplete".
  t.add("G", "1", std::nullopt, msg("a"), 0);
  auto gap = t.add("G", "3", std::nullopt, msg("a"), 0);
  EXPECT_EQ(gap.error->err_code, 10176);
  EXPECT_EQ(gap.abandoned, "incomplete");
  EXPECT_TRUE(t.empty());
  // Too large: reason "large".
  for (int i = 1; i <= 3; ++i) t.add("L", std::to_string(i), std::nullopt, msg("a"), 0);
  auto big = t.add("L", "4", std::nullopt, msg("a"), 0);
  EXPECT_EQ(big.error->err_code, 10199);
  EXPECT_EQ(big.abandoned, "large");
  // A bad commit value.
  t.add("V", "1", std::nullopt, msg("a"), 0);
  EXPECT_EQ(t.add("V", "2", "yes", msg("a"), 0).error->err_code, 10200);
  // In-flight limit, then the timeout frees them.
  t.add("X", "1", std::nullopt, msg("a"), 10);
  t.add("Y", "1", std::nullopt, msg("a"), 50);
  auto busy = t.add("Z", "1", std::nullopt, msg("a"), 60);
  EXPECT_EQ(busy.error->code, 429);
  EXPECT_EQ(busy.error->err_code, 10210);
  EXPECT_EQ(t.expire(120), std::vector<std::string>{"X"});
  EXPECT_EQ(t.add("Z", "1", std::nullopt, msg("a"), 130).what, kind::staged);
  // Activity resets the timer.
  EXPECT_EQ(t.add("Y", "2", std::nullopt, msg("a"), 140).what, kind::staged);
  EXPECT_TRUE(t.expire(200).empty());
}

}  // namespace
}  // namespace js
