#include "tests/unit/js/replica_sim.h"

#include <fmt/format.h>

#include <algorithm>
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

namespace js::sim {
namespace {

namespace re = repl_entries;
using repl::actions;

constexpr std::uint64_t kMetaGroup = 1;
constexpr std::uint64_t kFirstStreamGroup = 100;
constexpr std::uint64_t kMaxEvents = 30'000'000;
constexpr std::int64_t kEpochNs = 1'700'000'000'000'000'000;
constexpr std::uint64_t kPublishTimeoutMs = 250;
constexpr unsigned kMaxAttempts = 8;

enum class ev_kind { deliver, disk_done, timer, restart, chaos, client, controller, checkpoint,
                     timeout, expiry, consumer, ack };
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

struct group_node {
  std::uint64_t id = 0;
  std::unique_ptr<repl::raft_group> raft;
  std::unique_ptr<repl::group_log> log;
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

stream_config make_config(const std::string& name, unsigned replicas, bool expiring) {
  stream_config c;
  if (expiring) {
    c.max_age = kMaxAgeMs * 1'000'000;
    c.allow_msg_ttl = true;
  }
  c.name = name;
  c.subjects = {name + ".>"};
  c.storage = storage_type::memory;
  c.num_replicas = replicas;
  c.duplicate_window = kDefaultDuplicateWindow;
  c.max_msgs = c.max_bytes = c.max_msgs_per_subject = c.max_msg_size = -1;
  return c;
}

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

  replica_sim_report run() {
    for (auto& s : _servers) boot(s);
    schedule(1 + _rng.below(100), {ev_kind::chaos});
    schedule(1, {ev_kind::controller});
    schedule(1 + _rng.below(20), {ev_kind::client});
    schedule(250, {ev_kind::checkpoint});
    schedule(kExpiryTickMs, {ev_kind::expiry});
    schedule(kConsumerTickMs, {ev_kind::consumer});
    while (!_queue.empty() && _failure.empty() && !_done) {
      auto node = _queue.extract(_queue.begin());
      _now = node.key().first;
      if (!_healed && _now >= _o.chaos_ms) heal();
      dispatch(node.mapped());
      after_event();
      if (++_report.events > kMaxEvents) violation("event limit reached");
    }
    if (_failure.empty() && !_done) violation("event queue ran dry");
    if (_failure.empty()) final_checks();
    _report.ok = _failure.empty();
    _report.failure = _failure;
    _report.leaders = _leader_of_term.size();
    return _report;
  }

 private:
  std::int64_t now_ns() const { return kEpochNs + std::int64_t(_now) * 1'000'000; }
  void schedule(std::uint64_t at, event e) { _queue.emplace(std::pair{at, _order++}, std::move(e)); }
  void violation(const std::string& what) {
    if (_failure.empty()) _failure = fmt::format("t={}ms: {}", _now, what);
  }
  unsigned index_of(const server& s) const { return unsigned(s.id - 1); }
  const stream_spec* spec_of(std::uint64_t group) const {
    for (const auto& st : _streams)
      if (st.group == group) return &st;
    return nullptr;
  }

  // --- groups
  void create_group(server& s, std::uint64_t gid, std::vector<std::uint64_t> voters,
                    const stream_config* cfg, storage::stream_store* consumer_of = nullptr) {
    if (s.groups.count(gid)) return;
    std::sort(voters.begin(), voters.end());
    group_node& g = s.groups[gid];
    g.id = gid;
    repl::group_config rc;
    rc.group_id = gid;
    rc.self = s.id;
    rc.voters = voters;
    rc.election_timeout_ms = _o.election_timeout_ms;
    rc.heartbeat_timeout_ms = _o.heartbeat_timeout_ms;
    rc.seed = std::uint32_t(_rng.next());
    g.raft = std::make_unique<repl::raft_group>(rc, s.disks[gid]);
    g.log = std::make_unique<repl::group_log>(*g.raft);
    if (cfg != nullptr) {
      g.store = std::make_unique<storage::memory_store>();
      g.replica = std::make_unique<stream_replica>(*cfg, *g.store, *g.log, s.name,
                                                   !_o.skip_leader_start);
    }
    if (consumer_of != nullptr) {
      g.source = std::make_unique<store_source>(*consumer_of);
      consumer_params p;
      p.stream_name = "A";
      p.consumer_name = "CA";
      p.ack = ack_policy::explicit_;
      p.ack_wait = kAckWaitMs * 1'000'000;
      p.max_ack_pending = 50;
      g.consumer = std::make_unique<consumer_replica>(p, *g.source, *g.log, s.name);
    }
    drive(s, g, [&](actions& out) {
      if (!g.raft->start(_now, out))
        violation(fmt::format("{} group {} failed to start: {}", s.name, gid, g.raft->error()));
    });
  }

  void boot(server& s) {
    s.up = true;
    s.meta = std::make_unique<meta_state>(s.name);
    std::vector<std::uint64_t> all;
    for (const auto& p : _servers) all.push_back(p.id);
    create_group(s, kMetaGroup, all, nullptr);
  }

  void crash(server& s) {
    s.groups.clear();
    s.meta.reset();
    s.up = false;
    ++s.incarnation;
    ++_report.crashes;
    for (auto& [gid, disk] : s.disks) {
      std::size_t keep = 0;
      const std::size_t pending = disk.pending_bytes();
      if (_o.torn_writes && pending > 0)
        keep = _rng.chance(0.3) ? pending : std::size_t(_rng.below(pending + 1));
      disk.crash(keep);
    }
    schedule(_now + 20 + _rng.below(1500), {ev_kind::restart, index_of(s), 0, 0, s.incarnation});
  }

  // One event on one group: the call, its actions, then the replica's reaction to a role
  // change (a leader_start proposal), whose actions are handled the same way.
  template <class F>
  void drive(server& s, group_node& g, F&& call) {
    actions out;
    g.log->bind(_now, &out);
    call(out);
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

  void handle(server& s, group_node& g, actions& out) {
    const unsigned from = index_of(s);
    for (auto& f : out.sends) {
      if (f.to == 0 || f.to > _servers.size()) {
        violation(fmt::format("{} sent to unknown server {}", s.name, f.to));
        continue;
      }
      if (!_healed && _rng.chance(_o.loss)) continue;
      const int copies = !_healed && _rng.chance(_o.duplicate) ? 2 : 1;
      for (int c = 0; c < copies; ++c)
        schedule(_now + 1 + _rng.below(_o.max_delay_ms),
                 {ev_kind::deliver, unsigned(f.to - 1), from, g.id, 0, 0, f.frame});
    }
    for (std::uint64_t seq : out.writes) {
      const std::uint64_t at = std::max(_now + 1 + _rng.below(4), g.disk_free_at);
      g.disk_free_at = at;
      schedule(at, {ev_kind::disk_done, from, 0, g.id, s.incarnation, seq});
    }
    for (auto& c : out.applies) {
      if (g.id == kMetaGroup) {
        apply_meta(s, c);
      } else if (g.consumer) {
        std::vector<consumer_ack_confirm> confirmed;
        g.consumer->apply(c, now_ns(), confirmed);
        const sequence_pair f = g.consumer->ack_floor();
        if (f.stream_seq < g.last_floor.stream_seq || f.consumer_seq < g.last_floor.consumer_seq)
          violation(fmt::format("{}: consumer ack floor moved back from {}/{} to {}/{}", s.name,
                                g.last_floor.consumer_seq, g.last_floor.stream_seq,
                                f.consumer_seq, f.stream_seq));
        g.last_floor = f;
        for (const auto& a : confirmed) on_ack_confirmed(a);
      } else {
        std::vector<replica_reply> replies;
        g.replica->apply(c, replies);
        for (const auto& r : replies) on_reply(r);
      }
    }
    if (out.timer_at && out.timer_at != g.timer_at) {
      g.timer_at = out.timer_at;
      ++g.timer_gen;
      // The incarnation too: a re-created group counts its timers from 0 again.
      schedule(std::max(*out.timer_at, _now + 1),
               {ev_kind::timer, from, 0, g.id, g.timer_gen, s.incarnation});
    }
  }

  void apply_meta(server& s, const repl::committed_entry& c) {
    if (c.value.type != repl::entry_type::command) return;
    std::vector<meta_change> mine;
    if (!s.meta->apply(c.value.data, mine))
      return violation(fmt::format("{}: undecodable meta entry at {}", s.name, c.index));
    for (const auto& ch : mine) {
      if (ch.what != meta_change::kind::create_stream) continue;
      auto cfg = config_from_json(ojson::parse(ch.stream.config_json, nullptr, false));
      if (!cfg) return violation("assigned stream config does not decode");
      std::vector<std::uint64_t> voters;
      for (const auto& p : ch.stream.peers) voters.push_back(std::stoull(p.substr(1)));
      create_group(s, ch.stream.group_id, voters, &*cfg);
      if (ch.stream.group_id == _streams[0].group)
        create_consumer_group(s, voters, *s.groups.at(ch.stream.group_id).store);
    }
  }

  // --- events
  void dispatch(event& e) {
    switch (e.kind) {
      case ev_kind::restart: {
        server& s = _servers[e.node];
        if (!s.up && e.gen == s.incarnation) boot(s);
        return;
      }
      case ev_kind::chaos:
        return chaos();
      case ev_kind::client:
        return client();
      case ev_kind::controller:
        return controller();
      case ev_kind::checkpoint:
        checkpoint();
        schedule(_now + 250, {ev_kind::checkpoint});
        return;
      case ev_kind::timeout:
        return on_timeout(e.seq);
      case ev_kind::consumer:
        schedule(_now + kConsumerTickMs, {ev_kind::consumer});
        return consumer_client();
      case ev_kind::ack:
        return send_ack(e.seq);
      case ev_kind::expiry:
        schedule(_now + kExpiryTickMs, {ev_kind::expiry});
        return expiry_tick();
      default:
        break;
    }
    server& s = _servers[e.node];
    if (!s.up) return;
    auto it = s.groups.find(e.group);
    if (it == s.groups.end()) return;  // not created here (yet): raft resends
    group_node& g = it->second;
    switch (e.kind) {
      case ev_kind::deliver:
        if (!_healed && _blocked[e.from][e.node]) return;
        drive(s, g, [&](actions& out) { g.raft->on_frame(_now, e.frame, out); });
        break;
      case ev_kind::disk_done:
        if (e.gen != s.incarnation) return;
        s.disks[e.group].sync_through(e.seq);
        drive(s, g, [&](actions& out) { g.raft->on_persisted(_now, e.seq, out); });
        break;
      case ev_kind::timer:
        if (e.gen != g.timer_gen || e.seq != s.incarnation) return;
        g.timer_at.reset();
        drive(s, g, [&](actions& out) { g.raft->on_timeout(_now, out); });
        break;
      default:
        break;
    }
  }

  void after_event() {
    for (auto& s : _servers) {
      if (!s.up) continue;
      for (auto& [gid, g] : s.groups) {
        if (g.raft->failed())
          return violation(fmt::format("{} group {}: {}", s.name, gid, g.raft->error()));
        if (g.consumer && g.consumer->failed())
          return violation(fmt::format("{} consumer group: {}", s.name, g.consumer->error()));
        if (g.replica && g.replica->failed())
          return violation(fmt::format("{} stream group {}: {}", s.name, gid, g.replica->error()));
        if (g.raft->current_role() != repl::role::leader) continue;
        auto [it, first] = _leader_of_term.emplace(std::pair{gid, g.raft->term()}, s.id);
        if (!first && it->second != s.id)
          violation(fmt::format("group {}: two leaders in term {}: {} and {}", gid,
                                g.raft->term(), it->second, s.id));
      }
    }
    if (!_healed) return;
    if (!_converged) {
      if (all_caught_up()) {
        _converged = true;
        _report.recovery_ms = _now - _heal_at;
        _settle_until = _now + _o.settle_ms;
      } else if (_now > _heal_at + _o.liveness_bound_ms) {
        violation(fmt::format("liveness: not converged {} ms after healing: {}",
                              _o.liveness_bound_ms, progress()));
      }
    } else if (_now >= _settle_until && consumer_caught_up() && groups_quiet()) {
      _done = true;
    } else if (_now > _settle_until + _o.liveness_bound_ms) {
      violation(fmt::format("liveness: consumer has not acknowledged all of stream A {} ms after "
                            "settling: {}", _o.liveness_bound_ms, consumer_progress()));
    }
  }

  std::string progress() {
    std::string out;
    for (const auto& st : _streams) {
      out += fmt::format("[{} probe acked {}:", st.name, _probe_seq.count(st.group) ? _probe_seq[st.group] : 0);
      for (auto& s : _servers) {
        if (!s.up) continue;
        auto it = s.groups.find(st.group);
        if (it == s.groups.end()) continue;
        out += fmt::format(" {} {} last {} ready {};", s.name, it->second.raft->debug_state(),
                           it->second.store->last_seq(), it->second.replica->ready());
      }
      out += "] ";
    }
    return out;
  }

  // Every stream acknowledged a publish made after the heal, and all its replicas hold it.
  bool all_caught_up() {
    for (const auto& st : _streams) {
      auto p = _probe_seq.find(st.group);
      if (p == _probe_seq.end()) return false;
      unsigned holders = 0;
      for (auto& s : _servers) {
        auto it = s.groups.find(st.group);
        if (it == s.groups.end()) continue;
        if (it->second.store->last_seq() < p->second) return false;
        ++holders;
      }
      if (holders < st.replicas) return false;
    }
    return true;
  }

  // --- the consumer "CA" on stream A: one client pulls from whichever replica leads, acks
  // most deliveries (all once healed) a little later, and counts confirmed acks.
  void create_consumer_group(server& s, const std::vector<std::uint64_t>& voters,
                             storage::stream_store& stream) {
    create_group(s, kConsumerGroup, voters, nullptr, &stream);
  }

  std::pair<server*, group_node*> consumer_leader() {
    for (auto& s : _servers) {
      if (!s.up) continue;
      auto it = s.groups.find(kConsumerGroup);
      if (it != s.groups.end() && it->second.consumer->ready()) return {&s, &it->second};
    }
    return {nullptr, nullptr};
  }

  std::uint64_t local_a_last(server& s) {
    auto it = s.groups.find(_streams[0].group);
    return it == s.groups.end() ? 0 : it->second.store->last_seq();
  }

  void consumer_client() {
    // Each replica learns how far its server's stream A goes (a new leader waits for it).
    for (auto& srv : _servers) {
      auto it = srv.groups.find(kConsumerGroup);
      if (!srv.up || it == srv.groups.end()) continue;
      js::actions advanced;
      const std::uint64_t last = local_a_last(srv);
      group_node& cg = it->second;
      drive(srv, cg, [&](repl::actions&) { cg.consumer->on_stream_advanced(last, now_ns(), advanced); });
      route(advanced);
    }
    auto [s, g] = consumer_leader();
    if (s == nullptr) return;
    js::actions out;
    drive(*s, *g, [&](repl::actions&) {
      g->consumer->tick(now_ns(), out);
      if (_rng.chance(0.5)) {
        pull_request req;
        req.batch = 10;
        req.expires = 200'000'000;
        (void)g->consumer->pull("pull", req, now_ns(), out);
      }
    });
    route(out);
  }

  void route(const js::actions& out) {
    for (const auto& a : out) {
      const auto* d = std::get_if<delivery>(&a);
      if (d == nullptr) continue;
      ++_report.deliveries;
      if (_confirmed.count(d->stream_seq))
        return violation(fmt::format("consumer: stream seq {} redelivered (delivery {}) after its "
                                     "ack was confirmed", d->stream_seq, d->delivery_count));
      _delivered.insert(d->stream_seq);
      if (!_healed && _rng.chance(0.15)) continue;  // lost, or the client never acks it
      const std::uint64_t token = ++_next_token;
      _ack_of[token] = {d->stream_seq, d->consumer_seq, d->delivery_count, d->timestamp};
      schedule(_now + 1 + _rng.below(30), {ev_kind::ack, 0, 0, 0, 0, token});
    }
  }

  void send_ack(std::uint64_t token) {
    auto [s, g] = consumer_leader();
    if (s == nullptr) return;  // lost: redelivered after ack wait
    const auto& a = _ack_of.at(token);
    ack_subject subj;
    subj.stream = "A";
    subj.consumer = "CA";
    subj.delivered = a.deliveries;
    subj.stream_seq = a.sseq;
    subj.consumer_seq = a.dseq;
    subj.timestamp = a.ts;
    ack_body body;
    body.kind = ack_kind::ack;
    js::actions out;
    consumer_submit r = consumer_submit::ignored;
    drive(*s, *g, [&](repl::actions&) { r = g->consumer->ack(subj, body, token, now_ns(), out); });
    if (_o.confirm_ack_at_proposal && r == consumer_submit::done) on_ack_confirmed({token, a.sseq});
    route(out);
  }

  void on_ack_confirmed(const consumer_ack_confirm& c) {
    if (!_ack_of.count(c.token))
      return violation(fmt::format("consumer: confirmation of unknown ack {}", c.token));
    if (_ack_of.at(c.token).sseq != c.stream_seq)
      return violation(fmt::format("consumer: ack {} confirmed for seq {}", c.token, c.stream_seq));
    if (_confirmed.insert(c.stream_seq).second) ++_report.confirmed_acks;
  }

  // Every stream's replicas have applied the same entries (expiries keep coming while
  // settling, so the final comparison waits for a moment between them).
  bool groups_quiet() {
    for (const auto& st : _streams) {
      std::optional<std::uint64_t> applied;
      for (auto& s : _servers) {
        auto it = s.groups.find(st.group);
        if (!s.up || it == s.groups.end()) continue;
        if (applied && *applied != it->second.replica->applied_index()) return false;
        applied = it->second.replica->applied_index();
      }
    }
    return true;
  }

  // Every replica of the consumer has applied acks for all of its server's stream A.
  bool consumer_caught_up() {
    unsigned holders = 0;
    for (auto& s : _servers) {
      auto it = s.groups.find(kConsumerGroup);
      if (!s.up || it == s.groups.end()) continue;
      const auto st = it->second.consumer->state();
      if (st.ack_floor.stream_seq < local_a_last(s) || !st.pending.empty()) return false;
      ++holders;
    }
    return holders >= _streams[0].replicas;
  }

  std::string consumer_progress() {
    std::string out;
    for (auto& s : _servers) {
      auto it = s.groups.find(kConsumerGroup);
      if (!s.up || it == s.groups.end()) continue;
      const auto st = it->second.consumer->state();
      out += fmt::format("{} {} floor {} delivered {} pending {} ready {} A last {}; ", s.name,
                         it->second.raft->debug_state(), st.ack_floor.stream_seq,
                         st.delivered.stream_seq, st.pending.size(),
                         it->second.consumer->ready(), local_a_last(s));
      if (const auto* m = it->second.consumer->machine()) {
        out += fmt::format("machine pending {} rdq {} waiting {} pend:", m->pending().size(),
                           m->redelivery_queue().size(), m->waiting().size());
        for (const auto& [seq, e] : st.pending) out += fmt::format(" {}", seq);
      }
    }
    return out;
  }

  void consumer_checks() {
    std::optional<consumer_snapshot> first;
    for (auto& s : _servers) {
      auto it = s.groups.find(kConsumerGroup);
      if (!s.up || it == s.groups.end()) continue;
      const auto st = it->second.consumer->state();
      if (first && !(st == *first))
        return violation(fmt::format("consumer: {} holds another state after settling", s.name));
      first = st;
      for (std::uint64_t seq : _confirmed)
        if (seq > st.ack_floor.stream_seq)
          return violation(fmt::format("consumer: confirmed ack of {} above {}'s floor {}", seq,
                                       s.name, st.ack_floor.stream_seq));
      for (std::uint64_t seq = 1; seq <= local_a_last(s); ++seq)
        if (!_delivered.count(seq))
          return violation(fmt::format("consumer: stream A seq {} never delivered", seq));
    }
    if (!first) violation("consumer: no replica after settling");
  }

  // Every stream replica's clock tick: only leaders propose (stream_replica::tick).
  void expiry_tick() {
    for (auto& s : _servers) {
      if (!s.up) continue;
      for (auto& [gid, g] : s.groups) {
        if (!g.replica) continue;
        // Self-test: each replica expiring by its own clock, as a standalone stream would;
        // the clocks are 300 ms apart from server to server.
        if (_o.local_expiry && g.replica->config().max_age > 0)
          (void)g.store->expire(now_ns() + std::int64_t(s.id) * 300'000'000);
        drive(s, g, [&](actions&) { (void)g.replica->tick(now_ns()); });
      }
    }
  }

  // --- faults
  void chaos() {
    if (_healed) return;
    const unsigned n = unsigned(_servers.size());
    if (_o.partitions && _rng.chance(0.3)) {
      for (auto& row : _blocked) std::fill(row.begin(), row.end(), false);
      switch (_rng.below(4)) {
        case 0:
          break;
        case 1: {
          const unsigned x = unsigned(_rng.below(n));
          for (unsigned j = 0; j < n; ++j) _blocked[x][j] = _blocked[j][x] = true;
          break;
        }
        case 2: {
          const unsigned links = 1 + unsigned(_rng.below(n));
          for (unsigned k = 0; k < links; ++k) _blocked[_rng.below(n)][_rng.below(n)] = true;
          break;
        }
        default: {
          std::vector<bool> side(n);
          for (unsigned j = 0; j < n; ++j) side[j] = _rng.chance(0.5);
          for (unsigned a = 0; a < n; ++a)
            for (unsigned b = 0; b < n; ++b) _blocked[a][b] = side[a] != side[b];
          break;
        }
      }
    }
    if (_o.crashes && _rng.chance(0.1)) {
      server& s = _servers[_rng.below(n)];
      if (s.up) crash(s);
    }
    if (_o.stepdowns && _rng.chance(0.15)) stepdown();
    schedule(_now + 50 + _rng.below(250), {ev_kind::chaos});
  }

  void stepdown() {
    // A stream's group, or (one time in four) the consumer's, which lives on A's peers.
    const bool consumer = _rng.chance(0.25);
    const auto& st = consumer ? _streams[0] : _streams[_rng.below(_streams.size())];
    const std::uint64_t gid = consumer ? kConsumerGroup : st.group;
    for (auto& s : _servers) {
      if (!s.up) continue;
      auto it = s.groups.find(gid);
      if (it == s.groups.end() || it->second.raft->current_role() != repl::role::leader) continue;
      const auto* a = s.meta->find("$G", st.name);
      if (a == nullptr) return;
      const auto& peers = a->assignment.peers;
      const std::uint64_t to = std::stoull(peers[_rng.below(peers.size())].substr(1));
      if (to == s.id) return;
      group_node& g = it->second;
      bool started = false;
      drive(s, g, [&](actions& out) { started = g.raft->transfer_leadership(_now, to, out); });
      if (started) ++_report.stepdowns;
      return;
    }
  }

  void heal() {
    _healed = true;
    _heal_at = _now;
    for (auto& row : _blocked) std::fill(row.begin(), row.end(), false);
    for (auto& s : _servers)
      if (!s.up) boot(s);
  }

  // --- the meta leader places and assigns the streams until each one is in its table.
  void controller() {
    schedule(_now + 100, {ev_kind::controller});
    for (auto& s : _servers) {
      if (!s.up) continue;
      auto it = s.groups.find(kMetaGroup);
      if (it == s.groups.end() || it->second.raft->current_role() != repl::role::leader) continue;
      for (auto& st : _streams) {
        if (s.meta->find("$G", st.name) != nullptr) continue;
        if (st.proposed && _now < st.last_proposed_ms + 300) continue;
        std::vector<placement_candidate> candidates;
        for (const auto& p : _servers)
          candidates.push_back({p.name, "C1", {}, false, s.meta->assets_on(p.name)});
        placement_request req;
        req.replicas = st.replicas;
        req.default_cluster = "C1";
        auto placed = place_replicas(req, candidates);
        if (placed.error) return violation("placement failed: " + placed.error->description);
        re::stream_assign a;
        a.account = "$G";
        a.name = st.name;
        a.config_json = to_json(make_config(st.name, st.replicas, st.expiring), false).dump();
        a.peers = placed.peers;
        a.created_ns = now_ns();
        a.group_id = st.group;
        const auto bytes = re::encode(re::meta_op{a});
        group_node& g = it->second;
        drive(s, g, [&](actions& out) { (void)g.raft->propose(_now, bytes, out); });
        st.proposed = true;
        st.last_proposed_ms = _now;
      }
      return;
    }
  }

  // --- publishers
  void client() {
    schedule(_now + 2 + _rng.below(15), {ev_kind::client});
    if (_converged) return;  // settling: no new publishes
    pub_msg m;
    m.stream = unsigned(_rng.below(_streams.size()));
    const std::uint64_t n = _msgs.size();
    if (_rng.chance(_o.msg_id_share)) m.id = fmt::format("id-{}", n);
    m.payload = fmt::format("{}{}", _healed ? 'h' : 'p', n);
    if (_streams[m.stream].expiring && _rng.chance(0.3)) m.ttl_ms = kTtlMs;
    m.first_attempt_ms = _now;
    _msgs.push_back(std::move(m));
    attempt(_msgs.size() - 1);
  }

  // Sends the message to whichever server's replica takes writes (the one subscribed to the
  // stream's subjects); without one the attempt goes unanswered and times out.
  void attempt(std::size_t i) {
    pub_msg& m = _msgs[i];
    ++m.attempts;
    ++_report.published;
    m.token = ++_next_token;
    _token_msg[m.token] = i;
    schedule(_now + kPublishTimeoutMs, {ev_kind::timeout, 0, 0, 0, 0, m.token});
    const stream_spec& st = _streams[m.stream];
    std::vector<server*> takers;
    for (auto& s : _servers) {
      if (!s.up) continue;
      auto it = s.groups.find(st.group);
      if (it != s.groups.end() && it->second.replica->ready()) takers.push_back(&s);
    }
    if (takers.empty()) return;
    server& s = *takers[_rng.below(takers.size())];
    group_node& g = s.groups.at(st.group);
    const std::string subject = fmt::format("{}.{}", st.name, i % 5);
    std::string hdr;
    if (!m.id.empty()) hdr += "Nats-Msg-Id: " + m.id + "\r\n";
    if (m.ttl_ms > 0) hdr += fmt::format("Nats-TTL: {}s\r\n", m.ttl_ms / 1000);
    if (!hdr.empty()) hdr = "NATS/1.0\r\n" + hdr + "\r\n";
    const std::uint64_t token = m.token;
    std::vector<replica_reply> replies;
    submit_status status = submit_status::not_leader;
    drive(s, g, [&](actions&) {
      status = g.replica->publish(now_ns(), subject, hdr, _msgs[i].payload, token, replies);
    });
    for (const auto& r : replies) on_reply(r);
    if (_o.ack_before_commit && status == submit_status::proposed)
      on_reply({token, replica_reply::kind::pub_ack, g.store->last_seq() + g.replica->pending(), false, {}});
  }

  void on_timeout(std::uint64_t token) {
    auto it = _token_msg.find(token);
    if (it == _token_msg.end()) return;
    pub_msg& m = _msgs[it->second];
    if (m.acked || m.token != token || _converged || m.attempts >= kMaxAttempts) return;
    attempt(it->second);
  }

  void on_reply(const replica_reply& r) {
    auto it = _token_msg.find(r.token);
    if (it == _token_msg.end()) return violation(fmt::format("reply to unknown token {}", r.token));
    pub_msg& m = _msgs[it->second];
    if (r.error) return violation(fmt::format("publish of {} refused: {}", m.payload, r.error->description));
    if (_o.ack_before_commit && m.acked) return;
    if (m.acked && !m.id.empty() && m.acked_seq != r.seq)
      return violation(fmt::format("Msg-Id {} acknowledged as {} and as {}", m.id, m.acked_seq, r.seq));
    const std::uint64_t group = _streams[m.stream].group;
    auto [slot, fresh] = _acked[group].emplace(r.seq, m.payload);
    if (!fresh && slot->second != m.payload)
      return violation(fmt::format("stream {} seq {} acknowledged for {} and {}",
                                   _streams[m.stream].name, r.seq, slot->second, m.payload));
    m.acked = true;
    m.acked_seq = r.seq;
    ++_report.acked;
    if (_healed && m.payload[0] == 'h' && !_probe_seq.count(group)) _probe_seq[group] = r.seq;
  }

  // --- checkers
  static std::vector<storage::stored_msg> contents(storage::stream_store& st) {
    std::vector<storage::stored_msg> out;
    for (std::uint64_t seq = 1; seq <= st.last_seq(); ++seq)
      if (auto m = st.load(seq); m.ok()) out.push_back(std::move(*m));
    return out;
  }

  static bool same(const storage::stored_msg& a, const storage::stored_msg& b) {
    return a.seq == b.seq && a.ts == b.ts && a.subject == b.subject && a.headers == b.headers &&
           a.payload == b.payload;
  }

  // Replicas' contents are prefixes of the longest one; with expiry (which removes from the
  // front) every sequence two replicas both hold is the same message, and replicas at the
  // same applied index hold the same messages.
  void checkpoint() {
    for (const auto& st : _streams) {
      std::vector<std::pair<std::string, std::vector<storage::stored_msg>>> all;
      std::vector<std::uint64_t> applied;
      for (auto& s : _servers) {
        if (!s.up) continue;
        auto it = s.groups.find(st.group);
        if (it == s.groups.end()) continue;
        all.emplace_back(s.name, contents(*it->second.store));
        applied.push_back(it->second.replica->applied_index());
      }
      if (all.empty()) continue;
      if (st.expiring) {
        std::map<std::uint64_t, std::pair<std::string, const storage::stored_msg*>> by_seq;
        for (const auto& [name, msgs] : all)
          for (const auto& m : msgs) {
            auto [it, fresh] = by_seq.emplace(m.seq, std::pair{name, &m});
            if (!fresh && !same(*it->second.second, m))
              return violation(fmt::format("stream {}: {} and {} differ at seq {}", st.name, name,
                                           it->second.first, m.seq));
          }
        // An acknowledged message a replica has gone past is gone only by expiry.
        for (const auto& [name, msgs] : all) {
          if (msgs.empty()) continue;
          std::map<std::uint64_t, bool> held;
          for (const auto& m : msgs) held[m.seq] = true;
          for (const auto& [seq, payload] : _acked[st.group])
            if (seq <= msgs.back().seq && !held.count(seq) && !could_have_expired(payload))
              return violation(fmt::format("stream {}: {} lacks acknowledged seq {} ({}) before it "
                                           "could expire", st.name, name, seq, payload));
        }
        for (std::size_t a = 0; a < all.size(); ++a)
          for (std::size_t b = a + 1; b < all.size(); ++b)
            if (applied[a] == applied[b] && all[a].second.size() != all[b].second.size())
              return violation(fmt::format("stream {}: {} and {} applied {} entries but hold {} and "
                                           "{} messages", st.name, all[a].first, all[b].first,
                                           applied[a], all[a].second.size(), all[b].second.size()));
        continue;
      }
      const auto& longest = *std::max_element(all.begin(), all.end(), [](const auto& a, const auto& b) {
        return a.second.size() < b.second.size();
      });
      for (const auto& [name, msgs] : all)
        for (std::size_t k = 0; k < msgs.size(); ++k)
          if (!same(msgs[k], longest.second[k]))
            return violation(fmt::format("stream {}: {} and {} differ at position {} (seq {} / {})",
                                         st.name, name, longest.first, k, msgs[k].seq,
                                         longest.second[k].seq));
    }
  }

  void final_checks() {
    checkpoint();
    if (_failure.empty()) consumer_checks();
    if (!_failure.empty()) return;
    for (const auto& st : _streams) {
      const meta_state::stream_entry* a = nullptr;
      for (auto& s : _servers)
        if (auto* x = s.meta->find("$G", st.name)) a = x;
      if (a == nullptr) return violation("stream " + st.name + " never assigned");
      std::vector<std::vector<storage::stored_msg>> stores;
      for (const auto& peer : a->assignment.peers) {
        server& s = _servers[std::stoull(peer.substr(1)) - 1];
        auto it = s.groups.find(st.group);
        if (it == s.groups.end()) return violation(fmt::format("{} lacks stream {}", peer, st.name));
        stores.push_back(contents(*it->second.store));
        _report.lost += it->second.replica->lost_proposals();
      }
      for (const auto& c : stores) {
        if (c.size() != stores[0].size())
          return violation(fmt::format("stream {}: replicas hold {} and {} messages after settling",
                                       st.name, c.size(), stores[0].size()));
        for (std::size_t k = 0; k < c.size(); ++k)
          if (!same(c[k], stores[0][k]))
            return violation(fmt::format("stream {}: replicas differ at position {} after settling",
                                         st.name, k));
      }
      const auto& msgs = stores[0];
      if (st.expiring) {
        expiry_checks(st, msgs);
        continue;
      }
      _report.stored += msgs.size();
      std::map<std::string, std::uint64_t> ids;
      for (std::size_t k = 0; k < msgs.size(); ++k) {
        if (msgs[k].seq != k + 1) return violation(fmt::format("stream {}: gap before seq {}", st.name, msgs[k].seq));
        const auto p = msgs[k].headers.find("Nats-Msg-Id: ");
        if (p == std::string::npos) continue;
        const std::string id = msgs[k].headers.substr(p + 13, msgs[k].headers.find('\r', p) - p - 13);
        if (!ids.emplace(id, msgs[k].seq).second)
          return violation(fmt::format("stream {}: Msg-Id {} stored twice", st.name, id));
      }
      for (const auto& [seq, payload] : _acked[st.group]) {
        if (seq == 0 || seq > msgs.size() || msgs[seq - 1].payload != payload)
          return violation(fmt::format("stream {}: acknowledged seq {} ({}) not stored", st.name, seq, payload));
      }
      durable_on_majority(st, a->assignment.peers);
    }
  }

  // A message's timestamp is at least its first attempt's time, so it cannot expire before
  // that time plus its lifetime.
  bool could_have_expired(const std::string& payload) const {
    const pub_msg& m = _msgs.at(std::stoull(payload.substr(1)));  // payload: 'p' or 'h', index
    const std::int64_t life_ms = m.ttl_ms > 0 ? m.ttl_ms : kMaxAgeMs;
    return std::int64_t(m.first_attempt_ms) + life_ms <= std::int64_t(_now);
  }

  // An expiring stream after settling: nothing overdue is left (leaders proposed the
  // expiries), and an acknowledged message is gone only if it could have expired by now.
  void expiry_checks(const stream_spec& st, const std::vector<storage::stored_msg>& msgs) {
    std::map<std::uint64_t, const storage::stored_msg*> by_seq;
    std::uint64_t prev = 0;
    for (const auto& m : msgs) {
      if (m.seq <= prev) return violation(fmt::format("stream {}: seq {} after {}", st.name, m.seq, prev));
      prev = m.seq;
      by_seq[m.seq] = &m;
      const std::int64_t life = m.ttl > 0 ? m.ttl : kMaxAgeMs * 1'000'000;
      if (m.ttl != storage::ttl_never && m.ts + life + std::int64_t(4 * kExpiryTickMs) * 1'000'000 < now_ns())
        return violation(fmt::format("stream {}: seq {} overdue by {} ms and not expired", st.name,
                                     m.seq, (now_ns() - m.ts - life) / 1'000'000));
    }
    _report.expiring_stored += msgs.size();
    _report.acked_expiring += _acked[st.group].size();
    for (const auto& [seq, payload] : _acked[st.group]) {
      if (auto it = by_seq.find(seq); it != by_seq.end()) {
        if (it->second->payload != payload)
          return violation(fmt::format("stream {}: acknowledged seq {} holds {} not {}", st.name,
                                       seq, it->second->payload, payload));
        continue;
      }
      if (!could_have_expired(payload))
        return violation(fmt::format("stream {}: acknowledged seq {} ({}) gone before it could "
                                     "expire", st.name, seq, payload));
    }
    ++_report.expiring_checked;
  }

  // Reads each peer's log as a crash now would leave it.
  void durable_on_majority(const stream_spec& st, const std::vector<std::string>& peers) {
    std::map<std::uint64_t, unsigned> holders;  // seq -> peers holding the acked message
    for (const auto& peer : peers) {
      server& s = _servers[std::stoull(peer.substr(1)) - 1];
      repl::memory_log_store copy = s.disks[st.group];
      copy.crash(0);
      const auto loaded = copy.load();
      std::map<std::uint64_t, std::string> held;
      for (const auto& e : loaded.entries) {
        if (e.type != repl::entry_type::command) continue;
        auto op = re::decode_stream(e.data);
        if (!op) continue;
        if (auto* m = std::get_if<re::msg>(&*op)) held[m->seq] = m->payload;  // later wins
      }
      for (const auto& [seq, payload] : _acked[st.group])
        if (auto h = held.find(seq); h != held.end() && h->second == payload) ++holders[seq];
    }
    const unsigned majority = unsigned(peers.size() / 2 + 1);
    for (const auto& [seq, payload] : _acked[st.group])
      if (holders[seq] < majority)
        return violation(fmt::format("stream {}: acknowledged seq {} durable on {} of {} peers",
                                     st.name, seq, holders[seq], peers.size()));
  }

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
  bool _converged = false;
  bool _done = false;
  std::uint64_t _heal_at = 0;
  std::uint64_t _settle_until = 0;
  std::string _failure;
  replica_sim_report _report;
};

}  // namespace

replica_sim_report run_replica_simulation(const replica_sim_options& options) {
  return simulation(options).run();
}

}  // namespace js::sim
