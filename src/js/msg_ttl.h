#pragma once
// The Nats-TTL header: "never", a Go duration of at least 1 s, or an
// integer number of seconds. Stored with whole-second resolution.
#include <cstdint>
#include <optional>
#include <string_view>

namespace js {

// nullopt: invalid (400 10165). 0: no TTL (absent or empty header). storage::ttl_never (-1)
// for "never". Otherwise the TTL in nanoseconds, a whole number of seconds.
std::optional<std::int64_t> parse_msg_ttl(std::string_view v);

// Go's time.ParseDuration: [-+]?(<decimal><unit>)+ with units ns us µs ms s m h, or "0";
// nanoseconds, nullopt if malformed.
std::optional<double> parse_go_duration_ns(std::string_view s);

}  // namespace js
