#include "src/js/batch_recovery.h"

#include "src/js/js_headers.h"
#include "src/js/json_util.h"

namespace js {

torn_batch find_torn_batch(storage::stream_store& s) {
  torn_batch out;
  std::uint64_t seq = s.last_seq();
  const std::uint64_t first = s.first_seq();
  while (seq >= first && seq > 0) {
    auto m = s.load(seq);
    if (!m.ok()) break;  // a deleted or unreadable message ends the batch's run
    const js_headers h = m->headers.empty() ? js_headers{} : parse_js_headers(m->headers);
    if (!h.batch_id || h.batch_commit) break;  // a plain message or a committed batch's end
    if (out.id.empty()) {
      out.id = std::string(*h.batch_id);
    } else if (*h.batch_id != out.id) {
      break;
    }
    out.seqs.push_back(seq);
    const auto bseq = h.batch_seq ? parse_u64(*h.batch_seq) : std::nullopt;
    if (bseq && *bseq <= 1) break;  // the batch's first message
    --seq;
  }
  if (out.seqs.empty()) out.id.clear();
  return out;
}

std::vector<tail_rollup> tail_rollups(storage::stream_store& s) {
  std::vector<tail_rollup> out;
  std::string batch;  // the committed batch being walked back, once the tail shows one
  const std::uint64_t first = s.first_seq();
  for (std::uint64_t seq = s.last_seq(); seq >= first && seq > 0; --seq) {
    auto m = s.load(seq);
    if (!m.ok()) break;
    const js_headers h = m->headers.empty() ? js_headers{} : parse_js_headers(m->headers);
    if (seq == s.last_seq() && h.batch_id && h.batch_commit) batch = std::string(*h.batch_id);
    if (!batch.empty() && (!h.batch_id || *h.batch_id != batch)) break;
    if (h.rollup) out.push_back({seq, std::string(*h.rollup), m->subject});
    if (batch.empty()) break;  // a single message
    const auto bseq = h.batch_seq ? parse_u64(*h.batch_seq) : std::nullopt;
    if (bseq && *bseq <= 1) break;  // the batch's first message
  }
  return out;
}

}  // namespace js
