// Atomic batches across a torn write: the fault backend persists only a prefix of the write
// that carries a batch and "kills" the process; after reopening, find_torn_batch names the
// batch's surviving prefix (no Nats-Batch-Commit at the tail), which the stream drops whole.
#include <gtest/gtest.h>

#include "io/fault_file.h"
#include "src/js/batch_recovery.h"
#include "src/js/json_util.h"
#include "storage/file_store.h"
#include "tests/unit/storage/temp_dir.h"

namespace {

using storage::file_store;

std::string batch_headers(const std::string& id, int seq, bool commit) {
  std::string h = "NATS/1.0\r\nNats-Batch-Id: " + id + "\r\nNats-Batch-Sequence: " + std::to_string(seq) + "\r\n";
  if (commit) h += "Nats-Batch-Commit: 1\r\n";
  return h + "\r\n";
}

void append_batch(file_store& s, const std::string& id, int n) {
  for (int i = 1; i <= n; ++i) ASSERT_TRUE(s.append("b", batch_headers(id, i, i == n), std::string(200, 'p'), 1).ok());
}

TEST(batch_torn, torn_commit_is_found_whole_and_committed_batches_are_kept) {
  int torn_rounds = 0;
  for (std::size_t torn : {1ul, 700ul, 4096ul, 5000ul, 9000ul, 13000ul}) {
    SCOPED_TRACE("torn at " + std::to_string(torn));
    storage_test::temp_dir dir;
    storage::file_store_config cfg;
    cfg.dir = dir.path();
    cfg.block_size = 256 << 10;
    cfg.cache_bytes = 0;
    {
      auto fb = std::make_unique<io::fault_backend>(io::make_backend(cfg.dir));
      auto* fault = fb.get();
      auto r = file_store::open(cfg, std::move(fb));
      ASSERT_TRUE(r.ok());
      auto& s = **r;
      append_batch(s, "A", 5);  // committed and durable
      ASSERT_TRUE(s.append("plain", "", "x", 1).ok());
      ASSERT_TRUE(s.flush().ok());
      fault->torn_next_write(torn);
      append_batch(s, "B", 60);  // ~16 KiB: the crash cuts it
      for (int i = 0; i < 50; ++i) s.poll();
      ASSERT_TRUE(fault->crashed());
    }
    auto r = file_store::open(cfg);
    ASSERT_TRUE(r.ok());
    auto& s = **r;
    ASSERT_GE(s.last_seq(), 6u);
    ASSERT_LT(s.last_seq(), 66u);  // never the whole of B: its commit message was cut
    const auto t = js::find_torn_batch(s);
    const std::uint64_t prefix = s.last_seq() - 6;  // B's messages that survived the tear
    if (prefix == 0) {
      EXPECT_TRUE(t.id.empty());
      EXPECT_TRUE(t.seqs.empty());
      continue;
    }
    ++torn_rounds;
    EXPECT_EQ(t.id, "B");
    ASSERT_EQ(t.seqs.size(), prefix);  // all of them, newest first, and nothing of A
    EXPECT_EQ(t.seqs.front(), s.last_seq());
    EXPECT_EQ(t.seqs.back(), 7u);
  }
  EXPECT_GT(torn_rounds, 2);  // the tears above do leave a prefix of B on disk
}

TEST(batch_torn, complete_or_plain_tails_are_not_torn) {
  storage_test::temp_dir dir;
  storage::file_store_config cfg;
  cfg.dir = dir.path();
  auto r = file_store::open(cfg);
  ASSERT_TRUE(r.ok());
  auto& s = **r;
  EXPECT_TRUE(js::find_torn_batch(s).seqs.empty());  // empty store
  append_batch(s, "A", 3);
  EXPECT_TRUE(js::find_torn_batch(s).seqs.empty());  // ends with its commit
  ASSERT_TRUE(s.append("b", batch_headers("C", 1, false), "x", 1).ok());
  ASSERT_TRUE(s.append("b", batch_headers("C", 2, false), "x", 1).ok());
  auto t = js::find_torn_batch(s);
  EXPECT_EQ(t.id, "C");
  EXPECT_EQ(t.seqs, (std::vector<std::uint64_t>{5, 4}));
  ASSERT_TRUE(s.append("plain", "", "x", 1).ok());
  EXPECT_TRUE(js::find_torn_batch(s).seqs.empty());  // a plain message after: not a tail
}

}  // namespace
