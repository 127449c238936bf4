#pragma once
// NATS client-protocol parser as a pure function over a contiguous byte span: it returns
// the next complete operation (views into the span, no copies), or how many more bytes
// it needs, or a protocol error. The caller keeps unconsumed bytes and calls again.
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace proto {

enum class op_kind : std::uint8_t { connect, pub, hpub, sub, unsub, ping, pong, info, ok };

struct client_op {
  op_kind kind = op_kind::ping;
  std::string_view subject;   // PUB/HPUB/SUB
  std::string_view reply;     // PUB/HPUB (may be empty)
  std::string_view queue;     // SUB (may be empty)
  std::string_view sid;       // SUB/UNSUB
  std::string_view json;      // CONNECT/INFO
  std::string_view headers;   // HPUB: the header block, "NATS/1.0..." through the blank line
  std::string_view payload;   // PUB/HPUB: bytes after the headers
  std::int64_t max_msgs = 0;  // UNSUB: 0 = none given
};

// What goes wrong, in terms the connection maps to nats-server's behaviour.
enum class parse_error : std::uint8_t {
  none,
  unknown_op,             // -ERR 'Unknown Protocol Operation', close
  control_line_too_long,  // -ERR 'maximum control line exceeded', close
  max_payload,            // -ERR 'Maximum Payload Violation', close
  bad_args,               // close without -ERR (wrong argument count, bad sizes)
};

enum class parse_status : std::uint8_t { op, need_more, error };

struct parse_result {
  parse_status status = parse_status::need_more;
  std::size_t consumed = 0;  // bytes of the span the op (or error) covers
  std::size_t needed = 0;    // need_more: minimum total span size worth calling again with
  parse_error error = parse_error::none;
  client_op op;
};

struct parser_limits {
  std::size_t max_control_line = 4096;
  std::int64_t max_payload = 1048576;
};

parse_result parse_client(std::string_view buf, const parser_limits& limits) noexcept;

}  // namespace proto
