// A stream group driven through a fake host: no hub, no threads, a manual clock. Publishes
// reach the group through the subscriptions it made, its PubAcks and deliveries come back as
// the fake's records, and the group tells its owner when it needs polling.
#include "src/js/stream_group.h"

#include <gtest/gtest.h>

#include <stdlib.h>

#include <algorithm>
#include <deque>
#include <filesystem>
#include <set>

#include "src/core/subject.h"
#include "src/js/consumer_config.h"
#include "storage/consumer_state.h"
#include "storage/memory_store.h"
#include "tests/unit/js/fake_group_host.h"

namespace js {
namespace {

using test::fake_host;
using test::sent;

stream_config stream_cfg(std::string_view body) {
  stream_config c;
  EXPECT_FALSE(parse_stream_config(body, c));
  EXPECT_FALSE(normalise(c));
  EXPECT_FALSE(validate(c));
  return c;
}

consumer_config pull_cfg(const stream_config& s, std::string_view name) {
  create_request r;
  const std::string body = R"({"stream_name":")" + s.name + R"(","config":{"durable_name":")" + std::string(name) +
                           R"(","ack_policy":"explicit"}})";
  EXPECT_FALSE(parse_create_request(body, r));
  EXPECT_FALSE(normalise(r.config, s, false));
  EXPECT_FALSE(validate(r.config, s));
  return r.config;
}

struct group_fixture {
  explicit group_fixture(std::string_view cfg_body)
      : cfg(stream_cfg(cfg_body)),
        group(host, cfg, host.now(), "/nonexistent", std::make_unique<storage::memory_store>()) {
    group.get_stream().subscribe();
  }
  std::uint64_t msgs() { return group.get_stream().store().state(false).msgs; }
  // Publishes and polls once; returns the PubAck body.
  std::string publish(std::string_view subject, std::string_view payload) {
    EXPECT_EQ(host.inject(subject, "_INBOX.pub", payload), 1u);
    group.poll(host.now());
    for (const auto& s : host.take())
      if (s.to == "_INBOX.pub") return s.payload;
    return "";
  }
  consumer_agent& pull_consumer(std::string_view name) {
    consumer_agent& c = group.add_consumer(pull_cfg(cfg, name), host.now(), "", host.now());
    c.start(nullptr, host.now());
    return c;
  }
  // A pull request for `batch` messages, as the hub routes MSG.NEXT; returns the deliveries.
  std::vector<sent> pull(consumer_agent& c, int batch) {
    host.listeners.insert("_INBOX.pull");
    core::inbound_msg m;
    const std::string body = R"({"batch":)" + std::to_string(batch) + "}";
    m.subject = "$JS.API.CONSUMER.MSG.NEXT." + cfg.name + "." + c.name();
    m.reply = "_INBOX.pull";
    m.payload = body;
    group.enter();
    c.on_pull_request(m, host.now());
    group.poll(host.now());
    std::vector<sent> got;
    for (auto& s : host.take())
      if (s.to == "_INBOX.pull" && s.headers.empty()) got.push_back(std::move(s));
    return got;
  }

  fake_host host;
  stream_config cfg;
  stream_group group;
};

TEST(stream_group, subscribes_its_subjects_and_acks_a_publish_once_polled) {
  group_fixture f(R"({"name":"ORDERS","subjects":["orders.>"],"storage":"memory"})");
  EXPECT_TRUE(f.host.subscribed("orders.>"));
  const int before = f.host.wakes;
  EXPECT_EQ(f.host.inject("orders.1", "_INBOX.pub", "one"), 1u);
  // The entry point asked the owner for a poll (the PubAck may leave at once: a memory
  // store is durable on append).
  EXPECT_EQ(f.host.wakes, before + 1);
  f.group.poll(f.host.now());
  auto out = f.host.take();
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].to, "_INBOX.pub");
  EXPECT_EQ(out[0].payload, R"({"stream":"ORDERS","seq":1})");
  EXPECT_EQ(f.msgs(), 1u);
  // A poll that did work is polled again; once one finds nothing to do and there are no
  // timers, the owner need not poll the group until its next message.
  f.group.poll(f.host.now());
  EXPECT_FALSE(f.group.busy(f.host.now()));
  EXPECT_EQ(f.group.next_wakeup(f.host.now()), stream_group::kNever);
}

TEST(stream_group, pull_consumer_delivers_and_work_queue_ack_removes) {
  group_fixture f(R"({"name":"Q","subjects":["q.*"],"storage":"memory","retention":"workqueue"})");
  consumer_agent& c = f.pull_consumer("W");
  EXPECT_TRUE(f.host.subscribed("$JS.ACK.Q.W.>"));
  EXPECT_EQ(f.publish("q.a", "first"), R"({"stream":"Q","seq":1})");
  EXPECT_EQ(f.publish("q.b", "second"), R"({"stream":"Q","seq":2})");
  EXPECT_EQ(f.group.consumer_count(), 1u);

  auto got = f.pull(c, 1);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].subject, "q.a");
  EXPECT_EQ(got[0].payload, "first");
  ASSERT_TRUE(got[0].reply.starts_with("$JS.ACK.Q.W.1.1.1."));
  // Unacked: its redelivery timer (ack_wait 30 s) is the group's next deadline.
  EXPECT_EQ(f.group.next_wakeup(f.host.now()), f.host.now() + 30 * base::kSecond);

  f.host.clock.advance(base::kMilli);
  EXPECT_EQ(f.host.inject(got[0].reply, "", "+ACK"), 1u);
  f.group.poll(f.host.now());
  // Work-queue retention: the acked message is gone, the other one stays.
  EXPECT_EQ(f.msgs(), 1u);
  EXPECT_FALSE(f.group.get_stream().store().load(1).ok());
  EXPECT_TRUE(f.group.get_stream().store().load(2).ok());
  EXPECT_EQ(f.group.next_wakeup(f.host.now()), stream_group::kNever);

  got = f.pull(c, 5);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].payload, "second");
}

TEST(stream_group, interest_retention_keeps_what_a_consumer_still_needs) {
  group_fixture f(R"({"name":"I","subjects":["i.>"],"storage":"memory","retention":"interest"})");
  // No consumer: nothing is stored (nobody is interested).
  EXPECT_EQ(f.publish("i.x", "lost"), R"({"stream":"I","seq":1})");
  EXPECT_EQ(f.msgs(), 0u);
  consumer_agent& a = f.pull_consumer("A");
  consumer_agent& b = f.pull_consumer("B");
  f.publish("i.x", "kept");
  ASSERT_EQ(f.msgs(), 1u);
  auto from_a = f.pull(a, 1);
  auto from_b = f.pull(b, 1);
  ASSERT_EQ(from_a.size(), 1u);
  ASSERT_EQ(from_b.size(), 1u);
  f.host.inject(from_a[0].reply, "", "+ACK");
  f.group.poll(f.host.now());
  EXPECT_EQ(f.msgs(), 1u);  // B has not acked it yet
  f.host.inject(from_b[0].reply, "", "+ACK");
  f.group.poll(f.host.now());
  EXPECT_EQ(f.msgs(), 0u);
}

TEST(stream_group, limits_retention_keeps_acked_messages_and_deleting_a_consumer_drops_interest) {
  group_fixture f(R"({"name":"L","subjects":["l"],"storage":"memory"})");
  consumer_agent& c = f.pull_consumer("C");
  f.publish("l", "x");
  auto got = f.pull(c, 1);
  ASSERT_EQ(got.size(), 1u);
  f.host.inject(got[0].reply, "", "+ACK");
  f.group.poll(f.host.now());
  EXPECT_EQ(f.msgs(), 1u);
  auto taken = f.group.take_consumer("C");
  ASSERT_TRUE(taken);
  f.group.retire_consumer(std::move(taken));
  EXPECT_FALSE(f.host.subscribed("$JS.ACK.L.C.>"));
  EXPECT_TRUE(f.group.busy(f.host.now()));  // the retired agent is freed by the next poll
  f.group.poll(f.host.now());
  EXPECT_FALSE(f.group.busy(f.host.now()));
  EXPECT_EQ(f.group.consumer_count(), 0u);
}

TEST(stream_group, publishes_its_stored_bytes_to_the_server_wide_counter) {
  fake_host host;
  {
    const stream_config cfg = stream_cfg(R"({"name":"U","subjects":["u"],"storage":"memory","retention":"workqueue"})");
    stream_group g(host, cfg, host.now(), "/nonexistent", std::make_unique<storage::memory_store>());
    g.get_stream().subscribe();
    consumer_agent& c = g.add_consumer(pull_cfg(cfg, "W"), host.now(), "", host.now());
    c.start(nullptr, host.now());
    host.inject("u", "_INBOX.pub", "0123456789");
    host.inject("u", "_INBOX.pub", "abc");
    const auto stored = std::int64_t(g.get_stream().bytes());
    ASSERT_GT(stored, 13);
    EXPECT_EQ(host.used[0], stored);  // reported as each message was stored
    EXPECT_EQ(host.used[1], 0);
    // The server's limit is the host's verdict on the counters: 10023 on the next publish.
    host.limit = stored - 1;
    host.inject("u", "_INBOX.full", "x");
    auto out = host.take();
    ASSERT_FALSE(out.empty());
    EXPECT_NE(out.back().payload.find("10023"), std::string::npos) << out.back().payload;
    host.limit = INT64_MAX;
    // An ack removes the message (work queue): the counter follows.
    host.listeners.insert("_INBOX.pull");
    core::inbound_msg m;
    m.subject = "$JS.API.CONSUMER.MSG.NEXT.U.W";
    m.reply = "_INBOX.pull";
    m.payload = R"({"batch":1})";
    c.on_pull_request(m, host.now());
    g.poll(host.now());
    std::string ack;
    for (const auto& s : host.take())
      if (s.to == "_INBOX.pull" && s.headers.empty()) ack = s.reply;
    ASSERT_FALSE(ack.empty());
    host.inject(ack, "", "+ACK");
    EXPECT_EQ(host.used[0], std::int64_t(g.get_stream().bytes()));
    EXPECT_LT(host.used[0], stored);
  }
  EXPECT_EQ(host.used[0], 0);  // a deleted stream takes its bytes with it
}

// Found by the group simulation (seed 20): several messages removed at once (expiry, limits)
// where the first frees an ack-pending slot. The consumer delivers the next message while it
// is still being told of the removals, so every removal must invalidate its num_pending count
// before the machine runs, or the count keeps the removed messages.
TEST(stream_group, num_pending_after_a_batch_of_removals_that_frees_a_slot) {
  group_fixture f(R"({"name":"R","subjects":["r"],"storage":"memory"})");
  create_request r;
  ASSERT_FALSE(parse_create_request(
      R"({"stream_name":"R","config":{"durable_name":"C","ack_policy":"explicit","max_ack_pending":1}})", r));
  ASSERT_FALSE(normalise(r.config, f.cfg, false));
  consumer_agent& c = f.group.add_consumer(r.config, f.host.now(), "", f.host.now());
  c.start(nullptr, f.host.now());
  for (const char* p : {"one", "two", "three", "four"}) f.publish("r", p);
  auto got = f.pull(c, 2);  // the second waits: one message may be unacked at a time
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].payload, "one");
  EXPECT_EQ(c.info_json(f.host.now())["num_pending"], 3);
  // As a limit or max_age trim reports them: removed from the store, then one notification.
  auto& st = f.group.get_stream().store();
  for (std::uint64_t seq : {1, 2, 3}) ASSERT_TRUE(st.remove(seq).ok());
  f.group.get_stream().notify_removed({1, 2, 3});
  f.group.poll(f.host.now());
  got.clear();
  for (auto& s : f.host.take())
    if (s.to == "_INBOX.pull" && s.headers.empty()) got.push_back(std::move(s));
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].payload, "four");
  EXPECT_EQ(c.info_json(f.host.now())["num_pending"], 0);
  EXPECT_EQ(c.info_json(f.host.now())["num_ack_pending"], 1);
}

// Found by the group simulation (seed 99): a publish whose discard-old trim removes a pending
// message lets the consumer deliver the next one, counting num_pending from the store, which
// already holds the new message, before the stream reports that message stored; the report
// must not count it a second time.
TEST(stream_group, num_pending_when_a_publish_trims_a_pending_message) {
  // Each 10-byte message counts 27 bytes (memory accounting: 16 + subject + payload).
  group_fixture f(R"({"name":"T","subjects":["t"],"storage":"memory","max_bytes":108})");
  create_request r;
  ASSERT_FALSE(parse_create_request(
      R"({"stream_name":"T","config":{"durable_name":"C","ack_policy":"explicit","max_ack_pending":1}})", r));
  ASSERT_FALSE(normalise(r.config, f.cfg, false));
  consumer_agent& c = f.group.add_consumer(r.config, f.host.now(), "", f.host.now());
  c.start(nullptr, f.host.now());
  for (const char* p : {"0123456781", "0123456782", "0123456783", "0123456784"}) f.publish("t", p);
  auto got = f.pull(c, 2);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(c.info_json(f.host.now())["num_pending"], 3);
  // 54 bytes: messages 1 (pending) and 2 go; message 3 is delivered at once.
  f.publish("t", std::string(37, 'x'));
  EXPECT_EQ(f.msgs(), 3u);
  EXPECT_EQ(c.info_json(f.host.now())["num_pending"], 2);  // 4 and 5
  EXPECT_EQ(c.info_json(f.host.now())["num_ack_pending"], 1);
}

// Found by the group simulation (seeds 7, 25, 74): a crash kept a consumer snapshot that had
// delivered messages the stream's log lost (not durable yet). The next publishes reuse those
// sequences, so the restored consumer must resume from the stream's end, or it never
// delivers them.
TEST(stream_group, restored_consumer_ahead_of_the_stream_resumes_at_its_end) {
  char tmpl[] = "/tmp/peregrine-group-test-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const std::string dir = tmpl;
  fake_host host;
  {
    auto cs = storage::file_consumer_store::open(dir, "state");
    ASSERT_TRUE(cs.ok());
    storage::consumer_state st;
    st.delivered = {5, 5};
    st.ack_floor = {2, 2};
    st.pending[3] = {3, host.now()};  // within its ack wait
    st.pending[5] = {5, host.now()};
    st.redelivered[5] = 1;
    ASSERT_TRUE((*cs)->update(st).ok());
    ASSERT_TRUE((*cs)->flush().ok());
  }
  const stream_config cfg = stream_cfg(R"({"name":"A","subjects":["a"],"storage":"file"})");
  auto store = std::make_unique<storage::memory_store>(storage::byte_accounting::file);
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(store->append("a", "", "old", host.now()).ok());  // 4 and 5 were lost
  {
    stream_group g(host, cfg, host.now(), dir, std::move(store));
    g.get_stream().subscribe();
    consumer_agent& c = g.add_consumer(pull_cfg(cfg, "C"), host.now(), dir, host.now());
    c.start(nullptr, host.now());
    auto info = c.info_json(host.now());
    EXPECT_EQ(info["delivered"]["stream_seq"], 3);
    EXPECT_EQ(info["ack_floor"]["stream_seq"], 2);
    EXPECT_EQ(info["num_ack_pending"], 1);  // 3 is still unacked; 5 is gone
    EXPECT_EQ(info["num_redelivered"], 0);
    host.inject("a", "_INBOX.pub", "new");  // takes sequence 4 again
    g.poll(host.now());
    host.take();
    host.listeners.insert("_INBOX.pull");
    core::inbound_msg m;
    m.subject = "$JS.API.CONSUMER.MSG.NEXT.A.C";
    m.reply = "_INBOX.pull";
    m.payload = R"({"batch":1})";
    c.on_pull_request(m, host.now());
    g.poll(host.now());
    std::vector<sent> got;
    for (auto& s : host.take())
      if (s.to == "_INBOX.pull" && s.headers.empty()) got.push_back(std::move(s));
    ASSERT_EQ(got.size(), 1u);
    EXPECT_EQ(got[0].payload, "new");
    EXPECT_TRUE(got[0].reply.starts_with("$JS.ACK.A.C.1.4.6.")) << got[0].reply;
    c.wait_state_written();
  }
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
}

// Found by the group simulation (seed 74): a crash brought back a work-queue (or interest)
// message whose removal was not yet durable while the consumer's snapshot kept the ack; no
// consumer would ever deliver it again, so it stayed forever. Once the owner restored the
// consumers, the group drops what none of them needs (a work queue keeps unmatched ones).
TEST(stream_group, restored_work_queue_drops_what_restored_consumers_acked) {
  char tmpl[] = "/tmp/peregrine-group-test-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const std::string dir = tmpl;
  fake_host host;
  {
    auto cs = storage::file_consumer_store::open(dir, "state");
    ASSERT_TRUE(cs.ok());
    storage::consumer_state st;
    st.delivered = {2, 2};
    st.ack_floor = {1, 1};  // message 1 acked, 2 pending
    st.pending[2] = {2, host.now()};
    ASSERT_TRUE((*cs)->update(st).ok());
    ASSERT_TRUE((*cs)->flush().ok());
  }
  const stream_config cfg = stream_cfg(R"({"name":"W","subjects":["w.*"],"storage":"file","retention":"workqueue"})");
  auto store = std::make_unique<storage::memory_store>(storage::byte_accounting::file);
  for (const char* subj : {"w.a", "w.a", "w.b"}) ASSERT_TRUE(store->append(subj, "", "x", host.now()).ok());
  {
    stream_group g(host, cfg, host.now(), dir, std::move(store));
    g.get_stream().subscribe();
    create_request r;
    ASSERT_FALSE(parse_create_request(
        R"({"stream_name":"W","config":{"durable_name":"C","ack_policy":"explicit","filter_subject":"w.a"}})", r));
    ASSERT_FALSE(normalise(r.config, cfg, false));
    consumer_agent& c = g.add_consumer(r.config, host.now(), dir, host.now());
    c.start(nullptr, host.now());
    g.consumers_restored();  // as jetstream::load_consumers after the last consumer
    auto& st = g.get_stream().store();
    EXPECT_FALSE(st.load(1).ok());  // acked before the crash
    EXPECT_TRUE(st.load(2).ok());   // still pending
    EXPECT_TRUE(st.load(3).ok());   // no consumer matches it: it waits for one
    c.wait_state_written();
  }
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
}

TEST(stream_group, max_age_expiry_is_a_deadline) {
  group_fixture f(R"({"name":"T","subjects":["t"],"storage":"memory","max_age":1000000000})");
  f.publish("t", "old");
  ASSERT_EQ(f.msgs(), 1u);
  const std::int64_t next = f.group.next_wakeup(f.host.now());
  ASSERT_NE(next, stream_group::kNever);
  EXPECT_LE(next, f.host.now() + base::kSecond);
  f.host.clock.advance(2 * base::kSecond);
  ASSERT_LE(f.group.next_wakeup(f.host.now()), f.host.now());
  f.group.poll(f.host.now());
  EXPECT_EQ(f.msgs(), 0u);
}

// An atomic batch left open past the 10 s inactivity limit is abandoned with nats-server's
// advisory, and its late commit finds no batch: nothing of it is stored.
TEST(stream_group, idle_atomic_batch_is_abandoned_with_an_advisory) {
  group_fixture f(R"({"name":"B","subjects":["b.>"],"storage":"memory","allow_atomic":true})");
  const std::string first = "NATS/1.0\r\nNats-Batch-Id: late\r\nNats-Batch-Sequence: 1\r\n\r\n";
  ASSERT_EQ(f.host.inject("b.x", "_INBOX.b1", "one", first), 1u);
  f.group.poll(f.host.now());
  auto out = f.host.take();
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].payload, "");  // staged: a zero-byte ack
  f.host.listeners.insert("$JS.EVENT.ADVISORY.STREAM.BATCH_ABANDONED.B");
  // An otherwise idle stream asks to be polled when the batch times out, not never.
  f.group.poll(f.host.now());
  EXPECT_FALSE(f.group.busy(f.host.now()));
  EXPECT_EQ(f.group.next_wakeup(f.host.now()), f.host.now() + 10 * base::kSecond);
  f.host.clock.advance(9 * base::kSecond);
  f.group.poll(f.host.now());
  EXPECT_TRUE(f.host.take().empty()) << "abandoned before its 10 s";
  f.host.clock.advance(2 * base::kSecond);
  f.group.poll(f.host.now());
  out = f.host.take();
  const auto adv = std::find_if(out.begin(), out.end(), [](const sent& s) {
    return s.subject == "$JS.EVENT.ADVISORY.STREAM.BATCH_ABANDONED.B";
  });
  ASSERT_NE(adv, out.end());
  const auto j = nlohmann::json::parse(adv->payload);
  EXPECT_EQ(j.value("type", ""), "io.nats.jetstream.advisory.v1.stream_batch_abandoned");
  EXPECT_EQ(j.value("stream", ""), "B");
  EXPECT_EQ(j.value("batch", ""), "late");
  EXPECT_EQ(j.value("reason", ""), "timeout");
  const std::string commit =
      "NATS/1.0\r\nNats-Batch-Id: late\r\nNats-Batch-Sequence: 2\r\nNats-Batch-Commit: 1\r\n\r\n";
  ASSERT_EQ(f.host.inject("b.x", "_INBOX.b2", "two", commit), 1u);
  f.group.poll(f.host.now());
  out = f.host.take();
  ASSERT_FALSE(out.empty());
  EXPECT_NE(out.back().payload.find("\"error\""), std::string::npos) << out.back().payload;
  EXPECT_EQ(f.msgs(), 0u);
}

}  // namespace
}  // namespace js
