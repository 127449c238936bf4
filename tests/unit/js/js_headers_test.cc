#include "src/js/js_headers.h"

#include <gtest/gtest.h>

#include "src/js/json_util.h"

namespace js {
namespace {

// Every field against find_header, the one-name-at-a-time scanner the publish path used.
void expect_same_as_find_header(std::string_view block) {
  const js_headers h = parse_js_headers(block);
  const std::pair<const std::optional<std::string_view>*, const char*> fields[] = {
      {&h.msg_id, "Nats-Msg-Id"},
      {&h.expected_stream, "Nats-Expected-Stream"},
      {&h.expected_last_seq, "Nats-Expected-Last-Sequence"},
      {&h.expected_last_subj_seq, "Nats-Expected-Last-Subject-Sequence"},
      {&h.expected_last_subj_seq_subject, "Nats-Expected-Last-Subject-Sequence-Subject"},
      {&h.expected_last_msg_id, "Nats-Expected-Last-Msg-Id"},
      {&h.rollup, "Nats-Rollup"},
      {&h.ttl, "Nats-TTL"},
      {&h.incr, "Nats-Incr"},
      {&h.batch_id, "Nats-Batch-Id"},
      {&h.batch_seq, "Nats-Batch-Sequence"},
      {&h.batch_commit, "Nats-Batch-Commit"},
      {&h.required_api_level, "Nats-Required-Api-Level"},
      {&h.schedule, "Nats-Schedule"},
      {&h.schedule_target, "Nats-Schedule-Target"},
      {&h.schedule_source, "Nats-Schedule-Source"},
      {&h.schedule_ttl, "Nats-Schedule-TTL"},
      {&h.schedule_time_zone, "Nats-Schedule-Time-Zone"},
      {&h.schedule_rollup, "Nats-Schedule-Rollup"},
      {&h.scheduler, "Nats-Scheduler"},
      {&h.schedule_next, "Nats-Schedule-Next"},
  };
  for (const auto& [field, name] : fields) EXPECT_EQ(*field, find_header(block, name)) << name << " in " << block;
}

TEST(js_headers, schedule_headers) {
  const std::string block =
      "NATS/1.0\r\nNats-Schedule: @every 5s\r\nNats-Schedule-Target: t.1\r\nNats-Schedule-Source: src.1\r\n"
      "Nats-Schedule-TTL: 5m\r\nNats-Schedule-Time-Zone: UTC\r\nNats-Schedule-Rollup: sub\r\n"
      "Nats-Scheduler: s.1\r\nNats-Schedule-Next: purge\r\n\r\n";
  const js_headers h = parse_js_headers(block);
  EXPECT_EQ(h.schedule, "@every 5s");
  EXPECT_EQ(h.schedule_target, "t.1");
  EXPECT_EQ(h.schedule_source, "src.1");
  EXPECT_EQ(h.schedule_ttl, "5m");
  EXPECT_EQ(h.schedule_time_zone, "UTC");
  EXPECT_EQ(h.schedule_rollup, "sub");
  EXPECT_EQ(h.scheduler, "s.1");
  EXPECT_EQ(h.schedule_next, "purge");
  expect_same_as_find_header(block);
}

TEST(js_headers, one_pass_finds_every_jetstream_header) {
  const std::string block =
      "NATS/1.0\r\nNats-Msg-Id: m1\r\nNats-Expected-Stream: S\r\nNats-Expected-Last-Sequence: 4\r\n"
      "Nats-Expected-Last-Subject-Sequence: 3\r\nNats-Expected-Last-Subject-Sequence-Subject: a.*\r\n"
      "Nats-Expected-Last-Msg-Id: m0\r\nNats-Rollup: sub\r\nNats-TTL: 5s\r\nNats-Incr: +1\r\n"
      "Nats-Batch-Id: B\r\nNats-Batch-Sequence: 2\r\nNats-Batch-Commit: eob\r\nNats-Required-Api-Level: 1\r\n\r\n";
  const js_headers h = parse_js_headers(block);
  EXPECT_EQ(h.msg_id, "m1");
  EXPECT_EQ(h.expected_last_subj_seq, "3");
  EXPECT_EQ(h.expected_last_subj_seq_subject, "a.*");
  EXPECT_EQ(h.batch_commit, "eob");
  EXPECT_EQ(h.required_api_level, "1");
  expect_same_as_find_header(block);
}

TEST(js_headers, agrees_with_find_header_on_odd_blocks) {
  for (const char* block : {
           "",
           "NATS/1.0\r\n\r\n",
           "NATS/1.0\r\nX-Other: 1\r\n\r\n",
           "NATS/1.0\r\nNats-Msg-Id: first\r\nNats-Msg-Id: second\r\n\r\n",  // the first wins
           "NATS/1.0\r\nNats-Msg-Id:   padded \t\r\n\r\n",                   // trimmed
           "NATS/1.0\r\nNats-Msg-Id:\r\n\r\n",                                // empty value
           "NATS/1.0\r\nnats-msg-id: lower\r\n\r\n",                          // case-sensitive
           "NATS/1.0\r\nNats-Msg-Id : spaced\r\n\r\n",                        // not the name
           "NATS/1.0\r\nNats-Msg-IdX: longer\r\nNats-TTLs: 1\r\n\r\n",
           "NATS/1.0\r\nNats-Rollup\r\nNats-TTL: 1s\r\n\r\n",                 // a line without colon
           "NATS/1.0\r\nNats-TTL: 1s",                                        // unterminated
           "NATS/1.0\r\n\r\nNats-TTL: 1s\r\n\r\n",                            // after the end
       })
    expect_same_as_find_header(block);
}

}  // namespace
}  // namespace js
