#include "src/js/msg_schedule.h"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <limits>

#include "src/core/subject.h"
#include "src/js/json_util.h"
#include "src/js/msg_ttl.h"

namespace js {

namespace {

constexpr std::int64_t kSec = 1'000'000'000;
namespace chr = std::chrono;

std::string lower(std::string_view s) {
  std::string out(s);
  for (auto& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// strconv.Atoi, then "no negatives".
std::optional<unsigned> parse_uint(std::string_view s) {
  if (!s.empty() && s[0] == '+') s.remove_prefix(1);
  if (s.empty() || s.size() > 9) return std::nullopt;
  unsigned v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return std::nullopt;
    v = v * 10 + static_cast<unsigned>(c - '0');
  }
  return v;
}

struct bounds {
  unsigned min, max;
  const char* const* names;  // index = value - offset_of_names, nullptr-terminated
  unsigned names_from;
};
constexpr const char* kMonths[] = {"jan", "feb", "mar", "apr", "may", "jun", "jul",
                                   "aug", "sep", "oct", "nov", "dec", nullptr};
constexpr const char* kDays[] = {"sun", "mon", "tue", "wed", "thu", "fri", "sat", nullptr};

std::optional<unsigned> int_or_name(std::string_view s, const bounds& b) {
  if (b.names) {
    const std::string l = lower(s);
    for (unsigned i = 0; b.names[i]; ++i)
      if (l == b.names[i]) return b.names_from + i;
  }
  return parse_uint(s);
}

// number | number "-" number, optionally "/" step; "*" or "?" = the whole range.
std::optional<std::uint64_t> parse_range(std::string_view expr, const bounds& b) {
  const auto range_step = core::split_tokens(expr, '/');
  if (range_step.size() > 2) return std::nullopt;
  const auto low_high = core::split_tokens(range_step[0], '-');
  unsigned start, end, step = 1;
  std::uint64_t extra = 0;
  if (low_high[0] == "*" || low_high[0] == "?") {
    if (low_high.size() != 1) return std::nullopt;
    start = b.min, end = b.max, extra = kCronStar;
  } else {
    auto s = int_or_name(low_high[0], b);
    if (!s) return std::nullopt;
    start = end = *s;
    if (low_high.size() == 2) {
      auto e = int_or_name(low_high[1], b);
      if (!e) return std::nullopt;
      end = *e;
    } else if (low_high.size() > 2) {
      return std::nullopt;
    }
  }
  if (range_step.size() == 2) {
    auto st = parse_uint(range_step[1]);
    if (!st) return std::nullopt;
    step = *st;
    if (low_high.size() == 1 && extra == 0) end = b.max;  // "N/step" means "N-max/step"
    if (step > 1) extra = 0;
  }
  if (start < b.min || end > b.max || start > end || step == 0) return std::nullopt;
  std::uint64_t bits = 0;
  for (unsigned i = start; i <= end; i += step) bits |= 1ull << i;
  return bits | extra;
}

std::optional<std::uint64_t> parse_field(std::string_view field, const bounds& b) {
  std::uint64_t bits = 0;
  for (auto part : core::split_tokens(field, ',')) {
    if (part.empty()) continue;  // Go's FieldsFunc skips empty items
    auto r = parse_range(part, b);
    if (!r) return std::nullopt;
    bits |= *r;
  }
  return bits;
}

struct civil {
  int y;
  unsigned mo, d, h, mi, s, wd;
};

civil to_civil(std::int64_t secs) {
  const std::int64_t days = secs >= 0 ? secs / 86400 : (secs - 86399) / 86400;
  const std::int64_t rem = secs - days * 86400;
  const chr::sys_days sd{chr::days{days}};
  const chr::year_month_day ymd{sd};
  const chr::weekday wd{sd};
  return {int(ymd.year()), unsigned(ymd.month()), unsigned(ymd.day()), unsigned(rem / 3600),
          unsigned(rem % 3600 / 60), unsigned(rem % 60), wd.c_encoding()};
}

std::int64_t from_civil(int y, unsigned mo, unsigned d, unsigned h = 0, unsigned mi = 0, unsigned s = 0) {
  const chr::sys_days sd{chr::year{y} / chr::month{mo} / chr::day{d}};
  return std::int64_t(sd.time_since_epoch().count()) * 86400 + h * 3600 + mi * 60 + s;
}

bool day_matches(const cron_spec& c, const civil& t) {
  const bool dom = (1ull << t.d) & c.dom;
  const bool dow = (1ull << t.wd) & c.dow;
  if ((c.dom & kCronStar) || (c.dow & kCronStar)) return dom && dow;
  return dom || dow;
}

}  // namespace

std::int64_t round_to_second(std::int64_t ns) {
  // Go rounds halfway values away from zero.
  std::int64_t q = ns / kSec, r = ns % kSec;
  if (r < 0) r += kSec, --q;
  return (r >= kSec / 2 ? q + 1 : q) * kSec;
}

std::optional<cron_spec> parse_cron(std::string_view pattern) {
  std::vector<std::string_view> f;
  for (std::size_t i = 0; i < pattern.size();) {
    while (i < pattern.size() && std::isspace(static_cast<unsigned char>(pattern[i]))) ++i;
    const std::size_t b = i;
    while (i < pattern.size() && !std::isspace(static_cast<unsigned char>(pattern[i]))) ++i;
    if (i > b) f.push_back(pattern.substr(b, i - b));
  }
  if (f.size() != 6) return std::nullopt;
  static constexpr bounds kSecB{0, 59, nullptr, 0}, kMinB{0, 59, nullptr, 0}, kHourB{0, 23, nullptr, 0},
      kDomB{1, 31, nullptr, 0}, kMonthB{1, 12, kMonths, 1}, kDowB{0, 6, kDays, 0};
  cron_spec c;
  const bounds* b[] = {&kSecB, &kMinB, &kHourB, &kDomB, &kMonthB, &kDowB};
  std::uint64_t* out[] = {&c.second, &c.minute, &c.hour, &c.dom, &c.month, &c.dow};
  for (int i = 0; i < 6; ++i) {
    auto bits = parse_field(f[i], *b[i]);
    if (!bits) return std::nullopt;
    *out[i] = *bits;
  }
  return c;
}

std::optional<std::int64_t> next_cron(const cron_spec& c, std::int64_t after_ns) {
  std::int64_t t = round_to_second(after_ns) / kSec + 1;  // the earliest: the upcoming second
  const int year_limit = to_civil(t).y + 5;
  while (true) {
    const civil v = to_civil(t);
    if (v.y > year_limit) return std::nullopt;
    if (!((1ull << v.mo) & c.month)) {
      t = v.mo == 12 ? from_civil(v.y + 1, 1, 1) : from_civil(v.y, v.mo + 1, 1);
    } else if (!day_matches(c, v)) {
      t = from_civil(v.y, v.mo, v.d) + 86400;
    } else if (!((1ull << v.h) & c.hour)) {
      t = from_civil(v.y, v.mo, v.d, v.h) + 3600;
    } else if (!((1ull << v.mi) & c.minute)) {
      t = from_civil(v.y, v.mo, v.d, v.h, v.mi) + 60;
    } else if (!((1ull << v.s) & c.second)) {
      t += 1;
    } else {
      return t * kSec;
    }
  }
}

bool valid_schedule_time_zone(std::string_view tz) {
  return tz == "UTC" || tz == "Etc/UTC" || tz == "Etc/GMT" || tz == "GMT" || tz == "Etc/Universal" ||
         tz == "Universal" || tz == "Etc/Zulu" || tz == "Zulu" || tz == "UCT" || tz == "Etc/UCT";
}

std::optional<msg_schedule> parse_msg_schedule(std::string_view pattern, std::string_view tz) {
  msg_schedule s;
  if (pattern.starts_with("@at ")) {
    if (!tz.empty()) return std::nullopt;  // a time zone only goes with cron
    auto t = parse_time(pattern.substr(4));
    if (!t) return std::nullopt;
    s.what = msg_schedule::kind::at;
    s.at_ns = *t;
    return s;
  }
  if (pattern.starts_with("@every ")) {
    if (!tz.empty()) return std::nullopt;
    auto d = parse_go_duration_ns(pattern.substr(7));
    if (!d || *d < double(kSec) || *d > double(std::numeric_limits<std::int64_t>::max())) return std::nullopt;
    s.what = msg_schedule::kind::every;
    s.every_ns = static_cast<std::int64_t>(*d);
    return s;
  }
  std::string_view cron = pattern;
  if (pattern == "@yearly" || pattern == "@annually") cron = "0 0 0 1 1 *";
  else if (pattern == "@monthly") cron = "0 0 0 1 * *";
  else if (pattern == "@weekly") cron = "0 0 0 * * 0";
  else if (pattern == "@daily" || pattern == "@midnight") cron = "0 0 0 * * *";
  else if (pattern == "@hourly") cron = "0 0 * * * *";
  if (!tz.empty() && !valid_schedule_time_zone(tz)) return std::nullopt;
  auto c = parse_cron(cron);
  if (!c) return std::nullopt;
  // nats-server computes the first fire time at publish: a cron that never fires is invalid.
  if (!next_cron(*c, 0)) return std::nullopt;
  s.what = msg_schedule::kind::cron;
  s.cron = *c;
  return s;
}

fire_time next_fire(const msg_schedule& s, std::int64_t ts, std::int64_t now) {
  switch (s.what) {
    case msg_schedule::kind::at:
      return {s.at_ns, false};
    case msg_schedule::kind::every: {
      std::int64_t next = round_to_second(ts) + s.every_ns;
      if (next < now) next = round_to_second(now) + s.every_ns;
      return {next, true};
    }
    case msg_schedule::kind::cron: {
      auto next = next_cron(s.cron, ts);
      if (next && *next < now) next = next_cron(s.cron, round_to_second(now));
      // Validated at publish; a cron can only stop matching past five years of silence.
      return {next.value_or(std::numeric_limits<std::int64_t>::max()), true};
    }
  }
  return {0, false};
}

// ---- schedule_table ---------------------------------------------------------------------

void schedule_table::add(const std::string& subject, std::uint64_t seq, std::int64_t at) {
  remove(subject);
  _by_subject.emplace(subject, entry{seq, at});
  _by_time.emplace(at, subject);
}

void schedule_table::update(const std::string& subject, std::int64_t at) {
  auto it = _by_subject.find(subject);
  if (it == _by_subject.end()) return;
  _by_time.erase({it->second.at, subject});
  it->second.at = at;
  _by_time.emplace(at, subject);
}

void schedule_table::remove(const std::string& subject) {
  auto it = _by_subject.find(subject);
  if (it == _by_subject.end()) return;
  _by_time.erase({it->second.at, subject});
  _by_subject.erase(it);
}

std::vector<schedule_table::due_entry> schedule_table::due(std::int64_t now) const {
  std::vector<due_entry> out;
  for (const auto& [at, subject] : _by_time) {
    if (at > now) break;
    out.push_back({subject, _by_subject.at(subject).seq, at});
  }
  std::sort(out.begin(), out.end(), [](const due_entry& a, const due_entry& b) { return a.seq < b.seq; });
  return out;
}

std::int64_t schedule_table::next_deadline() const {
  return _by_time.empty() ? std::numeric_limits<std::int64_t>::max() : _by_time.begin()->first;
}

std::optional<schedule_table::due_entry> schedule_table::find(const std::string& subject) const {
  auto it = _by_subject.find(subject);
  if (it == _by_subject.end()) return std::nullopt;
  return due_entry{subject, it->second.seq, it->second.at};
}

void schedule_table::clear() {
  _by_subject.clear();
  _by_time.clear();
}

}  // namespace js
