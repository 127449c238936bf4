#include "src/core/route_parser.h"

#include "src/proto/arg_split.h"

#include <array>
#include <charconv>

namespace core {
namespace {

constexpr bool is_space(char c) { return proto::is_arg_space(c); }

using proto::split_args;
using proto::parse_size;

route_parse_result fail(proto::parse_error e, std::size_t consumed) {
  route_parse_result r;
  r.status = proto::parse_status::error;
  r.error = e;
  r.consumed = consumed;
  return r;
}

// Joins args [from, to) back into one view of the line (the queue names).
std::string_view span_of(const std::array<std::string_view, 64>& a, std::size_t from, std::size_t to) {
  if (from >= to) return {};
  const char* b = a[from].data();
  const char* e = a[to - 1].data() + a[to - 1].size();
  return {b, std::size_t(e - b)};
}

}  // namespace

route_parse_result parse_route(std::string_view buf, const proto::parser_limits& limits) noexcept {
  const std::size_t nl = buf.find('\n');
  if (nl == std::string_view::npos) {
    const std::size_t len = (!buf.empty() && buf.back() == '\r') ? buf.size() - 1 : buf.size();
    if (len > limits.max_control_line) return fail(proto::parse_error::control_line_too_long, buf.size());
    route_parse_result r;
    r.needed = buf.size() + 1;
    return r;
  }
  std::string_view line = buf.substr(0, nl);
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  if (line.size() > limits.max_control_line) return fail(proto::parse_error::control_line_too_long, nl + 1);
  std::size_t i = 0;
  while (i < line.size() && !is_space(line[i])) ++i;
  const std::string_view name = line.substr(0, i);
  const std::string_view rest = line.substr(i);
  const std::size_t line_end = nl + 1;
  route_parse_result r;
  r.status = proto::parse_status::op;
  r.consumed = line_end;

  if (name == "RS+" || name == "RS-") {
    std::array<std::string_view, 5> a;
    const std::size_t n = split_args(rest, a);
    const bool add = name[2] == '+';
    // RS+ <account> <subject> [<queue> <weight>]; RS- <account> <subject> [<queue>]
    if (n < 2 || n > (add ? 4u : 3u) || (add && n == 3)) return fail(proto::parse_error::bad_args, line_end);
    r.op.kind = add ? route_op_kind::sub : route_op_kind::unsub;
    r.op.account = a[0];
    r.op.subject = a[1];
    if (n >= 3) r.op.queue = a[2];
    if (add && n == 4) {
      std::int64_t w = 0;
      if (!parse_size(a[3], w) || w > INT32_MAX) return fail(proto::parse_error::bad_args, line_end);
      r.op.weight = std::int32_t(w);
    }
    return r;
  }
  if (name == "RMSG" || name == "HMSG") {
    // <account> <subject> [reply | + reply queues... | "|" queues...] [hdr] <size>
    std::array<std::string_view, 64> a;
    const std::size_t n = split_args(rest, a);
    const bool hdr = name[0] == 'H';
    const std::size_t sizes = hdr ? 2 : 1;
    if (n < 2 + sizes || n > a.size()) return fail(proto::parse_error::bad_args, line_end);
    r.op.kind = route_op_kind::msg;
    r.op.account = a[0];
    r.op.subject = a[1];
    const std::size_t mid = n - sizes;  // args [2, mid) are reply and/or queues
    if (mid - 2 == 1) {
      r.op.reply = a[2];
    } else if (mid - 2 > 1) {
      if (a[2] == "+") {
        if (mid - 2 < 3) return fail(proto::parse_error::bad_args, line_end);
        r.op.reply = a[3];
        r.op.queues = span_of(a, 4, mid);
      } else if (a[2] == "|") {
        r.op.queues = span_of(a, 3, mid);
      } else {
        return fail(proto::parse_error::bad_args, line_end);
      }
    }
    std::int64_t h = 0, total = 0;
    if (!parse_size(a[n - 1], total)) return fail(proto::parse_error::bad_args, line_end);
    if (hdr && (!parse_size(a[n - 2], h) || h > total)) return fail(proto::parse_error::bad_args, line_end);
    if (total > limits.max_payload) return fail(proto::parse_error::max_payload, line_end);
    const std::size_t need = line_end + std::size_t(total) + 2;
    if (buf.size() < need) {
      r.status = proto::parse_status::need_more;
      r.needed = need;
      return r;
    }
    if (buf[need - 2] != '\r' || buf[need - 1] != '\n') return fail(proto::parse_error::unknown_op, need);
    r.op.headers = buf.substr(line_end, std::size_t(h));
    r.op.payload = buf.substr(line_end + std::size_t(h), std::size_t(total - h));
    r.consumed = need;
    return r;
  }
  if (name == "-ERR") {
    std::string_view t = rest;
    while (!t.empty() && is_space(t.front())) t.remove_prefix(1);
    if (t.size() >= 2 && t.front() == '\'' && t.back() == '\'') t = t.substr(1, t.size() - 2);
    r.op.kind = route_op_kind::err;
    r.op.err = t;
    return r;
  }
  // INFO, CONNECT, PING, PONG, +OK: as a client speaks them.
  proto::parse_result c = proto::parse_client(buf, limits);
  route_parse_result out;
  out.status = c.status;
  out.consumed = c.consumed;
  out.needed = c.needed;
  out.error = c.error;
  if (c.status == proto::parse_status::op) {
    using k = proto::op_kind;
    if (c.op.kind != k::info && c.op.kind != k::connect && c.op.kind != k::ping && c.op.kind != k::pong &&
        c.op.kind != k::ok)
      return fail(proto::parse_error::unknown_op, c.consumed);  // PUB/SUB have no place on a route
    out.op.kind = route_op_kind::client_op;
    out.op.op = c.op;
  }
  return out;
}

// nats-server routes a JetStream delivery on its inbox with the subject its receivers see
// appended to the ack reply: "$JS.ACK.<8 more tokens>@<subject>".
std::pair<std::string_view, std::string_view> split_routed_delivery(std::string_view reply) {
  if (!reply.starts_with("$JS.ACK.")) return {reply, {}};
  int dots = 0;
  for (std::size_t i = 0; i < reply.size(); ++i) {
    if (reply[i] == '.') {
      ++dots;
    } else if (reply[i] == '@' && dots >= 8) {
      if (i + 1 >= reply.size()) break;
      return {reply.substr(0, i), reply.substr(i + 1)};
    }
  }
  return {reply, {}};
}

}  // namespace core
