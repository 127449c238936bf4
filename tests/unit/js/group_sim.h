#pragma once
// Seeded simulation of stream groups (issue 10): a fake host drives one or two groups
// (src/js/stream_group.h) with seeded publishers, pull and push consumers, acks, naks,
// terms, progress acks, ack-wait expiry on a fake clock, max_deliver, purges, message
// deletes, limits and retention policies, and restarts that reopen each stream from what its
// fake disk made durable (and each consumer from the state file it wrote). After every step
// a simple model checks: no PubAck'd publish lost unless a limit, purge, delete or retention
// removed it; sequences gapless; every stored message delivered to each consumer until acked
// or max_deliver reached, redelivered only after ack_wait or a nak; ack floors monotonic;
// num_pending, num_ack_pending, num_redelivered and the pending set equal to the model's;
// interest and work-queue retention removing exactly what the model says.
//
// Everything random comes from the seed and time from a manual clock; no thread is started
// (consumer snapshots go through the process-wide state writer, and the harness waits for
// each one, so what a crash keeps does not depend on its timing): a failing seed replays.
//
// Reuse (issue 11): sim_disk and sim_store are a stream store on a fake disk; sim_host is
// the group_host; run_group_simulation the whole loop.
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "src/base/clock.h"
#include "src/js/group_host.h"
#include "storage/memory_store.h"

namespace js::sim {

// ---- the fake disk -------------------------------------------------------------------

enum class removal_cause : std::uint8_t { remove, purge, limits, expire };

// What reached the disk, in order: a store's changes as records. A restart replays the
// durable prefix; a crash loses the rest (exactly the file store's contract: a prefix of
// the log survives, so a removal not yet durable comes back).
struct disk_record {
  enum kind : std::uint8_t { append, remove, purge, skip } k = append;
  std::uint64_t seq = 0;  // append: assigned; remove: removed; skip: how many
  std::int64_t ts = 0, ttl = 0;
  std::string subject, headers, payload;
  storage::purge_request purge_req;
  std::uint64_t last_after = 0;  // the store's last_seq once this record applied
};

struct sim_disk {
  std::vector<disk_record> log;
  std::size_t durable = 0;  // records [0, durable) survive a crash
  bool crashed = false;     // nothing more becomes durable
  bool lies = false;        // checker self-test: reports writes durable, keeps none
  // What a restart finds: the durable prefix.
  void crash_and_truncate() {
    log.resize(durable);
    crashed = false;
  }
};

// A stream store on a sim_disk: a memory_store holds the live state; poll() makes the log
// durable up to its end when `commit_now()` says so (a group commit that may lag a few
// polls), flush() always. Every removal is reported to `removed` with its cause.
class sim_store final : public storage::stream_store {
 public:
  using removal_fn = std::function<void(std::uint64_t seq, removal_cause cause)>;
  // Replays disk.log (all of it must be durable: a reopened store).
  sim_store(sim_disk& disk, std::function<bool()> commit_now, removal_fn removed);

  base::result<std::uint64_t> append(std::string_view subject, std::string_view headers, std::string_view payload,
                                     std::int64_t ts, std::int64_t ttl) override;
  base::status remove(std::uint64_t seq, bool erase) override;
  base::result<std::uint64_t> purge(const storage::purge_request& req) override;
  base::status skip(std::uint64_t n) override;

  base::result<storage::stored_msg> load(std::uint64_t seq) override { return _live.load(seq); }
  base::result<storage::stored_msg> load_next(std::string_view f, std::uint64_t start) override {
    return _live.load_next(f, start);
  }
  base::result<storage::stored_msg> load_next(const std::vector<std::string>& f, std::uint64_t start) override {
    return _live.load_next(f, start);
  }
  base::result<storage::stored_msg> load_last(std::string_view f) override { return _live.load_last(f); }
  std::uint64_t subject_last_seq(std::string_view s) const override { return _live.subject_last_seq(s); }
  std::uint64_t subject_count(std::string_view s) const override { return _live.subject_count(s); }
  base::result<std::uint64_t> seq_for_time(std::int64_t ts) const override { return _live.seq_for_time(ts); }
  std::uint64_t first_seq() const override { return _live.first_seq(); }
  std::uint64_t last_seq() const override { return _live.last_seq(); }
  std::map<std::string, std::uint64_t> subject_counts(std::string_view f) const override {
    return _live.subject_counts(f);
  }
  std::uint64_t num_subjects() const override { return _live.num_subjects(); }
  storage::stream_state state(bool with_deleted) const override { return _live.state(with_deleted); }

  void set_limits(const storage::stream_limits& l) override { _live.set_limits(l); }
  const storage::stream_limits& limits() const override { return _live.limits(); }
  std::uint64_t enforce_limits(std::vector<std::uint64_t>* removed) override;
  std::uint64_t expire(std::int64_t now_ns, std::vector<std::uint64_t>* removed,
                       const storage::spare_fn& spare) override;
  std::int64_t next_expiry() const override { return _live.next_expiry(); }

  int poll() override;
  std::uint64_t durable_seq() const override { return _durable_last; }
  std::uint64_t backlog_bytes() const override;
  void on_durable(storage::durable_fn fn) override { _on_durable = std::move(fn); }
  void on_error(storage::error_fn fn) override { _on_error = std::move(fn); }
  base::status flush() override;
  base::status close() override { return flush(); }

 private:
  void record(disk_record r);
  void commit();
  void removed_all(const std::vector<std::uint64_t>& seqs, removal_cause cause, std::vector<std::uint64_t>* out);

  sim_disk& _disk;
  std::function<bool()> _commit_now;
  removal_fn _removed;
  storage::memory_store _live{storage::byte_accounting::file};
  std::uint64_t _durable_last = 0;
  storage::durable_fn _on_durable;
  storage::error_fn _on_error;
};

// ---- the fake host -------------------------------------------------------------------

// One thing the groups sent (a publish or a delivery), or a store's removal: the ordered
// trace the model replays after each step.
struct trace_entry {
  enum kind : std::uint8_t { publish, deliver, removal } k = publish;
  std::string to, subject, reply, headers, payload;
  std::size_t stream = 0;  // removal: which stream
  std::uint64_t seq = 0;
  removal_cause cause = removal_cause::remove;
};

class sim_host final : public group_host {
 public:
  sim_host();
  std::uint64_t subscribe(std::string_view subject, std::string_view queue, core::internal_handler* h) override;
  void unsubscribe(std::uint64_t id) override;
  void publish(std::string_view subject, std::string_view reply, std::string_view headers,
               std::string_view payload) override;
  void deliver(std::string_view to, std::string_view subject, std::string_view reply, std::string_view headers,
               std::string_view payload) override;
  bool has_interest(std::string_view subject) override { return listeners.count(std::string(subject)) != 0; }
  const base::clock& clk() const override { return clock; }
  int wake_eventfd() override { return -1; }
  void wake(stream_group&) override {}
  const std::string& domain() const override { return _empty; }
  const std::string& server_name() const override { return _name; }
  const core::server_options& options() const override { return _opts; }
  void report_usage(storage_type, std::int64_t delta) override { used += delta; }
  bool storage_exhausted(storage_type) const override { return false; }
  std::size_t* fast_batch_counter() override { return &_fast; }

  // A client publish: every matching internal subscription hears it, as the sublist would.
  std::size_t inject(std::string_view subject, std::string_view reply, std::string_view payload);

  base::manual_clock clock{0, 1'700'000'000 * base::kSecond};
  std::map<std::string, int> listeners;  // subjects a client subscribes (inboxes, push)
  std::vector<trace_entry> trace;
  std::int64_t used = 0;

 private:
  struct sub {
    std::uint64_t id;
    std::string subject;
    core::internal_handler* h;
  };
  std::vector<sub> _subs;
  std::uint64_t _next_id = 0;
  std::string _empty, _name = "sim";
  core::server_options _opts;
  std::size_t _fast = 0;
};

// ---- the run -------------------------------------------------------------------------

struct sim_options {
  std::uint64_t seed = 1;
  unsigned steps = 300;        // chaos steps, then a drain phase without faults
  unsigned max_streams = 2;    // 1..max_streams groups on the host
  bool restarts = true;
  bool crashes = true;         // restarts may be crashes (else always clean)
  bool purges = true;
  bool deletes = true;
  // Replays the durable log on restart without the group's restart cleanup being checked
  // (a checker self-test: the disk loses records it reported durable).
  bool disk_lies = false;
  bool trace = false;          // print every step and trace entry
  std::string dir;             // consumer state directories go under here ("" = /dev/shm or /tmp)
};

struct sim_report {
  bool ok = false;
  std::string failure;  // the first violated property, with the step and details
  std::uint64_t steps = 0;
  std::uint64_t published = 0;   // PubAck'd publishes
  std::uint64_t delivered = 0;   // deliveries the clients saw
  std::uint64_t redelivered = 0;
  std::uint64_t acked = 0;
  std::uint64_t restarts = 0;
  std::uint64_t crashes = 0;
  std::uint64_t removed = 0;     // removals by limits, age, purges, deletes and retention
  std::string config;            // the streams and consumers the seed chose
};

sim_report run_group_simulation(const sim_options& options);

}  // namespace js::sim
