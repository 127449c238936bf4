#pragma once
// Go's text forms of times and durations, which nats-server's JSON uses everywhere (API
// replies, advisories, monitoring). One implementation for every layer; pure, unit-tested.
#include <cstdint>
#include <string>

namespace base {

// time.Time in RFC 3339 with nanoseconds, UTC, fraction without trailing zeros:
// "2026-12-01T13:19:41.68829Z"; 0 is Go's zero time "0001-01-01T00:00:00Z".
std::string rfc3339_nano(std::int64_t unix_ns);
// time.Duration.String(): "0s", "999ns", "1.5µs", "1.234567ms", "2m3.5s", "1h0m0s", "-2s".
std::string go_duration(std::int64_t ns);

}  // namespace base
