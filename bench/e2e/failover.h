// Pure parts of the js-failover measurement (no clocks, no I/O): the gap from a leader kill to
// the next acknowledged publish, and the read-back check that every acknowledged publish is in
// the stream at the sequence its PubAck named.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace peregrine::bench {

// One acknowledged publish: message index (carried in the payload and the Nats-Msg-Id), the
// stream sequence of its PubAck, when the acknowledged attempt was sent and when its ack came.
struct ack_record {
  uint64_t index = 0;
  uint64_t seq = 0;
  int64_t sent_ns = 0;
  int64_t ack_ns = 0;
};

// An ack received within this long after the kill for an attempt sent before it may have left
// the killed leader before it died (it was already in the client's socket): not counted.
constexpr int64_t kStaleAckNs = 20'000'000;

// Time from kill_ns to the first ack (acks in completion order) that the killed leader cannot
// have sent: its attempt started at or after the kill, or it came kStaleAckNs or more after it.
// -1 if there is none.
int64_t failover_gap_ns(const std::vector<ack_record>& acks, int64_t kill_ns);

struct readback_result {
  uint64_t acked = 0;           // distinct acknowledged indexes
  uint64_t stored = 0;          // messages read back
  uint64_t missing = 0;         // acked, but nothing at the acked sequence
  uint64_t mismatched = 0;      // acked, but another message at the acked sequence
  uint64_t duplicates = 0;      // stored messages whose index is also stored at another sequence
  uint64_t unacked_stored = 0;  // stored, never acknowledged (a timed-out attempt that landed)
  std::vector<uint64_t> lost_seqs;  // the first few missing or mismatched sequences
  bool ok() const { return missing == 0 && mismatched == 0; }
};

// stored: stream sequence -> message index as read back from the stream.
readback_result check_readback(const std::vector<ack_record>& acks, const std::map<uint64_t, uint64_t>& stored);

// Nearest-rank percentile (q in [0, 1]) of the non-negative values; -1 for none.
int64_t percentile_of(std::vector<int64_t> values, double q);

// "fo-<index>": the payload's leading text and the Nats-Msg-Id; parse_index reads it back.
std::string index_text(uint64_t index);
bool parse_index(const char* data, int len, uint64_t& index);

}  // namespace peregrine::bench
