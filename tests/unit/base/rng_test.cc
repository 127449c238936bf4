// base::rng replays from its seed: randomized tests and simulations print a seed and rely
// on getting the same sequence back, on any build.
#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <set>
#include <vector>

#include "src/base/rng.h"

namespace {

std::vector<std::uint64_t> draw(std::uint64_t seed, int n) {
  base::rng r(seed);
  std::vector<std::uint64_t> v;
  for (int i = 0; i < n; ++i) v.push_back(r.next());
  return v;
}

TEST(rng, same_seed_replays_the_same_sequence) {
  for (std::uint64_t seed : {0ull, 1ull, 42ull, 0xdeadbeefull, ~0ull})
    EXPECT_EQ(draw(seed, 10000), draw(seed, 10000)) << seed;
}

TEST(rng, different_seeds_give_different_sequences) {
  std::set<std::vector<std::uint64_t>> seen;
  for (std::uint64_t seed = 0; seed < 64; ++seed) seen.insert(draw(seed, 4));
  EXPECT_EQ(seen.size(), 64u);
}

TEST(rng, a_copy_continues_identically) {
  base::rng a(7);
  for (int i = 0; i < 100; ++i) a.next();
  base::rng b = a;
  for (int i = 0; i < 1000; ++i) ASSERT_EQ(a.next(), b.next()) << i;
}

TEST(rng, zero_seed_is_not_degenerate) {
  // xoshiro must never start from the all-zero state; splitmix64 expansion prevents it.
  const auto v = draw(0, 8);
  EXPECT_EQ(std::set<std::uint64_t>(v.begin(), v.end()).size(), 8u);
  for (auto x : v) EXPECT_NE(x, 0u);
}

// Pins the generator. A change here invalidates every seed recorded in old test logs and
// bug reports, so it must be deliberate. Values: splitmix64 seeding + xoshiro256**.
TEST(rng, sequence_is_pinned_for_recorded_seeds) {
  // Cross-checked against an independent implementation of the published algorithms.
  const std::vector<std::uint64_t> seed42 = {0x15780b2e0c2ec716ull, 0x6104d9866d113a7eull,
                                             0xae17533239e499a1ull, 0xecb8ad4703b360a1ull};
  const std::vector<std::uint64_t> seed0 = {0x99ec5f36cb75f2b4ull, 0xbf6e1f784956452aull,
                                            0x1a5f849d4933e6e0ull, 0x6aa594f1262d2d2cull};
  EXPECT_EQ(draw(42, 4), seed42);
  EXPECT_EQ(draw(0, 4), seed0);
}

TEST(rng, below_stays_in_range_and_covers_it) {
  base::rng r(123);
  std::array<int, 10> hist{};
  for (int i = 0; i < 100000; ++i) {
    const auto v = r.below(10);
    ASSERT_LT(v, 10u);
    ++hist[v];
  }
  for (int b = 0; b < 10; ++b) {
    EXPECT_GT(hist[b], 9000) << b;  // expect ~10000 each; generous bounds
    EXPECT_LT(hist[b], 11000) << b;
  }
  for (int i = 0; i < 1000; ++i) EXPECT_EQ(r.below(1), 0u);
}

TEST(rng, chance_extremes_and_rate) {
  base::rng r(99);
  int hits = 0;
  for (int i = 0; i < 10000; ++i) {
    EXPECT_FALSE(r.chance(0.0));
    EXPECT_TRUE(r.chance(1.0));
    hits += r.chance(0.25) ? 1 : 0;
  }
  EXPECT_GT(hits, 2200);
  EXPECT_LT(hits, 2800);
}

}  // namespace
