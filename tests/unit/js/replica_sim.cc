#include "tests/unit/js/replica_sim.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "src/base/rng.h"
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
                     timeout };

struct event {
  ev_kind kind;
  unsigned node = 0;
  unsigned from = 0;
  std::uint64_t group = 0;
  std::uint64_t gen = 0;
  std::uint64_t seq = 0;  // disk_done: write seq; timer: incarnation; timeout: token
  std::vector<std::uint8_t> frame;
};

struct group_node {
  std::uint64_t id = 0;
  std::unique_ptr<repl::raft_group> raft;
  std::unique_ptr<repl::group_log> log;
  std::unique_ptr<storage::memory_store> store;  // stream groups
  std::unique_ptr<stream_replica> replica;
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
  std::uint64_t group = 0;
  std::uint64_t last_proposed_ms = 0;
  bool proposed = false;
};

struct pub_msg {
  unsigned stream = 0;
  std::string id;  // "" = no Nats-Msg-Id
  std::string payload;
  bool acked = false;
  std::uint64_t acked_seq = 0;
  unsigned attempts = 0;
  std::uint64_t token = 0;  // the live attempt
};

stream_config make_config(const std::string& name, unsigned replicas) {
  stream_config c;
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
    _streams = {{"A", r}, {"B", r}, {"C", o.servers >= 5 ? 5u : r}};
    for (unsigned i = 0; i < _streams.size(); ++i) _streams[i].group = kFirstStreamGroup + i;
  }

  replica_sim_report run() {
    for (auto& s : _servers) boot(s);
    schedule(1 + _rng.below(100), {ev_kind::chaos});
    schedule(1, {ev_kind::controller});
    schedule(1 + _rng.below(20), {ev_kind::client});
    schedule(250, {ev_kind::checkpoint});
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
                    const stream_config* cfg) {
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
    for (int round = 0; round < 4 && g.replica && s.up; ++round) {
      actions more;
      g.log->bind(_now, &more);
      g.replica->on_role(now_ns());
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
    } else if (_now >= _settle_until) {
      _done = true;
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
    const auto& st = _streams[_rng.below(_streams.size())];
    for (auto& s : _servers) {
      if (!s.up) continue;
      auto it = s.groups.find(st.group);
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
        a.config_json = to_json(make_config(st.name, st.replicas), false).dump();
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
    const std::string hdr = m.id.empty() ? "" : "NATS/1.0\r\nNats-Msg-Id: " + m.id + "\r\n\r\n";
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

  // Replicas' contents are prefixes of the longest one.
  void checkpoint() {
    for (const auto& st : _streams) {
      std::vector<std::pair<std::string, std::vector<storage::stored_msg>>> all;
      for (auto& s : _servers) {
        if (!s.up) continue;
        auto it = s.groups.find(st.group);
        if (it != s.groups.end()) all.emplace_back(s.name, contents(*it->second.store));
      }
      if (all.empty()) continue;
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
      for (const auto& c : stores)
        if (c.size() != stores[0].size())
          return violation(fmt::format("stream {}: replicas hold {} and {} messages after settling",
                                       st.name, c.size(), stores[0].size()));
      const auto& msgs = stores[0];
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
