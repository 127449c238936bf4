// Message counters (streams.md §12.1): the big-integer arithmetic, the Nats-Incr header
// rules, the counter math on the last value (incl. sourced copies), the config rules.
#include "src/js/stream_counter.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <random>

#include "src/js/json_util.h"
#include "src/js/stream_config.h"

namespace js {
namespace {

std::string sum(std::string_view a, std::string_view b) { return add(*parse_big_int(a), *parse_big_int(b)).str(); }

TEST(stream_counter, parse_big_int_as_go_set_string) {
  EXPECT_EQ(parse_big_int("+1")->str(), "1");
  EXPECT_EQ(parse_big_int("-10")->str(), "-10");
  EXPECT_EQ(parse_big_int("0")->str(), "0");
  EXPECT_EQ(parse_big_int("-0")->str(), "0");
  EXPECT_EQ(parse_big_int("007")->str(), "7");
  EXPECT_EQ(parse_big_int("-000")->str(), "0");
  for (const char* bad : {"", "+", "-", "1.5", "1e3", " 1", "1 ", "0x10", "1_000", "--1", "+-1", "abc"})
    EXPECT_FALSE(parse_big_int(bad)) << bad;
}

TEST(stream_counter, add_with_signs_and_carries) {
  EXPECT_EQ(sum("1", "1"), "2");
  EXPECT_EQ(sum("999", "1"), "1000");
  EXPECT_EQ(sum("1000", "-1"), "999");
  EXPECT_EQ(sum("-1", "1"), "0");
  EXPECT_EQ(sum("5", "-10"), "-5");
  EXPECT_EQ(sum("-5", "-10"), "-15");
  EXPECT_EQ(sum("-15", "20"), "5");
  EXPECT_EQ(sum("0", "0"), "0");
  // Beyond int64 and uint64.
  EXPECT_EQ(sum("9223372036854775807", "1"), "9223372036854775808");
  EXPECT_EQ(sum("18446744073709551615", "18446744073709551615"), "36893488147419103230");
  EXPECT_EQ(sum("-9223372036854775808", "-1"), "-9223372036854775809");
  EXPECT_EQ(sum("100000000000000000000000000000000000000", "-1"), "99999999999999999999999999999999999999");
  EXPECT_EQ(sum("-100000000000000000000000000000000000000", "100000000000000000000000000000000000000"), "0");
}

TEST(stream_counter, add_agrees_with_int64_on_random_values) {
  std::mt19937_64 rng(49);
  std::uniform_int_distribution<std::int64_t> d(-(std::int64_t{1} << 61), std::int64_t{1} << 61);
  for (int i = 0; i < 2000; ++i) {
    const std::int64_t a = d(rng), b = d(rng);
    EXPECT_EQ(sum(std::to_string(a), std::to_string(b)), std::to_string(a + b)) << a << " + " << b;
  }
}

TEST(stream_counter, counter_payload_round_trip) {
  EXPECT_EQ(counter_payload(*parse_big_int("-42")), R"({"val":"-42"})");
  EXPECT_EQ(parse_counter_payload(R"({"val":"123"})")->str(), "123");
  EXPECT_EQ(parse_counter_payload(R"({"VAL":"7","other":1})")->str(), "7");  // Go matches fields case-insensitively
  EXPECT_EQ(parse_counter_payload("{}")->str(), "0");
  for (const char* bad : {"", "x", "[]", R"({"val":5})", R"({"val":"1.5"})", R"("val")"})
    EXPECT_FALSE(parse_counter_payload(bad)) << bad;
}

js_headers with_incr(std::string_view v) {
  js_headers h;
  h.incr = v;
  return h;
}

std::uint16_t header_error(const js_headers& h, bool counter_stream, std::size_t payload, bool sourced = false) {
  auto e = check_incr_headers(h, counter_stream, payload, sourced);
  return e ? e->err_code : 0;
}

TEST(stream_counter, incr_header_rules) {
  EXPECT_EQ(header_error(js_headers{}, true, 0), 0);  // missing is decided with the math (10169)
  EXPECT_EQ(header_error(js_headers{}, false, 5), 0);
  EXPECT_EQ(header_error(with_incr("+1"), true, 0), 0);
  EXPECT_EQ(header_error(with_incr(""), false, 0), 0);  // an empty value is no increment
  EXPECT_EQ(header_error(with_incr("one"), true, 0), 10171);
  EXPECT_EQ(header_error(with_incr("one"), false, 0), 10171);  // parsed first
  EXPECT_EQ(header_error(with_incr("1"), false, 0), 10168);
  EXPECT_EQ(header_error(with_incr("1"), true, 3), 10170);
  EXPECT_EQ(header_error(with_incr("1"), true, 3, true), 0);  // a sourced copy carries the origin's value
  auto h = with_incr("1");
  h.rollup = "sub";
  EXPECT_EQ(header_error(h, true, 0), 10171);
  h = with_incr("1");
  h.expected_stream = "S";
  EXPECT_EQ(header_error(h, true, 0), 10171);
  h = with_incr("1");
  h.expected_last_seq = "0";
  EXPECT_EQ(header_error(h, true, 0), 10171);
  h = with_incr("1");
  h.expected_last_subj_seq = "0";
  EXPECT_EQ(header_error(h, true, 0), 10171);
  h = with_incr("1");
  h.expected_last_msg_id = "x";
  EXPECT_EQ(header_error(h, true, 0), 10171);
  h = with_incr("1");
  h.expected_last_subj_seq_subject = "a";
  EXPECT_EQ(header_error(h, true, 0), 10171);
  h = with_incr("1");
  h.msg_id = "dedup-is-fine";
  EXPECT_EQ(header_error(h, true, 0), 0);
}

TEST(stream_counter, increment_on_the_last_value) {
  const std::string hdr = append_header("", "Nats-Incr", "+5");
  auto r = apply_increment("c.a", hdr, parse_js_headers(hdr), "", std::nullopt, "", std::nullopt);
  ASSERT_TRUE(r.update);
  EXPECT_EQ(r.update->payload, R"({"val":"5"})");
  EXPECT_EQ(r.update->total, "5");
  EXPECT_EQ(r.update->headers, hdr);  // stored with the published headers
  const std::string dec = append_header("", "Nats-Incr", "-7");
  r = apply_increment("c.a", dec, parse_js_headers(dec), "", std::string_view(R"({"val":"5"})"), hdr, std::nullopt);
  ASSERT_TRUE(r.update);
  EXPECT_EQ(r.update->total, "-2");
  r = apply_increment("c.a", "", js_headers{}, "", std::nullopt, "", std::nullopt);
  EXPECT_FALSE(r.update);
  EXPECT_EQ(r.error.err_code, 10169);
  r = apply_increment("c.a", "", with_incr(""), "", std::nullopt, "", std::nullopt);
  EXPECT_EQ(r.error.err_code, 10169);
  EXPECT_EQ(r.error.description, "message counter increment is missing");
  r = apply_increment("c.a", dec, parse_js_headers(dec), "", std::string_view("not a counter"), "", std::nullopt);
  EXPECT_FALSE(r.update);
  EXPECT_EQ(r.error.err_code, 10172);
  EXPECT_EQ(r.error.description, "message counter is broken");
}

TEST(stream_counter, sourced_copies_count_the_change_per_origin) {
  // Origin A's subject c.x reaches 10, then 15; origin B's reaches 3: the local total is 18.
  auto copy = [](std::string_view origin, std::string_view val, std::string_view last_payload,
                 std::string_view last_hdr, bool has_last) {
    const std::string src = std::string(origin) + " 1 > > c.x";
    std::string hdr = append_header(append_header("", "Nats-Incr", "+1"), "Nats-Stream-Source", src);
    auto r = apply_increment("c.x", hdr, parse_js_headers(hdr), "{\"val\":\"" + std::string(val) + "\"}",
                             has_last ? std::optional<std::string_view>(last_payload) : std::nullopt, last_hdr,
                             std::string_view(src));
    EXPECT_TRUE(r.update) << r.error.description;
    return *r.update;
  };
  auto a1 = copy("A", "10", "", "", false);
  EXPECT_EQ(a1.total, "10");
  EXPECT_EQ(find_header(a1.headers, "Nats-Incr"), "10");
  EXPECT_EQ(find_header(a1.headers, "Nats-Counter-Sources"), R"({"A":{"c.x":"10"}})");
  auto a2 = copy("A", "15", a1.payload, a1.headers, true);
  EXPECT_EQ(a2.total, "15");
  EXPECT_EQ(find_header(a2.headers, "Nats-Incr"), "5");
  auto b1 = copy("B", "3", a2.payload, a2.headers, true);
  EXPECT_EQ(b1.total, "18");
  EXPECT_EQ(find_header(b1.headers, "Nats-Counter-Sources"), R"({"A":{"c.x":"15"},"B":{"c.x":"3"}})");
  auto a3 = copy("A", "1", b1.payload, b1.headers, true);  // A went down by 14
  EXPECT_EQ(a3.total, "4");
  EXPECT_EQ(find_header(a3.headers, "Nats-Incr"), "-14");
}

std::string config_error(std::string_view body) {
  stream_config c;
  if (auto e = parse_stream_config(body, c)) return "decode: " + e->description;
  if (auto e = normalise(c)) return e->description;
  auto e = validate(c);
  return e ? std::to_string(e->err_code) + " " + e->description : "";
}

TEST(stream_counter, config_rules) {
  EXPECT_EQ(config_error(R"({"name":"C","subjects":["c.>"],"allow_msg_counter":true})"), "");
  EXPECT_EQ(config_error(R"({"name":"C","subjects":["c.>"],"allow_msg_counter":true,"discard":"new"})"),
            "10052 counter stream cannot use discard new");
  EXPECT_EQ(config_error(R"({"name":"C","subjects":["c.>"],"allow_msg_counter":true,"allow_msg_ttl":true})"),
            "10052 counter stream cannot use message TTLs");
  EXPECT_EQ(config_error(R"({"name":"C","subjects":["c.>"],"allow_msg_counter":true,"retention":"interest"})"),
            "10052 counter stream can only use limits retention");
  EXPECT_EQ(config_error(R"({"name":"C","subjects":["c.>"],"allow_msg_counter":true,"retention":"workqueue"})"),
            "10052 counter stream can only use limits retention");
  EXPECT_EQ(config_error(R"({"name":"M","mirror":{"name":"C"},"allow_msg_counter":true})"),
            "10173 stream mirrors can not also calculate counters");
  stream_config c;
  ASSERT_FALSE(parse_stream_config(R"({"name":"C","subjects":["c.>"],"allow_msg_counter":true})", c));
  ASSERT_FALSE(normalise(c));
  EXPECT_EQ(c.metadata["_nats.req.level"], "2");
  EXPECT_EQ(to_json(c, false)["allow_msg_counter"], true);
  stream_config off;
  ASSERT_FALSE(parse_stream_config(R"({"name":"C","subjects":["c.>"]})", off));
  ASSERT_FALSE(normalise(off));
  auto e = check_update(c, off);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->description, "stream configuration update can not change message counter setting");
}

}  // namespace
}  // namespace js
