// Mirrors and sources, the pure part: StreamSource validation, the consumer create request,
// ack-reply metadata, copy headers, and source_tracker (copy/lag/retry bookkeeping driven by
// an injected clock).
#include "src/js/stream_source.h"

#include <gtest/gtest.h>

#include <map>

namespace js {
namespace {

constexpr std::int64_t kSec = 1'000'000'000;

stream_config mirror_cfg(ojson mirror) {
  stream_config c;
  c.name = "M";
  c.mirror = std::move(mirror);
  return c;
}

std::uint16_t code_of(const std::optional<api_error>& e) { return e ? e->err_code : 0; }

TEST(stream_source, validation_codes) {
  EXPECT_EQ(code_of(validate_mirror_and_sources(mirror_cfg({{"name", "ORDERS"}}))), 0);
  EXPECT_EQ(code_of(validate_mirror_and_sources(mirror_cfg({{"name", "bad.name"}}))), 10142);
  EXPECT_EQ(code_of(validate_mirror_and_sources(mirror_cfg(ojson{{"filter_subject", "x"}}))), 10142);
  auto c = mirror_cfg({{"name", "O"}});
  c.first_seq = 5;
  EXPECT_EQ(code_of(validate_mirror_and_sources(c)), 10143);
  c = mirror_cfg({{"name", "O"}});
  c.allow_atomic = true;
  EXPECT_EQ(code_of(validate_mirror_and_sources(c)), 10198);
  c = mirror_cfg({{"name", "O"}, {"filter_subject", "a"}, {"subject_transforms", {{{"src", "b"}, {"dest", "c"}}}}});
  EXPECT_EQ(code_of(validate_mirror_and_sources(c)), 10150);
  c = mirror_cfg({{"name", "O"}, {"subject_transforms", {{{"src", "a.*"}, {"dest", "x"}}, {{"src", "a.b"}, {"dest", "y"}}}}});
  EXPECT_EQ(code_of(validate_mirror_and_sources(c)), 10152);
  c = mirror_cfg({{"name", "O"}, {"subject_transforms", {{{"src", "a.*"}, {"dest", "x.{{wildcard(3)}}"}}}}});
  EXPECT_EQ(code_of(validate_mirror_and_sources(c)), 10154);

  stream_config s;
  s.name = "ALL";
  s.sources = ojson::array({{{"name", "A"}}, {{"name", "B"}}});
  EXPECT_EQ(code_of(validate_mirror_and_sources(s)), 0);
  s.sources = ojson::array({{{"name", "A"}}, {{"name", "A"}}});
  EXPECT_EQ(code_of(validate_mirror_and_sources(s)), 10140);
  s.sources = ojson::array({{{"name", "A"}}, {{"name", "A"}, {"filter_subject", "a.x"}}});
  EXPECT_EQ(code_of(validate_mirror_and_sources(s)), 0) << "another filter is another source";
  s.sources = ojson::array({{{"name", "a b"}}});
  EXPECT_EQ(code_of(validate_mirror_and_sources(s)), 10141);
  s.sources = ojson::array({{{"name", "A"}, {"filter_subject", "a"}, {"subject_transforms", {{{"src", "b"}, {"dest", "c"}}}}}});
  EXPECT_EQ(code_of(validate_mirror_and_sources(s)), 10144);
  s.sources = ojson::array({{{"name", "A"}}});
  s.allow_msg_schedules = true;
  EXPECT_EQ(code_of(validate_mirror_and_sources(s)), 10187);
}

// The verdicts nats-server 2.9.10 gave for the same configs (mirror of itself, a source of
// itself, two- and three-stream loops, a loop through a mirror, external origins skipped),
// and the subject test of the newer servers (a filter that cannot meet the subjects).
class cycle_world {
 public:
  stream_config& add(std::string name, std::vector<std::string> subjects, ojson sources = nullptr, ojson mirror = nullptr) {
    stream_config c;
    c.name = name;
    c.subjects = std::move(subjects);
    if (!sources.is_null()) c.sources = std::move(sources);
    if (!mirror.is_null()) c.mirror = std::move(mirror);
    return _streams[name] = std::move(c);
  }
  const stream_config* find(std::string_view n) const {
    auto it = _streams.find(std::string(n));
    return it == _streams.end() ? nullptr : &it->second;
  }
  std::uint16_t check(const stream_config& c) const {
    return code_of(check_source_cycle(c, [this](std::string_view n) -> const stream_config* {
      auto it = _streams.find(std::string(n));
      return it == _streams.end() ? nullptr : &it->second;
    }));
  }

 private:
  std::map<std::string, stream_config> _streams;
};

stream_config candidate(std::string name, std::vector<std::string> subjects, ojson sources, ojson mirror = nullptr) {
  stream_config c;
  c.name = std::move(name);
  c.subjects = std::move(subjects);
  if (!sources.is_null()) c.sources = std::move(sources);
  if (!mirror.is_null()) c.mirror = std::move(mirror);
  return c;
}

TEST(stream_source, cycles_are_detected_through_sources_and_mirrors) {
  cycle_world w;
  EXPECT_EQ(w.check(candidate("M", {}, nullptr, {{"name", "M"}})), 10052);
  EXPECT_EQ(w.check(candidate("S", {"s"}, ojson::array({{{"name", "S"}}}))), 10052);
  auto e = check_source_cycle(candidate("S", {"s"}, ojson::array({{{"name", "S"}}})), [](std::string_view) { return nullptr; });
  ASSERT_TRUE(e);
  EXPECT_EQ(e->code, 500);
  EXPECT_EQ(e->description, "detected cycle");

  w.add("A", {"a"}, ojson::array({{{"name", "B"}}}));
  EXPECT_EQ(w.check(candidate("B", {"b"}, ojson::array({{{"name", "A"}}}))), 10052);
  EXPECT_EQ(w.check(candidate("B", {"b"}, ojson::array({{{"name", "OTHER"}}}))), 0);

  w.add("X", {"x"}, ojson::array({{{"name", "Z"}}}));
  w.add("Y", {"y"}, ojson::array({{{"name", "X"}}}));
  EXPECT_EQ(w.check(candidate("Z", {"z"}, ojson::array({{{"name", "Y"}}}))), 10052);

  // A loop hidden behind a mirror: C sources MC, MC mirrors C.
  w.add("C", {"c"}, ojson::array({{{"name", "MC"}}}));
  EXPECT_EQ(w.check(candidate("MC", {}, nullptr, {{"name", "C"}})), 10052);

  // External origins are another domain or account: not followed.
  EXPECT_EQ(w.check(candidate("E", {"e"}, ojson::array({{{"name", "E"}, {"external", {{"api", "$JS.hub.API"}}}}}))), 0);
  EXPECT_EQ(w.check(candidate("EM", {}, nullptr, {{"name", "EM"}, {"external", {{"api", "$JS.hub.API"}}}})), 0);

  // A diamond is no cycle: D sources P and Q, both source R.
  w.add("R", {"r"});
  w.add("P", {"p"}, ojson::array({{{"name", "R"}}}));
  w.add("Q", {"q"}, ojson::array({{{"name", "R"}}}));
  EXPECT_EQ(w.check(candidate("D", {"d"}, ojson::array({{{"name", "P"}}, {{"name", "Q"}}}))), 0);
  // nats-server's walk marks a stream visited when taken off the queue: sourcing R and P
  // (which sources R) is a "cycle" in that order, not in the other (2.9.10 answers so).
  EXPECT_EQ(w.check(candidate("D", {"d"}, ojson::array({{{"name", "R"}}, {{"name", "P"}}}))), 10052);
  EXPECT_EQ(w.check(candidate("D", {"d"}, ojson::array({{{"name", "P"}}, {{"name", "R"}}}))), 0);

  // A filter that overlaps the listing stream's subjects loops; one that cannot is no cycle.
  EXPECT_EQ(w.check(candidate("F", {"f.>"}, ojson::array({{{"name", "F"}, {"filter_subject", "f.x"}}}))), 10052);
  EXPECT_EQ(w.check(candidate("F", {"f.>"}, ojson::array({{{"name", "F"}, {"filter_subject", "g"}}}))), 0);
}

// nats-server 2.9.10's answers for the same configs.
TEST(stream_source, external_prefixes) {
  cycle_world w;
  w.add("O", {"o.>"});
  const auto ext = [](std::string api, std::string deliver) { return ojson{{"api", api}, {"deliver", deliver}}; };
  const auto check = [&](const stream_config& c) {
    return check_source_origins(c, [&w](std::string_view n) -> const stream_config* { return w.find(n); });
  };
  auto e = check(candidate("X1", {}, nullptr, {{"name", "O"}, {"external", ext("$JS.API", "d")}}));
  ASSERT_TRUE(e);
  EXPECT_EQ(e->err_code, 10021);
  EXPECT_EQ(e->code, 400);
  EXPECT_EQ(e->description, "stream external api prefix $JS.API must not overlap with $JS.API");
  e = check(candidate("X2", {}, nullptr, {{"name", "O"}, {"external", ext("$JS.x.API", "d.*")}}));
  ASSERT_TRUE(e);
  EXPECT_EQ(e->err_code, 10024);
  EXPECT_EQ(e->description, "stream external delivery prefix d.* must not contain wildcards");
  e = check(candidate("X3", {}, nullptr, {{"name", "O"}, {"external", ext("$JS.*.API", "d")}}));
  ASSERT_TRUE(e);
  EXPECT_EQ(e->err_code, 10052);
  EXPECT_EQ(e->description, "stream external api prefix \"$JS.*.API\" must be a valid subject without wildcards");
  // A deliver prefix that would capture a local origin's subjects.
  e = check(candidate("X4", {}, ojson::array({{{"name", "O"}}, {{"name", "P"}, {"external", ext("$JS.x.API", "o")}}})));
  ASSERT_TRUE(e);
  EXPECT_EQ(e->err_code, 10022);
  EXPECT_EQ(e->description, "stream external delivery prefix o overlaps with stream subject o.>");
  EXPECT_FALSE(check(candidate("X5", {}, ojson::array({{{"name", "P"}, {"external", ext("$JS.API.CONSUMER", "")}}}))));
  EXPECT_FALSE(check(candidate("X6", {}, ojson::array({{{"name", "P"}, {"external", ext("", "x")}}}))));
  EXPECT_FALSE(check(candidate("X7", {}, nullptr, {{"name", "O"}, {"external", ext("$JS.hub.API", "deliver.b")}})));
}

TEST(stream_source, external_source_header_names_the_api_hash) {
  source_spec s;
  s.name = "ORDERS";
  s.external_api = "$JS.A.API";
  // 2.9.10 stored "Nats-Stream-Source: ORDERS:z0zeNTHp 1" for this origin.
  EXPECT_EQ(stream_source_header(s, 1, "orders.created"), "ORDERS:z0zeNTHp 1 > > orders.created");
  auto back = parse_stream_source_header("ORDERS:z0zeNTHp 1");
  ASSERT_TRUE(back);
  EXPECT_EQ(back->first, "ORDERS");
  EXPECT_EQ(back->second, 1u);
}

TEST(stream_source, create_request) {
  auto spec = parse_source_spec({{"name", "ORDERS"}, {"filter_subject", "orders.shipped"}});
  EXPECT_EQ(consumer_create_subject(spec), "$JS.API.CONSUMER.CREATE.ORDERS");
  auto body = ojson::parse(consumer_create_body(spec, "$JS.M.abc", 0, "ARCH", true));
  EXPECT_EQ(body["stream_name"], "ORDERS");
  EXPECT_EQ(body["config"]["deliver_subject"], "$JS.M.abc");
  EXPECT_EQ(body["config"]["deliver_policy"], "all");
  EXPECT_EQ(body["config"]["ack_policy"], "none");
  EXPECT_EQ(body["config"]["flow_control"], true);
  EXPECT_EQ(body["config"]["idle_heartbeat"], kSec);
  EXPECT_EQ(body["config"]["direct"], true);
  EXPECT_EQ(body["config"]["filter_subject"], "orders.shipped");
  // A resume starts after the last copied sequence; the first setup uses opt_start_*.
  body = ojson::parse(consumer_create_body(spec, "$JS.M.abc", 42, "ARCH", true));
  EXPECT_EQ(body["config"]["deliver_policy"], "by_start_sequence");
  EXPECT_EQ(body["config"]["opt_start_seq"], 42);
  spec = parse_source_spec({{"name", "O"}, {"opt_start_time", "2026-05-22T10:14:22Z"}, {"external", {{"api", "$JS.hub.API"}}}});
  EXPECT_EQ(consumer_create_subject(spec), "$JS.hub.API.CONSUMER.CREATE.O");
  body = ojson::parse(consumer_create_body(spec, "x", 0, "S", false));
  EXPECT_EQ(body["config"]["deliver_policy"], "by_start_time");
  EXPECT_EQ(body["config"]["opt_start_time"], "2026-05-22T10:14:22Z");
  // Two transform sources: filter_subjects.
  spec = parse_source_spec({{"name", "O"}, {"subject_transforms", {{{"src", "a"}, {"dest", ""}}, {{"src", "b"}, {"dest", "c"}}}}});
  body = ojson::parse(consumer_create_body(spec, "x", 0, "S", false));
  EXPECT_EQ(body["config"]["filter_subjects"], ojson({"a", "b"}));
  EXPECT_EQ(apply_source_transforms(spec, "a"), "a");
  EXPECT_EQ(apply_source_transforms(spec, "b"), "c");
  EXPECT_EQ(apply_source_transforms(spec, "z"), std::nullopt);
}

TEST(stream_source, delivery_reply_and_headers) {
  auto d = parse_delivery_reply("$JS.ACK.ORDERS.c1.1.17.5.1700000000000000000.3");
  ASSERT_TRUE(d);
  EXPECT_EQ(d->delivered, 1u);
  EXPECT_EQ(d->stream_seq, 17u);
  EXPECT_EQ(d->consumer_seq, 5u);
  EXPECT_EQ(d->ts, 1700000000000000000);
  EXPECT_EQ(d->pending, 3u);
  d = parse_delivery_reply("$JS.ACK.hub.ACCHASH.ORDERS.c1.2.17.5.99.0.tok");
  ASSERT_TRUE(d);
  EXPECT_EQ(d->delivered, 2u);
  EXPECT_FALSE(parse_delivery_reply("$JS.ACK.ORDERS.c1.1.x.5.1.3"));
  EXPECT_FALSE(parse_delivery_reply("_INBOX.abc"));

  EXPECT_EQ(strip_copy_headers("NATS/1.0\r\nNats-Expected-Stream: X\r\nNats-Msg-Id: a\r\nNats-Batch-Id: b\r\n\r\n", false),
            "NATS/1.0\r\nNats-Msg-Id: a\r\n\r\n");
  EXPECT_EQ(strip_copy_headers("NATS/1.0\r\nNats-Expected-Last-Sequence: 3\r\n\r\n", false), "");
  EXPECT_EQ(strip_copy_headers("NATS/1.0\r\nNats-Stream-Source: A 1\r\nk: v\r\n\r\n", true), "NATS/1.0\r\nk: v\r\n\r\n");
  EXPECT_EQ(strip_copy_headers("", true), "");

  auto spec = parse_source_spec({{"name", "ORDERS"}});
  EXPECT_EQ(stream_source_header(spec, 42, "orders.us.new"), "ORDERS 42 > > orders.us.new");
  auto p = parse_stream_source_header("ORDERS 42 > > orders.us.new");
  ASSERT_TRUE(p);
  EXPECT_EQ(p->first, "ORDERS");
  EXPECT_EQ(p->second, 42u);
  p = parse_stream_source_header("ORDERS-EU 1");  // 2.9 form
  ASSERT_TRUE(p);
  EXPECT_EQ(p->second, 1u);
  EXPECT_FALSE(parse_stream_source_header("ORDERS"));
}

delivery_meta dm(std::uint64_t sseq, std::uint64_t dseq, std::uint64_t pending = 0, std::uint64_t dc = 1) {
  delivery_meta d;
  d.stream_seq = sseq;
  d.consumer_seq = dseq;
  d.pending = pending;
  d.delivered = dc;
  d.ts = 7;
  return d;
}

TEST(source_tracker, first_setup_then_copies_in_order) {
  source_tracker t(true, 0);
  EXPECT_EQ(t.active(100), -1) << "never heard from the origin";
  auto start = t.due_create(100);
  ASSERT_TRUE(start);
  EXPECT_EQ(*start, 0u) << "first setup: the spec's start";
  EXPECT_FALSE(t.due_create(101)) << "one request at a time";
  t.create_ok(200);
  EXPECT_EQ(t.state(), source_tracker::phase::active);
  auto d = t.on_data(dm(1, 1, 2), 300);
  EXPECT_EQ(d.v, source_tracker::verdict::store);
  EXPECT_EQ(d.skip, 0u);
  t.stored(1);
  EXPECT_EQ(t.lag(), 1u);
  EXPECT_EQ(t.active(1300), 1000);
  // The origin lost 2..4: delivery sequence contiguous, the mirror skips them.
  d = t.on_data(dm(5, 2, 0), 400);
  EXPECT_EQ(d.v, source_tracker::verdict::store);
  EXPECT_EQ(d.skip, 3u);
  t.stored(5);
  EXPECT_EQ(t.lag(), 0u);
  EXPECT_EQ(t.copied(), 5u);
  // Redeliveries and already copied sequences are not stored again.
  EXPECT_EQ(t.on_data(dm(6, 3, 0, 2), 500).v, source_tracker::verdict::ignore);
  EXPECT_EQ(t.on_data(dm(5, 3), 500).v, source_tracker::verdict::duplicate);
}

TEST(source_tracker, sources_never_skip) {
  source_tracker t(false, 10);
  ASSERT_EQ(t.due_create(0), 11u) << "resume after the last copied";
  t.create_ok(0);
  auto d = t.on_data(dm(20, 1), 1);
  EXPECT_EQ(d.v, source_tracker::verdict::store);
  EXPECT_EQ(d.skip, 0u);
}

TEST(source_tracker, data_before_the_create_response_counts_as_set_up) {
  source_tracker t(true, 0);
  ASSERT_TRUE(t.due_create(0));
  EXPECT_EQ(t.on_data(dm(1, 1), 5).v, source_tracker::verdict::store);
  t.stored(1);
  t.create_ok(6);  // the late response does not reset the delivery sequence
  EXPECT_EQ(t.on_data(dm(2, 2), 7).v, source_tracker::verdict::store);
}

TEST(source_tracker, delivery_gap_and_heartbeat_mismatch_recreate_from_last_copied) {
  source_tracker t(true, 0);
  ASSERT_TRUE(t.due_create(0));
  t.create_ok(0);
  ASSERT_EQ(t.on_data(dm(1, 1), 1).v, source_tracker::verdict::store);
  t.stored(1);
  EXPECT_EQ(t.on_data(dm(3, 3), 2).v, source_tracker::verdict::recreate);
  EXPECT_EQ(t.state(), source_tracker::phase::idle);
  // Not before 2 s after the last attempt.
  EXPECT_FALSE(t.due_create(kSec));
  EXPECT_EQ(t.due_create(2 * kSec), 2u);
  t.create_ok(2 * kSec);
  EXPECT_FALSE(t.on_heartbeat(0, 1, 3 * kSec)) << "nothing delivered yet, nothing missed";
  EXPECT_TRUE(t.on_heartbeat(4, 5, 4 * kSec)) << "the consumer delivered what we never saw";
  EXPECT_EQ(t.due_create(5 * kSec), 2u);
}

TEST(source_tracker, failures_back_off_and_success_clears_the_error) {
  source_tracker t(true, 0);
  ASSERT_TRUE(t.due_create(0));
  t.create_failed(make_error(10059), kSec);
  ASSERT_TRUE(t.error());
  EXPECT_EQ(t.error()->err_code, 10059);
  EXPECT_EQ(t.failures(), 1u);
  EXPECT_EQ(t.next_attempt(), 11 * kSec) << "5 s x 2 x failures";
  EXPECT_FALSE(t.due_create(10 * kSec));
  ASSERT_TRUE(t.due_create(11 * kSec));
  t.create_failed(make_error(10059), 11 * kSec);
  EXPECT_EQ(t.next_attempt(), 31 * kSec);
  for (int i = 0; i < 20; ++i) {
    ASSERT_TRUE(t.due_create(t.next_attempt()));
    t.create_failed(make_error(10059), t.next_attempt());
  }
  const std::int64_t at = t.next_deadline();
  ASSERT_TRUE(t.due_create(at));
  t.create_failed(make_error(10059), at);
  EXPECT_EQ(t.next_attempt() - at, source_tracker::kMaxRetryNs) << "capped at 2 minutes";
  ASSERT_TRUE(t.due_create(t.next_attempt()));
  t.create_ok(t.next_attempt());
  EXPECT_FALSE(t.error());
  EXPECT_EQ(t.failures(), 0u);
}

TEST(source_tracker, unanswered_create_times_out_and_silence_sets_up_again) {
  source_tracker t(false, 0);
  ASSERT_TRUE(t.due_create(0));
  EXPECT_FALSE(t.due_create(9 * kSec));
  ASSERT_TRUE(t.due_create(10 * kSec)) << "no answer in 10 s: asked again at once";
  ASSERT_TRUE(t.error());
  EXPECT_EQ(t.error()->err_code, 10045);
  EXPECT_FALSE(t.due_create(19 * kSec));
  ASSERT_TRUE(t.due_create(20 * kSec)) << "and again, no backoff for silence";
  const std::int64_t ok_at = 20 * kSec;
  t.create_ok(ok_at);
  EXPECT_EQ(t.next_deadline(), ok_at + source_tracker::kStallNs);
  EXPECT_FALSE(t.due_create(ok_at + source_tracker::kStallNs - 1));
  EXPECT_TRUE(t.due_create(ok_at + source_tracker::kStallNs)) << "no heartbeat for 10 s: set up again";
}

// Durable sourcing (2.14): the `consumer` rules of nats-server's checkStreamCfg (10213/10215/
// 10216), the reset request and response, the flow-control answer, the 5 s reset timeout.
TEST(stream_source, durable_consumer_rules) {
  const ojson good{{"name", "ORDERS"}, {"consumer", {{"name", "SRC"}, {"deliver_subject", "src.orders"}}}};
  EXPECT_EQ(code_of(validate_mirror_and_sources(mirror_cfg(good))), 0);
  auto bad = [&](ojson patch) {
    ojson m = good;
    m.update(patch);
    return code_of(validate_mirror_and_sources(mirror_cfg(m)));
  };
  EXPECT_EQ(bad({{"consumer", {{"deliver_subject", "src.orders"}}}}), 10213);
  EXPECT_EQ(bad({{"consumer", {{"name", "a.b"}, {"deliver_subject", "src.orders"}}}}), 10213);
  EXPECT_EQ(bad({{"consumer", {{"name", "SRC"}, {"deliver_subject", "src.*"}}}}), 10213);
  EXPECT_EQ(bad({{"consumer", {{"name", "SRC"}}}}), 10213);
  EXPECT_EQ(bad({{"opt_start_seq", 5}}), 10213);
  EXPECT_EQ(bad({{"opt_start_time", "2026-01-01T00:00:00Z"}}), 10213);
  EXPECT_EQ(bad({{"filter_subject", "orders.x"}}), 10213);
  EXPECT_EQ(bad({{"subject_transforms", {{{"src", "orders.*"}, {"dest", "o.{{wildcard(1)}}"}}}}}), 0);

  stream_config s;
  s.name = "ALL";
  const ojson a{{"name", "A"}, {"consumer", {{"name", "C1"}, {"deliver_subject", "d.1"}}}};
  ojson a2 = a;
  a2["subject_transforms"] = ojson::array({{{"src", "x.>"}, {"dest", ""}}});
  s.sources = ojson::array({a, {{"name", "B"}}});
  EXPECT_EQ(code_of(validate_mirror_and_sources(s)), 0);
  s.sources = ojson::array({a, a2});
  EXPECT_EQ(code_of(validate_mirror_and_sources(s)), 10216) << "one origin consumer, two sources";
  ojson a3 = a;
  a3["filter_subject"] = "a.x";
  s.sources = ojson::array({a3});
  EXPECT_EQ(code_of(validate_mirror_and_sources(s)), 10215);
}

TEST(stream_source, durable_reset_request_and_answer) {
  auto spec = parse_source_spec({{"name", "ORDERS"}, {"consumer", {{"name", "SRC"}, {"deliver_subject", "src.o"}}}});
  EXPECT_TRUE(spec.durable());
  EXPECT_EQ(spec.consumer_deliver, "src.o");
  EXPECT_EQ(consumer_reset_subject(spec), "$JS.API.CONSUMER.RESET.ORDERS.SRC");
  spec.external_api = "$JS.hub.API";
  EXPECT_EQ(consumer_reset_subject(spec), "$JS.hub.API.CONSUMER.RESET.ORDERS.SRC");

  const auto ok = ojson::parse(R"({"type":"io.nats.jetstream.api.v1.consumer_reset_response","stream_name":"ORDERS",)"
                               R"("name":"SRC","config":{"ack_policy":"flow_control"},"reset_seq":4})");
  EXPECT_FALSE(check_reset_response(ok, true));
  auto wrong = ok;
  wrong["config"]["ack_policy"] = "explicit";
  EXPECT_EQ(code_of(check_reset_response(wrong, true)), 10214);
  EXPECT_EQ(check_reset_response(wrong, false)->description, "stream source consumer requires flow control ack policy");
  const auto missing = ojson::parse(R"({"error":{"code":404,"err_code":10014,"description":"consumer not found"}})");
  EXPECT_EQ(code_of(check_reset_response(missing, false)), 10014);

  EXPECT_EQ(flow_control_answer(7, 42), "NATS/1.0\r\nNats-Last-Consumer: 7\r\nNats-Last-Stream: 42\r\n\r\n");

  source_tracker t(false, 10, true);
  auto start = t.due_create(kSec);
  ASSERT_TRUE(start);
  EXPECT_FALSE(t.due_create(kSec + source_tracker::kResetTimeoutNs - 1));
  t.due_create(kSec + source_tracker::kResetTimeoutNs);
  EXPECT_EQ(t.state(), source_tracker::phase::backoff) << "an unanswered reset fails after 5 s";
}

}  // namespace
}  // namespace js
