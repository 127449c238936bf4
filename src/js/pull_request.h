#pragma once
// Pull request body (`$JS.API.CONSUMER.MSG.NEXT.<stream>.<consumer>` payload, and the rest of
// a `+NXT` ack) parsed into a plain struct. Consumer-level
// limits (max_batch, max_expires, max_bytes, priority policy) are checked by the consumer
// state machine, which knows the config.
#include <cstdint>
#include <string>
#include <string_view>
#include <variant>

#include "src/base/clock.h"

namespace js {

struct pull_request {
  std::int64_t batch = 1;          // <= 0 in JSON means 1
  std::int64_t max_bytes = 0;      // 0 = unlimited
  base::nanos expires = 0;         // relative; 0 = never
  bool no_wait = false;
  base::nanos idle_heartbeat = 0;  // 0 = none
  // Priority groups (2.11+).
  std::string group;
  std::int64_t min_pending = 0;
  std::int64_t min_ack_pending = 0;
  std::string id;                  // pin id
  int priority = 0;                // prioritized policy; 0 most preferred
};

// A 400 to send back: the status description, e.g. "Bad Request - heartbeat value too large".
struct pull_parse_error {
  std::string description;
};

// Empty body -> batch 1; an ASCII integer -> that batch; '{...}' -> JSON (errors are 400s);
// anything else -> batch 1 (as nats-server does).
std::variant<pull_request, pull_parse_error> parse_pull_request(std::string_view body);

}  // namespace js
