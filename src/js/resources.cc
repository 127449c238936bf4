#include "src/js/resources.h"

#include <algorithm>

namespace js {

std::optional<api_error> check_reservation(std::int64_t limit, const storage_usage& others,
                                           const stream_config& cfg, std::int64_t replicas) {
  if (limit < 0) return std::nullopt;
  // A stream without max_bytes still needs room for one byte (nats-server does the same).
  const std::int64_t want = (cfg.max_bytes > 0 ? cfg.max_bytes : 1) * std::max<std::int64_t>(replicas, 1);
  if (others.reserved + want <= limit) return std::nullopt;
  return make_error(cfg.storage == storage_type::memory ? err::insufficient_memory
                                                         : err::insufficient_storage);
}

}  // namespace js
