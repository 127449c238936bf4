#pragma once
// Consumer state persistence: delivered and ack-floor sequences, pending acks with their
// delivery times, and redelivery counts, so a consumer resumes where it was. Updates apply
// in memory; flush() (from the owner's loop, at its chosen rate, and at shutdown) writes a
// checksummed snapshot atomically (temp file, fdatasync, rename, directory fsync). After a
// crash the consumer resumes from the last flush: at-least-once, never skipping an unacked
// message that was flushed as pending.
#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include "src/base/result.h"
#include "storage/state_writer.h"

namespace storage {

struct seq_pair {
  std::uint64_t consumer = 0;
  std::uint64_t stream = 0;
  bool operator==(const seq_pair&) const = default;
};

struct pending_ack {
  std::uint64_t consumer_seq = 0;
  std::int64_t ts = 0;  // last delivery time (unix ns)
  bool operator==(const pending_ack&) const = default;
};

struct consumer_state {
  seq_pair delivered;
  seq_pair ack_floor;
  std::map<std::uint64_t, pending_ack> pending;        // by stream seq
  std::map<std::uint64_t, std::uint64_t> redelivered;  // stream seq -> redeliveries
  bool operator==(const consumer_state&) const = default;
};

std::string encode_consumer_state(const consumer_state& s);
base::result<consumer_state> decode_consumer_state(std::string_view bytes);

class consumer_store {
 public:
  virtual ~consumer_store() = default;
  // A delivery of stream seq sseq as consumer seq dseq; dcount is its delivery count.
  virtual base::status update_delivered(std::uint64_t dseq, std::uint64_t sseq,
                                        std::uint64_t dcount, std::int64_t ts) = 0;
  // An ack for (dseq, sseq): drops it from pending and moves the ack floor.
  virtual base::status update_acks(std::uint64_t dseq, std::uint64_t sseq) = 0;
  virtual base::status update(const consumer_state& s) = 0;  // replace everything
  virtual const consumer_state& state() const = 0;
  virtual base::status flush() = 0;
  virtual bool dirty() const = 0;
};

// The in-memory implementation, also the rules both share.
class memory_consumer_store : public consumer_store {
 public:
  base::status update_delivered(std::uint64_t dseq, std::uint64_t sseq, std::uint64_t dcount,
                                std::int64_t ts) override;
  base::status update_acks(std::uint64_t dseq, std::uint64_t sseq) override;
  base::status update(const consumer_state& s) override;
  const consumer_state& state() const override { return _s; }
  base::status flush() override {
    _dirty = false;
    return {};
  }
  bool dirty() const override { return _dirty; }

 protected:
  consumer_state _s;
  bool _dirty = false;
};

class file_consumer_store final : public memory_consumer_store {
 public:
  // Loads dir/<name>.cstate when present (corrupt -> errc::corrupt, nothing guessed).
  static base::result<std::unique_ptr<file_consumer_store>> open(const std::string& dir,
                                                                 const std::string& name);
  // Writes the snapshot now (after any background write still in flight).
  base::status flush() override;
  // open() found a state file (else the state is a fresh one).
  bool loaded() const { return _loaded; }
  // Hands the snapshot to the state_writer thread and returns at once; false (and still
  // dirty) while the previous one is being written, so snapshots coalesce. sync: also
  // fdatasync (power loss); without it the snapshot survives a process crash only.
  bool flush_async(bool sync = true);
  // Snapshots written since the last synced one (what power loss could still take).
  bool unsynced() const { return _unsynced; }
  // errno of a background write that failed since the last call, 0 if none.
  int take_async_error() { return _ticket->error.exchange(0, std::memory_order_relaxed); }
  bool writing() const { return written() < _gen; }
  // Generation of the last snapshot handed to the writer, and the highest one finished
  // (written or failed; snapshots finish in order).
  std::uint64_t handed() const { return _gen; }
  std::uint64_t written() const { return _ticket->done.load(std::memory_order_acquire); }
  // An eventfd the writer thread signals when a snapshot finished (-1: none).
  void signal_completions_to(int eventfd) { _ticket->wake_fd.store(eventfd, std::memory_order_release); }
  ~file_consumer_store() override { _ticket->wake_fd.store(-1, std::memory_order_release); }
  // Blocks until no background write is in flight.
  void wait_written() const;
  // flush() in a batch (write_snapshot_files): adds this snapshot to `batch` when there is
  // something to write (after any background write in flight); staged_done reads the outcome.
  void stage(std::vector<snapshot_file>& batch);
  void staged_done(const std::vector<snapshot_file>& batch);

 private:
  std::string _dir, _path;
  std::shared_ptr<state_writer::ticket> _ticket = std::make_shared<state_writer::ticket>();
  std::uint64_t _gen = 0;  // generation of the last snapshot handed over
  bool _unsynced = false;
  bool _loaded = false;
  std::size_t _staged = ~std::size_t(0);  // index in the batch stage() added to
};

}  // namespace storage
