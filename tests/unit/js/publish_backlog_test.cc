// publish_backlog: when a replicated stream's leader hands a publish to its replica, when it
// makes it wait, and when it refuses it (back pressure without threads or clocks).
#include "src/js/publish_backlog.h"

#include <gtest/gtest.h>

namespace {

using js::backlog_limits;
using js::publish_backlog;
using js::waiting_publish;
using verdict = publish_backlog::verdict;

waiting_publish pub(std::string subject, std::size_t payload = 4) {
  return {std::move(subject), "", std::string(payload, 'x'), "_INBOX.r"};
}

backlog_limits small() {
  backlog_limits l;
  l.window = 2;
  l.window_bytes = 1000;
  l.max_waiting = 3;
  l.max_waiting_bytes = 200;
  return l;
}

TEST(PublishBacklog, SubmitsAtOnceWhileTheWindowHasRoom) {
  publish_backlog b(small());
  EXPECT_EQ(b.offer(0, 0, 10), verdict::submit);
  EXPECT_EQ(b.offer(1, 10, 10), verdict::submit);
  EXPECT_EQ(b.offer(2, 20, 10), verdict::wait);   // window full (count)
  EXPECT_EQ(b.offer(1, 1000, 10), verdict::wait); // window full (bytes)
}

TEST(PublishBacklog, OnceOneWaitsLaterOnesQueueBehindItInOrder) {
  publish_backlog b(small());
  ASSERT_EQ(b.offer(2, 0, 10), verdict::wait);
  b.push_back(pub("a"));
  // The window has room again, but "a" came first: "b" must not overtake it.
  EXPECT_EQ(b.offer(0, 0, 10), verdict::wait);
  b.push_back(pub("b"));
  EXPECT_FALSE(b.next(2, 0));  // still full
  auto first = b.next(1, 0);
  ASSERT_TRUE(first);
  EXPECT_EQ(first->subject, "a");
  auto second = b.next(1, 0);
  ASSERT_TRUE(second);
  EXPECT_EQ(second->subject, "b");
  EXPECT_TRUE(b.empty());
  EXPECT_EQ(b.bytes(), 0u);
}

TEST(PublishBacklog, RefusesPastTheWaitingLimits) {
  publish_backlog b(small());
  for (const char* s : {"a", "b", "c"}) {
    ASSERT_EQ(b.offer(2, 0, 12), verdict::wait) << s;
    b.push_back(pub(s));
  }
  EXPECT_EQ(b.offer(2, 0, 12), verdict::refuse);  // max_waiting
  publish_backlog big(small());
  big.push_back(pub("a", 150));
  EXPECT_EQ(big.offer(2, 0, 100), verdict::refuse);  // max_waiting_bytes
  // A single oversized publish still waits in an empty queue (max_payload bounds it).
  publish_backlog empty(small());
  EXPECT_EQ(empty.offer(2, 0, 5000), verdict::wait);
}

TEST(PublishBacklog, ABusyPublishGoesFirstNextTime) {
  publish_backlog b(small());
  b.push_back(pub("b"));
  b.push_front(pub("a"));  // taken, the replica was busy, put back
  auto n = b.next(0, 0);
  ASSERT_TRUE(n);
  EXPECT_EQ(n->subject, "a");
}

TEST(PublishBacklog, TakeAllEmptiesItForTheCallerToAnswer) {
  publish_backlog b(small());
  b.push_back(pub("a"));
  b.push_back(pub("b"));
  auto all = b.take_all();
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(all[0].subject, "a");
  EXPECT_TRUE(b.empty());
  EXPECT_EQ(b.bytes(), 0u);
  EXPECT_EQ(b.offer(0, 0, 1), verdict::submit);
}

}  // namespace
