#pragma once
// One consumer inside the server: owns a consumer_state_machine, reads the stream's store
// for it (message_source), receives acks / flow-control replies / pull requests, ticks its
// timers and turns the machine's actions into deliveries, status messages, advisories,
// releases (retention is its group's) and persisted state. Runs on its group's owner thread.
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "src/core/service.h"
#include "src/js/ack_confirm.h"
#include "src/js/consumer.h"
#include "src/js/consumer_config.h"
#include "src/js/consumer_link.h"
#include "src/js/group_host.h"
#include "storage/consumer_state.h"
#include "storage/store.h"

namespace js {

class stream;

// Retention is the group's: a consumer only says it no longer needs a message.
class release_sink {
 public:
  virtual ~release_sink() = default;
  virtual void on_released(std::uint64_t seq) = 0;
};

class consumer_agent final : public message_source, public core::internal_handler {
 public:
  // state_dir empty = nothing persisted (ephemerals of memory streams or with mem_storage).
  // Durables keep their config there, and their state too unless mem_storage or on a memory
  // stream; ephemerals of file streams keep both.
  consumer_agent(group_host& host, release_sink& owner, stream& s, consumer_config cfg, std::int64_t created, std::string state_dir,
                 std::int64_t now);
  ~consumer_agent() override;

  // Subscribes acks and flow-control replies, emits a CREATED-time pause advisory if paused.
  // restore: persisted state to resume from (after a restart).
  void start(const storage::consumer_state* restore, std::int64_t now);

  const std::string& name() const { return _cfg.name; }
  const std::string& stream_name() const;
  // On a consumer thread (--consumer_threads): reads go through `link`'s feed, and the calls
  // the owner makes (start, info, update, pause, reset, delete, shutdown) run on `exec`'s
  // thread. Before start().
  void attach(std::shared_ptr<consumer_link> link, agent_executor* exec);
  // Its subscriptions go (on its thread; the agent is leaving it).
  void unsubscribe_all();
  bool remote() const { return _link != nullptr; }
  // Matching messages from its start sequence, from the store (on the owner, before attach).
  std::uint64_t initial_pending() { return recount(_start_seq); }
  // The agent subscribes its CONSUMER.MSG.NEXT itself (always on a consumer thread). Before start().
  void own_pulls() { _own_pulls = true; }
  // A purge of its stream, applied on its consumer thread while the owner waits (run_sync):
  // reads the store as an owner-thread agent does.
  void purge_now(std::int64_t now);
  std::uint64_t ack_floor_seq() const;
  const consumer_config& config() const { return _cfg; }
  std::int64_t created() const { return _created; }
  const std::string& state_dir() const { return _state_dir; }

  // Acks ($JS.ACK.<stream>.<consumer>.>).
  void on_msg(const core::inbound_msg& m) override;
  // $JS.API.CONSUMER.MSG.NEXT.<stream>.<consumer>.
  void on_pull_request(const core::inbound_msg& m, std::int64_t now);
  // Stream hooks.
  void on_stored(std::uint64_t seq, std::string_view subject);
  void on_removed(const std::vector<std::uint64_t>& seqs, std::int64_t now);
  bool filter_matches(std::string_view subject) const;
  bool needs(std::uint64_t seq) const { return _m->needs(seq); }
  std::uint64_t needed_from() const { return _m->needed_from(); }
  std::uint64_t start_seq() const { return _start_seq; }
  // last_per_subject: the start set resolved at creation (sorted), for a remote agent's link.
  const std::vector<std::uint64_t>& lps_start() const { return _lps; }
  // On a consumer thread: its link (the owner's half is the owner's to touch), else null.
  consumer_link* feed_link() const { return _link_keep.get(); }
  base::latency_histogram ack_latency() const;  // a copy (the agent may run on another thread)

  // Timers, wake-ups, push interest, persistence; returns work done.
  std::size_t poll(std::int64_t now);
  // Earliest wall time at which poll() has timed work (machine timers, a pending flush).
  std::int64_t next_wakeup() const;
  // The machine asked to be deleted (inactive ephemeral).
  bool expired() const { return _expired; }

  // Config update (already checked by check_update).
  void update(const consumer_config& cfg, std::int64_t now);
  // On a consumer thread, once its state is restored and at a filter update (the owner
  // waiting, its store readable): copies of the pending messages the filters do not match,
  // read from the store, so they are redelivered by sequence as nats-server does whatever
  // the filter.
  void keep_unmatched_pending();
  // PAUSE API; nullopt or past = resume.
  void pause(std::optional<std::int64_t> until, std::int64_t now);
  bool unpin(const std::string& group, std::int64_t now);
  // RESET API (consumer_reset.cc): nullopt = keep the ack floor; else start at `seq` if the
  // deliver policy allows it (10204 otherwise). reset_seq = the first sequence to deliver.
  std::optional<api_error> reset(std::optional<std::uint64_t> seq, std::int64_t now, std::uint64_t& reset_seq);
  bool push_bound() const;
  // Ack sync replies wait for a state write in flight (its completion wakes the loop).
  bool awaits_write() const;
  const core::internal_handler* flow_control_handler() const { return &_fc; }

  ojson info_json(std::int64_t now);
  // Blocks until no state snapshot is being written (before its directory is removed).
  void wait_state_written() const {
    if (_store) _store->wait_written();
  }
  // Waiting requests get 409 Consumer Deleted; subscriptions go.
  void on_delete();
  // Server stopping: 409 Server Shutdown, state flushed; with `batch`, the state is added
  // to it instead, for one write of every consumer's (storage::write_snapshot_files), and
  // finish_shutdown follows it.
  void on_shutdown(std::vector<storage::snapshot_file>* batch = nullptr);
  void finish_shutdown(const std::vector<storage::snapshot_file>& batch);

  // Durable state as the storage layer keeps it.
  storage::consumer_state durable_state() const;
  // wait: write now (shutdown); else hand the snapshot to the state writer thread.
  void flush_state(bool wait);

  // message_source
  std::optional<msg_meta> next_matching(std::uint64_t from) override;
  std::optional<msg_meta> load(std::uint64_t seq) override;
  std::uint64_t count_matching(std::uint64_t from) override;

 private:
  class fc_handler final : public core::internal_handler {
   public:
    explicit fc_handler(consumer_agent& a) : _a(a) {}
    void on_msg(const core::inbound_msg& m) override;

   private:
    consumer_agent& _a;
  };

  class pull_handler final : public core::internal_handler {
   public:
    explicit pull_handler(consumer_agent& a) : _a(a) {}
    void on_msg(const core::inbound_msg& m) override { _a.on_pull_request(m, _a._host.now()); }

   private:
    consumer_agent& _a;
  };

  bool off_thread() const { return _exec && !_exec->on_thread(); }
  // purge_now reads the store through the local paths for one call.
  void feed_link_off() { _link = nullptr; }
  void feed_link_on() { _link = _link_keep.get(); }
  std::uint64_t read_last() const;
  base::result<storage::stored_msg> read_one(std::uint64_t seq);
  base::result<storage::stored_msg> read_next(std::uint64_t from);
  std::uint64_t resolve_start_seq();
  msg_meta remember(storage::stored_msg&& m);
  void run(actions& out, std::int64_t now);
  void send_delivery(const delivery& d, std::int64_t now);
  void send_advisory(const advisory& a);
  void release(std::uint64_t seq);
  void check_push_interest(std::int64_t now);
  std::uint64_t recount(std::uint64_t from);
  // consumer_persist.cc: snapshot hand-over and held ack replies; returns work done.
  std::size_t persist(std::int64_t now);
  std::size_t confirm_written(std::int64_t now);

  group_host& _host;
  release_sink& _owner;
  stream& _stream;  // read only on the owner thread (not at all when remote, after the constructor)
  std::string _sname;
  stream_config _scfg;  // the stream's config when the agent was made
  consumer_link* _link = nullptr;
  std::shared_ptr<consumer_link> _link_keep;
  bool _feed_new = false;
  bool _own_pulls = false;
  std::uint64_t _start_seq = 1;  // the feed brought messages: the machine looks again
  agent_executor* _exec = nullptr;
  consumer_config _cfg;
  std::int64_t _created;
  std::string _state_dir;
  std::unique_ptr<consumer_state_machine> _m;
  std::unique_ptr<storage::file_consumer_store> _store;
  fc_handler _fc{*this};
  pull_handler _pull{*this};
  std::vector<std::uint64_t> _subs;
  std::vector<std::string> _filters;

  // Messages read while the machine ran (delivered from here without a second load).
  std::map<std::uint64_t, storage::stored_msg> _cache;
  // On a consumer thread: pending messages only an earlier filter matched, which the window
  // no longer pages (keep_unmatched_pending); each goes once it is no longer pending.
  std::map<std::uint64_t, storage::stored_msg> _kept;
  // last_per_subject: the per-subject last messages, delivered first.
  std::vector<std::uint64_t> _lps;

  // num_pending bookkeeping: matching messages with seq >= _cnt_from.
  bool _cnt_valid = false;
  std::uint64_t _cnt_from = 0;
  std::uint64_t _cnt = 0;
  std::uint64_t _cnt_upto = 0;  // the highest stored seq the count includes
  std::uint64_t _last_next_from = 0, _last_next_seq = 0;

  std::uint64_t _advanced_to = 0;  // highest stored seq seen
  std::uint64_t _notified = 0;     // highest seq passed to on_stream_advanced
  bool _push_bound = false;
  std::int64_t _next_interest_check = 0;
  std::int64_t _last_delivery = 0;
  std::int64_t _last_ack = 0;
  bool _dirty = false;
  std::int64_t _next_flush = 0;
  std::int64_t _next_sync = 0;  // the next background snapshot to fdatasync
  held_ack_replies _held;       // ack sync replies until their snapshot is written
  std::uint64_t _seen_written = 0;       // snapshot generation last checked
  std::int64_t _confirm_retry_at = 0;    // after a failed write: next try for held replies
  bool _wake_on_written = false;         // the state writer signals the loop's eventfd
  bool _sync_acks = false;               // durability sync: held replies wait for fdatasync
  bool _expired = false;
  bool _stopped = false;
};

}  // namespace js
