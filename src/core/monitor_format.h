#pragma once
// nats-server's own text forms in its monitoring JSON (pure; unit-tested). Times and plain
// durations use Go's forms from src/base/go_text.h.
#include <cstdint>
#include <string>

namespace core {

// nats-server's uptime/idle text: "1y2d3h4m5s", leading zero units left out ("0s", "16s").
std::string uptime_text(std::int64_t ns);
// connz rtt: Duration.String() after nats-server truncates an rtt between 1 µs and 1 ms to
// whole µs ("441µs"); "1.234567ms", "1.5s" above.
std::string rtt_text(std::int64_t ns);

}  // namespace core
