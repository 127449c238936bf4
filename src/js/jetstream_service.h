#pragma once
// The JetStream service object (the hub, the control plane): serves $JS.API, validates,
// persists stream metadata under <store_dir>/jetstream/<account>/streams/<name>/ (one set of
// instances per account with JetStream, each in its account's subjects), and owns the
// stream groups (stream_group.h), which it polls only while they have work: a group that
// receives a message is queued in the active list, one with timed work waits in a deadline
// heap. It is the groups' group_host. With --js_threads N there are N of these, one per
// owner thread (jetstream_owners.h): instance 0 is the control plane and forwards each
// request about a stream to the instance that owns it.
#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "src/base/owner_check.h"
#include "src/core/service.h"
#include "src/js/group_host.h"
#include "src/js/jetstream_owners.h"
#include "src/js/resources.h"
#include "src/js/stream_group.h"
#include "src/js/stream_snapshot.h"
#include "src/shard/loop.h"

namespace storage {
class file_store;
}

namespace js {

class api_worker;
class cluster_streams;

class jetstream final : public core::service, public core::internal_handler, public shard::poller, public group_host {
 public:
  // Instance `index` of `owners` (one instance alone: owners of size 1, index 0).
  jetstream(std::shared_ptr<owner_set> owners, std::size_t index);
  ~jetstream() override;

  bool start(core::service_host& host, std::string& error) override;
  void stop() override;
  void on_msg(const core::inbound_msg& m) override;
  // HTTP /jsz (monitor_jsz.cc): accounts, streams, consumers, config as nats-server's options.
  // With several owners each answers for its own streams; merge_jsz adds the parts up.
  bool monitor_jsz(const std::map<std::string, std::string>& query, ojson& out) override;
  void merge_jsz(std::vector<ojson> parts, ojson& out) const override;
  // HTTP /metrics: per-stream and per-consumer series, PubAck latency histograms.
  void monitor_metrics(std::string& out) override;
  std::size_t poll(base::nanos now) override;
  base::nanos idle_limit(base::nanos now) override;

  core::service_host& host() { return *_host; }

  // group_host: what the groups see of the server (forwarded to the service host).
  std::uint64_t subscribe(std::string_view subject, std::string_view queue, core::internal_handler* h) override {
    return _host->subscribe(subject, queue, h);
  }
  std::uint64_t subscribe_cluster(std::string_view subject, core::internal_handler* h) override {
    return _host->subscribe_cluster(subject, h);
  }
  void unsubscribe(std::uint64_t id) override { _host->unsubscribe(id); }
  void publish(std::string_view subject, std::string_view reply, std::string_view headers,
               std::string_view payload) override {
    _host->publish(subject, reply, headers, payload);
  }
  void deliver(std::string_view to, std::string_view subject, std::string_view reply, std::string_view headers,
               std::string_view payload) override {
    _host->deliver(to, subject, reply, headers, payload);
  }
  bool has_interest(std::string_view subject) override { return _host->has_interest(subject); }
  const base::clock& clk() const override { return _host->clk(); }
  int wake_eventfd() override { return _host->wake_eventfd(); }
  void wake(stream_group& g) override;
  const std::string& domain() const override { return _domain; }
  const std::string& account() const override { return _owners->limits.account; }
  const std::string& server_name() const override { return _host->server_name(); }
  const core::server_options& options() const override { return _host->options(); }
  // Server storage limits and usage (jetstream_checks.cc; the rules are resources.cc's):
  // -1 = unlimited.
  std::int64_t storage_limit(storage_type t) const;
  storage_usage usage(storage_type t, std::string_view except_stream) const;
  // The account's and the server's limits for a stream create (or update of
  // `except_stream`): max_streams (10027), max_consumers (10026), the account's and the
  // server's memory/file reservations (10028/10047).
  // In a cluster the account's replicated streams and other servers' R1 ones count too; a
  // stream of `replicas` reserves its max_bytes on each.
  std::optional<api_error> check_limits(const stream_config& cfg, std::string_view except_stream, bool create,
                                        std::int64_t replicas = 1) const;
  // The hub, in a cluster with other owners: the account's counts elsewhere for their checks.
  void publish_cluster_usage();
  void sync_cluster_pulls();
  // The account's consumers-per-stream cap with the stream's own (nats-server 2.9: the
  // smaller of the two that are set; <= 0: none).
  std::int64_t max_consumers_of(const stream_config& cfg) const;
  void report_usage(storage_type t, std::int64_t delta) override {
    _owners->used_bytes[storage_index(t)].fetch_add(delta, std::memory_order_relaxed);
    _owners->server->used[storage_index(t)].fetch_add(delta, std::memory_order_relaxed);
  }
  std::int64_t used_bytes(storage_type t) const {
    return _owners->used_bytes[storage_index(t)].load(std::memory_order_relaxed);
  }
  bool storage_exhausted(storage_type t) const override;
  std::optional<api_error> account_limit_error(storage_type t, std::uint64_t size) const override;
  // Open fast-ingest batches across every stream of this owner thread.
  std::size_t* fast_batch_counter() override { return &_fast_batches_open; }
  // --consumer_threads: by a hash of stream and consumer name over the account's threads.
  consumer_thread* pick_consumer_thread(const consumer_config& c) override;
  void post_to_owner(std::function<void()> fn) override { _host->call(std::move(fn)); }
  bool consumers_subscribe_pulls() const override { return !_owners->consumer_threads.empty(); }
  struct big_request;  // a big STREAM.CREATE or UPDATE in flight (big_request.h)
  struct big_info;     // a STREAM.INFO listing many subjects in flight (big_request.h)

 private:
  using handler = void (jetstream::*)(std::string_view token, const core::inbound_msg& m);

  // API handlers (stream_api.cc); token = the <stream> part of the subject, or empty.
  void api_info(std::string_view token, const core::inbound_msg& m);
  void api_create(std::string_view token, const core::inbound_msg& m);
  void api_update(std::string_view token, const core::inbound_msg& m);
  // An R1 stream's update to num_replicas > 1 in a cluster (cluster_stream_update.cc).
  void scale_up_r1(stream& s, const stream_config& cfg, std::string_view reply);
  void r1_scaled(const std::string& name, bool drop);
  void api_stream_info(std::string_view token, const core::inbound_msg& m);
  void api_delete(std::string_view token, const core::inbound_msg& m);
  void api_names(std::string_view token, const core::inbound_msg& m);
  void api_list(std::string_view token, const core::inbound_msg& m);
  void api_purge(std::string_view token, const core::inbound_msg& m);
  void api_msg_get(std::string_view token, const core::inbound_msg& m);
  void api_msg_delete(std::string_view token, const core::inbound_msg& m);
  // Snapshot and restore (stream_snapshot.cc); the restore is built by finish_restore.
  friend class snapshot_sessions;
  void api_snapshot(std::string_view token, const core::inbound_msg& m);
  void api_restore(std::string_view token, const core::inbound_msg& m);
  // A stream the hub holds (no cluster, or R1 in one): nothing to step down or move.
  void api_stream_stepdown(std::string_view token, const core::inbound_msg& m);
  void api_peer_remove(std::string_view token, const core::inbound_msg& m);
  ojson finish_restore(const stream_config& cfg, const std::string& data);

  // Consumer API (consumer_api.cc); `rest` = the subject after "$JS.API.CONSUMER.".
  // Returns false when the subject is not a consumer API subject.
  bool dispatch_consumer(std::string_view rest, const core::inbound_msg& m);
  void api_consumer_create(std::string_view stream_name, std::string_view name, std::string_view filter,
                           bool durable_api, bool subject_has_name, const core::inbound_msg& m);
  void api_consumer_info(std::string_view stream_name, std::string_view name, const core::inbound_msg& m);
  void api_consumer_delete(std::string_view stream_name, std::string_view name, const core::inbound_msg& m);
  void api_consumer_names(std::string_view stream_name, const core::inbound_msg& m, bool list);
  void api_consumer_pause(std::string_view stream_name, std::string_view name, const core::inbound_msg& m);
  void api_consumer_unpin(std::string_view stream_name, std::string_view name, const core::inbound_msg& m);
  void api_consumer_reset(std::string_view stream_name, std::string_view name, const core::inbound_msg& m);  // consumer_reset.cc
  consumer_agent* find_consumer(std::string_view stream_name, std::string_view name);
  void delete_consumer(stream_group& g, const std::string& name, bool advise);
  bool save_consumer_meta(stream& s, const consumer_agent& c, std::string& error);
  bool forget_consumer_meta(stream& s, const std::string& name, std::string& error);
  void load_consumers(stream_group& g);
  std::string consumer_dir(const stream& s, const std::string& name) const;
  void consumer_advisory(std::string_view action, const std::string& stream, const std::string& consumer);

  // The active set: groups with work are polled each turn, the others wait for a message or
  // their deadline.
  void place(std::unique_ptr<stream_group> g);
  // Out of the placement table; the group lives until the next poll.
  void retire(const std::string& name);
  std::size_t poll_groups(std::int64_t now);

  // ---- several owners (jetstream_owners.h)
  struct deferred_msg;
  bool is_hub() const { return _index == 0; }
  const placement_table& table() const { return _owners->table; }
  // Hub: the table's writes, which keep the server-wide reservations with it.
  void table_put(const std::string& name, placed_stream p);
  void table_erase(placement_table::iterator it);
  // Hub: a request about a stream another owner holds (or will hold: a create placed there)
  // goes to it as a copied message; false when it is answered here.
  bool forward(std::string_view rest, const core::inbound_msg& m);
  // Owner: a request the hub forwarded; `changes` = a stream create/update/delete, whose
  // outcome is reported back to the hub's table.
  void on_forwarded(const deferred_msg& d, bool changes);
  // After a create/update/delete of `name` here: once no big request is pending, the
  // stream's config (or its absence) goes into the hub's table (before anything deferred
  // behind it runs).
  void report_later(std::string_view name);
  void maybe_report();
  // Hub: the table learns what owner `owner` now holds as `name`; a forwarded change ends.
  // `registry_subjects`: the copy of cfg's subjects the subject registry keeps when they
  // changed (made by the reporting owner, not on the hub's loop).
  void apply_report(const std::string& name, std::size_t owner, std::optional<stream_config> cfg,
                    std::vector<std::string> registry_subjects);
  // Hub: every owner restored its streams (their configs join the table once).
  bool all_loaded();
  // Hub: STREAM.LIST pages gather stream infos from the owners holding them.
  void list_streams(std::string reply, ojson head, std::vector<std::string> names);
  // "$JS.API" and, with a domain, "$JS.<domain>.API".
  std::vector<std::string> api_prefixes() const;
  // Runs `fn` on owner `to` in its next poll, after its rings were drained.
  void post_task(std::size_t to, std::function<void()> fn);
  // Consumers added or removed here (account INFO sums them over the owners).
  void count_consumers(std::int64_t delta) { _consumer_count.fetch_add(delta, std::memory_order_relaxed); }

  void respond(std::string_view reply, const ojson& j);
  // The request reached no stream or consumer: the 503 no-responders status nats-server
  // (2.10.26+) sends, to publishers that take it.
  void no_responders(const core::inbound_msg& m);
  // META.LEADER.STEPDOWN and SERVER.REMOVE from this account (not the system account).
  void refuse_operator_request(std::string_view rest);
  void respond_error(std::string_view reply, std::string_view type, const api_error& e,
                     const ojson& extra = ojson::object());
  // `config_dump` (already serialised, e.g. by the API worker) is spliced in by the caller:
  // the object then holds "config": null.
  ojson stream_info_json(stream& s, bool deleted_details, std::string_view subjects_filter,
                         std::uint64_t offset, bool with_type_fields, bool config_placeholder = false);
  void advisory(std::string_view action, const std::string& stream);

  // Persistence (jetstream_storage.cc).
  std::string streams_dir() const;
  bool save_meta(stream& s, std::string& error);
  // The same for a config already serialised (to_json + created, e.g. by the API worker).
  bool save_meta_text(stream& s, std::string text, std::string& error);
  // File streams keep their config and their durable consumers' configs as meta records in
  // the stream's own log (one group-commit write, no file + fsync + rename + dir fsync);
  // memory streams keep meta.inf files.
  storage::file_store* file_store_of(stream& s);
  bool write_store_meta(stream& s, const std::string& key, std::string value, std::string& error);
  std::unique_ptr<storage::file_store> open_file_store(const std::string& name, const std::string& dir,
                                                       std::string& error);
  std::unique_ptr<storage::stream_store> open_store(const stream_config& cfg, const std::string& dir,
                                                    std::string& error);
  std::unique_ptr<stream_group> make_stream(stream_config cfg, std::int64_t created, std::string& error,
                                            std::unique_ptr<storage::stream_store> store = nullptr);
  void load_streams();
  stream* find(std::string_view name);
  stream_group* group_of(std::string_view name);
  // The checks against the other streams (jetstream_checks.cc).
  std::optional<api_error> check_overlap(const stream_config& cfg);
  // Mirror rules that need the origin; may align cfg.mirror_direct.
  std::optional<api_error> check_mirror_origin(stream_config& cfg);
  std::optional<api_error> check_origins(const stream_config& cfg) const;
  bool mirror_serves_direct(std::string_view origin) const;

  // Big requests (big_request.cc): a STREAM.CREATE/UPDATE body of kBigRequestBytes or more is
  // decoded and checked on the API worker and applied in slices across loop turns, so it
  // never holds the loop (and the clients it serves) for long. Meanwhile requests that
  // could depend on it wait in `_deferred`, in arrival order.
  struct deferred_msg {
    std::string subject, reply, headers, payload;
    std::uint64_t client_id = 0;
    bool no_responders = false;
    deferred_msg() = default;
    explicit deferred_msg(const core::inbound_msg& m)
        : subject(m.subject), reply(m.reply), headers(m.headers), payload(m.payload), client_id(m.client_id),
          no_responders(m.no_responders) {}
    core::inbound_msg view() const;
  };
  bool must_wait(std::string_view api_rest) const;
  void start_big_request(std::string_view token, const core::inbound_msg& m, bool update);
  std::size_t poll_big();
  // Hub: one slice (kBigSliceNs) of a big change to the subject registry; true while one is left.
  bool step_registry();
  std::size_t apply_big_request();
  bool start_applying_big_request();
  void answer_big_request(bool splice_here);
  bool start_answer(bool splice_here);
  // The end of a STREAM.DELETE (stream_api.cc): closed, retired, its directory removed, answered.
  void finish_delete(const std::string& name, std::string_view reply);
  // A STREAM.INFO over many subjects (big_info.cc, when wants_big_info): answered from
  // poll_big_info once the worker paged it.
  void start_big_info(stream& s, std::string_view filter, std::uint64_t offset, ojson info, std::string_view reply);
  std::size_t poll_big_info();
  bool list_some_subjects(big_info& job);
  std::unique_ptr<api_worker> _worker;
  std::unique_ptr<big_request> _big;
  std::deque<std::unique_ptr<big_info>> _infos;  // answered in this order
  std::deque<deferred_msg> _deferred;
  bool _replaying = false;

  core::service_host* _host = nullptr;
  std::shared_ptr<owner_set> _owners;
  std::size_t _index = 0;
  base::thread_owner _thread;  // the owner thread (debug builds check entry points run on it)
  bool _all_loaded = false;
  // Hub: the stream whose forwarded create/update/delete has not reported back yet; stream
  // changes and requests naming it wait meanwhile (the owner reads the table for its checks).
  std::optional<std::string> _inflight;
  std::vector<std::string> _report;  // streams this instance changed, to report once settled
  // A big create/update's copies for the report, made on the API worker (big_request.h).
  struct report_copies {
    stream_config cfg;
    std::vector<std::string> subjects;  // empty: the subjects did not change
  };
  std::unordered_map<std::string, report_copies> _report_copies;
  int _depth = 0;                    // on_msg calls on the stack
  std::vector<std::function<void()>> _tasks;  // posted by other owners (post_task)
  std::string _domain;
  std::size_t _fast_batches_open = 0;  // declared before the streams, which count down in it
  // Forwarded requests are counted by the hub when it forwards them (so INFO, served by the
  // hub, already counts a request its owner answered).
  std::atomic<std::uint64_t> _api_total{0};
  std::int64_t _operator_warned_ns = 0;  // refuse_operator_request's last warning
  std::atomic<std::uint64_t> _api_errors{0};
  std::atomic<std::int64_t> _consumer_count{0};
  // This owner's groups: stream name -> group (the hub's table places every owner's).
  std::map<std::string, std::unique_ptr<stream_group>, std::less<>> _streams;
  // Deleted streams live until the next poll(): a deletion can happen inside one of their
  // own calls (a pull status reply sent to an API subject).
  std::vector<std::unique_ptr<stream_group>> _retired_streams;
  active_set<stream_group> _active;
  // The hub's $JS.API subscriptions (hub_api_patterns under each of api_prefixes).
  std::vector<std::uint64_t> _api_subs;
  // Messages this instance's own subscriptions received (API requests, pulls), for /metrics.
  std::atomic<std::uint64_t> _msgs_in{0};
  // With several owners: each stream's MSG.NEXT subscriptions.
  std::map<std::string, std::vector<std::uint64_t>, std::less<>> _next_subs;
  std::unique_ptr<snapshot_sessions> _snapshots;  // created by the first snapshot or restore
  // Hub in a cluster with a meta group: the replicated streams (cluster_streams.h).
  std::unique_ptr<cluster_streams> _cluster;
  std::uint64_t _cluster_usage_version = 0;  // the meta version publish_cluster_usage counted
  // The hub's pull subscriptions for the cluster's streams (sync_cluster_pulls).
  std::map<std::string, std::vector<std::uint64_t>, std::less<>> _cluster_pull_subs;
  std::uint64_t _pulls_version = 0;
};

}  // namespace js
