// base::spsc_ring: capacity, FIFO order across wrap-around, full/empty, batched drain,
// move-only payloads and a two-thread order/no-loss stress run.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <thread>
#include <vector>

#include "src/base/spsc_ring.h"

namespace {

using base::spsc_ring;

TEST(spsc_ring, capacity_is_the_power_of_two_given) {
  spsc_ring<int> r2(2), r8(8), r1k(1024);
  EXPECT_EQ(r2.capacity(), 2u);
  EXPECT_EQ(r8.capacity(), 8u);
  EXPECT_EQ(r1k.capacity(), 1024u);
}

TEST(spsc_ring_death, rejects_non_power_of_two_or_tiny_capacity) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH(spsc_ring<int>(3), "assertion failed");
  EXPECT_DEATH(spsc_ring<int>(1), "assertion failed");
  EXPECT_DEATH(spsc_ring<int>(12), "assertion failed");
}

TEST(spsc_ring, new_ring_is_empty) {
  spsc_ring<int> r(4);
  EXPECT_TRUE(r.empty());
  EXPECT_FALSE(r.try_pop().has_value());
  EXPECT_EQ(r.drain([](int) { ADD_FAILURE() << "drained from an empty ring"; }), 0u);
}

TEST(spsc_ring, holds_exactly_capacity_items) {
  spsc_ring<int> r(8);
  for (int i = 0; i < 8; ++i) EXPECT_TRUE(r.try_push(i)) << i;
  EXPECT_FALSE(r.try_push(100));
  EXPECT_FALSE(r.try_push(101));
  EXPECT_FALSE(r.empty());
  // A full ring still yields everything in order, and the rejected items never appear.
  for (int i = 0; i < 8; ++i) {
    auto v = r.try_pop();
    ASSERT_TRUE(v.has_value());
    EXPECT_EQ(*v, i);
  }
  EXPECT_TRUE(r.empty());
  EXPECT_FALSE(r.try_pop().has_value());
}

TEST(spsc_ring, one_pop_makes_room_for_one_push) {
  spsc_ring<int> r(4);
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(r.try_push(i));
  ASSERT_FALSE(r.try_push(4));
  ASSERT_EQ(r.try_pop(), 0);
  EXPECT_TRUE(r.try_push(4));
  EXPECT_FALSE(r.try_push(5));
  for (int want = 1; want <= 4; ++want) EXPECT_EQ(r.try_pop(), want);
}

TEST(spsc_ring, fifo_order_across_many_wrap_arounds) {
  spsc_ring<std::uint64_t> r(4);
  std::uint64_t next_in = 0, next_out = 0;
  // Vary the fill level so head and tail cross the slot array boundary at every offset.
  for (int round = 0; round < 1000; ++round) {
    const int pushes = 1 + round % 4;
    for (int i = 0; i < pushes; ++i)
      if (r.try_push(next_in)) ++next_in;
    const int pops = 1 + (round * 7) % 4;
    for (int i = 0; i < pops; ++i) {
      auto v = r.try_pop();
      if (!v) break;
      ASSERT_EQ(*v, next_out);
      ++next_out;
    }
  }
  while (auto v = r.try_pop()) ASSERT_EQ(*v, next_out++);
  EXPECT_EQ(next_in, next_out);
  EXPECT_GT(next_in, 1000u);  // the indices went far past the capacity
}

TEST(spsc_ring, drain_batches_up_to_max_in_order) {
  spsc_ring<int> r(16);
  for (int i = 0; i < 10; ++i) ASSERT_TRUE(r.try_push(i));
  std::vector<int> got;
  auto sink = [&](int v) { got.push_back(v); };
  EXPECT_EQ(r.drain(sink, 0), 0u);
  EXPECT_TRUE(got.empty());
  EXPECT_EQ(r.drain(sink, 3), 3u);
  EXPECT_EQ(got, (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(r.drain(sink, 1), 1u);
  EXPECT_EQ(r.drain(sink), 6u);
  EXPECT_EQ(got, (std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}));
  EXPECT_EQ(r.drain(sink), 0u);
  EXPECT_TRUE(r.empty());
}

TEST(spsc_ring, drain_frees_the_slots_it_consumed) {
  spsc_ring<int> r(4);
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(r.try_push(i));
  EXPECT_EQ(r.drain([](int) {}, 2), 2u);
  EXPECT_TRUE(r.try_push(4));
  EXPECT_TRUE(r.try_push(5));
  EXPECT_FALSE(r.try_push(6));
  // A drain may stop at the consumer's cached view of the tail (it refreshes the view only
  // once that is used up), so the items arrive over at most two drains, in order.
  std::vector<int> got;
  std::size_t drains = 0;
  while (r.drain([&](int v) { got.push_back(v); }) > 0) ++drains;
  EXPECT_LE(drains, 2u);
  EXPECT_EQ(got, (std::vector<int>{2, 3, 4, 5}));
  EXPECT_TRUE(r.empty());
}

TEST(spsc_ring, drain_sees_items_pushed_after_it_cached_the_tail) {
  spsc_ring<int> r(8);
  ASSERT_TRUE(r.try_push(1));
  ASSERT_EQ(r.try_pop(), 1);
  EXPECT_FALSE(r.try_pop().has_value());  // consumer now caches tail == head
  ASSERT_TRUE(r.try_push(2));
  EXPECT_EQ(r.try_pop(), 2);
}

TEST(spsc_ring, move_only_payloads) {
  spsc_ring<std::unique_ptr<int>> r(2);
  ASSERT_TRUE(r.try_push(std::make_unique<int>(7)));
  ASSERT_TRUE(r.try_push(std::make_unique<int>(8)));
  EXPECT_FALSE(r.try_push(std::make_unique<int>(9)));
  // A refused push leaves the value with the caller, who can queue it and retry (the
  // dispatcher's overflow does); it used to be moved into the call and destroyed.
  auto keep = std::make_unique<int>(10);
  EXPECT_FALSE(r.try_push(std::move(keep)));
  ASSERT_TRUE(keep);
  EXPECT_EQ(*keep, 10);
  auto a = r.try_pop();
  ASSERT_TRUE(a && *a);
  EXPECT_EQ(**a, 7);
  int seen = 0;
  r.drain([&](std::unique_ptr<int>&& p) { seen = *p; });
  EXPECT_EQ(seen, 8);
  EXPECT_TRUE(r.try_push(std::move(keep)));
  EXPECT_FALSE(keep);
  EXPECT_EQ(**r.try_pop(), 10);
}

// One producer, one consumer, a bounded count: every value arrives exactly once, in order.
void stress(std::size_t capacity, std::uint64_t count, std::size_t batch) {
  spsc_ring<std::uint64_t> r(capacity);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  std::atomic<bool> timed_out{false};
  std::thread producer([&] {
    for (std::uint64_t i = 0; i < count;) {
      if (r.try_push(i)) {
        ++i;
      } else if (timed_out.load(std::memory_order_relaxed)) {
        return;
      } else {
        std::this_thread::yield();
      }
    }
  });
  std::uint64_t expected = 0, out_of_order = 0, batches = 0;
  while (expected < count) {
    const std::size_t n = r.drain(
        [&](std::uint64_t v) {
          if (v != expected) ++out_of_order;
          expected = v + 1;
        },
        batch);
    if (n == 0) {
      if (std::chrono::steady_clock::now() > deadline) {
        timed_out = true;
        break;
      }
      std::this_thread::yield();
    } else {
      EXPECT_LE(n, batch);
      ++batches;
    }
  }
  producer.join();
  EXPECT_FALSE(timed_out.load()) << "stress did not finish within 60 s";
  EXPECT_EQ(out_of_order, 0u);
  EXPECT_EQ(expected, count);
  EXPECT_TRUE(r.empty());
  EXPECT_FALSE(r.try_pop().has_value());
  EXPECT_GT(batches, 0u);
}

TEST(spsc_ring, two_thread_stress_large_ring) { stress(1024, 2'000'000, 64); }
TEST(spsc_ring, two_thread_stress_tiny_ring) { stress(2, 200'000, SIZE_MAX); }
TEST(spsc_ring, two_thread_stress_single_item_drains) { stress(64, 500'000, 1); }

}  // namespace
