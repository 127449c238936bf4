#pragma once
// The replicated-JetStream simulation's world, shared by its parts: replica_sim.cc (servers,
// groups, events, faults, the meta leader, publishers), replica_sim_consumer.cc (the consumer
// CA and its checks) and replica_sim_check.cc (the stream checkers). Only the simulation's
// files include it; tests use replica_sim.h.
#include "tests/unit/js/replica_sim.h"

#include <fmt/format.h>

#include <algorithm>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <utility>
#include <vector>

#include "src/base/rng.h"
#include "src/js/consumer_replica.h"
#include "src/js/meta_state.h"
#include "src/js/placement.h"
#include "src/js/repl_entries.h"
#include "src/js/stream_replica.h"
#include "src/repl/memory_log_store.h"
#include "src/repl/raft_codec.h"
#include "src/repl/raft_group.h"
#include "src/repl/replicated_log.h"
#include "storage/memory_store.h"

namespace js::sim::detail {

namespace re = repl_entries;
using repl::actions;

constexpr std::uint64_t kMetaGroup = 1;
constexpr std::uint64_t kFirstStreamGroup = 100;
constexpr std::uint64_t kMaxEvents = 30'000'000;
constexpr std::int64_t kEpochNs = 1'700'000'000'000'000'000;
constexpr std::uint64_t kPublishTimeoutMs = 250;
constexpr unsigned kMaxAttempts = 8;

enum class ev_kind { deliver, disk_done, timer, restart, chaos, client, controller, checkpoint,
                     timeout, expiry, consumer, ack, propose_turn };
constexpr std::uint64_t kConsumerGroup = 200;  // consumer "CA" on stream A, on A's peers
constexpr std::uint64_t kConsumerTickMs = 20;
constexpr std::int64_t kAckWaitMs = 400;
constexpr std::uint64_t kExpiryTickMs = 50;   // how often leaders look for due expiries
constexpr std::int64_t kMaxAgeMs = 2'000;     // stream D's max_age
constexpr std::int64_t kTtlMs = 1'000;        // Nats-TTL of some of D's messages

struct event {
  ev_kind kind;
  unsigned node = 0;
  unsigned from = 0;
  std::uint64_t group = 0;
  std::uint64_t gen = 0;
  std::uint64_t seq = 0;  // disk_done: write seq; timer: incarnation; timeout: token
  std::vector<std::uint8_t> frame;
};

// The consumer's view of its server's replica of stream A (no filter, no deletes in A).
class store_source final : public message_source {
 public:
  explicit store_source(storage::stream_store& st) : _st(st) {}
  std::optional<msg_meta> next_matching(std::uint64_t from) override {
    auto m = _st.load_next("", from);
    if (!m.ok()) return std::nullopt;
    return meta(*m);
  }
  std::optional<msg_meta> load(std::uint64_t seq) override {
    auto m = _st.load(seq);
    if (!m.ok()) return std::nullopt;
    return meta(*m);
  }
  std::uint64_t count_matching(std::uint64_t from) override {
    const std::uint64_t last = _st.last_seq();
    return from > last ? 0 : last - std::max(from, _st.first_seq()) + 1;
  }

 private:
  static msg_meta meta(const storage::stored_msg& m) {
    return {m.seq, m.ts, std::uint32_t(m.subject.size()), std::uint32_t(m.headers.size()),
            std::uint32_t(m.payload.size())};
  }
  storage::stream_store& _st;
};

// options.async_proposals: what pg-repl's proposal ring is to a stream replica. Proposals wait
// here for the group's turn; the replica only learns their indexes then (on_proposed). Its
// view of the role lags as the server's owner thread's does (remote_log: as of the last role
// event): updated at the group's turn, after that turn's results.
class queued_log final : public repl::replicated_log {
 public:
  queued_log(repl::replicated_log& direct, repl::raft_group& raft) : _direct(direct), _raft(raft) {}
  repl::propose_result propose(std::span<const std::uint8_t> d) override { return _direct.propose(d); }
  repl::propose_result propose_async(std::span<const std::uint8_t> d) override {
    if (!view_leader) return {repl::propose_status::not_leader, 0};
    queue.push_back({next_ticket, view_term, {d.begin(), d.end()}});
    return {repl::propose_status::queued, next_ticket++};
  }
  bool is_leader() const override { return view_leader; }
  std::uint64_t term() const override { return view_term; }
  bool view_stale() const {
    return view_leader != (_raft.current_role() == repl::role::leader) || view_term != _raft.term();
  }
  void refresh_view() {
    view_leader = _raft.current_role() == repl::role::leader;
    view_term = _raft.term();
  }
  bool view_leader = false;
  std::uint64_t view_term = 0;

  struct item {
    std::uint64_t ticket;
    std::uint64_t term;
    std::vector<std::uint8_t> data;
  };
  std::deque<item> queue;
  std::uint64_t next_ticket = 1;
  bool turn_scheduled = false;

 private:
  repl::replicated_log& _direct;
  repl::raft_group& _raft;
};

struct group_node {
  std::uint64_t id = 0;
  std::unique_ptr<repl::raft_group> raft;
  std::unique_ptr<repl::group_log> log;
  std::unique_ptr<queued_log> queued;            // options.async_proposals
  std::unique_ptr<storage::memory_store> store;  // stream groups
  std::unique_ptr<stream_replica> replica;
  std::unique_ptr<store_source> source;  // the consumer group
  std::unique_ptr<consumer_replica> consumer;
  sequence_pair last_floor;              // the consumer's applied ack floor so far
  std::uint64_t timer_gen = 0;
  std::optional<std::uint64_t> timer_at;
  std::uint64_t disk_free_at = 0;
};

struct server {
  std::uint64_t id = 0;
  std::string name;
  bool up = false;
  std::uint64_t incarnation = 0;
  std::map<std::uint64_t, repl::memory_log_store> disks;  // by group: survive crashes
  std::map<std::uint64_t, group_node> groups;             // live groups
  std::unique_ptr<meta_state> meta;
};

struct stream_spec {
  std::string name;
  unsigned replicas = 3;
  bool expiring = false;  // max_age and Nats-TTL: contents shrink by replicated expire entries
  std::uint64_t group = 0;
  std::uint64_t last_proposed_ms = 0;
  bool proposed = false;
};

struct pub_msg {
  unsigned stream = 0;
  std::string id;  // "" = no Nats-Msg-Id
  std::string payload;
  std::int64_t ttl_ms = 0;  // Nats-TTL sent, 0 = none
  std::uint64_t first_attempt_ms = 0;
  bool acked = false;
  std::uint64_t acked_seq = 0;
  unsigned attempts = 0;
  std::uint64_t token = 0;  // the live attempt
};

stream_config make_config(const std::string& name, unsigned replicas, bool expiring);

class simulation {
 public:
  explicit simulation(const replica_sim_options& o) : _o(o), _rng(o.seed) {
    _servers.resize(o.servers);
    for (unsigned i = 0; i < o.servers; ++i) {
      _servers[i].id = i + 1;
      _servers[i].name = fmt::format("s{}", i + 1);
    }
    _blocked.assign(o.servers, std::vector<bool>(o.servers, false));
    const unsigned r = std::min(3u, o.servers);
    _streams = {{"A", r}, {"B", r}, {"C", o.servers >= 5 ? 5u : r}, {"D", r, true}};
    for (unsigned i = 0; i < _streams.size(); ++i) _streams[i].group = kFirstStreamGroup + i;
  }

  replica_sim_report run();

 private:
  std::int64_t now_ns() const { return kEpochNs + std::int64_t(_now) * 1'000'000; }
  void schedule(std::uint64_t at, event e) { _queue.emplace(std::pair{at, _order++}, std::move(e)); }
  void violation(const std::string& what) {
    if (_failure.empty()) _failure = fmt::format("t={}ms: {}", _now, what);
  }
  unsigned index_of(const server& s) const { return unsigned(s.id - 1); }
  const stream_spec* spec_of(std::uint64_t group) const;

  // --- groups
  void create_group(server& s, std::uint64_t gid, std::vector<std::uint64_t> voters,
                    const stream_config* cfg, storage::stream_store* consumer_of = nullptr);

  void boot(server& s);

  void crash(server& s);

  // One event on one group: the call, its actions, then the replica's reaction to a role
  // change (a leader_start proposal), whose actions are handled the same way.
  template <class F>
  void drive(server& s, group_node& g, F&& call) {
    actions out;
    g.log->bind(_now, &out);
    call(out);
    // The owner's turn ends: the consumer's outbox becomes one entry (unless a later turn
    // takes it along: acks of several turns in one entry).
    if (g.consumer && !_hold_consumer_outbox) g.consumer->flush();
    handle(s, g, out);
    for (int round = 0; round < 4 && (g.replica || g.consumer) && s.up; ++round) {
      actions more;
      g.log->bind(_now, &more);
      if (g.replica) g.replica->on_role(now_ns());
      if (g.consumer) g.consumer->on_role(now_ns());
      if (more.sends.empty() && more.writes.empty() && more.applies.empty() && !more.timer_at) break;
      handle(s, g, more);
    }
    g.log->bind(_now, nullptr);
  }

  void handle(server& s, group_node& g, actions& out);
  // options.async_proposals: the group's queued proposals, one raft batch per term.
  void propose_turn(group_node& g, actions& out);

  void apply_meta(server& s, const repl::committed_entry& c);

  // --- events
  void dispatch(event& e);

  void after_event();

  std::string progress();

  // Every stream acknowledged a publish made after the heal, and all its replicas hold it.
  bool all_caught_up();

  // --- the consumer "CA" on stream A: one client pulls from whichever replica leads, acks
  // most deliveries (all once healed) a little later, and counts confirmed acks.
  void create_consumer_group(server& s, const std::vector<std::uint64_t>& voters,
                             storage::stream_store& stream);

  std::pair<server*, group_node*> consumer_leader();

  std::uint64_t local_a_last(server& s);

  void consumer_client();

  void route(const js::actions& out);

  void send_ack(std::uint64_t token);

  void on_ack_confirmed(const consumer_ack_confirm& c);

  // Every stream's replicas have applied the same entries (expiries keep coming while
  // settling, so the final comparison waits for a moment between them).
  bool groups_quiet();

  // Every replica of the consumer has applied acks for all of its server's stream A.
  bool consumer_caught_up();

  std::string consumer_progress();

  void consumer_checks();

  // Every stream replica's clock tick: only leaders propose (stream_replica::tick).
  void expiry_tick();

  // --- faults
  void chaos();

  void stepdown();

  void heal();

  // --- the meta leader places and assigns the streams until each one is in its table.
  void controller();

  // --- publishers
  void client();

  // Sends the message to whichever server's replica takes writes (the one subscribed to the
  // stream's subjects); without one the attempt goes unanswered and times out.
  void attempt(std::size_t i);

  void on_timeout(std::uint64_t token);

  void on_reply(const replica_reply& r);

  // --- checkers
  static std::vector<storage::stored_msg> contents(storage::stream_store& st);

  static bool same(const storage::stored_msg& a, const storage::stored_msg& b);

  // Replicas' contents are prefixes of the longest one; with expiry (which removes from the
  // front) every sequence two replicas both hold is the same message, and replicas at the
  // same applied index hold the same messages.
  void checkpoint();

  void final_checks();

  // A message's timestamp is at least its first attempt's time, so it cannot expire before
  // that time plus its lifetime.
  bool could_have_expired(const std::string& payload) const;

  // An expiring stream after settling: nothing overdue is left (leaders proposed the
  // expiries), and an acknowledged message is gone only if it could have expired by now.
  void expiry_checks(const stream_spec& st, const std::vector<storage::stored_msg>& msgs);

  // Reads each peer's log as a crash now would leave it.
  void durable_on_majority(const stream_spec& st, const std::vector<std::string>& peers);

  replica_sim_options _o;
  base::rng _rng;
  std::uint64_t _now = 0;
  std::uint64_t _order = 0;
  std::map<std::pair<std::uint64_t, std::uint64_t>, event> _queue;
  std::vector<server> _servers;
  std::vector<std::vector<bool>> _blocked;
  std::vector<stream_spec> _streams;
  std::vector<pub_msg> _msgs;
  std::map<std::uint64_t, std::size_t> _token_msg;
  std::uint64_t _next_token = 0;
  std::map<std::uint64_t, std::map<std::uint64_t, std::string>> _acked;  // group -> seq -> payload
  std::map<std::uint64_t, std::uint64_t> _probe_seq;                      // group -> seq
  struct ack_msg {
    std::uint64_t sseq, dseq, deliveries;
    std::int64_t ts;
  };
  std::map<std::uint64_t, ack_msg> _ack_of;  // ack token -> what it acknowledges
  std::set<std::uint64_t> _confirmed;         // stream seqs whose ack was confirmed
  std::set<std::uint64_t> _delivered;         // stream seqs delivered at least once
  std::map<std::pair<std::uint64_t, std::uint64_t>, std::uint64_t> _leader_of_term;
  bool _healed = false;
  bool _hold_consumer_outbox = false;  // see drive()
  bool _converged = false;
  bool _done = false;
  std::uint64_t _heal_at = 0;
  std::uint64_t _settle_until = 0;
  std::string _failure;
  replica_sim_report _report;
};

}  // namespace js::sim::detail
