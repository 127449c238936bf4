#include "storage/consumer_state.h"

#include <gtest/gtest.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <fstream>
#include <memory>
#include <vector>

#include "tests/unit/storage/temp_dir.h"

namespace storage {
namespace {

TEST(consumer_state, delivery_ack_and_floor) {
  memory_consumer_store c;
  for (std::uint64_t i = 1; i <= 5; ++i) ASSERT_TRUE(c.update_delivered(i, i * 10, 1, 100).ok());
  EXPECT_EQ(c.state().delivered, (seq_pair{5, 50}));
  EXPECT_EQ(c.state().pending.size(), 5u);
  ASSERT_TRUE(c.update_delivered(6, 20, 2, 200).ok());  // redelivery of stream seq 20
  EXPECT_EQ(c.state().redelivered.at(20), 1u);
  EXPECT_EQ(c.state().pending.at(20).ts, 200);
  ASSERT_TRUE(c.update_acks(1, 10).ok());
  EXPECT_EQ(c.state().ack_floor, (seq_pair{1, 19}));
  ASSERT_TRUE(c.update_acks(3, 30).ok());  // out of order: floor stays below 20
  EXPECT_EQ(c.state().ack_floor, (seq_pair{1, 19}));
  ASSERT_TRUE(c.update_acks(2, 20).ok());
  EXPECT_EQ(c.state().ack_floor, (seq_pair{3, 39}));
  EXPECT_TRUE(c.state().redelivered.empty());
  EXPECT_EQ(c.update_acks(2, 20).code(), base::errc::not_found);
  ASSERT_TRUE(c.update_acks(4, 40).ok());
  ASSERT_TRUE(c.update_acks(5, 50).ok());
  EXPECT_EQ(c.state().ack_floor, (seq_pair{5, 50}));
  EXPECT_TRUE(c.state().pending.empty());
}

TEST(consumer_state, codec_round_trip_and_corruption) {
  consumer_state s;
  s.delivered = {9, 90};
  s.ack_floor = {3, 30};
  s.pending[40] = {4, 1234};
  s.pending[70] = {7, 5678};
  s.redelivered[40] = 2;
  std::string b = encode_consumer_state(s);
  EXPECT_EQ(*decode_consumer_state(b), s);
  for (std::size_t i = 0; i < b.size(); i += 7) {
    std::string c = b;
    c[i] ^= 0x20;
    EXPECT_EQ(decode_consumer_state(c).code(), base::errc::corrupt) << i;
  }
}

TEST(consumer_state, file_store_resumes_exactly) {
  storage_test::temp_dir d;
  consumer_state expect;
  {
    auto c = file_consumer_store::open(d.path(), "C1");
    ASSERT_TRUE(c.ok());
    for (std::uint64_t i = 1; i <= 100; ++i) ASSERT_TRUE((*c)->update_delivered(i, i, 1, 7).ok());
    for (std::uint64_t i = 1; i <= 100; i += 3) ASSERT_TRUE((*c)->update_acks(i, i).ok());
    ASSERT_TRUE((*c)->update_delivered(101, 2, 2, 8).ok());
    EXPECT_TRUE((*c)->dirty());
    ASSERT_TRUE((*c)->flush().ok());
    EXPECT_FALSE((*c)->dirty());
    expect = (*c)->state();
    // Unflushed changes are not promised after a crash.
    ASSERT_TRUE((*c)->update_acks(2, 2).ok());
  }
  auto c = file_consumer_store::open(d.path(), "C1");
  ASSERT_TRUE(c.ok());
  EXPECT_EQ((*c)->state(), expect);
  auto fresh = file_consumer_store::open(d.path(), "other");
  ASSERT_TRUE(fresh.ok());
  EXPECT_EQ((*fresh)->state(), consumer_state{});
  std::ofstream(d.path() + "/bad.cstate") << "garbage that is long enough";
  EXPECT_EQ(file_consumer_store::open(d.path(), "bad").code(), base::errc::corrupt);
}

TEST(consumer_state, background_flush_coalesces_and_resumes) {
  storage_test::temp_dir d;
  consumer_state expect;
  {
    auto c = file_consumer_store::open(d.path(), "C1");
    ASSERT_TRUE(c.ok());
    int handed = 0, refused = 0;
    for (std::uint64_t i = 1; i <= 200; ++i) {
      ASSERT_TRUE((*c)->update_delivered(i, i, 1, 7).ok());
      if ((*c)->flush_async()) {
        ++handed;
        EXPECT_FALSE((*c)->dirty());
      } else {
        ++refused;  // the previous snapshot is still being written: still dirty
        EXPECT_TRUE((*c)->dirty());
      }
    }
    EXPECT_EQ(handed + refused, 200);
    EXPECT_GE(handed, 1);
    (*c)->wait_written();
    EXPECT_FALSE((*c)->writing());
    EXPECT_EQ((*c)->take_async_error(), 0);
    ASSERT_TRUE((*c)->flush().ok());  // whatever the last handed snapshot missed
    expect = (*c)->state();
  }
  auto c = file_consumer_store::open(d.path(), "C1");
  ASSERT_TRUE(c.ok());
  EXPECT_EQ((*c)->state(), expect);
  EXPECT_EQ((*c)->state().delivered, (seq_pair{200, 200}));
}

TEST(consumer_state, unsynced_snapshot_is_synced_later) {
  storage_test::temp_dir d;
  auto c = file_consumer_store::open(d.path(), "C1");
  ASSERT_TRUE(c.ok());
  ASSERT_TRUE((*c)->update_delivered(1, 1, 1, 7).ok());
  ASSERT_TRUE((*c)->flush_async(false));  // written, not fdatasync'd
  EXPECT_FALSE((*c)->dirty());
  EXPECT_TRUE((*c)->unsynced());
  (*c)->wait_written();
  // A process crash now keeps it: a fresh open reads the renamed snapshot.
  auto seen = file_consumer_store::open(d.path(), "C1");
  ASSERT_TRUE(seen.ok());
  EXPECT_EQ((*seen)->state().delivered, (seq_pair{1, 1}));
  // Nothing changed, but a synced snapshot is still owed.
  ASSERT_TRUE((*c)->flush_async(true));
  EXPECT_FALSE((*c)->unsynced());
  (*c)->wait_written();
  EXPECT_EQ((*c)->take_async_error(), 0);
  ASSERT_TRUE((*c)->flush_async(true));  // nothing owed: no write
  EXPECT_FALSE((*c)->writing());
}

TEST(consumer_state, background_flush_signals_the_wake_eventfd_with_its_generation) {
  storage_test::temp_dir d;
  auto c = file_consumer_store::open(d.path(), "C1");
  ASSERT_TRUE(c.ok());
  const int efd = ::eventfd(0, EFD_CLOEXEC);
  ASSERT_GE(efd, 0);
  (*c)->signal_completions_to(efd);
  EXPECT_EQ((*c)->handed(), 0u);
  ASSERT_TRUE((*c)->update_delivered(1, 1, 1, 7).ok());
  ASSERT_TRUE((*c)->flush_async(false));
  EXPECT_EQ((*c)->handed(), 1u);
  eventfd_t n = 0;
  ASSERT_EQ(::eventfd_read(efd, &n), 0);  // blocks until the writer thread finished
  EXPECT_GE(n, 1u);
  EXPECT_EQ((*c)->written(), 1u);
  EXPECT_FALSE((*c)->writing());
  ASSERT_TRUE((*c)->update_acks(1, 1).ok());
  ASSERT_TRUE((*c)->flush_async(true));
  ASSERT_EQ(::eventfd_read(efd, &n), 0);
  EXPECT_EQ((*c)->written(), 2u);
  EXPECT_EQ((*c)->take_async_error(), 0);
  auto seen = file_consumer_store::open(d.path(), "C1");
  ASSERT_TRUE(seen.ok());
  EXPECT_EQ((*seen)->state().ack_floor, (seq_pair{1, 1}));
  (*c).reset();  // detaches the eventfd before it is closed
  ::close(efd);
}

TEST(consumer_state, background_flush_failure_is_reported_and_rewritten) {
  storage_test::temp_dir d;
  const std::string dir = d.sub("gone");
  auto c = file_consumer_store::open(dir, "C1");
  ASSERT_TRUE(c.ok());
  ASSERT_TRUE((*c)->update_delivered(1, 1, 1, 7).ok());
  std::filesystem::remove_all(dir);  // the write cannot create its temp file
  ASSERT_TRUE((*c)->flush_async());
  (*c)->wait_written();
  EXPECT_EQ((*c)->take_async_error(), ENOENT);
  EXPECT_EQ((*c)->take_async_error(), 0);  // reported once
  std::filesystem::create_directories(dir);
  ASSERT_TRUE((*c)->update_delivered(2, 2, 1, 8).ok());
  ASSERT_TRUE((*c)->flush().ok());
  auto again = file_consumer_store::open(dir, "C1");
  ASSERT_TRUE(again.ok());
  EXPECT_EQ((*again)->state().delivered, (seq_pair{2, 2}));
}

// A shutdown's batch: every consumer store staged (only those with something to write),
// written together, and each store told its own outcome; a failing file does not fail the
// others.
TEST(consumer_state, a_batch_writes_every_staged_store_and_reports_each_outcome) {
  storage_test::temp_dir d;
  std::vector<std::unique_ptr<file_consumer_store>> stores;
  for (int i = 0; i < 40; ++i) {
    auto s = file_consumer_store::open(d.sub("c" + std::to_string(i)), "state");
    ASSERT_TRUE(s.ok());
    stores.push_back(std::move(*s));
  }
  for (int i = 0; i < 40; ++i)
    if (i % 4 != 3) {  // every 4th stays clean
      ASSERT_TRUE(stores[i]->update_delivered(1, 100 + i, 1, 5).ok());
    }
  std::vector<snapshot_file> batch;
  for (auto& s : stores) s->stage(batch);
  ASSERT_EQ(batch.size(), 30u);
  batch[0].dir = batch[0].path = d.sub("missing/dir/state");  // this one cannot be written
  write_snapshot_files(batch);
  EXPECT_NE(batch[0].error, 0);
  for (std::size_t i = 1; i < batch.size(); ++i) EXPECT_EQ(batch[i].error, 0) << i;
  for (auto& s : stores) s->staged_done(batch);
  EXPECT_TRUE(stores[0]->dirty());  // still to be written
  for (int i = 1; i < 40; ++i) {
    EXPECT_FALSE(stores[i]->dirty()) << i;
    auto again = file_consumer_store::open(d.sub("c" + std::to_string(i)), "state");
    ASSERT_TRUE(again.ok());
    EXPECT_EQ((*again)->loaded(), i % 4 != 3) << i;
    if (i % 4 != 3) {
      EXPECT_EQ((*again)->state().delivered.stream, std::uint64_t(100 + i)) << i;
    }
  }
}

}  // namespace
}  // namespace storage
