// The js-failover mode's pure logic: which ack ends a failover gap, and the read-back check.
#include <gtest/gtest.h>

#include "bench/e2e/failover.h"

namespace peregrine::bench {
namespace {

constexpr int64_t kMs = 1'000'000;

TEST(failover_gap, first_ack_of_an_attempt_sent_after_the_kill) {
  const std::vector<ack_record> acks = {
      {1, 1, 10 * kMs, 11 * kMs},
      {2, 2, 99 * kMs, 101 * kMs},    // sent before the kill at 100 ms, ack 1 ms after: stale
      {3, 3, 150 * kMs, 2600 * kMs},  // sent after the kill, acked by the new leader
      {4, 4, 2600 * kMs, 2601 * kMs}};
  EXPECT_EQ(failover_gap_ns(acks, 100 * kMs), 2500 * kMs);
}

TEST(failover_gap, a_late_ack_of_an_earlier_attempt_counts) {
  // The attempt sent before the kill was resent after a reconnect and acked 3 s later.
  const std::vector<ack_record> acks = {{1, 1, 90 * kMs, 3100 * kMs}, {2, 2, 3100 * kMs, 3101 * kMs}};
  EXPECT_EQ(failover_gap_ns(acks, 100 * kMs), 3000 * kMs);
}

TEST(failover_gap, none_after_the_kill) {
  const std::vector<ack_record> acks = {{1, 1, 10 * kMs, 11 * kMs}};
  EXPECT_EQ(failover_gap_ns(acks, 100 * kMs), -1);
  EXPECT_EQ(failover_gap_ns({}, 0), -1);
}

TEST(readback, all_acked_present) {
  const std::vector<ack_record> acks = {{0, 1, 0, 1}, {1, 2, 1, 2}, {2, 3, 2, 3}};
  // Seq 4 holds a message whose publish timed out but was stored: allowed, counted.
  const readback_result r = check_readback(acks, {{1, 0}, {2, 1}, {3, 2}, {4, 3}});
  EXPECT_TRUE(r.ok());
  EXPECT_EQ(r.acked, 3u);
  EXPECT_EQ(r.stored, 4u);
  EXPECT_EQ(r.unacked_stored, 1u);
  EXPECT_EQ(r.duplicates, 0u);
}

TEST(readback, a_lost_and_an_overwritten_ack_are_caught) {
  const std::vector<ack_record> acks = {{0, 1, 0, 1}, {1, 2, 1, 2}, {2, 3, 2, 3}};
  const readback_result r = check_readback(acks, {{1, 0}, {3, 7}, {4, 2}});
  EXPECT_FALSE(r.ok());
  EXPECT_EQ(r.missing, 1u);
  EXPECT_EQ(r.mismatched, 1u);
  EXPECT_EQ(r.lost_seqs, (std::vector<uint64_t>{2, 3}));
  EXPECT_EQ(r.unacked_stored, 1u);  // index 7
}

TEST(readback, duplicates_counted_and_double_acks_checked_each) {
  // Index 1 was acked twice (a retry got a duplicate PubAck with the first sequence) and stored
  // twice (the dedupe window lost it across the leader change).
  const std::vector<ack_record> acks = {{0, 1, 0, 1}, {1, 2, 1, 2}, {1, 2, 3, 4}};
  const readback_result r = check_readback(acks, {{1, 0}, {2, 1}, {3, 1}});
  EXPECT_TRUE(r.ok());
  EXPECT_EQ(r.acked, 2u);
  EXPECT_EQ(r.duplicates, 1u);
}

TEST(failover_percentile, nearest_rank_ignores_missing_rounds) {
  EXPECT_EQ(percentile_of({}, 0.5), -1);
  EXPECT_EQ(percentile_of({-1, -1}, 0.5), -1);
  EXPECT_EQ(percentile_of({5, 1, 3}, 0.5), 3);
  EXPECT_EQ(percentile_of({5, 1, 3, 4}, 0.5), 3);
  EXPECT_EQ(percentile_of({5, -1, 3, 9}, 1.0), 9);
}

TEST(failover_index, round_trip_and_rejects) {
  uint64_t v = 0;
  const std::string t = index_text(12345) + "xxxx";
  EXPECT_TRUE(parse_index(t.data(), static_cast<int>(t.size()), v));
  EXPECT_EQ(v, 12345u);
  EXPECT_FALSE(parse_index("fo-", 3, v));
  EXPECT_FALSE(parse_index("ab-12", 5, v));
  EXPECT_FALSE(parse_index("fo-x", 4, v));
}

}  // namespace
}  // namespace peregrine::bench
