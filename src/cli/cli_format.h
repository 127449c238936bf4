// Pure text helpers of the `peregrine` CLI: natscli's number, size, duration and time formats,
// its flag value parsers, and the human renderings of stream and consumer info JSON.
#pragma once

#include <cstdint>
#include <ctime>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace peregrine::cli {

using ordered_json = nlohmann::ordered_json;

// 1000 -> "1,000"; negative values keep their sign.
std::string comma(int64_t v);
// go-humanize IBytes as natscli prints sizes: "0 B", "404 B", "1.5 KiB", "1.0 GiB", "12 MiB".
std::string ibytes(uint64_t v);
// natscli's humanizeDuration: "30.00s", "2m0s", "1h0m0s", "7d0h0m0s", "1y2d0h0m0s".
std::string human_duration(int64_t ns);
// Go's time.Duration.String(): "0s", "1.5s", "59m58s", "1h0m0s", "250ms".
std::string go_duration(int64_t ns);

// natscli duration flags: Go units (ns us µs ms s m h) plus d, w, M (30 d), y (365 d), in
// sequence ("1h30m", "1.5s", "7d"). A bare number is seconds. nullopt when malformed.
std::optional<int64_t> parse_duration(const std::string& s);
// Size flags: "1024", "1K", "1KiB", "1.5MB", "1GiB", "-1" (unlimited). K/KB/KiB are all 1024.
std::optional<int64_t> parse_bytes(const std::string& s);

// RFC 3339 (nanoseconds optional, Z or +hh:mm) -> Unix nanoseconds; nullopt when malformed.
std::optional<int64_t> parse_rfc3339(const std::string& s);
// Unix ns -> "2026-05-22 10:14:22" in UTC (natscli prints local time; the CLI pins UTC so
// outputs do not depend on the machine's zone).
std::string short_time(int64_t unix_ns);
// Unix ns -> RFC 3339 with nanoseconds in UTC, as Go marshals time.Time: "2026-05-22T10:14:22.5Z".
std::string rfc3339(int64_t unix_ns);

// Standard base64 decode (padding optional); nullopt on a bad character.
std::optional<std::string> base64_decode(const std::string& in);

// Labels right-aligned to the widest one in the block, natscli style: "   Subjects: orders.>".
// An empty label emits a section title (its value) with blank lines around it.
struct info_line {
  std::string label;
  std::string value;
};
std::string render_lines(const std::vector<info_line>& lines);

// `stream info` / `consumer info` human output from the server's INFO response JSON.
std::string stream_info_text(const ordered_json& info);
// `now` (Unix ns) dates "Last delivery: 2.11s ago".
std::string consumer_info_text(const ordered_json& info, int64_t now);
// `edit`'s summary of a configuration change, natscli's "Differences (-old +new):" block with
// one `-`/`+` line per changed top-level field; empty when nothing changed.
std::string config_diff(const ordered_json& before, const ordered_json& after);
// A box table (natscli's `ls`): title, header row and data rows.
std::string box_table(const std::string& title, const std::vector<std::string>& header,
                      const std::vector<std::vector<std::string>>& rows);

}  // namespace peregrine::cli
