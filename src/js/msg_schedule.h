#pragma once
// Message schedules (ADR-51), the pure parts: the Nats-Schedule grammar
// (`@at <RFC3339>`, `@every <Go duration >= 1s>`, six-field cron with seconds, the
// `@hourly`-style shorthands), the next fire time as nats-server computes it, and the table
// of a stream's live schedules (one per subject). No clock: every time comes in.
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace js {

// Bit i set = value i allowed; kCronStar marks a field written as `*` / `?` (without a step
// above 1), which decides how day-of-month and day-of-week combine.
struct cron_spec {
  std::uint64_t second = 0, minute = 0, hour = 0, dom = 0, month = 0, dow = 0;
};
constexpr std::uint64_t kCronStar = 1ull << 63;

struct msg_schedule {
  enum class kind : std::uint8_t { at, every, cron } what = kind::at;
  std::int64_t at_ns = 0;     // @at
  std::int64_t every_ns = 0;  // @every
  cron_spec cron;
};

// A Nats-Schedule value with its Nats-Schedule-Time-Zone ("" = none). nullopt = invalid
// (10189): a time zone on @at/@every, @every below 1 s, a cron that is not six fields or
// never fires within five years.
std::optional<msg_schedule> parse_msg_schedule(std::string_view pattern, std::string_view tz);

// Nats-Schedule-Time-Zone when present: false = 10223. Only UTC and its aliases are
// accepted (this server has no time zone database; see README).
bool valid_schedule_time_zone(std::string_view tz);

// Six cron fields (seconds first); nullopt if malformed.
std::optional<cron_spec> parse_cron(std::string_view pattern);
// The first second matching `c` after `after_ns` rounded to the second (robfig/cron as
// nats-server runs it, UTC); nullopt if none within five years.
std::optional<std::int64_t> next_cron(const cron_spec& c, std::int64_t after_ns);

struct fire_time {
  std::int64_t at = 0;  // unix ns
  bool repeat = false;  // @every / cron: the schedule stays after firing
};
// When a schedule stored (or last fired) at `ts` fires next. A repeating schedule whose next
// time already passed (after a restart) fires once, counted from `now`, not once per missed
// interval.
fire_time next_fire(const msg_schedule& s, std::int64_t ts, std::int64_t now);

// Go's time.Round(time.Second) of a unix-ns time.
std::int64_t round_to_second(std::int64_t ns);

// The live schedules of one stream: subject -> (sequence of the schedule message, next fire).
class schedule_table {
 public:
  struct due_entry {
    std::string subject;
    std::uint64_t seq = 0;
    std::int64_t at = 0;
  };
  // A new schedule message on `subject` replaces the one before it.
  void add(const std::string& subject, std::uint64_t seq, std::int64_t at);
  // A repeating schedule fired: its next time.
  void update(const std::string& subject, std::int64_t at);
  void remove(const std::string& subject);
  // Entries with at <= now, in sequence order (nats-server fires them so).
  std::vector<due_entry> due(std::int64_t now) const;
  // Earliest fire time; INT64_MAX when empty.
  std::int64_t next_deadline() const;
  std::optional<due_entry> find(const std::string& subject) const;
  bool empty() const { return _by_subject.empty(); }
  std::size_t size() const { return _by_subject.size(); }
  void clear();

 private:
  struct entry {
    std::uint64_t seq;
    std::int64_t at;
  };
  std::map<std::string, entry> _by_subject;
  std::set<std::pair<std::int64_t, std::string>> _by_time;
};

}  // namespace js
