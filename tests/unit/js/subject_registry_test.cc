// The registry of every stream's subjects answers "does this set overlap another stream's
// subjects" as the pairwise rule does (core::subjects_overlap), while streams come, change
// and go, and an update is checked against the other streams only.
#include "src/js/subject_registry.h"

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "src/base/rng.h"
#include "src/core/subject.h"

namespace js {
namespace {

using subjects = std::vector<std::string>;

TEST(subject_registry, literals_wildcards_and_the_stream_itself) {
  subject_registry r;
  r.set("A", {"orders.*", "audit.>"});
  r.set("B", {"kv.x.y"});
  EXPECT_TRUE(r.overlaps({"orders.new"}, ""));
  EXPECT_TRUE(r.overlaps({"*.new"}, ""));
  EXPECT_TRUE(r.overlaps({"audit"}, "") == false);  // '>' needs one more token
  EXPECT_TRUE(r.overlaps({"audit.a.b.c"}, ""));
  EXPECT_TRUE(r.overlaps({">"}, ""));
  EXPECT_TRUE(r.overlaps({"kv.*.y"}, ""));
  EXPECT_FALSE(r.overlaps({"kv.x"}, ""));
  EXPECT_FALSE(r.overlaps({"orders.new.x"}, ""));
  // An update of A is checked against B only.
  EXPECT_FALSE(r.overlaps({"orders.>", "audit.>"}, "A"));
  EXPECT_TRUE(r.overlaps({"kv.>"}, "A"));
  // ... and A's subjects are still there afterwards.
  EXPECT_TRUE(r.overlaps({"orders.x"}, "B"));
}

TEST(subject_registry, removed_and_replaced_subjects_no_longer_count) {
  subject_registry r;
  r.set("A", {"a.>", "a.b"});
  r.set("B", {"b.*"});
  r.set("A", {"c.c"});  // an update that changes the subjects
  EXPECT_FALSE(r.overlaps({"a.b"}, ""));
  EXPECT_TRUE(r.overlaps({"c.*"}, ""));
  r.erase("A");
  EXPECT_FALSE(r.overlaps({"c.c"}, ""));
  EXPECT_TRUE(r.overlaps({"b.q"}, ""));
  r.erase("B");
  EXPECT_FALSE(r.overlaps({">"}, ""));
  EXPECT_EQ(r.streams(), 0u);
}

TEST(subject_registry, two_streams_may_hold_the_same_subject_and_one_leaving_keeps_the_other) {
  subject_registry r;  // the registry does not judge; the API refuses such a create first
  r.set("A", {"x.>"});
  r.set("B", {"x.>"});
  r.erase("A");
  EXPECT_TRUE(r.overlaps({"x.y"}, ""));
  EXPECT_FALSE(r.overlaps({"x.y"}, "B"));
}

// A big change goes in bounded slices: each step does at most its budget of trie steps
// (one per subject added or removed), and until the last one the trie holds both sets.
TEST(subject_registry, a_big_change_goes_in_slices_of_the_budget) {
  subject_registry r;
  subjects old_set, new_set;
  for (int i = 0; i < 1000; ++i) old_set.push_back("k." + std::to_string(i));
  new_set = old_set;
  for (int i = 0; i < 600; ++i) new_set[i] = "n." + std::to_string(i);
  r.set("BIG", old_set);
  r.set("OTHER", {"x.y"});
  ASSERT_FALSE(r.busy());
  EXPECT_FALSE(r.set_sliced("BIG", new_set, 100));
  int steps = 1;
  while (r.busy()) {
    ASSERT_LT(steps, 100) << "never finished";
    const bool done = r.step(100);
    EXPECT_EQ(done, !r.busy());
    ++steps;
  }
  EXPECT_EQ(steps, 20);  // 1,000 added and 1,000 removed, 100 a step
  EXPECT_FALSE(r.overlaps({"k.0"}, ""));
  EXPECT_TRUE(r.overlaps({"n.0"}, ""));
  EXPECT_TRUE(r.overlaps({"k.999"}, ""));
  EXPECT_FALSE(r.overlaps({"n.*"}, "BIG"));

  // A query while a change is in flight finishes it first: the answer is the new state's.
  EXPECT_FALSE(r.set_sliced("BIG", old_set, 10));
  EXPECT_TRUE(r.busy());
  EXPECT_FALSE(r.overlaps({"n.5"}, ""));
  EXPECT_TRUE(r.overlaps({"k.5"}, ""));
  EXPECT_FALSE(r.busy());
  // So does another change; a big stream leaving goes in slices too.
  EXPECT_FALSE(r.set_sliced("BIG", new_set, 10));
  EXPECT_FALSE(r.erase_sliced("BIG", 10));
  EXPECT_TRUE(r.busy());
  while (!r.step(64)) {
  }
  EXPECT_FALSE(r.overlaps({">"}, "OTHER"));
  EXPECT_EQ(r.streams(), 1u);
  // Keeping the subjects costs no steps.
  EXPECT_TRUE(r.set_sliced("OTHER", {"x.y"}, 0));
}

// Random streams over a small token alphabet, with creates, updates and deletes, against the
// pairwise rule; bounded seeds (each replays from its number).
TEST(subject_registry, agrees_with_the_pairwise_rule) {
  const char* toks[] = {"a", "b", "c", "*", ">"};
  for (std::uint64_t seed = 1; seed <= 60; ++seed) {
    base::rng rng(seed);
    auto subject = [&] {
      std::string s;
      const std::size_t n = 1 + rng.below(3);
      for (std::size_t i = 0; i < n; ++i) {
        const char* t = toks[rng.below(i + 1 == n ? 5 : 4)];  // '>' only last
        s += (i ? "." : "") + std::string(t);
      }
      return s;
    };
    subject_registry r;
    std::map<std::string, subjects> model;
    for (int step = 0; step < 200; ++step) {
      const std::string name = "S" + std::to_string(rng.below(6));
      const auto op = rng.below(4);
      if (op == 0) {
        if (rng.chance(0.5)) r.erase_sliced(name, rng.below(3)); else r.erase(name);
        model.erase(name);
        continue;
      }
      subjects q;
      for (std::size_t i = 0, n = 1 + rng.below(3); i < n; ++i) q.push_back(subject());
      const std::string except = rng.chance(0.5) ? name : std::string();
      bool want = false;
      for (const auto& [other, subs] : model)
        if (other != except)
          for (const auto& a : subs)
            for (const auto& b : q) want = want || core::subjects_overlap(a, b);
      ASSERT_EQ(r.overlaps(q, except), want) << "seed " << seed << " step " << step;
      if (op != 1) {
        // Half the changes go in slices, left part-done for the next query to finish.
        if (rng.chance(0.5)) {
          r.set_sliced(name, q, rng.below(3));
          if (rng.chance(0.5)) r.step(rng.below(3));
        } else {
          r.set(name, q);
        }
        model[name] = q;
      }
    }
  }
}

}  // namespace
}  // namespace js
