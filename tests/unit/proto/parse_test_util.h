#pragma once
// Shared helpers for the parser tests: owned copies of ops so results from different
// buffers can be compared, and a connection-style feeder (keep leftover, respect `needed`).
#include <gtest/gtest.h>

#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "src/proto/parser.h"

namespace proto_test {

inline proto::parse_result parse(std::string_view s, const proto::parser_limits& l = {}) {
  return proto::parse_client(s, l);
}

inline const char* kind_name(proto::op_kind k) {
  switch (k) {
    case proto::op_kind::connect: return "CONNECT";
    case proto::op_kind::pub: return "PUB";
    case proto::op_kind::hpub: return "HPUB";
    case proto::op_kind::sub: return "SUB";
    case proto::op_kind::unsub: return "UNSUB";
    case proto::op_kind::ping: return "PING";
    case proto::op_kind::pong: return "PONG";
    case proto::op_kind::info: return "INFO";
    case proto::op_kind::ok: return "+OK";
  }
  return "?";
}

inline const char* error_name(proto::parse_error e) {
  switch (e) {
    case proto::parse_error::none: return "none";
    case proto::parse_error::unknown_op: return "unknown_op";
    case proto::parse_error::control_line_too_long: return "control_line_too_long";
    case proto::parse_error::max_payload: return "max_payload";
    case proto::parse_error::bad_args: return "bad_args";
  }
  return "?";
}

// An op with its views copied out, comparable across buffers.
struct owned_op {
  proto::op_kind kind = proto::op_kind::ping;
  std::string subject, reply, queue, sid, json, headers, payload;
  std::int64_t max_msgs = 0;

  static owned_op from(const proto::client_op& o) {
    return {o.kind, std::string(o.subject), std::string(o.reply), std::string(o.queue),
            std::string(o.sid), std::string(o.json), std::string(o.headers),
            std::string(o.payload), o.max_msgs};
  }
  bool operator==(const owned_op&) const = default;
};

inline std::ostream& operator<<(std::ostream& os, const owned_op& o) {
  return os << kind_name(o.kind) << "{subject='" << o.subject << "' reply='" << o.reply
            << "' queue='" << o.queue << "' sid='" << o.sid << "' json='" << o.json
            << "' headers=" << o.headers.size() << "B payload=" << o.payload.size()
            << "B max=" << o.max_msgs << "}";
}

// Everything a connection would do with a byte stream: the ops it handled and, if the
// stream ended in a protocol error, which one.
struct stream_outcome {
  std::vector<owned_op> ops;
  std::optional<proto::parse_error> error;
  std::size_t leftover = 0;  // bytes buffered but not yet parseable at the end
  bool operator==(const stream_outcome&) const = default;
};

// Parses a whole buffer in one go (the reference result) and records where each op ends.
inline stream_outcome parse_all(std::string_view s, std::vector<std::size_t>* ends = nullptr,
                                const proto::parser_limits& l = {}) {
  stream_outcome out;
  std::size_t off = 0;
  while (off < s.size()) {
    const auto r = parse(s.substr(off), l);
    if (r.status == proto::parse_status::need_more) break;
    if (r.status == proto::parse_status::error) {
      out.error = r.error;
      off = s.size();
      break;
    }
    out.ops.push_back(owned_op::from(r.op));
    off += r.consumed;
    if (ends) ends->push_back(off);
  }
  out.leftover = s.size() - off;
  return out;
}

}  // namespace proto_test
