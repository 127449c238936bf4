#pragma once
// Subject delete markers (stream_markers.cc), shared by the standalone stream and the
// replicated one (stream_replica_expire.cc).
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "src/js/stream_config.h"
#include "storage/store.h"

namespace js {

// Whether a stored message counts as a marker (it has Nats-Marker-Reason, or
// KV-Operation: PURGE), and the header block of a new one.
bool is_delete_marker(std::string_view headers);
std::string delete_marker_headers(std::int64_t marker_ttl_ns);
// A marker's own TTL: the config's marker TTL in whole seconds (as its Nats-TTL header says).
inline std::int64_t delete_marker_ttl(std::int64_t marker_ttl_ns) {
  return marker_ttl_ns / 1'000'000'000 * 1'000'000'000;
}
// The store's expiry at `now`, sparing each subject's last message unless it is a marker
// itself: the spared ones (seq, subject) are to be replaced by markers, by the standalone
// stream's publish path or the replica's apply.
struct marker_expiry {
  std::uint64_t removed = 0;
  std::vector<std::pair<std::uint64_t, std::string>> to_mark;
};
marker_expiry expire_sparing_last(storage::stream_store& store, std::int64_t now,
                                  std::vector<std::uint64_t>* removed);
// With markers on and max_msgs_per_subject != 1, a Nats-TTL below the marker TTL is raised to
// it: ttl updated, and the header block with `Nats-TTL: <seconds>` moved to its end returned.
std::optional<std::string> raise_ttl_to_marker_ttl(const stream_config& c, std::int64_t& ttl,
                                                   std::string_view headers);

}  // namespace js
