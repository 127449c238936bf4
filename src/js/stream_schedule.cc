// Message schedules on a stream (ADR-51): the publish checks of the
// Nats-Schedule* headers, the table of live schedules, and firing due ones through the normal
// publish path. The grammar and the fire times are msg_schedule.cc (pure).
#include <algorithm>

#include "src/base/log.h"
#include "src/core/subject.h"
#include "src/js/json_util.h"
#include "src/js/msg_ttl.h"
#include "src/js/stream.h"

namespace js {

namespace {

constexpr std::string_view kPurge = "purge";

bool starts_with(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }

// What a fired message keeps of the schedule's (or the source's) headers: everything but the
// schedule's own, expectations, the id, the TTL and the rollup, which are the schedule's.
std::string strip_for_firing(std::string_view block) {
  if (block.empty()) return {};
  std::string out;
  std::size_t pos = block.find("\r\n");
  if (pos == std::string_view::npos) return std::string(block);
  out.append(block.substr(0, pos + 2));
  while (true) {
    pos += 2;
    const std::size_t end = block.find("\r\n", pos);
    if (end == std::string_view::npos || end == pos) break;
    const std::string_view line = block.substr(pos, end - pos);
    const std::string_view name = line.substr(0, line.find(':'));
    const bool drop = name == "Nats-Schedule" || starts_with(name, "Nats-Schedule-") ||
                      starts_with(name, "Nats-Expected-") || name == "Nats-Msg-Id" || name == "Nats-TTL" ||
                      name == "Nats-Rollup";
    if (!drop) out.append(line).append("\r\n");
    pos = end;
  }
  out.append("\r\n");
  return out;
}

}  // namespace

std::optional<api_error> stream::check_schedule(std::string_view subject, const js_headers& h,
                                                std::string_view& hdr, std::string& scratch,
                                                std::optional<std::string_view>& rollup) {
  if (_firing_schedule || _copy_error) return std::nullopt;  // the server's own, or a sourced copy
  const bool allowed = _cfg.allow_msg_schedules;
  if (h.schedule && !h.schedule->empty()) {
    if (!allowed) return make_error(err::schedules_disabled);
    if (h.schedule_time_zone && !valid_schedule_time_zone(*h.schedule_time_zone))
      return make_error(err::schedule_time_zone);
    if (!parse_msg_schedule(*h.schedule, h.schedule_time_zone.value_or("")))
      return make_error(err::schedule_pattern);
    if (h.schedule_ttl && !h.schedule_ttl->empty()) {
      if (!parse_msg_ttl(*h.schedule_ttl)) return make_error(err::schedule_ttl);
      if (!_cfg.allow_msg_ttl) return make_error(err::ttl_disabled);
    }
    const std::string_view target = h.schedule_target.value_or("");
    if (target.empty() || !core::valid_literal_subject(target) || core::subjects_overlap(target, subject))
      return make_error(err::schedule_target);
    if (std::none_of(_cfg.subjects.begin(), _cfg.subjects.end(),
                     [&](const std::string& s) { return core::subjects_overlap(s, target); }))
      return make_error(err::schedule_target);
    if (h.schedule_source &&
        (h.schedule_source->empty() || !core::valid_literal_subject(*h.schedule_source)))
      return make_error(err::schedule_source);
    if (h.schedule_rollup && *h.schedule_rollup != "sub") return make_error(err::schedule_rollup);
    // One schedule per subject: the message rolls up its subject.
    if (!h.rollup) {
      scratch = append_header(hdr, "Nats-Rollup", "sub");
      hdr = scratch;
      rollup = std::string_view("sub");
    } else if (*h.rollup != "sub") {
      return make_error(err::schedule_rollup);
    }
    return std::nullopt;
  }
  if (h.schedule_next) {  // a client may only cancel a schedule
    if (!allowed) return make_error(err::schedules_disabled);
    if (*h.schedule_next != kPurge) return make_error(err::schedule_scheduler);
    const std::string_view scheduler = h.scheduler.value_or("");
    if (scheduler.empty() || scheduler == subject || !core::valid_literal_subject(scheduler))
      return make_error(err::schedule_scheduler);
    // The subject to purge must hold a schedule, if it holds anything (nats-server lets a
    // cancel of a subject with no message through).
    if (auto last = _store->load_last(scheduler); last.ok()) {
      auto v = find_header(last->headers, "Nats-Schedule");
      if (!v || v->empty()) return make_error(err::schedule_scheduler);
    }
    return std::nullopt;
  }
  if (h.scheduler) return make_error(err::schedule_scheduler);  // only alongside Nats-Schedule-Next
  return std::nullopt;
}

void stream::on_schedule_stored(std::uint64_t seq, std::string_view subject, const js_headers& h,
                                std::int64_t now) {
  if (!_cfg.allow_msg_schedules) return;
  if (h.schedule && !h.schedule->empty()) {
    if (auto s = parse_msg_schedule(*h.schedule, h.schedule_time_zone.value_or("")))
      _schedules.add(std::string(subject), seq, next_fire(*s, now, now).at);
    return;
  }
  if (!h.schedule_next || !h.scheduler) return;
  const std::string scheduler(*h.scheduler);
  if (*h.schedule_next == kPurge) {  // a one-shot fired, or a client cancelled
    _schedules.remove(scheduler);
    storage::purge_request pr;
    pr.filter = scheduler;
    if (auto n = _store->purge(pr); n.ok() && *n > 0) notify_removed({});
  } else if (auto next = parse_time(*h.schedule_next)) {
    _schedules.update(scheduler, *next);
  }
}

std::size_t stream::fire_schedules(std::int64_t now) {
  if (_schedules.empty() || _schedules.next_deadline() > now) return 0;
  std::size_t fired = 0;
  for (const auto& d : _schedules.due(now)) {
    auto m = _store->load(d.seq);
    if (!m.ok() || m->subject != d.subject) {  // the schedule message went (purge, delete, limits)
      _schedules.remove(d.subject);
      continue;
    }
    const js_headers sh = parse_js_headers(m->headers);
    const auto sched = sh.schedule ? parse_msg_schedule(*sh.schedule, sh.schedule_time_zone.value_or(""))
                                   : std::nullopt;
    if (!sched || !sh.schedule_target) {
      _schedules.remove(d.subject);
      continue;
    }
    const fire_time next = next_fire(*sched, d.at, now);
    std::string_view src_hdr = m->headers, payload = m->payload;
    storage::stored_msg source;
    if (sh.schedule_source && !sh.schedule_source->empty()) {
      // Subject sampling: the source's latest message, or the schedule's own when it has none.
      if (auto s = _store->load_last(*sh.schedule_source); s.ok()) {
        source = std::move(*s);
        src_hdr = source.headers;
        payload = source.payload;
      }
    }
    std::string hdr = strip_for_firing(src_hdr);
    hdr = append_header(hdr, "Nats-Scheduler", d.subject);
    // RFC 3339 in whole seconds, as Go's time.RFC3339 prints it.
    const std::int64_t whole = next.at / 1'000'000'000 * 1'000'000'000;
    hdr = append_header(hdr, "Nats-Schedule-Next", next.repeat ? base::rfc3339_nano(whole) : std::string(kPurge));
    if (sh.schedule_ttl && !sh.schedule_ttl->empty()) hdr = append_header(hdr, "Nats-TTL", *sh.schedule_ttl);
    if (sh.schedule_rollup && !sh.schedule_rollup->empty())
      hdr = append_header(hdr, "Nats-Rollup", *sh.schedule_rollup);
    const std::string target(*sh.schedule_target);
    const js_headers fh = parse_js_headers(hdr);
    _firing_schedule = true;
    const auto r = store_msg(target, hdr, fh, payload);
    _firing_schedule = false;
    ++fired;
    if (r.what != publish_result::stored) {
      // Not stored (a limit, the disk): the schedule moves on as if it had fired.
      PG_WARN("JetStream stream '{}': schedule '{}' could not publish to '{}': {}", _cfg.name, d.subject, target,
              r.error.description);
      if (next.repeat) _schedules.update(d.subject, next.at);
      else _schedules.remove(d.subject);
    }
    // Stored: on_schedule_stored read its Nats-Schedule-Next (the next time, or the purge).
  }
  return fired;
}

// After a restart: every stored schedule, due at the Nats-Schedule-Next of the last message it
// produced (or counted from its own store time when it never fired).
void stream::load_schedules(std::int64_t now) {
  _schedules.clear();
  if (!_cfg.allow_msg_schedules || _store->last_seq() == 0) return;
  std::map<std::string, std::pair<std::uint64_t, std::int64_t>> fired;  // scheduler -> (seq, next)
  for (std::uint64_t seq = _store->first_seq(); seq <= _store->last_seq();) {
    auto m = _store->load_next("", seq);
    if (!m.ok()) break;
    seq = m->seq + 1;
    if (m->headers.empty()) continue;
    const js_headers h = parse_js_headers(m->headers);
    if (h.schedule && !h.schedule->empty()) {
      if (auto s = parse_msg_schedule(*h.schedule, h.schedule_time_zone.value_or("")))
        _schedules.add(m->subject, m->seq, next_fire(*s, m->ts, now).at);
    } else if (h.scheduler && h.schedule_next && *h.schedule_next != kPurge) {
      if (auto next = parse_time(*h.schedule_next)) fired[std::string(*h.scheduler)] = {m->seq, *next};
    }
  }
  for (const auto& [subject, f] : fired)
    if (auto e = _schedules.find(subject); e && e->seq < f.first) _schedules.update(subject, f.second);
}

}  // namespace js
