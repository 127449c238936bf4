#pragma once
// Replicated streams in a clustered server (issue 11): the wiring between the meta group,
// the stream groups on the replication thread (core::cluster_replication) and the pure
// replicated logic (meta_state, placement, stream_replica, cluster_info). Owned by the hub
// (JetStream instance 0) and run on its thread; every replicated stream of this server lives
// here, not in the hub's stream groups.
//
// - Events (the meta group's committed entries, the stream groups' entries and role
//   changes) arrive from pg-repl on one bounded SPSC ring and are applied in poll().
// - Every server's hub subscribes `$PG.JSC.<server>.>` announced to the routes: the cluster's
//   own requests to this server (an API request forwarded to the meta leader or a stream's
//   leader, the meta leader's "answer this create once you lead" notice).
// - Publishes go to pg-repl as proposals on a bounded SPSC ring (propose_async), no wait;
//   PubAcks leave as their entries are applied; a full window or ring makes them wait in the
//   stream's publish_backlog.
// - A stream's leader (once its leader_start is applied) subscribes the stream's subjects,
//   announced to the routes, so publishes from clients on any server reach it; followers do
//   not subscribe (they take no writes), so nothing is forwarded twice.
#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "src/base/spsc_ring.h"
#include "src/core/cluster_replication.h"
#include "src/core/service.h"
#include "src/js/meta_state.h"
#include "src/js/placement.h"
#include "src/js/snapshot_policy.h"
#include "src/js/api_errors.h"
#include "src/js/stream_config.h"

namespace js {

// stream_replica.h is included by the .cc only.
struct replica_reply;
enum class submit_status : std::uint8_t;
class cluster_consumers;
class cluster_event_router;
struct waiting_publish;

// A STREAM.INFO request's deleted_details, subjects_filter and offset (as the hub reads them).
struct stream_info_request {
  bool deleted_details = false;
  std::string subjects_filter;
  std::uint64_t offset = 0;
};

class cluster_streams final : public core::internal_handler {
 public:
  // `account`: the account served (its host's sublists); `router` is shared by every
  // account's instance on this server (cluster_event_router.h).
  cluster_streams(core::service_host& host, core::cluster_replication& repl, std::string domain, std::string account,
                  std::shared_ptr<cluster_event_router> router);
  ~cluster_streams() override;
  cluster_streams(const cluster_streams&) = delete;
  cluster_streams& operator=(const cluster_streams&) = delete;

  // Joins the event router (the first account sets the replication thread's event sink) and
  // subscribes this server's request subject in the account.
  void start();
  const std::string& account() const { return _account; }
  // From the router: a meta group event (every account sees each), or an event of a group
  // this account holds (holds_group).
  void on_meta_event(const core::group_event& ev, std::int64_t now_ns) { apply_meta(ev, now_ns); }
  void on_group_event(core::group_event& ev, std::int64_t now_ns) { on_event(ev, now_ns); }
  bool holds_group(std::uint64_t group) const;
  // `rest` = the API subject after "$JS.API."; true when it concerns a replicated stream
  // (or a create with num_replicas > 1) and was handled here.
  bool on_api(std::string_view rest, const core::inbound_msg& m) { return on_api(rest, m, 0); }
  std::size_t poll(std::int64_t now_ns);
  // Requests of the cluster to this server ($PG.JSC.<server>.<hops>.<what>).
  void on_msg(const core::inbound_msg& m) override;
  // Replicated streams' names and subjects (every server knows them from the meta log).
  // with_subjects false: the names alone (no config is parsed).
  std::vector<std::pair<std::string, std::vector<std::string>>> names(bool with_subjects = true) const;
  bool is_replicated(std::string_view name) const;
  // STREAM.LIST's entries for these replicated streams (cluster_stream_queries.cc): each
  // stream's leader is asked for its StreamInfo, as nats-server's meta leader asks; `done`
  // runs on this thread with the answers (name -> info, no type or paging fields) and, in
  // the order given, the names whose leader did not answer within 4 s or answered an error
  // (nats-server's `missing`). Called at once when every leader is this server.
  using info_done = std::function<void(std::map<std::string, nlohmann::ordered_json>& infos,
                                       std::vector<std::string>& missing)>;
  void stream_infos(const std::vector<std::string>& names, info_done done);
  // $JS.API.INFO's part of the replicated streams, each counted once: streams and consumers
  // from the meta log, bytes from this server's replica or, for a stream without one here,
  // its leader's StreamInfo (nothing for one that does not answer).
  struct account_usage {
    std::uint64_t streams = 0, consumers = 0, memory = 0, storage = 0;
  };
  void usage(std::function<void(const account_usage&)> done);
  // /jsz (monitor_jsz.cc): what this server holds of each replicated stream it has a replica of,
  // in name order; the cluster object and config only with `details`. Read-only.
  struct monitor_entry {
    std::string name;
    std::int64_t created_ns = 0;
    bool memory = false;        // the config's storage (replicas keep memory stores either way)
    std::size_t replicas = 0;
    std::uint64_t group_id = 0;
    std::uint64_t bytes = 0, messages = 0;
    nlohmann::ordered_json state, cluster, config;
  };
  std::vector<monitor_entry> monitor_streams(std::int64_t now_ns, bool details);

  // The hub's R1 stream asked for num_replicas > 1 (a STREAM.UPDATE already checked as an R1
  // update; the stream is unsubscribed, so these are all its messages): it becomes a
  // replicated stream seeded from this server (cluster_stream_update.cc).
  struct r1_scale {
    stream_config cfg;  // the new config
    std::int64_t created_ns = 0;
    std::uint64_t last_seq = 0;
    std::vector<repl_entries::msg> msgs;
    // Its consumers, as scale_states() gives them (name, config, created, replicas, state).
    nlohmann::ordered_json consumers = nlohmann::ordered_json::array();
  };
  void scale_up_r1(r1_scale s, std::string_view reply);
  // Set by the hub: drop = true once the replicated stream holds the messages (remove the R1
  // stream), false when the scale up failed (subscribe it again).
  std::function<void(const std::string& name, bool drop)> on_r1_scaled;

  // The hub's own R1 streams, known cluster-wide (cluster_r1_streams.cc): each server reports
  // its set to the meta log (an r1_streams entry when it changed), so every server sends a
  // request about another server's R1 stream there, lists it and counts it, as nats-server
  // serves every stream from every server. The hub says how to read its table, and when it
  // changed.
  struct hub_view {
    std::function<std::vector<repl_entries::r1_stream>()> list;  // in name order
    std::function<bool(std::string_view)> holds;
    // The account's limits (jetstream::check_limits) for a stream of `replicas`: the meta
    // leader's check of a replicated create or update.
    std::function<std::optional<api_error>(const stream_config&, std::string_view except, bool create,
                                           std::int64_t replicas)>
        check_limits;
    std::int64_t max_ack_pending = -1;  // the account's (consumers' default cap and ceiling)
    std::int64_t max_consumers = -1;    // the account's, per stream
  };
  // What the account's limits count beyond the hub's own table: the replicated streams (each
  // reserving max_bytes on every replica) and other servers' R1 streams (counted; their
  // reservations are their servers'). `except`: a stream being updated.
  struct limit_usage {
    std::size_t streams = 0;
    std::int64_t reserved[2] = {0, 0};  // by storage_index (memory, file)
  };
  limit_usage limit_usage_of(std::string_view except) const;
  // Counts applied meta entries (and restores): what was counted from the table is stale
  // when it moved.
  std::uint64_t meta_version() const { return _meta_version; }
  void set_hub_view(hub_view v);
  // A create's subjects against the cluster's other streams (nats-server's 10065): the
  // replicated ones and the other servers' R1 ones; with_hub: this server's R1 ones too
  // (a replicated create at the meta leader; the hub checks its own registry itself).
  bool overlaps_cluster_streams(const stream_config& cfg, bool with_hub) const;
  void hub_streams_changed() { _r1_dirty = true; }

 private:
  struct hosted;
  struct sub_handler;
  struct replica_links;
  // A replicated stream's mirror or sources (cluster_stream_sources.cc): run by its leader
  // while it serves (after every event), polled each turn, reported in its StreamInfo.
  void sync_links(hosted& h, bool serving, std::int64_t now_ns);
  std::size_t poll_links(hosted& h, std::int64_t now_ns);
  void add_links_info(const hosted& h, nlohmann::ordered_json& info, std::int64_t now_ns) const;
  // A replicated create's mirror and sources against the replicated streams (10052 cycle,
  // external prefixes).
  std::optional<api_error> check_cluster_origins(const stream_config& cfg) const;
  // A new group's first messages, on its origin (cluster_stream_update.cc).
  struct seed {
    std::vector<repl_entries::msg> msgs;
    std::uint64_t last_seq = 0;
    std::int64_t deadline_ns = 0;
    bool r1 = false;  // from the hub's R1 stream
  };
  struct pending_reply {
    std::string reply;
    std::int64_t deadline_ns = 0;
  };

  bool on_api(std::string_view rest, const core::inbound_msg& m, int hops);
  void api_create(std::string_view name, const core::inbound_msg& m, int hops);
  void api_delete(std::string_view name, const core::inbound_msg& m, int hops);
  void api_update(std::string_view name, const core::inbound_msg& m, int hops);
  // INFO, PURGE, MSG.GET, MSG.DELETE, LEADER.STEPDOWN: served by the stream's leader, sent on
  // to it from elsewhere (cluster_stream_queries.cc).
  void api_at_leader(std::string_view what, std::string_view name, const core::inbound_msg& m, int hops);
  void serve_at_leader(hosted& h, std::string_view what, const core::inbound_msg& m);
  void serve_msg_delete(hosted& h, const core::inbound_msg& m);
  // STREAM.PEER.REMOVE at the stream's leader (cluster_stream_update.cc): the peer is replaced
  // by a server the stream is not on, or the group shrinks when there is none (10075), through
  // the same seeded new group as a change of num_replicas. A leader asked to remove itself
  // steps down and sends the request on to the next leader.
  void serve_peer_remove(hosted& h, const core::inbound_msg& m);
  // $JS.API.SERVER.REMOVE at the meta leader (cluster_stream_update.cc): a server_remove meta
  // entry; once applied every server stops adding it to the meta group, and the meta leader
  // asks each of its streams' leaders for a PEER.REMOVE until its assignment lacks it.
  void api_server_remove(const core::inbound_msg& m, int hops);
  // META.LEADER.STEPDOWN and SERVER.REMOVE from the system account ($PG.JSC.<self>.<hops>.SYS.*).
  void on_operator_request(std::string_view rest, const core::inbound_msg& m, int hops);
  void on_server_removed(const std::string& name, std::int64_t now_ns);
  void poll_remaps(std::int64_t now_ns);
  void queue_remaps(const std::string& server, std::int64_t now_ns);
  // The server to send a request for the stream's leader to ("" when none is known).
  std::string leader_target(std::string_view name);
  // Gathers (stream_infos): an answer ($PG.JSC.<self>.0.LISTED.<id>.<index>), the end.
  struct info_gather;
  void on_listed(std::string_view rest, const core::inbound_msg& m);
  void finish_gather(std::uint64_t id);
  // Each poll: gathers past their deadline end, direct-get responders follow the replicas.
  std::size_t poll_queries(std::int64_t now_ns);
  // Direct gets (cluster_direct_get.cc): true when the stream is replicated and allows them
  // (its replicas answer; the hub stays silent), false to let the hub answer as for R1.
  struct direct_responder;
  bool direct_allowed(std::string_view name);
  void on_direct_get(const std::string& name, const core::inbound_msg& m);
  std::size_t sync_direct(std::int64_t now_ns);
  // Another server's R1 streams (cluster_r1_streams.cc). r1_home: the server holding the
  // stream when that is not this one ("" for a replicated or unknown name).
  std::string r1_home(std::string_view name) const;
  // An API request about another server's R1 stream goes there (true: sent).
  bool forward_r1(std::string_view rest, const core::inbound_msg& m, int hops);
  // A request sent here for the hub's stream: republished on $JS.API for the hub's handlers.
  bool serve_r1_here(std::string_view rest, const core::inbound_msg& m);
  // Reports this server's set when it differs from the log's; the meta leader proposes it.
  void sync_r1(std::int64_t now_ns);
  void on_r1_report(const core::inbound_msg& m);
  // Sends `m` on to `server` as $PG.JSC.<server>.<hops+1>.<what>, keeping its reply.
  void forward(const std::string& server, std::string_view what, const core::inbound_msg& m, int hops);
  bool meta_leader(std::string& leader) const;
  // Placement (cluster_placement.cc): the meta group's members as candidates (this server
  // first, removed servers and `leave_out` left out) with the tags each reported, and a
  // request for `replicas` peers honouring the config's placement {cluster, tags}.
  std::vector<placement_candidate> placement_candidates(const std::string& leave_out = {}) const;
  placement_request placement_of(const stream_config& cfg, unsigned replicas) const;
  // An R1 create whose placement this server does not meet goes to a server that does (true:
  // sent on, or refused with 10005 when none does).
  bool place_r1_create(std::string_view name, const stream_config& cfg, const core::inbound_msg& m, int hops);

  void on_event(core::group_event& ev, std::int64_t now_ns);
  void maybe_snapshot(hosted& h);
  void apply_meta(const core::group_event& ev, std::int64_t now_ns);
  void apply_meta_changes(const std::vector<meta_change>& mine, std::uint64_t meta_index, bool scaled,
                          std::int64_t now_ns);
  void restore_meta(const core::group_event& ev, std::int64_t now_ns);
  void maybe_snapshot_meta(std::uint64_t index);
  // Every instance applies the whole meta log; these keep what concerns this account.
  void keep_own_account(std::vector<meta_change>& mine) const;
  bool is_own_account(const repl_entries::meta_op& op) const;
  // meta_index: the meta entry the assignment comes from (its config's version).
  void host_stream(const repl_entries::stream_assign& a, std::uint64_t meta_index, seed* from = nullptr);
  void drop_stream(const std::string& name, bool silent = false);
  void update_hosted(const repl_entries::stream_assign& a, std::uint64_t meta_index, std::int64_t now_ns);
  // After the group applied entries: its config as the log has it (subjects, limits, INFO).
  void follow_config(hosted& h);
  // A change of num_replicas (cluster_stream_update.cc): asked on the stream's leader (or the
  // R1 stream's server), which stops taking writes and asks the meta leader for a new group
  // seeded from its messages.
  void api_scale(std::string_view name, const nlohmann::ordered_json& cfg_json, const core::inbound_msg& m,
                 int hops);
  // To the meta leader; refused (and answered) here when none is known.
  void send_scale(const std::string& request, std::string_view reply);
  void on_scale(std::string_view request, std::string_view reply);  // on the meta leader
  void unseed(const std::string& name);  // the scale was refused: the origin serves again
  void poll_scaling(std::int64_t now_ns);
  void answer_updates(hosted& h, std::int64_t now_ns);
  void after_event(hosted& h, std::int64_t now_ns);
  void track_api_reply(hosted& h, submit_status st, std::uint64_t token, std::string_view reply,
                       std::string_view type, std::vector<replica_reply>& out);
  void publish_replies(hosted& h, std::vector<replica_reply>& out);
  void on_publish(hosted& h, const core::inbound_msg& m);
  // False: the replica could not hand the proposal over (busy); nothing was done.
  bool submit_publish(hosted& h, waiting_publish& p);
  // A fast-ingest batch's message (cluster_stream_fast_batch.cc): the standalone stream's
  // checks and fast_batch_table, each message a proposal; flow acks and the final PubAck once
  // the stream's group applied (committed) it. False as submit_publish (p remembers that the
  // table took it). The table goes when this server stops leading.
  bool submit_fast(hosted& h, waiting_publish& p);
  void fast_applied(hosted& h);
  void publish_error(hosted& h, std::string_view reply, const api_error& e);
  std::size_t drain_backlog(hosted& h);
  void refuse_publish(hosted& h, std::string_view reply);

  // STREAM.INFO's body with the request's fields; a create's reply has no paging fields
  // (paged false).
  nlohmann::ordered_json stream_info(hosted& h, std::int64_t now_ns, bool paged = true,
                                     const stream_info_request& req = stream_info_request());
  nlohmann::ordered_json cluster_json_of(hosted& h, std::int64_t now_ns);
  void respond(std::string_view reply, const nlohmann::ordered_json& j);
  void respond_error(std::string_view reply, std::string_view type, const api_error& e,
                     const nlohmann::ordered_json& extra = nlohmann::ordered_json::object());

  core::service_host& _host;
  core::cluster_replication& _repl;
  std::string _domain;
  std::string _self;
  meta_state _meta;
  // The helper thread encoding a stream's snapshot from a clone of its store (maybe_snapshot).
  struct snapshot_encoder {
    std::thread thread;
    std::atomic<bool> done{false};
  };
  std::unique_ptr<snapshot_encoder> _encoder;
  snapshot_policy _meta_snapshots{0, snapshot_policy::meta_floor()};  // the meta log compacts too
  std::size_t _meta_snapshot_bytes = 0;  // the last snapshot's size (the policy's state size)
  std::string _account;
  std::uint64_t _meta_version = 1;
  bool _primary = false;  // the router's primary account: takes the meta snapshots
  std::shared_ptr<cluster_event_router> _router;
  std::uint64_t _sub = 0;
  std::map<std::string, std::unique_ptr<hosted>, std::less<>> _hosted;  // streams with a replica here
  std::size_t _fast_open = 0;  // fast-ingest batches open on the replicated streams led here
  std::map<std::uint64_t, hosted*> _by_group;
  // On the meta leader: creates and deletes waiting for their meta entry to apply.
  std::map<std::string, pending_reply, std::less<>> _creating, _deleting;
  // Creates this server answers once it leads the stream (the meta leader's notice).
  std::map<std::string, std::vector<pending_reply>, std::less<>> _answer_when_leading;
  // On the meta leader: updates waiting for their meta entry to apply.
  std::map<std::string, pending_reply, std::less<>> _updating;
  // Updates this server answers once it leads the stream with this config_json applied.
  struct pending_update {
    std::string reply;
    std::string config_json;
    std::int64_t deadline_ns = 0;
    bool origin = false;  // a seeded group's origin: kept while others lead (they step down)
  };
  std::map<std::string, std::vector<pending_update>, std::less<>> _answer_when_current;
  // PEER.REMOVE requests a leader that removes itself sends on once another server leads.
  struct pending_removal {
    std::string reply, payload;
    std::int64_t deadline_ns = 0;
  };
  std::map<std::string, pending_removal, std::less<>> _removing;
  // On the meta leader: streams still holding a removed server (stream -> that server).
  struct remap {
    std::string server;
    std::int64_t next_try_ns = 0, deadline_ns = 0;
  };
  std::map<std::string, remap, std::less<>> _remaps;
  bool _remapping = false;  // this server led the meta group at the last poll_remaps
  std::int64_t _next_remap_poll_ns = 0;
  // On the origin of an R1 stream's scale up: its messages, until the assignment applies.
  std::map<std::string, seed, std::less<>> _r1_seeds;
  // The consumers of the replicated streams (cluster_consumers.h): their API requests, meta
  // entries and group events.
  std::unique_ptr<cluster_consumers> _consumers;
  // STREAM.LIST / account INFO gathers in flight, by id (cluster_stream_queries.cc).
  std::uint64_t _next_gather = 1;
  std::map<std::uint64_t, std::unique_ptr<info_gather>> _gathers;
  // Direct-get responders of the replicas here, by stream (cluster_direct_get.cc), and each
  // replicated stream's allow_direct as of its assigned config (no parse per request).
  std::map<std::string, std::unique_ptr<direct_responder>, std::less<>> _direct;
  struct direct_flag {
    std::string config_json;
    bool allow = false;
  };
  std::map<std::string, direct_flag, std::less<>> _direct_flags;
  // The hub's R1 streams (cluster_r1_streams.cc): its view, whether the set may differ from
  // the log's, when to look again anyway, and until when the last report is awaited.
  hub_view _hub;
  bool _r1_dirty = true;
  bool _r1_synced = false;  // the log said what the hub holds at the last comparison
  std::vector<std::string> _r1_reported_tags;  // the server_tags of the last comparison
  std::int64_t _r1_next_check_ns = 0, _r1_report_until_ns = 0;
};

}  // namespace js
