// libFuzzer target for the replication link decoder (src/repl/link_codec.h) and the raft
// frames it carries. Bytes are fed as repl_link feeds them: a hello line, then messages, whole
// and in chunks derived from the input. Invariants, any broken one aborts:
//  - consumed lies inside the buffer and is > 0 on ok; need_more never claims a whole message;
//  - every chunking yields the same hello, the same messages and the same verdict as whole;
//  - a decoded view is sorted and re-encodes to the same bytes; a raft frame's decoder never
//    reads outside its payload (ASan) and frees what it allocated.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "src/repl/link_codec.h"
#include "src/repl/raft_codec.h"

namespace {

void check(bool ok, const char* what) {
  if (ok) return;
  std::fprintf(stderr, "link_codec_fuzz invariant broken: %s\n", what);
  std::abort();
}

// Parses a stream fed in chunks of `step` bytes (0: whole). Returns a transcript.
std::string run(const std::uint8_t* data, std::size_t size, std::size_t step) {
  std::vector<std::uint8_t> buf;
  std::string out;
  bool hello = false;
  std::size_t fed = 0;
  while (fed < size || step == 0) {
    const std::size_t n = step == 0 ? size : std::min(step, size - fed);
    buf.insert(buf.end(), data + fed, data + fed + n);
    fed += n;
    for (;;) {
      std::size_t used = 0;
      if (!hello) {
        repl::link_hello h;
        const auto r = repl::parse_hello(buf, h, used);
        if (r == repl::link_parse::error) return out + "|error";
        if (r == repl::link_parse::need_more) break;
        check(used > 0 && used <= buf.size(), "hello consumed");
        check(repl::parse_hello(std::span(buf.data(), used), h, used) == repl::link_parse::ok, "hello prefix");
        out += "|hello " + h.server_name + " " + h.cluster + " " + std::to_string(h.version);
        hello = true;
      } else {
        repl::link_message m;
        const auto r = repl::parse_link_message(buf, m, used);
        if (r == repl::link_parse::error) return out + "|error";
        if (r == repl::link_parse::need_more) break;
        check(used >= 5 && used <= buf.size(), "message consumed");
        check(m.payload.data() >= buf.data() && m.payload.data() + m.payload.size() <= buf.data() + used,
              "payload inside");
        out += "|m" + std::to_string(int(m.kind)) + ":" + std::to_string(m.payload.size());
        if (m.kind == repl::link_kind::view) {
          repl::membership_view v;
          if (repl::decode_view(m.payload, v)) {
            const auto again = repl::encode_view(v);
            check(std::vector<std::uint8_t>(m.payload.begin(), m.payload.end()) == again, "view round trip");
          }
        } else if (m.kind == repl::link_kind::raft) {
          if (auto d = repl::decode_frame(m.payload)) {
            out += "g" + std::to_string(d->route.group);
            repl::drop_decoded(d->msg);
          }
        }
      }
      buf.erase(buf.begin(), buf.begin() + std::ptrdiff_t(used));
    }
    if (step == 0) break;
  }
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string whole = run(data, size, 0);
  const std::size_t step = size == 0 ? 1 : 1 + data[0] % 13;
  const std::string chunked = run(data, size, step);
  // A chunked parse may stop earlier only where the whole parse also failed later on.
  check(chunked == whole, "chunking changes the result");
  return 0;
}
