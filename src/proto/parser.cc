#include "src/proto/parser.h"

#include "src/proto/arg_split.h"

#include <array>
#include <charconv>

namespace proto {
namespace {

constexpr bool is_space(char c) { return is_arg_space(c); }

char upper(char c) { return (c >= 'a' && c <= 'z') ? char(c - 32) : c; }

bool equals_upper(std::string_view s, std::string_view upper_name) {
  if (s.size() != upper_name.size()) return false;
  for (std::size_t i = 0; i < s.size(); ++i)
    if (upper(s[i]) != upper_name[i]) return false;
  return true;
}

parse_result fail(parse_error e, std::size_t consumed) {
  parse_result r;
  r.status = parse_status::error;
  r.error = e;
  r.consumed = consumed;
  return r;
}

// PUB/HPUB: control line is parsed; now the payload (+CRLF) must follow.
parse_result finish_payload(std::string_view buf, std::size_t line_end, std::int64_t hdr,
                            std::int64_t total, parse_result r) {
  const std::size_t start = line_end;
  const std::size_t need = start + std::size_t(total) + 2;
  if (buf.size() < need) {
    r.status = parse_status::need_more;
    r.needed = need;
    return r;
  }
  if (buf[need - 2] != '\r' || buf[need - 1] != '\n')
    return fail(parse_error::unknown_op, need);
  r.op.headers = buf.substr(start, std::size_t(hdr));
  r.op.payload = buf.substr(start + std::size_t(hdr), std::size_t(total - hdr));
  r.status = parse_status::op;
  r.consumed = need;
  return r;
}

}  // namespace

parse_result parse_client(std::string_view buf, const parser_limits& limits) noexcept {
  const std::size_t nl = buf.find('\n');
  if (nl == std::string_view::npos) {
    // A trailing CR may be the first half of the line's CRLF: it does not count yet.
    const std::size_t len = (!buf.empty() && buf.back() == '\r') ? buf.size() - 1 : buf.size();
    if (len > limits.max_control_line) return fail(parse_error::control_line_too_long, buf.size());
    parse_result r;
    r.needed = buf.size() + 1;
    return r;
  }
  std::string_view line = buf.substr(0, nl);
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  if (line.size() > limits.max_control_line) return fail(parse_error::control_line_too_long, nl + 1);

  std::size_t i = 0;
  while (i < line.size() && !is_space(line[i])) ++i;
  const std::string_view name = line.substr(0, i);
  const std::string_view rest = line.substr(i);
  const std::size_t line_end = nl + 1;

  parse_result r;
  r.status = parse_status::op;
  r.consumed = line_end;

  if (equals_upper(name, "PUB")) {
    std::array<std::string_view, 3> a;
    const std::size_t n = split_args(rest, a);
    if (n < 2 || n > 3) return fail(parse_error::bad_args, line_end);
    std::int64_t size = 0;
    if (!parse_size(a[n - 1], size)) return fail(parse_error::bad_args, line_end);
    if (size > limits.max_payload) return fail(parse_error::max_payload, line_end);
    r.op.kind = op_kind::pub;
    r.op.subject = a[0];
    if (n == 3) r.op.reply = a[1];
    return finish_payload(buf, line_end, 0, size, r);
  }
  if (equals_upper(name, "HPUB")) {
    std::array<std::string_view, 4> a;
    const std::size_t n = split_args(rest, a);
    if (n < 3 || n > 4) return fail(parse_error::bad_args, line_end);
    std::int64_t hdr = 0, total = 0;
    if (!parse_size(a[n - 2], hdr) || !parse_size(a[n - 1], total) || hdr > total)
      return fail(parse_error::bad_args, line_end);
    if (total > limits.max_payload) return fail(parse_error::max_payload, line_end);
    r.op.kind = op_kind::hpub;
    r.op.subject = a[0];
    if (n == 4) r.op.reply = a[1];
    return finish_payload(buf, line_end, hdr, total, r);
  }
  if (equals_upper(name, "SUB")) {
    std::array<std::string_view, 3> a;
    const std::size_t n = split_args(rest, a);
    if (n < 2 || n > 3) return fail(parse_error::bad_args, line_end);
    r.op.kind = op_kind::sub;
    r.op.subject = a[0];
    if (n == 3) r.op.queue = a[1];
    r.op.sid = a[n - 1];
    return r;
  }
  if (equals_upper(name, "UNSUB")) {
    std::array<std::string_view, 2> a;
    const std::size_t n = split_args(rest, a);
    if (n < 1 || n > 2) return fail(parse_error::bad_args, line_end);
    r.op.kind = op_kind::unsub;
    r.op.sid = a[0];
    if (n == 2 && !parse_size(a[1], r.op.max_msgs)) return fail(parse_error::bad_args, line_end);
    return r;
  }
  if (equals_upper(name, "PING") || equals_upper(name, "PONG")) {
    for (char c : rest)
      if (!is_space(c)) return fail(parse_error::unknown_op, line_end);
    r.op.kind = upper(name[1]) == 'I' ? op_kind::ping : op_kind::pong;
    return r;
  }
  if (equals_upper(name, "CONNECT") || equals_upper(name, "INFO")) {
    std::size_t j = 0;
    while (j < rest.size() && is_space(rest[j])) ++j;
    r.op.kind = upper(name[0]) == 'C' ? op_kind::connect : op_kind::info;
    r.op.json = rest.substr(j);
    return r;
  }
  if (equals_upper(name, "+OK")) {
    r.op.kind = op_kind::ok;
    return r;
  }
  return fail(parse_error::unknown_op, line_end);
}

}  // namespace proto
