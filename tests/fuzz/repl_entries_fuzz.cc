// libFuzzer target for js::repl_entries (the meta, stream and consumer entries of the
// replicated groups, and their snapshots: bytes a peer's log or InstallSnapshot hands every
// replica), and the meta table's snapshot (meta_state::restore). Invariants: decoding never
// crashes or over-allocates, whatever decodes re-encodes to bytes that decode to the same
// op, and a restored meta table's snapshot restores to the same table.
#include <cstdint>
#include <cstdlib>
#include <span>

#include "src/js/meta_state.h"
#include "src/js/repl_entries.h"

namespace re = js::repl_entries;

template <class Decode>
static void roundtrip(std::span<const std::uint8_t> in, Decode decode) {
  auto op = decode(in);
  if (!op) return;
  const auto again = re::encode(*op);
  auto back = decode(std::span<const std::uint8_t>(again));
  if (!back || !(*back == *op)) std::abort();
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::span<const std::uint8_t> in(data, size);
  roundtrip(in, [](std::span<const std::uint8_t> b) { return re::decode_meta(b); });
  roundtrip(in, [](std::span<const std::uint8_t> b) { return re::decode_stream(b); });
  roundtrip(in, [](std::span<const std::uint8_t> b) { return re::decode_consumer(b); });
  roundtrip(in, [](std::span<const std::uint8_t> b) { return re::decode_stream_snapshot(b); });
  roundtrip(in, [](std::span<const std::uint8_t> b) { return re::decode_consumer_snapshot(b); });
  js::meta_state table("s1");
  std::vector<js::meta_change> mine;
  if (table.restore(in, mine)) {
    const auto again = table.snapshot();
    js::meta_state copy("s1");
    if (!copy.restore(again, mine) || copy.snapshot() != again) std::abort();
  }
  return 0;
}
