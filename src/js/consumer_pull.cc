// The pull side of the consumer state machine: request intake and validation, the waiting
// queue, and the delivery loop that hands messages to requests.
// Split from consumer.cc for size; same class.
#include <algorithm>
#include <utility>

#include "src/base/assert.h"
#include "src/js/consumer.h"

namespace js {
namespace {

constexpr std::size_t kEmptyHdr = 12;  // "NATS/1.0\r\n" + final "\r\n"

}  // namespace

// ---- pull requests --------------------------------------------------------------------

status_reply consumer_state_machine::status(const waiting_request& w, int code,
                                            std::string text, bool pend) const {
  status_reply s;
  s.to = w.reply;
  s.code = code;
  s.description = std::move(text);
  s.pending_headers = pend;
  s.pending_msgs = w.n;
  s.pending_bytes = w.has_bytes ? w.b : 0;
  return s;
}

void consumer_state_machine::enqueue(waiting_request w) {
  if (_p.priority != priority_policy::prioritized) {
    _waiting.push_back(std::move(w));
    return;
  }
  // End of its priority band: after every request with priority <= its own.
  auto pos = std::find_if(_waiting.begin(), _waiting.end(),
                          [&](const waiting_request& o) { return o.priority > w.priority; });
  _waiting.insert(pos, std::move(w));
}

void consumer_state_machine::requeue(waiting_request w) { enqueue(std::move(w)); }

void consumer_state_machine::on_pull(std::string reply, const pull_request& req,
                                     base::nanos now, actions& out) {
  if (reply.empty()) return;
  _last_activity = now;
  waiting_request w;
  w.reply = std::move(reply);
  w.n = req.batch;
  auto reject = [&](int code, std::string text) {
    out.emplace_back(status(w, code, std::move(text), false));
  };
  if (push()) return reject(409, "Consumer is push based");
  if (_p.max_batch > 0 && req.batch > _p.max_batch)
    return reject(409, "Exceeded MaxRequestBatch of " + std::to_string(_p.max_batch));
  if (_p.max_expires > 0 && req.expires > _p.max_expires)
    return reject(409, "Exceeded MaxRequestExpires of " + base::go_duration(_p.max_expires));
  if (_p.max_bytes > 0 && req.max_bytes > _p.max_bytes)
    return reject(409, "Exceeded MaxRequestMaxBytes of " + std::to_string(_p.max_bytes));
  if ((req.min_pending > 0 || req.min_ack_pending > 0) && _p.priority != priority_policy::overflow)
    return reject(400, "Bad Request - Not a Overflow Priority consumer");
  if (!req.id.empty() && _p.priority != priority_policy::pinned_client)
    return reject(400, "Bad Request - Not a Pinned Client Priority consumer");
  if (_p.priority != priority_policy::none) {
    if (req.group.empty()) return reject(400, "Bad Request - Priority Group missing");
    if (std::find(_p.priority_groups.begin(), _p.priority_groups.end(), req.group) ==
        _p.priority_groups.end())
      return reject(400, "Bad Request - Invalid Priority Group");
  }
  if (_p.priority == priority_policy::pinned_client && !req.id.empty() && !_pin.empty()) {
    if (req.id != _pin) return reject(423, "Nats-Pin-Id mismatch");
    _pin_deadline = now + _p.priority_timeout;  // the pinned client is alive
  }
  if (req.no_wait) {
    drop_uninterested();  // requests nobody listens to any more do not count as pending
    std::uint64_t avail = paused(now) ? 0 : num_pending() + _rdq.size();
    std::uint64_t asked = 0;
    for (const auto& o : _waiting) asked += std::uint64_t(o.n);
    if (avail == 0 && req.expires == 0) return reject(404, "No Messages");
    if (avail > 0 && avail < asked) return reject(408, "Requests Pending");
  }
  if (_p.max_waiting > 0 && _waiting.size() >= std::uint64_t(_p.max_waiting)) {
    expire_requests(now, out);
    drop_uninterested();
    if (_waiting.size() >= std::uint64_t(_p.max_waiting))
      return reject(409, "Exceeded MaxWaiting");
  }
  w.serial = _next_serial++;
  w.has_bytes = req.max_bytes > 0;
  w.b = req.max_bytes;
  w.no_wait = req.no_wait;
  w.expires_at = req.expires > 0 ? now + req.expires : 0;
  w.hb = req.idle_heartbeat;
  w.hb_next = w.hb > 0 ? now + w.hb : 0;
  w.group = req.group;
  w.min_pending = req.min_pending;
  w.min_ack_pending = req.min_ack_pending;
  w.id = req.id;
  w.priority = req.priority;
  enqueue(std::move(w));
  deliver(now, out);
}

void consumer_state_machine::expire_requests(base::nanos now, actions& out) {
  for (auto it = _waiting.begin(); it != _waiting.end();) {
    if (it->expires_at != 0 && now >= it->expires_at) {
      out.emplace_back(status(*it, 408, "Request Timeout", true));
      it = _waiting.erase(it);
    } else {
      ++it;
    }
  }
}

void consumer_state_machine::drop_requests(const std::string& reply) {
  std::erase_if(_waiting, [&](const waiting_request& w) { return w.reply == reply; });
}

void consumer_state_machine::drop_uninterested() {
  if (!_p.has_interest) return;
  std::erase_if(_waiting, [&](const waiting_request& w) { return !interested(w); });
}

void consumer_state_machine::on_delete(actions& out) {
  for (const auto& w : _waiting) out.emplace_back(status(w, 409, "Consumer Deleted", false));
  _waiting.clear();
}

void consumer_state_machine::on_shutdown(actions& out) {
  for (const auto& w : _waiting) out.emplace_back(status(w, 409, "Server Shutdown", true));
  _waiting.clear();
}

// ---- delivery -------------------------------------------------------------------------

std::optional<consumer_state_machine::candidate> consumer_state_machine::next_candidate(
    base::nanos now, actions& out) {
  while (!_rdq.empty()) {
    std::uint64_t s = _rdq.front();
    if (!_pending.count(s)) {  // defensive: the queue mirrors pending
      _rdq.pop_front();
      _rdq_set.erase(s);
      continue;
    }
    auto m = _src.load(s);
    if (!m) {
      terminate(s, "Unacknowledged message was deleted", false, out);
      (void)now;
      continue;
    }
    return candidate{*m, true};
  }
  if (ack_pending_full()) return std::nullopt;
  auto m = _src.next_matching(_sseq);
  if (!m) return std::nullopt;
  PG_ASSERT(m->seq >= _sseq);
  if (_p.replay_original && _replay_prev_at != 0) {
    const base::nanos due = _replay_prev_at + std::max<std::int64_t>(0, m->timestamp - _replay_prev_ts);
    if (now < due) {
      _replay_due = due;
      return std::nullopt;
    }
  }
  return candidate{*m, false};
}

std::uint64_t consumer_state_machine::msg_size(const msg_meta& m, std::uint64_t dc,
                                               std::uint64_t dseq, std::uint64_t pending,
                                               const std::string& pin) const {
  std::uint64_t hdr = m.hdr_len;
  std::uint64_t payload = m.payload_len;
  if (_p.headers_only) {
    if (hdr == 0) hdr = kEmptyHdr;
    hdr += 15 + decimal_digits(payload) + 2;  // "Nats-Msg-Size: N\r\n"
    payload = 0;
  }
  if (!pin.empty()) {
    if (hdr == 0) hdr = kEmptyHdr;
    hdr += 13 + pin.size() + 2;  // "Nats-Pin-Id: <id>\r\n"
  }
  return m.subject_len + hdr + payload +
         ack_subject_len(_p.stream_name.size(), _p.consumer_name.size(), dc, m.seq, dseq,
                         m.timestamp, pending);
}

void consumer_state_machine::commit(const candidate& c, std::uint64_t dc, std::uint64_t pend,
                                    std::uint64_t size, const std::string& to, base::nanos now,
                                    actions& out) {
  const msg_meta& m = c.meta;
  const std::uint64_t dseq = _dseq++;
  if (c.redelivery) {
    _rdq.pop_front();
    _rdq_set.erase(m.seq);
    _rdc[m.seq] = dc - 1;
    _pending[m.seq] = {dseq, now};
    arm(m.seq);
  } else {
    _sseq = m.seq + 1;
    _replay_prev_ts = m.timestamp;
    _replay_prev_at = now;
    if (_p.ack == ack_policy::none) {
      _floor = {dseq, m.seq};
    } else {
      _pending[m.seq] = {dseq, now};
      arm(m.seq);
    }
  }
  _last_activity = now;
  delivery d;
  d.to = to;
  d.stream_seq = m.seq;
  d.consumer_seq = dseq;
  d.delivery_count = dc;
  d.pending = pend;
  d.timestamp = m.timestamp;
  d.pin_id = _pin;
  d.size = size;
  out.emplace_back(std::move(d));
  // After the delivery, so the agent reads the message before a retention delete.
  if (!c.redelivery && _p.ack == ack_policy::none) out.emplace_back(released{m.seq});
}

void consumer_state_machine::deliver(base::nanos now, actions& out) {
  if (_pause_until != 0 && now >= _pause_until) set_pause(0, now, out);
  if (push()) return deliver_push(now, out);
  expire_requests(now, out);
  bool exhausted = paused(now);
  while (!exhausted && !_waiting.empty()) {
    _replay_due = 0;
    auto c = next_candidate(now, out);
    if (!c) {
      exhausted = !ack_pending_full() && _replay_due == 0;
      break;
    }
    const bool pinned_policy = _p.priority == priority_policy::pinned_client;
    std::optional<std::uint64_t> backlog;
    std::optional<std::size_t> pick;
    for (std::size_t i = 0; i < _waiting.size();) {
      auto& w = _waiting[i];
      if (!interested(w)) {  // its inbox is gone: no message into the void
        _waiting.erase(_waiting.begin() + std::ptrdiff_t(i));
        continue;
      }
      if (pinned_policy) {
        if (!w.id.empty() && w.id != _pin) {  // stale pin id
          out.emplace_back(status(w, 423, "Nats-Wrong-Pin-Id", true));
          _waiting.erase(_waiting.begin() + std::ptrdiff_t(i));
          continue;
        }
        if (w.id.empty() && !_pin.empty()) {  // standby while someone is pinned
          ++i;
          continue;
        }
      } else if (_p.priority == priority_policy::overflow &&
                 (w.min_pending > 0 || w.min_ack_pending > 0)) {
        if (!backlog) backlog = num_pending() + _rdq.size();
        bool ok = (w.min_pending > 0 && *backlog >= std::uint64_t(w.min_pending)) ||
                  (w.min_ack_pending > 0 && _pending.size() >= std::uint64_t(w.min_ack_pending));
        if (!ok) {
          ++i;
          continue;
        }
      }
      pick = i;
      break;
    }
    if (!pick) break;
    // A pin is only taken once the message actually goes to the request (max_bytes may
    // refuse it), so PINNED advisories always name a pin that delivered something.
    std::string pin = _pin;
    const bool new_pin = pinned_policy && pin.empty();
    if (new_pin) pin = _p.new_pin_id();
    waiting_request w = std::move(_waiting[*pick]);
    _waiting.erase(_waiting.begin() + std::ptrdiff_t(*pick));

    const msg_meta& m = c->meta;
    const std::uint64_t dseq = _dseq;
    const std::uint64_t dc = c->redelivery ? delivery_count(m.seq) + 1 : 1;
    const std::uint64_t next_sseq = c->redelivery ? _sseq : m.seq + 1;
    const std::uint64_t pend = _src.count_matching(next_sseq);
    const std::uint64_t size = msg_size(m, dc, dseq, pend, pin);
    if (w.has_bytes && std::int64_t(size) > w.b) {
      out.emplace_back(status(w, 409, "Message Size Exceeds MaxBytes", true));
      continue;
    }
    if (new_pin) {
      set_pin(pin, now, out);
      w.id = pin;  // the rest of this request's batch goes to the pinned client too
      // Requests still carrying an old pin id learn about the new pin now.
      for (auto it = _waiting.begin(); it != _waiting.end();) {
        if (!it->id.empty()) {
          out.emplace_back(status(*it, 423, "Nats-Wrong-Pin-Id", true));
          it = _waiting.erase(it);
        } else {
          ++it;
        }
      }
    }
    commit(*c, dc, pend, size, w.reply, now, out);

    --w.n;
    ++w.d;
    if (w.has_bytes) w.b -= std::int64_t(size);
    if (w.hb > 0) w.hb_next = now + w.hb;
    if (w.has_bytes && w.b == 0) continue;  // budget used up exactly: silent end
    if (w.n == 0) {
      if (w.has_bytes) out.emplace_back(status(w, 409, "Batch Completed", true));
      continue;
    }
    requeue(std::move(w));  // round-robin: one message at a time across requests
  }
  if (exhausted) {
    // No message to hand out: no_wait requests end now (408 with pending after some
    // messages, 404 if nothing and no expiry; with expiry they wait for a first message).
    for (auto it = _waiting.begin(); it != _waiting.end();) {
      if (it->no_wait && (it->expires_at == 0 || it->d > 0)) {
        if (it->d > 0) {
          out.emplace_back(status(*it, 408, "Request Timeout", true));
        } else {
          out.emplace_back(status(*it, 404, "No Messages", false));
        }
        it = _waiting.erase(it);
      } else {
        ++it;
      }
    }
  }
}

void consumer_state_machine::on_stream_advanced(std::uint64_t last_seq, base::nanos now,
                                                actions& out) {
  _last_stream_seq = std::max(_last_stream_seq, last_seq);
  deliver(now, out);
}

}  // namespace js
