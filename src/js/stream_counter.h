#pragma once
// Message counters (ADR-49, `allow_msg_counter`): a publish carries
// `Nats-Incr: <signed integer>` and no payload; the stream stores `{"val":"<new total>"}` on
// that subject. Totals are arbitrary-precision decimals (clients use big integers), so this
// has its own small signed decimal type. Pure: no stream, no store.
#include <optional>
#include <string>
#include <string_view>

#include "src/js/api_errors.h"
#include "src/js/js_headers.h"

namespace js {

// A signed decimal integer in canonical form: digits without leading zeros, zero never negative.
struct big_int {
  bool negative = false;
  std::string digits = "0";
  std::string str() const { return negative ? "-" + digits : digits; }
  bool operator==(const big_int&) const = default;
};

// As Go's big.Int SetString(s, 10): an optional '+' or '-', then at least one ASCII digit.
std::optional<big_int> parse_big_int(std::string_view s);
big_int add(const big_int& a, const big_int& b);
big_int negate(big_int v);

// The stored counter value `{"val":"<int>"}`; nullopt when the payload is no such object
// (the stream answers 10172 "message counter is broken").
std::optional<big_int> parse_counter_payload(std::string_view payload);
std::string counter_payload(const big_int& v);

// The counter checks of a publish, before anything else looks at the message. `sourced`
// messages carry the origin's total and are not checked (they are aggregated instead).
std::optional<api_error> check_incr_headers(const js_headers& h, bool counter_stream, std::size_t payload_size,
                                            bool sourced);

// Step 14/15: the new total of a counter publish. `last_payload`/`last_hdr` are the subject's
// last stored message (nullopt: none). For a sourced message (`source_header` = its
// Nats-Stream-Source value) the increment is the change of that origin's total since its
// previous copy, kept per origin in header Nats-Counter-Sources.
struct counter_update {
  std::string payload;  // {"val":"<total>"}
  std::string headers;  // the headers to store (rewritten for a sourced message)
  std::string total;    // for the PubAck's "val"
};
struct counter_result {
  std::optional<counter_update> update;
  api_error error;  // when update is empty
};
counter_result apply_increment(std::string_view subject, std::string_view hdr, const js_headers& h,
                               std::string_view payload, std::optional<std::string_view> last_payload,
                               std::string_view last_hdr, std::optional<std::string_view> source_header);

}  // namespace js
