// Many small stores on one thread (issue 15 item 7): they share the thread's io_uring and
// keep their block files in a bounded fd cache, so descriptors stay bounded however many
// stores there are; blocks the cache closed are reopened for reads and writes.
#include <gtest/gtest.h>

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "io/fd_cache.h"
#include "storage/file_store.h"
#include "tests/unit/storage/temp_dir.h"

namespace storage {
namespace {

constexpr std::int64_t kT0 = 1'700'000'000'000'000'000;

std::size_t open_fds() {
  std::size_t n = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator("/proc/self/fd")) ++n;
  return n;
}

file_store_config cfg_for(const std::string& dir, io::fd_cache& fds) {
  file_store_config c;
  c.dir = dir;
  c.block_size = 64 << 10;
  c.first_block_size = 16 << 10;
  c.cache_bytes = 1 << 10;  // reads go to disk
  c.fds = &fds;
  return c;
}

std::string payload_for(std::uint64_t seq, std::size_t n = 700) {
  std::string p(n, 'a');
  for (std::size_t i = 0; i < n; ++i) p[i] = char('a' + (seq * 7 + i) % 26);
  return p;
}

TEST(many_stores, descriptors_stay_bounded_across_create_and_recovery) {
  storage_test::temp_dir d;
  io::fd_cache fds(16);
  constexpr int kStores = 300;
  const std::size_t base = open_fds();
  {
    std::vector<std::unique_ptr<file_store>> stores;
    for (int i = 0; i < kStores; ++i) {
      auto s = file_store::open(cfg_for(d.sub("s" + std::to_string(i)), fds));
      ASSERT_TRUE(s.ok()) << i << ": " << base::errc_name(s.code());
      ASSERT_TRUE((*s)->append("k." + std::to_string(i), "", payload_for(std::uint64_t(i)), kT0).ok());
      ASSERT_TRUE((*s)->flush().ok());
      stores.push_back(std::move(*s));
    }
    // One ring for all of them plus at most the cache's bound of block files (each store
    // used to hold two: its ring and its block).
    EXPECT_LE(open_fds(), base + 16 + 4) << kStores << " stores";
    EXPECT_LE(fds.open_count(), 16u);
    for (auto& s : stores) ASSERT_TRUE(s->close().ok());
  }
  EXPECT_LE(open_fds(), base + 1);
  std::vector<std::unique_ptr<file_store>> again;
  for (int i = 0; i < kStores; ++i) {
    auto s = file_store::open(cfg_for(d.sub("s" + std::to_string(i)), fds));
    ASSERT_TRUE(s.ok()) << i;
    again.push_back(std::move(*s));
  }
  EXPECT_LE(open_fds(), base + 16 + 4) << "after recovering " << kStores << " stores";
  for (int i = 0; i < kStores; ++i) {
    auto m = again[std::size_t(i)]->load(1);
    ASSERT_TRUE(m.ok()) << i;
    EXPECT_EQ(m->subject, "k." + std::to_string(i));
    EXPECT_EQ(m->payload, payload_for(std::uint64_t(i)));
    // Still writable after its block was closed and reopened.
    ASSERT_TRUE(again[std::size_t(i)]->append("k.x", "", "more", kT0 + 1).ok());
    ASSERT_TRUE(again[std::size_t(i)]->flush().ok());
  }
  EXPECT_GT(fds.stats().opens, 0u);
  EXPECT_LE(fds.open_count(), 16u);
}

TEST(many_stores, a_reader_reopens_sealed_blocks_the_cache_closed) {
  storage_test::temp_dir d;
  io::fd_cache fds(1);  // only the most recent block file stays open
  auto s = file_store::open(cfg_for(d.sub("a"), fds));
  auto other = file_store::open(cfg_for(d.sub("b"), fds));
  ASSERT_TRUE(s.ok() && other.ok());
  constexpr std::uint64_t kMsgs = 400;  // ~300 KiB: several blocks
  for (std::uint64_t i = 1; i <= kMsgs; ++i) {
    ASSERT_TRUE((*s)->append("a", "", payload_for(i), kT0 + std::int64_t(i)).ok());
    if (i % 16 == 0) (*s)->poll();
  }
  ASSERT_TRUE((*s)->flush().ok());
  ASSERT_GE((*s)->block_count(), 4u);
  // Another store's block is now the cached one; every sealed block of s was closed.
  ASSERT_TRUE((*other)->append("b", "", "x", kT0).ok());
  ASSERT_TRUE((*other)->flush().ok());
  const auto opens = fds.stats().opens;
  for (std::uint64_t i = 1; i <= kMsgs; i += 37) {
    auto m = (*s)->load(i);
    ASSERT_TRUE(m.ok()) << i;
    EXPECT_EQ(m->payload, payload_for(i));
    // The other store needs its block in between, so s's block is closed again.
    ASSERT_TRUE((*other)->load(1).ok());
  }
  EXPECT_GT(fds.stats().opens, opens + 5) << "sealed blocks were read through reopened descriptors";
  EXPECT_LE(fds.open_count(), 1u);
}

TEST(many_stores, a_block_with_a_write_in_flight_is_not_closed_under_it) {
  storage_test::temp_dir d;
  io::fd_cache fds(1);
  auto s = file_store::open(cfg_for(d.sub("a"), fds));
  ASSERT_TRUE(s.ok());
  ASSERT_TRUE((*s)->flush().ok());
  for (std::uint64_t i = 1; i <= 20; ++i)
    ASSERT_TRUE((*s)->append("a", "", payload_for(i), kT0).ok());
  (*s)->poll();  // cuts and submits: the block is pinned while the write is queued
  // Other stores' blocks push the cache over its bound meanwhile.
  std::vector<std::unique_ptr<file_store>> others;
  for (int i = 0; i < 5; ++i) {
    auto o = file_store::open(cfg_for(d.sub("o" + std::to_string(i)), fds));
    ASSERT_TRUE(o.ok());
    others.push_back(std::move(*o));
  }
  ASSERT_TRUE((*s)->flush().ok());
  EXPECT_EQ((*s)->durable_seq(), 20u);
  ASSERT_TRUE((*s)->close().ok());
  s->reset();
  auto r = file_store::open(cfg_for(d.sub("a"), fds));
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE((*r)->recovery().clean());
  for (std::uint64_t i = 1; i <= 20; ++i) EXPECT_EQ((*r)->load(i)->payload, payload_for(i)) << i;
}

}  // namespace
}  // namespace storage
