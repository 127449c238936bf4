// The `peregrine` CLI walked through the JetStream chapter's ORDERS pages against a real server,
// checking the lines natscli prints (the chapter's acceptance text). Registered twice: against
// peregrine-server and against nats-server 2.9.10 (what 2.9.10 does not have — pause,
// per-message TTL, atomic batches, subject transforms — skips there).
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <thread>

#include "tests/integration/cli_fixture.h"

namespace peregrine::test {
namespace {

// 13.1 Your first stream, 13.2 Publishing.
TEST_F(cli_test, chapter_first_stream_and_publishing) {
  cli_result r = ok({"stream", "add", "ORDERS", "--subjects", "orders.>", "--defaults"});
  EXPECT_TRUE(contains(r.out, "Stream ORDERS was created")) << r.out;
  r = ok({"stream", "info", "ORDERS"});
  EXPECT_TRUE(contains(r.out, "Information for Stream ORDERS")) << r.out;
  const std::pair<const char*, const char*> empty_lines[] = {
      {"Subjects", "orders.>"}, {"Replicas", "1"}, {"Storage", "File"}, {"Retention", "Limits"},
      {"Acknowledgments", "true"}, {"Discard Policy", "Old"}, {"Duplicate Window", "2m0s"}, {"Direct Get", "true"},
      {"Maximum Messages", "unlimited"}, {"Maximum Per Subject", "unlimited"}, {"Maximum Bytes", "unlimited"},
      {"Maximum Age", "unlimited"}, {"Maximum Message Size", "unlimited"}, {"Maximum Consumers", "unlimited"},
      {"Messages", "0"}, {"Bytes", "0 B"}, {"First Sequence", "0"}, {"Last Sequence", "0"}, {"Active Consumers", "0"}};
  for (const auto& [label, value] : empty_lines) EXPECT_TRUE(has_line(r.out, label, value)) << label << "\n" << r.out;

  r = fails({"stream", "add", "ARCHIVE", "--subjects", "orders.*", "--defaults"});
  EXPECT_TRUE(contains(r.err, "peregrine: error: could not create Stream: subjects overlap with an existing stream (10065)"))
      << r.err;

  for (const auto& [subject, body, seq] : {std::tuple{"orders.created", kOrder1, "1"}, std::tuple{"orders.created", kOrder2, "2"},
                                           std::tuple{"orders.shipped", kOrder1, "3"}}) {
    r = ok({"pub", "--jetstream", subject, body});
    EXPECT_TRUE(contains(r.out, std::string("Stored in Stream: ORDERS Sequence: ") + seq + "\n")) << r.out;
  }
  r = ok({"stream", "info", "ORDERS"});
  EXPECT_TRUE(has_line(r.out, "Messages", "3")) << r.out;
  EXPECT_TRUE(has_line(r.out, "Bytes", "404 B")) << r.out;
  EXPECT_TRUE(contains(r.out, "First Sequence: 1 @ ")) << r.out;
  EXPECT_TRUE(contains(r.out, "Last Sequence: 3 @ ")) << r.out;
  EXPECT_TRUE(has_line(r.out, "Number of Subjects", "2")) << r.out;

  // Dedup: the second publish with the same Nats-Msg-Id does not advance the sequence.
  r = ok({"pub", "--jetstream", "orders.created", "--header", "Nats-Msg-Id:ord_8w2k-created", kOrder1});
  EXPECT_TRUE(contains(r.out, "Stored in Stream: ORDERS Sequence: 4\n")) << r.out;
  r = ok({"pub", "--jetstream", "orders.created", "--header", "Nats-Msg-Id:ord_8w2k-created", kOrder1});
  EXPECT_TRUE(contains(r.out, "Stored in Stream: ORDERS Sequence: 4 Duplicate: true")) << r.out;

  r = ok({"pub", "invoices.created", "test"});
  EXPECT_TRUE(contains(r.out, "Published 4 bytes to \"invoices.created\"")) << r.out;
  r = fails({"pub", "--jetstream", "invoices.created", "test"});
  EXPECT_TRUE(contains(r.err, "peregrine: error: nats: no responders available for request")) << r.err;
  r = ok({"pub", "--jetstream", "orders.created", kOrder1});
  EXPECT_TRUE(contains(r.out, "Published 91 bytes to \"orders.created\"")) << r.out;
  EXPECT_TRUE(contains(r.out, "Stored in Stream: ORDERS Sequence: 5")) << r.out;

  r = ok({"stream", "ls"});
  EXPECT_TRUE(contains(r.out, "│ ORDERS ")) << r.out;
  EXPECT_EQ(ok({"stream", "ls", "--names"}).out, "ORDERS\n");
}

// 13.3 Reading back the stream, 13.4 Filtering.
TEST_F(cli_test, chapter_reading_back_and_filtering) {
  orders_with_three();
  cli_result r = ok({"consumer", "add", "ORDERS", "billing", "--deliver", "all", "--pull", "--ack", "explicit", "--defaults"});
  r = ok({"consumer", "info", "ORDERS", "billing"});
  const std::pair<const char*, const char*> lines[] = {
      {"Last Delivered Message", "Consumer sequence: 0 Stream sequence: 0"},
      {"Acknowledgment Floor", "Consumer sequence: 0 Stream sequence: 0"},
      {"Outstanding Acks", "0 out of maximum 1,000"}, {"Redelivered Messages", "0"}, {"Unprocessed Messages", "3"},
      {"Waiting Pulls", "0 of maximum 512"}};
  for (const auto& [label, value] : lines) EXPECT_TRUE(has_line(r.out, label, value)) << label << "\n" << r.out;

  r = ok({"sub", "--stream", "ORDERS", "--durable", "billing", "--terminate-at-end", "--ack"});
  EXPECT_TRUE(contains(r.out, "[#1] Received JetStream message: stream: ORDERS seq: 1 / pending: 2 / subject: orders.created / time: "))
      << r.out;
  EXPECT_TRUE(contains(r.out, "stream: ORDERS seq: 2 / pending: 1 / subject: orders.created")) << r.out;
  EXPECT_TRUE(contains(r.out, "[#3] Received JetStream message: stream: ORDERS seq: 3 / pending: 0 / subject: orders.shipped"))
      << r.out;
  EXPECT_TRUE(contains(r.out, kOrder2)) << r.out;
  r = ok({"consumer", "info", "ORDERS", "billing"});
  EXPECT_TRUE(contains(r.out, "Last Delivered Message: Consumer sequence: 3 Stream sequence: 3")) << r.out;
  EXPECT_TRUE(contains(r.out, "Acknowledgment Floor: Consumer sequence: 3 Stream sequence: 3")) << r.out;
  EXPECT_TRUE(has_line(r.out, "Unprocessed Messages", "0")) << r.out;

  ok({"pub", "--jetstream", "orders.created", kOrder1});
  r = ok({"sub", "--stream", "ORDERS", "--durable", "billing", "--terminate-at-end", "--ack"});
  EXPECT_TRUE(contains(r.out, "stream: ORDERS seq: 4 / pending: 0")) << r.out;
  EXPECT_EQ(occurrences(r.out, "Received JetStream message"), 1u) << r.out;

  // Replay through an ephemeral consumer, found by subject.
  r = ok({"sub", "orders.>", "--all", "--terminate-at-end"});
  EXPECT_EQ(occurrences(r.out, "Received JetStream message"), 4u) << r.out;

  r = ok({"consumer", "add", "ORDERS", "analytics", "--filter", "orders.shipped", "--pull", "--ack", "explicit", "--defaults"});
  const std::pair<const char*, const char*> cfg_lines[] = {
      {"Name", "analytics"}, {"Pull Mode", "true"}, {"Filter Subject", "orders.shipped"}, {"Deliver Policy", "All"},
      {"Ack Policy", "Explicit"}, {"Ack Wait", "30.00s"}, {"Replay Policy", "Instant"}, {"Max Ack Pending", "1,000"},
      {"Max Waiting Pulls", "512"}};
  for (const auto& [label, value] : cfg_lines) EXPECT_TRUE(has_line(r.out, label, value)) << label << "\n" << r.out;
  r = ok({"consumer", "next", "ORDERS", "analytics", "--count", "5", "--timeout", "1s"});
  EXPECT_EQ(occurrences(r.out, "subj: orders.shipped"), 1u) << r.out;
  EXPECT_EQ(occurrences(r.out, "subj: "), 1u) << r.out;

  // A typo'd filter is accepted; next just times out and exits non-zero.
  ok({"consumer", "add", "ORDERS", "typo", "--filter", "orders.shiped", "--pull", "--defaults"});
  r = fails({"consumer", "next", "ORDERS", "typo", "--timeout", "1s"});
  EXPECT_TRUE(contains(r.err, "no message received")) << r.err;

  r = ok({"consumer", "ls", "ORDERS", "--names"});
  EXPECT_EQ(r.out, "analytics\nbilling\ntypo\n");
  ok({"consumer", "rm", "ORDERS", "typo", "--force"});
  EXPECT_FALSE(contains(ok({"consumer", "ls", "ORDERS"}).out, "typo"));
}

// 13.5 Delivery and acknowledgment, 13.6 ack responses.
TEST_F(cli_test, chapter_delivery_and_acknowledgment) {
  orders_with_three();
  ok({"consumer", "add", "ORDERS", "shipping", "--pull", "--ack", "explicit", "--defaults"});
  cli_result r = ok({"consumer", "next", "ORDERS", "shipping", "--ack"});
  EXPECT_TRUE(contains(r.out, "] subj: orders.created / tries: 1 / cons seq: 1 / str seq: 1 / pending: 2")) << r.out;
  EXPECT_TRUE(contains(r.out, "Acknowledged message")) << r.out;
  r = ok({"consumer", "next", "ORDERS", "shipping", "--no-ack"});
  EXPECT_FALSE(contains(r.out, "Acknowledged")) << r.out;
  r = ok({"consumer", "info", "ORDERS", "shipping"});
  EXPECT_TRUE(contains(r.out, "Last Delivered Message: Consumer sequence: 2 Stream sequence: 2")) << r.out;
  EXPECT_TRUE(contains(r.out, "Acknowledgment Floor: Consumer sequence: 1 Stream sequence: 1")) << r.out;
  EXPECT_TRUE(has_line(r.out, "Outstanding Acks", "1 out of maximum 1,000")) << r.out;

  r = ok({"consumer", "edit", "ORDERS", "shipping", "--ack=explicit", "--wait=10s", "--max-deliver=5"});
  EXPECT_TRUE(has_line(r.out, "Ack Wait", "10.00s")) << r.out;
  EXPECT_TRUE(has_line(r.out, "Maximum Deliveries", "5")) << r.out;
  r = ok({"consumer", "edit", "ORDERS", "shipping", "--max-pending", "1"});
  EXPECT_TRUE(has_line(r.out, "Max Ack Pending", "1")) << r.out;
  const std::vector<std::string> backoff = {"consumer", "edit", "ORDERS", "shipping", "--backoff=linear",
                                            "--backoff-steps=5", "--backoff-min=1s", "--backoff-max=30s"};
  if (reference()) {  // 2.9.10 still wants max_deliver > the number of backoff steps
    r = fails(backoff);
    EXPECT_TRUE(contains(r.err, "max deliver is required to be > length of backoff values (10116)")) << r.err;
  } else {
    r = ok(backoff);
    EXPECT_TRUE(has_line(r.out, "Backoff", "1.00s, 8.25s, 15.50s, 22.75s, 30.00s")) << r.out;
  }
  ok({"consumer", "edit", "ORDERS", "shipping", "--max-pending", "1000"});
  // --term: the in-flight message 2 is terminated; then 3 comes next.
  r = ok({"consumer", "next", "ORDERS", "shipping", "--term", "--timeout", "12s"});
  EXPECT_TRUE(contains(r.out, "Terminated message")) << r.out;
  // Consumer config changes the server refuses come back as errors with their code.
  r = fails({"consumer", "edit", "ORDERS", "shipping", "--deliver", "last"});
  EXPECT_TRUE(contains(r.err, "could not edit Consumer: ")) << r.err;
}

// 13.12 Shaping the stream.
TEST_F(cli_test, chapter_shaping_the_stream) {
  orders_with_three();
  cli_result r = ok({"stream", "edit", "ORDERS", "--max-age=7d", "--max-bytes=1GiB"});
  EXPECT_EQ(r.out.rfind("Differences (-old +new):\n", 0), 0u) << r.out;  // what changed, then the info
  EXPECT_TRUE(contains(r.out, "+   \"max_age\": 604800000000000\n")) << r.out;
  EXPECT_TRUE(contains(r.out, "\nStream ORDERS was updated\n")) << r.out;
  EXPECT_TRUE(has_line(r.out, "Maximum Bytes", "1.0 GiB")) << r.out;
  EXPECT_TRUE(has_line(r.out, "Maximum Age", "7d0h0m0s")) << r.out;
  EXPECT_TRUE(has_line(r.out, "Maximum Messages", "unlimited")) << r.out;
  EXPECT_TRUE(has_line(r.out, "Messages", "3")) << r.out;
  ok({"stream", "edit", "ORDERS", "--discard", "new", "--max-msgs", "1"});
  // Discard new never trims on update (2.9.10 still did: it keeps 1).
  EXPECT_TRUE(has_line(ok({"stream", "info", "ORDERS"}).out, "Messages", reference() ? "1" : "3"));
  r = fails({"pub", "--jetstream", "orders.created", kOrder1});
  EXPECT_TRUE(contains(r.err, "maximum messages exceeded")) << r.err;
  r = ok({"stream", "edit", "ORDERS", "--discard", "old", "--max-msgs", "-1"});
  EXPECT_TRUE(has_line(r.out, "Discard Policy", "Old")) << r.out;
  r = ok({"stream", "edit", "ORDERS", "--max-msgs-per-subject=100000"});
  EXPECT_TRUE(has_line(r.out, "Maximum Per Subject", "100,000")) << r.out;
}

// 13.13 Retention policies.
TEST_F(cli_test, chapter_retention_policies) {
  cli_result r = ok({"stream", "add", "FULFILLMENT", "--subjects", "fulfill.>", "--retention", "work", "--defaults"});
  EXPECT_TRUE(has_line(r.out, "Retention", "WorkQueue")) << r.out;
  ok({"pub", "fulfill.us", kOrder1});
  ok({"consumer", "add", "FULFILLMENT", "shippers", "--pull", "--ack", "explicit", "--defaults"});
  ok({"consumer", "next", "FULFILLMENT", "shippers", "--count", "1", "--ack"});
  EXPECT_TRUE(has_line(ok({"stream", "info", "FULFILLMENT"}).out, "Messages", "0"));
  r = fails({"stream", "edit", "FULFILLMENT", "--retention", "limits", "--force"});
  EXPECT_TRUE(contains(r.err, reference() ? "stream configuration update can not change retention policy (10052)"
                                          : "stream configuration update can not change retention policy to/from workqueue"))
      << r.err;
  r = fails({"consumer", "add", "FULFILLMENT", "eu-shippers", "--pull", "--ack", "explicit", "--defaults"});
  EXPECT_TRUE(contains(r.err, "multiple non-filtered consumers not allowed on workqueue stream (10099)")) << r.err;
  ok({"consumer", "rm", "FULFILLMENT", "shippers", "--force"});
  ok({"consumer", "add", "FULFILLMENT", "us-shippers", "--filter", "fulfill.us", "--pull", "--defaults"});
  ok({"consumer", "add", "FULFILLMENT", "eu-shippers", "--filter", "fulfill.eu", "--pull", "--defaults"});
  r = fails({"consumer", "add", "FULFILLMENT", "all", "--filter", "fulfill.>", "--pull", "--defaults"});
  EXPECT_TRUE(contains(r.err, "filtered consumer not unique on workqueue stream (10100)")) << r.err;
}

// 13.14 Altering stream state.
TEST_F(cli_test, chapter_altering_stream_state) {
  orders_with_three();
  cli_result r = ok({"stream", "rmm", "ORDERS", "2", "--force"});
  r = fails({"stream", "get", "ORDERS", "2"});
  EXPECT_TRUE(contains(r.err, "no message found (10037)")) << r.err;
  r = ok({"stream", "purge", "ORDERS", "--subject", "orders.shipped", "--force"});
  EXPECT_TRUE(contains(r.out, "Purged 1 messages from ORDERS")) << r.out;
  EXPECT_NE(cli_->run({"stream", "purge", "ORDERS", "--seq", "2", "--keep", "1"}).rc, 0);  // exclusive
  r = ok({"stream", "purge", "ORDERS", "--force"});
  EXPECT_TRUE(contains(r.out, "Purged 1 messages from ORDERS")) << r.out;
  r = ok({"pub", "--jetstream", "orders.created", kOrder1});
  EXPECT_TRUE(contains(r.out, "Sequence: 4")) << r.out;  // continues after a purge

  ok({"stream", "add", "GUARDED", "--subjects", "guarded.>", "--defaults"});
  ok({"stream", "edit", "GUARDED", "--deny-purge"});
  r = fails({"stream", "purge", "GUARDED", "--force"});
  EXPECT_TRUE(contains(r.err, "(10110)")) << r.err;
  ok({"stream", "rm", "GUARDED", "--force"});
  EXPECT_FALSE(contains(ok({"stream", "ls", "--names"}).out, "GUARDED"));
}

// 13.17 Mirrors and sources, 13.18 Reading messages directly.
TEST_F(cli_test, chapter_mirrors_and_direct_reads) {
  orders_with_three();
  cli_result r = ok({"stream", "get", "ORDERS", "2"});
  EXPECT_TRUE(contains(r.out, "Item: ORDERS#2 received ")) << r.out;
  EXPECT_TRUE(contains(r.out, " +0000 UTC (")) << r.out;
  EXPECT_TRUE(contains(r.out, ") on Subject orders.created\n")) << r.out;
  EXPECT_TRUE(contains(r.out, kOrder2)) << r.out;
  r = ok({"stream", "get", "ORDERS", "--last-for", "orders.shipped"});
  EXPECT_TRUE(contains(r.out, "Item: ORDERS#3 received ")) << r.out;
  EXPECT_TRUE(contains(r.out, "on Subject orders.shipped")) << r.out;

  r = ok({"sub", "--stream", "ORDERS", "--direct", "--start-sequence", "1", "--count", "3"});
  EXPECT_TRUE(contains(r.out, "Subscribing to JetStream Stream (direct) holding messages with subject orders.> starting with sequence 1"))
      << r.out;
  EXPECT_TRUE(contains(r.out, "[#1] Received JetStream message (direct): stream: ORDERS seq 1 / subject: orders.created / time: "))
      << r.out;
  EXPECT_TRUE(contains(r.out, "[#3] Received JetStream message (direct): stream: ORDERS seq 3 / subject: orders.shipped"))
      << r.out;
  EXPECT_EQ(occurrences(r.out, "Received JetStream message (direct)"), 3u) << r.out;
  // One batched direct get where the server has them (2.11+): each reply says what is left.
  // 2.9.10 answers one message per request, so the CLI falls back to single gets there.
  if (!reference()) {
    const size_t p2 = r.out.find("Nats-Num-Pending: 2"), p1 = r.out.find("Nats-Num-Pending: 1"),
                 p0 = r.out.find("Nats-Num-Pending: 0");
    EXPECT_TRUE(p2 != std::string::npos && p1 != std::string::npos && p0 != std::string::npos && p2 < p1 && p1 < p0)
        << r.out;
  }
  r = ok({"sub", "--stream", "ORDERS", "--direct", "--start-sequence", "2"});  // no --count: to the end
  EXPECT_EQ(occurrences(r.out, "Received JetStream message (direct)"), 2u) << r.out;

  ok({"stream", "add", "ORDERS-ARCHIVE", "--mirror", "ORDERS"});
  for (const char* region : {"US", "EU", "APAC"}) {
    std::string lower = region;
    for (char& c : lower) c = static_cast<char>(std::tolower(c));
    ok({"stream", "add", std::string("ORDERS-") + region, "--subjects", lower + ".orders.>", "--defaults"});
  }
  ok({"stream", "add", "ALL-ORDERS", "--source", "ORDERS-US", "--source", "ORDERS-EU", "--source", "ORDERS-APAC", "--defaults"});
  ok({"pub", "--jetstream", "eu.orders.created", kOrder1});
  // The mirror catches up on its own; wait (bounded) for it and the source.
  for (int i = 0; i < 100; ++i) {
    r = ok({"stream", "info", "ORDERS-ARCHIVE"});
    if (has_line(r.out, "Messages", "3") && has_line(ok({"stream", "info", "ALL-ORDERS"}).out, "Messages", "1")) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_TRUE(contains(r.out, "\nMirror Information:\n")) << r.out;
  EXPECT_TRUE(has_line(r.out, "Stream Name", "ORDERS")) << r.out;
  EXPECT_TRUE(has_line(r.out, "Lag", "0")) << r.out;
  EXPECT_TRUE(contains(r.out, "Last Seen: ")) << r.out;
  EXPECT_TRUE(has_line(r.out, "Messages", "3")) << r.out;
  r = ok({"stream", "info", "ALL-ORDERS"});
  EXPECT_TRUE(contains(r.out, "\nSource Information:\n")) << r.out;
  for (const char* s : {"ORDERS-US", "ORDERS-EU", "ORDERS-APAC"}) EXPECT_TRUE(has_line(r.out, "Stream Name", s)) << r.out;
  EXPECT_TRUE(has_line(r.out, "Messages", "1")) << r.out;

  r = fails({"pub", "--jetstream", "ORDERS-ARCHIVE", kOrder1});
  EXPECT_TRUE(contains(r.err, "nats: no responders available for request")) << r.err;
  r = fails({"pub", "--jetstream", "orders.created", "-H", "Nats-Expected-Stream:ORDERS-ARCHIVE", kOrder1});
  EXPECT_TRUE(contains(r.err, "(10060)")) << r.err;
}

// Pause/resume (2.11), per-message TTL (2.11), atomic batches (2.12), subject transforms and
// republish (2.10): Peregrine only.
TEST_F(cli_test, chapter_newer_features) {
  if (reference()) GTEST_SKIP() << "nats-server 2.9.10 has none of these";
  orders_with_three();
  ok({"consumer", "add", "ORDERS", "shipping", "--pull", "--ack", "explicit", "--defaults"});
  cli_result r = ok({"consumer", "pause", "ORDERS", "shipping", "1h", "--force"});
  EXPECT_TRUE(contains(r.out, "Paused ORDERS > shipping until ")) << r.out;
  EXPECT_TRUE(contains(ok({"consumer", "info", "ORDERS", "shipping"}).out, "Paused Until: "));
  r = ok({"consumer", "resume", "ORDERS", "shipping", "--force"});
  EXPECT_TRUE(contains(r.out, "Consumer ORDERS > shipping was resumed while previously paused until ")) << r.out;
  r = fails({"consumer", "pause", "ORDERS", "shipping", "2020-01-01T00:00:00Z"});
  EXPECT_TRUE(contains(r.err, "consumer failed to pause, perhaps a time in the past was given")) << r.err;

  r = ok({"consumer", "add", "ORDERS", "dispatch", "--overflow-groups", "regions", "--pull", "--ack", "explicit", "--defaults"});
  EXPECT_TRUE(has_line(r.out, "Priority Policy", "Overflow")) << r.out;
  EXPECT_TRUE(has_line(r.out, "Priority Groups", "regions")) << r.out;
  r = ok({"consumer", "add", "ORDERS", "sequencer", "--pinned-groups", "ordered", "--pinned-ttl", "90s", "--pull", "--ack",
          "explicit", "--defaults"});
  EXPECT_TRUE(has_line(r.out, "Priority Policy", "Pinned Client")) << r.out;
  EXPECT_TRUE(has_line(r.out, "Pinned TTL", "1m30s")) << r.out;
  ok({"consumer", "next", "ORDERS", "sequencer", "--group", "ordered"});  // this pull gets pinned
  r = ok({"consumer", "info", "ORDERS", "sequencer"});
  const size_t at = r.out.find("Pinned Client: ordered: ");
  ASSERT_NE(at, std::string::npos) << r.out;
  const std::string pin_id = r.out.substr(at + 24, r.out.find('\n', at) - at - 24);
  EXPECT_FALSE(pin_id.empty());
  r = ok({"consumer", "unpin", "ORDERS", "sequencer", "ordered", "-f"});
  EXPECT_EQ(r.out, "Unpinned client " + pin_id + " from Priority Group ORDERS > sequencer > ordered\n");
  EXPECT_FALSE(contains(ok({"consumer", "info", "ORDERS", "sequencer"}).out, "Pinned Client: "));

  r = ok({"stream", "add", "ORDERS-SHARDED", "--subjects", "ingest.*", "--transform-source", "ingest.*",
          "--transform-destination", "orders.{{partition(3,1)}}.{{wildcard(1)}}", "--defaults"});
  for (const char* c : {"acme", "globex", "wayne"}) ok({"pub", std::string("ingest.") + c, "an order"});
  // Core publishes: wait (bounded) until all three are stored.
  for (int i = 0; i < 50 && !contains(r.out, "orders.2.wayne"); ++i) r = ok({"stream", "subjects", "ORDERS-SHARDED"});
  EXPECT_EQ(r.out, "orders.1.acme 1\norders.1.globex 1\norders.2.wayne 1\n");

  r = ok({"stream", "edit", "ORDERS", "--republish-source", "orders.>", "--republish-destination", "dash.orders.>"});
  EXPECT_TRUE(contains(r.out, "Republishing: orders.> to dash.orders.>")) << r.out;
  auto sub = cli_->start({"sub", "dash.orders.>", "--count", "1"});
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  ok({"pub", "--jetstream", "orders.created", kOrder1});
  r = cli_->finish(sub, std::chrono::seconds(10));
  if (r.rc != -1) {
    EXPECT_TRUE(contains(r.out, "[#1] Received on \"dash.orders.created\"")) << r.out;
    EXPECT_TRUE(contains(r.out, "Nats-Stream: ORDERS")) << r.out;
    EXPECT_TRUE(contains(r.out, "Nats-Sequence: 4")) << r.out;
    EXPECT_TRUE(contains(r.out, "Nats-Last-Sequence: 2")) << r.out;  // the last orders.created before it
  }
  r = ok({"stream", "edit", "ORDERS", "--no-republish"});
  EXPECT_FALSE(contains(r.out, "Republishing")) << r.out;

  r = ok({"stream", "edit", "ORDERS", "--allow-msg-ttl"});
  EXPECT_TRUE(has_line(r.out, "Allows Per-Message TTL", "true")) << r.out;
  r = ok({"pub", "orders.canceled", "-J", "--header", "Nats-TTL:60s", kOrder1});
  EXPECT_TRUE(contains(r.out, "Stored in Stream: ORDERS")) << r.out;
  ok({"stream", "add", "ORDERS_NO_TTL", "--subjects", "no-ttl.>", "--defaults"});
  r = fails({"pub", "no-ttl.msg", "-J", "--header", "Nats-TTL:60s", kOrder1});
  EXPECT_TRUE(contains(r.err, "per-message TTL is disabled (10166)")) << r.err;

  // "Advanced publishing": atomic batches on ORDERS itself, once the stream allows them; a
  // refused batch stores nothing.
  auto last_seq = [&] {
    const std::string out = ok({"stream", "info", "ORDERS", "--json"}).out;
    const auto at = out.find("\"last_seq\":");
    return at == std::string::npos ? -1 : std::atoi(out.c_str() + at + 11);
  };
  const int before = last_seq();
  ASSERT_GT(before, 0);
  r = fails({"pub", "--atomic", "--send-on=newline", "--force-stdin", "orders.created"}, "one\ntwo\nthree\n");
  EXPECT_TRUE(contains(r.err, "atomic publish is disabled")) << r.err;
  EXPECT_EQ(last_seq(), before);
  r = ok({"stream", "edit", "ORDERS", "--allow-batch"});
  EXPECT_TRUE(has_line(r.out, "Allows Atomic Batch", "true")) << r.out;
  r = ok({"pub", "--atomic", "--send-on=newline", "--force-stdin", "orders.created"}, "one\ntwo\nthree\n");
  EXPECT_TRUE(contains(r.out, "Wrote batch ID: ")) << r.out;
  EXPECT_TRUE(contains(r.out, " Messages: 3 Sequence: " + std::to_string(before + 3) + "\n")) << r.out;
  EXPECT_EQ(last_seq(), before + 3);
}

}  // namespace
}  // namespace peregrine::test
