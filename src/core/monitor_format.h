#pragma once
// Go's text formats that nats-server's monitoring JSON uses (pure; unit-tested).
#include <cstdint>
#include <string>

namespace core {

// time.RFC3339Nano in UTC: "2026-12-01T13:19:41.68829Z" (fraction without trailing zeros).
std::string rfc3339(std::int64_t wall_ns);
// nats-server's uptime/idle text: "1y2d3h4m5s", leading zero units left out ("0s", "16s").
std::string uptime_text(std::int64_t ns);
// time.Duration.String() as nats-server shows rtt: "441µs" (truncated to µs below 1 ms),
// "1.234567ms", "1.5s", "2m3.5s".
std::string go_duration(std::int64_t ns);

}  // namespace core
