// Atomic batches across kill -9 (streams.md §4.2): a raw-socket publisher pipelines atomic
// batches into a file stream and the server is killed at a random moment; after each
// restart the stream holds whole batches only (a multiple of the batch size, ending with a
// message that carries Nats-Batch-Commit), and every batch whose PubAck arrived is there.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <thread>

#include "tests/integration/js_fixture.h"
#include "tests/integration/raw_client.h"

namespace peregrine::test {
namespace {

using nlohmann::json;
constexpr int kBatch = 1000;

// One atomic batch as pipelined HPUBs; only the commit asks for a reply.
std::string batch_bytes(const std::string& id) {
  std::string out;
  const std::string payload(16, 'p');
  for (int i = 1; i <= kBatch; ++i) {
    std::string hdr = "NATS/1.0\r\nNats-Batch-Id: " + id + "\r\nNats-Batch-Sequence: " + std::to_string(i) + "\r\n";
    if (i == kBatch) hdr += "Nats-Batch-Commit: 1\r\n";
    hdr += "\r\n";
    out += "HPUB crash.b " + std::string(i == kBatch ? "_INBOX.crash." + id + " " : "") + std::to_string(hdr.size()) +
           " " + std::to_string(hdr.size() + payload.size()) + "\r\n" + hdr + payload + "\r\n";
  }
  return out;
}

class js_batch_crash : public js_test {};

TEST_F(js_batch_crash, kill9_leaves_whole_batches_only) {
  json r = create({{"name", "C"}, {"subjects", {"crash.>"}}, {"allow_atomic", true}, {"storage", "file"}});
  ASSERT_FALSE(r.contains("error")) << r;
  std::mt19937 rng(12345);
  std::uint64_t acked_batches = 0;  // whole batches known stored: earlier rounds + PubAcks read
  for (int round = 0; round < 16; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    raw_client c;
    ASSERT_TRUE(c.open(port()));
    ASSERT_TRUE(c.send("SUB _INBOX.crash.> 1\r\n"));
    ASSERT_TRUE(c.ping_pong());
    std::string bytes;
    for (int b = 0; b < 60; ++b) bytes += batch_bytes("r" + std::to_string(round) + "b" + std::to_string(b));
    // The publisher writes on while the server is killed at a random moment of the ingest.
    std::thread pub([&] { c.send(bytes); });
    int wait_acks = 0;
    const auto kill_at = std::chrono::steady_clock::now() + std::chrono::milliseconds(5 + rng() % 60);
    while (std::chrono::steady_clock::now() < kill_at) {
      auto line = c.read_line(5ms);
      if (!line || line->rfind("MSG ", 0) != 0) continue;
      auto body = c.read_line(2s);
      ASSERT_TRUE(body && body->find("\"count\":" + std::to_string(kBatch)) != std::string::npos);
      ++wait_acks;
    }
    acked_batches += static_cast<std::uint64_t>(wait_acks);
    restart(true);
    pub.join();
    const json info = request("$JS.API.STREAM.INFO.C");
    ASSERT_TRUE(info.is_object() && info.contains("state")) << info.dump();
    const json st = info["state"];
    const std::uint64_t msgs = st["messages"].get<std::uint64_t>();
    std::printf("round %d: %llu messages (%llu whole batches), %d PubAcks read\n", round,
                static_cast<unsigned long long>(msgs), static_cast<unsigned long long>(msgs / kBatch), wait_acks);
    EXPECT_EQ(msgs % kBatch, 0u) << st;
    EXPECT_GE(msgs / kBatch, acked_batches) << st;
    acked_batches = msgs / kBatch;  // the next round's floor
    if (msgs > 0) {
      json last = request("$JS.API.STREAM.MSG.GET.C", json{{"last_by_subj", "crash.b"}}.dump());
      ASSERT_TRUE(last.contains("message")) << last;
      const std::string hdrs = base64_decode(last["message"].value("hdrs", ""));
      EXPECT_NE(hdrs.find("Nats-Batch-Commit: 1\r\n"), std::string::npos) << hdrs;
    }
  }
}

}  // namespace
}  // namespace peregrine::test
