// The replicated-JetStream simulation (replica_sim.h): servers, groups, events, faults, the
// meta leader and the publishers.
#include "tests/unit/js/replica_sim_world.h"

namespace js::sim::detail {


stream_config make_config(const std::string& name, unsigned replicas, bool expiring) {
  stream_config c;
  if (expiring) {
    c.max_age = kMaxAgeMs * 1'000'000;
    c.allow_msg_ttl = true;
    // Subject delete markers: an expire entry stores markers at the next sequences.
    c.subject_delete_marker_ttl = 1'000'000'000;
    c.allow_rollup_hdrs = true;
  }
  c.name = name;
  c.subjects = {name + ".>"};
  c.storage = storage_type::memory;
  c.num_replicas = replicas;
  c.duplicate_window = kDefaultDuplicateWindow;
  c.max_msgs = c.max_bytes = c.max_msgs_per_subject = c.max_msg_size = -1;
  return c;
}

replica_sim_report simulation::run() {
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

const stream_spec* simulation::spec_of(std::uint64_t group) const {
  for (const auto& st : _streams)
    if (st.group == group) return &st;
  return nullptr;
}

// --- groups
void simulation::create_group(server& s, std::uint64_t gid, std::vector<std::uint64_t> voters, const stream_config* cfg, storage::stream_store* consumer_of) {
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
    repl::replicated_log* log = g.log.get();
    if (_o.async_proposals) {
      g.queued = std::make_unique<queued_log>(*g.log, *g.raft);
      log = g.queued.get();
    }
    g.replica = std::make_unique<stream_replica>(*cfg, *g.store, *log, s.name, !_o.skip_leader_start);
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

void simulation::boot(server& s) {
  s.up = true;
  s.meta = std::make_unique<meta_state>(s.name);
  std::vector<std::uint64_t> all;
  for (const auto& p : _servers) all.push_back(p.id);
  create_group(s, kMetaGroup, all, nullptr);
}

void simulation::crash(server& s) {
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

void simulation::handle(server& s, group_node& g, actions& out) {
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

void simulation::apply_meta(server& s, const repl::committed_entry& c) {
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
void simulation::dispatch(event& e) {
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
    case ev_kind::propose_turn:
      if (e.gen != s.incarnation || !g.queued) return;
      g.queued->turn_scheduled = false;
      drive(s, g, [&](actions& out) { propose_turn(g, out); });
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

void simulation::propose_turn(group_node& g, actions& out) {
  auto& q = g.queued->queue;
  while (!q.empty()) {
    const std::uint64_t term = q.front().term;
    std::size_t n = 0;
    while (n < q.size() && q[n].term == term) ++n;
    auto leads = [&] { return g.raft->current_role() == repl::role::leader && g.raft->term() == term; };
    std::uint64_t index = 0;
    if (leads()) {
      std::vector<std::span<const std::uint8_t>> items;
      for (std::size_t k = 0; k < n; ++k) items.emplace_back(q[k].data);
      const auto r = g.raft->propose_batch(_now, items, out);
      if (r.status == repl::propose_status::ok) index = r.index;
      else if (leads()) break;  // a leadership transfer: kept for the next turn
    }
    g.replica->on_proposed(q.front().ticket, n, index, term);  // before the entries apply
    q.erase(q.begin(), q.begin() + std::ptrdiff_t(n));
  }
  g.queued->refresh_view();  // the role event comes after the turn's results
}

void simulation::after_event() {
  for (auto& s : _servers) {
    if (!s.up) continue;
    for (auto& [gid, g] : s.groups)
      if (g.queued && (!g.queued->queue.empty() || g.queued->view_stale()) && !g.queued->turn_scheduled) {
        g.queued->turn_scheduled = true;
        schedule(_now + _rng.below(3), {ev_kind::propose_turn, index_of(s), 0, gid, s.incarnation});
      }
  }
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

std::string simulation::progress() {
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
bool simulation::all_caught_up() {
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

// Every stream replica's clock tick: only leaders propose (stream_replica::tick).
void simulation::expiry_tick() {
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
void simulation::chaos() {
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

void simulation::stepdown() {
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

void simulation::heal() {
  _healed = true;
  _heal_at = _now;
  for (auto& row : _blocked) std::fill(row.begin(), row.end(), false);
  for (auto& s : _servers)
    if (!s.up) boot(s);
}

// --- the meta leader places and assigns the streams until each one is in its table.
void simulation::controller() {
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
void simulation::client() {
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
void simulation::attempt(std::size_t i) {
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

void simulation::on_timeout(std::uint64_t token) {
  auto it = _token_msg.find(token);
  if (it == _token_msg.end()) return;
  pub_msg& m = _msgs[it->second];
  if (m.acked || m.token != token || _converged || m.attempts >= kMaxAttempts) return;
  attempt(it->second);
}

void simulation::on_reply(const replica_reply& r) {
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

}  // namespace js::sim::detail

namespace js::sim {

replica_sim_report run_replica_simulation(const replica_sim_options& options) {
  return detail::simulation(options).run();
}

}  // namespace js::sim
