// libFuzzer target for proto::parse_client. Arbitrary bytes are fed the way a connection
// feeds them (append a read, parse while ops are complete, keep the leftover, do not call
// again until `needed` bytes are buffered), under tight and default limits, whole and in
// chunk schedules derived from the input. Any broken invariant aborts:
//  - consumed <= span, ops make progress, every view lies inside the op's bytes;
//  - PUB/HPUB/SUB/UNSUB fields and sizes agree with an independent split of the control
//    line; the payload is followed by CRLF; limits are respected;
//  - need_more asks for more than is buffered, never more than the next op needs, and is
//    a true minimum;
//  - every chunking yields the same ops and the same error kind as parsing whole.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "src/proto/parser.h"

namespace {

using proto::parse_status;

[[noreturn]] void fail(const char* what, std::size_t at) {
  std::fprintf(stderr, "parser_fuzz invariant broken: %s (stream offset %zu)\n", what, at);
  std::abort();
}
void check(bool ok, const char* what, std::size_t at) {
  if (!ok) fail(what, at);
}

bool space(char c) { return c == ' ' || c == '\t'; }

std::vector<std::string_view> tokens(std::string_view line) {
  std::vector<std::string_view> out;
  std::size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && space(line[i])) ++i;
    std::size_t j = i;
    while (j < line.size() && !space(line[j])) ++j;
    if (j > i) out.push_back(line.substr(i, j - i));
    i = j;
  }
  return out;
}

bool number(std::string_view s, std::int64_t& v) {
  if (s.empty() || s.size() > 18) return false;
  v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
    v = v * 10 + (c - '0');
  }
  return true;
}

bool iequal(std::string_view a, std::string_view upper) {
  if (a.size() != upper.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    char c = a[i];
    if (c >= 'a' && c <= 'z') c = char(c - 32);
    if (c != upper[i]) return false;
  }
  return true;
}

bool within(std::string_view v, std::string_view span) {
  return v.empty() || (v.data() >= span.data() && v.data() + v.size() <= span.data() + span.size());
}

// Checks one op against its own bytes `span` (= buf[0, consumed)).
void check_op(const proto::client_op& op, std::string_view span, const proto::parser_limits& l,
              std::size_t at) {
  for (std::string_view v : {op.subject, op.reply, op.queue, op.sid, op.json, op.headers, op.payload})
    check(within(v, span), "view outside the op's bytes", at);
  const std::size_t nl = span.find('\n');
  check(nl != std::string_view::npos, "op without a control line", at);
  std::string_view line = span.substr(0, nl);
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  check(line.size() <= l.max_control_line, "accepted an over-long control line", at);
  check(!line.empty() && !space(line[0]), "op name not at line start", at);
  const auto t = tokens(line);
  const bool has_payload = op.kind == proto::op_kind::pub || op.kind == proto::op_kind::hpub;
  if (!has_payload) check(span.size() == nl + 1, "non-payload op consumed past its line", at);
  check(has_payload || (op.headers.empty() && op.payload.empty()), "payload on a bare op", at);
  std::int64_t a = 0, b = 0;
  switch (op.kind) {
    case proto::op_kind::pub:
      check(iequal(t[0], "PUB") && (t.size() == 3 || t.size() == 4), "PUB arg count", at);
      check(op.subject == t[1] && op.reply == (t.size() == 4 ? t[2] : ""), "PUB fields", at);
      check(number(t.back(), a) && std::int64_t(op.payload.size()) == a, "PUB size mismatch", at);
      check(op.headers.empty() && a <= l.max_payload, "PUB headers/limit", at);
      break;
    case proto::op_kind::hpub:
      check(iequal(t[0], "HPUB") && (t.size() == 4 || t.size() == 5), "HPUB arg count", at);
      check(op.subject == t[1] && op.reply == (t.size() == 5 ? t[2] : ""), "HPUB fields", at);
      check(number(t[t.size() - 2], a) && number(t.back(), b), "HPUB sizes not numeric", at);
      check(std::int64_t(op.headers.size()) == a, "HPUB header size mismatch", at);
      check(std::int64_t(op.headers.size() + op.payload.size()) == b, "HPUB total mismatch", at);
      check(a <= b && b <= l.max_payload, "HPUB hdr>total or over limit", at);
      check(op.headers.data() + op.headers.size() == op.payload.data() || op.payload.empty(),
            "HPUB payload does not follow headers", at);
      break;
    case proto::op_kind::sub:
      check(iequal(t[0], "SUB") && (t.size() == 3 || t.size() == 4), "SUB arg count", at);
      check(op.subject == t[1] && op.sid == t.back() && op.queue == (t.size() == 4 ? t[2] : ""),
            "SUB fields", at);
      break;
    case proto::op_kind::unsub:
      check(iequal(t[0], "UNSUB") && (t.size() == 2 || t.size() == 3), "UNSUB arg count", at);
      check(op.sid == t[1], "UNSUB sid", at);
      check(t.size() == 2 ? op.max_msgs == 0 : (number(t[2], a) && op.max_msgs == a), "UNSUB max", at);
      break;
    case proto::op_kind::ping:
    case proto::op_kind::pong:
      check(t.size() == 1 && iequal(t[0], op.kind == proto::op_kind::ping ? "PING" : "PONG"),
            "PING/PONG line", at);
      break;
    case proto::op_kind::connect:
    case proto::op_kind::info:
      check(iequal(t[0], op.kind == proto::op_kind::connect ? "CONNECT" : "INFO"), "CONNECT/INFO name", at);
      check(op.json.empty() || op.json.data() + op.json.size() == line.data() + line.size(),
            "json does not run to the end of the line", at);
      break;
    case proto::op_kind::ok:
      check(iequal(t[0], "+OK"), "+OK name", at);
      break;
  }
  if (has_payload) {
    check(span.size() >= nl + 3 && span.substr(span.size() - 2) == "\r\n", "payload not followed by CRLF", at);
    const std::string_view body = span.substr(nl + 1, span.size() - nl - 3);
    check(op.headers.data() == body.data() || body.empty(), "headers do not start after the line", at);
    check(op.headers.size() + op.payload.size() == body.size(), "payload bytes unaccounted", at);
  }
}

struct outcome {
  std::vector<proto::op_kind> kinds;
  std::vector<std::string> fields;  // subject|reply|queue|sid|json|headers|payload|max
  bool errored = false;
  proto::parse_error error = proto::parse_error::none;
  std::size_t leftover = 0;
};

void record(outcome& o, const proto::client_op& op) {
  o.kinds.push_back(op.kind);
  std::string f;
  for (std::string_view v : {op.subject, op.reply, op.queue, op.sid, op.json, op.headers, op.payload}) {
    f += std::to_string(v.size());
    f += ':';
    f += v;
  }
  f += std::to_string(op.max_msgs);
  o.fields.push_back(std::move(f));
}

// Whole-buffer parse: the reference. `ends` gets the stream offset each op/error ends at.
outcome parse_whole(std::string_view in, const proto::parser_limits& l, std::vector<std::size_t>& ends) {
  outcome o;
  std::size_t off = 0;
  while (off < in.size()) {
    const std::string_view buf = in.substr(off);
    const auto r = proto::parse_client(buf, l);
    check(r.consumed <= buf.size(), "consumed beyond the span", off);
    if (r.status == parse_status::need_more) {
      check(r.needed > buf.size(), "need_more without asking for more", off);
      break;
    }
    if (r.status == parse_status::error) {
      check(r.error != proto::parse_error::none && r.consumed > 0, "error without a kind", off);
      o.errored = true;
      o.error = r.error;
      ends.push_back(off + r.consumed);
      return o;
    }
    check(r.consumed > 0, "op without progress", off);
    check_op(r.op, buf.substr(0, r.consumed), l, off);
    record(o, r.op);
    off += r.consumed;
    ends.push_back(off);
  }
  o.leftover = in.size() - off;
  return o;
}

// Connection-style feed with the given chunk sizes (cycled).
outcome feed(std::string_view in, const proto::parser_limits& l, const std::vector<std::size_t>& ends,
             const std::vector<std::size_t>& chunks) {
  outcome o;
  std::string inbuf;
  std::size_t pos = 0, fed = 0, need = 0, ci = 0;
  while (fed < in.size()) {
    const std::size_t c = std::min(chunks[ci++ % chunks.size()], in.size() - fed);
    inbuf.append(in.substr(fed, c));
    fed += c;
    if (inbuf.size() < need) continue;
    need = 0;
    while (!inbuf.empty()) {
      const auto r = proto::parse_client(inbuf, l);
      check(r.consumed <= inbuf.size(), "consumed beyond the span (chunked)", pos);
      const std::size_t k = o.kinds.size();
      if (r.status == parse_status::need_more) {
        check(r.needed > inbuf.size(), "need_more without asking for more (chunked)", pos);
        if (k < ends.size()) check(pos + r.needed <= ends[k], "needed over-asks: connection would stall", pos);
        if (pos + r.needed - 1 <= in.size()) {
          const auto shorter = proto::parse_client(in.substr(pos, r.needed - 1), l);
          check(shorter.status == parse_status::need_more, "needed is not a minimum", pos);
        }
        need = r.needed;
        break;
      }
      if (r.status == parse_status::error) {
        o.errored = true;
        o.error = r.error;
        return o;
      }
      check(r.consumed > 0, "op without progress (chunked)", pos);
      check(k < ends.size() && pos + r.consumed == ends[k], "chunked op boundary differs", pos);
      record(o, r.op);
      inbuf.erase(0, r.consumed);
      pos += r.consumed;
    }
  }
  o.leftover = inbuf.size();
  return o;
}

void compare(const outcome& ref, const outcome& got, const char* schedule) {
  if (ref.kinds != got.kinds || ref.fields != got.fields) {
    std::fprintf(stderr, "schedule %s: %zu ops whole vs %zu chunked; error whole=%d(%d) chunked=%d(%d)\n",
                 schedule, ref.kinds.size(), got.kinds.size(), int(ref.errored), int(ref.error),
                 int(got.errored), int(got.error));
    fail("chunked ops differ from whole-buffer ops", 0);
  }
  if (ref.errored != got.errored || ref.error != got.error) {
    std::fprintf(stderr, "schedule %s: whole error=%d(%d) chunked error=%d(%d)\n", schedule,
                 int(ref.errored), int(ref.error), int(got.errored), int(got.error));
    fail("chunked error differs from whole-buffer error", 0);
  }
  if (!ref.errored && ref.leftover != got.leftover) fail("leftover differs", 0);
}

std::uint64_t fnv1a(std::string_view s) {
  std::uint64_t h = 1469598103934665603ull;
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  return h;
}

void run(std::string_view in, const proto::parser_limits& l, bool byte_by_byte) {
  std::vector<std::size_t> ends;
  const outcome ref = parse_whole(in, l, ends);
  if (byte_by_byte) compare(ref, feed(in, l, ends, {1}), "1-byte");
  std::uint64_t h = fnv1a(in) | 1;
  std::vector<std::size_t> chunks;
  for (int i = 0; i < 16; ++i) {
    h ^= h << 13, h ^= h >> 7, h ^= h << 17;
    chunks.push_back(1 + h % (i % 2 ? 7 : 97));
  }
  compare(ref, feed(in, l, ends, chunks), "hash-chunks");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view in(reinterpret_cast<const char*>(data), size);
  proto::parser_limits tight;
  tight.max_control_line = 64;
  tight.max_payload = 256;
  run(in, tight, true);
  run(in, proto::parser_limits{}, size <= 512);
  return 0;
}
