#include "src/repl/raft_group.h"

#include "src/repl/raft_c.h"

#include <algorithm>
#include <cstring>
#include <utility>

#include "src/repl/raft_codec.h"

namespace repl {
namespace {

void silent_emit(raft_tracer*, int, const void*) {}
raft_tracer silent_tracer{nullptr, 2, silent_emit};

entry to_entry(const raft_entry& e) {
  entry out;
  out.term = e.term;
  out.type = entry_type(e.type);
  const auto* p = static_cast<const std::uint8_t*>(e.buf.base);
  out.data.assign(p, p + e.buf.len);
  return out;
}

// A raft_entry array with one raft_malloc'd batch, as raft_step expects for RAFT_START.
raft_entry* to_raft_entries(const std::vector<entry>& entries) {
  std::size_t total = 0;
  for (const entry& e : entries) total += e.data.size();
  auto* out = static_cast<raft_entry*>(raft_calloc(entries.size(), sizeof(raft_entry)));
  auto* batch = static_cast<std::uint8_t*>(raft_malloc(total == 0 ? 1 : total));
  if (out == nullptr || batch == nullptr) {
    raft_free(out);
    raft_free(batch);
    return nullptr;
  }
  std::size_t at = 0;
  for (std::size_t i = 0; i < entries.size(); ++i) {
    if (!entries[i].data.empty()) std::memcpy(batch + at, entries[i].data.data(), entries[i].data.size());
    out[i].term = entries[i].term;
    out[i].type = raft_entry_type(entries[i].type);
    out[i].buf = {batch + at, entries[i].data.size()};
    out[i].batch = batch;
    at += entries[i].data.size();
  }
  return out;
}

std::vector<std::uint8_t> encode_configuration(const raft_configuration& c) {
  raft_buffer buf{};
  if (raft_configuration_encode(&c, &buf) != 0) return {};
  const auto* p = static_cast<const std::uint8_t*>(buf.base);
  std::vector<std::uint8_t> out(p, p + buf.len);
  raft_free(buf.base);
  return out;
}

}  // namespace

const char* role_name(role r) {
  switch (r) {
    case role::follower: return "follower";
    case role::candidate: return "candidate";
    case role::leader: return "leader";
    default: return "unavailable";
  }
}

raft_group::raft_group(group_config config, log_store& log)
    : _config(std::move(config)), _log(log), _raft(std::make_unique<::raft>()) {
  _known = _config.voters;
  if (!_config.join) _voters = _config.voters;
  for (std::uint64_t v : _known) _addresses.push_back(std::to_string(v));
  _sent.assign(_known.size(), 0);
  _received.assign(_known.size(), {});
  _pieces.assign(_known.size(), {});
  std::memset(_raft.get(), 0, sizeof(::raft));
  // No raft_io and no raft_fsm: the step API, raft keeps only terms of its log in memory.
  const int rv = raft_init(_raft.get(), nullptr, nullptr, _config.self,
                           std::to_string(_config.self).c_str());
  if (rv != 0) {
    _raft.reset();
    fail("raft_init", rv);
    return;
  }
  _raft->tracer = &silent_tracer;
  raft_seed(_raft.get(), _config.seed);  // first: setting the timeout already draws from it
  raft_set_election_timeout(_raft.get(), _config.election_timeout_ms);
  raft_set_heartbeat_timeout(_raft.get(), _config.heartbeat_timeout_ms);
  raft_set_pre_vote(_raft.get(), _config.pre_vote);
  raft_set_install_snapshot_timeout(_raft.get(), _config.install_snapshot_timeout_ms);
}

raft_group::~raft_group() {
  if (_raft) raft_close(_raft.get(), nullptr);
}

void raft_group::fail(const char* what, int rv) {
  if (!_error.empty()) return;
  _error = std::string(what) + ": " + raft_strerror(rv);
  if (_raft && _raft->errmsg[0] != '\0') _error += std::string(" (") + _raft->errmsg + ")";
}

int raft_group::peer_index(std::uint64_t id) const {
  for (std::size_t i = 0; i < _known.size(); ++i)
    if (_known[i] == id) return int(i);
  return -1;
}

// libraft 0.22.1 records a follower's uncommitted configuration at the index of the first
// entry of the AppendEntries batch that carried it, not at the change entry's own index
// (found by the membership simulation: a command at that index, so the commit of the real
// change never cleared it and the next leader refused every change with RAFT_CANTCHANGE).
// Point it at the batch's last change entry, which is the one raft applied.
void raft_group::fix_uncommitted_configuration_index() {
  if (!_raft) return;
  const raft_index at = _raft->configuration_uncommitted_index;
  if (at == 0) return;
  const entry* e = _log.entry_at(at);
  if (e == nullptr || e->type == entry_type::change) return;
  const raft_index last = raft_last_index(_raft.get());
  for (raft_index i = last; i > at; --i) {
    const entry* c = _log.entry_at(i);
    if (c != nullptr && c->type == entry_type::change) {
      _raft->configuration_uncommitted_index = i;
      return;
    }
  }
}

void raft_group::learn_members() {
  if (!_raft) return;
  const raft_configuration& c = _raft->configuration;
  if (c.n == 0) return;  // a joining server before the leader's log arrived
  _voters.clear();
  for (unsigned i = 0; i < c.n; ++i) {
    const std::uint64_t id = c.servers[i].id;
    if (c.servers[i].role == RAFT_VOTER) _voters.push_back(id);
    if (peer_index(id) < 0) add_known(id);
  }
}

void raft_group::add_known(std::uint64_t id) {
  _known.push_back(id);
  _addresses.push_back(std::to_string(id));
  _sent.push_back(0);
  _received.push_back({});
  _pieces.push_back({});
}

std::vector<raft_group::member> raft_group::members() const {
  std::vector<member> out;
  if (!_raft) return out;
  const raft_configuration& c = _raft->configuration;
  for (unsigned i = 0; i < c.n; ++i) out.push_back({c.servers[i].id, c.servers[i].role == RAFT_VOTER});
  return out;
}

bool raft_group::is_member(std::uint64_t id) const {
  for (const member& m : members())
    if (m.id == id) return true;
  return false;
}

bool raft_group::change_pending() const { return _raft && _raft->configuration_uncommitted_index != 0; }

bool raft_group::start(std::uint64_t now_ms, actions& out) {
  if (failed() || _started) return false;
  if (_config.self == 0 || (!_config.join && std::find(_config.voters.begin(), _config.voters.end(),
                                                         _config.self) == _config.voters.end())) {
    _error = "start: this server is not one of the group's voters";
    return false;
  }
  loaded_log loaded = _log.load();
  if (loaded.hard.term == 0 && !loaded.entries.empty()) {
    _error = "start: the log has entries but no term was saved";
    return false;
  }
  if (loaded.hard.term == 0 && _config.join) {
    loaded.hard = {0, 0, 1};  // nothing to bootstrap: the leader sends the log from index 1
    loaded.start_index = 1;
    _log.save_hard_state(loaded.hard);
  } else if (loaded.hard.term == 0) {
    raft_configuration conf;
    raft_configuration_init(&conf);
    for (std::size_t i = 0; i < _config.voters.size(); ++i) {
      const int rv = raft_configuration_add(&conf, _config.voters[i], _addresses[i].c_str(),
                                            RAFT_VOTER);
      if (rv != 0) {
        raft_configuration_close(&conf);
        fail("start: voters", rv);
        return false;
      }
    }
    raft_buffer buf{};
    const int rv = raft_configuration_encode(&conf, &buf);
    raft_configuration_close(&conf);
    if (rv != 0) {
      fail("start: encode configuration", rv);
      return false;
    }
    entry first;
    first.term = 1;
    first.type = entry_type::change;
    const auto* p = static_cast<const std::uint8_t*>(buf.base);
    first.data.assign(p, p + buf.len);
    raft_free(buf.base);
    loaded.hard = {1, 0, 1};
    loaded.start_index = 1;
    loaded.entries.assign(1, first);
    _log.bootstrap(loaded.hard, first);
  } else {
    ++loaded.hard.incarnation;
    _log.save_hard_state(loaded.hard);
  }
  _incarnation = loaded.hard.incarnation;
  raft_event ev{};
  ev.time = now_ms;
  ev.type = RAFT_START;
  ev.start.term = loaded.hard.term;
  ev.start.voted_for = loaded.hard.voted_for;
  ev.start.metadata = nullptr;
  raft_snapshot_metadata snapshot{};
  if (loaded.snapshot && loaded.start_index + loaded.entries.size() <= loaded.snapshot->meta.index) {
    // The log does not reach the snapshot (a rewrite's image cut short): it starts after it.
    loaded.entries.clear();
    loaded.start_index = loaded.snapshot->meta.index + 1;
  }
  if (loaded.snapshot) {
    // The owner restores the snapshot first; raft starts with it as applied and committed.
    const stored_snapshot& s = *loaded.snapshot;
    raft_buffer cb{const_cast<std::uint8_t*>(s.meta.conf.data()), s.meta.conf.size()};
    if (s.meta.conf.empty() || raft_configuration_decode(&cb, &snapshot.configuration) != 0) {
      _error = "start: the snapshot's configuration does not decode";
      return false;
    }
    snapshot.index = s.meta.index;
    snapshot.term = s.meta.term;
    snapshot.configuration_index = s.meta.conf_index;
    ev.start.metadata = &snapshot;  // raft takes the configuration
    _last_applied = s.meta.index;
    committed_entry restore{s.meta.index, entry{s.meta.term, entry_type::snapshot, {}}};
    if (s.data) restore.value.data = *s.data;
    out.applies.push_back(std::move(restore));
  }
  ev.start.start_index = loaded.start_index;
  raft_entry* entries = nullptr;
  if (!loaded.entries.empty()) {
    entries = to_raft_entries(loaded.entries);
    if (entries == nullptr) {
      fail("start", RAFT_NOMEM);
      return false;
    }
  }
  ev.start.entries = entries;
  ev.start.n_entries = unsigned(loaded.entries.size());
  const int rv = step(ev, out);
  if (rv != 0) {
    fail("start", rv);  // raft released the entries on this path
    return false;
  }
  if (entries != nullptr) {
    raft_free(entries[0].batch);
    raft_free(entries);
  }
  _started = true;
  return true;
}

void raft_group::on_frame(std::uint64_t now_ms, std::span<const std::uint8_t> frame,
                          actions& out) {
  if (failed() || !_started) return;
  auto decoded = decode_frame(frame);
  if (!decoded || decoded->route.group != _config.group_id || decoded->route.to != _config.self ||
      decoded->route.from == _config.self || decoded->route.from == 0) {
    if (decoded) drop_decoded(decoded->msg);
    ++_dropped;
    return;
  }
  // A sender this server has not met: a member added while it was away (found by the
  // membership simulation: a voter that missed the configuration adding the new leader
  // dropped its every frame and stayed a candidate forever). Raft takes it from there.
  if (peer_index(decoded->route.from) < 0) add_known(decoded->route.from);
  const int peer = peer_index(decoded->route.from);
  // Per peer, only frames newer than the last one taken (raft wants them in order).
  peer_seq& last = _received[std::size_t(peer)];
  const frame_route& route = decoded->route;
  if (_config.drop_stale_frames &&
      (route.incarnation < last.incarnation ||
       (route.incarnation == last.incarnation && route.seq <= last.seq))) {
    drop_decoded(decoded->msg);
    ++_stale;
    return;
  }
  raft_message& m = decoded->msg;
  // Only a leader sends AppendEntries, one per term: one claiming this leader's own term is
  // a lie. Debian's libraft has no assertions, and this case would write follower state over
  // the leader's, so it never reaches raft.
  if (m.type == RAFT_APPEND_ENTRIES && raft_state(_raft.get()) == RAFT_LEADER &&
      m.append_entries.term == raft_current_term(_raft.get())) {
    drop_decoded(m);
    ++_dropped;
    return;
  }
  last = {route.incarnation, route.seq};
  if (decoded->is_chunk) {
    take_chunk(peer, decoded->chunk_index, decoded->chunk_offset, decoded->chunk);
    return;
  }
  if (m.type == RAFT_INSTALL_SNAPSHOT && !complete_snapshot(peer, decoded->snapshot_offset, m)) {
    drop_decoded(m);
    ++_dropped;
    return;
  }
  m.server_address = _addresses[std::size_t(peer)].c_str();
  raft_entry* entries_array =
      m.type == RAFT_APPEND_ENTRIES && m.append_entries.n_entries > 0 ? m.append_entries.entries
                                                                       : nullptr;
  raft_event ev{};
  ev.time = now_ms;
  ev.type = RAFT_RECEIVE;
  ev.receive.message = &m;
  const int rv = step(ev, out);
  raft_free(entries_array);  // raft owns the batch, never the array
  if (rv != 0) fail("receive", rv);
}

void raft_group::on_timeout(std::uint64_t now_ms, actions& out) {
  if (failed() || !_started) return;
  raft_event ev{};
  ev.time = now_ms;
  ev.type = RAFT_TIMEOUT;
  const int rv = step(ev, out);
  if (rv != 0) fail("timeout", rv);
}

void raft_group::on_persisted(std::uint64_t now_ms, std::uint64_t seq, actions& out) {
  if (failed() || !_started) return;
  std::optional<std::uint64_t> durable;
  while (!_writes.empty() && _writes.front().seq <= seq) {
    durable = _writes.front().valid_upto;
    _writes.pop_front();
  }
  // Only what raft still has in its log and did not already count: a write that a later
  // truncation replaced reports only its surviving prefix, or nothing.
  if (!durable || *durable <= _raft->last_stored) return;
  raft_event ev{};
  ev.time = now_ms;
  ev.type = RAFT_PERSISTED_ENTRIES;
  ev.persisted_entries.index = *durable;
  const int rv = step(ev, out);
  if (rv != 0) fail("persisted", rv);
}

int raft_group::submit_entry(std::uint64_t now_ms, int type, std::span<const std::uint8_t> data,
                             actions& out) {
  raft_entry e{};
  e.term = raft_current_term(_raft.get());
  e.type = raft_entry_type(type);
  void* batch = raft_malloc(data.empty() ? 1 : data.size());
  if (batch == nullptr) return RAFT_NOMEM;
  if (!data.empty()) std::memcpy(batch, data.data(), data.size());
  e.buf = {batch, data.size()};
  e.batch = batch;
  raft_event ev{};
  ev.time = now_ms;
  ev.type = RAFT_SUBMIT;
  ev.submit.entries = &e;
  ev.submit.n = 1;
  const int rv = step(ev, out);  // on success stage_entries freed the batch
  if (rv != 0) raft_free(batch);
  return rv;
}

propose_result raft_group::propose(std::uint64_t now_ms, std::span<const std::uint8_t> data,
                                   actions& out) {
  if (failed() || !_started) return {propose_status::failed, 0};
  if (raft_state(_raft.get()) != RAFT_LEADER) return {propose_status::not_leader, 0};
  const std::uint64_t index = raft_last_index(_raft.get()) + 1;
  const int rv = submit_entry(now_ms, RAFT_COMMAND, data, out);
  if (rv == RAFT_NOTLEADER) return {propose_status::not_leader, 0};
  if (rv != 0) {
    fail("submit", rv);
    return {propose_status::failed, 0};
  }
  return {propose_status::ok, index};
}

propose_result raft_group::propose_batch(std::uint64_t now_ms,
                                         std::span<const std::span<const std::uint8_t>> items,
                                         actions& out) {
  if (failed() || !_started) return {propose_status::failed, 0};
  if (raft_state(_raft.get()) != RAFT_LEADER) return {propose_status::not_leader, 0};
  if (items.empty()) return {propose_status::ok, raft_last_index(_raft.get()) + 1};
  // One allocation for every entry (raft hands the batch back whole in the update: see
  // stage_entries); each entry 8-byte aligned within it.
  auto padded = [](std::size_t n) { return (n + 7) & ~std::size_t(7); };
  std::size_t total = 0;
  for (const auto& d : items) total += padded(d.size());
  void* batch = raft_malloc(total == 0 ? 1 : total);
  if (batch == nullptr) return {propose_status::failed, 0};
  std::vector<raft_entry> entries(items.size());
  const raft_term term = raft_current_term(_raft.get());
  auto* at = static_cast<std::uint8_t*>(batch);
  for (std::size_t i = 0; i < items.size(); ++i) {
    if (!items[i].empty()) std::memcpy(at, items[i].data(), items[i].size());
    entries[i] = raft_entry{};
    entries[i].term = term;
    entries[i].type = RAFT_COMMAND;
    entries[i].buf = {at, items[i].size()};
    entries[i].batch = batch;
    at += padded(items[i].size());
  }
  const std::uint64_t index = raft_last_index(_raft.get()) + 1;
  raft_event ev{};
  ev.time = now_ms;
  ev.type = RAFT_SUBMIT;
  ev.submit.entries = entries.data();
  ev.submit.n = unsigned(entries.size());
  const int rv = step(ev, out);  // on success stage_entries freed the batch
  if (rv != 0) raft_free(batch);
  if (rv == RAFT_NOTLEADER) return {propose_status::not_leader, 0};
  if (rv != 0) {
    fail("submit", rv);
    return {propose_status::failed, 0};
  }
  return {propose_status::ok, index};
}

bool raft_group::submit_configuration(std::uint64_t now_ms, const std::vector<member>& next,
                                      actions& out) {
  raft_configuration conf;
  raft_configuration_init(&conf);
  std::vector<std::string> addresses;
  addresses.reserve(next.size());
  for (const member& m : next) {
    addresses.push_back(std::to_string(m.id));
    if (raft_configuration_add(&conf, m.id, addresses.back().c_str(), m.voter ? RAFT_VOTER : RAFT_STANDBY) != 0) {
      raft_configuration_close(&conf);
      return false;
    }
  }
  raft_buffer buf{};
  const int erv = raft_configuration_encode(&conf, &buf);
  raft_configuration_close(&conf);
  if (erv != 0) return false;
  const std::span<const std::uint8_t> data(static_cast<const std::uint8_t*>(buf.base), buf.len);
  const int rv = submit_entry(now_ms, RAFT_CHANGE, data, out);
  raft_free(buf.base);
  if (rv == RAFT_NOTLEADER || rv == RAFT_CANTCHANGE) return false;
  if (rv != 0) {
    fail("submit configuration", rv);
    return false;
  }
  return true;
}

bool raft_group::add_peer(std::uint64_t now_ms, std::uint64_t id, actions& out) {
  if (failed() || !_started || raft_state(_raft.get()) != RAFT_LEADER || id == 0 || change_pending()) return false;
  std::vector<member> next = members();
  for (const member& m : next)
    if (m.id == id) return false;
  next.push_back({id, false});
  return submit_configuration(now_ms, next, out);
}

bool raft_group::promote_caught_up(std::uint64_t now_ms, actions& out) {
  if (failed() || !_started || raft_state(_raft.get()) != RAFT_LEADER || change_pending()) return false;
  std::vector<member> next = members();
  const std::uint64_t commit = commit_index();
  for (member& m : next) {
    if (m.voter || commit == 0 || match_index(m.id) < commit) continue;
    m.voter = true;
    return submit_configuration(now_ms, next, out);
  }
  return false;
}

bool raft_group::remove_peer(std::uint64_t now_ms, std::uint64_t id, actions& out) {
  if (failed() || !_started || raft_state(_raft.get()) != RAFT_LEADER || id == _config.self || change_pending())
    return false;
  std::vector<member> next = members();
  const auto before = next.size();
  std::erase_if(next, [&](const member& m) { return m.id == id; });
  if (next.size() == before) return false;
  return submit_configuration(now_ms, next, out);
}

void raft_group::stage_entries(std::uint64_t first_index, const void* raft_entries, unsigned n,
                               actions& out) {
  const auto* batch = static_cast<const raft_entry*>(raft_entries);
  std::vector<entry> staged;
  staged.reserve(n);
  for (unsigned i = 0; i < n; ++i) staged.push_back(to_entry(batch[i]));
  if (n > 0) raft_free(batch[0].batch);  // raft handed the batch to us with the update
  for (auto& w : _writes) w.valid_upto = std::min(w.valid_upto, first_index - 1);
  const std::uint64_t seq = _log.append(first_index, staged);
  _writes.push_back({seq, first_index + n - 1});
  out.writes.push_back(seq);
}

void raft_group::apply_committed(actions& out) {
  const std::uint64_t commit = raft_commit_index(_raft.get());
  while (_last_applied < commit) {
    const entry* e = _log.entry_at(_last_applied + 1);
    if (e == nullptr) break;  // committed but not staged here yet; the next step continues
    ++_last_applied;
    // Index 1 is the bootstrap configuration raft loaded at start, except on a joining server,
    // which got it from the leader.
    if (e->type == entry_type::change && (_last_applied > 1 || _config.join))
      _pending_configurations.push_back(_last_applied);
    out.applies.push_back({_last_applied, *e});
  }
}

int raft_group::step(raft_event& ev, actions& out) {
  raft_update u{};
  const int rv = raft_step(_raft.get(), &ev, &u);
  if (rv != 0) return rv;
  if (u.flags & (RAFT_UPDATE_CURRENT_TERM | RAFT_UPDATE_VOTED_FOR))
    _log.save_hard_state(
        {raft_current_term(_raft.get()), raft_voted_for(_raft.get()), _incarnation});
  if (u.flags & RAFT_UPDATE_ENTRIES)
    stage_entries(u.entries.index, u.entries.batch, u.entries.n, out);
  // After staging: the change entry it looks for may be one this step received (found with
  // snapshots on: a follower that got a change and its commit in one step applied it while
  // raft still had the wrong index, and after a restart from a later snapshot nothing ever
  // committed that configuration again).
  fix_uncommitted_configuration_index();
  learn_members();  // before the messages: the leader now sends to a server it just added
  // A snapshot from the leader (raft asks for one only when this log lacks what it needs):
  // saved (the whole log dropped), handed to the owner in place of the entries it covers,
  // and reported persisted once this step's messages are out.
  std::optional<raft_snapshot_metadata> installed;
  if (u.flags & RAFT_UPDATE_SNAPSHOT) {
    stored_snapshot s;
    s.meta = {u.snapshot.metadata.index, u.snapshot.metadata.term,
              u.snapshot.metadata.configuration_index,
              encode_configuration(u.snapshot.metadata.configuration)};
    const auto* p = static_cast<const std::uint8_t*>(u.snapshot.chunk.base);
    s.data = std::make_shared<const std::vector<std::uint8_t>>(p, p + u.snapshot.chunk.len);
    raft_free(u.snapshot.chunk.base);
    _log.save_snapshot(s, s.meta.index + 1);
    for (auto& w : _writes) w.valid_upto = 0;  // what they wrote is gone with the log
    _last_applied = s.meta.index;
    out.applies.push_back({s.meta.index, entry{s.meta.term, entry_type::snapshot, *s.data}});
    installed = u.snapshot.metadata;
  }
  if (u.flags & RAFT_UPDATE_MESSAGES) {
    for (unsigned i = 0; i < u.messages.n; ++i) {
      outbound_frame f;
      f.to = u.messages.batch[i].server_id;
      const int peer = peer_index(f.to);
      if (peer < 0) continue;
      frame_route route{_config.group_id, _config.self, f.to, _incarnation,
                        _sent[std::size_t(peer)] + 1};
      raft_message m = u.messages.batch[i];
      if (m.type == RAFT_INSTALL_SNAPSHOT) {
        std::vector<std::vector<std::uint8_t>> frames;
        if (!encode_snapshot_frames(frames, route, m, _log)) {
          ++_unencodable;
          continue;
        }
        for (auto& fr : frames) out.sends.push_back({f.to, std::move(fr)});
        _sent[std::size_t(peer)] += frames.size();
        continue;
      }
      // libraft 0.22.1 leaves last_log_index unset in some AppendEntries rejections (found
      // with valgrind in the simulation: stack garbage went on the wire and made the leader's
      // next index depend on it). Send the hint raft's other rejection paths compute.
      if (m.type == RAFT_APPEND_ENTRIES_RESULT && m.append_entries_result.rejected > 0)
        m.append_entries_result.last_log_index =
            std::min<std::uint64_t>(raft_last_index(_raft.get()),
                                    m.append_entries_result.rejected - 1);
      // An AppendEntries whose entries this store no longer has is skipped; raft resends.
      if (!encode_frame(f.frame, route, m, _log)) {
        ++_unencodable;
        continue;
      }
      ++_sent[std::size_t(peer)];
      out.sends.push_back(std::move(f));
    }
  }
  if (u.flags & RAFT_UPDATE_COMMIT_INDEX) apply_committed(out);
  out.timer_at = raft_timeout(_raft.get());
  if (installed) {
    raft_event pev{};
    pev.time = ev.time;
    pev.type = RAFT_PERSISTED_SNAPSHOT;
    pev.persisted_snapshot.metadata = *installed;  // raft takes its configuration
    pev.persisted_snapshot.offset = 0;
    pev.persisted_snapshot.last = true;
    const int prv = step(pev, out);
    if (prv != 0) return prv;
  }
  // A committed configuration change is reported back to raft once this step is over.
  while (!_pending_configurations.empty()) {
    const std::uint64_t index = _pending_configurations.front();
    _pending_configurations.erase(_pending_configurations.begin());
    const entry* e = _log.entry_at(index);
    if (e == nullptr) continue;
    raft_event cev{};
    cev.time = ev.time;
    cev.type = RAFT_CONFIGURATION;
    cev.configuration.index = index;
    raft_buffer buf{const_cast<std::uint8_t*>(e->data.data()), e->data.size()};
    if (raft_configuration_decode(&buf, &cev.configuration.conf) != 0) continue;
    const int crv = step(cev, out);
    if (crv != 0) return crv;
  }
  return 0;
}

bool raft_group::take_snapshot(std::uint64_t now_ms, std::uint64_t index,
                               std::shared_ptr<const std::vector<std::uint8_t>> data, actions& out,
                               std::string file, std::uint32_t crc) {
  if (failed() || !_started || index == 0 || index > _last_applied || index <= snapshot_index()) return false;
  const entry* at = _log.entry_at(index);
  if (at == nullptr) return false;
  stored_snapshot s;
  s.meta.index = index;
  s.meta.term = at->term;
  // The configuration committed at `index`: the newest change entry up to it, else the one
  // the previous snapshot carried.
  for (std::uint64_t i = index; i >= _log.first_index() && i > 0; --i) {
    const entry* c = _log.entry_at(i);
    if (c != nullptr && c->type == entry_type::change) {
      s.meta.conf_index = i;
      s.meta.conf = c->data;
      break;
    }
  }
  if (s.meta.conf_index == 0) {
    const stored_snapshot* prev = _log.snapshot();
    if (prev == nullptr) return false;
    s.meta.conf_index = prev->meta.conf_index;
    s.meta.conf = prev->meta.conf;
  }
  raft_snapshot_metadata meta{};
  raft_buffer cb{s.meta.conf.data(), s.meta.conf.size()};
  if (raft_configuration_decode(&cb, &meta.configuration) != 0) return false;
  meta.index = s.meta.index;
  meta.term = s.meta.term;
  meta.configuration_index = s.meta.conf_index;
  s.data = std::move(data);
  s.file = std::move(file);
  s.crc = crc;
  const unsigned trailing = _config.snapshot_trailing;
  // raft keeps the entries after index - trailing; the store keeps at least those.
  const std::uint64_t keep_from = index > trailing ? index - trailing + 1 : 1;
  _log.save_snapshot(s, std::max(keep_from, _log.first_index()));
  raft_event ev{};
  ev.time = now_ms;
  ev.type = RAFT_SNAPSHOT;
  ev.snapshot.metadata = meta;  // raft takes its configuration
  ev.snapshot.trailing = trailing;
  const int rv = step(ev, out);
  if (rv != 0) {
    fail("snapshot", rv);
    return false;
  }
  return true;
}

std::uint64_t raft_group::snapshot_index() const {
  const stored_snapshot* s = _log.snapshot();
  return s ? s->meta.index : 0;
}

void raft_group::take_chunk(int peer, std::uint64_t index, std::uint64_t offset,
                            std::vector<std::uint8_t>& bytes) {
  snapshot_pieces& p = _pieces[std::size_t(peer)];
  if (offset == 0) {
    p.index = index;
    p.bytes = std::move(bytes);
  } else if (p.index == index && p.bytes.size() == offset) {
    p.bytes.insert(p.bytes.end(), bytes.begin(), bytes.end());
  } else {
    p = {};  // a piece was lost: this install cannot complete
  }
}

bool raft_group::complete_snapshot(int peer, std::uint64_t offset, raft_message& m) {
  snapshot_pieces p = std::exchange(_pieces[std::size_t(peer)], {});
  if (offset == 0) return true;
  raft_install_snapshot& is = m.install_snapshot;
  if (p.index != is.last_index || p.bytes.size() != offset) return false;
  auto* whole = static_cast<std::uint8_t*>(raft_malloc(offset + is.data.len));
  if (whole == nullptr) return false;
  std::memcpy(whole, p.bytes.data(), offset);
  if (is.data.len > 0) std::memcpy(whole + offset, is.data.base, is.data.len);
  raft_free(is.data.base);
  is.data.base = whole;
  is.data.len = offset + is.data.len;
  return true;
}

bool raft_group::transfer_leadership(std::uint64_t now_ms, std::uint64_t to, actions& out) {
  if (failed() || !_started || raft_state(_raft.get()) != RAFT_LEADER) return false;
  if (to == _config.self || std::find(_voters.begin(), _voters.end(), to) == _voters.end()) return false;
  raft_event ev{};
  ev.time = now_ms;
  ev.type = RAFT_TRANSFER;
  ev.transfer.server_id = to;
  const int rv = step(ev, out);
  if (rv == RAFT_NOTLEADER || rv == RAFT_BUSY || rv == RAFT_BADID) return false;
  if (rv != 0) {
    fail("transfer", rv);
    return false;
  }
  return true;
}

std::uint64_t raft_group::match_index(std::uint64_t voter) const {
  if (!_raft || !_started || raft_state(_raft.get()) != RAFT_LEADER) return 0;
  raft_index m = 0;
  return raft_match_index(_raft.get(), voter, &m) == 0 ? m : 0;
}

std::uint64_t raft_group::last_index() const { return _raft ? raft_last_index(_raft.get()) : 0; }

std::string raft_group::debug_state() const {
  if (!_raft) return "no raft";
  std::string s = std::string(role_name(current_role())) + " term " + std::to_string(term()) +
                  " commit " + std::to_string(commit_index()) + " stored " +
                  std::to_string(_raft->last_stored) + " last " +
                  std::to_string(raft_last_index(_raft.get())) + " unencodable " +
                  std::to_string(_unencodable) + " conf " +
                  std::to_string(_raft->configuration_committed_index) + "/" +
                  std::to_string(_raft->configuration_uncommitted_index) + " writes";
  for (const auto& w : _writes)
    s += " " + std::to_string(w.seq) + "<=" + std::to_string(w.valid_upto);
  if (current_role() == role::leader) {
    s += " match";
    for (std::uint64_t v : _voters) {
      raft_index m = 0;
      if (raft_match_index(_raft.get(), v, &m) == 0) s += " " + std::to_string(m);
    }
  }
  return s;
}

role raft_group::current_role() const {
  if (!_raft || !_started) return role::unavailable;
  switch (raft_state(_raft.get())) {
    case RAFT_FOLLOWER: return role::follower;
    case RAFT_CANDIDATE: return role::candidate;
    case RAFT_LEADER: return role::leader;
    default: return role::unavailable;
  }
}

std::uint64_t raft_group::term() const { return _raft ? raft_current_term(_raft.get()) : 0; }

std::uint64_t raft_group::commit_index() const {
  return _raft ? raft_commit_index(_raft.get()) : 0;
}

std::uint64_t raft_group::leader_id() const {
  if (!_raft || !_started) return 0;
  raft_id id = 0;
  const char* address = nullptr;
  raft_leader(_raft.get(), &id, &address);
  return id;
}

}  // namespace repl
