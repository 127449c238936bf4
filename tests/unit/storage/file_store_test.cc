// file_store specifics: reopen, block release, corruption and torn tails on disk.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <thread>
#include <fstream>
#include <iterator>

#include "storage/file_store.h"
#include "storage/record.h"
#include "tests/unit/storage/temp_dir.h"

namespace storage {
namespace {

constexpr std::int64_t kT0 = 1'700'000'000'000'000'000;

file_store_config cfg_for(const std::string& dir, std::uint64_t block = 128 << 10) {
  file_store_config c;
  c.dir = dir;
  c.block_size = block;
  c.cache_bytes = 4 << 10;
  return c;
}

std::unique_ptr<file_store> open_ok(const file_store_config& c) {
  auto r = file_store::open(c);
  EXPECT_TRUE(r.ok()) << base::errc_name(r.code());
  return r.ok() ? std::move(*r) : nullptr;
}

std::string payload_for(std::uint64_t seq, std::size_t n = 100) {
  std::string p(n, 'a');
  for (std::size_t i = 0; i < n; ++i) p[i] = char('a' + (seq * 7 + i) % 26);
  return p;
}

void flip_file_byte(const std::string& path, std::uint64_t off) {
  int fd = ::open(path.c_str(), O_RDWR);
  ASSERT_GE(fd, 0);
  char c;
  ASSERT_EQ(::pread(fd, &c, 1, off_t(off)), 1);
  c ^= 0x10;
  ASSERT_EQ(::pwrite(fd, &c, 1, off_t(off)), 1);
  ::close(fd);
}

TEST(file_store, reopen_preserves_everything) {
  storage_test::temp_dir d;
  auto c = cfg_for(d.path());
  stream_state before;
  {
    auto s = open_ok(c);
    for (std::uint64_t i = 1; i <= 300; ++i)
      ASSERT_TRUE(s->append(i % 3 ? "a.b" : "c.d", i % 5 ? "" : "NATS/1.0\r\nK: v\r\n\r\n",
                            payload_for(i), kT0 + std::int64_t(i), i % 7 ? 0 : 5'000'000'000)
                      .ok());
    ASSERT_TRUE(s->remove(10).ok());
    ASSERT_TRUE(s->remove(1).ok());
    ASSERT_EQ(*s->purge({"c.d", 100, 0}), 33u);
    ASSERT_TRUE(s->skip(4).ok());
    ASSERT_TRUE(s->close().ok());
    before = s->state(true);
  }
  auto s = open_ok(c);
  EXPECT_TRUE(s->recovery().clean());
  EXPECT_EQ(s->state(true), before);
  EXPECT_EQ(s->durable_seq(), 304u);
  for (std::uint64_t i = 2; i <= 300; ++i) {
    auto m = s->load(i);
    if (i == 10 || (i % 3 == 0 && i < 100)) {
      EXPECT_EQ(m.code(), base::errc::not_found) << i;
      continue;
    }
    ASSERT_TRUE(m.ok()) << i;
    EXPECT_EQ(m->payload, payload_for(i));
    EXPECT_EQ(m->ts, kT0 + std::int64_t(i));
    EXPECT_EQ(m->headers.empty(), i % 5 != 0);
  }
  EXPECT_EQ(*s->append("z", "", "after", kT0), 305u);
}

TEST(file_store, purge_all_survives_reopen_and_releases_blocks) {
  storage_test::temp_dir d;
  auto c = cfg_for(d.path(), 64 << 10);
  {
    auto s = open_ok(c);
    for (int i = 0; i < 400; ++i) ASSERT_TRUE(s->append("p", "", payload_for(1, 1000), kT0).ok());
    ASSERT_TRUE(s->flush().ok());
    EXPECT_GT(s->block_count(), 4u);
    EXPECT_EQ(*s->purge({}), 400u);
    ASSERT_TRUE(s->flush().ok());
    EXPECT_EQ(s->block_count(), 1u);
    ASSERT_TRUE(s->close().ok());
  }
  auto s = open_ok(c);
  auto st = s->state();
  EXPECT_EQ(st.msgs, 0u);
  EXPECT_EQ(st.first_seq, 401u);
  EXPECT_EQ(st.last_seq, 400u);
  EXPECT_EQ(*s->append("p", "", "x", kT0), 401u);
}

TEST(file_store, crashed_directory_opens_cleanly) {
  storage_test::temp_dir d;
  auto c = cfg_for(d.path());
  std::uint64_t durable = 0;
  {
    auto s = open_ok(c);
    for (int i = 0; i < 50; ++i) {
      ASSERT_TRUE(s->append("a", "", payload_for(std::uint64_t(i)), kT0).ok());
      s->poll();
    }
    ASSERT_TRUE(s->flush().ok());
    durable = s->durable_seq();
    for (int i = 0; i < 5; ++i) ASSERT_TRUE(s->append("a", "", "unsubmitted", kT0).ok());
    // dropped without close: the unsubmitted tail is lost like in a crash
  }
  auto s = open_ok(c);
  EXPECT_TRUE(s->recovery().clean());
  EXPECT_EQ(s->state().last_seq, durable);
}

TEST(file_store, bit_flip_in_sealed_record_is_reported_exactly) {
  storage_test::temp_dir d;
  auto c = cfg_for(d.path());
  std::uint64_t loc_off = 0;
  {
    auto s = open_ok(c);
    for (std::uint64_t i = 1; i <= 20; ++i)
      ASSERT_TRUE(s->append("a", "", payload_for(i), kT0).ok());
    ASSERT_TRUE(s->close().ok());
  }
  // Block 1 starts with a skip record; find message 7 by walking records.
  {
    int fd = ::open((d.path() + "/00000001.blk").c_str(), O_RDONLY);
    std::vector<std::uint8_t> b(64 << 10);
    ASSERT_GT(::pread(fd, b.data(), b.size(), 0), 0);
    ::close(fd);
    std::uint64_t off = 0;
    record_view r;
    while (decode_record(b.data() + off, b.size() - off, &r) == decode_result::ok) {
      if (r.kind == rec_kind::msg && r.seq == 7) loc_off = off;
      off += rec_pad(r.len);
    }
    ASSERT_GT(loc_off, 0u);
  }
  flip_file_byte(d.path() + "/00000001.blk", loc_off + kRecHeader + 10);
  auto s = open_ok(c);
  const auto& rep = s->recovery();
  EXPECT_EQ(rep.corrupt_records, 1u);
  EXPECT_EQ(rep.lost_seqs, (std::vector<std::uint64_t>{7}));
  EXPECT_EQ(s->load(7).code(), base::errc::not_found);
  EXPECT_EQ(s->state().lost, (std::vector<std::uint64_t>{7}));
  for (std::uint64_t i = 1; i <= 20; ++i)
    if (i != 7) {
      EXPECT_EQ(s->load(i)->payload, payload_for(i)) << i;
    }
}

TEST(file_store, corrupt_record_is_never_served) {
  storage_test::temp_dir d;
  auto c = cfg_for(d.path());
  auto s = open_ok(c);
  for (std::uint64_t i = 1; i <= 200; ++i) ASSERT_TRUE(s->append("a", "", payload_for(i), kT0).ok());
  ASSERT_TRUE(s->flush().ok());
  // Damage seq 3 under the open store; the cache no longer holds it (4 KiB cache).
  int fd = ::open((d.path() + "/00000001.blk").c_str(), O_RDONLY);
  std::vector<std::uint8_t> b(64 << 10);
  ASSERT_GT(::pread(fd, b.data(), b.size(), 0), 0);
  ::close(fd);
  std::uint64_t off = 0, at = 0;
  record_view r;
  while (decode_record(b.data() + off, b.size() - off, &r) == decode_result::ok) {
    if (r.kind == rec_kind::msg && r.seq == 3) at = off;
    off += rec_pad(r.len);
  }
  flip_file_byte(d.path() + "/00000001.blk", at + kRecHeader + 3);
  // O_DIRECT reads bypass the page cache, so the flip is visible.
  auto m = s->load(3);
  if (s->backend_name().find("O_DIRECT") != std::string_view::npos) {
    EXPECT_EQ(m.code(), base::errc::corrupt);
  } else if (m.ok()) {
    EXPECT_EQ(m->payload, payload_for(3));
  }
  EXPECT_EQ(s->load(4)->payload, payload_for(4));
}

TEST(file_store, torn_tail_is_truncated_and_cleared) {
  storage_test::temp_dir d;
  auto c = cfg_for(d.path());
  {
    auto s = open_ok(c);
    for (std::uint64_t i = 1; i <= 10; ++i) ASSERT_TRUE(s->append("a", "", payload_for(i), kT0).ok());
    ASSERT_TRUE(s->close().ok());
  }
  // Half a record of garbage after the last one: what a torn write leaves.
  std::string path = d.path() + "/00000001.blk";
  std::uint64_t end = 0;
  {
    int fd = ::open(path.c_str(), O_RDWR);
    std::vector<std::uint8_t> b(64 << 10);
    ASSERT_GT(::pread(fd, b.data(), b.size(), 0), 0);
    record_view r;
    while (decode_record(b.data() + end, b.size() - end, &r) == decode_result::ok) end += rec_pad(r.len);
    std::vector<std::uint8_t> rec(record_size(1, 0, 100));
    encode_record(rec.data(), rec_kind::msg, 11, kT0, 0, "a", "", payload_for(11));
    ASSERT_EQ(::pwrite(fd, rec.data(), 70, off_t(end)), 70);
    ::close(fd);
  }
  {
    auto s = open_ok(c);
    EXPECT_EQ(s->recovery().truncated_bytes, 70u);
    EXPECT_EQ(s->recovery().corrupt_records, 1u);
    EXPECT_TRUE(s->recovery().lost_seqs.empty());
    EXPECT_EQ(s->state().last_seq, 10u);
    EXPECT_EQ(*s->append("a", "", "new", kT0), 11u);
    ASSERT_TRUE(s->close().ok());
  }
  auto s = open_ok(c);
  EXPECT_TRUE(s->recovery().clean());
  EXPECT_EQ(s->load(11)->payload, "new");
}

TEST(file_store, sync_backend_and_sync_durability) {
  storage_test::temp_dir d;
  auto c = cfg_for(d.path());
  c.backend = io::backend_kind::sync;
  c.dur = durability::sync;
  {
    auto s = open_ok(c);
    EXPECT_EQ(s->backend_name().substr(0, 6), "pwrite");
    for (std::uint64_t i = 1; i <= 30; ++i) ASSERT_TRUE(s->append("a", "", payload_for(i), kT0).ok());
    ASSERT_TRUE(s->close().ok());
  }
  c.backend = io::backend_kind::automatic;
  auto s = open_ok(c);
  EXPECT_EQ(s->state().msgs, 30u);
  EXPECT_EQ(s->load(30)->payload, payload_for(30));
}

TEST(file_store, works_on_tmpfs) {
  if (!std::filesystem::exists("/dev/shm")) GTEST_SKIP() << "no /dev/shm";
  std::string dir = "/dev/shm/pg_store_test_" + std::to_string(::getpid());
  {
    auto c = cfg_for(dir);
    auto s = open_ok(c);
    for (std::uint64_t i = 1; i <= 50; ++i) ASSERT_TRUE(s->append("a", "", payload_for(i), kT0).ok());
    ASSERT_TRUE(s->close().ok());
    s = open_ok(c);
    EXPECT_EQ(s->state().msgs, 50u);
    EXPECT_EQ(s->load(50)->payload, payload_for(50));
  }
  std::filesystem::remove_all(dir);
}

TEST(file_store, records_larger_than_a_block) {
  storage_test::temp_dir d;
  auto c = cfg_for(d.path(), 64 << 10);
  std::string big = payload_for(1, 300 << 10);
  {
    auto s = open_ok(c);
    ASSERT_TRUE(s->append("small", "", "x", kT0).ok());
    ASSERT_TRUE(s->append("big", "", big, kT0).ok());
    ASSERT_TRUE(s->append("small", "", "y", kT0).ok());
    ASSERT_TRUE(s->close().ok());
  }
  auto s = open_ok(c);
  EXPECT_TRUE(s->recovery().clean());
  EXPECT_EQ(s->load(2)->payload, big);
  EXPECT_EQ(s->load(3)->payload, "y");
}

TEST(file_store, group_commit_batches_records) {
  storage_test::temp_dir d;
  auto s = open_ok(cfg_for(d.path(), 1 << 20));
  for (int round = 0; round < 10; ++round) {
    for (int i = 0; i < 64; ++i) ASSERT_TRUE(s->append("g", "", "payload", kT0).ok());
    s->poll();
  }
  EXPECT_GT(s->backlog_bytes(), 0u);
  ASSERT_TRUE(s->flush().ok());
  EXPECT_EQ(s->backlog_bytes(), 0u);
  EXPECT_EQ(s->durable_seq(), 640u);
  EXPECT_LE(s->stats().writes, 12u);
  EXPECT_GE(s->stats().records, 640u);
}

}  // namespace
}  // namespace storage

namespace storage {
namespace {

bool file_contains(const std::string& dir, const std::string& needle) {
  for (const auto& de : std::filesystem::directory_iterator(dir)) {
    std::ifstream in(de.path(), std::ios::binary);
    std::string all((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (all.find(needle) != std::string::npos) return true;
  }
  return false;
}

TEST(file_store, erase_overwrites_bytes_on_disk_and_in_buffers) {
  storage_test::temp_dir d;
  auto c = cfg_for(d.path());
  {
    auto s = open_ok(c);
    for (int i = 1; i <= 40; ++i)
      ASSERT_TRUE(s->append("a", "", "SECRET-" + std::to_string(1000 + i), kT0).ok());
    ASSERT_TRUE(s->flush().ok());  // 1..40 on disk
    for (int i = 41; i <= 45; ++i)
      ASSERT_TRUE(s->append("a", "", "SECRET-" + std::to_string(1000 + i), kT0).ok());
    ASSERT_TRUE(s->remove(7, true).ok());    // on disk
    ASSERT_TRUE(s->remove(43, true).ok());   // still in the pending buffer
    ASSERT_TRUE(s->remove(8, false).ok());   // plain delete keeps bytes until compaction
    EXPECT_EQ(s->load(7).code(), base::errc::not_found);
    ASSERT_TRUE(s->close().ok());
  }
  EXPECT_FALSE(file_contains(d.path(), "SECRET-1007"));
  EXPECT_FALSE(file_contains(d.path(), "SECRET-1043"));
  EXPECT_TRUE(file_contains(d.path(), "SECRET-1008"));
  EXPECT_TRUE(file_contains(d.path(), "SECRET-1044"));
  auto s = open_ok(c);
  EXPECT_TRUE(s->recovery().clean());
  auto st = s->state(true);
  EXPECT_EQ(st.msgs, 42u);
  EXPECT_EQ(st.deleted, (std::vector<std::uint64_t>{7, 8, 43}));
  EXPECT_EQ(s->load(44)->payload, "SECRET-1044");
}

}  // namespace
}  // namespace storage

namespace storage {
namespace {

TEST(file_store, opened_on_one_thread_polled_on_another) {
  storage_test::temp_dir d;
  auto c = cfg_for(d.path());
  std::unique_ptr<file_store> s = open_ok(c);
  std::thread owner([&] {
    for (std::uint64_t i = 1; i <= 100; ++i) ASSERT_TRUE(s->append("t", "", payload_for(i), kT0).ok());
    ASSERT_TRUE(s->flush().ok());
    EXPECT_EQ(s->durable_seq(), 100u);
    ASSERT_TRUE(s->close().ok());
  });
  owner.join();
  auto r = open_ok(c);
  EXPECT_EQ(r->state().msgs, 100u);
}

}  // namespace
}  // namespace storage

namespace storage {
namespace {

std::size_t count_files(const std::string& dir, std::string_view suffix) {
  std::size_t n = 0;
  for (const auto& de : std::filesystem::directory_iterator(dir))
    if (de.path().filename().string().ends_with(suffix)) ++n;
  return n;
}

// Rollover takes the block prepared off-thread; nothing is left behind and nothing is lost.
TEST(file_store, rollover_uses_prepared_spare_block) {
  storage_test::temp_dir d;
  auto c = cfg_for(d.path(), 64 << 10);
  {
    auto s = open_ok(c);
    for (std::uint64_t i = 1; i <= 300; ++i) ASSERT_TRUE(s->append("p", "", payload_for(i, 1000), kT0).ok());
    ASSERT_TRUE(s->flush().ok());
    EXPECT_GE(s->block_count(), 5u);
    EXPECT_EQ(count_files(d.path(), ".blk"), s->block_count());
    ASSERT_TRUE(s->close().ok());
    EXPECT_EQ(count_files(d.path(), spare_block::kSuffix), 0u);
  }
  auto s = open_ok(c);
  EXPECT_EQ(s->state().msgs, 300u);
  for (std::uint64_t i = 1; i <= 300; ++i) ASSERT_EQ(s->load(i)->payload, payload_for(i, 1000)) << i;
}

// A crash can leave a half-prepared spare: open removes it and appends go on.
TEST(file_store, leftover_spare_block_is_removed_at_open) {
  storage_test::temp_dir d;
  auto c = cfg_for(d.path());
  {
    auto s = open_ok(c);
    ASSERT_TRUE(s->append("p", "", "x", kT0).ok());
    ASSERT_TRUE(s->close().ok());
  }
  std::ofstream(d.path() + "/next" + spare_block::kSuffix) << "half written";
  auto s = open_ok(c);
  EXPECT_EQ(count_files(d.path(), spare_block::kSuffix), 0u);
  EXPECT_EQ(*s->append("p", "", "y", kT0), 2u);
}

}  // namespace
}  // namespace storage

namespace storage {
namespace {

// Reading forward past the cache: one disk read serves many records, each still verified.
TEST(file_store, read_ahead_serves_forward_reads_from_one_disk_read) {
  storage_test::temp_dir d;
  auto c = cfg_for(d.path(), 4 << 20);
  c.cache_bytes = 4 << 10;  // nearly everything must come from disk
  c.first_block_size = c.block_size;  // one block: the window never crosses a block boundary
  auto s = open_ok(c);
  for (std::uint64_t i = 1; i <= 2000; ++i) ASSERT_TRUE(s->append("r", "", payload_for(i, 200), kT0).ok());
  ASSERT_TRUE(s->flush().ok());
  const auto before = s->stats();
  for (std::uint64_t i = 1; i <= 1900; ++i) ASSERT_EQ(s->load(i)->payload, payload_for(i, 200)) << i;
  const auto after = s->stats();
  EXPECT_LE(after.disk_reads - before.disk_reads, 3u);  // ~450 KiB of records, 1 MiB windows
  EXPECT_GT(after.readahead_hits - before.readahead_hits, 1800u);
  // A removed and erased message is gone from the window too.
  ASSERT_TRUE(s->remove(500, true).ok());
  EXPECT_EQ(s->load(500).code(), base::errc::not_found);
  EXPECT_EQ(s->load(501)->payload, payload_for(501, 200));
}

}  // namespace
}  // namespace storage
