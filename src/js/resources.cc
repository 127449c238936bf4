#include "src/js/resources.h"

#include "src/js/jetstream_service.h"

namespace js {

std::optional<api_error> check_reservation(std::int64_t limit, const storage_usage& others,
                                           const stream_config& cfg) {
  if (limit < 0) return std::nullopt;
  // A stream without max_bytes still needs room for one byte (nats-server does the same).
  const std::int64_t want = cfg.max_bytes > 0 ? cfg.max_bytes : 1;
  if (others.reserved + want <= limit) return std::nullopt;
  return make_error(cfg.storage == storage_type::memory ? err::insufficient_memory
                                                         : err::insufficient_storage);
}

std::int64_t jetstream::storage_limit(storage_type t) const {
  const auto& o = _host->options();
  return t == storage_type::memory ? o.max_memory_store : o.max_file_store;
}

storage_usage jetstream::usage(storage_type t, std::string_view except_stream) const {
  storage_usage u;
  for (const auto& [name, s] : _streams) {
    if (s->config().storage != t || name == except_stream) continue;
    if (s->config().max_bytes > 0) u.reserved += s->config().max_bytes;
    u.used += std::int64_t(s->bytes());
  }
  return u;
}

bool jetstream::storage_exhausted(storage_type t) const {
  const std::int64_t limit = storage_limit(t);
  return limit >= 0 && js::storage_exhausted(limit, usage(t, {}));
}

}  // namespace js
