#include "src/core/subject_overlap.h"

#include <gtest/gtest.h>

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
