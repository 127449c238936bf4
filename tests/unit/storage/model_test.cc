// Randomized model comparison: the same seeded operation sequence drives memory_store (the
// model) and file_store, compares every result, and reopens the file store at random
// points. Replay one seed with PG_STORE_SEED=<seed>.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>

#include "src/base/rng.h"
#include "storage/file_store.h"
#include "storage/memory_store.h"
#include "tests/unit/storage/naive_store.h"
#include "tests/unit/storage/temp_dir.h"

namespace storage {
namespace {

constexpr std::int64_t kT0 = 1'700'000'000'000'000'000;
constexpr std::int64_t kSec = 1'000'000'000;

const char* kSubjects[] = {"a.1", "a.2", "b.1", "b.2.x", "c", "kv.k1", "kv.k2", "kv.k3"};
const char* kFilters[] = {"", ">", "a.*", "*.1", "b.>", "kv.k2", "c", "none", "*.*"};

void expect_same(const base::result<stored_msg>& a, const base::result<stored_msg>& b) {
  ASSERT_EQ(a.code(), b.code());
  if (!a.ok()) return;
  EXPECT_EQ(a->seq, b->seq);
  EXPECT_EQ(a->ts, b->ts);
  EXPECT_EQ(a->ttl, b->ttl);
  EXPECT_EQ(a->subject, b->subject);
  EXPECT_EQ(a->headers, b->headers);
  EXPECT_EQ(a->payload, b->payload);
}

// One random operation on both stores, comparing results. op >= 92 is left to the caller.
void random_op(base::rng& r, std::uint64_t op, int i, std::int64_t now, stream_store& model,
               stream_store& fs) {
  if (op < 45) {
    std::string subj = kSubjects[r.below(8)];
    std::string hdr = r.chance(0.2) ? "NATS/1.0\r\nX: " + std::to_string(i) + "\r\n\r\n" : "";
    std::string pay(std::size_t(r.below(r.chance(0.05) ? 20000 : 300)), char('a' + i % 26));
    std::int64_t ttl = r.chance(0.1) ? std::int64_t(1 + r.below(5)) * kSec
                       : r.chance(0.05) ? ttl_never : ttl_none;
    auto a = model.append(subj, hdr, pay, now, ttl);
    auto b = fs.append(subj, hdr, pay, now, ttl);
    ASSERT_EQ(a.code(), b.code());
    ASSERT_EQ(*a, *b);
  } else if (op < 55) {
    std::uint64_t s = model.first_seq() + r.below(model.last_seq() - model.first_seq() + 2);
    bool erase = r.chance(0.3);
    ASSERT_EQ(model.remove(s, erase).code(), fs.remove(s, erase).code());
  } else if (op < 58) {
    purge_request p;
    if (r.chance(0.5)) p.filter = kFilters[r.below(9)];
    std::uint64_t k = r.below(3);
    if (k == 1) p.seq = model.first_seq() + r.below(20);
    if (k == 2) p.keep = r.below(10);
    auto a = model.purge(p);
    auto b = fs.purge(p);
    ASSERT_EQ(a.code(), b.code());
    if (a.ok()) {
      ASSERT_EQ(*a, *b);
    }
  } else if (op < 60) {
    std::uint64_t n = r.below(4);
    ASSERT_EQ(model.skip(n).code(), fs.skip(n).code());
  } else if (op < 64) {
    stream_limits l;
    if (r.chance(0.5)) l.max_msgs = std::int64_t(r.below(60));
    if (r.chance(0.3)) l.max_bytes = std::int64_t(r.below(20000));
    if (r.chance(0.5)) l.max_msgs_per_subject = std::int64_t(1 + r.below(5));
    if (r.chance(0.3)) l.max_age_ns = std::int64_t(1 + r.below(20)) * kSec;
    model.set_limits(l);
    fs.set_limits(l);
    std::vector<std::uint64_t> ra, rb;
    ASSERT_EQ(model.enforce_limits(&ra), fs.enforce_limits(&rb));
    ASSERT_EQ(ra, rb);
  } else if (op < 67) {
    std::vector<std::uint64_t> ra, rb;
    ASSERT_EQ(model.expire(now, &ra), fs.expire(now, &rb));
    ASSERT_EQ(ra, rb);
    ASSERT_EQ(model.next_expiry(), fs.next_expiry());
  } else if (op < 80) {
    std::uint64_t s = model.first_seq() + r.below(model.last_seq() - model.first_seq() + 2);
    expect_same(model.load(s), fs.load(s));
    std::int64_t t = now - std::int64_t(r.below(30)) * kSec;
    ASSERT_EQ(model.seq_for_time(t).code(), fs.seq_for_time(t).code());
  } else if (op < 88) {
    std::string f = kFilters[r.below(9)];
    std::uint64_t s = r.below(model.last_seq() + 2);
    expect_same(model.load_next(f, s), fs.load_next(f, s));
    std::vector<std::string> fl{kFilters[r.below(9)], kFilters[r.below(9)]};
    expect_same(model.load_next(fl, s), fs.load_next(fl, s));
  } else if (op < 92) {
    std::string f = kFilters[r.below(9)];
    expect_same(model.load_last(f), fs.load_last(f));
    ASSERT_EQ(model.subject_counts(f), fs.subject_counts(f));
    std::string subj = kSubjects[r.below(8)];
    ASSERT_EQ(model.subject_last_seq(subj), fs.subject_last_seq(subj));
    ASSERT_EQ(model.subject_count(subj), fs.subject_count(subj));
  }
}

void run_seed(std::uint64_t seed, int ops, io::backend_kind kind = io::backend_kind::automatic) {
  SCOPED_TRACE("seed " + std::to_string(seed) + " (replay: PG_STORE_SEED=" +
               std::to_string(seed) + ")");
  base::rng r(seed);
  storage_test::temp_dir d;
  file_store_config c;
  c.dir = d.path();
  c.block_size = 64 << 10;
  c.cache_bytes = std::size_t(r.below(3)) * (8 << 10);
  c.backend = kind;
  memory_store model(byte_accounting::file);
  auto opened = file_store::open(c);
  ASSERT_TRUE(opened.ok());
  std::unique_ptr<file_store> fs = std::move(*opened);
  std::int64_t now = kT0;
  for (int i = 0; i < ops; ++i) {
    SCOPED_TRACE("op " + std::to_string(i));
    now += std::int64_t(r.below(50)) * kSec / 100;
    std::uint64_t op = r.below(100);
    if (op < 92) {
      random_op(r, op, i, now, model, *fs);
      if (::testing::Test::HasFatalFailure()) return;
    } else if (op < 95) {
      fs->poll();
    } else if (op < 97) {
      auto rc = fs->compact(r.chance(0.5) ? 0.5 : 1.0);
      ASSERT_TRUE(rc.ok());
    } else {
      // Clean close and reopen: the file store must come back identical.
      ASSERT_TRUE(fs->close().ok());
      fs.reset();
      auto re = file_store::open(c);
      ASSERT_TRUE(re.ok());
      fs = std::move(*re);
      fs->set_limits(model.limits());
      ASSERT_TRUE(fs->recovery().clean());
    }
    ASSERT_EQ(model.state(true), fs->state(true));
  }
  ASSERT_TRUE(fs->flush().ok());
  ASSERT_EQ(fs->durable_seq(), model.last_seq());
  for (std::uint64_t s = model.first_seq(); s <= model.last_seq(); ++s)
    expect_same(model.load(s), fs->load(s));
}

TEST(model, memory_vs_file_randomized) {
  if (const char* env = std::getenv("PG_STORE_SEED")) {
    run_seed(std::strtoull(env, nullptr, 10), 3000);
    return;
  }
  for (std::uint64_t seed : {1ull, 2ull, 3ull, 0xfeedull, 0xc0ffeeull, 777ull})
    run_seed(seed, 2000);
}

}  // namespace
}  // namespace storage

namespace storage {
namespace {

// The shared index code against an independent, literal model.
TEST(model, naive_vs_memory_randomized) {
  for (std::uint64_t seed : {21ull, 22ull, 23ull, 24ull}) {
    SCOPED_TRACE("naive seed " + std::to_string(seed));
    base::rng r(seed);
    storage_test::naive_store naive;
    memory_store mem(byte_accounting::file);
    std::int64_t now = kT0;
    for (int i = 0; i < 1500; ++i) {
      SCOPED_TRACE("op " + std::to_string(i));
      now += std::int64_t(r.below(50)) * kSec / 100;
      random_op(r, r.below(92), i, now, naive, mem);
      if (HasFatalFailure()) return;
      ASSERT_EQ(naive.state(true), mem.state(true));
    }
    EXPECT_GT(naive.last_seq(), 500u);
    std::printf("naive seed %llu: last_seq %llu msgs %llu\n", (unsigned long long)seed,
                (unsigned long long)naive.last_seq(), (unsigned long long)naive.state().msgs);
  }
}

TEST(model, memory_vs_file_on_pwrite_fallback) {
  for (std::uint64_t seed : {11ull, 12ull}) run_seed(seed, 1000, io::backend_kind::sync);
}

}  // namespace
}  // namespace storage
