// Snapshot archive (encode, whole-archive checks: every truncation and byte flip refused)
// and the snapshot chunk flow control (window, acks, stall) with an injected clock.
#include <gtest/gtest.h>

#include "src/js/snapshot_archive.h"
#include "src/js/stream_snapshot.h"

namespace js {
namespace {

std::string sample_archive() {
  snapshot_writer w;
  w.stream({{"config", {{"name", "S"}}}, {"first_seq", 1}, {"last_seq", 9}});
  for (std::uint64_t seq : {1, 2, 5, 9}) {
    storage::stored_msg m;
    m.seq = seq;
    m.ts = 1'700'000'000'000'000'000 + std::int64_t(seq);
    m.subject = "s." + std::to_string(seq);
    m.headers = seq == 2 ? "NATS/1.0\r\nA: b\r\n\r\n" : "";
    m.payload = std::string(seq * 3, char('a' + seq));
    w.message(m);
  }
  storage::consumer_state cs;
  cs.delivered = {7, 8};
  cs.ack_floor = {3, 4};
  cs.pending[5] = {4, 123};
  cs.redelivered[5] = 2;
  w.consumer({{"config", {{"durable_name", "D"}}}, {"state", consumer_state_json(cs)}});
  return w.finish();
}

TEST(snapshot_archive, round_trip) {
  std::string error;
  auto c = read_snapshot(sample_archive(), error);
  ASSERT_TRUE(c) << error;
  EXPECT_EQ(c->stream["config"]["name"], "S");
  EXPECT_EQ(c->stream["last_seq"], 9);
  ASSERT_EQ(c->messages.size(), 4u);
  EXPECT_EQ(c->messages[2].seq, 5u);
  EXPECT_EQ(c->messages[2].ts, 1'700'000'000'000'000'005);
  EXPECT_EQ(c->messages[2].subject, "s.5");
  EXPECT_EQ(c->messages[2].payload, std::string(15, 'f'));
  EXPECT_EQ(c->messages[1].headers, "NATS/1.0\r\nA: b\r\n\r\n");
  ASSERT_EQ(c->consumers.size(), 1u);
  auto cs = consumer_state_from_json(c->consumers[0]["state"]);
  ASSERT_TRUE(cs);
  EXPECT_EQ(cs->delivered, (storage::seq_pair{7, 8}));
  EXPECT_EQ(cs->ack_floor, (storage::seq_pair{3, 4}));
  EXPECT_EQ(cs->pending.at(5), (storage::pending_ack{4, 123}));
  EXPECT_EQ(cs->redelivered.at(5), 2u);
}

TEST(snapshot_archive, every_truncation_is_refused) {
  const std::string a = sample_archive();
  for (std::size_t n = 0; n < a.size(); ++n) {
    std::string error;
    EXPECT_FALSE(read_snapshot(std::string_view(a).substr(0, n), error)) << n;
    EXPECT_FALSE(error.empty());
  }
  std::string error;
  EXPECT_FALSE(read_snapshot(std::string_view(a).substr(0, a.size() - 20), error));
  EXPECT_EQ(error, "snapshot truncated");
}

TEST(snapshot_archive, every_flipped_byte_is_refused) {
  const std::string a = sample_archive();
  for (std::size_t i = 0; i < a.size(); ++i) {
    std::string b = a;
    b[i] = char(b[i] ^ 0x20);
    std::string error;
    EXPECT_FALSE(read_snapshot(b, error)) << i;
  }
  std::string error;
  EXPECT_FALSE(read_snapshot(a + "x", error));
  EXPECT_FALSE(read_snapshot("not a snapshot at all", error));
  EXPECT_EQ(error, "snapshot corrupt: not a Peregrine snapshot");
}

TEST(snapshot_flow, sizes_are_clamped) {
  auto s = clamp_snapshot_sizes(0, 0, 1 << 20);
  EXPECT_EQ(s.chunk, 128u * 1024);
  EXPECT_EQ(s.window, 8u * 1024 * 1024);
  s = clamp_snapshot_sizes(10, 10, 1 << 20);
  EXPECT_EQ(s.chunk, 1024u);
  EXPECT_EQ(s.window, 1024u);
  s = clamp_snapshot_sizes(1 << 30, 1ll << 40, 1 << 20);
  EXPECT_EQ(s.chunk, 1u << 20);
  EXPECT_EQ(s.window, 32u * 1024 * 1024);
  EXPECT_EQ(clamp_snapshot_sizes(1 << 20, 0, 4096).chunk, 4096u);  // never above max_payload
}

TEST(snapshot_flow, window_and_acks) {
  snapshot_flow f(10'000, {1000, 3000}, 5'000, 0);
  std::vector<snapshot_flow::chunk_ref> sent;
  while (auto c = f.next(0)) sent.push_back(*c);
  ASSERT_EQ(sent.size(), 3u);  // the window holds three chunks
  EXPECT_EQ(sent[2].offset, 2000u);
  EXPECT_EQ(sent[2].index, 3u);
  EXPECT_FALSE(f.stalled(4'999));
  EXPECT_TRUE(f.stalled(5'000));
  f.on_ack(1000, 4'000);
  EXPECT_FALSE(f.stalled(5'000));
  auto c = f.next(4'000);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->index, 4u);
  EXPECT_FALSE(f.next(4'000));
  for (int i = 0; i < 20 && !f.done(); ++i) {
    f.on_ack(1000, 5'000);
    while (f.next(5'000)) {
    }
  }
  EXPECT_TRUE(f.done());
  EXPECT_FALSE(f.stalled(1'000'000));  // done: nothing is owed a flow response
}

TEST(snapshot_flow, last_chunk_is_short_and_one_chunk_always_goes) {
  snapshot_flow f(2500, {1000, 500}, 5'000, 0);  // window below a chunk
  auto a = f.next(0);
  ASSERT_TRUE(a);
  EXPECT_FALSE(f.next(0));
  f.on_ack(1000, 1);
  ASSERT_TRUE(f.next(1));
  f.on_ack(1000, 2);
  auto c = f.next(2);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->len, 500u);
  EXPECT_TRUE(f.done());
}

}  // namespace
}  // namespace js
