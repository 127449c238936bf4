#include "src/js/consumer.h"

#include <algorithm>
#include <utility>


namespace js {

std::string status_reply::render() const {
  std::string s = "NATS/1.0 " + std::to_string(code) + " " + description + "\r\n";
  if (last_headers) {
    s += "Nats-Last-Consumer: " + std::to_string(last_consumer) + "\r\n";
    s += "Nats-Last-Stream: " + std::to_string(last_stream) + "\r\n";
  }
  if (!stalled.empty()) s += "Nats-Consumer-Stalled: " + stalled + "\r\n";
  if (pending_headers) {
    s += "Nats-Pending-Messages: " + std::to_string(pending_msgs) + "\r\n";
    s += "Nats-Pending-Bytes: " + std::to_string(pending_bytes) + "\r\n";
  }
  return s + "\r\n";
}

consumer_state_machine::consumer_state_machine(consumer_params params, message_source& src,
                                               base::nanos now)
    : _p(std::move(params)), _src(src), _last_activity(now) {
  _sseq = std::max<std::uint64_t>(1, _p.start_seq);
  _floor = {0, _sseq - 1};  // floors start at (dseq-1, sseq-1)
  if (!_p.new_pin_id) {
    _p.new_pin_id = [this] { return "pin" + std::to_string(++_pin_serial_counter); };
  }
  if (!_p.new_fc_token) {
    _p.new_fc_token = [this] { return "fc" + std::to_string(++_fc_counter); };
  }
}

// ---- timers and pending bookkeeping ---------------------------------------------------

base::nanos consumer_state_machine::wait_for(std::uint64_t redeliveries) const {
  if (_p.backoff.empty()) return _p.ack_wait;
  return _p.backoff[std::min<std::size_t>(redeliveries, _p.backoff.size() - 1)];
}

base::nanos consumer_state_machine::deadline_of(std::uint64_t sseq,
                                                const pending_entry& e) const {
  auto it = _rdc.find(sseq);
  return e.delivered_at + wait_for(it == _rdc.end() ? 0 : it->second);
}

void consumer_state_machine::arm(std::uint64_t sseq) {
  if (_p.ack == ack_policy::flow_control) return;  // no ack_wait: redelivered only by a reset
  disarm(sseq);
  _timers.emplace(deadline_of(sseq, _pending.at(sseq)), sseq);
}

void consumer_state_machine::disarm(std::uint64_t sseq) {
  auto it = _pending.find(sseq);
  if (it != _pending.end()) _timers.erase({deadline_of(sseq, it->second), sseq});
}

bool consumer_state_machine::ack_pending_full() const {
  return _p.ack != ack_policy::none && _p.max_ack_pending > 0 &&
         _pending.size() >= std::uint64_t(_p.max_ack_pending);
}

std::uint64_t consumer_state_machine::num_pending() const {
  return _src.count_matching(_sseq);
}

std::uint64_t consumer_state_machine::delivery_count(std::uint64_t seq) const {
  auto it = _rdc.find(seq);
  return it == _rdc.end() ? (_pending.count(seq) ? 1 : 0) : it->second + 1;
}

void consumer_state_machine::remove_pending(std::uint64_t sseq) {
  disarm(sseq);
  _pending.erase(sseq);
  if (_rdq_set.erase(sseq)) _rdq.erase(std::find(_rdq.begin(), _rdq.end(), sseq));
}

// Called after `sseq` (last delivered as `dseq`) left pending. The floor moves only when
// the lowest outstanding message leaves: to just below the next outstanding one, or to
// the last delivered pair when nothing is outstanding.
void consumer_state_machine::advance_floor_after(std::uint64_t sseq, std::uint64_t dseq) {
  (void)dseq;
  if (!_pending.empty() && _pending.begin()->first < sseq) return;
  if (_pending.empty()) {
    _floor = {std::max(_floor.consumer_seq, _dseq - 1), std::max(_floor.stream_seq, _sseq - 1)};
    return;
  }
  auto next = _pending.begin();
  // A redelivered lower message can carry a higher consumer seq; keep the floor monotonic.
  _floor.consumer_seq = std::max(_floor.consumer_seq, next->second.consumer_seq - 1);
  _floor.stream_seq = std::max(_floor.stream_seq, next->first - 1);
}

// ---- acks -----------------------------------------------------------------------------

void consumer_state_machine::ack_one(std::uint64_t sseq, base::nanos now, actions& out) {
  auto it = _pending.find(sseq);
  if (it == _pending.end()) {
    if (_max_delivered.erase(sseq)) {  // late ack of a kept message releases it
      _rdc.erase(sseq);
      out.emplace_back(released{sseq});
    }
    return;
  }
  std::uint64_t dseq = it->second.consumer_seq;
  _ack_latency.observe_ns(now - it->second.delivered_at);
  if (should_sample()) {
    advisory a;
    a.kind = advisory_kind::ack_metric;
    a.stream_seq = sseq;
    a.consumer_seq = dseq;
    a.deliveries = delivery_count(sseq);
    a.ack_time = now - it->second.delivered_at;
    out.emplace_back(std::move(a));
  }
  remove_pending(sseq);
  _rdc.erase(sseq);
  out.emplace_back(released{sseq});
  advance_floor_after(sseq, dseq);
}

// As nats-server: every ack at 100 %, none at 0, else a roll of 0-99 at or below the rate.
bool consumer_state_machine::should_sample() {
  if (_p.sample_pct <= 0) return false;
  if (_p.sample_pct >= 100) return true;
  return _p.sample_roll && _p.sample_roll() <= _p.sample_pct;
}

void consumer_state_machine::ack_all_upto(std::uint64_t sseq, std::uint64_t dseq, base::nanos now,
                                          actions& out) {
  if (sseq <= _floor.stream_seq) {
    if (_max_delivered.erase(sseq)) {  // the floor moved past it at max_deliver
      _rdc.erase(sseq);
      out.emplace_back(released{sseq});
    }
    return;
  }
  auto p = _pending.find(sseq);
  if (p != _pending.end()) {
    dseq = p->second.consumer_seq;
    _ack_latency.observe_ns(now - p->second.delivered_at);  // the acked message; the rest ride along
  }
  while (!_pending.empty() && _pending.begin()->first <= sseq) {
    std::uint64_t s = _pending.begin()->first;
    remove_pending(s);
    _rdc.erase(s);
    out.emplace_back(released{s});
  }
  while (!_max_delivered.empty() && *_max_delivered.begin() <= sseq) {
    std::uint64_t s = *_max_delivered.begin();
    _max_delivered.erase(_max_delivered.begin());
    _rdc.erase(s);
    out.emplace_back(released{s});
  }
  _floor = {std::max(_floor.consumer_seq, dseq), sseq};
  if (_pending.empty()) advance_floor_after(sseq, dseq);
}

void consumer_state_machine::terminate(std::uint64_t sseq, const std::string& reason,
                                       bool release, actions& out) {
  auto it = _pending.find(sseq);
  advisory a;
  a.kind = advisory_kind::terminated;
  a.stream_seq = sseq;
  a.reason = reason;
  a.deliveries = delivery_count(sseq);
  if (it != _pending.end()) {
    const std::uint64_t dseq = it->second.consumer_seq;
    a.consumer_seq = dseq;
    remove_pending(sseq);
    _rdc.erase(sseq);
    out.emplace_back(std::move(a));
    if (release) out.emplace_back(released{sseq});  // +TERM releases like an ack
    advance_floor_after(sseq, dseq);
  } else if (_max_delivered.erase(sseq)) {
    _rdc.erase(sseq);
    out.emplace_back(std::move(a));
    if (release) out.emplace_back(released{sseq});
  }
}

// Ack wait expired (or plain NAK): queue for redelivery, unless max_deliver is reached, in
// which case the message leaves pending (floor moves) but stays tracked and kept.
void consumer_state_machine::expire_to_redelivery(std::uint64_t sseq, base::nanos,
                                                  actions& out) {
  auto it = _pending.find(sseq);
  if (it == _pending.end()) return;
  std::uint64_t dc = delivery_count(sseq);
  if (_p.max_deliver > 0 && dc >= std::uint64_t(_p.max_deliver)) {
    advisory a;
    a.kind = advisory_kind::max_deliveries;
    a.stream_seq = sseq;
    a.consumer_seq = it->second.consumer_seq;
    a.deliveries = dc;
    std::uint64_t dseq = it->second.consumer_seq;
    remove_pending(sseq);
    _rdc[sseq] = dc - 1;  // keeps num_redelivered and the kept-for-DLQ mark
    _max_delivered.insert(sseq);
    out.emplace_back(std::move(a));
    advance_floor_after(sseq, dseq);
    return;
  }
  disarm(sseq);
  if (_rdq_set.insert(sseq).second) _rdq.push_back(sseq);
}

bool consumer_state_machine::on_ack(const ack_subject& subj, const ack_body& body,
                                    base::nanos now, actions& out) {
  if (_p.ack == ack_policy::none) return false;  // no ack subscription exists
  _last_activity = now;
  const std::uint64_t sseq = subj.stream_seq;
  const bool delivered = sseq < _sseq;  // never-delivered acks get no ack-sync reply
  switch (body.kind) {
    case ack_kind::ack:
    case ack_kind::next:
      if (!delivered) break;
      if (_p.ack == ack_policy::all || _p.ack == ack_policy::flow_control) {
        ack_all_upto(sseq, subj.consumer_seq, now, out);
      } else {
        ack_one(sseq, now, out);
      }
      break;
    case ack_kind::nak: {
      auto it = _pending.find(sseq);
      if (it == _pending.end()) break;
      advisory a;
      a.kind = advisory_kind::nak;
      a.stream_seq = sseq;
      a.consumer_seq = it->second.consumer_seq;
      a.deliveries = delivery_count(sseq);
      out.emplace_back(std::move(a));
      disarm(sseq);
      if (body.delay > 0) {
        // As the server: pretend it was delivered ack_wait ago, plus the delay.
        if (_rdq_set.erase(sseq)) _rdq.erase(std::find(_rdq.begin(), _rdq.end(), sseq));
        it->second.delivered_at = now + body.delay - _p.ack_wait;
        arm(sseq);
      } else {
        // Deadline "now", so a restored snapshot also redelivers it at once.
        it->second.delivered_at = now - wait_for(delivery_count(sseq) - 1);
        expire_to_redelivery(sseq, now, out);
      }
      break;
    }
    case ack_kind::progress: {
      auto it = _pending.find(sseq);
      if (it == _pending.end()) break;
      disarm(sseq);
      if (_rdq_set.erase(sseq)) _rdq.erase(std::find(_rdq.begin(), _rdq.end(), sseq));
      it->second.delivered_at = now;
      arm(sseq);
      break;
    }
    case ack_kind::term:
      terminate(sseq, std::string(body.reason), true, out);
      break;
    case ack_kind::unknown:
      break;
  }
  deliver(now, out);
  return delivered && body.kind != ack_kind::next;
}

void consumer_state_machine::on_removed(std::uint64_t seq, base::nanos now, actions& out) {
  if (_pending.count(seq)) {
    terminate(seq, "Unacknowledged message was deleted", false, out);
  } else if (_max_delivered.erase(seq)) {
    _rdc.erase(seq);
  }
  deliver(now, out);
}

void consumer_state_machine::on_purged(std::uint64_t first, const std::vector<std::uint64_t>& gone,
                                       base::nanos now, actions& out) {
  if (_sseq < first) _sseq = first;
  if (first > 0 && _floor.stream_seq < first) _floor.stream_seq = first - 1;
  for (std::uint64_t seq : gone) {
    auto it = _pending.find(seq);
    if (it == _pending.end()) continue;
    _floor.consumer_seq = std::max(_floor.consumer_seq, it->second.consumer_seq);
    remove_pending(seq);
    _rdc.erase(seq);
  }
  for (auto it = _max_delivered.begin(); it != _max_delivered.end() && *it < first;) {
    _rdc.erase(*it);
    it = _max_delivered.erase(it);
  }
  if (_pending.empty()) _floor = {_dseq - 1, _sseq - 1};
  deliver(now, out);
}

// ---- timers -----------------------------------------------------------------------------

void consumer_state_machine::tick(base::nanos now, actions& out) {
  if (_pause_until != 0 && now >= _pause_until) set_pause(0, now, out);
  expire_requests(now, out);
  for (auto it = _waiting.begin(); it != _waiting.end();) {
    auto& w = *it;
    if (w.hb > 0 && now >= w.hb_next && !interested(w)) {  // no heartbeat into the void
      it = _waiting.erase(it);
      continue;
    }
    ++it;
    if (w.hb > 0 && now >= w.hb_next) {
      out.emplace_back(idle_heartbeat(w.reply));
      w.hb_next = now + w.hb;
    }
  }
  // Ack-wait expiries, queued for redelivery in stream-sequence order.
  std::vector<std::uint64_t> expired;
  while (!_timers.empty() && _timers.begin()->first <= now) {
    expired.push_back(_timers.begin()->second);
    _timers.erase(_timers.begin());
  }
  std::sort(expired.begin(), expired.end());
  for (auto s : expired) {
    // Already disarmed above; expire_to_redelivery's disarm is then a no-op.
    expire_to_redelivery(s, now, out);
  }
  push_heartbeat(now, out);
  if (_p.priority == priority_policy::pinned_client && !_pin.empty() && now >= _pin_deadline)
    clear_pin("timeout", out);
  if (_p.inactive_threshold > 0 && !_inactive_sent && idle_for_inactivity()) {
    if (now >= inactive_deadline()) {
      _inactive_sent = true;
      out.emplace_back(inactive{});
    }
  }
  deliver(now, out);
}

// A pull consumer counts pending ack deadlines as activity; a push consumer does not: as
// nats-server, its delete timer runs from the moment its deliver subject lost interest.
base::nanos consumer_state_machine::inactive_deadline() const {
  base::nanos last = _last_activity;
  if (!push() && !_timers.empty()) last = std::max(last, _timers.rbegin()->first);
  return last + _p.inactive_threshold;
}

base::nanos consumer_state_machine::next_deadline() const {
  base::nanos t = kNever;
  if (!_timers.empty()) t = _timers.begin()->first;
  for (const auto& w : _waiting) {
    if (w.expires_at != 0) t = std::min(t, w.expires_at);
    if (w.hb > 0) t = std::min(t, w.hb_next);
  }
  if (!_pin.empty()) t = std::min(t, _pin_deadline);
  if (_pause_until != 0) t = std::min(t, _pause_until);
  if (_replay_due != 0 && (!_waiting.empty() || _push_active)) t = std::min(t, _replay_due);
  if (_push_active && _p.idle_heartbeat > 0) t = std::min(t, _push_hb_next);
  if (_rl_due != 0 && _push_active) t = std::min(t, _rl_due);
  if (_p.inactive_threshold > 0 && !_inactive_sent && idle_for_inactivity())
    t = std::min(t, inactive_deadline());
  return t;
}

// ---- pause, pins, config ----------------------------------------------------------------

void consumer_state_machine::set_pause(base::nanos until, base::nanos now, actions& out) {
  advisory a;
  a.kind = advisory_kind::pause;
  if (until > now) {
    _pause_until = until;
    a.paused = true;
    a.pause_until = until;
    out.emplace_back(std::move(a));
    return;
  }
  const bool was = _pause_until != 0;
  _pause_until = 0;
  if (was) out.emplace_back(std::move(a));
  if (was) deliver(now, out);
}

void consumer_state_machine::set_pin(const std::string& id, base::nanos now, actions& out) {
  _pin = id;
  _pinned_at = now;
  _pin_deadline = now + _p.priority_timeout;
  advisory a;
  a.kind = advisory_kind::pinned;
  a.group = _p.priority_groups.empty() ? "" : _p.priority_groups.front();
  a.pin_id = id;
  out.emplace_back(std::move(a));
}

void consumer_state_machine::clear_pin(const char* reason, actions& out) {
  advisory a;
  a.kind = advisory_kind::unpinned;
  a.group = _p.priority_groups.empty() ? "" : _p.priority_groups.front();
  a.reason = reason;
  _pin.clear();
  _pinned_at = 0;
  _pin_deadline = kNever;
  out.emplace_back(std::move(a));
}

bool consumer_state_machine::unpin(const std::string& group, base::nanos now, actions& out) {
  if (_p.priority != priority_policy::pinned_client || _p.priority_groups.empty() ||
      _p.priority_groups.front() != group)
    return false;
  if (!_pin.empty()) clear_pin("admin", out);
  deliver(now, out);
  return true;
}

void consumer_state_machine::update(const consumer_params& p, base::nanos now, actions& out) {
  std::vector<std::uint64_t> armed;
  for (const auto& [d, s] : _timers) armed.push_back(s);
  for (auto s : armed) disarm(s);  // deadlines depend on ack_wait/backoff
  _p.ack_wait = p.ack_wait;
  _p.backoff = p.backoff;
  _p.max_deliver = p.max_deliver;
  _p.max_ack_pending = p.max_ack_pending;
  _p.max_batch = p.max_batch;
  _p.max_expires = p.max_expires;
  _p.max_bytes = p.max_bytes;
  _p.headers_only = p.headers_only;
  _p.inactive_threshold = p.inactive_threshold;
  _p.sample_pct = p.sample_pct;
  _p.priority_timeout = p.priority_timeout;
  _p.rate_limit_bps = p.rate_limit_bps;  // push pacing; the bucket keeps its current level
  _p.rate_burst = p.rate_burst;
  if (_p.rate_limit_bps == 0) _rl_due = 0;
  for (auto s : armed) arm(s);
  deliver(now, out);
}

// ---- introspection and persistence -----------------------------------------------------

consumer_numbers consumer_state_machine::numbers(base::nanos now) const {
  consumer_numbers n;
  n.delivered = {_dseq - 1, _sseq - 1};
  n.ack_floor = _floor;
  n.num_ack_pending = _pending.size();
  n.num_redelivered = _p.max_deliver == 1 ? 0 : _rdc.size();
  for (const auto& w : _waiting)
    if (w.expires_at == 0 || w.expires_at > now) ++n.num_waiting;
  n.num_pending = num_pending();
  n.paused = paused(now);
  n.pause_remaining = n.paused ? _pause_until - now : 0;
  n.push_bound = _push_active;
  n.pinned_id = _pin;
  n.pinned_at = _pinned_at;
  return n;
}

bool consumer_state_machine::needs(std::uint64_t seq) const {
  if (_max_delivered.count(seq)) return true;  // kept for inspection
  if (seq <= _floor.stream_seq) return false;
  if (_p.ack != ack_policy::explicit_)
    return seq >= _sseq || _p.ack == ack_policy::all || _p.ack == ack_policy::flow_control;
  return seq >= _sseq || _pending.count(seq) != 0;
}

std::uint64_t consumer_state_machine::needed_from() const {
  const std::uint64_t above_floor = _floor.stream_seq + 1;
  return _max_delivered.empty() ? above_floor : std::min(above_floor, *_max_delivered.begin());
}

consumer_snapshot consumer_state_machine::snapshot() const {
  consumer_snapshot s;
  s.delivered = {_dseq - 1, _sseq - 1};
  s.ack_floor = _floor;
  s.pending.assign(_pending.begin(), _pending.end());
  s.redelivered.assign(_rdc.begin(), _rdc.end());
  return s;
}

void consumer_state_machine::reset(std::uint64_t floor, base::nanos now, actions& out) {
  consumer_snapshot s;
  s.delivered = s.ack_floor = sequence_pair{0, floor};
  restore(s, now);
  _fc_outstanding = 0;  // everything is delivered again: the window starts empty
  _fc_pending.clear();
  _replay_prev_ts = 0;
  _replay_due = 0;
  deliver(now, out);
}

void consumer_state_machine::restore(const consumer_snapshot& s, base::nanos now) {
  _dseq = s.delivered.consumer_seq + 1;
  _sseq = s.delivered.stream_seq + 1;
  _floor = s.ack_floor;
  _timers.clear();
  _rdq.clear();
  _rdq_set.clear();
  _pending.clear();
  _pending.insert(s.pending.begin(), s.pending.end());
  _rdc.clear();
  _rdc.insert(s.redelivered.begin(), s.redelivered.end());
  _max_delivered.clear();
  for (const auto& [seq, n] : _rdc)
    if (!_pending.count(seq)) _max_delivered.insert(seq);
  for (const auto& [seq, e] : _pending) arm(seq);  // past deadlines fire on the next tick
  _last_activity = now;
}

std::optional<pull_request> parse_pull_or_400(std::string_view reply, std::string_view body, actions& out) {
  auto req = parse_pull_request(body);
  if (auto* e = std::get_if<pull_parse_error>(&req)) {
    status_reply s;
    s.to = std::string(reply);
    s.code = 400;
    s.description = std::move(e->description);
    out.emplace_back(std::move(s));
    return std::nullopt;
  }
  return std::get<pull_request>(std::move(req));
}

}  // namespace js
