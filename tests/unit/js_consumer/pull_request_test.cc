#include <gtest/gtest.h>

#include "src/js/pull_request.h"

namespace js {
namespace {

pull_request ok(std::string_view body) {
  auto r = parse_pull_request(body);
  EXPECT_TRUE(std::holds_alternative<pull_request>(r)) << body;
  return std::holds_alternative<pull_request>(r) ? std::get<pull_request>(r) : pull_request{};
}

std::string err(std::string_view body) {
  auto r = parse_pull_request(body);
  EXPECT_TRUE(std::holds_alternative<pull_parse_error>(r)) << body;
  return std::holds_alternative<pull_parse_error>(r) ? std::get<pull_parse_error>(r).description
                                                     : "";
}

TEST(PullRequest, BodyForms) {
  EXPECT_EQ(ok("").batch, 1);
  EXPECT_EQ(ok("  ").batch, 1);
  EXPECT_EQ(ok("5").batch, 5);
  EXPECT_EQ(ok("hello").batch, 1);
  EXPECT_EQ(ok("{}").batch, 1);  // JSON without batch: one message
  auto r = ok(R"({"batch":10,"expires":30000000000,"max_bytes":1024,"idle_heartbeat":5000000000,"no_wait":true})");
  EXPECT_EQ(r.batch, 10);
  EXPECT_EQ(r.expires, 30 * base::kSecond);
  EXPECT_EQ(r.max_bytes, 1024);
  EXPECT_EQ(r.idle_heartbeat, 5 * base::kSecond);
  EXPECT_TRUE(r.no_wait);
  auto g = ok(R"({"batch":1,"group":"jobs","min_pending":5,"min_ack_pending":2,"id":"abc","priority":3})");
  EXPECT_EQ(g.group, "jobs");
  EXPECT_EQ(g.min_pending, 5);
  EXPECT_EQ(g.min_ack_pending, 2);
  EXPECT_EQ(g.id, "abc");
  EXPECT_EQ(g.priority, 3);
  EXPECT_EQ(ok("").priority, 9);  // non-JSON ranks last
  EXPECT_EQ(ok("{\"batch\":2}").priority, 0);
}

TEST(PullRequest, Errors) {
  EXPECT_EQ(err(R"({"batch":1,"expires":1000000000,"idle_heartbeat":600000000})"),
            "Bad Request - heartbeat value too large");
  EXPECT_EQ(err(R"({"batch":1,"idle_heartbeat":600000000})"),
            "Bad Request - heartbeat value too large");
  EXPECT_EQ(err(R"({"priority":10})"), "Bad Request - Priority must be between 0 and 9");
  // Go's encoding/json texts, as nats-server sends them.
  EXPECT_EQ(err("{bad"), "Bad Request - invalid character 'b' looking for beginning of object key string");
  EXPECT_EQ(err(R"({"batch":)"), "Bad Request - unexpected end of JSON input");
  // A number beyond double range used to escape as an exception and terminate the server.
  EXPECT_EQ(err("{\"batch\":2e+1077777}"), "Bad Request - json: cannot unmarshal number into Go value of type int");
  EXPECT_EQ(err(R"({"batch":x})"), "Bad Request - invalid character 'x' looking for beginning of value");
  EXPECT_EQ(err(R"({"batch" 1})"), "Bad Request - invalid character '1' after object key");
  EXPECT_EQ(err(R"({"batch":1 "x":2})"), "Bad Request - invalid character '\"' after object key:value pair");
  EXPECT_EQ(err(R"({"batch":"x"})"),
            "Bad Request - json: cannot unmarshal string into Go struct field JSApiConsumerGetNextRequest.batch of type int");
  EXPECT_EQ(err(R"({"no_wait":1,"batch":"x"})"),
            "Bad Request - json: cannot unmarshal number into Go struct field JSApiConsumerGetNextRequest.no_wait of type bool");
  EXPECT_EQ(err(R"({"expires":1.5})"),
            "Bad Request - json: cannot unmarshal number 1.5 into Go struct field JSApiConsumerGetNextRequest.expires of type time.Duration");
  EXPECT_EQ(ok(R"({"batch":1,"expires":2000000000,"idle_heartbeat":1000000000})").idle_heartbeat,
            base::kSecond);
}

}  // namespace
}  // namespace js
