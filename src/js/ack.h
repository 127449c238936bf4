#pragma once
// Ack reply subjects and ack bodies. Pure string work,
// standard library only, so the consumer state machine and the shard-side ack intake can
// both use it.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "src/base/clock.h"
#include "src/base/go_text.h"

namespace js {

// The data tokens of `$JS.ACK.<stream>.<consumer>.<delivered>.<sseq>.<cseq>.<ts>.<pending>`
// (v1, 9 tokens) or the v2 form with `<domain>.<account_hash>` in front (11+ tokens).
struct ack_subject {
  std::string_view stream;
  std::string_view consumer;
  std::uint64_t delivered = 0;     // delivery count of this message (1 = first)
  std::uint64_t stream_seq = 0;
  std::uint64_t consumer_seq = 0;
  std::int64_t timestamp = 0;      // stored message time, unix ns
  std::uint64_t pending = 0;       // consumer num_pending right after this delivery
};

// Number of decimal digits of v (wire-size accounting).
std::size_t decimal_digits(std::uint64_t v);

// v1 form, the one every server emits by default.
std::string encode_ack_subject(std::string_view stream, std::string_view consumer,
                               std::uint64_t delivered, std::uint64_t stream_seq,
                               std::uint64_t consumer_seq, std::int64_t timestamp,
                               std::uint64_t pending);
// Length of encode_ack_subject's result without building it (pull max_bytes accounting).
std::size_t ack_subject_len(std::size_t stream_len, std::size_t consumer_len,
                            std::uint64_t delivered, std::uint64_t stream_seq,
                            std::uint64_t consumer_seq, std::int64_t timestamp,
                            std::uint64_t pending);
// Accepts v1 (9 tokens) and v2 (>= 11 tokens); nullopt if not an ack subject or a numeric
// token does not parse (the server then ignores the ack). Views point into `subject`.
std::optional<ack_subject> decode_ack_subject(std::string_view subject);

enum class ack_kind : std::uint8_t { ack, nak, progress, next, term, unknown };

struct ack_body {
  ack_kind kind = ack_kind::unknown;
  base::nanos delay = 0;        // -NAK with {"delay":ns} or a Go duration; 0 = none
  std::string_view reason;      // +TERM <reason>, trimmed
  std::string_view next_body;   // +NXT <pull request>, trimmed
};

// Payload of a publish to an ack subject; headers are not looked at.
ack_body parse_ack_body(std::string_view payload);

// Go time.Duration syntax ("1.5s", "250ms", "1h2m"); nullopt if malformed or negative.
std::optional<base::nanos> parse_go_duration(std::string_view s);
// Durations go out as base::go_duration (src/base/go_text.h).

}  // namespace js
