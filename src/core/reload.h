#pragma once
// Config reload (SIGHUP): which options may change while running and which need a restart.
// Pure: the server applies the result (live limits, auth, logging) and logs the refusals.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "src/core/options.h"

namespace core {

struct reload_plan {
  server_options result;             // `current` with every live-changeable field from `next`
  std::vector<std::string> changed;  // config keys whose new value is applied
  std::vector<std::string> refused;  // "<key>: <old> -> <new>" that need a restart (kept old)
  bool auth_changed = false;         // users, permissions, token: connected clients are re-checked
  bool logging_changed = false;      // debug/trace/log_file
  bool tls_changed = false;          // certificates, CA, verify, ciphers: a new TLS context
};

// `current` and `next` are options as configured (before a port -1 was resolved).
reload_plan plan_reload(const server_options& current, const server_options& next);

// Lame duck: how many of `initial` connections should be closed `elapsed_ns` after it began:
// none during the grace period, then evenly spread over the rest of the duration (at least
// one per step once due), all of them at the end.
std::size_t lame_duck_due(std::size_t initial, std::int64_t elapsed_ns, std::int64_t grace_ns,
                          std::int64_t duration_ns);

}  // namespace core
