#include "tests/unit/repl/raft_sim.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "src/base/rng.h"
#include "src/repl/memory_log_store.h"
#include "src/repl/raft_codec.h"
#include "src/repl/raft_group.h"

namespace repl::sim {
namespace {

constexpr std::uint64_t kGroup = 7;
constexpr std::uint64_t kMaxEvents = 20'000'000;  // a runaway run is a failure, not a hang

enum class ev_kind { deliver, disk_done, timer, restart, chaos, client, operate };

struct event {
  ev_kind kind;
  unsigned node = 0;        // target server index
  unsigned from = 0;        // deliver: sender index
  std::uint64_t gen = 0;    // incarnation (disk_done, restart) or timer generation
  std::uint64_t seq = 0;    // disk_done: log_store write seq
  std::vector<std::uint8_t> frame;
};

struct server {
  std::uint64_t id = 0;
  memory_log_store disk;  // survives crashes; its in-memory view does not
  std::unique_ptr<raft_group> group;
  std::uint64_t incarnation = 0;
  std::uint64_t timer_gen = 0;
  std::optional<std::uint64_t> timer_at;
  std::uint64_t disk_free_at = 0;      // writes complete in order
  std::vector<entry> applied;          // the state machine: applied[i - 1] is index i
  bool applied_after_heal = false;
  bool joiner = false;   // membership: starts later, in join mode
  bool started = false;  // booted at least once
};

std::vector<std::uint8_t> bytes_of(const std::string& s) { return {s.begin(), s.end()}; }

// The sim state machine's snapshot: every applied entry (u64 term, u8 type, u32 length, data).
std::vector<std::uint8_t> encode_applied(const std::vector<entry>& applied) {
  std::vector<std::uint8_t> out;
  auto put = [&](std::uint64_t v, int n) {
    for (int i = 0; i < n; ++i) out.push_back(std::uint8_t(v >> (8 * i)));
  };
  for (const entry& e : applied) {
    put(e.term, 8), put(std::uint8_t(e.type), 1), put(e.data.size(), 4);
    out.insert(out.end(), e.data.begin(), e.data.end());
  }
  return out;
}

bool decode_applied(const std::vector<std::uint8_t>& in, std::vector<entry>& applied) {
  applied.clear();
  std::size_t at = 0;
  auto get = [&](int n) {
    std::uint64_t v = 0;
    for (int i = 0; i < n; ++i) v |= std::uint64_t(in[at + std::size_t(i)]) << (8 * i);
    at += std::size_t(n);
    return v;
  };
  while (at < in.size()) {
    if (in.size() - at < 13) return false;
    entry e;
    e.term = get(8);
    e.type = entry_type(get(1));
    const std::size_t len = std::size_t(get(4));
    if (in.size() - at < len) return false;
    e.data.assign(in.begin() + std::ptrdiff_t(at), in.begin() + std::ptrdiff_t(at + len));
    at += len;
    applied.push_back(std::move(e));
  }
  return true;
}

class simulation {
 public:
  explicit simulation(const sim_options& o) : _o(o), _rng(o.seed) {
    const unsigned n = o.servers + (o.membership ? 1 : 0);
    _servers.resize(n);
    for (unsigned i = 0; i < n; ++i) _servers[i].id = i + 1;
    if (o.membership) _servers.back().joiner = true;
    _blocked.assign(n, std::vector<bool>(n, false));
  }

  sim_report run() {
    for (auto& s : _servers)
      if (!s.joiner) boot(s);
    if (_o.membership) {
      schedule(300 + _rng.below(_o.chaos_ms / 2), {ev_kind::restart, unsigned(_servers.size() - 1), 0, 0});
      schedule(1 + _rng.below(50), {ev_kind::operate});
    }
    schedule(1 + _rng.below(100), {ev_kind::chaos});
    schedule(1 + _rng.below(20), {ev_kind::client});
    while (!_queue.empty() && _failure.empty() && !_converged) {
      auto node = _queue.extract(_queue.begin());
      _now = node.key().first;
      if (!_healed && _now >= _o.chaos_ms) heal();
      dispatch(node.mapped());
      after_event();
      if (++_report.events > kMaxEvents) violation("event limit reached");
    }
    if (_failure.empty() && !_converged) violation("event queue ran dry before convergence");
    if (_failure.empty()) final_checks();
    _report.ok = _failure.empty();
    _report.failure = _failure;
    _report.proposals_acked = _committed.size();
    _report.leaders = _leader_of_term.size();
    return _report;
  }

 private:
  void schedule(std::uint64_t at, event e) { _queue.emplace(std::pair{at, _order++}, std::move(e)); }

  void violation(const std::string& what) {
    if (_failure.empty()) _failure = fmt::format("t={}ms: {}", _now, what);
  }

  bool alive(const server& s) const { return s.group != nullptr; }

  void boot(server& s) {
    group_config cfg;
    cfg.group_id = kGroup;
    cfg.self = s.id;
    for (const auto& p : _servers)
      if (!p.joiner) cfg.voters.push_back(p.id);  // the joiner: these are the servers it knows
    cfg.join = s.joiner;
    s.started = true;
    cfg.election_timeout_ms = _o.election_timeout_ms;
    cfg.heartbeat_timeout_ms = _o.heartbeat_timeout_ms;
    cfg.seed = std::uint32_t(_rng.next());
    cfg.drop_stale_frames = _o.drop_stale_frames;
    cfg.snapshot_trailing = _o.snapshot_trailing;
    cfg.install_snapshot_timeout_ms = 500;
    s.group = std::make_unique<raft_group>(cfg, s.disk);
    s.timer_at.reset();
    s.applied.clear();
    actions out;
    if (!s.group->start(_now, out)) {
      violation(fmt::format("server {} failed to start: {}", s.id, s.group->error()));
      return;
    }
    if (_now >= _o.trace_from_ms) {
      const stored_snapshot* sn = s.disk.snapshot();
      std::printf("t=%llu boot %llu: snapshot %llu conf %llu, log %llu..%llu: %s\n",
                  (unsigned long long)_now, (unsigned long long)s.id,
                  (unsigned long long)(sn ? sn->meta.index : 0), (unsigned long long)(sn ? sn->meta.conf_index : 0),
                  (unsigned long long)s.disk.first_index(), (unsigned long long)s.disk.last_index(),
                  s.group->debug_state().c_str());
    }
    handle(s, out);
  }

  void crash(server& s) {
    s.group.reset();
    ++s.incarnation;
    ++_report.crashes;
    s.timer_at.reset();
    s.applied.clear();
    // The unsynced tail: lost, kept whole (written but never acknowledged), or torn.
    std::size_t keep = 0;
    const std::size_t pending = s.disk.pending_bytes();
    if (_o.torn_writes && pending > 0)
      keep = _rng.chance(0.3) ? pending : std::size_t(_rng.below(pending + 1));
    s.disk.crash(keep);
    schedule(_now + 20 + _rng.below(1500), {ev_kind::restart, unsigned(s.id - 1), 0,
                                            s.incarnation});
  }

  void dispatch(event& e) {
    server& s = _servers[e.node];
    actions out;
    switch (e.kind) {
      case ev_kind::deliver:
        if (!alive(s) || (!_healed && _blocked[e.from][e.node])) return;
        if (_now >= _o.trace_from_ms) trace(e);
        s.group->on_frame(_now, e.frame, out);
        break;
      case ev_kind::disk_done:
        if (!alive(s) || e.gen != s.incarnation) return;
        if (!_o.disk_lies) s.disk.sync_through(e.seq);
        s.group->on_persisted(_now, e.seq, out);
        break;
      case ev_kind::timer:
        if (!alive(s) || e.gen != s.timer_gen) return;
        s.timer_at.reset();  // whatever raft answers now is the next timer
        s.group->on_timeout(_now, out);
        break;
      case ev_kind::restart:
        if (!alive(s) && e.gen == s.incarnation) boot(s);
        return;
      case ev_kind::chaos:
        chaos();
        return;
      case ev_kind::client:
        client();
        return;
      case ev_kind::operate:
        operate();
        return;
    }
    handle(s, out);
  }

  void trace(const event& e) {
    auto d = decode_frame(e.frame);
    if (!d) return;
    const raft_message& m = d->msg;
    std::string what;
    switch (m.type) {
      case RAFT_APPEND_ENTRIES:
        what = fmt::format("AE term {} prev {}^{} n {} commit {}", m.append_entries.term,
                           m.append_entries.prev_log_index, m.append_entries.prev_log_term,
                           m.append_entries.n_entries, m.append_entries.leader_commit);
        break;
      case RAFT_APPEND_ENTRIES_RESULT:
        what = fmt::format("AER term {} rejected {} last {}", m.append_entries_result.term,
                           m.append_entries_result.rejected,
                           m.append_entries_result.last_log_index);
        break;
      default:
        what = fmt::format("type {}", int(m.type));
    }
    std::fprintf(stderr, "%llu: %u -> %u %s\n", (unsigned long long)_now, e.from + 1,
                 e.node + 1, what.c_str());
    drop_decoded(d->msg);
  }

  void handle(server& s, actions& out) {
    const unsigned from = unsigned(s.id - 1);
    for (auto& f : out.sends) {
      if (f.to == 0 || f.to > _servers.size()) {
        violation(fmt::format("server {} sent to unknown server {}", s.id, f.to));
        continue;
      }
      if (!_healed && _rng.chance(_o.loss)) continue;
      const int copies = !_healed && _rng.chance(_o.duplicate) ? 2 : 1;
      for (int c = 0; c < copies; ++c) {
        std::uint64_t delay = 1 + _rng.below(_o.max_delay_ms);
        if (!_healed && _rng.chance(_o.long_delay)) delay = 1 + _rng.below(10 * _o.max_delay_ms);
        schedule(_now + delay, {ev_kind::deliver, unsigned(f.to - 1), from, 0, 0, f.frame});
      }
    }
    for (std::uint64_t seq : out.writes) {
      const std::uint64_t at = std::max(_now + 1 + _rng.below(4), s.disk_free_at);
      s.disk_free_at = at;
      schedule(at, {ev_kind::disk_done, from, 0, s.incarnation, seq});
    }
    for (auto& c : out.applies) apply(s, c);
    if (out.timer_at && out.timer_at != s.timer_at) {
      s.timer_at = out.timer_at;
      ++s.timer_gen;
      schedule(std::max(*out.timer_at, _now + 1), {ev_kind::timer, from, 0, s.timer_gen});
    }
  }

  void apply(server& s, committed_entry& c) {
    if (c.value.type == entry_type::snapshot) {
      ++_report.installs;
      std::vector<entry> restored;
      if (!decode_applied(c.value.data, restored) || restored.size() != c.index)
        return violation(fmt::format("server {}: snapshot at {} does not decode to its entries",
                                     s.id, c.index));
      if (c.index < s.applied.size())
        return violation(fmt::format("server {} installed snapshot {} behind its applied {}", s.id,
                                     c.index, s.applied.size()));
      for (std::uint64_t i = 0; i < restored.size(); ++i) {
        auto [it, first] = _committed.emplace(i + 1, restored[i]);
        if (!first && !(it->second == restored[i]))
          return violation(fmt::format("server {}: snapshot's index {} differs from the committed entry",
                                       s.id, i + 1));
      }
      s.applied = std::move(restored);
      if (_now >= _o.trace_from_ms && s.group)
        std::printf("t=%llu server %llu restored snapshot %llu: %s\n", (unsigned long long)_now,
                    (unsigned long long)s.id, (unsigned long long)c.index, s.group->debug_state().c_str());
      if (_healed && !s.applied.empty() && !s.applied.back().data.empty() && s.applied.back().data[0] == 'h')
        s.applied_after_heal = true;
      return;
    }
    if (c.index != s.applied.size() + 1) {
      violation(fmt::format("server {} applied index {} after {}", s.id, c.index,
                            s.applied.size()));
      return;
    }
    auto [it, first] = _committed.emplace(c.index, c.value);
    if (!first && !(it->second == c.value)) {
      violation(fmt::format("index {} applied with term {} on server {} but term {} elsewhere",
                            c.index, c.value.term, s.id, it->second.term));
      return;
    }
    if (_healed && !c.value.data.empty() && c.value.data[0] == 'h') s.applied_after_heal = true;
    s.applied.push_back(std::move(c.value));
  }

  void maybe_snapshot(server& s) {
    if (_o.snapshot_every == 0 || s.applied.empty()) return;
    if (s.applied.size() < s.group->snapshot_index() + _o.snapshot_every) return;
    actions out;
    auto data = std::make_shared<const std::vector<std::uint8_t>>(encode_applied(s.applied));
    if (s.group->take_snapshot(_now, s.applied.size(), std::move(data), out)) {
      ++_report.snapshots;
      if (_now >= _o.trace_from_ms)
        std::printf("t=%llu server %llu snapshot at %zu: %s\n", (unsigned long long)_now,
                    (unsigned long long)s.id, s.applied.size(), s.group->debug_state().c_str());
    }
    handle(s, out);
  }

  void after_event() {
    for (auto& s : _servers) {
      if (!alive(s)) continue;
      if (s.group->failed()) {
        violation(fmt::format("server {}: {}", s.id, s.group->error()));
        return;
      }
      maybe_snapshot(s);
      if (s.group->current_role() != role::leader) continue;
      auto [it, first] = _leader_of_term.emplace(s.group->term(), s.id);
      if (!first && it->second != s.id)
        violation(fmt::format("two leaders in term {}: servers {} and {}", s.group->term(),
                              it->second, s.id));
    }
    if (!_healed) return;
    _converged = std::all_of(_servers.begin(), _servers.end(), [&](const server& s) {
      return s.applied_after_heal || (_o.membership && s.id == 1 && _report.removed);
    });
    if (_o.membership && !(_report.joined && _report.removed)) _converged = false;
    if (_converged) {
      _report.recovery_ms = _now - _heal_at;
    } else if (_now > _heal_at + _o.liveness_bound_ms) {
      std::string state;
      for (auto& s : _servers)
        state += fmt::format(" [{}: {}, applied {}, disk seq {}/{}]", s.id,
                             alive(s) ? s.group->debug_state() : "down", s.applied.size(),
                             s.disk.durable_seq(), s.disk.last_seq());
      violation(fmt::format("liveness: not converged {} ms after healing:{}",
                            _o.liveness_bound_ms, state));
    }
  }

  // Faults: partitions of several shapes, and crashes.
  void chaos() {
    if (_healed) return;
    const unsigned n = unsigned(_servers.size());
    if (_o.partitions && _rng.chance(0.35)) {
      for (auto& row : _blocked) std::fill(row.begin(), row.end(), false);
      switch (_rng.below(4)) {
        case 0:  // healed
          break;
        case 1: {  // one server cut off both ways
          const unsigned x = unsigned(_rng.below(n));
          for (unsigned j = 0; j < n; ++j) _blocked[x][j] = _blocked[j][x] = true;
          break;
        }
        case 2: {  // asymmetric: some links lose one direction only
          const unsigned links = 1 + unsigned(_rng.below(n));
          for (unsigned k = 0; k < links; ++k)
            _blocked[_rng.below(n)][_rng.below(n)] = true;
          break;
        }
        default: {  // two sides
          std::vector<bool> side(n);
          for (unsigned j = 0; j < n; ++j) side[j] = _rng.chance(0.5);
          for (unsigned a = 0; a < n; ++a)
            for (unsigned b = 0; b < n; ++b) _blocked[a][b] = side[a] != side[b];
          break;
        }
      }
    }
    if (_o.crashes && _rng.chance(0.12)) {
      server& s = _servers[_rng.below(n)];
      if (alive(s)) crash(s);
    }
    schedule(_now + 50 + _rng.below(250), {ev_kind::chaos});
  }

  // The client: proposes to whoever says it leads; entries from after the heal start 'h'.
  void client() {
    for (auto& s : _servers) {
      if (!alive(s) || s.group->current_role() != role::leader) continue;
      actions out;
      const auto payload = bytes_of(fmt::format("{}{}", _healed ? 'h' : 'p', _next_payload++));
      const propose_result r = s.group->propose(_now, payload, out);
      if (r.status == propose_status::failed)
        violation(fmt::format("server {} propose failed: {}", s.id, s.group->error()));
      handle(s, out);
    }
    schedule(_now + 5 + _rng.below(30), {ev_kind::client});
  }

  void heal() {
    _healed = true;
    _heal_at = _now;
    for (auto& row : _blocked) std::fill(row.begin(), row.end(), false);
    for (auto& s : _servers)
      if (!alive(s)) boot(s);
  }

  const server* leader() const {
    for (const auto& s : _servers)
      if (alive(s) && s.group->current_role() == role::leader) return &s;
    return nullptr;
  }

  // The operator (membership runs): add the joiner, promote it, then remove server 1. What
  // counts is the leader's committed configuration (no change pending).
  void operate() {
    schedule(_now + 20 + _rng.below(40), {ev_kind::operate});
    const server* lp = leader();
    if (lp == nullptr) return;
    server& l = _servers[lp->id - 1];
    const std::uint64_t joiner = _servers.back().id;
    actions out;
    if (!l.group->change_pending()) {
      bool joiner_votes = false, one_member = false;
      for (const auto& m : l.group->members()) {
        if (m.id == joiner && m.voter) joiner_votes = true;
        if (m.id == 1) one_member = true;
      }
      if (joiner_votes) _report.joined = true;
      if (_report.joined && !one_member) _report.removed = true;
      if (!l.group->is_member(joiner)) {
        l.group->add_peer(_now, joiner, out);
      } else if (!joiner_votes) {
        l.group->promote_caught_up(_now, out);
      } else if (one_member) {
        if (l.id == 1) {
          l.group->transfer_leadership(_now, joiner, out);
        } else {
          l.group->remove_peer(_now, 1, out);
        }
      }
    }
    handle(l, out);
  }

  void final_checks() {
    // Applied logs identical: each is a prefix of the longest.
    const server* longest = &_servers[0];
    for (auto& s : _servers)
      if (s.applied.size() > longest->applied.size()) longest = &s;
    for (auto& s : _servers)
      if (!std::equal(s.applied.begin(), s.applied.end(), longest->applied.begin()))
        return violation(fmt::format("server {} applied log differs from server {}", s.id,
                                     longest->id));
    _report.final_index = longest->applied.size();
    // Every entry applied anywhere is durable on a majority: read each disk as a crash
    // right now would leave it.
    std::vector<loaded_log> durable;
    unsigned counted = 0;
    for (auto& s : _servers) {
      if (_o.membership && s.id == 1) continue;  // removed: the final voters count
      memory_log_store copy = s.disk;
      copy.crash(0);
      durable.push_back(copy.load());
      ++counted;
    }
    const unsigned majority = counted / 2 + 1;
    std::vector<std::vector<entry>> snapshots(durable.size());
    for (std::size_t i = 0; i < durable.size(); ++i)
      if (durable[i].snapshot && durable[i].snapshot->data)
        (void)decode_applied(*durable[i].snapshot->data, snapshots[i]);
    for (const auto& [index, e] : _committed) {
      unsigned have = 0;
      for (std::size_t i = 0; i < durable.size(); ++i) {
        const loaded_log& d = durable[i];
        const std::uint64_t off = index - d.start_index;
        if (index >= d.start_index && off < d.entries.size() && d.entries[off] == e) ++have;
        else if (index <= snapshots[i].size() && snapshots[i][index - 1] == e) ++have;
      }
      if (have < majority)
        return violation(fmt::format("committed index {} durable on {} of {} servers", index,
                                     have, counted));
    }
  }

  sim_options _o;
  base::rng _rng;
  std::uint64_t _now = 0;
  std::uint64_t _order = 0;
  std::map<std::pair<std::uint64_t, std::uint64_t>, event> _queue;
  std::vector<server> _servers;
  std::vector<std::vector<bool>> _blocked;  // [from][to]
  std::map<std::uint64_t, entry> _committed;
  std::map<std::uint64_t, std::uint64_t> _leader_of_term;
  std::uint64_t _next_payload = 1;
  bool _healed = false;
  bool _converged = false;
  std::uint64_t _heal_at = 0;
  std::string _failure;
  sim_report _report;
};

}  // namespace

sim_report run_simulation(const sim_options& options) { return simulation(options).run(); }

}  // namespace repl::sim
