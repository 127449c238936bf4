#include "bench/e2e/failover.h"

#include <algorithm>
#include <cmath>
#include <set>

namespace peregrine::bench {

int64_t failover_gap_ns(const std::vector<ack_record>& acks, int64_t kill_ns) {
  for (const ack_record& a : acks) {
    if (a.ack_ns <= kill_ns) continue;
    if (a.sent_ns >= kill_ns || a.ack_ns - kill_ns >= kStaleAckNs) return a.ack_ns - kill_ns;
  }
  return -1;
}

readback_result check_readback(const std::vector<ack_record>& acks, const std::map<uint64_t, uint64_t>& stored) {
  readback_result r;
  r.stored = stored.size();
  std::set<uint64_t> acked_idx;
  for (const ack_record& a : acks) {
    // A retried publish can be acknowledged twice (duplicate PubAck): check each ack.
    acked_idx.insert(a.index);
    const auto it = stored.find(a.seq);
    const bool lost = it == stored.end() || it->second != a.index;
    if (it == stored.end())
      ++r.missing;
    else if (it->second != a.index)
      ++r.mismatched;
    if (lost && r.lost_seqs.size() < 10) r.lost_seqs.push_back(a.seq);
  }
  r.acked = acked_idx.size();
  std::map<uint64_t, uint64_t> copies;
  for (const auto& [seq, idx] : stored) ++copies[idx];
  for (const auto& [idx, n] : copies) {
    if (n > 1) r.duplicates += n - 1;
    if (acked_idx.count(idx) == 0) r.unacked_stored += n;
  }
  return r;
}

int64_t percentile_of(std::vector<int64_t> values, double q) {
  values.erase(std::remove_if(values.begin(), values.end(), [](int64_t v) { return v < 0; }), values.end());
  if (values.empty()) return -1;
  std::sort(values.begin(), values.end());
  const double rank = std::ceil(q * static_cast<double>(values.size()));
  const size_t i = rank < 1 ? 0 : static_cast<size_t>(rank) - 1;
  return values[std::min(i, values.size() - 1)];
}

std::string index_text(uint64_t index) { return "fo-" + std::to_string(index); }

bool parse_index(const char* data, int len, uint64_t& index) {
  if (len < 4 || data[0] != 'f' || data[1] != 'o' || data[2] != '-') return false;
  uint64_t v = 0;
  int i = 3;
  for (; i < len && data[i] >= '0' && data[i] <= '9'; ++i) v = v * 10 + static_cast<uint64_t>(data[i] - '0');
  if (i == 3) return false;
  index = v;
  return true;
}

}  // namespace peregrine::bench
