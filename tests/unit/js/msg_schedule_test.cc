// Message schedule grammar, next fire times and the schedule table (src/js/msg_schedule.h),
// with times passed in: no clock, no sleeps.
#include "src/js/msg_schedule.h"

#include <gtest/gtest.h>

#include "src/js/json_util.h"

namespace js {
namespace {

constexpr std::int64_t kSec = 1'000'000'000;

std::int64_t T(const char* rfc3339) {
  auto t = parse_time(rfc3339);
  EXPECT_TRUE(t) << rfc3339;
  return t.value_or(0);
}

std::string S(std::int64_t ns) { return base::rfc3339_nano(ns); }

TEST(MsgSchedule, AtIsOneShot) {
  auto s = parse_msg_schedule("@at 2026-09-01T02:17:55Z", "");
  ASSERT_TRUE(s);
  EXPECT_EQ(s->what, msg_schedule::kind::at);
  const auto f = next_fire(*s, T("2026-09-01T00:00:00Z"), T("2026-09-01T00:00:00Z"));
  EXPECT_EQ(S(f.at), "2026-09-01T02:17:55Z");
  EXPECT_FALSE(f.repeat);
  // An offset is converted to UTC; a past time fires at once (its time is already due).
  EXPECT_EQ(S(parse_msg_schedule("@at 2009-11-10T23:00:00+01:00", "")->at_ns), "2009-11-10T22:00:00Z");
  EXPECT_FALSE(parse_msg_schedule("@at tomorrow", ""));
  EXPECT_FALSE(parse_msg_schedule("2026-09-01T02:17:55Z", ""));  // the CLI's --schedule-after form
  EXPECT_FALSE(parse_msg_schedule("@at 2026-09-01T02:17:55Z", "UTC"));  // zones only with cron
}

TEST(MsgSchedule, EveryNeedsOneSecond) {
  EXPECT_FALSE(parse_msg_schedule("@every 500ms", ""));
  EXPECT_FALSE(parse_msg_schedule("@every 0s", ""));
  EXPECT_FALSE(parse_msg_schedule("@every -5s", ""));
  EXPECT_FALSE(parse_msg_schedule("@every 5", ""));
  EXPECT_FALSE(parse_msg_schedule("@every 1s", "UTC"));
  ASSERT_TRUE(parse_msg_schedule("@every 1s", ""));
  EXPECT_EQ(parse_msg_schedule("@every 1m0s", "")->every_ns, 60 * kSec);
  EXPECT_EQ(parse_msg_schedule("@every 1.5h", "")->every_ns, 5400 * kSec);
}

TEST(MsgSchedule, EveryCountsFromTheRoundedStoreTimeAndSkipsMissedRuns) {
  const auto s = *parse_msg_schedule("@every 5s", "");
  const std::int64_t ts = T("2026-09-01T10:00:00.4Z");
  auto f = next_fire(s, ts, ts);
  EXPECT_EQ(S(f.at), "2026-09-01T10:00:05Z");
  EXPECT_TRUE(f.repeat);
  EXPECT_EQ(S(next_fire(s, T("2026-09-01T10:00:00.5Z"), 0).at), "2026-09-01T10:00:06Z");  // rounds half up
  // A restart an hour later: one run, counted from now, not 720 catch-up runs.
  EXPECT_EQ(S(next_fire(s, ts, T("2026-09-01T11:00:00.2Z")).at), "2026-09-01T11:00:05Z");
}

TEST(MsgSchedule, CronNeedsSixFields) {
  EXPECT_FALSE(parse_msg_schedule("*/5 * * * *", ""));  // classic five-field crontab
  EXPECT_FALSE(parse_msg_schedule("0 0 0 * * * *", ""));
  EXPECT_TRUE(parse_msg_schedule("0 */5 * * * *", ""));
  EXPECT_FALSE(parse_msg_schedule("60 * * * * *", ""));
  EXPECT_FALSE(parse_msg_schedule("* * 24 * * *", ""));
  EXPECT_FALSE(parse_msg_schedule("* * * 0 * *", ""));
  EXPECT_FALSE(parse_msg_schedule("* * * * 13 *", ""));
  EXPECT_FALSE(parse_msg_schedule("* * * * * 7", ""));
  EXPECT_FALSE(parse_msg_schedule("5-1 * * * * *", ""));
  EXPECT_FALSE(parse_msg_schedule("*/0 * * * * *", ""));
  EXPECT_FALSE(parse_msg_schedule("1-2-3 * * * * *", ""));
  EXPECT_FALSE(parse_msg_schedule("x * * * * *", ""));
  EXPECT_FALSE(parse_msg_schedule("0 0 0 31 2 *", ""));  // never fires
  EXPECT_FALSE(parse_msg_schedule("@fortnightly", ""));
}

TEST(MsgSchedule, CronNextTimes) {
  auto next = [](const char* pattern, const char* after) {
    auto s = parse_msg_schedule(pattern, "");
    EXPECT_TRUE(s) << pattern;
    return S(next_fire(*s, T(after), 0).at);
  };
  EXPECT_EQ(next("@hourly", "2026-09-01T10:20:30Z"), "2026-09-01T11:00:00Z");
  EXPECT_EQ(next("@daily", "2026-12-31T10:20:30Z"), "2027-01-01T00:00:00Z");
  EXPECT_EQ(next("@midnight", "2026-09-01T00:00:00Z"), "2026-09-02T00:00:00Z");  // strictly after
  EXPECT_EQ(next("@weekly", "2026-09-01T10:00:00Z"), "2026-09-06T00:00:00Z");    // 1 Sep 2026 is a Tuesday
  EXPECT_EQ(next("@monthly", "2026-09-01T10:00:00Z"), "2026-10-01T00:00:00Z");
  EXPECT_EQ(next("@yearly", "2026-09-01T10:00:00Z"), "2027-01-01T00:00:00Z");
  EXPECT_EQ(next("@annually", "2026-09-01T10:00:00Z"), "2027-01-01T00:00:00Z");
  EXPECT_EQ(next("* * * * * *", "2026-09-01T10:00:00.2Z"), "2026-09-01T10:00:01Z");
  EXPECT_EQ(next("*/15 * * * * *", "2026-09-01T10:00:16Z"), "2026-09-01T10:00:30Z");
  EXPECT_EQ(next("10/20 * * * * *", "2026-09-01T10:00:31Z"), "2026-09-01T10:00:50Z");  // N/step = N-max/step
  EXPECT_EQ(next("0 30 8-11 * * *", "2026-09-01T11:30:00Z"), "2026-09-02T08:30:00Z");
  EXPECT_EQ(next("0 0 0 29 2 *", "2026-03-01T00:00:00Z"), "2028-02-29T00:00:00Z");
  // Names, case-insensitive, with ranges and lists.
  EXPECT_EQ(next("0 0 12 * FEB-mar mon,Wed", "2026-09-01T00:00:00Z"), "2027-02-01T12:00:00Z");
  // Both day fields restricted: either matches (the 1st/15th, or any Friday).
  EXPECT_EQ(next("0 30 4 1,15 * 5", "2026-09-01T05:00:00Z"), "2026-09-04T04:30:00Z");
  EXPECT_EQ(next("0 30 4 1,15 * 5", "2026-09-11T05:00:00Z"), "2026-09-15T04:30:00Z");
  EXPECT_EQ(next("0 0 0 13 * fri", "2026-01-01T00:00:00Z"), "2026-01-02T00:00:00Z");  // a Friday first
  // One of them a star: both must match (day of month *, so any Friday; `?` is a star too).
  EXPECT_EQ(next("0 0 0 * * fri", "2026-01-03T00:00:00Z"), "2026-01-09T00:00:00Z");
  EXPECT_EQ(next("0 0 0 ? * 5", "2026-09-01T00:00:00Z"), "2026-09-04T00:00:00Z");
}

TEST(MsgSchedule, CronAfterARestartFiresOnceFromNow) {
  const auto s = *parse_msg_schedule("0 0 * * * *", "");
  const auto f = next_fire(s, T("2026-09-01T01:30:00Z"), T("2026-09-01T05:10:00Z"));
  EXPECT_EQ(S(f.at), "2026-09-01T06:00:00Z");
  EXPECT_TRUE(f.repeat);
}

TEST(MsgSchedule, TimeZones) {
  EXPECT_TRUE(valid_schedule_time_zone("UTC"));
  EXPECT_TRUE(valid_schedule_time_zone("Etc/UTC"));
  EXPECT_FALSE(valid_schedule_time_zone(""));
  EXPECT_FALSE(valid_schedule_time_zone("+02:00"));
  EXPECT_FALSE(valid_schedule_time_zone("Mars/Olympus"));
  EXPECT_TRUE(parse_msg_schedule("@hourly", "UTC"));
  EXPECT_TRUE(parse_msg_schedule("0 0 5 * * *", "Etc/UTC"));
}

TEST(MsgSchedule, RoundToSecond) {
  EXPECT_EQ(round_to_second(1'499'999'999), kSec);
  EXPECT_EQ(round_to_second(1'500'000'000), 2 * kSec);
  EXPECT_EQ(round_to_second(0), 0);
}

TEST(ScheduleTable, OnePerSubjectInSequenceOrder) {
  schedule_table t;
  EXPECT_TRUE(t.empty());
  EXPECT_EQ(t.next_deadline(), std::numeric_limits<std::int64_t>::max());
  t.add("s.a", 5, 300);
  t.add("s.b", 3, 100);
  t.add("s.c", 9, 200);
  EXPECT_EQ(t.next_deadline(), 100);
  t.add("s.b", 10, 400);  // a new schedule on s.b replaces the old one
  EXPECT_EQ(t.size(), 3u);
  EXPECT_EQ(t.next_deadline(), 200);
  auto due = t.due(350);
  ASSERT_EQ(due.size(), 2u);
  EXPECT_EQ(due[0].subject, "s.a");  // sequence 5 before 9, whatever the times
  EXPECT_EQ(due[1].subject, "s.c");
  t.update("s.a", 1000);
  t.remove("s.c");
  t.update("s.missing", 1);  // nothing to update
  EXPECT_EQ(t.due(999).size(), 1u);
  EXPECT_EQ(t.find("s.a")->at, 1000);
  EXPECT_EQ(t.find("s.b")->seq, 10u);
  EXPECT_FALSE(t.find("s.c"));
  t.clear();
  EXPECT_TRUE(t.empty());
}

}  // namespace
}  // namespace js
