// A replicated stream's expiry (max_age, per-message TTL) with subject delete markers
// (subject_delete_marker_ttl, ADR-43), as the standalone stream_markers.cc does it. The leader
// proposes `expire{now}`; every replica removes what is due at that `now` from the same
// state, so all remove the same messages. A subject whose last message goes gets a marker
// (Nats-Marker-Reason: MaxAge, Nats-TTL, Nats-Rollup: sub, no payload) at the next sequence
// with `now` as its time: the same bytes on every replica. The leader proposes no message
// while its expiry is in flight (stream_replica::propose answers busy), so nothing proposed
// holds the sequences the markers take, and its next sequence moves past them here.
#include "src/js/delete_markers.h"
#include "src/js/stream_replica.h"

namespace js {

void stream_replica::apply_expire(std::int64_t now) {
  if (_cfg.subject_delete_marker_ttl <= 0) {
    (void)_store.expire(now);
    return;
  }
  const marker_expiry x = expire_sparing_last(_store, now, nullptr);
  if (x.to_mark.empty()) return;
  const std::string hdr = delete_marker_headers(_cfg.subject_delete_marker_ttl);
  const std::int64_t ttl = delete_marker_ttl(_cfg.subject_delete_marker_ttl);
  for (const auto& [seq, subject] : x.to_mark) {
    // Its roll-up removes the expired message (markers need allow_rollup_hdrs).
    if (!apply_msg(repl_entries::msg{_store.last_seq() + 1, now, ttl, subject, hdr, std::string()})) return;
    (void)_store.remove(seq);  // gone already unless the roll-up was refused
  }
  _last_ts = std::max(_last_ts, now);
  if (_leading) {
    _next_seq = std::max(_next_seq, _store.last_seq() + 1);
    _shadow_last_msg_id = _last_msg_id;  // nothing proposed after the expiry: the markers are last
  }
}

}  // namespace js
