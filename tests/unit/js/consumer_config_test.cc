#include "src/js/consumer_config.h"

#include <gtest/gtest.h>

namespace js {
namespace {

stream_config a_stream(retention_policy r = retention_policy::limits) {
  stream_config s;
  s.name = "ORDERS";
  s.subjects = {"orders.>"};
  s.retention = r;
  s.num_replicas = 1;
  return s;
}

consumer_config parsed(std::string_view cfg, const stream_config& s = a_stream()) {
  create_request req;
  auto e = parse_create_request(R"({"stream_name":"ORDERS","config":)" + std::string(cfg) + "}", req);
  EXPECT_FALSE(e) << (e ? e->description : "");
  EXPECT_FALSE(normalise(req.config, s, req.pedantic));
  return req.config;
}

// err_code and description of the first problem (decode, defaults, validation).
std::pair<int, std::string> problem(std::string_view cfg, const stream_config& s = a_stream()) {
  create_request req;
  std::optional<api_error> e = parse_create_request(R"({"stream_name":"ORDERS","config":)" + std::string(cfg) + "}", req);
  if (!e) e = normalise(req.config, s, req.pedantic);
  if (!e) e = validate(req.config, s);
  return e ? std::pair<int, std::string>{e->err_code, e->description} : std::pair<int, std::string>{0, ""};
}

TEST(consumer_config, pull_durable_defaults_match_nats_server) {
  auto c = parsed(R"({"durable_name":"NEW","filter_subject":"orders.received"})");
  EXPECT_EQ(to_json(c, false).dump(),
            R"({"durable_name":"NEW","name":"NEW","deliver_policy":"all","ack_policy":"none","max_deliver":-1,)"
            R"("filter_subject":"orders.received","replay_policy":"instant","max_waiting":512,"num_replicas":0})");
  EXPECT_FALSE(validate(c, a_stream()));
}

TEST(consumer_config, explicit_ack_and_ephemeral_defaults) {
  auto c = parsed(R"({"ack_policy":"explicit"})");
  EXPECT_EQ(c.ack_wait, 30'000'000'000);
  EXPECT_EQ(c.max_ack_pending, 1000);
  EXPECT_EQ(c.inactive_threshold, 5'000'000'000);  // ephemeral
  auto b = parsed(R"({"durable_name":"D","ack_policy":"all","backoff":[1000000000,5000000000],"max_deliver":0})");
  EXPECT_EQ(b.ack_wait, 1'000'000'000);  // backoff[0]
  EXPECT_EQ(b.max_deliver, -1);
  EXPECT_EQ(b.inactive_threshold, 0);
  auto p = parsed(R"({"durable_name":"D","deliver_subject":"dlv","idle_heartbeat":5000000000,"flow_control":true})");
  EXPECT_EQ(p.max_waiting, 0);  // push
  auto pin = parsed(R"({"durable_name":"D","priority_policy":"pinned_client","priority_groups":["jobs"]})");
  EXPECT_EQ(pin.priority_timeout, 120'000'000'000);
  auto lim = a_stream();
  lim.consumer_limits = ojson{{"max_ack_pending", 77}, {"inactive_threshold", 9}};
  auto l = parsed(R"({"ack_policy":"explicit"})", lim);
  EXPECT_EQ(l.max_ack_pending, 77);
  EXPECT_EQ(l.inactive_threshold, 9);
}

TEST(consumer_config, decode_errors) {
  EXPECT_EQ(problem(R"({"ack_policy":"sometimes"})").first, 10025);
  EXPECT_EQ(problem(R"({"deliver_policy":"undefined"})").first, 0);
  EXPECT_EQ(problem(R"({"max_deliver":"x"})").first, 10025);
  EXPECT_EQ(problem(R"({"nope":1})"), (std::pair<int, std::string>{10025, "invalid JSON: json: unknown field \"nope\""}));
  create_request req;
  EXPECT_EQ(parse_create_request(R"({"stream_name":"S","action":"upsert"})", req)->err_code, 10025);
  ASSERT_FALSE(parse_create_request(R"({"stream_name":"S","action":"update","config":{}})", req));
  EXPECT_EQ(req.action, create_action::update);
}

// nats-server 2.11+: negative limits are clipped to "unset" (max_waiting then gets its 512
// default); pedantic mode refuses each with its own text.
TEST(consumer_config, negative_limits_clipped_or_pedantic_error) {
  EXPECT_EQ(parsed(R"({"ack_policy":"explicit","max_waiting":-1})").max_waiting, 512);
  auto pedantic = [](std::string_view cfg) {
    create_request req;
    EXPECT_FALSE(parse_create_request(R"({"stream_name":"ORDERS","pedantic":true,"config":)" + std::string(cfg) + "}", req));
    auto e = normalise(req.config, a_stream(), req.pedantic);
    return e ? std::pair<int, std::string>{e->err_code, e->description} : std::pair<int, std::string>{0, ""};
  };
  using P = std::pair<int, std::string>;
  EXPECT_EQ(pedantic(R"({"max_waiting":-1})"), (P{10157, "pedantic mode: max_waiting must not be negative"}));
  EXPECT_EQ(pedantic(R"({"max_ack_pending":-2})"), (P{10157, "pedantic mode: max_ack_pending must be set to -1"}));
  EXPECT_EQ(pedantic(R"({"max_expires":-1})"), (P{10157, "pedantic mode: max_expires must not be negative"}));
  EXPECT_EQ(pedantic(R"({"inactive_threshold":-1})"), (P{10157, "pedantic mode: inactive_threshold must not be negative"}));
}

TEST(consumer_config, go_decoder_texts) {
  using P = std::pair<int, std::string>;
  EXPECT_EQ(problem(R"({"max_ack_pending":9223372036854775808})"),
            (P{10025, "invalid JSON: json: cannot unmarshal number 9223372036854775808 into Go struct field "
                      "ConsumerConfig.config.max_ack_pending of type int"}));
  EXPECT_EQ(problem(R"({"ack_wait":1e9})"),
            (P{10025, "invalid JSON: json: cannot unmarshal number 1e9 into Go struct field "
                      "ConsumerConfig.config.ack_wait of type time.Duration"}));
  EXPECT_EQ(problem(R"({"headers_only":1})"),
            (P{10025, "invalid JSON: json: cannot unmarshal number into Go struct field "
                      "ConsumerConfig.config.headers_only of type bool"}));
  // The first bad field in document order wins, unknown fields included.
  EXPECT_EQ(problem(R"({"zz":1,"ack_wait":"x"})"), (P{10025, "invalid JSON: json: unknown field \"zz\""}));
  EXPECT_EQ(problem(R"({"ack_wait":"x","zz":1})").second,
            "invalid JSON: json: cannot unmarshal string into Go struct field ConsumerConfig.config.ack_wait of type "
            "time.Duration");
  EXPECT_EQ(problem(R"({"ack_policy":5})"), (P{10025, "invalid JSON: can not unmarshal \"5\""}));
}

TEST(consumer_config, validation_errors) {
  using P = std::pair<int, std::string>;
  EXPECT_EQ(problem(R"({"ack_policy":"explicit","ack_wait":-1})"), (P{10183, "consumer ack wait needs to be positive"}));
  EXPECT_EQ(problem(R"({"ack_policy":"explicit","backoff":[1,-1],"max_deliver":5})").first, 10184);
  EXPECT_EQ(problem(R"({"ack_policy":"explicit","backoff":[1,2,3],"max_deliver":2})"),
            (P{10116, "max deliver is required to be > length of backoff values"}));
  // 2.11+: one backoff step per delivery is allowed (2.9 refused it with 10116).
  EXPECT_EQ(problem(R"({"ack_policy":"explicit","backoff":[1,2],"max_deliver":2})").first, 0);
  EXPECT_EQ(problem(R"({"ack_policy":"explicit","backoff":[1,2,3],"max_deliver":-1})").first, 0);
  EXPECT_EQ(problem(R"({"description":")" + std::string(4097, 'x') + R"("})"),
            (P{10107, "consumer description is too long, maximum allowed is 4096"}));
  EXPECT_EQ(problem(R"({"deliver_subject":"a.*"})").first, 10079);
  EXPECT_EQ(problem(R"({"deliver_subject":"orders.x"})").first, 10081);
  EXPECT_EQ(problem(R"({"deliver_subject":"d","max_waiting":3})").first, 10080);
  EXPECT_EQ(problem(R"({"deliver_subject":"d","max_ack_pending":3})").first, 10082);
  EXPECT_EQ(problem(R"({"deliver_subject":"d","idle_heartbeat":1000})").first, 10083);
  EXPECT_EQ(problem(R"({"rate_limit_bps":100})").first, 10086);
  EXPECT_EQ(problem(R"({"idle_heartbeat":1000000000})").first, 10088);
  EXPECT_EQ(problem(R"({"flow_control":true})").first, 10089);
  EXPECT_EQ(problem(R"({"max_expires":10})").first, 10115);
  EXPECT_EQ(problem(R"({"filter_subject":"a","filter_subjects":["b"]})").first, 10136);
  EXPECT_EQ(problem(R"({"filter_subjects":["a",""]})").first, 10139);
  EXPECT_EQ(problem(R"({"filter_subjects":["a.>","a.b"]})").first, 10138);
  EXPECT_EQ(problem(R"({"filter_subject":"a..b"})"), (P{10052, "invalid subject"}));
  EXPECT_EQ(problem(R"({"deliver_policy":"last_per_subject"})"),
            (P{10094, "consumer delivery policy is deliver last per subject, but optional filter subject is not set"}));
  EXPECT_EQ(problem(R"({"deliver_policy":"all","opt_start_seq":3})"),
            (P{10094, "consumer delivery policy is deliver all, but optional start sequence is also set"}));
  EXPECT_EQ(problem(R"({"deliver_policy":"by_start_time"})").second,
            "consumer delivery policy is deliver by start time, but optional start time is not set");
  EXPECT_EQ(problem(R"({"deliver_policy":"by_start_sequence","opt_start_seq":2})").first, 0);
  EXPECT_EQ(problem(R"({"sample_freq":"abc"})").first, 10095);
  EXPECT_EQ(problem(R"({"deliver_subject":"d","flow_control":true})").first, 10108);
  EXPECT_EQ(problem(R"({"durable_name":"a","name":"b"})").first, 10132);
  EXPECT_EQ(problem(R"({"durable_name":"a.b"})").first, 10103);
  EXPECT_EQ(problem(R"({"durable_name":"a/b"})").first, 10127);
  EXPECT_EQ(problem(R"({"num_replicas":-1})").first, 10133);
  EXPECT_EQ(problem(R"({"num_replicas":3})").first, 10126);
  EXPECT_EQ(problem(R"({"priority_policy":"overflow"})").first, 10159);
  EXPECT_EQ(problem(R"({"priority_policy":"overflow","priority_groups":["bad name!"]})").first, 10162);
  EXPECT_EQ(problem(R"({"priority_groups":["jobs"]})").first, 10196);
  EXPECT_EQ(problem(R"({"priority_timeout":5})").first, 10197);
  EXPECT_EQ(problem(R"({"deliver_subject":"d","priority_policy":"overflow","priority_groups":["g"]})").first, 10178);
  EXPECT_EQ(problem(R"({"durable_name":"W"})", a_stream(retention_policy::workqueue)).first, 10084);
}

TEST(consumer_config, update_rules) {
  auto old = parsed(R"({"durable_name":"D","ack_policy":"explicit"})");
  auto next = old;
  next.max_deliver = 5;
  next.description = "x";
  EXPECT_FALSE(check_update(old, next, false));
  auto text = [&](auto mutate) {
    auto n = old;
    mutate(n);
    auto e = check_update(old, n, false);
    return e ? e->description : "";
  };
  EXPECT_EQ(text([](consumer_config& n) { n.deliver = deliver_policy::new_; }), "deliver policy can not be updated");
  EXPECT_EQ(text([](consumer_config& n) { n.ack = ack_policy::all; }), "ack policy can not be updated");
  EXPECT_EQ(text([](consumer_config& n) { n.max_waiting = 1; }), "max waiting can not be updated");
  EXPECT_EQ(text([](consumer_config& n) { n.deliver_subject = "x"; }), "can not update pull consumer to push based");
  EXPECT_EQ(text([](consumer_config& n) { n.mem_storage = true; }), "storage type can not be updated");
  auto push = parsed(R"({"durable_name":"P","deliver_subject":"a"})");
  auto moved = push;
  moved.deliver_subject = "b";
  EXPECT_FALSE(check_update(push, moved, false));
  EXPECT_EQ(check_update(push, moved, true)->err_code, 10013);
}

TEST(consumer_config, echo_round_trip_and_identity) {
  auto c = parsed(R"({"durable_name":"D","ack_policy":"explicit","filter_subjects":["orders.a","orders.b"],)"
                  R"("metadata":{"team":"billing"},"pause_until":"2030-01-01T00:00:00Z","backoff":[1000000000]})");
  auto j = to_json(c, true);
  EXPECT_EQ(j["metadata"]["_nats.req.level"], "1");
  EXPECT_EQ(j["pause_until"], "2030-01-01T00:00:00Z");
  auto back = consumer_config_from_json(nlohmann::json::parse(j.dump()));
  ASSERT_TRUE(back);
  EXPECT_TRUE(same_config(c, *back));
  back->description = "changed";
  EXPECT_FALSE(same_config(c, *back));
  auto params = to_params(c, a_stream(), "ORDERS", "D");
  EXPECT_EQ(params.ack, ack_policy::explicit_);
  EXPECT_EQ(params.ack_wait, 1'000'000'000);
  EXPECT_EQ(params.max_ack_pending, 1000);
}

// A request with "pedantic":true; err_code and description as problem() gives them.
std::pair<int, std::string> pedantic_problem(std::string_view cfg, const stream_config& s = a_stream()) {
  create_request req;
  std::optional<api_error> e =
      parse_create_request(R"({"stream_name":"ORDERS","pedantic":true,"config":)" + std::string(cfg) + "}", req);
  EXPECT_TRUE(req.pedantic);
  if (!e) e = normalise(req.config, s, req.pedantic);
  if (!e) e = validate(req.config, s);
  return e ? std::pair<int, std::string>{e->err_code, e->description} : std::pair<int, std::string>{0, ""};
}

// The account's jetstream max_ack_pending (nats-server's JetStreamAccountLimits): the default's
// cap and a ceiling, checked before the stream's consumer_limits.
TEST(consumer_config, account_max_ack_pending_caps_the_default_and_is_a_ceiling) {
  auto check = [](std::string_view cfg, std::int64_t account, const stream_config& s = a_stream()) {
    create_request req;
    std::optional<api_error> e =
        parse_create_request(R"({"stream_name":"ORDERS","config":)" + std::string(cfg) + "}", req);
    if (!e) e = normalise(req.config, s, req.pedantic, account);
    if (!e) e = validate(req.config, s, account);
    return std::make_pair(e ? e->err_code : 0, req.config.max_ack_pending);
  };
  EXPECT_EQ(check(R"({"durable_name":"D","ack_policy":"explicit"})", 50), std::make_pair(0, std::int64_t{50}));
  EXPECT_EQ(check(R"({"durable_name":"D","ack_policy":"explicit"})", 5000), std::make_pair(0, std::int64_t{1000}));
  EXPECT_EQ(check(R"({"durable_name":"D","ack_policy":"none"})", 50), std::make_pair(0, std::int64_t{0}));
  EXPECT_EQ(check(R"({"durable_name":"D","ack_policy":"explicit","max_ack_pending":51})", 50).first, 10121);
  EXPECT_EQ(check(R"({"durable_name":"D","ack_policy":"explicit","max_ack_pending":50})", 50).first, 0);
  auto lim = a_stream();
  lim.consumer_limits = ojson{{"max_ack_pending", 20}};
  EXPECT_EQ(check(R"({"durable_name":"D","ack_policy":"explicit"})", 50, lim), std::make_pair(0, std::int64_t{20}));
  create_request req;
  ASSERT_FALSE(parse_create_request(
      R"({"stream_name":"ORDERS","config":{"durable_name":"D","ack_policy":"explicit","max_ack_pending":60}})", req));
  ASSERT_FALSE(normalise(req.config, a_stream(), false, 50));
  const auto e = validate(req.config, a_stream(), 50);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->description, "consumer max ack pending exceeds system limit of 50");
}

// nats-server 2.10+: the stream's consumer_limits are ceilings as well as defaults.
TEST(consumer_config, stream_consumer_limits_are_ceilings) {
  using P = std::pair<int, std::string>;
  auto lim = a_stream();
  lim.consumer_limits = ojson{{"max_ack_pending", 100}, {"inactive_threshold", 60'000'000'000}};
  EXPECT_EQ(problem(R"({"durable_name":"D","ack_policy":"explicit","max_ack_pending":101})", lim),
            (P{10121, "consumer max ack pending exceeds system limit of 100"}));
  EXPECT_EQ(problem(R"({"durable_name":"D","ack_policy":"explicit","max_ack_pending":100})", lim).first, 0);
  EXPECT_EQ(problem(R"({"durable_name":"D","ack_policy":"explicit","max_ack_pending":-1})", lim).first, 0);
  EXPECT_EQ(problem(R"({"durable_name":"D","inactive_threshold":60000000001})", lim),
            (P{10153, "consumer inactive threshold exceeds system limit of 1m0s"}));
  EXPECT_EQ(problem(R"({"inactive_threshold":1000000000})", lim).first, 0);
  // Unset: the limit is the default.
  auto c = parsed(R"({"durable_name":"D","ack_policy":"explicit"})", lim);
  EXPECT_EQ(c.max_ack_pending, 100);
  EXPECT_EQ(c.inactive_threshold, 60'000'000'000);
}

// Pedantic requests are refused where nats-server would adjust the value (texts from its
// setConsumerConfigDefaults).
TEST(consumer_config, pedantic_refuses_adjustments) {
  using P = std::pair<int, std::string>;
  EXPECT_EQ(pedantic_problem(R"({"durable_name":"D","max_deliver":-5})"), (P{10157, "pedantic mode: max_deliver must be set to -1"}));
  EXPECT_EQ(pedantic_problem(R"({"durable_name":"D","max_waiting":-1})"),
            (P{10157, "pedantic mode: max_waiting must not be negative"}));
  EXPECT_EQ(pedantic_problem(R"({"durable_name":"D","ack_policy":"explicit","max_ack_pending":-2})"),
            (P{10157, "pedantic mode: max_ack_pending must be set to -1"}));
  EXPECT_EQ(pedantic_problem(R"({"durable_name":"D","max_batch":-1})"),
            (P{10157, "pedantic mode: max_batch must not be negative"}));
  EXPECT_EQ(pedantic_problem(R"({"durable_name":"D","max_expires":-1})"),
            (P{10157, "pedantic mode: max_expires must not be negative"}));
  EXPECT_EQ(pedantic_problem(R"({"durable_name":"D","max_bytes":-1})"),
            (P{10157, "pedantic mode: max_bytes must not be negative"}));
  EXPECT_EQ(pedantic_problem(R"({"durable_name":"D","deliver_subject":"d","idle_heartbeat":-1})"),
            (P{10157, "pedantic mode: idle_heartbeat must not be negative"}));
  EXPECT_EQ(pedantic_problem(R"({"durable_name":"D","inactive_threshold":-1})"),
            (P{10157, "pedantic mode: inactive_threshold must not be negative"}));
  EXPECT_EQ(pedantic_problem(R"({"durable_name":"D","priority_timeout":-1})"),
            (P{10157, "pedantic mode: priority_timeout must not be negative"}));
  EXPECT_EQ(pedantic_problem(R"({"durable_name":"D","ack_policy":"explicit","backoff":[1000000000,2000000000]})"),
            (P{10157, "pedantic mode: first backoff value has to equal batch AckWait"}));
  EXPECT_EQ(pedantic_problem(
                R"({"durable_name":"D","ack_policy":"explicit","ack_wait":1000000000,"backoff":[1000000000,2000000000]})")
                .first,
            0);
  auto lim = a_stream();
  lim.consumer_limits = ojson{{"max_ack_pending", 100}, {"inactive_threshold", 60'000'000'000}};
  EXPECT_EQ(pedantic_problem(R"({"durable_name":"D","ack_policy":"explicit","inactive_threshold":1000000000})", lim),
            (P{10157, "pedantic mode: max_ack_pending must be set if it's configured in stream limits"}));
  EXPECT_EQ(pedantic_problem(R"({"durable_name":"D","ack_policy":"explicit","max_ack_pending":10})", lim),
            (P{10157, "pedantic mode: inactive_threshold must be set if it's configured in stream limits"}));
  EXPECT_EQ(pedantic_problem(
                R"({"durable_name":"D","ack_policy":"explicit","max_ack_pending":10,"inactive_threshold":1000000000})", lim)
                .first,
            0);
  // Without pedantic the same requests are adjusted.
  EXPECT_EQ(problem(R"({"durable_name":"D","max_waiting":-1})").first, 0);
  EXPECT_EQ(problem(R"({"durable_name":"D","ack_policy":"explicit","backoff":[1000000000,2000000000]})").first, 0);
}

// ack_policy flow_control (2.14): the server fills in flow_control and the 1 s heartbeat, leaves
// ack_wait unset, and refuses what durable sourcing cannot work with (10218-10222; nats-server
// consumer.go checkConsumerCfg order and texts).
TEST(consumer_config, flow_control_ack_policy_defaults_and_rules) {
  auto c = parsed(R"({"durable_name":"SRC","deliver_subject":"src.dlv","ack_policy":"flow_control"})");
  EXPECT_TRUE(c.flow_control);
  EXPECT_EQ(c.idle_heartbeat, 1'000'000'000);
  EXPECT_EQ(c.ack_wait, 0);
  EXPECT_EQ(c.max_ack_pending, 1000);
  EXPECT_EQ(c.max_deliver, -1);
  EXPECT_FALSE(validate(c, a_stream()));
  const auto j = to_json(c, true);
  EXPECT_EQ(j["ack_policy"], "flow_control");
  EXPECT_EQ(j["metadata"]["_nats.req.level"], "4");
  EXPECT_FALSE(j.contains("ack_wait"));
  // A work queue may be sourced durably with it.
  EXPECT_EQ(problem(R"({"durable_name":"SRC","deliver_subject":"src.dlv","ack_policy":"flow_control"})",
                    a_stream(retention_policy::workqueue)).first, 0);
  EXPECT_EQ(problem(R"({"durable_name":"SRC","ack_policy":"flow_control"})"),
            (std::pair<int, std::string>{10218, "flow control ack policy requires a push based consumer"}));
  EXPECT_EQ(problem(R"({"durable_name":"SRC","deliver_subject":"d","ack_policy":"flow_control","ack_wait":5000000000})"),
            (std::pair<int, std::string>{10221, "flow control ack policy requires unset ack wait"}));
  EXPECT_EQ(problem(R"({"durable_name":"SRC","deliver_subject":"d","ack_policy":"flow_control","backoff":[1000000000]})"),
            (std::pair<int, std::string>{10221, "flow control ack policy requires unset ack wait"}));
  EXPECT_EQ(problem(R"({"durable_name":"SRC","deliver_subject":"d","ack_policy":"flow_control","max_deliver":5})"),
            (std::pair<int, std::string>{10222, "flow control ack policy requires unset max deliver"}));
  EXPECT_EQ(problem(R"({"durable_name":"SRC","deliver_subject":"d","ack_policy":"flow_control","max_ack_pending":-1})"),
            (std::pair<int, std::string>{10220, "flow control ack policy requires max ack pending"}));
  // Pedantic: nothing is filled in, so the first missing piece is named.
  EXPECT_EQ(problem(R"({"durable_name":"SRC","deliver_subject":"d","ack_policy":"flow_control"},"pedantic":true)").first,
            10219);
  EXPECT_EQ(problem(R"({"durable_name":"SRC","deliver_subject":"d","ack_policy":"flow_control","flow_control":true,)"
                    R"("idle_heartbeat":2000000000},"pedantic":true)"),
            (std::pair<int, std::string>{10052, "flow control ack policy heartbeat needs to be 1s"}));
}

}  // namespace
}  // namespace js
