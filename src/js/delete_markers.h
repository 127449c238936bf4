#pragma once
// Subject delete markers (stream_markers.cc), shared by the standalone stream and the
// replicated one (stream_replica_expire.cc).
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "src/js/stream_config.h"

namespace js {

// Whether a stored message counts as a marker (it has Nats-Marker-Reason, or
// KV-Operation: PURGE), and the header block of a new one.
bool is_delete_marker(std::string_view headers);
std::string delete_marker_headers(std::int64_t marker_ttl_ns);
// With markers on and max_msgs_per_subject != 1, a Nats-TTL below the marker TTL is raised to
// it: ttl updated, and the header block with `Nats-TTL: <seconds>` moved to its end returned.
std::optional<std::string> raise_ttl_to_marker_ttl(const stream_config& c, std::int64_t& ttl,
                                                   std::string_view headers);

}  // namespace js
