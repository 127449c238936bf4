#include "src/core/subject_overlap.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "src/core/subject.h"

namespace {

using core::overlap_index;

TEST(OverlapIndex, FindsTheSmallestOverlappingId) {
  overlap_index idx;
  idx.insert("a.b", 0);
  idx.insert("a.*", 1);
  idx.insert("x.>", 2);
  idx.insert("c", 3);
  EXPECT_EQ(idx.first_overlap("a.b"), 0u);
  EXPECT_EQ(idx.first_overlap("a.c"), 1u);
  EXPECT_EQ(idx.first_overlap("*.b"), 0u);
  EXPECT_EQ(idx.first_overlap("x.y.z"), 2u);
  EXPECT_EQ(idx.first_overlap(">"), 0u);
  EXPECT_EQ(idx.first_overlap("*"), 3u);
  EXPECT_EQ(idx.first_overlap("x"), std::nullopt);  // '>' needs at least one more token
  EXPECT_EQ(idx.first_overlap("a"), std::nullopt);
  EXPECT_EQ(idx.first_overlap("a.b.c"), std::nullopt);
  EXPECT_EQ(idx.first_overlap("d.>"), std::nullopt);
}

// Property: the index answers what comparing every earlier subject pairwise answers.
TEST(OverlapIndex, AgreesWithPairwiseComparison) {
  std::mt19937 rng(7);
  const std::vector<std::string> toks = {"a", "b", "c", "*", ">"};
  auto random_subject = [&] {
    std::string s;
    const int n = 1 + int(rng() % 4);
    for (int i = 0; i < n; ++i) {
      std::string t = toks[rng() % toks.size()];
      if (t == ">" && i + 1 < n) t = "*";
      s += (i ? "." : "") + t;
    }
    return s;
  };
  for (int round = 0; round < 300; ++round) {
    std::vector<std::string> subjects;
    overlap_index idx;
    for (int i = 0; i < 12; ++i) {
      const std::string s = random_subject();
      ASSERT_TRUE(core::valid_subject(s)) << s;
      std::optional<std::size_t> want;
      for (std::size_t k = 0; k < subjects.size() && !want; ++k)
        if (core::subjects_overlap(subjects[k], s)) want = k;
      EXPECT_EQ(idx.first_overlap(s), want) << s;
      idx.insert(s, subjects.size());
      subjects.push_back(s);
    }
  }
}

std::string random_subject(std::mt19937& rng) {
  static const std::vector<std::string> toks = {"a", "b", "c", "*", ">"};
  std::string s;
  const int n = 1 + int(rng() % 4);
  for (int i = 0; i < n; ++i) {
    std::string t = toks[rng() % toks.size()];
    if (t == ">" && i + 1 < n) t = "*";
    s += (i ? "." : "") + t;
  }
  return s;
}

// Property: the first pair by (i, j), as a double loop over the list finds it.
TEST(OverlapIndex, FirstOverlappingPairAgreesWithPairwise) {
  std::mt19937 rng(11);
  for (int round = 0; round < 2000; ++round) {
    std::vector<std::string> subjects;
    for (int i = 0, n = 1 + int(rng() % 8); i < n; ++i) subjects.push_back(random_subject(rng));
    std::optional<std::pair<std::size_t, std::size_t>> want;
    for (std::size_t i = 0; i < subjects.size() && !want; ++i)
      for (std::size_t j = i + 1; j < subjects.size() && !want; ++j)
        if (core::subjects_overlap(subjects[i], subjects[j])) want = {i, j};
    const std::vector<std::string_view> views(subjects.begin(), subjects.end());
    EXPECT_EQ(core::first_overlapping_pair(views), want) << testing::PrintToString(subjects);
  }
}

TEST(OverlapIndex, SetsOverlapAgreesWithPairwise) {
  std::mt19937 rng(13);
  for (int round = 0; round < 2000; ++round) {
    std::vector<std::string> a, b;
    for (int i = 0, n = int(rng() % 5); i < n; ++i) a.push_back(random_subject(rng));
    for (int i = 0, n = int(rng() % 5); i < n; ++i) b.push_back(random_subject(rng));
    bool want = false;
    for (const auto& x : a)
      for (const auto& y : b) want = want || core::subjects_overlap(x, y);
    EXPECT_EQ(core::sets_overlap({a.begin(), a.end()}, {b.begin(), b.end()}), want)
        << testing::PrintToString(a) << " / " << testing::PrintToString(b);
  }
}

// The shape that made the single-trie walk quadratic: wildcards before many literals that
// their '*' would fan out over. Each side is only queried by literals now.
TEST(OverlapIndex, WildcardsBesideManyLiteralsStayFast) {
  std::vector<std::string> subjects;
  for (int i = 0; i < 40000; ++i) subjects.push_back("x.*.b." + std::to_string(i));
  for (int i = 0; i < 40000; ++i) subjects.push_back("x." + std::to_string(i) + ".a");
  const std::vector<std::string_view> views(subjects.begin(), subjects.end());
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(core::first_overlapping_pair(views), std::nullopt);
  subjects.push_back("x.7.b.7");  // overlaps "x.*.b.7" (index 7)
  const std::vector<std::string_view> more(subjects.begin(), subjects.end());
  EXPECT_EQ(core::first_overlapping_pair(more), std::make_pair(std::size_t(7), subjects.size() - 1));
  EXPECT_FALSE(core::sets_overlap({views.begin(), views.begin() + 40000}, {views.begin() + 40000, views.end()}));
  // Seconds, not milliseconds, would mean a query fanned out over the 40,000 literals
  // (sanitizer builds are slower: meson sets PEREGRINE_TIME_SCALE there).
  const char* scale_env = std::getenv("PEREGRINE_TIME_SCALE");
  const int scale = scale_env ? std::max(1, std::atoi(scale_env)) : 1;
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(3) * scale);
}

TEST(OverlapIndex, ManyLiteralsAndOneWildcard) {
  overlap_index idx;
  for (std::size_t i = 0; i < 100000; ++i) {
    const std::string s = "o." + std::to_string(i);
    ASSERT_EQ(idx.first_overlap(s), std::nullopt);
    idx.insert(s, i);
  }
  EXPECT_EQ(idx.first_overlap("o.*"), 0u);
  EXPECT_EQ(idx.first_overlap("o.99999"), 99999u);
  EXPECT_EQ(idx.first_overlap("p.*"), std::nullopt);
}

}  // namespace
