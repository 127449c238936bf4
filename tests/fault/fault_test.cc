// Faults injected through io::fault_backend under a file_store, each followed by a reopen:
// every record reported durable is there and intact, nothing corrupt is served, and the
// loss report is exact.
#include <gtest/gtest.h>

#include "io/fault_file.h"
#include "storage/file_store.h"
#include "storage/record.h"
#include "tests/unit/storage/temp_dir.h"

namespace storage {
namespace {

constexpr std::int64_t kT0 = 1'700'000'000'000'000'000;
constexpr std::size_t kPayload = 500;
const std::size_t kRec = record_size(1, 0, kPayload);  // subject "t"
constexpr std::size_t kSkipRec = kRecHeader;            // each block opens with one

std::string payload_for(std::uint64_t seq) {
  std::string p(kPayload, 'a');
  for (std::size_t i = 0; i < kPayload; ++i) p[i] = char('a' + (seq * 31 + i) % 26);
  return p;
}

struct harness {
  storage_test::temp_dir dir;
  file_store_config cfg;
  io::fault_backend* fault = nullptr;
  std::unique_ptr<file_store> s;
  std::uint64_t durable = 0;
  int errors = 0;
  std::uint64_t err_first = 0, err_last = 0;

  harness() {
    cfg.dir = dir.path();
    cfg.block_size = 256 << 10;
    cfg.first_block_size = cfg.block_size;  // the byte offsets below assume one block
    cfg.cache_bytes = 0;
  }
  void open_faulty() {
    auto fb = std::make_unique<io::fault_backend>(io::make_backend(cfg.dir));
    fault = fb.get();
    auto r = file_store::open(cfg, std::move(fb));
    ASSERT_TRUE(r.ok());
    s = std::move(*r);
    s->on_durable([this](std::uint64_t d) { durable = d; });
    s->on_error([this](base::error, std::uint64_t a, std::uint64_t b) {
      ++errors;
      err_first = a;
      err_last = b;
    });
  }
  void append_n(int n) {
    for (int i = 0; i < n; ++i) {
      std::uint64_t seq = s->last_seq() + 1;
      auto r = s->append("t", "", payload_for(seq), kT0);
      ASSERT_TRUE(r.ok());
      ASSERT_EQ(*r, seq);
    }
  }
  void pump() {
    for (int i = 0; i < 50; ++i) s->poll();
  }
  // Drops the store (no flush), reopens without faults, checks every durable record.
  void reopen_and_check() {
    s.reset();
    fault = nullptr;
    auto r = file_store::open(cfg);
    ASSERT_TRUE(r.ok());
    s = std::move(*r);
    ASSERT_GE(s->last_seq(), durable);
    for (std::uint64_t q = 1; q <= s->last_seq(); ++q) {
      auto m = s->load(q);
      if (q <= durable) {
        ASSERT_TRUE(m.ok()) << "durable seq " << q << " missing";
      }
      if (m.ok()) {
        ASSERT_EQ(m->payload, payload_for(q)) << q;
      } else {
        ASSERT_EQ(m.code(), base::errc::not_found) << q;
      }
    }
  }
};

TEST(fault, failed_write_is_an_error_not_a_loss) {
  harness h;
  h.open_faulty();
  h.append_n(40);
  ASSERT_TRUE(h.s->flush().ok());
  ASSERT_EQ(h.durable, 40u);
  h.fault->fail_next_write();
  h.append_n(10);
  h.pump();
  EXPECT_EQ(h.errors, 1);
  EXPECT_EQ(h.err_first, 41u);
  EXPECT_EQ(h.err_last, 50u);
  EXPECT_EQ(h.durable, 40u);
  EXPECT_EQ(h.s->append("t", "", "x", kT0).code(), base::errc::io_error);
  EXPECT_EQ(h.s->flush().code(), base::errc::io_error);
  h.reopen_and_check();
  EXPECT_TRUE(h.s->recovery().clean());
  EXPECT_EQ(h.s->last_seq(), 40u);
}

TEST(fault, short_write_is_resumed) {
  harness h;
  h.open_faulty();
  h.append_n(5);
  ASSERT_TRUE(h.s->flush().ok());
  h.fault->short_next_write(4096);
  h.append_n(30);  // ~16 KiB in one batch
  ASSERT_TRUE(h.s->flush().ok());
  EXPECT_EQ(h.s->stats().short_writes, 1u);
  EXPECT_EQ(h.durable, 35u);
  h.reopen_and_check();
  EXPECT_TRUE(h.s->recovery().clean());
  EXPECT_EQ(h.s->last_seq(), 35u);
}

TEST(fault, torn_write_at_crash_point_recovers_exact_prefix) {
  for (std::size_t torn : {1ul, 100ul, 4096ul, 5000ul, 8192ul, 9000ul, 12000ul}) {
    SCOPED_TRACE("torn at " + std::to_string(torn));
    harness h;
    h.open_faulty();
    h.append_n(13);
    ASSERT_TRUE(h.s->flush().ok());
    const std::uint64_t end = kSkipRec + 13 * kRec;
    const std::uint64_t seg = end & ~std::uint64_t(4095);
    h.fault->torn_next_write(torn);
    h.append_n(30);
    h.pump();
    ASSERT_TRUE(h.fault->crashed());
    EXPECT_EQ(h.durable, 13u);
    EXPECT_EQ(h.errors, 1);
    h.reopen_and_check();
    // Whole records inside the persisted prefix survive; the straddling one is cut.
    std::uint64_t persisted = std::max<std::uint64_t>(seg + torn, end);
    std::uint64_t whole = (persisted - end) / kRec;
    EXPECT_EQ(h.s->last_seq(), 13 + whole);
    bool partial = persisted > end + whole * kRec;
    EXPECT_EQ(h.s->recovery().truncated_bytes > 0, partial);
    EXPECT_LE(h.s->recovery().truncated_bytes, kRec);
    EXPECT_TRUE(h.s->recovery().lost_seqs.empty());
    // After the repair the store appends and reopens cleanly.
    h.append_n(3);
    ASSERT_TRUE(h.s->close().ok());
    h.durable = h.s->last_seq();
    h.reopen_and_check();
    EXPECT_TRUE(h.s->recovery().clean());
  }
}

TEST(fault, bit_flip_is_detected_and_reported_exactly) {
  harness h;
  h.open_faulty();
  h.append_n(13);
  ASSERT_TRUE(h.s->flush().ok());
  const std::uint64_t end = kSkipRec + 13 * kRec;
  const std::uint64_t seg = end & ~std::uint64_t(4095);
  // Record 6 of the next batch is seq 19; flip a bit in the middle of its payload.
  const std::uint64_t rec19 = end + 5 * kRec;
  h.fault->flip_bit_next_write(rec19 - seg + kRecHeader + 1 + kPayload / 2, 3);
  h.append_n(20);
  ASSERT_TRUE(h.s->flush().ok());  // silent corruption: the write "succeeded"
  ASSERT_EQ(h.durable, 33u);
  h.s.reset();
  auto r = file_store::open(h.cfg);
  ASSERT_TRUE(r.ok());
  h.s = std::move(*r);
  EXPECT_EQ(h.s->recovery().lost_seqs, (std::vector<std::uint64_t>{19}));
  EXPECT_EQ(h.s->recovery().corrupt_records, 1u);
  EXPECT_EQ(h.s->state().lost, (std::vector<std::uint64_t>{19}));
  EXPECT_EQ(h.s->load(19).code(), base::errc::not_found);
  for (std::uint64_t q = 1; q <= 33; ++q)
    if (q != 19) {
      ASSERT_EQ(h.s->load(q)->payload, payload_for(q)) << q;
    }
}

TEST(fault, enospc_on_new_block_rejects_append_cleanly) {
  harness h;
  h.cfg.block_size = 64 << 10;
  auto fb = std::make_unique<io::fault_backend>(io::make_backend(h.cfg.dir));
  fb->set_space_limit(2 * h.cfg.block_size);
  h.fault = fb.get();
  auto r = file_store::open(h.cfg, std::move(fb));
  ASSERT_TRUE(r.ok());
  h.s = std::move(*r);
  std::uint64_t accepted = 0;
  base::errc last = base::errc::ok;
  for (int i = 0; i < 400; ++i) {
    auto a = h.s->append("t", "", payload_for(accepted + 1), kT0);
    if (!a.ok()) {
      last = a.code();
      break;
    }
    accepted = *a;
    h.s->poll();
  }
  EXPECT_EQ(last, base::errc::no_space);
  EXPECT_EQ(h.s->last_seq(), accepted);  // the rejected message took no sequence
  ASSERT_TRUE(h.s->flush().ok());        // everything accepted is still written
  h.durable = h.s->durable_seq();
  EXPECT_EQ(h.durable, accepted);
  h.reopen_and_check();
  EXPECT_EQ(h.s->last_seq(), accepted);
}

TEST(fault, enospc_on_write_fails_the_store_without_loss) {
  harness h;
  h.open_faulty();
  h.append_n(20);
  ASSERT_TRUE(h.s->flush().ok());
  h.fault->set_space_limit(kSkipRec + 20 * kRec + 1000);  // the next batch crosses it
  h.append_n(20);
  h.pump();
  EXPECT_EQ(h.errors, 1);
  EXPECT_EQ(h.s->failure().code, base::errc::no_space);
  EXPECT_EQ(h.s->append("t", "", "x", kT0).code(), base::errc::no_space);
  h.reopen_and_check();
  EXPECT_EQ(h.s->last_seq(), 20u);
}

}  // namespace
}  // namespace storage
