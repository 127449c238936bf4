#pragma once
// Config reload (SIGHUP): which options may change while running and which need a restart.
// Pure: the server applies the result (live limits, auth, logging) and logs the refusals.
#include <string>
#include <vector>

#include "src/core/options.h"

namespace core {

struct reload_plan {
  server_options result;             // `current` with every live-changeable field from `next`
  std::vector<std::string> changed;  // config keys whose new value is applied
  std::vector<std::string> refused;  // "<key>: <old> -> <new>" that need a restart (kept old)
  bool auth_changed = false;         // user/pass/token: connected clients are re-checked
  bool logging_changed = false;      // debug/trace/log_file
};

// `current` and `next` are options as configured (before a port -1 was resolved).
reload_plan plan_reload(const server_options& current, const server_options& next);

}  // namespace core
