// Meta records (a stream's config) across a crash at every write during ingest with block
// rollover: once flush() returned, the metadata and last_seq must survive the crash, the
// removal of every message (as the torn-batch drop does), the release of every old block and
// another reopen. Old blocks hold the meta records too, so they may only go once the active
// block's own opening records (skip + every meta record) are on disk.
#include <gtest/gtest.h>

#include <chrono>
#include <map>

#include "io/fault_file.h"
#include "storage/file_store.h"
#include "tests/unit/storage/temp_dir.h"

namespace storage {
namespace {

constexpr std::int64_t kT0 = 1'700'000'000'000'000'000;
constexpr int kRecords = 360;  // ~64 KiB: blocks of 16, 32 and 64 KiB
const std::map<std::string, std::string> kMeta = {{"stream", std::string(700, 'c')}, {"consumer/D", "d"}};

file_store_config small_blocks(const std::string& dir) {
  file_store_config c;
  c.dir = dir;
  c.block_size = 256 << 10;
  c.first_block_size = 16 << 10;  // as streams use: rolls over after ~100 records
  return c;
}

struct faulty {
  io::fault_backend* fault = nullptr;
  std::unique_ptr<file_store> s;
};

faulty open_faulty(const file_store_config& c) {
  faulty f;
  auto fb = std::make_unique<io::fault_backend>(io::make_backend(c.dir));
  f.fault = fb.get();
  auto r = file_store::open(c, std::move(fb));
  EXPECT_TRUE(r.ok()) << base::errc_name(r.code());
  if (r.ok()) f.s = std::move(*r);
  return f;
}

std::unique_ptr<file_store> open_plain(const file_store_config& c) {
  auto r = file_store::open(c);
  EXPECT_TRUE(r.ok()) << base::errc_name(r.code());
  return r.ok() ? std::move(*r) : nullptr;
}

// After a crash: the metadata is there, then again after every message is removed (old
// blocks released) and the store is dropped and reopened; last_seq never goes back.
void check_meta_survives_drop_of_everything(const file_store_config& c, const std::string& where) {
  SCOPED_TRACE(where);
  std::uint64_t last = 0;
  {
    auto s = open_plain(c);
    ASSERT_TRUE(s);
    ASSERT_EQ(s->meta(), kMeta) << "after the crash";
    last = s->last_seq();
    for (std::uint64_t q = 1; q <= last; ++q) (void)s->remove(q);
    ASSERT_TRUE(s->flush().ok());
    ASSERT_EQ(s->meta(), kMeta);
  }  // dropped, not closed
  auto s = open_plain(c);
  ASSERT_TRUE(s);
  EXPECT_EQ(s->meta(), kMeta) << "after dropping every message and reopening";
  EXPECT_EQ(s->last_seq(), last);
  EXPECT_EQ(s->state().msgs, 0u);
}

// Appends kRecords records, writing after every 3 with one write in flight at a time (so rollovers
// fall between writes at every kind of point). Write number `crash_at` (0 = none) fails, or is
// torn after `torn` bytes; nothing after it reaches the disk (the process is gone). Returns
// the number of writes.
std::uint64_t ingest(faulty& f, std::uint64_t crash_at, std::size_t torn) {
  const std::string payload(120, 'p');
  auto armed = [&] { return crash_at != 0 && f.fault->writes() >= crash_at - 1; };
  bool fired = false;
  for (int i = 0; i < kRecords; ++i) {
    if (!f.s->append("crash.b", "", payload, kT0).ok()) break;
    if (i % 3 != 2) continue;
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while ((f.s->backlog_bytes() > 0 || f.s->durable_seq() < f.s->last_seq()) &&
           std::chrono::steady_clock::now() < give_up) {
      if (!fired && armed()) {
        fired = true;
        if (torn)
          f.fault->torn_next_write(torn);
        else
          f.fault->fail_next_write();
      }
      f.s->poll();
      if (f.fault->crashed() || f.s->failure().code != base::errc::ok) return f.fault->writes();
    }
  }
  return f.fault->writes();
}

TEST(meta_crash, every_write_point_during_rollover_keeps_meta_and_last_seq) {
  storage_test::temp_dir probe;
  std::uint64_t writes = 0;
  {
    auto f = open_faulty(small_blocks(probe.path()));
    for (const auto& [k, v] : kMeta) ASSERT_TRUE(f.s->set_meta(k, v).ok());
    ASSERT_TRUE(f.s->flush().ok());
    const std::uint64_t w0 = f.fault->writes();
    writes = ingest(f, 0, 0) - w0;
    ASSERT_TRUE(f.s->flush().ok());
    ASSERT_GE(f.s->block_count(), 3u);  // the ingest rolls over several times
    ASSERT_EQ(f.s->state().msgs, std::uint64_t(kRecords));
  }
  ASSERT_GT(writes, 60u);
  for (std::uint64_t k = 1; k <= writes; ++k) {
    for (std::size_t torn : {std::size_t(0), std::size_t(100)}) {
      storage_test::temp_dir d;
      const auto c = small_blocks(d.path());
      {
        auto f = open_faulty(c);
        ASSERT_TRUE(f.s);
        for (const auto& [key, v] : kMeta) ASSERT_TRUE(f.s->set_meta(key, v).ok());
        ASSERT_TRUE(f.s->flush().ok());  // the create is answered: the config must survive
        ingest(f, f.fault->writes() + k, torn);
        ASSERT_TRUE(f.fault->crashed() || f.s->failure().code != base::errc::ok) << k;
      }  // the process dies
      check_meta_survives_drop_of_everything(c, "crash at ingest write " + std::to_string(k) +
                                                    (torn ? " (torn)" : " (lost)"));
      if (HasFailure()) return;
    }
  }
}

// At run time: the old block dies (its messages removed) and its last write completes while
// the new block's first write (its opening records) has not reached the disk: the old block
// must not be deleted yet, or a crash then leaves no copy of the metadata.
TEST(meta_crash, dead_block_is_kept_until_the_next_blocks_opening_is_written) {
  storage_test::temp_dir d;
  const auto c = small_blocks(d.path());
  {
    auto f = open_faulty(c);
    ASSERT_TRUE(f.s);
    for (const auto& [k, v] : kMeta) ASSERT_TRUE(f.s->set_meta(k, v).ok());
    ASSERT_TRUE(f.s->flush().ok());
    const std::string payload(120, 'p');
    while (f.s->block_count() == 1) {
      ASSERT_TRUE(f.s->append("crash.b", "", payload, kT0).ok());
      if (f.s->block_count() == 1) {
        ASSERT_TRUE(f.s->flush().ok());
      }
    }
    // Block 1 is all written; block 2's opening records and last message are only pending.
    const std::uint64_t last = f.s->last_seq();
    for (std::uint64_t q = 1; q < last; ++q) ASSERT_TRUE(f.s->remove(q).ok());  // block 1 dies
    const std::uint64_t w = f.fault->writes();
    f.fault->fail_next_write();  // block 2's first write never reaches the disk
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (f.fault->writes() < w + 1 && std::chrono::steady_clock::now() < give_up) f.s->poll();
    ASSERT_EQ(f.fault->writes(), w + 1);
    for (int i = 0; i < 100; ++i) f.s->poll();  // its completion is reaped
  }  // crash
  auto s = open_plain(c);
  ASSERT_TRUE(s);
  EXPECT_EQ(s->meta(), kMeta);
}

}  // namespace
}  // namespace storage
