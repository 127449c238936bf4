// stream_replica's Raft snapshots (log compaction): its replicated state at the applied index
// as one repl_entries::stream_snapshot, and the restore of one in place of the entries it
// covers (installed from the leader, or this server's own at a restart).
#include <fmt/format.h>

#include "src/js/stream_replica.h"

namespace js {

namespace re = repl_entries;

re::stream_snapshot stream_replica::snapshot_head() const {
  re::stream_snapshot s;
  s.applied_index = _applied_index;
  s.config_index = _config_index;
  s.config_json = _config_json;
  s.seeded = _seeded;
  s.seed_origin = _seed_origin;
  s.last_msg_id = _last_msg_id;
  for (const auto& [ts, id] : _dedup_order) {
    auto it = _dedup.find(id);
    if (it != _dedup.end() && it->second.ts == ts) s.dedup.push_back({id, it->second.seq, ts});
  }
  return s;
}

stream_replica::snapshot_parts stream_replica::snapshot_source() const { return {snapshot_head(), _store.clone()}; }

std::vector<std::uint8_t> stream_replica::encode_snapshot(re::stream_snapshot s, storage::stream_store& store) {
  s.first_seq = store.first_seq();
  s.last_seq = store.last_seq();
  s.msgs.reserve(store.state(false).msgs);
  for (std::uint64_t seq = s.first_seq;;) {
    auto m = store.load_next("", seq);
    if (!m.ok()) break;
    s.msgs.push_back({m->seq, m->ts, m->ttl, std::move(m->subject), std::move(m->headers), std::move(m->payload)});
    seq = s.msgs.back().seq + 1;
  }
  return re::encode(s);
}

std::vector<std::uint8_t> stream_replica::snapshot() const {
  return encode_snapshot(snapshot_head(), _store);  // read in place: this thread owns the store
}

void stream_replica::restore(const repl::committed_entry& e) {
  auto s = re::decode_stream_snapshot(e.value.data);
  if (!s || s->applied_index != e.index)
    return fail(fmt::format("snapshot at index {} does not decode", e.index));
  if (e.index < _applied_index)
    return fail(fmt::format("snapshot at index {} is behind the applied {}", e.index, _applied_index));
  if (s->last_seq < _store.last_seq())
    return fail(fmt::format("snapshot at index {} ends at sequence {} before the store's {}", e.index,
                            s->last_seq, _store.last_seq()));
  // The store starts over from sequence 1 (its own earlier snapshot or log may have left
  // messages below the snapshot's, or taken away ones the snapshot still holds).
  if (!_store.reset().ok()) return fail(fmt::format("snapshot at index {}: the store cannot be reset", e.index));
  // What this replica proposed is the leader's no more (a follower has nothing in flight):
  // lost, as a proposal lost with its leader.
  _lost += _pending.size();
  _pending.clear();
  _pending_ids.clear();
  _pending_msgs = _pending_bytes = 0;
  _leading = _ready = false;
  _counters.clear();
  _batches.clear();
  _expire_index = _expire_ticket = 0;
  if (s->config_index != _config_index) {
    stream_config cfg;
    if (auto err = parse_stream_config(s->config_json, cfg))
      return fail(fmt::format("snapshot at index {}: config does not parse: {}", e.index, err->description));
    (void)normalise(cfg);
    set_config(std::move(cfg));
    _config_index = s->config_index;
    _config_json = std::move(s->config_json);
  }
  // The store becomes the snapshot's: sequences keep their numbers, gaps stay gaps.
  for (const auto& m : s->msgs) {
    const std::uint64_t last = _store.last_seq();
    if (m.seq <= last) return fail(fmt::format("snapshot at index {}: sequence {} out of order", e.index, m.seq));
    if (m.seq > last + 1) (void)_store.skip(m.seq - last - 1);
    auto seq = _store.append(m.subject, m.headers, m.payload, m.ts, m.ttl);
    if (!seq.ok() || *seq != m.seq)
      return fail(fmt::format("snapshot at index {}: store append of sequence {} failed", e.index, m.seq));
  }
  if (s->last_seq > _store.last_seq()) (void)_store.skip(s->last_seq - _store.last_seq());
  _dedup.clear();
  _dedup_order.clear();
  for (auto& d : s->dedup) {
    _dedup[d.id] = {d.seq, d.ts};
    _dedup_order.emplace_back(d.ts, std::move(d.id));
  }
  _last_msg_id = std::move(s->last_msg_id);
  _seeded = s->seeded;
  _seed_origin = std::move(s->seed_origin);
  if (_seeded) _seed.clear();
  _applied_index = e.index;
}

}  // namespace js
