#include "src/js/fast_batch.h"

#include <gtest/gtest.h>

namespace js {
namespace {

using kind = fast_batch_table::decision::kind;

fi_reply parse(std::string_view reply) {
  auto p = parse_fast_batch_reply(reply);
  EXPECT_TRUE(p.reply.has_value()) << reply;
  return p.reply.value_or(fi_reply{});
}

int parse_error(std::string_view reply) {
  auto p = parse_fast_batch_reply(reply);
  return p.error ? p.error->err_code : 0;
}

std::string reply(std::string_view id, std::uint64_t seq, int op, std::string_view gap = "fail", int flow = 100) {
  return "_INBOX." + std::string(id) + "." + std::to_string(flow) + "." + std::string(gap) + "." + std::to_string(seq) +
         "." + std::to_string(op) + ".$FI";
}

// Drives one table like the stream does: every message stored at the next stream sequence,
// durability reported separately.
struct harness {
  fast_batch_table t{"M", ""};
  std::uint64_t sseq = 0;
  std::uint64_t durable = 0;
  bool durable_now = true;  // a memory store: durable as soon as appended
  std::vector<fi_send> out;

  std::vector<std::string> send(std::string_view rep, std::int64_t now = 0) {
    out.clear();
    auto d = t.on_msg(parse(rep), rep, now, durable, out);
    if (d.what == kind::store) {
      ++sseq;
      if (durable_now) durable = sseq;
      t.stored(d.b, sseq, durable, out);
    }
    return bodies();
  }
  std::vector<std::string> persist_to(std::uint64_t d) {
    out.clear();
    durable = d;
    t.on_durable(d, out);
    return bodies();
  }
  std::vector<std::string> bodies() const {
    std::vector<std::string> b;
    for (const auto& o : out) b.push_back(o.body);
    return b;
  }
};

TEST(fast_batch_reply, grammar_parsed_from_the_right) {
  auto r = parse("_INBOX.a.b.Xy.100.fail.7.1.$FI");
  EXPECT_EQ(r.id, "Xy");
  EXPECT_EQ(r.flow, 100);
  EXPECT_TRUE(r.gap_fail);
  EXPECT_EQ(r.seq, 7u);
  EXPECT_EQ(r.op, fi_op::append);
  EXPECT_FALSE(parse("_INBOX.Xy.0.ok.1.0.$FI").gap_fail);
  EXPECT_EQ(parse("_INBOX.Xy.0.ok.1.0.$FI").flow, 10);       // <= 0 -> 10
  EXPECT_EQ(parse("_INBOX.Xy.-5.ok.1.0.$FI").flow, 10);
  EXPECT_EQ(parse("_INBOX.Xy.999999.ok.1.0.$FI").flow, 65535);  // capped
  EXPECT_EQ(parse("_INBOX.Xy.10.ok.1.2.$FI").op, fi_op::commit);
  EXPECT_EQ(parse("_INBOX.Xy.10.ok.9.4.$FI").op, fi_op::ping);
  EXPECT_TRUE(is_fast_batch_reply("a.b.$FI"));
  EXPECT_FALSE(is_fast_batch_reply("_INBOX.abc"));
  EXPECT_FALSE(is_fast_batch_reply("x$FI"));
}

TEST(fast_batch_reply, violations_are_10206_and_long_ids_10207) {
  for (const char* bad : {"Xy.100.fail.1.0.$FI",           // no prefix token
                          "_INBOX.Xy.100.fail.1.5.$FI",    // op out of range
                          "_INBOX.Xy.100.fail.1.x.$FI", "_INBOX.Xy.100.maybe.1.0.$FI",
                          "_INBOX.Xy.abc.fail.1.0.$FI", "_INBOX.Xy.100.fail.0.2.$FI",  // seq 0
                          "_INBOX.Xy.100.fail.18446744073709551615.1.$FI",             // 2^64-1
                          "_INBOX.Xy.100.fail.2.0.$FI",    // start needs seq 1
                          "_INBOX.Xy.100.fail.1.1.$FI",    // append needs seq > 1
                          "_INBOX.Xy.100.fail.1.3.$FI",    // EOB on seq 1
                          "_INBOX..100.fail.2.1.$FI", "_INBOX.Xy.100.fail.1.0.$FIX"})
    EXPECT_EQ(parse_error(bad), 10206) << bad;
  EXPECT_EQ(parse_error("_INBOX." + std::string(65, 'i') + ".100.fail.1.0.$FI"), 10207);
  EXPECT_EQ(parse_error("_INBOX." + std::string(64, 'i') + ".100.fail.1.0.$FI"), 0);
}

TEST(fast_batch, initial_ack_flow_acks_and_commit_pub_ack) {
  harness h;
  EXPECT_EQ(h.send(reply("Xy", 1, 0)), (std::vector<std::string>{R"({"type":"ack","seq":0,"msgs":100})"}));
  for (int i = 2; i < 100; ++i) EXPECT_TRUE(h.send(reply("Xy", i, 1)).empty()) << i;
  EXPECT_EQ(h.send(reply("Xy", 100, 1)), (std::vector<std::string>{R"({"type":"ack","seq":100,"msgs":100})"}));
  for (int i = 101; i < 250; ++i) h.send(reply("Xy", i, 1));
  EXPECT_EQ(h.send(reply("Xy", 250, 2)), (std::vector<std::string>{R"({"stream":"M","seq":250,"batch":"Xy","count":250})"}));
  EXPECT_TRUE(h.t.empty());
  // The id is free again: an append now is unknown.
  EXPECT_EQ(h.send(reply("Xy", 251, 1)),
            (std::vector<std::string>{
                R"({"error":{"code":400,"err_code":10208,"description":"batch publish ID unknown"},"stream":"M","seq":0})"}));
}

TEST(fast_batch, flow_acks_wait_for_the_durability_point) {
  harness h;
  h.durable_now = false;
  h.send(reply("B", 1, 0, "fail", 10));
  for (int i = 2; i <= 25; ++i) EXPECT_TRUE(h.send(reply("B", i, 1, "fail", 10)).empty());
  EXPECT_TRUE(h.persist_to(9).empty());
  // One ack for the highest multiple reached (20), not one per multiple.
  EXPECT_EQ(h.persist_to(25), (std::vector<std::string>{R"({"type":"ack","seq":20,"msgs":10})"}));
  // EOB: everything before it is durable already, so the PubAck goes at once.
  EXPECT_EQ(h.send(reply("B", 26, 3, "fail", 10)),
            (std::vector<std::string>{R"({"stream":"M","seq":25,"batch":"B","count":25})"}));
}

TEST(fast_batch, eob_commit_counts_only_data_messages) {
  harness h;
  h.send(reply("B", 1, 0));
  h.send(reply("B", 2, 1));
  EXPECT_EQ(h.send(reply("B", 3, 3)), (std::vector<std::string>{R"({"stream":"M","seq":2,"batch":"B","count":2})"}));
}

TEST(fast_batch, pub_ack_waits_until_every_message_is_durable) {
  harness h;
  h.durable_now = false;
  h.send(reply("B", 1, 0));
  EXPECT_TRUE(h.send(reply("B", 2, 2)).empty());
  EXPECT_TRUE(h.send(reply("B", 3, 1)).empty());  // after the commit: ignored silently
  EXPECT_EQ(h.sseq, 2u);
  EXPECT_TRUE(h.persist_to(1).empty());
  EXPECT_EQ(h.persist_to(2), (std::vector<std::string>{R"({"stream":"M","seq":2,"batch":"B","count":2})"}));
}

TEST(fast_batch, single_message_batch_gets_only_the_pub_ack) {
  harness h;
  EXPECT_EQ(h.send(reply("S", 1, 2)), (std::vector<std::string>{R"({"stream":"M","seq":1,"batch":"S","count":1})"}));
}

TEST(fast_batch, gap_fail_ends_with_what_came_before) {
  harness h;
  h.send(reply("B", 1, 0));
  h.send(reply("B", 2, 1));
  EXPECT_EQ(h.send(reply("B", 5, 1)), (std::vector<std::string>{R"({"type":"gap","last_seq":3,"seq":5})",
                                                                 R"({"stream":"M","seq":2,"batch":"B","count":2})"}));
  EXPECT_EQ(h.sseq, 2u);  // nothing after the gap stored
  EXPECT_TRUE(h.t.empty());
}

TEST(fast_batch, gap_ok_continues_from_the_received_seq) {
  harness h;
  h.send(reply("B", 1, 0, "ok"));
  EXPECT_EQ(h.send(reply("B", 4, 1, "ok")), (std::vector<std::string>{R"({"type":"gap","last_seq":2,"seq":4})"}));
  EXPECT_EQ(h.sseq, 2u);
  EXPECT_TRUE(h.send(reply("B", 5, 1, "ok")).empty());
  EXPECT_EQ(h.send(reply("B", 6, 2, "ok")), (std::vector<std::string>{R"({"stream":"M","seq":4,"batch":"B","count":6})"}));
}

TEST(fast_batch, backward_seq_ends_the_batch_in_both_modes) {
  for (const char* mode : {"ok", "fail"}) {
    harness h;
    h.send(reply("B", 1, 0, mode));
    h.send(reply("B", 2, 1, mode));
    h.send(reply("B", 3, 1, mode));
    EXPECT_EQ(h.send(reply("B", 2, 1, mode)), (std::vector<std::string>{R"({"stream":"M","seq":3,"batch":"B","count":3})"}))
        << mode;
  }
}

TEST(fast_batch, ping_resends_the_ack_or_reports_the_gap) {
  harness h;
  h.send(reply("B", 1, 0, "ok", 2));
  h.send(reply("B", 2, 1, "ok", 2));  // ack seq 2
  EXPECT_EQ(h.send(reply("B", 2, 4, "ok", 2)), (std::vector<std::string>{R"({"type":"ack","seq":2,"msgs":2})"}));
  // The client says it sent 4; we saw 2: gap from 3, seq = ping + 1; ok mode continues at 5.
  EXPECT_EQ(h.send(reply("B", 4, 4, "ok", 2)), (std::vector<std::string>{R"({"type":"gap","last_seq":3,"seq":5})"}));
  EXPECT_EQ(h.send(reply("B", 5, 1, "ok", 2)), (std::vector<std::string>{R"({"type":"ack","seq":4,"msgs":2})"}));
  harness f;
  f.send(reply("C", 1, 0));
  EXPECT_EQ(f.send(reply("C", 3, 4)), (std::vector<std::string>{R"({"type":"gap","last_seq":2,"seq":4})",
                                                                 R"({"stream":"M","seq":1,"batch":"C","count":1})"}));
}

TEST(fast_batch, per_message_errors) {
  harness h;
  std::vector<fi_send> out;
  const api_error e = make_error(10071, "5");
  const std::string err_json = R"({"code":400,"err_code":10071,"description":"wrong last sequence: 5"})";
  // ok mode: err, dropped, the batch goes on (and the dropped message counts for flow).
  auto d = h.t.on_msg(parse(reply("B", 1, 0, "ok", 2)), reply("B", 1, 0, "ok", 2), 0, 0, out);
  ASSERT_EQ(d.what, kind::store);
  ++h.sseq;
  h.t.stored(d.b, h.sseq, h.sseq, out);
  out.clear();
  d = h.t.on_msg(parse(reply("B", 2, 1, "ok", 2)), reply("B", 2, 1, "ok", 2), 0, 1, out);
  h.t.failed(d.b, e, 1, out);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].body, R"({"type":"err","seq":2,"error":)" + err_json + "}");
  EXPECT_EQ(out[1].body, R"({"type":"ack","seq":2,"msgs":2})");
  EXPECT_EQ(h.t.size(), 1u);
  // fail mode, not the first message: err, then the PubAck for what came before.
  out.clear();
  d = h.t.on_msg(parse(reply("F", 1, 0)), reply("F", 1, 0), 0, 1, out);
  ++h.sseq;
  h.t.stored(d.b, h.sseq, h.sseq, out);
  out.clear();
  d = h.t.on_msg(parse(reply("F", 2, 1)), reply("F", 2, 1), 0, 2, out);
  h.t.failed(d.b, e, 2, out);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].body, R"({"type":"err","seq":2,"error":)" + err_json + "}");
  EXPECT_EQ(out[1].body, R"({"stream":"M","seq":2,"batch":"F","count":1})");
  // fail mode, first message: initial ack already went; then a plain error PubAck, no err.
  out.clear();
  d = h.t.on_msg(parse(reply("G", 1, 0)), reply("G", 1, 0), 0, 2, out);
  h.t.failed(d.b, e, 2, out);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].body, R"({"type":"ack","seq":0,"msgs":1})");  // B is open too: starts at 1
  EXPECT_EQ(out[1].body, R"({"error":)" + err_json + R"(,"stream":"M","seq":0})");
  EXPECT_EQ(h.t.size(), 1u);
}

TEST(fast_batch, duplicates_are_skipped_but_count) {
  harness h;
  std::vector<fi_send> out;
  auto d = h.t.on_msg(parse(reply("D", 1, 2)), reply("D", 1, 2), 0, 0, out);
  h.t.duplicate(d.b, 7, 0, out);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].body, R"({"stream":"M","seq":7,"duplicate": true,"batch":"D","count":1})");
  out.clear();
  d = h.t.on_msg(parse(reply("E", 1, 0, "fail", 1)), reply("E", 1, 0, "fail", 1), 0, 0, out);
  h.t.duplicate(d.b, 7, 0, out);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[1].body, R"({"type":"ack","seq":1,"msgs":1})");
}

TEST(fast_batch, frequency_halves_and_doubles_toward_the_stream_share) {
  fast_batch_table t("M", "", {.max_flow = 8});
  std::vector<fi_send> out;
  std::uint64_t sseq = 0;
  auto msg = [&](std::string_view id, std::uint64_t seq, int op) {
    out.clear();
    const std::string r = reply(id, seq, op, "fail", 100);
    auto d = t.on_msg(parse(r), r, 0, sseq, out);
    if (d.what == kind::store) {
      ++sseq;
      t.stored(d.b, sseq, sseq, out);
    }
    return out.empty() ? std::string() : out.back().body;
  };
  EXPECT_EQ(msg("A", 1, 0), R"({"type":"ack","seq":0,"msgs":8})");  // alone: min(max, flow)
  // Beside A it starts at 1 ({"seq":0,"msgs":1}), so its first message is acked at once,
  // and the frequency doubles toward its share 8/2.
  EXPECT_EQ(msg("B", 1, 0), R"({"type":"ack","seq":1,"msgs":2})");
  EXPECT_EQ(out.front().body, R"({"type":"ack","seq":0,"msgs":1})");
  for (int i = 2; i < 8; ++i) EXPECT_EQ(msg("A", i, 1), "");
  EXPECT_EQ(msg("A", 8, 1), R"({"type":"ack","seq":8,"msgs":4})");  // share 8/2: halves
  EXPECT_EQ(msg("B", 2, 1), "");
  EXPECT_EQ(msg("B", 3, 1), R"({"type":"ack","seq":3,"msgs":4})");
  EXPECT_EQ(msg("B", 4, 3), R"({"stream":"M","seq":11,"batch":"B","count":3})");
  for (int i = 9; i < 12; ++i) EXPECT_EQ(msg("A", i, 1), "");
  EXPECT_EQ(msg("A", 12, 1), R"({"type":"ack","seq":12,"msgs":8})");  // alone again: doubles
}

TEST(fast_batch, limits_and_unknown_ids) {
  std::size_t server = 0;
  fast_batch_table a("A", "", {.max_per_stream = 2, .max_per_server = 3}, &server);
  fast_batch_table b("B", "hub", {.max_per_stream = 2, .max_per_server = 3}, &server);
  std::vector<fi_send> out;
  auto start = [&](fast_batch_table& t, std::string_view id) {
    out.clear();
    return t.on_msg(parse(reply(id, 1, 0)), reply(id, 1, 0), 0, 0, out).what;
  };
  EXPECT_EQ(start(a, "1"), kind::store);
  EXPECT_EQ(start(a, "2"), kind::store);
  EXPECT_EQ(start(a, "3"), kind::done);
  EXPECT_EQ(out[0].body,
            R"({"error":{"code":429,"err_code":10211,"description":"batch publish too many inflight"},"stream":"A","seq":0})");
  EXPECT_EQ(start(b, "1"), kind::store);
  EXPECT_EQ(server, 3u);
  EXPECT_EQ(start(b, "2"), kind::done);  // the server-wide limit
  EXPECT_EQ(out[0].body, R"({"error":{"code":429,"err_code":10211,"description":"batch publish too many inflight"},)"
                         R"("stream":"B","domain":"hub","seq":0})");
  out.clear();
  EXPECT_EQ(b.on_msg(parse(reply("9", 5, 4)), reply("9", 5, 4), 0, 0, out).what, kind::done);
  EXPECT_NE(out[0].body.find("10208"), std::string::npos);
  a.clear();
  EXPECT_EQ(server, 1u);
}

TEST(fast_batch, inactivity_forgets_silently) {
  fast_batch_table t("M", "", {.timeout_ns = 100});
  std::vector<fi_send> out;
  auto d = t.on_msg(parse(reply("B", 1, 0)), reply("B", 1, 0), 0, 0, out);
  t.stored(d.b, 1, 1, out);
  out.clear();
  t.on_msg(parse(reply("B", 2, 1)), reply("B", 2, 1), 50, 1, out);  // activity at 50
  EXPECT_EQ(t.expire(149), 0u);
  EXPECT_EQ(t.expire(150), 1u);
  EXPECT_TRUE(t.empty());
  // A committed batch whose messages never become durable does not stay forever.
  d = t.on_msg(parse(reply("C", 1, 2)), reply("C", 1, 2), 200, 1, out);
  t.stored(d.b, 2, 1, out);
  EXPECT_EQ(t.size(), 1u);
  EXPECT_EQ(t.expire(300), 1u);
  EXPECT_TRUE(t.empty());
}

}  // namespace
}  // namespace js
