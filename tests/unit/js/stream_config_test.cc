#include "src/js/stream_config.h"

#include <gtest/gtest.h>

namespace js {
namespace {

stream_config parsed(std::string_view body) {
  stream_config c;
  auto e = parse_stream_config(body, c);
  EXPECT_FALSE(e) << (e ? e->description : "");
  EXPECT_FALSE(normalise(c));
  return c;
}

std::string invalid_text(std::string_view body) {
  stream_config c;
  if (auto e = parse_stream_config(body, c)) return "decode: " + e->description;
  if (auto e = normalise(c)) return e->description;
  auto e = validate(c);
  return e ? e->description : "";
}

TEST(stream_config, defaults_match_nats_server) {
  auto c = parsed(R"({"name":"ORDERS","subjects":["orders.>"]})");
  auto j = to_json(c, false);
  EXPECT_EQ(j.dump(),
            R"({"name":"ORDERS","subjects":["orders.>"],"retention":"limits","max_consumers":-1,"max_msgs":-1,)"
            R"("max_bytes":-1,"max_age":0,"max_msgs_per_subject":-1,"max_msg_size":-1,"discard":"old",)"
            R"("storage":"file","num_replicas":1,"duplicate_window":120000000000,"compression":"none",)"
            R"("allow_direct":false,"mirror_direct":false,"sealed":false,"deny_delete":false,"deny_purge":false,)"
            R"("allow_rollup_hdrs":false,"consumer_limits":{},"allow_msg_ttl":false,"metadata":{"_nats.req.level":"0"}})");
  EXPECT_FALSE(validate(c));
}

// Replicated streams refuse, by name, what they do not carry yet; R1 takes all of it.
TEST(stream_config, replicated_streams_refuse_what_they_do_not_carry) {
  auto refusal = [](std::string_view body) {
    auto e = check_replicated_features(parsed(body));
    return e ? std::to_string(e->err_code) + " " + e->description : std::string();
  };
  EXPECT_EQ(refusal(R"({"name":"M","num_replicas":3,"mirror":{"name":"O"}})"), "");  // carried since session 21
  EXPECT_EQ(refusal(R"({"name":"A","num_replicas":3,"sources":[{"name":"O"}]})"), "");
  EXPECT_EQ(refusal(R"({"name":"C","num_replicas":2,"allow_msg_counter":true})"), "");
  EXPECT_EQ(refusal(R"({"name":"K","num_replicas":3,"allow_msg_ttl":true,"subject_delete_marker_ttl":1000000000})"),
            "");  // carried since session 25 (stream_replica_expire.cc)
  EXPECT_EQ(refusal(R"({"name":"S","num_replicas":3,"allow_msg_schedules":true})"),
            "10052 replicated streams do not support message schedules yet, use num_replicas 1");
  EXPECT_EQ(refusal(R"({"name":"F","num_replicas":3,"allow_batched":true})"), "");
  EXPECT_EQ(refusal(R"({"name":"R","num_replicas":3,"allow_msg_ttl":true,"allow_direct":true})"), "");
  EXPECT_EQ(refusal(R"({"name":"M","num_replicas":1,"mirror":{"name":"O"}})"), "");
  EXPECT_EQ(refusal(R"({"name":"C","allow_msg_counter":true})"), "");
}

TEST(stream_config, normalisation_rules) {
  auto c = parsed(R"({"name":"S","max_msgs":-5,"max_bytes":0,"max_age":1000000000})");
  EXPECT_EQ(c.subjects, std::vector<std::string>{"S"});  // default subject = name
  EXPECT_EQ(c.max_msgs, -1);
  EXPECT_EQ(c.max_bytes, -1);
  EXPECT_EQ(c.duplicate_window, 1000000000);  // capped by max_age
  auto m = to_json(parsed(R"({"name":"S","metadata":{"_nats.ver":"x","k":"v"}})"), true)["metadata"];
  EXPECT_EQ(m.dump(), R"({"_nats.level":"4","_nats.req.level":"0","_nats.ver":"2.14.0","k":"v"})");
  EXPECT_EQ(parsed(R"({"name":"S","discard":"NEW"})").discard, discard_policy::new_msgs);
  stream_config p;
  ASSERT_FALSE(parse_stream_config(R"({"name":"S","max_msgs":-5,"pedantic":true})", p));
  auto e = normalise(p);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->err_code, 10157);
}

TEST(stream_config, strict_decoding) {
  stream_config c;
  auto e = parse_stream_config(R"({"name":"S","foo":1})", c);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->description, "invalid JSON: json: unknown field \"foo\"");
  EXPECT_TRUE(parse_stream_config(R"({"name":"S","retention":"Limits"})", c));
  EXPECT_TRUE(parse_stream_config(R"({"name":"S","storage":"File"})", c));
  EXPECT_TRUE(parse_stream_config(R"({"name":"S","max_msgs":"1"})", c));
  EXPECT_TRUE(parse_stream_config(R"({"name":)", c));
  // Every field a current client sends is accepted.
  EXPECT_FALSE(parse_stream_config(
      R"({"name":"S","description":"d","subjects":["a"],"retention":"interest","max_consumers":-1,"max_msgs":-1,)"
      R"("max_bytes":-1,"max_age":0,"max_msgs_per_subject":-1,"max_msg_size":-1,"discard":"old","storage":"memory",)"
      R"("num_replicas":1,"no_ack":false,"duplicate_window":0,"placement":{},"compression":"none","first_seq":0,)"
      R"("allow_direct":true,"mirror_direct":false,"discard_new_per_subject":false,"sealed":false,"deny_delete":false,)"
      R"("deny_purge":false,"allow_rollup_hdrs":false,"consumer_limits":{},"allow_msg_ttl":false,)"
      R"("subject_delete_marker_ttl":0,"allow_msg_counter":false,"allow_atomic":false,"allow_msg_schedules":false,)"
      R"("persist_mode":"default","allow_batched":false,"metadata":{},"pedantic":false})",
      c));
}

TEST(stream_config, go_decoder_texts_and_ranges) {
  EXPECT_EQ(invalid_text(R"({"name":"S","max_msgs_per_subject":99999999999999999999})"),
            "decode: invalid JSON: json: cannot unmarshal number 99999999999999999999 into Go struct field "
            "StreamConfig.max_msgs_per_subject of type int64");
  EXPECT_EQ(invalid_text(R"({"name":"S","first_seq":-1})"),
            "decode: invalid JSON: json: cannot unmarshal number -1 into Go struct field StreamConfig.first_seq of "
            "type uint64");
  EXPECT_EQ(invalid_text(R"({"name":"S","duplicate_window":5.0})"),
            "decode: invalid JSON: json: cannot unmarshal number 5.0 into Go struct field "
            "StreamConfig.duplicate_window of type time.Duration");
  EXPECT_EQ(invalid_text(R"({"name":"S","retention":"Limits"})"), R"(decode: invalid JSON: can not unmarshal "\"Limits\"")");
  // Limits of the Go types are accepted.
  EXPECT_EQ(invalid_text(R"({"name":"S","max_msgs":9223372036854775807,"max_msg_size":2147483647})"), "");
}

TEST(stream_config, sub_objects_echo_in_go_struct_order) {
  auto c = parsed(R"({"name":"S","subjects":["a.>"],"subject_transform":{"dest":"b.>","src":"a.>"},)"
                  R"("republish":{"headers_only":true,"dest":"r.>","src":"a.>"}})");
  auto j = to_json(c, false);
  EXPECT_EQ(j["subject_transform"].dump(), R"({"src":"a.>","dest":"b.>"})");
  EXPECT_EQ(j["republish"].dump(), R"({"src":"a.>","dest":"r.>","headers_only":true})");
}

TEST(stream_config, validation_texts) {
  EXPECT_EQ(invalid_text(R"({"name":"a.b"})"), "stream name is required and can not contain '.', '*', '>', '\\', '/'");
  EXPECT_EQ(invalid_text(R"({"name":"S","max_age":1000})"), "max age needs to be >= 100ms");
  EXPECT_EQ(invalid_text(R"({"name":"S","max_age":-1})"), "max age can not be negative");
  EXPECT_EQ(invalid_text(R"({"name":"S","max_age":1000000000,"duplicate_window":2000000000})"),
            "duplicates window can not be larger then max age");
  EXPECT_EQ(invalid_text(R"({"name":"S","discard_new_per_subject":true})"),
            "discard new per subject requires discard new policy to be set");
  EXPECT_EQ(invalid_text(R"({"name":"S","discard":"new","discard_new_per_subject":true})"),
            "discard new per subject requires max msgs per subject > 0");
  EXPECT_EQ(invalid_text(R"({"name":"S","deny_purge":true,"allow_rollup_hdrs":true})"),
            "roll-ups require the purge permission");
  EXPECT_EQ(invalid_text(R"({"name":"S","mirror_direct":true})"), "stream has no mirror but does have mirror direct");
  EXPECT_EQ(invalid_text(R"({"name":"S","subjects":["a","a"]})"), "duplicate subjects detected");
  EXPECT_EQ(invalid_text(R"({"name":"S","subjects":["a.>","a.b"]})"), "subject \"a.>\" overlaps with \"a.b\"");
  // Which pair is named, as nats-server 2.9.10 names it: the first subject overlapping a
  // later one, then the first such later one; a duplicate anywhere wins over an overlap.
  EXPECT_EQ(invalid_text(R"({"name":"S","subjects":["a.1","b.*","a.*","b.1"]})"), "subject \"a.1\" overlaps with \"a.*\"");
  EXPECT_EQ(invalid_text(R"({"name":"S","subjects":["b.*","a.1","b.1","a.*"]})"), "subject \"b.*\" overlaps with \"b.1\"");
  EXPECT_EQ(invalid_text(R"({"name":"S","subjects":["x.>","x.*.y","x.a"]})"), "subject \"x.>\" overlaps with \"x.*.y\"");
  EXPECT_EQ(invalid_text(R"({"name":"S","subjects":["c.d","a.*","a.>","a.b"]})"), "subject \"a.*\" overlaps with \"a.>\"");
  EXPECT_EQ(invalid_text(R"({"name":"S","subjects":["a.*","a.b","a.*"]})"), "duplicate subjects detected");
  EXPECT_EQ(invalid_text(R"({"name":"S","subjects":[">"]})"), "capturing all subjects requires no-ack to be true");
  EXPECT_EQ(invalid_text(R"({"name":"S","subjects":["$JS.API.>"]})"),
            "subjects that overlap with jetstream api require no-ack to be true");
  EXPECT_EQ(invalid_text(R"({"name":"S","subjects":["a..b"]})"), "invalid subject");
  EXPECT_EQ(invalid_text(R"({"name":"S","num_replicas":6})"), "maximum replicas is 5");
  EXPECT_EQ(invalid_text(R"({"name":"S","allow_msg_ttl":true})"), "");
  EXPECT_EQ(invalid_text(R"({"name":"S","subject_delete_marker_ttl":60000000000})"), "");
  EXPECT_EQ(invalid_text(R"({"name":"S","subjects":["$JS.EVENT.ADVISORY.>"]})"), "");
}

// Subject delete markers need TTLs and roll-ups: auto-set unless pedantic (streams.md §2.3 #5).
TEST(stream_config, delete_marker_ttl_turns_on_ttls_and_rollups) {
  auto c = parsed(R"({"name":"S","subject_delete_marker_ttl":1000000000,"deny_purge":true})");
  EXPECT_TRUE(c.allow_msg_ttl);
  EXPECT_TRUE(c.allow_rollup_hdrs);
  EXPECT_FALSE(c.deny_purge);
  EXPECT_EQ(c.metadata["_nats.req.level"], "1");
  EXPECT_FALSE(validate(c));
  EXPECT_EQ(invalid_text(R"({"name":"S","subject_delete_marker_ttl":999999999})"),
            "subject delete marker TTL must be at least 1 second");
  EXPECT_EQ(invalid_text(R"({"name":"S","subject_delete_marker_ttl":1000000000,"pedantic":true})"),
            "subject delete marker cannot be set if message TTLs are disabled");
  EXPECT_EQ(invalid_text(R"({"name":"S","subject_delete_marker_ttl":1000000000,"allow_msg_ttl":true,"pedantic":true})"),
            "subject delete marker cannot be set if roll-ups are disabled");
  EXPECT_EQ(invalid_text(R"({"name":"S","subject_delete_marker_ttl":1000000000,"allow_rollup_hdrs":true,)"
                         R"("deny_purge":true})"),
            "roll-ups require the purge permission");
}

TEST(stream_config, allow_batched_needs_level_4_and_no_mirror) {
  auto c = parsed(R"({"name":"F","subjects":["f.>"],"allow_batched":true})");
  EXPECT_FALSE(validate(c));
  EXPECT_EQ(c.metadata["_nats.req.level"], "4");
  EXPECT_EQ(to_json(c, false)["allow_batched"], true);
  stream_config m;
  ASSERT_FALSE(parse_stream_config(R"({"name":"M","mirror":{"name":"F"},"allow_batched":true})", m));
  ASSERT_FALSE(normalise(m));
  auto e = validate(m);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->err_code, 10209);
  EXPECT_EQ(e->description, "stream mirrors can not also use batch publishing");
}

TEST(stream_config, schedules_and_async_persist) {
  auto c = parsed(R"({"name":"S","allow_msg_schedules":true,"deny_purge":true})");
  EXPECT_TRUE(c.allow_rollup_hdrs);  // forced on, and purges allowed
  EXPECT_FALSE(c.deny_purge);
  EXPECT_EQ(c.metadata["_nats.req.level"], "2");
  EXPECT_FALSE(validate(c));
  EXPECT_EQ(invalid_text(R"({"name":"S","allow_msg_schedules":true,"pedantic":true})"),
            "message scheduling cannot be set if roll-ups are disabled");
  EXPECT_EQ(invalid_text(R"({"name":"S","allow_msg_schedules":true,"discard":"new"})"),
            "message scheduling cannot use discard new");
  EXPECT_EQ(invalid_text(R"({"name":"S","persist_mode":"async"})"), "");
  EXPECT_EQ(parsed(R"({"name":"S","persist_mode":"async"})").metadata["_nats.req.level"], "2");
  EXPECT_EQ(invalid_text(R"({"name":"S","persist_mode":"async","storage":"memory"})"),
            "async persist mode is only supported on file storage");
  EXPECT_EQ(invalid_text(R"({"name":"S","persist_mode":"async","num_replicas":3})"),
            "async persist mode is not supported on replicated streams");
  EXPECT_EQ(invalid_text(R"({"name":"S","persist_mode":"async","allow_atomic":true})"),
            "async persist mode is not supported with atomic batch publish");
}

TEST(stream_config, update_rules) {
  auto o = parsed(R"({"name":"S","deny_delete":true,"deny_purge":true})");
  auto n = parsed(R"({"name":"S","storage":"memory","deny_delete":true,"deny_purge":true})");
  EXPECT_EQ(check_update(o, n)->description, "stream configuration update can not change storage type");
  n = parsed(R"({"name":"S","deny_purge":true})");
  EXPECT_EQ(check_update(o, n)->description, "stream configuration update can not cancel deny message deletes");
  n = parsed(R"({"name":"S","deny_delete":true,"retention":"workqueue","deny_purge":true})");
  EXPECT_EQ(check_update(o, n)->description,
            "stream configuration update can not change retention policy to/from workqueue");
  n = parsed(R"({"name":"S","deny_delete":true,"retention":"interest","deny_purge":true})");
  EXPECT_FALSE(check_update(o, n));  // limits <-> interest is allowed
  auto sealed = parsed(R"({"name":"S","sealed":true,"allow_rollup_hdrs":true,"max_age":1000000000})");
  apply_seal(sealed);
  EXPECT_EQ(sealed.discard, discard_policy::new_msgs);
  EXPECT_EQ(sealed.max_age, 0);
  EXPECT_FALSE(sealed.allow_rollup_hdrs);
  EXPECT_TRUE(sealed.deny_purge && sealed.deny_delete);
  EXPECT_EQ(check_update(sealed, o)->description, "stream configuration update can not unseal a sealed stream");
}

TEST(stream_config, same_config_ignores_server_version_keys) {
  auto a = parsed(R"({"name":"S"})");
  auto b = parsed(R"({"name":"S","metadata":{"_nats.ver":"2.14.0","_nats.level":"4"}})");
  EXPECT_TRUE(same_config(a, b));
  EXPECT_FALSE(same_config(a, parsed(R"({"name":"S","max_msgs":3})")));
}

// 2.14 (the level claimed): a sourced stream gets no default duplicate window (2.9-2.12: 2 min);
// a plain stream keeps it, a mirror never has one.
TEST(stream_config, sourced_streams_have_no_default_duplicate_window) {
  EXPECT_EQ(parsed(R"({"name":"S","sources":[{"name":"A"}]})").duplicate_window, 0);
  EXPECT_EQ(parsed(R"({"name":"S","sources":[{"name":"A"}],"duplicate_window":5000000000})").duplicate_window,
            5'000'000'000);
  EXPECT_EQ(parsed(R"({"name":"S","mirror":{"name":"A"}})").duplicate_window, 0);
  EXPECT_EQ(parsed(R"({"name":"S"})").duplicate_window, 120'000'000'000);
}

}  // namespace
}  // namespace js
