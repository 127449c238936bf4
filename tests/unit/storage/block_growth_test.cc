// file_store block sizing: a new store starts with a small block and each next block doubles
// up to block_size, so disk use follows the data (issue 15 item 7: thousands of small streams).
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <map>

#include "storage/file_store.h"
#include "storage/record.h"
#include "tests/unit/storage/temp_dir.h"

namespace storage {
namespace {

constexpr std::int64_t kT0 = 1'700'000'000'000'000'000;

file_store_config growth_cfg(const std::string& dir) {
  file_store_config c;
  c.dir = dir;
  c.block_size = 256 << 10;
  c.first_block_size = 16 << 10;
  return c;
}

std::unique_ptr<file_store> open_ok(const file_store_config& c) {
  auto r = file_store::open(c);
  EXPECT_TRUE(r.ok()) << base::errc_name(r.code());
  return r.ok() ? std::move(*r) : nullptr;
}

// Block file id -> (file size, allocated bytes on disk).
struct block_info {
  std::uint64_t size = 0, allocated = 0;
};
std::map<std::uint32_t, block_info> blocks_on_disk(const std::string& dir) {
  std::map<std::uint32_t, block_info> out;
  for (const auto& de : std::filesystem::directory_iterator(dir)) {
    const std::string name = de.path().filename().string();
    if (!name.ends_with(".blk")) continue;
    struct stat st {};
    if (::stat(de.path().c_str(), &st) != 0) continue;
    out[std::uint32_t(std::stoul(name.substr(0, 8)))] = {std::uint64_t(st.st_size),
                                                          std::uint64_t(st.st_blocks) * 512};
  }
  return out;
}

TEST(block_growth, new_store_with_one_small_message_allocates_only_the_first_block) {
  storage_test::temp_dir d;
  auto s = open_ok(growth_cfg(d.path()));
  ASSERT_EQ(*s->append("kv.key", "", "hello", kT0), 1u);
  ASSERT_TRUE(s->flush().ok());
  auto b = blocks_on_disk(d.path());
  ASSERT_EQ(b.size(), 1u);
  EXPECT_EQ(b.begin()->second.size, 16u << 10);
  EXPECT_LE(b.begin()->second.allocated, 16u << 10);
  ASSERT_TRUE(s->close().ok());
}

TEST(block_growth, blocks_double_up_to_block_size_and_keep_doubling_after_reopen) {
  storage_test::temp_dir d;
  const auto c = growth_cfg(d.path());
  const std::string payload(1000, 'x');
  std::uint64_t seq = 0;
  {
    auto s = open_ok(c);
    // 16 + 32 KiB hold ~47 records of 1040 bytes: fill into the second block and reopen.
    for (; seq < 30; ++seq) ASSERT_TRUE(s->append("g", "", payload, kT0).ok());
    ASSERT_TRUE(s->close().ok());
  }
  auto b = blocks_on_disk(d.path());
  ASSERT_EQ(b.size(), 2u);
  EXPECT_EQ(b[1].size, 16u << 10);
  EXPECT_EQ(b[2].size, 32u << 10);
  auto s = open_ok(c);
  EXPECT_TRUE(s->recovery().clean());
  for (; seq < 1200; ++seq) ASSERT_TRUE(s->append("g", "", payload, kT0).ok());
  ASSERT_TRUE(s->flush().ok());
  b = blocks_on_disk(d.path());
  const std::uint64_t expect[] = {16u << 10, 32u << 10, 64u << 10, 128u << 10, 256u << 10, 256u << 10};
  for (std::uint32_t id = 1; id <= 6; ++id) {
    ASSERT_TRUE(b.count(id)) << id;
    EXPECT_EQ(b[id].size, expect[id - 1]) << "block " << id;
  }
  for (const auto& [id, info] : b) EXPECT_LE(info.size, c.block_size) << "block " << id;
  for (std::uint64_t i = 1; i <= seq; ++i) ASSERT_EQ(s->load(i)->payload, payload) << i;
  ASSERT_TRUE(s->close().ok());
}

// A record larger than the next doubling gets a block sized for it, so it is written inside
// zeroed, preallocated space (durability::write needs no metadata change) instead of growing
// a small file past its end.
TEST(block_growth, large_record_gets_a_block_that_fits_it) {
  storage_test::temp_dir d;
  const auto c = growth_cfg(d.path());
  const std::string big(100 << 10, 'b');
  {
    auto s = open_ok(c);
    ASSERT_EQ(*s->append("g", "", "small", kT0), 1u);
    ASSERT_EQ(*s->append("g", "", big, kT0), 2u);
    ASSERT_TRUE(s->close().ok());
  }
  auto b = blocks_on_disk(d.path());
  ASSERT_EQ(b.size(), 2u);
  EXPECT_EQ(b[1].size, 16u << 10);
  EXPECT_EQ(b[2].size, 128u << 10);  // 100 KiB + headers rounded up the doubling series
  auto s = open_ok(c);
  EXPECT_TRUE(s->recovery().clean());
  EXPECT_EQ(s->load(1)->payload, "small");
  EXPECT_EQ(s->load(2)->payload, big);
}

// Only a record larger than block_size itself still grows a (full-size, fresh) block.
TEST(block_growth, record_larger_than_block_size_still_fits_in_one_block) {
  storage_test::temp_dir d;
  const auto c = growth_cfg(d.path());
  const std::string huge(300 << 10, 'h');
  {
    auto s = open_ok(c);
    ASSERT_EQ(*s->append("g", "", huge, kT0), 1u);
    ASSERT_EQ(*s->append("g", "", "after", kT0), 2u);
    ASSERT_TRUE(s->close().ok());
  }
  auto s = open_ok(c);
  EXPECT_TRUE(s->recovery().clean());
  EXPECT_EQ(s->load(1)->payload, huge);
  EXPECT_EQ(s->load(2)->payload, "after");
}

}  // namespace
}  // namespace storage

namespace storage {
namespace {

// Metadata (a stream's and its consumers' configs) lives in the log: set_meta is one record
// through the group-commit write, the last value wins, an empty value removes the key, and
// every new block repeats it all, so releasing old blocks never loses it.
TEST(store_meta, survives_reopen_rollover_and_release_of_old_blocks) {
  storage_test::temp_dir d;
  const auto c = growth_cfg(d.path());
  {
    auto s = open_ok(c);
    EXPECT_TRUE(s->meta().empty());
    ASSERT_TRUE(s->set_meta("stream", R"({"name":"S","v":1})").ok());
    ASSERT_TRUE(s->set_meta("consumer/C1", "c1").ok());
    ASSERT_TRUE(s->set_meta("consumer/C2", "c2").ok());
    ASSERT_TRUE(s->flush().ok());
    EXPECT_EQ(s->durable_seq(), 0u);  // no message sequence taken
    ASSERT_TRUE(s->set_meta("stream", R"({"name":"S","v":2})").ok());
    ASSERT_TRUE(s->set_meta("consumer/C1", "").ok());
    // Fill several blocks, then drop every message so the old blocks are released.
    const std::string payload(3000, 'm');
    for (int i = 0; i < 200; ++i) ASSERT_TRUE(s->append("m", "", payload, kT0).ok());
    ASSERT_TRUE(s->flush().ok());
    ASSERT_GT(s->block_count(), 3u);
    ASSERT_EQ(*s->purge({}), 200u);
    ASSERT_TRUE(s->flush().ok());
    EXPECT_EQ(s->block_count(), 1u);
    ASSERT_TRUE(s->close().ok());
  }
  const std::map<std::string, std::string> want = {{"consumer/C2", "c2"}, {"stream", R"({"name":"S","v":2})"}};
  auto s = open_ok(c);
  EXPECT_TRUE(s->recovery().clean());
  EXPECT_EQ(s->meta(), want);
  EXPECT_EQ(s->state().last_seq, 200u);
  EXPECT_EQ(*s->append("m", "", "next", kT0), 201u);
}

// Durable without close(): what flush() reported is on disk even if the store is dropped.
TEST(store_meta, flushed_meta_survives_a_dropped_store) {
  storage_test::temp_dir d;
  const auto c = growth_cfg(d.path());
  {
    auto s = open_ok(c);
    ASSERT_TRUE(s->set_meta("stream", "cfg").ok());
    ASSERT_TRUE(s->flush().ok());
  }  // no close: like a crash after the create was answered
  auto s = open_ok(c);
  ASSERT_EQ(s->meta().count("stream"), 1u);
  EXPECT_EQ(s->meta().at("stream"), "cfg");
}

// Metadata larger than a small first block moves to a block that holds it (no endless rollover).
TEST(store_meta, large_meta_gets_a_block_that_fits_it) {
  storage_test::temp_dir d;
  const auto c = growth_cfg(d.path());
  const std::string big(40 << 10, 'c');
  {
    auto s = open_ok(c);
    ASSERT_TRUE(s->set_meta("stream", big).ok());
    ASSERT_EQ(*s->append("m", "", "x", kT0), 1u);
    for (int i = 0; i < 100; ++i) ASSERT_TRUE(s->append("m", "", std::string(1000, 'y'), kT0).ok());
    ASSERT_TRUE(s->close().ok());
  }
  auto s = open_ok(c);
  EXPECT_TRUE(s->recovery().clean());
  EXPECT_EQ(s->meta().at("stream"), big);
  EXPECT_EQ(s->state().msgs, 101u);
}

}  // namespace
}  // namespace storage
