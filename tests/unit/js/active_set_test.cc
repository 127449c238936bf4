// The owner's active set: woken members are polled once per wake, idle ones only at their
// deadline, and a deadline the poll could not act on comes back every turn until it moves.
#include "src/js/active_set.h"

#include <gtest/gtest.h>

#include <string>

namespace js {
namespace {

struct member final : active_member {
  std::string name;
};

std::vector<std::string> due(active_set<member>& s, std::int64_t now) {
  std::vector<std::string> out;
  for (member* m : s.take_due(now)) out.push_back(m->name);
  return out;
}

TEST(active_set, a_woken_member_is_polled_once_then_left_alone) {
  active_set<member> s;
  member a, b;
  a.name = "a", b.name = "b";
  s.add(a);
  s.add(b);
  EXPECT_EQ(due(s, 0), (std::vector<std::string>{"a", "b"}));  // new members poll once
  s.reschedule(a, false, active_member::kNever);
  s.reschedule(b, false, active_member::kNever);
  EXPECT_TRUE(due(s, 1).empty());
  s.wake(b);
  s.wake(b);  // queued once
  EXPECT_EQ(due(s, 2), (std::vector<std::string>{"b"}));
  s.reschedule(b, true, active_member::kNever);  // busy: again next turn
  EXPECT_EQ(due(s, 3), (std::vector<std::string>{"b"}));
}

TEST(active_set, deadlines_wake_members_in_time) {
  active_set<member> s;
  member a;
  a.name = "a";
  s.add(a);
  due(s, 0);
  s.reschedule(a, false, 100);
  EXPECT_EQ(s.next_deadline(), 100);
  EXPECT_TRUE(due(s, 99).empty());
  EXPECT_EQ(due(s, 100), (std::vector<std::string>{"a"}));
  // Rescheduled later: the old entry is skipped, the new one fires.
  s.reschedule(a, false, 300);
  s.wake(a);
  due(s, 150);
  s.reschedule(a, false, 500);
  EXPECT_TRUE(due(s, 300).empty());
  EXPECT_EQ(due(s, 500), (std::vector<std::string>{"a"}));
}

// The deadline the hub lost: a member whose timer is due but not yet acted on reports the
// same deadline after its poll; it must be polled again (it stalled a consumer after kill -9
// in js_ack_durability_jsthread when the heap entry was consumed but not re-pushed).
TEST(active_set, an_unchanged_past_deadline_is_polled_again) {
  active_set<member> s;
  member a;
  a.name = "a";
  s.add(a);
  due(s, 0);
  s.reschedule(a, false, 10);
  for (std::int64_t now = 10; now < 15; ++now) {
    ASSERT_EQ(due(s, now), (std::vector<std::string>{"a"})) << "turn " << now;
    s.reschedule(a, false, 10);
  }
}

TEST(active_set, a_removed_member_is_never_returned) {
  active_set<member> s;
  member a, b;
  a.name = "a", b.name = "b";
  s.add(a);
  s.add(b);
  s.remove(a);  // while queued
  EXPECT_EQ(due(s, 0), (std::vector<std::string>{"b"}));
  s.reschedule(b, false, 5);
  s.remove(b);  // with a heap entry
  s.wake(b);
  EXPECT_TRUE(due(s, 10).empty());
}

}  // namespace
}  // namespace js
