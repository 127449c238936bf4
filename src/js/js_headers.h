#pragma once
// The JetStream headers of one published message, found in one pass over its header block
// (the publish path used to scan the block once per header name it asked about). Values are
// views into the block, trimmed like find_header; the first occurrence of a name wins.
#include <optional>
#include <string_view>

namespace js {

struct js_headers {
  std::optional<std::string_view> msg_id;                  // Nats-Msg-Id
  std::optional<std::string_view> expected_stream;         // Nats-Expected-Stream
  std::optional<std::string_view> expected_last_seq;       // Nats-Expected-Last-Sequence
  std::optional<std::string_view> expected_last_subj_seq;  // Nats-Expected-Last-Subject-Sequence
  std::optional<std::string_view> expected_last_subj_seq_subject;  // ...-Subject
  std::optional<std::string_view> expected_last_msg_id;    // Nats-Expected-Last-Msg-Id
  std::optional<std::string_view> rollup;                  // Nats-Rollup
  std::optional<std::string_view> ttl;                     // Nats-TTL
  std::optional<std::string_view> incr;                    // Nats-Incr
  std::optional<std::string_view> batch_id;                // Nats-Batch-Id
  std::optional<std::string_view> batch_seq;               // Nats-Batch-Sequence
  std::optional<std::string_view> batch_commit;            // Nats-Batch-Commit
  std::optional<std::string_view> required_api_level;      // Nats-Required-Api-Level
  std::optional<std::string_view> schedule;                // Nats-Schedule
  std::optional<std::string_view> schedule_target;         // Nats-Schedule-Target
  std::optional<std::string_view> schedule_source;         // Nats-Schedule-Source
  std::optional<std::string_view> schedule_ttl;            // Nats-Schedule-TTL
  std::optional<std::string_view> schedule_time_zone;      // Nats-Schedule-Time-Zone
  std::optional<std::string_view> schedule_rollup;         // Nats-Schedule-Rollup
  std::optional<std::string_view> scheduler;               // Nats-Scheduler
  std::optional<std::string_view> schedule_next;           // Nats-Schedule-Next
};

// Parses a raw "NATS/1.0..." block (empty -> nothing set). Names are case-sensitive, as in
// nats-server's publish path.
js_headers parse_js_headers(std::string_view block);

}  // namespace js
