// Replicated entry formats: every op round-trips, and damaged input is refused whole.
#include "src/js/repl_entries.h"

#include <gtest/gtest.h>

#include "src/base/rng.h"

namespace {

namespace re = js::repl_entries;

re::stream_assign assignment() {
  re::stream_assign a;
  a.account = "$G";
  a.name = "ORDERS";
  a.config_json = R"({"name":"ORDERS","subjects":["orders.>"],"num_replicas":3})";
  a.peers = {"s1", "s2", "s3"};
  a.created_ns = 1'700'000'000'123'456'789;
  a.group_id = 42;
  return a;
}

std::vector<re::stream_op> stream_ops() {
  re::msg m{7, -5, 0, "orders.1", "NATS/1.0\r\nNats-Msg-Id: a\r\n\r\n", std::string("\0\xff", 2)};
  return {m, re::purge{"orders.>", 3, 0}, re::msg_delete{9, true},
          re::batch{{m, re::msg{8, 1, 3, "orders.2", "", ""}}}, re::leader_start{4, "s2"},
          re::expire{1'700'000'000'000'000'000}, re::expire{-3}, re::seed_done{0}, re::seed_done{42},
          re::config_change{7, R"({"name":"ORDERS","max_msgs":5})"}, re::config_change{},
          re::no_interest{12, 1'700'000'000'000'000'000, "id-1"}, re::no_interest{}};
}

TEST(ReplEntries, MetaOpsRoundTrip) {
  re::stream_update u;
  static_cast<re::stream_assign&>(u) = assignment();
  u.peers = {"s4", "s5", "s1"};
  re::stream_update seeded = u;  // a change of num_replicas: seed_from, an optional trailing field
  seeded.seed_from = "s4";
  seeded.group_id = 99;
  re::consumer_assign c{"$G", "ORDERS", "C1", "{}", {"s1", "s2", "s3"}, 5, 43};
  // A scale's consumers: each with the state its new group starts from (or none).
  re::consumer_assign with_state = c;
  with_state.state = re::consumer_seed{9, 8, 5, 5, {{6, 9, -1}, {7, 7, 1'700'000'000'000'000'000}}, {{6, 1}}};
  re::consumer_assign empty_state = c;
  empty_state.name = "C2";
  empty_state.state = re::consumer_seed{};
  re::stream_update scaled = seeded;
  scaled.consumers = {with_state, empty_state, c};
  re::stream_assign r1_scaled = assignment();
  r1_scaled.seed_from = "s1";
  r1_scaled.consumers = {with_state};
  const std::vector<re::meta_op> ops{assignment(), u, seeded, re::stream_remove{"$G", "ORDERS"}, c,
                                     re::consumer_remove{"$G", "ORDERS", "C1"}, with_state, scaled, r1_scaled,
                                     re::consumer_update{"$G", "ORDERS", "C1", R"({"pause_until":"x"})"},
                                     re::server_remove{"s3"},
                                     re::r1_streams{"s2", {{"LOCAL", {"local.>", "l.*"}}, {"NOSUBJ", {}}}},
                                     re::r1_streams{"s3", {}},
                                     re::r1_streams{"s4", {{"T", {"t"}}}, {"az:1", "ssd"}},
                                     re::r1_streams{"s5", {}, {"az:2"}}};
  for (const auto& op : ops) {
    const auto bytes = re::encode(op);
    EXPECT_EQ(bytes[0], re::kFormatVersion);
    auto back = re::decode_meta(bytes);
    ASSERT_TRUE(back) << op.index();
    EXPECT_EQ(*back, op);
  }
}

TEST(ReplEntries, StreamAndConsumerOpsRoundTrip) {
  for (const auto& op : stream_ops()) {
    auto back = re::decode_stream(re::encode(op));
    ASSERT_TRUE(back) << op.index();
    EXPECT_EQ(*back, op);
  }
  const std::vector<re::consumer_op> cops{re::consumer_delivered{3, 10, 2, -1},
                                          re::consumer_acked{10, 3},
                                          re::consumer_leader_start{7, "s3"},
                                          re::consumer_reset{0}, re::consumer_reset{~0ull},
                                          re::consumer_updates{},
                                          re::consumer_updates{{re::consumer_delivered{1, 5, 1, 9},
                                                                re::consumer_acked{5, 1},
                                                                re::consumer_delivered{2, ~0ull, 3, -7}}}};
  for (const auto& op : cops) {
    auto back = re::decode_consumer(re::encode(op));
    ASSERT_TRUE(back);
    EXPECT_EQ(*back, op);
  }
}

TEST(ReplEntries, ConsumerUpdatesRefuseAnUnknownKindAndAForgedCount) {
  auto bytes = re::encode(re::consumer_op{re::consumer_updates{{re::consumer_acked{5, 1}}}});
  ASSERT_EQ(bytes.size(), 6u);  // version, op, count, kind, sseq, dseq
  auto bad_kind = bytes;
  bad_kind[3] = 2;
  EXPECT_FALSE(re::decode_consumer(bad_kind));
  auto forged = bytes;
  forged[2] = 0x7f;  // 127 updates in four bytes
  EXPECT_FALSE(re::decode_consumer(forged));
  bytes.push_back(0);  // trailing byte
  EXPECT_FALSE(re::decode_consumer(bytes));
}

TEST(ReplEntries, ExtremeIntegersRoundTrip) {
  re::msg m{~0ull, INT64_MIN, INT64_MAX, "a", "", ""};
  auto back = re::decode_stream(re::encode(re::stream_op{m}));
  ASSERT_TRUE(back);
  EXPECT_EQ(std::get<re::msg>(*back), m);
}

TEST(ReplEntries, CompactEncoding) {
  // A small message costs its bytes plus a handful of header bytes.
  re::msg m{1, 1, 0, "orders.1", "", "hello"};
  EXPECT_LE(re::encode(re::stream_op{m}).size(), 2 + 1 + 1 + 1 + 1 + 8 + 1 + 1 + 5u);
}

TEST(ReplEntries, RefusesWrongVersionOpTrailingAndTruncated) {
  auto bytes = re::encode(re::stream_op{stream_ops()[0]});
  auto v = bytes;
  v[0] = 2;
  EXPECT_FALSE(re::decode_stream(v));
  v = bytes;
  v[1] = 99;
  EXPECT_FALSE(re::decode_stream(v));
  v = bytes;
  v.push_back(0);
  EXPECT_FALSE(re::decode_stream(v));
  for (std::size_t n = 0; n < bytes.size(); ++n) {
    std::vector<std::uint8_t> cut(bytes.begin(), bytes.begin() + std::ptrdiff_t(n));
    EXPECT_FALSE(re::decode_stream(cut)) << n;
  }
  // A family's decoder refuses the others' ops.
  EXPECT_FALSE(re::decode_meta(bytes));
  EXPECT_FALSE(re::decode_consumer(bytes));
  EXPECT_FALSE(re::decode_stream(re::encode(re::meta_op{assignment()})));
}

TEST(ReplEntries, ForgedCountsAndLengthsAreRefusedWithoutAllocating) {
  // batch claiming 2^63 messages; a string claiming 2^40 bytes.
  std::vector<std::uint8_t> batch{1, 19, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x40};
  EXPECT_FALSE(re::decode_stream(batch));
  std::vector<std::uint8_t> str{1, 3, 0x80, 0x80, 0x80, 0x80, 0x80, 0x20, 'x'};
  EXPECT_FALSE(re::decode_meta(str));
  // An 11-byte varint.
  std::vector<std::uint8_t> var{1, 18, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f, 0};
  EXPECT_FALSE(re::decode_stream(var));
}

TEST(ReplEntries, RandomMutationsNeverCrashAndReencodeIdentically) {
  base::rng rng(11);
  std::vector<std::vector<std::uint8_t>> seeds;
  for (const auto& op : stream_ops()) seeds.push_back(re::encode(op));
  seeds.push_back(re::encode(re::meta_op{assignment()}));
  for (int i = 0; i < 20000; ++i) {
    auto b = seeds[rng.below(seeds.size())];
    const int flips = 1 + int(rng.below(4));
    for (int f = 0; f < flips && !b.empty(); ++f) b[rng.below(b.size())] = std::uint8_t(rng.next());
    if (auto s = re::decode_stream(b)) {
      EXPECT_EQ(re::decode_stream(re::encode(*s)), s);
    }
    if (auto m = re::decode_meta(b)) {
      EXPECT_EQ(re::decode_meta(re::encode(*m)), m);
    }
    if (auto c = re::decode_consumer(b)) {
      EXPECT_EQ(re::decode_consumer(re::encode(*c)), c);
    }
  }
}

}  // namespace
