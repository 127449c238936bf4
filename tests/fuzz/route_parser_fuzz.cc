// libFuzzer target for core::parse_route (the server-to-server protocol). Bytes are fed as a
// route connection feeds them (append, parse while ops are complete, keep the leftover, wait
// for `needed`), whole and in chunks derived from the input. Invariants, any broken one aborts:
//  - consumed <= span and > 0 for ops and errors; every view lies inside the op's bytes;
//  - need_more asks for more than is buffered;
//  - an RMSG/HMSG payload is followed by CRLF and sizes respect max_payload;
//  - RS+ weights are non-negative; queue lists are made of the line's words;
//  - every chunking yields the same ops and the same error as parsing whole.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "src/core/route_parser.h"

namespace {

using proto::parse_status;

void check(bool ok, const char* what, std::size_t at) {
  if (ok) return;
  std::fprintf(stderr, "route_parser_fuzz invariant broken: %s (stream offset %zu)\n", what, at);
  std::abort();
}

bool inside(std::string_view v, std::string_view span) {
  return v.empty() || (v.data() >= span.data() && v.data() + v.size() <= span.data() + span.size());
}

// One op as text, to compare whole and chunked parses.
std::string describe(const core::route_op& op) {
  std::string s = std::to_string(int(op.kind)) + "|" + std::string(op.account) + "|" + std::string(op.subject) +
                  "|" + std::string(op.queue) + "|" + std::to_string(op.weight) + "|" + std::string(op.reply) + "|" +
                  std::string(op.queues) + "|" + std::to_string(op.headers.size()) + "|" +
                  std::string(op.payload) + "|" + std::string(op.err) + "|" + std::to_string(int(op.op.kind)) + "|" +
                  std::string(op.op.json);
  return s;
}

std::vector<std::string> run(std::string_view input, std::size_t chunk, const proto::parser_limits& lim) {
  std::vector<std::string> out;
  std::string buf;
  std::size_t fed = 0, need = 0, offset = 0;
  while (fed < input.size() || (!buf.empty() && buf.size() >= need && need > 0)) {
    const std::size_t take = std::min(chunk, input.size() - fed);
    buf.append(input.substr(fed, take));
    fed += take;
    if (buf.size() < need && fed < input.size()) continue;
    need = 0;
    while (!buf.empty()) {
      const core::route_parse_result r = core::parse_route(buf, lim);
      const std::string_view span(buf);
      if (r.status == parse_status::need_more) {
        check(r.needed > buf.size(), "need_more asks for no more than is buffered", offset);
        need = r.needed;
        break;
      }
      check(r.consumed > 0 && r.consumed <= buf.size(), "consumed out of range", offset);
      if (r.status == parse_status::error) {
        out.push_back("error " + std::to_string(int(r.error)));
        return out;
      }
      const std::string_view used = span.substr(0, r.consumed);
      const core::route_op& op = r.op;
      for (std::string_view v : {op.account, op.subject, op.queue, op.reply, op.queues, op.headers, op.payload,
                                 op.err, op.op.json})
        check(inside(v, used), "a view lies outside the op", offset);
      check(op.weight >= 0, "negative weight", offset);
      if (op.kind == core::route_op_kind::msg) {
        check(std::int64_t(op.headers.size() + op.payload.size()) <= lim.max_payload, "payload above max", offset);
        const char* end = op.payload.data() + op.payload.size();
        check(end + 2 <= used.data() + used.size() && end[0] == '\r' && end[1] == '\n', "payload without CRLF",
              offset);
      }
      out.push_back(describe(op));
      offset += r.consumed;
      buf.erase(0, r.consumed);
    }
    if (fed >= input.size() && need > buf.size()) break;
  }
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  for (const proto::parser_limits lim : {proto::parser_limits{}, proto::parser_limits{64, 16}}) {
    const auto whole = run(input, input.size() + 1, lim);
    const std::size_t chunk = size ? std::size_t(data[0] % 7) + 1 : 1;
    check(run(input, chunk, lim) == whole, "chunked parse differs from whole", 0);
    check(run(input, 1, lim) == whole, "byte-at-a-time parse differs from whole", 0);
  }
  return 0;
}
