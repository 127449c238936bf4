// The replicated simulation's stream checkers (one leader per term, prefix contents at each
// checkpoint, the final identical, gapless contents).
#include "tests/unit/js/replica_sim_world.h"

namespace js::sim::detail {


// Every stream's replicas have applied the same entries (expiries keep coming while
// settling, so the final comparison waits for a moment between them).
bool simulation::groups_quiet() {
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

// --- checkers
std::vector<storage::stored_msg> simulation::contents(storage::stream_store& st) {
  std::vector<storage::stored_msg> out;
  for (std::uint64_t seq = 1; seq <= st.last_seq(); ++seq)
    if (auto m = st.load(seq); m.ok()) out.push_back(std::move(*m));
  return out;
}

bool simulation::same(const storage::stored_msg& a, const storage::stored_msg& b) {
  return a.seq == b.seq && a.ts == b.ts && a.subject == b.subject && a.headers == b.headers &&
         a.payload == b.payload;
}

// Replicas' contents are prefixes of the longest one; with expiry (which removes from the
// front) every sequence two replicas both hold is the same message, and replicas at the
// same applied index hold the same messages.
void simulation::checkpoint() {
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

void simulation::final_checks() {
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
bool simulation::could_have_expired(const std::string& payload) const {
  const pub_msg& m = _msgs.at(std::stoull(payload.substr(1)));  // payload: 'p' or 'h', index
  const std::int64_t life_ms = m.ttl_ms > 0 ? m.ttl_ms : kMaxAgeMs;
  return std::int64_t(m.first_attempt_ms) + life_ms <= std::int64_t(_now);
}

// An expiring stream after settling: nothing overdue is left (leaders proposed the
// expiries), and an acknowledged message is gone only if it could have expired by now.
void simulation::expiry_checks(const stream_spec& st, const std::vector<storage::stored_msg>& msgs) {
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
void simulation::durable_on_majority(const stream_spec& st, const std::vector<std::string>& peers) {
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

}  // namespace js::sim::detail
