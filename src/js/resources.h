#pragma once
// The server's JetStream storage limits (jetstream { max_memory_store, max_file_store }):
// a stream create/update reserves its max_bytes (at least 1 byte) against the limit of its
// storage type (10028 memory / 10047 file when it does not fit), and a publish is refused
// with 503 10023 once the bytes stored in that storage type exceed the limit.
#include <cstdint>
#include <optional>

#include "src/js/api_errors.h"
#include "src/js/stream_config.h"

namespace js {

struct storage_usage {
  std::int64_t reserved = 0;  // sum of max_bytes over streams that set it
  std::int64_t used = 0;      // bytes stored
};

// limit < 0: unlimited (the default).
// `replicas`: a replicated stream reserves its max_bytes on each replica (nats-server's
// accounting of a clustered account).
std::optional<api_error> check_reservation(std::int64_t limit, const storage_usage& others,
                                           const stream_config& cfg, std::int64_t replicas = 1);
inline bool storage_exhausted(std::int64_t limit, const storage_usage& u) {
  return limit >= 0 && u.used > limit;
}

}  // namespace js
