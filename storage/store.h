#pragma once
// stream_store: what a stream needs from its storage. Two implementations share this
// interface: memory_store (the reference model) and file_store (io_uring + O_DIRECT).
//
// Threading: a store belongs to one owner thread; nothing here is thread-safe.
// Durability: append() assigns the sequence at once; the record becomes durable later.
// The owner's loop calls poll(), which submits one group-commit batch and reaps I/O
// completions; on_durable() reports the highest sequence that reached the store's
// durability point, always in order. A write failure puts the store into a failed state:
// on_error() reports the affected sequences and later appends return the error; reopening
// the store recovers exactly what is on disk.
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "src/base/result.h"

namespace storage {

enum class durability : std::uint8_t {
  write,  // the O_DIRECT write completed: survives a process crash
  sync,   // the batch was also fdatasync'ed: survives power loss
};

// nats-server counts a record size, not the payload (fileStoreMsgSize, memStoreMsgSize).
enum class byte_accounting : std::uint8_t {
  file,    // 30 + subj + payload, or 34 + subj + hdr + payload with headers
  memory,  // 16 + subj + hdr + payload
};

inline std::uint64_t msg_size(byte_accounting a, std::size_t subj, std::size_t hdr,
                              std::size_t payload) {
  if (a == byte_accounting::memory) return 16 + subj + hdr + payload;
  return hdr > 0 ? 34 + subj + hdr + payload : 30 + subj + payload;
}

// Per-message TTL in nanoseconds: 0 = none (max_age applies), ttl_never = exempt from
// TTL and max_age (Nats-TTL: never).
constexpr std::int64_t ttl_none = 0;
constexpr std::int64_t ttl_never = -1;

struct stored_msg {
  std::uint64_t seq = 0;
  std::int64_t ts = 0;  // unix ns
  std::int64_t ttl = ttl_none;
  std::string subject;
  std::string headers;  // the raw NATS/1.0 header block, or empty
  std::string payload;
};

// Discard-old limits; -1 (0 for max_age) = unlimited. Discard-new is the stream's call.
struct stream_limits {
  std::int64_t max_msgs = -1;
  std::int64_t max_bytes = -1;
  std::int64_t max_age_ns = 0;
  std::int64_t max_msgs_per_subject = -1;
};

struct stream_state {
  std::uint64_t msgs = 0;
  std::uint64_t bytes = 0;
  std::uint64_t first_seq = 0;  // last_seq + 1 once everything was removed
  std::uint64_t last_seq = 0;   // highest sequence ever assigned
  std::int64_t first_ts = 0;
  std::int64_t last_ts = 0;
  std::uint64_t num_subjects = 0;
  std::uint64_t num_deleted = 0;       // interior gaps between first and last
  std::vector<std::uint64_t> deleted;  // filled only when asked
  std::vector<std::uint64_t> lost;     // sequences dropped by recovery (corruption)
  std::uint64_t lost_bytes = 0;
  bool operator==(const stream_state&) const = default;
};

// STREAM.PURGE semantics (nats-server's JSApiStreamPurgeRequest). seq: remove sequences
// < seq; keep: keep the newest `keep` (matching) messages. seq and keep together are invalid.
struct purge_request {
  std::string filter;  // "" or ">" = all subjects
  std::uint64_t seq = 0;
  std::uint64_t keep = 0;
};

using durable_fn = std::function<void(std::uint64_t durable_seq)>;
// Asked by expire() about an expiring message that is the last one of its subject: true
// leaves it in place (subject delete markers: the stream writes a marker whose roll-up
// removes it).
using spare_fn = std::function<bool(std::uint64_t seq, std::string_view subject)>;
using error_fn = std::function<void(base::error e, std::uint64_t first_seq, std::uint64_t last_seq)>;

class stream_store {
 public:
  virtual ~stream_store() = default;

  // --- writes
  // ts is the store time (unix ns). Returns the assigned sequence.
  virtual base::result<std::uint64_t> append(std::string_view subject, std::string_view headers,
                                             std::string_view payload, std::int64_t ts,
                                             std::int64_t ttl = ttl_none) = 0;
  // Removes one message; erase also overwrites its bytes. not_found if absent.
  virtual base::status remove(std::uint64_t seq, bool erase = false) = 0;
  // Returns the number of messages purged.
  virtual base::result<std::uint64_t> purge(const purge_request& req) = 0;
  // Assigns n sequences without storing messages (interest retention, no match).
  virtual base::status skip(std::uint64_t n) = 0;
  // Empties the store and starts its sequences over at 1, as if new: a replica replacing its
  // whole state with a snapshot, whose messages may lie below the store's last sequence.
  // Only a store that is not itself the durable copy supports it (the memory store).
  virtual base::status reset() { return base::errc::unsupported; }
  // A copy of what is stored (messages, index, limits; no callbacks) that another thread may
  // read while this store goes on: a replica's snapshot is encoded from it off the owner's
  // thread. Null when the store cannot copy itself (the file store).
  virtual std::unique_ptr<stream_store> clone() const { return nullptr; }

  // --- reads
  virtual base::result<stored_msg> load(std::uint64_t seq) = 0;
  // First message with sequence >= start whose subject matches filter ("" = any).
  virtual base::result<stored_msg> load_next(std::string_view filter, std::uint64_t start) = 0;
  virtual base::result<stored_msg> load_next(const std::vector<std::string>& filters,
                                             std::uint64_t start) = 0;
  // Last message whose subject matches filter (wildcards allowed).
  virtual base::result<stored_msg> load_last(std::string_view filter) = 0;
  // Index-only lookups for per-publish checks (no message bytes are read): the last
  // sequence stored on a literal subject (0 if none) and its message count.
  virtual std::uint64_t subject_last_seq(std::string_view subject) const = 0;
  virtual std::uint64_t subject_count(std::string_view subject) const = 0;
  // First sequence stored at or after ts (unix ns); not_found if none. Binary search:
  // assumes store times are (nearly) non-decreasing, as the owner's clock gives them.
  virtual base::result<std::uint64_t> seq_for_time(std::int64_t ts) const = 0;
  virtual std::uint64_t first_seq() const = 0;
  virtual std::uint64_t last_seq() const = 0;
  virtual std::map<std::string, std::uint64_t> subject_counts(std::string_view filter) const = 0;
  // Every subject with its message count, unsorted: a flat copy another thread may sort and
  // filter (a STREAM.INFO over 100,000 subjects must not hold the owner's loop). In slices:
  // each call appends up to about `max` subjects from `cursor` on and advances it; true once
  // every subject was listed. Between calls the store may change: a subject stored
  // throughout is listed once, one removed and stored again meanwhile may be listed twice.
  virtual bool subject_list(std::vector<std::pair<std::string, std::uint64_t>>& out, std::size_t& cursor,
                            std::size_t max) const {
    (void)max;
    if (cursor == 0)
      for (auto& [subject, n] : subject_counts("")) out.emplace_back(subject, n);
    cursor = 1;
    return true;
  }
  virtual std::uint64_t num_subjects() const = 0;
  virtual stream_state state(bool with_deleted = false) const = 0;
  // state().bytes without building the state (asked after every append).
  virtual std::uint64_t stored_bytes() const { return state(false).bytes; }

  // --- limits
  virtual void set_limits(const stream_limits& l) = 0;
  virtual const stream_limits& limits() const = 0;
  // Applies max_msgs, max_bytes and max_msgs_per_subject (discard old). Returns the count
  // removed; their sequences are appended to *removed when given.
  virtual std::uint64_t enforce_limits(std::vector<std::uint64_t>* removed = nullptr) = 0;
  // Removes messages past max_age or their own TTL at now_ns (unix ns), except those spare
  // keeps (each is asked at most once per call, in sequence order within each pass).
  virtual std::uint64_t expire(std::int64_t now_ns, std::vector<std::uint64_t>* removed = nullptr,
                               const spare_fn& spare = {}) = 0;
  // Earliest time something expires (unix ns), 0 if nothing will.
  virtual std::int64_t next_expiry() const = 0;

  // --- durability
  virtual int poll() = 0;  // work done
  virtual std::uint64_t durable_seq() const = 0;
  // Bytes appended but not yet durable: the stream's backpressure signal (the store itself
  // never refuses an append for being behind).
  virtual std::uint64_t backlog_bytes() const = 0;
  virtual void on_durable(durable_fn fn) = 0;
  virtual void on_error(error_fn fn) = 0;
  // Asks the store to signal eventfd `efd` when an asynchronous write completes, so the
  // owner's loop can block instead of polling. True when the owner may block: the signal is
  // set up, or the store never has writes completing later (memory store).
  virtual bool signal_completions_to(int /*efd*/) { return true; }
  // Blocks until everything appended so far is durable (or the store failed).
  virtual base::status flush() = 0;
  // flush() and release files. Destroying a store without close() drops whatever was not
  // yet submitted, exactly like a crash would.
  virtual base::status close() = 0;
};

// Compact binary state snapshot (checksummed) for restart bookkeeping and replicas.
std::string encode_state(const stream_state& s);
base::result<stream_state> decode_state(std::string_view bytes);

}  // namespace storage
