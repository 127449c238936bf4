#pragma once
// Consumers of replicated streams in a clustered server (issue 11): the wiring between the
// meta group's consumer assignments, each consumer's own Raft group on the replication thread
// and the pure consumer_replica. Owned by cluster_streams and run on the hub's thread; it sees
// the group events and API requests cluster_streams does not take itself.
//
// - A consumer has its own group, as in nats-server: its peers are the first num_replicas
//   (default: all) of its stream's peers, so every peer holds a replica of the stream to read
//   from; its entries (consumer_delivered / consumer_acked / consumer_leader_start) never
//   wait behind the stream's publishes, and its leader can differ from the stream's.
// - CREATE, DURABLE.CREATE and DELETE go to the meta leader, which checks the config against
//   the stream's, places the group and proposes the assignment; the consumer's leader answers
//   the create once its consumer_leader_start is applied. An update (CREATE of an existing
//   consumer with another allowed config) and PAUSE (pause_until, in the config) are a
//   consumer_update meta entry; UNPIN and RESET (a consumer_reset entry of its group) are
//   served by the consumer's leader. INFO, MSG.NEXT and LEADER.STEPDOWN
//   are forwarded to the consumer's leader ($PG.JSC.<server>.<hops>.CONSUMER...), NAMES and
//   LIST are answered from the meta log (LIST's state from a replica here, when there is one).
// - Only the leader subscribes the consumer's ack (and flow-control) subjects, announced to
//   the routes, so an ack from any server reaches it; an ack-sync reply leaves once the ack's
//   entry is applied on the leader (a majority holds it).
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "src/core/cluster_replication.h"
#include "src/core/service.h"
#include "src/js/api_errors.h"
#include "src/js/consumer.h"
#include "src/js/consumer_config.h"
#include "src/js/meta_state.h"
#include "src/js/stream_config.h"
#include "storage/consumer_state.h"
#include "storage/store.h"

namespace js {

// A consumer's state in a scale request (JSON, between servers) and as a meta entry carries it.
nlohmann::ordered_json consumer_seed_json(const repl_entries::consumer_seed& s);
std::optional<repl_entries::consumer_seed> consumer_seed_from_json(const nlohmann::json& j);
repl_entries::consumer_seed to_seed(const consumer_snapshot& s);
repl_entries::consumer_seed to_seed(const storage::consumer_state& s);  // an R1 agent's durable state

class cluster_consumers {
 public:
  // A replicated stream's replica on this server (null members: not hosted here).
  struct stream_ref {
    const stream_config* cfg = nullptr;
    storage::stream_store* store = nullptr;
  };
  using stream_lookup = std::function<stream_ref(const std::string& stream)>;

  // `account`: the account served (cluster_streams.h); the meta table is every account's.
  cluster_consumers(core::service_host& host, core::cluster_replication& repl, const meta_state& meta,
                    std::string domain, std::string account, stream_lookup streams);
  ~cluster_consumers();
  cluster_consumers(const cluster_consumers&) = delete;
  cluster_consumers& operator=(const cluster_consumers&) = delete;

  // `rest` = the API subject after "$JS.API." (CONSUMER.*); true when it concerns a
  // replicated stream and was handled here.
  bool on_api(std::string_view rest, const core::inbound_msg& m, int hops);
  // The meta leader's notice to a consumer's peers: answer this create once leading.
  void on_created_notice(const core::inbound_msg& m);

  // A committed meta entry: `mine` are its changes for this server, `op` the entry.
  // `op`: the entry applied; null for a restored meta snapshot (changes only).
  void on_meta(const std::vector<meta_change>& mine, const repl_entries::meta_op* op, std::int64_t now_ns);
  // A consumer group's event; false when `ev.group` is none of ours.
  bool on_event(core::group_event& ev, std::int64_t now_ns);
  bool holds_group(std::uint64_t group) const { return _by_group.count(group) != 0; }
  // The account's consumer limits: max_ack_pending (default cap and ceiling, 10121) and
  // max_consumers per stream (10026), as a standalone server applies them.
  void set_account_limits(std::int64_t max_ack_pending, std::int64_t max_consumers) {
    _acc_max_ack_pending = max_ack_pending;
    _acc_max_consumers = max_consumers;
  }
  // The stream's replica here applied entries (new messages to deliver).
  void on_stream_applied(const std::string& stream, std::int64_t now_ns);
  // The stream's config changed its retention to interest (at its entry in the stream's log,
  // on every replica): what no consumer needs goes, as on a standalone server.
  void retention_now_interest(const std::string& stream) { drop_unneeded(stream); }
  // After a replica of the stream or of one of its consumers was restored from a snapshot:
  // what no consumer here needs any more goes (interest and work-queue retention), as the
  // acks that released it may have been applied before the restore brought it back.
  void sweep_retained(const std::string& stream);
  // An interest stream's publish on `subject`: true when a consumer here matches it, or when
  // a consumer has no replica here (this server cannot tell).
  bool wants(const std::string& stream, std::string_view subject) const;
  // The stream's replica here goes: so do its consumers' replicas. silent: a scale moves them
  // into new groups (waiting pulls hear nothing; the client asks the new leader again).
  void drop_stream(const std::string& stream, bool silent = false);
  std::size_t poll(std::int64_t now_ns);

  // A scale of a replicated stream, on its origin (cluster_consumer_scale.cc): every
  // consumer's leader is asked for its replicated state ($PG.JSC.<leader>.<hops>.CSTATE) and
  // stops delivering and taking acks while the scale runs; scale_states() is the scale
  // request's "consumers" once every answer is in (asked again every 500 ms meanwhile).
  void begin_scale(const std::string& stream, std::int64_t now_ns);
  std::optional<nlohmann::ordered_json> scale_states(const std::string& stream, std::int64_t now_ns);
  void end_scale(const std::string& stream) { _scales.erase(stream); }
  void on_state_request(const core::inbound_msg& m, int hops);
  void on_state_reply(const core::inbound_msg& m);

 private:
  struct hosted;
  struct pending_reply {
    std::string reply;
    std::int64_t deadline_ns = 0;
    std::string want_config;  // an update: answered once this config_json is applied
  };
  // On the meta leader: a consumer_update proposed (a PAUSE, or an update), answered once
  // applied: a PAUSE by the meta leader, an update by the consumer's leader (CCREATED).
  struct meta_wait {
    std::string reply;
    std::int64_t deadline_ns = 0;
    std::string config_json;
    bool pause = false;
    std::optional<std::int64_t> pause_until;
  };
  using key = std::pair<std::string, std::string>;  // stream, consumer

  void api_create(std::string_view stream, std::string_view name, std::string_view filter, bool durable_api,
                  bool subject_has_name, const core::inbound_msg& m, int hops);
  void api_delete(const key& k, const core::inbound_msg& m, int hops);
  void api_names(const std::string& stream, const core::inbound_msg& m, bool list);
  // cluster_consumer_ops.cc: PAUSE and config updates through the meta group (the config
  // is replicated there, as nats-server's), UNPIN and RESET at the consumer's leader.
  void api_pause(const key& k, const core::inbound_msg& m, int hops);
  void api_unpin(const key& k, const core::inbound_msg& m, int hops);
  void api_reset(const key& k, const core::inbound_msg& m, int hops);
  void propose_config_update(const key& k, consumer_config cfg, const consumer_config& old,
                             const core::inbound_msg& m);
  bool propose_update(const key& k, std::string config_json, meta_wait w);
  const std::string& current_config(const key& k, const repl_entries::consumer_assign& a) const;
  void on_update_applied(const repl_entries::consumer_update& u);
  void update_hosted(const repl_entries::consumer_assign& a, std::int64_t now_ns);
  void serve_unpin(hosted& h, const core::inbound_msg& m);
  void serve_reset(hosted& h, const core::inbound_msg& m);
  bool answer_reset(hosted& h, std::uint64_t token, std::int64_t now_ns);
  void poll_ops(std::int64_t now_ns);
  consumer_params params_for(const hosted& h);
  void send_advisory(const hosted& h, const advisory& a);
  void api_at_leader(std::string_view what, const key& k, const core::inbound_msg& m, int hops);
  void serve_at_leader(hosted& h, std::string_view what, const core::inbound_msg& m);
  bool serving(const hosted& h) const;  // leads, and its consumer_leader_start is applied
  const std::string& leader_of(const hosted& h) const;
  void forward(const std::string& server, std::string_view what, const core::inbound_msg& m, int hops);
  bool meta_leader(std::string& leader) const;
  const repl_entries::consumer_assign* assigned(const key& k) const;

  void host_consumer(const repl_entries::consumer_assign& a, std::int64_t now_ns);
  // retain: interest retention drops what only this consumer needed (not when its stream goes).
  void drop_consumer(const key& k, bool silent = false, bool retain = true);
  bool frozen(const hosted& h, std::int64_t now_ns) const;
  void freeze_for_state(hosted& h, std::string reply, std::int64_t now_ns);
  std::optional<nlohmann::ordered_json> local_state(const key& k) const;  // this server's replica's
  void ask_state(const std::string& stream, const std::string& name);
  std::size_t answer_state_requests(hosted& h, std::int64_t now_ns);
  void after_event(hosted& h, std::int64_t now_ns);
  void on_ack(hosted& h, const core::inbound_msg& m);
  void on_flow_control(hosted& h, const core::inbound_msg& m);
  void on_pull(hosted& h, const core::inbound_msg& m);
  void check_push_interest(hosted& h, std::int64_t now_ns);
  void run(hosted& h, actions& out, std::int64_t now_ns);

  // cluster_consumer_retention.cc: interest and work-queue retention of a replicated stream.
  void release(hosted& h, const std::vector<std::uint64_t>& seqs);
  void release_early(const std::string& stream);
  void drop_if_unneeded(const std::string& stream, const stream_ref& s, std::uint64_t seq);
  void drop_unneeded(const std::string& stream);
  void drop_every_unneeded(const std::string& stream, const stream_ref& s);
  void maybe_snapshot(hosted& h);
  bool knows_every_consumer(const std::string& stream) const;
  bool needed(const std::string& stream, std::uint64_t seq, std::string_view subject) const;
  void remove_retained(const std::string& stream, const stream_ref& s, std::uint64_t seq, std::string_view subject);

  nlohmann::ordered_json info_json(hosted& h, std::int64_t now_ns);
  nlohmann::ordered_json cluster_json_of(std::uint64_t group, std::int64_t now_ns);
  void respond(std::string_view reply, const nlohmann::ordered_json& j);
  void respond_error(std::string_view reply, std::string_view type, const api_error& e,
                     const nlohmann::ordered_json& extra = nullptr);

  core::service_host& _host;
  core::cluster_replication& _repl;
  const meta_state& _meta;
  std::string _domain;
  std::string _self;
  std::string _account;
  std::int64_t _acc_max_ack_pending = -1, _acc_max_consumers = -1;
  stream_lookup _streams;
  std::map<key, std::unique_ptr<hosted>> _hosted;  // consumers with a replica here
  std::map<std::uint64_t, hosted*> _by_group;
  // Groups whose replica collected deliveries or acks this turn: poll() proposes each
  // outbox as one entry (consumer_replica::flush) before the turn's proposals go out.
  std::vector<std::uint64_t> _unflushed;
  // Releases past the end of this server's replica of their stream (it lags the consumer's
  // group): applied once the stream gets there.
  std::map<std::string, std::set<std::uint64_t>, std::less<>> _early_releases;
  // On the meta leader: creates and deletes waiting for their meta entry to apply.
  std::map<key, pending_reply> _creating, _deleting;
  std::map<key, std::deque<meta_wait>> _meta_waits;  // on the meta leader, in proposal order
  // Creates this server answers once it leads the consumer (the meta leader's notice).
  std::map<key, std::vector<pending_reply>> _answer_when_leading;
  // On a scale's origin: the consumers' states collected so far (name -> item), by stream.
  struct scale_collect {
    std::map<std::string, nlohmann::ordered_json> got;
    std::int64_t next_ask_ns = 0;
    std::int64_t give_up_ns = 0;  // then unanswered ones go with what this server holds
  };
  std::map<std::string, scale_collect, std::less<>> _scales;
};

}  // namespace js
