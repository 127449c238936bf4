#include "src/js/subject_transform.h"

#include <gtest/gtest.h>

#include "src/js/republish.h"

namespace js {
namespace {

std::string map(std::string_view src, std::string_view dest, std::string_view subject) {
  std::string err;
  auto t = subject_transform::parse(src, dest, err);
  if (!t) return "ERR " + err;
  auto out = t->apply(subject);
  return out ? *out : "NOMATCH";
}

std::string parse_error(std::string_view src, std::string_view dest) {
  std::string err;
  auto t = subject_transform::parse(src, dest, err);
  return t ? "OK" : err;
}

// The examples of streams.md §8.1 (ADR-30 and the Deep Dive).
TEST(subject_transform, documented_examples) {
  EXPECT_EQ(map("one.*.three.*.five", "uno.{{wildcard(2)}}.{{wildcard(1)}}", "one.two.three.four.five"), "uno.four.two");
  EXPECT_EQ(map("one.*.three.*.five", "uno.$2.$1", "one.two.three.four.five"), "uno.four.two");
  EXPECT_EQ(map("*", "{{split(1,-)}}", "-abc-def--ghij-"), "abc.def.ghij");
  EXPECT_EQ(map("*", "{{splitfromleft(1,3)}}", "12345"), "123.45");
  EXPECT_EQ(map("*", "{{SplitFromRight(1,3)}}", "12345"), "12.345");
  EXPECT_EQ(map("*", "{{SliceFromLeft(1,3)}}", "1234567890"), "123.456.789.0");
  EXPECT_EQ(map("*", "{{SliceFromRight(1,3)}}", "1234567890"), "1.234.567.890");
  // Partition vectors from the Deep Dive (FNV-1a 32 mod 3).
  const char* dest = "orders.{{partition(3,1)}}.{{wildcard(1)}}";
  EXPECT_EQ(map("ingest.*", dest, "ingest.acme"), "orders.1.acme");
  EXPECT_EQ(map("ingest.*", dest, "ingest.globex"), "orders.1.globex");
  EXPECT_EQ(map("ingest.*", dest, "ingest.wayne"), "orders.2.wayne");
  EXPECT_EQ(map("ingest.*", "p.{{ partition( 0 , 1 ) }}", "ingest.acme"), "p.0");
}

TEST(subject_transform, matching_rest_and_literals) {
  EXPECT_EQ(map("rp.>", "dash.rp.>", "rp.a.b"), "dash.rp.a.b");
  EXPECT_EQ(map("", "copy.>", "x.y"), "copy.x.y");  // empty src = >
  EXPECT_EQ(map("rp.>", "dash.rp.>", "other.a"), "NOMATCH");
  EXPECT_EQ(map("a.*", "b.$1", "a.x.y"), "NOMATCH");
  EXPECT_EQ(map("a.*", "b.$1", "a"), "NOMATCH");
  EXPECT_EQ(map("a.*.>", "{{wildcard(1)}}.>", "a.k.x.y"), "k.x.y");
  EXPECT_EQ(map("a.b", "c.d", "a.b"), "c.d");
  EXPECT_EQ(map("*.*", "{{partition(10)}}", "x.y"), std::to_string(fnv1a32("x.y") % 10));
  EXPECT_EQ(map("*", "{{splitfromleft(1,0)}}", "abc"), "abc");  // out of range: unchanged
  EXPECT_EQ(map("*", "{{slicefromleft(1,5)}}", "abc"), "abc");
}

TEST(subject_transform, random_uses_the_injected_source) {
  std::string err;
  auto t = subject_transform::parse("a.*", "r.{{random(4)}}.$1", err);
  ASSERT_TRUE(t) << err;
  t->rng = [] { return 7u; };
  EXPECT_EQ(*t->apply("a.x"), "r.3.x");
}

TEST(subject_transform, errors_use_nats_server_texts) {
  EXPECT_EQ(parse_error("a.*", "b.{{wildcard(2)}}"),
            "invalid mapping destination: wildcard index out of range in {{wildcard(2)}}");
  EXPECT_EQ(parse_error("a.b", "b.{{split(1,-)}}"),
            "invalid mapping destination: wildcard index out of range in {{split(1,-)}}");
  EXPECT_EQ(parse_error("a.*", "b.{{nope(1)}}"), "invalid mapping destination: unknown function in {{nope(1)}}");
  EXPECT_EQ(parse_error("a.*", "b.{{left(1,2)}}"), "invalid mapping destination: unknown function in {{left(1,2)}}");
  EXPECT_EQ(parse_error("a.*", "b.{{wildcard()}}"),
            "invalid mapping destination: not enough arguments passed to the function in {{wildcard()}}");
  EXPECT_EQ(parse_error("a.*", "b.{{wildcard(1,2)}}"),
            "invalid mapping destination: too many arguments passed to the function in {{wildcard(1,2)}}");
  EXPECT_EQ(parse_error("a.*", "b.{{wildcard(x)}}"),
            "invalid mapping destination: function argument is invalid or in the wrong format in {{wildcard(x)}}");
  EXPECT_EQ(parse_error("a.*", "b..c"), "invalid mapping destination: invalid transform");
  EXPECT_EQ(parse_error("a.*", "b.*"), "invalid subject");
  EXPECT_EQ(parse_error("a.*", "b.>"), "invalid subject");  // > on one side only
  EXPECT_EQ(parse_error("a..b", "c"), "invalid subject");
  EXPECT_EQ(parse_error("a.>", "b.>.c"), "invalid subject");
  EXPECT_EQ(parse_error("a.*", "b.{{partition(3,1)}}.$1"), "OK");
}

TEST(subject_rewrites, republish_headers_follow_the_stored_message) {
  stream_config cfg;
  cfg.name = "RP";
  cfg.republish = ojson{{"src", "rp.>"}, {"dest", "dash.rp.>"}};
  subject_rewrites r;
  r.configure(cfg);
  ASSERT_TRUE(r.republishes());
  auto c = r.republish("RP", "rp.a", "NATS/1.0\r\nX-App: 1\r\n\r\n", 5, 1, 1'700'000'000'000'000'000, 0);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->subject, "dash.rp.a");
  EXPECT_FALSE(c->headers_only);
  EXPECT_EQ(c->headers,
            "NATS/1.0\r\nX-App: 1\r\nNats-Stream: RP\r\nNats-Subject: rp.a\r\nNats-Sequence: 1\r\n"
            "Nats-Time-Stamp: 2023-11-14T22:13:20Z\r\nNats-Last-Sequence: 0\r\n\r\n");
  EXPECT_FALSE(r.republish("RP", "other.a", "", 5, 2, 0, 0));
  cfg.republish["headers_only"] = true;
  r.configure(cfg);
  c = r.republish("RP", "rp.b", "", 11, 2, 1'700'000'000'000'000'000, 1);
  ASSERT_TRUE(c);
  EXPECT_TRUE(c->headers_only);
  EXPECT_EQ(c->headers,
            "NATS/1.0\r\nNats-Stream: RP\r\nNats-Subject: rp.b\r\nNats-Sequence: 2\r\n"
            "Nats-Time-Stamp: 2023-11-14T22:13:20Z\r\nNats-Last-Sequence: 1\r\nNats-Msg-Size: 11\r\n\r\n");
}

TEST(subject_rewrites, ingest_transform_leaves_unmatched_subjects) {
  stream_config cfg;
  cfg.subject_transform = ojson{{"src", "ingest.*"}, {"dest", "orders.{{partition(3,1)}}.{{wildcard(1)}}"}};
  subject_rewrites r;
  r.configure(cfg);
  std::string scratch;
  EXPECT_EQ(r.ingest("ingest.wayne", scratch), "orders.2.wayne");
  EXPECT_EQ(r.ingest("other.x", scratch), "other.x");
}

}  // namespace
}  // namespace js
