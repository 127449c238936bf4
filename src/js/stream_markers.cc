// Subject delete markers (subject_delete_marker_ttl, ADR-43): when max_age or a
// per-message TTL takes the last message of a subject, the stream publishes a marker on that
// subject instead (Nats-Marker-Reason: MaxAge, Nats-TTL: <marker TTL>, Nats-Rollup: sub, empty
// payload). The marker goes through the normal publish path (consumers, republish), its
// roll-up removes the expired message, and it expires by its own TTL without a new marker.
// Purges and deletes never leave markers (as nats-server 2.11-2.14). A shorter Nats-TTL is raised
// to the marker TTL (unless max_msgs_per_subject is 1), so that a marker outlives what it replaces.
#include "src/base/clock.h"
#include "src/base/go_text.h"
#include "src/js/json_util.h"
#include "src/js/stream.h"

namespace js {

bool is_delete_marker(std::string_view headers) {
  if (headers.empty()) return false;
  if (find_header(headers, "Nats-Marker-Reason")) return true;
  const auto op = find_header(headers, "KV-Operation");
  return op && *op == "PURGE";
}

std::string delete_marker_headers(std::int64_t marker_ttl_ns) {
  // Whole seconds, as nats-server formats time.Duration(seconds) * time.Second.
  const std::int64_t ttl = delete_marker_ttl(marker_ttl_ns);
  return "NATS/1.0\r\nNats-Marker-Reason: MaxAge\r\nNats-TTL: " + base::go_duration(ttl) +
         "\r\nNats-Rollup: sub\r\n\r\n";
}

std::optional<std::string> raise_ttl_to_marker_ttl(const stream_config& c, std::int64_t& ttl,
                                                   std::string_view headers) {
  if (ttl <= 0 || c.subject_delete_marker_ttl <= 0 || c.max_msgs_per_subject == 1) return std::nullopt;
  const std::int64_t secs = c.subject_delete_marker_ttl / base::kSecond;
  if (ttl >= secs * base::kSecond) return std::nullopt;
  ttl = secs * base::kSecond;
  return append_header(remove_header(headers, "Nats-TTL"), "Nats-TTL", std::to_string(secs));
}

marker_expiry expire_sparing_last(storage::stream_store& store, std::int64_t now,
                                  std::vector<std::uint64_t>* removed) {
  marker_expiry out;
  auto spare = [&](std::uint64_t seq, std::string_view subject) {
    auto m = store.load(seq);
    if (!m.ok() || is_delete_marker(m->headers)) return false;  // a marker just goes
    out.to_mark.emplace_back(seq, std::string(subject));
    return true;
  };
  out.removed = store.expire(now, removed, spare);
  return out;
}

std::uint64_t stream::expire_msgs(std::int64_t now, std::vector<std::uint64_t>& removed) {
  if (_cfg.subject_delete_marker_ttl <= 0) return _store->expire(now, &removed);
  const marker_expiry x = expire_sparing_last(*_store, now, &removed);
  std::uint64_t n = x.removed;
  if (x.to_mark.empty()) return n;
  const std::string hdr = delete_marker_headers(_cfg.subject_delete_marker_ttl);
  const js_headers h = parse_js_headers(hdr);
  for (const auto& [seq, subject] : x.to_mark) {
    store_msg(subject, hdr, h, "");
    // The marker's roll-up removed the message; when no marker was stored (a limit refused
    // it, interest retention without interest) the message still goes.
    if (_store->remove(seq).ok()) removed.push_back(seq);
    ++n;
  }
  return n;
}

}  // namespace js
