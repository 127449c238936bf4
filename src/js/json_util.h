#pragma once
// Small helpers all of src/js shares, JSON or not: RFC 3339 times (nanoseconds, UTC,
// trailing zeros trimmed, as Go prints them), base64 for []byte fields, NATS header lookup
// and editing (the publish path reads its headers in one pass: js_headers.h), the atomic
// file write of meta.inf files, parse_u64, ascii_lower and the stored header limit.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "src/base/go_text.h"

namespace js {

// Times go out as base::rfc3339_nano (src/base/go_text.h).
// Parses RFC 3339 (fraction and offset optional); nullopt if malformed or outside the int64 ns
// range (1677-2262). The Go zero time parses to 0.
std::optional<std::int64_t> parse_time(std::string_view s);

std::string base64_encode(std::string_view in);

// Value of the first header `name` (case-sensitive, as nats-server's fast scanner) in a
// raw "NATS/1.0..." block; nullopt if absent.
std::optional<std::string_view> find_header(std::string_view block, std::string_view name);

// `block` without its "name: ..." lines (the block's framing kept).
std::string remove_header(std::string_view block, std::string_view name);

// `block` with "name: value" appended (a bare "NATS/1.0" block is started when empty):
// how the server adds Nats-Msg-Size / Nats-Pin-Id to a delivered message.
std::string append_header(std::string_view block, std::string_view name, std::string_view value);

// Replaces `dir`/`name` with `content` so that a crash leaves the old or the new file, never
// a torn one: write a temp file, fsync it, rename it over, fsync the directory. On failure
// returns false with `error` set.
bool write_file_atomic(const std::string& dir, const std::string& name, std::string_view content,
                       std::string& error);

// Parses a decimal uint64; nullopt on anything else.
std::optional<std::uint64_t> parse_u64(std::string_view s);

// ASCII lower case (config enums, Go's case-insensitive keys, header values).
std::string ascii_lower(std::string_view s);

// Largest header block a stream stores (nats-server's limit).
inline constexpr std::size_t kMaxHeaderBytes = 65535;

}  // namespace js
