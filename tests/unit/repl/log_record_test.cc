#include "src/repl/log_record.h"

#include <gtest/gtest.h>

#include <string>

#include "src/repl/memory_log_store.h"

namespace {

using namespace repl;

entry command(std::uint64_t term, const std::string& s) {
  return {term, entry_type::command, {s.begin(), s.end()}};
}

TEST(log_record, checksums_match_the_standard_check_values) {
  const std::string check = "123456789";
  const std::span<const std::uint8_t> bytes{reinterpret_cast<const std::uint8_t*>(check.data()), check.size()};
  EXPECT_EQ(record_crc(bytes), 0xE3069283u);    // CRC-32C
  EXPECT_EQ(legacy_crc32(bytes), 0xCBF43926u);  // CRC-32 (IEEE), what older journals carry
  EXPECT_TRUE(record_crc_matches(bytes, 0xE3069283u));
  EXPECT_TRUE(record_crc_matches(bytes, 0xCBF43926u));
  EXPECT_FALSE(record_crc_matches(bytes, 0xE3069284u));
}

TEST(log_record, records_written_with_the_older_checksum_still_replay) {
  std::vector<std::uint8_t> j;
  append_hard_state_record(j, {7, 2});
  // Rewrite the record's checksum as an older server wrote it (CRC-32 IEEE of the rest).
  const std::uint32_t old = legacy_crc32({j.data() + 4, j.size() - 4});
  for (int i = 0; i < 4; ++i) j[std::size_t(i)] = std::uint8_t(old >> (8 * i));
  loaded_log log;
  EXPECT_EQ(replay_records(j, log), j.size());
  EXPECT_EQ(log.hard.term, 7u);
  j[j.size() - 1] ^= 1;  // and a torn one is still refused
  loaded_log torn;
  EXPECT_EQ(replay_records(j, torn), 0u);
}

TEST(log_record, replay_truncates_and_keeps_the_newest_hard_state) {
  std::vector<std::uint8_t> j;
  append_hard_state_record(j, {1, 0});
  const entry a[] = {command(1, "a"), command(1, "b"), command(1, "c")};
  append_entries_record(j, 1, a);
  const entry b[] = {command(2, "B")};
  append_entries_record(j, 2, b);  // replaces b and c
  append_hard_state_record(j, {2, 3, 4});
  loaded_log log;
  EXPECT_EQ(replay_records(j, log), j.size());
  EXPECT_EQ(log.hard, (hard_state{2, 3, 4}));
  ASSERT_EQ(log.entries.size(), 2u);
  EXPECT_EQ(log.entries[0], a[0]);
  EXPECT_EQ(log.entries[1], b[0]);
}

TEST(log_record, a_torn_tail_at_any_byte_keeps_exactly_the_whole_records) {
  std::vector<std::uint8_t> j;
  append_hard_state_record(j, {1, 0});
  const std::size_t first_end = j.size();
  const entry a[] = {command(1, "hello"), command(1, "world")};
  append_entries_record(j, 1, a);
  for (std::size_t len = 0; len < j.size(); ++len) {
    loaded_log log;
    const std::size_t valid = replay_records({j.data(), len}, log);
    EXPECT_EQ(valid, len >= first_end ? first_end : 0u) << "length " << len;
    EXPECT_TRUE(log.entries.empty());
  }
}

TEST(log_record, a_flipped_byte_stops_replay_at_that_record) {
  std::vector<std::uint8_t> j;
  const entry a[] = {command(1, "one")};
  append_entries_record(j, 1, a);
  const std::size_t first_end = j.size();
  const entry b[] = {command(1, "two")};
  append_entries_record(j, 2, b);
  j[first_end + 12] ^= 1;
  loaded_log log;
  EXPECT_EQ(replay_records(j, log), first_end);
  ASSERT_EQ(log.entries.size(), 1u);
}

TEST(log_record, an_entries_record_past_the_end_of_the_log_is_invalid) {
  std::vector<std::uint8_t> j;
  const entry a[] = {command(1, "x")};
  append_entries_record(j, 3, a);  // the log is empty: index 3 leaves a hole
  loaded_log log;
  EXPECT_EQ(replay_records(j, log), 0u);
}

TEST(memory_log_store, crash_loses_unsynced_writes_and_recovers_a_torn_one) {
  memory_log_store s;
  s.bootstrap({1, 0}, {1, entry_type::change, {1}});
  const entry a[] = {command(1, "synced")};
  const std::uint64_t seq_a = s.append(2, a);
  s.sync_through(seq_a);
  const entry b[] = {command(1, "lost")};
  s.append(3, b);
  EXPECT_EQ(s.last_index(), 3u);  // visible before it is durable
  s.crash(s.pending_bytes() - 1);  // torn: all but the last byte reached the disk
  loaded_log log = s.load();
  ASSERT_EQ(log.entries.size(), 2u);
  EXPECT_EQ(log.entries[1], a[0]);
  EXPECT_EQ(s.last_index(), 2u);
  // The torn bytes were cut off: a new write after recovery is readable after another crash.
  const entry c[] = {command(2, "after")};
  s.sync_through(s.append(3, c));
  s.crash(0);
  log = s.load();
  ASSERT_EQ(log.entries.size(), 3u);
  EXPECT_EQ(log.entries[2], c[0]);
}

TEST(memory_log_store, saving_the_hard_state_syncs_earlier_entries) {
  memory_log_store s;
  s.bootstrap({1, 0}, {1, entry_type::change, {1}});
  const entry a[] = {command(1, "x")};
  s.append(2, a);
  s.save_hard_state({2, 1});
  s.crash(0);
  loaded_log log = s.load();
  EXPECT_EQ(log.hard, (hard_state{2, 1}));
  EXPECT_EQ(log.entries.size(), 2u);
}

}  // namespace

namespace {

stored_snapshot snapshot_at(std::uint64_t index, std::uint64_t term, const std::string& data) {
  stored_snapshot s;
  s.meta = {index, term, 1, {9, 9, 9}};
  s.data = std::make_shared<const std::vector<std::uint8_t>>(data.begin(), data.end());
  return s;
}

TEST(log_record, a_taken_snapshot_keeps_the_trailing_entries_and_what_follows) {
  std::vector<std::uint8_t> j;
  append_hard_state_record(j, {1, 0});
  const entry a[] = {command(1, "a"), command(1, "b"), command(1, "c"), command(1, "d")};
  append_entries_record(j, 1, a);
  append_snapshot_record(j, snapshot_at(3, 1, "state@3"), 3);  // keeps 3 and 4
  const entry e[] = {command(1, "e")};
  append_entries_record(j, 5, e);
  loaded_log log;
  EXPECT_EQ(replay_records(j, log), j.size());
  ASSERT_TRUE(log.snapshot);
  EXPECT_EQ(log.snapshot->meta, snapshot_at(3, 1, "").meta);
  EXPECT_EQ(std::string(log.snapshot->data->begin(), log.snapshot->data->end()), "state@3");
  EXPECT_EQ(log.start_index, 3u);
  ASSERT_EQ(log.entries.size(), 3u);
  EXPECT_EQ(log.entries[0], a[2]);
  EXPECT_EQ(log.entries[2], e[0]);
}

TEST(log_record, an_installed_snapshot_drops_the_whole_log) {
  std::vector<std::uint8_t> j;
  const entry a[] = {command(1, "a"), command(1, "b"), command(2, "c")};
  append_entries_record(j, 1, a);
  append_snapshot_record(j, snapshot_at(10, 3, "leader's"), 11);
  const entry k[] = {command(3, "k")};
  append_entries_record(j, 11, k);
  loaded_log log;
  EXPECT_EQ(replay_records(j, log), j.size());
  EXPECT_EQ(log.start_index, 11u);
  ASSERT_EQ(log.entries.size(), 1u);
  EXPECT_EQ(log.entries[0], k[0]);
  // A store does the same, and recovers it after a crash.
  memory_log_store store;
  store.append(1, a);
  store.save_snapshot(snapshot_at(10, 3, "leader's"), 11);
  EXPECT_EQ(store.first_index(), 11u);
  EXPECT_EQ(store.last_index(), 10u);
  EXPECT_EQ(store.entry_at(2), nullptr);
  store.crash(0);
  const loaded_log back = store.load();
  ASSERT_TRUE(back.snapshot);
  EXPECT_EQ(back.snapshot->meta.index, 10u);
  EXPECT_EQ(back.start_index, 11u);
  EXPECT_TRUE(back.entries.empty());
}

}  // namespace
