#pragma once
// One stream: its store, the publish checks, de-duplication, discard-new
// limits, rollups and PubAcks sent once the store reports the message durable.
#include <cstdint>
#include <deque>

#include "src/base/histogram.h"
#include <limits>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "src/core/service.h"
#include "src/js/atomic_batch.h"
#include "src/js/group_host.h"
#include "src/js/fast_batch.h"
#include "src/js/js_headers.h"
#include "src/js/msg_schedule.h"
#include "src/js/republish.h"
#include "src/js/source_link.h"
#include "src/js/delete_markers.h"
#include "src/js/stream_config.h"
#include "storage/store.h"

namespace js {

class source_link;
struct source_spec;
struct delivery_meta;

// What a stream tells the group that owns it (stream_group): its consumers hear of stored
// and removed messages; interest retention asks whether any consumer's filter matches.
class stream_events {
 public:
  virtual ~stream_events() = default;
  virtual void on_stored(std::uint64_t seq, std::string_view subject) = 0;
  virtual bool consumer_wants(std::string_view subject) = 0;
  // Messages left through limits, expiry, rollups, purges or deletes (their sequences when
  // known; empty = some, unknown which).
  virtual void on_removed(const std::vector<std::uint64_t>& seqs) = 0;
  // Public consumers (mirrors' and sources' direct ones not counted).
  virtual std::size_t consumer_count() const = 0;
};


// For each subject of `next`, its index in `prev` (-1: new), so an update can keep the
// subscriptions of the subjects both hold (pure; the API worker runs it for a big update).
std::vector<std::int64_t> subject_positions(const std::vector<std::string>& prev, const std::vector<std::string>& next);

// StreamInfo's `state` object in nats-server's field order (`subjects` already sorted, as Go
// encodes a map), for a standalone stream and a replicated one alike.
ojson stream_state_json(const storage::stream_state& st, bool deleted_details,
                        const std::map<std::string, std::uint64_t>* subjects, std::uint64_t consumer_count);

class stream final : public core::internal_handler, public copy_target {
 public:
  stream(group_host& host, stream_config cfg, std::int64_t created_ns, std::string dir,
         std::unique_ptr<storage::stream_store> store);
  ~stream() override;

  // Publishes to the stream's subjects.
  void on_msg(const core::inbound_msg& m) override;

  const stream_config& config() const { return _cfg; }
  // Publish reaching the stream -> its PubAck leaving (includes the wait for durability).
  const base::latency_histogram& puback_latency() const { return _puback_latency; }
  // Times a PubAck waited over kWriteStallNs for its write to become durable (each stall
  // counted and logged once, when noticed, and again when writes complete).
  std::uint64_t write_stalls() const { return _write_stalls; }
  static constexpr std::int64_t kWriteStallNs = 500'000'000;
  // A slow disk stalls often: its warning goes out at most once a minute.
  static constexpr std::int64_t kStallLogEveryNs = 60'000'000'000;
  std::int64_t created() const { return _created; }
  const std::string& dir() const { return _dir; }
  storage::stream_store& store() { return *_store; }
  std::uint64_t bytes() const { return _store->stored_bytes(); }

  // Subscribes the stream subjects (and direct get when allowed).
  void subscribe();
  // The same in slices (a big request must not hold the loop): subscribes up to `max` more
  // stream subjects, then the direct get subjects; true once all are subscribed.
  bool subscribe_some(std::size_t max);
  void unsubscribe();
  // The same in slices (a big stream's delete): drops up to `max` more subscriptions; true
  // once none is left.
  bool unsubscribe_some(std::size_t max);
  // Replaces the config (already validated) and applies limits and subscriptions. sliced: a
  // change of subjects is only planned (the subjects both configs hold stay subscribed), and
  // resubscribe_some carries it out in slices; true once the subscriptions follow the config.
  // kept_from: subject_positions(config().subjects, cfg.subjects), computed off the loop for
  // a big update (found here when null).
  void update(stream_config cfg, bool sliced = false, const std::vector<std::int64_t>* kept_from = nullptr);
  bool resubscribe_some(std::size_t max);

  // Store completions, PubAcks, max_age expiry; returns work done.
  std::size_t poll(std::int64_t now_wall);
  void close();

  // StreamState JSON; subjects_filter empty = no subjects map.
  ojson state_json(bool deleted_details, const std::map<std::string, std::uint64_t>* subjects) const;

  // Direct get requests on $JS.API.DIRECT.GET.<stream>[.<subject>] (direct_get.cc).
  void direct_get(const core::inbound_msg& m);

  // The group that owns the stream (unset = no consumers).
  void set_events(stream_events* e) { _events = e; }
  void notify_removed(const std::vector<std::uint64_t>& seqs) {
    if (_events) _events->on_removed(seqs);
  }
  // Earliest wall time at which poll() has work (now when it is not idle); kNever = none.
  static constexpr std::int64_t kNever = std::numeric_limits<std::int64_t>::max();
  std::int64_t next_wakeup(std::int64_t now) const;

  // Mirrors and sources (stream_mirror.cc): the copy_target of its source_links.
  const std::string& copy_stream_name() const override { return _cfg.name; }
  copy_result store_copied(const source_spec& src, bool mirror, std::string_view subject, std::string_view origin_subject,
                           std::string_view headers, std::string_view payload, const delivery_meta& d,
                           std::uint64_t skip) override;
  std::uint64_t taken_seq() const override { return _store->last_seq(); }
  std::uint64_t durable_seq() const override { return _store->durable_seq(); }
  // StreamInfo "mirror" / "sources" (nothing when the stream has neither).
  void add_sources_info(ojson& info, std::int64_t now) const;

 private:
  struct pending_ack {
    std::uint64_t wait_seq;  // ack once the store is durable up to here
    std::string reply;
    std::string body;
    std::int64_t start_ns;   // monotonic: the publish reached the stream
  };
  struct dedup_entry {
    std::uint64_t seq;
    std::int64_t ts;
  };
  class direct_handler final : public core::internal_handler {
   public:
    explicit direct_handler(stream& s) : _s(s) {}
    void on_msg(const core::inbound_msg& m) override { _s.direct_get(m); }

   private:
    stream& _s;
  };

  struct publish_result {
    enum kind { stored, duplicate, failed } what;
    std::uint64_t seq;  // stored: its sequence; duplicate: the original's
    api_error error;
    std::string val;  // a counter stream's new total (the PubAck's "val")
  };
  // A message that passed the stream-level checks: the header checks, dedup, the append.
  publish_result store_msg(std::string_view subject, std::string_view hdr, const js_headers& h,
                           std::string_view payload);
  void reply_error(std::string_view reply, const api_error& e);
  // Mirrors and sources (stream_mirror.cc): links follow the config, polled with the stream.
  void configure_sources();
  std::size_t poll_sources(std::int64_t now);
  void stop_sources();
  void subscribe_mirror_direct();
  void unsubscribe_direct();
  void plan_resubscribe(const std::vector<std::string>& subjects, bool direct_changed,
                        const std::vector<std::int64_t>* kept_from);
  // Fast-ingest batches (stream_fast_batch.cc).
  void on_fast_batch_msg(const core::inbound_msg& m);
  void send_fast_out();
  // Atomic batches (stream_batch.cc).
  void on_batch_msg(const core::inbound_msg& m, std::string_view subject, const js_headers& h);
  std::optional<api_error> check_batch(const std::vector<batch_msg>& msgs, const std::vector<js_headers>& hdrs,
                                       std::vector<std::int64_t>& ttls);
  std::optional<api_error> count_batch(std::vector<batch_msg>& msgs, const std::vector<js_headers>& hdrs);
  void batch_abandoned(std::string_view id, std::string_view reason);
  // Message schedules (stream_schedule.cc): the Nats-Schedule* publish checks (a schedule gets
  // `Nats-Rollup: sub` added: hdr then views `scratch`), the table after a store, firing due
  // schedules through store_msg, and the table rebuilt from the store on start.
  std::optional<api_error> check_schedule(std::string_view subject, const js_headers& h, std::string_view& hdr,
                                          std::string& scratch, std::optional<std::string_view>& rollup);
  void on_schedule_stored(std::uint64_t seq, std::string_view subject, const js_headers& h, std::int64_t now);
  std::size_t fire_schedules(std::int64_t now);
  void load_schedules(std::int64_t now);
  void queue_ack(std::string reply, std::string body, std::uint64_t wait_seq);
  void flush_acks(std::uint64_t durable);
  // Logs a PubAck held past kWriteStallNs by its write (storage slow, or its completions
  // starved: see docs/tuning.md), and the end of that stall.
  void watch_write_stall();

 public:
  // Nothing for poll() to do but time-based work (expiry, batch timeouts, which next_wakeup()
  // names): no acks waiting, nothing unwritten. JetStream then polls the stream only on its sweep.
  bool idle() const { return _acks.empty() && _store->backlog_bytes() == 0; }

 private:
  std::string ack_body(std::uint64_t seq, bool duplicate, std::string_view val = {}) const;
  std::optional<api_error> check_discard_new(std::string_view subject, std::uint64_t size, bool rollup);
  void apply_limits();
  // max_age and TTL expiry, with subject delete markers when configured (stream_markers.cc).
  std::uint64_t expire_msgs(std::int64_t now, std::vector<std::uint64_t>& removed);
  void drop_torn_batch();
  void roll_up(std::string_view value, std::string_view subject, std::uint64_t seq);
  void finish_tail_rollups();
  void trim_after_append();
  void record_msg_id(std::string_view id, std::uint64_t seq, std::int64_t ts);
  void prune_dedup(std::int64_t now);
  void rebuild_dedup();
  void send_direct(std::string_view reply, const storage::stored_msg& m, bool no_hdr,
                   std::string_view extra);

  group_host& _host;
  stream_events* _events = nullptr;
  stream_config _cfg;
  std::int64_t _created;
  std::string _dir;
  std::unique_ptr<storage::stream_store> _store;
  std::vector<std::uint64_t> _sub_ids;  // subjects[i]'s subscription (0: none)
  std::size_t _next_subject = 0;  // subjects [0, _next_subject) are subscribed
  // A sliced update's work (resubscribe_some): subscriptions to drop, subjects to subscribe.
  std::vector<std::uint64_t> _to_unsubscribe;
  std::vector<std::size_t> _to_subscribe;
  bool _direct_subscribed = false;
  std::vector<std::uint64_t> _direct_ids;
  direct_handler _direct{*this};
  std::deque<pending_ack> _acks;
  std::int64_t _msg_start_ns = 0;  // monotonic arrival of the message being handled
  base::latency_histogram _puback_latency;
  std::unordered_map<std::string, dedup_entry> _dedup;
  std::deque<std::pair<std::int64_t, std::string>> _dedup_order;  // (ts, id), oldest first
  std::string _last_msg_id;
  std::int64_t _next_expiry_check = 0;
  bool _closed = false;
  bool _completions_wake_loop = false;
  std::int64_t _last_ack_queued = 0;
  // A write stall in progress (watch_write_stall), and since when (monotonic).
  bool _stalled = false;
  std::int64_t _stall_since_ns = 0;
  std::uint64_t _write_stalls = 0;
  std::int64_t _stall_log_ns = -kStallLogEveryNs;  // the last stall warning (none yet: long ago)
  bool _stall_logged = false;                      // the current stall's warning went out
  subject_rewrites _rewrites;  // subject_transform and republish
  atomic_batch_table _batches;
  link_bus_of<group_host> _link_bus{_host};
  std::vector<std::unique_ptr<source_link>> _links;
  ojson _links_cfg;  // the mirror/sources config the links were built from
  std::optional<api_error>* _copy_error = nullptr;  // set while on_msg stores a sourced message
  schedule_table _schedules;
  bool _firing_schedule = false;  // store_msg is storing what a schedule produced
  fast_batch_table _fast;
  std::vector<fi_send> _fast_out;  // replies the fast-batch table asked for, reused
};

}  // namespace js
