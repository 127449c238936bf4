// An atomic batch that rolls a subject up, torn by a crash at every point of its write: after
// the restart the stream holds the whole batch with the roll-up done, or none of the batch
// and every message the roll-up would have removed. A roll-up's removals that ran ahead of
// the batch's commit (so a torn batch, dropped whole, had already deleted what it rolled up)
// and a crash that cut the removals of a committed batch short both break that.
#include <gtest/gtest.h>

#include <chrono>
#include <optional>
#include <thread>

#include "io/fault_file.h"
#include "src/js/stream_group.h"
#include "storage/file_store.h"
#include "tests/unit/js/fake_group_host.h"
#include "tests/unit/storage/temp_dir.h"

namespace {

using storage::file_store;

constexpr int kOld = 5;      // r.a messages before the batch (what the roll-up removes)
constexpr int kOther = 3;    // r.b messages, kept either way
constexpr int kBatch = 40;   // the batch: r.a (rolling up) then r.c ...

js::stream_config stream_cfg() {
  js::stream_config c;
  const std::string body = R"({"name":"R","subjects":["r.>"],"storage":"file","allow_atomic":true,)"
                           R"("allow_rollup_hdrs":true})";
  EXPECT_FALSE(js::parse_stream_config(body, c));
  EXPECT_FALSE(js::normalise(c));
  EXPECT_FALSE(js::validate(c));
  return c;
}

storage::file_store_config store_cfg(const std::string& dir) {
  storage::file_store_config cfg;
  cfg.dir = dir + "/msgs";
  cfg.block_size = 256 << 10;
  cfg.cache_bytes = 0;
  return cfg;
}

std::string batch_headers(int seq, bool commit, const char* rollup) {
  std::string h = "NATS/1.0\r\nNats-Batch-Id: B\r\nNats-Batch-Sequence: " + std::to_string(seq) + "\r\n";
  if (rollup) h += std::string("Nats-Rollup: ") + rollup + "\r\n";
  if (commit) h += "Nats-Batch-Commit: 1\r\n";
  return h + "\r\n";
}

// Publishes and polls until the PubAck (the store's writes complete on their own time), or
// for a while once a crash stopped the store; the answer, or none.
std::optional<std::string> publish(js::test::fake_host& host, js::stream_group& g, const std::string& subject, const std::string& hdr,
             const std::string& payload) {
  EXPECT_EQ(host.inject(subject, "_INBOX.p", payload, hdr), 1u);
  for (int i = 0; i < 2000; ++i) {
    g.poll(host.now());
    for (const auto& s : host.take())
      if (s.to == "_INBOX.p") return s.payload;
    std::this_thread::sleep_for(std::chrono::microseconds(500));
  }
  return std::nullopt;
}

// One round: old messages, then the batch with its write torn after `torn` bytes, then a
// restart on what reached the disk.
void round(std::size_t torn, const char* rollup, int& torn_rounds, int& whole_rounds, bool& crashed) {
  storage_test::temp_dir dir;
  const auto cfg = stream_cfg();
  js::test::fake_host host;
  {
    auto fb = std::make_unique<io::fault_backend>(io::make_backend(store_cfg(dir.path()).dir));
    auto* fault = fb.get();
    auto st = file_store::open(store_cfg(dir.path()), std::move(fb));
    ASSERT_TRUE(st.ok());
    js::stream_group g(host, cfg, host.now(), dir.path(), std::move(*st));
    g.get_stream().subscribe();
    for (int i = 0; i < kOld; ++i) ASSERT_TRUE(publish(host, g, "r.a", "", "old"));
    for (int i = 0; i < kOther; ++i) ASSERT_TRUE(publish(host, g, "r.b", "", "other"));
    ASSERT_EQ(g.get_stream().store().state(false).msgs, std::uint64_t(kOld + kOther));
    fault->torn_next_write(torn);
    for (int i = 1; i < kBatch; ++i)  // staged: answered at once
      ASSERT_TRUE(publish(host, g, i == 1 ? "r.a" : "r.c", batch_headers(i, false, i == 1 ? rollup : nullptr),
                          std::string(200, 'p')));
    const auto ack = publish(host, g, "r.c", batch_headers(kBatch, true, nullptr), std::string(200, 'p'));
    EXPECT_TRUE(!ack || ack->find("\"error\"") != std::string::npos) << "the batch was acknowledged: " << *ack;
    crashed = fault->crashed();
    if (!crashed) return;  // the whole write fitted under `torn`: nothing to check
  }
  auto st = file_store::open(store_cfg(dir.path()));
  ASSERT_TRUE(st.ok());
  js::stream_group g(host, cfg, host.now(), dir.path(), std::move(*st));
  auto& s = g.get_stream().store();
  const std::uint64_t msgs = s.state(false).msgs;
  const bool all = std::string(rollup) == "all";
  const std::uint64_t whole = (all ? 0 : kOther) + kBatch;
  if (msgs == whole) {  // the batch, rolled up
    ++whole_rounds;
    for (std::uint64_t seq = 1; seq <= kOld; ++seq) EXPECT_FALSE(s.load(seq).ok()) << "rolled-up seq " << seq;
    EXPECT_EQ(s.last_seq(), std::uint64_t(kOld + kOther + kBatch));
    return;
  }
  ++torn_rounds;
  ASSERT_EQ(msgs, std::uint64_t(kOld + kOther)) << "neither the whole batch nor none of it";
  for (std::uint64_t seq = 1; seq <= kOld + kOther; ++seq) EXPECT_TRUE(s.load(seq).ok()) << "lost seq " << seq;
}

// Every 48 bytes of the batch's write, until a few tears left it whole.
void sweep(const char* rollup) {
  int torn_rounds = 0, whole_rounds = 0;
  for (std::size_t torn = 64; torn < 64'000; torn += 48) {
    SCOPED_TRACE("torn at " + std::to_string(torn));
    bool crashed = false;
    round(torn, rollup, torn_rounds, whole_rounds, crashed);
    if (::testing::Test::HasFatalFailure() || !crashed || whole_rounds >= 4) break;
  }
  EXPECT_GT(torn_rounds, 100);  // most tears do cut the batch short
  EXPECT_GT(whole_rounds, 0);   // and some come after its commit, in its removals
}

TEST(batch_rollup_torn, rollup_sub_batch_is_whole_or_absent_at_every_tear) { sweep("sub"); }

TEST(batch_rollup_torn, rollup_all_batch_is_whole_or_absent_at_every_tear) { sweep("all"); }

}  // namespace
