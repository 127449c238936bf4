#pragma once
// What a STREAM.UPDATE of a replicated stream becomes (issue 11): checked on the meta leader
// against the assignment every server holds, as the standalone stream checks an update
// (parse, name, normalise, seal, validate, check_update), then the meta entry to propose.
// Pure: no clock, no placement (the caller places new peers for a scale up).
#include <optional>
#include <string>
#include <string_view>

#include "src/js/api_errors.h"
#include "src/js/repl_entries.h"
#include "src/js/stream_config.h"

namespace js {

struct stream_update_plan {
  enum class kind : std::uint8_t { config, scale };
  std::optional<api_error> error;
  kind what = kind::config;
  stream_config cfg;                // the new, normalised config
  repl_entries::stream_update next;  // config: same peers and group, the new config_json
};

stream_update_plan plan_stream_update(const repl_entries::stream_assign& current, std::string_view name,
                                      std::string_view payload);

}  // namespace js
