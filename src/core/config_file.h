#pragma once
// A generic reader for nats-server's config syntax: `key: value`, `key = value`,
// `key value`, `#`/`//` comments, `{ }` maps and `[ ]` arrays, quoted and unquoted strings,
// `include "file"` and `$VAR` references. It only builds a value tree; what the keys mean
// lives in config_mapper.cc.
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace core {

struct config_value {
  enum class kind { scalar, map, array };
  kind type = kind::scalar;
  std::string text;    // scalar: the text with quotes removed and escapes applied
  bool quoted = false; // scalar: written in quotes (never a bool/number keyword)
  std::vector<std::pair<std::string, config_value>> entries;  // map, in file order
  std::vector<config_value> items;                            // array
  // Where the value starts, for messages.
  std::string file;
  int line = 0;
  int col = 0;
  // Where the key starts, for a value stored in a map (unknown-key warnings point there).
  int key_line = 0;
  int key_col = 0;
  // A map entry referenced as $VAR somewhere: not an unknown option when unrecognised.
  bool used_as_variable = false;

  bool is_map() const noexcept { return type == kind::map; }
  bool is_array() const noexcept { return type == kind::array; }
  bool is_scalar() const noexcept { return type == kind::scalar; }
  // Map lookup; keys compare case-insensitively as nats-server does. Null when absent.
  const config_value* find(std::string_view key) const noexcept;
  // "<file>:<line>:<col>" of the value, and of its key.
  std::string where() const;
  std::string key_where() const;
};

// Parses `text` as the contents of `file` (used in messages and to resolve includes).
// On failure returns false with `error` = "<file>:<line>:<col>: <reason>".
bool parse_config_text(std::string_view text, const std::string& file, config_value& root,
                       std::string& error);
// Reads and parses a file.
bool parse_config_file(const std::string& path, config_value& root, std::string& error);

// Scalar conversions shared by the config mapping and the command line.
// Integer with an optional size suffix: k/m/g/t = 1000^n, kb/mb/gb/tb (and ki/mi/gi,
// kib/mib/gib) = 1024^n; case-insensitive.
bool parse_size(std::string_view s, std::int64_t& out) noexcept;
// Go-style duration ("2m", "10s", "500ms", "1h30m", "1.5s", units ns/us/ms/s/m/h) in
// milliseconds; a bare number means seconds, as nats-server reads integer timeouts.
bool parse_duration_ms(std::string_view s, std::int64_t& out) noexcept;
// true/false/yes/no/on/off, case-insensitive.
bool parse_bool(std::string_view s, bool& out) noexcept;

}  // namespace core
