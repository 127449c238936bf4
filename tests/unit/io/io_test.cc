#include <gtest/gtest.h>
#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <algorithm>
#include <thread>
#include <vector>

#include "io/aligned_buf.h"
#include "io/fault_file.h"
#include "io/file.h"
#include "io/ring.h"
#include "io/sync_backend.h"
#include "io/uring_backend.h"
#include "tests/unit/storage/temp_dir.h"

namespace io {
namespace {

TEST(aligned_buf, alignment_growth_and_padding) {
  aligned_buf b;
  b.append("hello", 5);
  EXPECT_TRUE(is_aligned(reinterpret_cast<std::uintptr_t>(b.data())));
  EXPECT_EQ(b.capacity() % kDioAlign, 0u);
  EXPECT_EQ(b.padded_size(), kDioAlign);
  EXPECT_EQ(b.data()[5], 0);
  std::string big(10000, 'x');
  b.append(big.data(), big.size());
  EXPECT_EQ(b.size(), 10005u);
  EXPECT_EQ(std::memcmp(b.data(), "hello", 5), 0);
  EXPECT_EQ(b.padded_size(), 3 * kDioAlign);
  aligned_buf moved(std::move(b));
  EXPECT_EQ(moved.size(), 10005u);
  EXPECT_EQ(align_up(1), kDioAlign);
  EXPECT_EQ(align_down(8191), kDioAlign);
}

TEST(aligned_buf_death, misaligned_dio_asserts) {
  aligned_buf b(kDioAlign);
  EXPECT_DEATH(assert_dio(100, b.data(), kDioAlign), "assertion failed");
  EXPECT_DEATH(assert_dio(0, b.data() + 8, kDioAlign), "assertion failed");
  EXPECT_DEATH(assert_dio(0, b.data(), 100), "assertion failed");
}

TEST(ring, init_and_probe) {
  ring r;
  auto st = r.init(8);
  if (!st) GTEST_SKIP() << "io_uring unavailable here";
  EXPECT_TRUE(r.ready());
  EXPECT_TRUE(r.features().op_write);
  EXPECT_TRUE(r.features().op_read);
  EXPECT_TRUE(r.features().op_fsync);
}

void round_trip(backend& be, const std::string& dir) {
  auto f = file::open(be, dir + "/f", true);
  ASSERT_TRUE(f.ok());
  ASSERT_TRUE(f->allocate(1 << 20).ok());
  aligned_buf w(3 * kDioAlign);
  for (int i = 0; i < 3 * int(kDioAlign); ++i) {
    std::uint8_t c = std::uint8_t(i * 7);
    w.append(&c, 1);
  }
  auto n = f->write_at(kDioAlign, w.data(), w.size(), true);
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(*n, w.size());
  // Async path: two writes in flight, reaped by token.
  ASSERT_TRUE(be.submit_write(f->handle(), 8 * kDioAlign, w.data(), kDioAlign, false, 11).ok());
  ASSERT_TRUE(be.submit_write(f->handle(), 9 * kDioAlign, w.data(), kDioAlign, true, 12).ok());
  int seen = 0;
  while (seen < 2) {
    completion c[4];
    int k = be.reap(c, 4, true);
    for (int i = 0; i < k; ++i) {
      EXPECT_TRUE(c[i].token == 11 || c[i].token == 12);
      EXPECT_EQ(c[i].res, int(kDioAlign));
    }
    seen += k;
  }
  aligned_buf r(3 * kDioAlign);
  r.resize(3 * kDioAlign);
  auto m = f->read_at(kDioAlign, r.data(), r.size());
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(*m, r.size());
  EXPECT_EQ(std::memcmp(r.data(), w.data(), w.size()), 0);
  EXPECT_TRUE(f->datasync().ok());
  EXPECT_EQ(*be.file_size(f->handle()), 1u << 20);
}

TEST(backend, uring_direct_round_trip) {
  storage_test::temp_dir d;
  uring_backend be(true);
  if (!be.init(16)) GTEST_SKIP() << "io_uring unavailable here";
  round_trip(be, d.path());
}

TEST(backend, uring_completion_eventfd_wakes_a_blocking_loop) {
  storage_test::temp_dir d;
  uring_backend be(true);
  if (!be.init(16)) GTEST_SKIP() << "io_uring unavailable here";
  int efd = be.completion_fd();
  ASSERT_GE(efd, 0);
  auto f = file::open(be, d.path() + "/e", true);
  ASSERT_TRUE(f.ok());
  aligned_buf w(kDioAlign);
  w.resize(kDioAlign);
  ASSERT_TRUE(be.submit_write(f->handle(), 0, w.data(), kDioAlign, false, 5).ok());
  pollfd p{efd, POLLIN, 0};
  ASSERT_EQ(::poll(&p, 1, 5000), 1);
  std::uint64_t v;
  ASSERT_EQ(::read(efd, &v, sizeof v), ssize_t(sizeof v));
  completion c;
  ASSERT_EQ(be.reap(&c, 1, false), 1);
  EXPECT_EQ(c.token, 5u);
}

TEST(backend, sync_round_trip_direct_and_buffered) {
  storage_test::temp_dir d;
  sync_backend a(true), b(false);
  round_trip(a, d.path());
  round_trip(b, d.sub(""));
}

TEST(backend, make_backend_picks_something_that_works) {
  storage_test::temp_dir d;
  auto be = make_backend(d.path());
  ASSERT_NE(be, nullptr);
  round_trip(*be, d.path());
  auto s = make_backend(d.path(), backend_kind::sync);
  EXPECT_EQ(s->name().substr(0, 6), "pwrite");
}

TEST(backend, errors_are_values) {
  sync_backend be(false);
  auto r = be.open("/nonexistent-dir/x", false);
  EXPECT_EQ(r.code(), base::errc::not_found);
  EXPECT_EQ(sys_error(ENOSPC).code, base::errc::no_space);
  EXPECT_EQ(sys_error(EIO).code, base::errc::io_error);
}

TEST(fault_backend, injects_each_fault_once) {
  storage_test::temp_dir d;
  fault_backend fb(std::make_unique<sync_backend>(true));
  auto fh = fb.open(d.path() + "/f", true);
  ASSERT_TRUE(fh.ok());
  ASSERT_TRUE(fb.allocate(*fh, 64 << 10).ok());
  aligned_buf w(2 * kDioAlign);
  w.resize(2 * kDioAlign);
  std::memset(w.data(), 0x5a, w.size());
  completion c;
  fb.fail_next_write();
  ASSERT_TRUE(fb.submit_write(*fh, 0, w.data(), w.size(), false, 1).ok());
  ASSERT_EQ(fb.reap(&c, 1, true), 1);
  EXPECT_EQ(c.res, -EIO);
  fb.short_next_write(kDioAlign);
  ASSERT_TRUE(fb.submit_write(*fh, 0, w.data(), w.size(), false, 2).ok());
  ASSERT_EQ(fb.reap(&c, 1, true), 1);
  EXPECT_EQ(c.res, int(kDioAlign));
  fb.flip_bit_next_write(5, 0);
  ASSERT_TRUE(fb.submit_write(*fh, 0, w.data(), w.size(), false, 3).ok());
  ASSERT_EQ(fb.reap(&c, 1, true), 1);
  EXPECT_EQ(c.res, int(w.size()));
  aligned_buf r(2 * kDioAlign);
  r.resize(2 * kDioAlign);
  ASSERT_TRUE(fb.read_at(*fh, 0, r.data(), r.size()).ok());
  EXPECT_EQ(r.data()[5], 0x5b);
  EXPECT_EQ(r.data()[6], 0x5a);
  fb.set_space_limit(32 << 10);
  EXPECT_EQ(fb.allocate(*fh, 64 << 10).code(), base::errc::no_space);
  fb.torn_next_write(100);
  ASSERT_TRUE(fb.submit_write(*fh, 0, w.data(), w.size(), true, 4).ok());
  EXPECT_TRUE(fb.crashed());
  ASSERT_EQ(fb.reap(&c, 1, true), 1);
  EXPECT_EQ(c.res, -ECANCELED);
  fb.close(*fh);
}

}  // namespace
}  // namespace io

namespace io {
namespace {

// Backends of one thread share one ring; each reaps only its own completions, whichever of
// them drains the ring.
TEST(uring_hub, backends_share_one_ring_and_reap_their_own_completions) {
  storage_test::temp_dir d;
  auto hub = std::make_shared<uring_hub>();
  if (!hub->init(16)) GTEST_SKIP() << "io_uring unavailable here";
  uring_backend a(true, hub), b(true, hub);
  EXPECT_EQ(hub->clients(), 2u);
  auto fa = file::open(a, d.path() + "/a", true);
  auto fb = file::open(b, d.path() + "/b", true);
  ASSERT_TRUE(fa.ok() && fb.ok());
  aligned_buf w(kDioAlign);
  w.resize(kDioAlign);
  for (std::uint64_t i = 0; i < 8; ++i) {
    ASSERT_TRUE(a.submit_write(fa->handle(), i * kDioAlign, w.data(), kDioAlign, false, 100 + i).ok());
    ASSERT_TRUE(b.submit_write(fb->handle(), i * kDioAlign, w.data(), kDioAlign, false, 200 + i).ok());
  }
  // b waits for all of its own; a's completions it meets on the way are parked for a.
  std::vector<std::uint64_t> got_b, got_a;
  completion c[4];
  while (got_b.size() < 8) {
    int n = b.reap(c, 4, true);
    ASSERT_GT(n, 0);
    for (int i = 0; i < n; ++i) got_b.push_back(c[i].token);
  }
  while (got_a.size() < 8) {
    int n = a.reap(c, 4, true);
    ASSERT_GT(n, 0);
    for (int i = 0; i < n; ++i) got_a.push_back(c[i].token);
  }
  std::sort(got_a.begin(), got_a.end());
  std::sort(got_b.begin(), got_b.end());
  for (std::uint64_t i = 0; i < 8; ++i) {
    EXPECT_EQ(got_a[i], 100 + i);
    EXPECT_EQ(got_b[i], 200 + i);
  }
  EXPECT_EQ(a.reap(c, 4, true), 0) << "nothing of a's in flight: no block, nothing returned";
  // A synchronous read of one client while the other has writes in flight.
  ASSERT_TRUE(b.submit_write(fb->handle(), 0, w.data(), kDioAlign, false, 300).ok());
  aligned_buf r(kDioAlign);
  r.resize(kDioAlign);
  EXPECT_EQ(*fa->read_at(0, r.data(), kDioAlign), kDioAlign);
  ASSERT_EQ(b.reap(c, 4, true), 1);
  EXPECT_EQ(c[0].token, 300u);
}

TEST(uring_hub, one_per_thread_shared_by_make_backend) {
  storage_test::temp_dir d;
  auto x = make_backend(d.path(), backend_kind::uring);
  auto y = make_backend(d.path(), backend_kind::uring);
  if (x->name().substr(0, 8) != "io_uring") GTEST_SKIP() << "io_uring unavailable here";
  auto hub = uring_hub::for_this_thread();
  ASSERT_TRUE(hub.ok());
  EXPECT_EQ((*hub)->clients(), 2u);
  std::shared_ptr<uring_hub> other;
  std::thread([&] { other = *uring_hub::for_this_thread(); }).join();
  EXPECT_NE(other.get(), hub->get());
}

}  // namespace
}  // namespace io
