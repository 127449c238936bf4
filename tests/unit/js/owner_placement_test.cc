// Stream placement on owner threads (--js_threads N): FNV-1a of the name, fixed by
// definition so a stream lands on the same owner across restarts and versions.
#include "src/js/jetstream_owners.h"

#include <gtest/gtest.h>

#include "src/core/subject.h"

#include <string>
#include <vector>

namespace js {
namespace {

// The published FNV-1a 64-bit test vectors: the hash is FNV-1a, not some library's hash.
TEST(Placement, HashIsFnv1a64) {
  EXPECT_EQ(placement_hash(""), 0xcbf29ce484222325ull);
  EXPECT_EQ(placement_hash("a"), 0xaf63dc4c8601ec8cull);
  EXPECT_EQ(placement_hash("foobar"), 0x85944171f73967e8ull);
}

// Pinned owners of a few names: a change of the hash would move existing streams to
// another owner after an upgrade, so it must show up here.
TEST(Placement, OwnersAreStable) {
  EXPECT_EQ(owner_of("ORDERS", 2), placement_hash("ORDERS") % 2);
  const std::vector<std::pair<std::string, std::size_t>> pinned = {
      {"a", 0xaf63dc4c8601ec8cull % 4}, {"foobar", 0x85944171f73967e8ull % 3}, {"", 0xcbf29ce484222325ull % 5}};
  for (const auto& [name, owner] : pinned) EXPECT_EQ(owner_of(name, name == "a" ? 4 : name.empty() ? 5 : 3), owner);
  static_assert(owner_of("foobar", 3) == 0x85944171f73967e8ull % 3, "computable at compile time");
}

// The hub's API subscriptions with several owners: each API subject reaches it through at
// most one pattern (never twice), and every one but a pull or a direct get reaches it.
TEST(Placement, HubPatternsAreDisjointAndLeaveOutPullsAndDirectGets) {
  EXPECT_EQ(hub_api_patterns(1), std::vector<std::string>{".>"});
  const auto patterns = hub_api_patterns(2);
  auto matches = [&](const std::string& subject) {
    int n = 0;
    for (const auto& p : patterns) n += core::subject_matches("$JS.API" + p, subject);
    return n;
  };
  for (const char* served :
       {"$JS.API.INFO", "$JS.API.NOPE", "$JS.API.STREAM.CREATE.S", "$JS.API.STREAM.NAMES", "$JS.API.STREAM.MSG.GET.S",
        "$JS.API.CONSUMER.CREATE.S", "$JS.API.CONSUMER.CREATE.S.C.f.>", "$JS.API.CONSUMER.DURABLE.CREATE.S.C",
        "$JS.API.CONSUMER.INFO.S.C", "$JS.API.CONSUMER.DELETE.S.C", "$JS.API.CONSUMER.NAMES.S", "$JS.API.CONSUMER.LIST.S",
        "$JS.API.CONSUMER.PAUSE.S.C", "$JS.API.CONSUMER.UNPIN.S.C", "$JS.API.CONSUMER.RESET.S.C",
        "$JS.API.CONSUMER.LEADER.STEPDOWN.S.C", "$JS.API.CONSUMER.NOPE", "$JS.API.CONSUMER.MSG.NEXT",
        "$JS.API.CONSUMER.MSG.NEXT.S", "$JS.API.CONSUMER.MSG.NEXT.S.C.extra", "$JS.API.META.LEADER.STEPDOWN",
        "$JS.API.ACCOUNT.PURGE.A", "$JS.API.SERVER.REMOVE"})
    EXPECT_EQ(matches(served), 1) << served;
  for (const char* owners_own : {"$JS.API.CONSUMER.MSG.NEXT.S.C", "$JS.API.DIRECT.GET.S", "$JS.API.DIRECT.GET.S.a.b"})
    EXPECT_EQ(matches(owners_own), 0) << owners_own;
}

TEST(Placement, OneOwnerTakesEverything) {
  for (const char* name : {"", "A", "KV_bucket", "OBJ_store"}) {
    EXPECT_EQ(owner_of(name, 1), 0u);
    EXPECT_EQ(owner_of(name, 0), 0u);
  }
}

// Names that differ in one character (KV buckets, numbered streams) spread over the owners.
TEST(Placement, SimilarNamesSpread) {
  for (std::size_t owners : {2u, 4u, 7u}) {
    std::vector<int> count(owners, 0);
    const int n = 1000;
    for (int i = 0; i < n; ++i) ++count[owner_of("KV_bucket" + std::to_string(i), owners)];
    for (std::size_t o = 0; o < owners; ++o) {
      EXPECT_GT(count[o], n / int(owners) * 7 / 10) << "owner " << o << " of " << owners;
      EXPECT_LT(count[o], n / int(owners) * 13 / 10) << "owner " << o << " of " << owners;
    }
  }
}

// Accounts: $G keeps the name's hash (existing deployments do not move); another account
// hashes "<account>\0<name>", so two accounts' ORDERS need not share an owner.
TEST(Placement, AccountsHashTheirNameWithTheStream) {
  EXPECT_EQ(placement_hash("$G", "ORDERS"), placement_hash("ORDERS"));
  EXPECT_EQ(owner_of("$G", "ORDERS", 4), owner_of("ORDERS", 4));
  using namespace std::string_view_literals;
  EXPECT_EQ(placement_hash("A", "ORDERS"), placement_hash("A\0ORDERS"sv));
  EXPECT_NE(placement_hash("A", "ORDERS"), placement_hash("B", "ORDERS"));
  EXPECT_NE(placement_hash("AB", "C"), placement_hash("A", "BC"));
  std::vector<int> count(4, 0);
  for (int i = 0; i < 400; ++i) ++count[owner_of("acct" + std::to_string(i), "ORDERS", 4)];
  for (int c : count) EXPECT_GT(c, 50);
}

}  // namespace
}  // namespace js
