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

// A group whose consumer holds an ack sync reply for a state write in flight: busy while the
// write is, due at once after it (the reply goes out at that poll). The writer thread
// finishes between the set's two questions; whichever comes first, the group must be polled
// again. (jetstream asked next_wakeup first, as GCC evaluates reschedule(g, g.busy(),
// g.next_wakeup()): never, then not busy, and the group slept with the reply held.)
struct writing_member final : active_member {
  bool writing = true;
  int asked = 0;
  void answered() {
    if (++asked == 1) writing = false;  // the write completes right after the first question
  }
  bool busy(std::int64_t) {
    const bool b = writing;
    answered();
    return b;
  }
  std::int64_t next_wakeup(std::int64_t now) {
    const std::int64_t t = writing ? kNever : now;
    answered();
    return t;
  }
};

TEST(active_set, a_write_finishing_between_busy_and_next_wakeup_still_polls_again) {
  active_set<writing_member> s;
  writing_member a;
  s.add(a);
  ASSERT_EQ(s.take_due(0).size(), 1u);
  s.reschedule(a, 0);
  EXPECT_EQ(a.asked, 2);
  EXPECT_EQ(s.take_due(1).size(), 1u) << "the member slept with its write finished";
}

}  // namespace
}  // namespace js
