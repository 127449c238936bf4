#include "src/repl/meta_bootstrap.h"

#include <gtest/gtest.h>

namespace {

using namespace repl;

bootstrap_input three_linked(const std::string& self) {
  bootstrap_input in;
  in.self = self;
  for (const char* n : {"a", "b", "c"})
    if (n != self) in.linked.push_back(n);
  for (const std::string& p : in.linked) in.views[p] = {false, {"a", "b", "c"}};
  in.min_size = 3;
  in.view_since_ms = 1000;
  in.now_ms = 2500;
  in.settle_ms = 1000;
  return in;
}

TEST(meta_bootstrap, everyone_agreeing_for_the_settle_time_starts_the_sorted_view) {
  auto in = three_linked("b");
  auto members = decide_bootstrap(in);
  ASSERT_TRUE(members);
  EXPECT_EQ(*members, (std::vector<std::string>{"a", "b", "c"}));
  in.now_ms = 1999;  // not settled yet
  EXPECT_FALSE(decide_bootstrap(in));
}

TEST(meta_bootstrap, waits_for_the_configured_size_and_for_agreement) {
  auto in = three_linked("a");
  in.min_size = 4;
  EXPECT_FALSE(decide_bootstrap(in));
  in = three_linked("a");
  in.views["c"] = {false, {"a", "c"}};  // c does not see b yet
  EXPECT_FALSE(decide_bootstrap(in));
  in.views.erase("c");
  EXPECT_FALSE(decide_bootstrap(in));
  bootstrap_input alone;
  alone.self = "a";
  alone.min_size = 0;
  alone.now_ms = 1u << 20;
  EXPECT_FALSE(decide_bootstrap(alone));  // a group of one is never formed by this rule
}

TEST(meta_bootstrap, a_frozen_view_that_lists_us_is_adopted_at_once) {
  auto in = three_linked("c");
  in.now_ms = in.view_since_ms;  // not settled: adoption does not wait
  in.views["a"] = {true, {"a", "b", "c"}};
  auto members = decide_bootstrap(in);
  ASSERT_TRUE(members);
  EXPECT_EQ(*members, (std::vector<std::string>{"a", "b", "c"}));
  in.views["a"] = {true, {"a", "b"}};  // formed without us: not adopted, but joined
  in.views["b"] = {true, {"a", "b"}};
  EXPECT_FALSE(decide_bootstrap(in));
  auto join = decide_join(in);
  ASSERT_TRUE(join);
  EXPECT_EQ(*join, (std::vector<std::string>{"a", "b"}));
}

TEST(meta_bootstrap, a_late_server_joins_the_formed_group_it_sees) {
  auto in = three_linked("d");
  EXPECT_FALSE(decide_join(in));  // nobody is in a group yet
  in.views["a"] = {true, {"a", "b", "c"}};
  auto join = decide_join(in);
  ASSERT_TRUE(join);
  EXPECT_EQ(*join, (std::vector<std::string>{"a", "b", "c"}));
  in.views["a"] = {true, {"a", "b", "c", "d"}};  // lists us: that is adoption, not a join
  EXPECT_FALSE(decide_join(in));
}

TEST(meta_bootstrap, raft_ids_are_stable_and_never_zero) {
  EXPECT_EQ(server_raft_id("n1"), server_raft_id(std::string("n1")));
  EXPECT_NE(server_raft_id("n1"), server_raft_id("n2"));
  EXPECT_NE(server_raft_id(""), 0u);
  EXPECT_EQ(own_view("b", {"c", "a", "c"}).members, (std::vector<std::string>{"a", "b", "c"}));
}

}  // namespace
