// Push mode of the consumer state machine: deliveries go to
// deliver_subject while it has interest, idle heartbeats, and flow control (a window of
// unconfirmed bytes, 2 MiB doubling to 32 MiB, with $JS.FC requests).
#include <algorithm>
#include <utility>

#include "src/js/consumer.h"

namespace js {
namespace {
constexpr std::uint64_t kMaxWindow = 32u << 20;
}  // namespace

void consumer_state_machine::deliver_push(base::nanos now, actions& out) {
  _rl_due = 0;
  if (!_push_active || paused(now)) return;
  if (_p.rate_limit_bps > 0) {
    // Token bucket in bytes: refill at bps/8, capped at the burst; a delivery may take it
    // into debt, and the next one waits until the debt is paid.
    const double rate = double(_p.rate_limit_bps) / 8 / double(base::kSecond);
    const double burst = double(std::max<std::uint64_t>(_p.rate_burst, 1));
    _rl_tokens = _rl_at == 0 ? burst : std::min(burst, _rl_tokens + double(now - _rl_at) * rate);
    _rl_at = now;
  }
  while (!(_p.flow_control && _fc_outstanding > _fc_window)) {  // over the window: stalled
    if (_p.rate_limit_bps > 0 && _rl_tokens < 0) {
      const double rate = double(_p.rate_limit_bps) / 8 / double(base::kSecond);
      _rl_due = now + base::nanos(-_rl_tokens / rate) + 1;
      break;
    }
    _replay_due = 0;
    auto c = next_candidate(now, out);
    if (!c) break;
    const std::uint64_t dc = c->redelivery ? delivery_count(c->meta.seq) + 1 : 1;
    const std::uint64_t next_sseq = c->redelivery ? _sseq : c->meta.seq + 1;
    const std::uint64_t pend = _src.count_matching(next_sseq);
    const std::uint64_t size = msg_size(c->meta, dc, _dseq, pend, _pin);
    commit(*c, dc, pend, size, _p.deliver_subject, now, out);
    if (_p.rate_limit_bps > 0) _rl_tokens -= double(size);
    if (_p.idle_heartbeat > 0) _push_hb_next = now + _p.idle_heartbeat;
    if (!_p.flow_control) continue;
    _fc_outstanding += size;
    if (_fc_pending.empty() && _fc_outstanding > _fc_window / 2) request_flow_control(out);
  }
  // flow_control acks: at max_ack_pending only an answered request lets delivery go on, so
  // ask at once rather than at the next heartbeat (ADR-58).
  if (_p.ack == ack_policy::flow_control && _fc_pending.empty() && ack_pending_full()) request_flow_control(out);
}

void consumer_state_machine::request_flow_control(actions& out) {
  _fc_pending = "$JS.FC." + _p.stream_name + "." + _p.consumer_name + "." + _p.new_fc_token();
  _fc_bytes_at_request = _fc_outstanding;
  status_reply s;
  s.to = _p.deliver_subject;
  s.code = 100;
  s.description = "FlowControl Request";
  s.reply = _fc_pending;
  out.emplace_back(std::move(s));
}

status_reply consumer_state_machine::idle_heartbeat(std::string to) const {
  status_reply s;
  s.to = std::move(to);
  s.code = 100;
  s.description = "Idle Heartbeat";
  s.last_headers = true;
  s.last_consumer = _dseq - 1;
  s.last_stream = _sseq - 1;
  return s;
}

void consumer_state_machine::push_heartbeat(base::nanos now, actions& out) {
  if (!push() || !_push_active || _p.idle_heartbeat <= 0 || now < _push_hb_next) return;
  // Idle with unacked deliveries: a flow-control request moves the ack floor up.
  if (_p.ack == ack_policy::flow_control && _fc_pending.empty() && !_pending.empty()) request_flow_control(out);
  status_reply s = idle_heartbeat(_p.deliver_subject);
  s.stalled = _fc_pending;  // clients answer the FC request named here too
  out.emplace_back(std::move(s));
  _push_hb_next = now + _p.idle_heartbeat;
}

void consumer_state_machine::set_push_interest(bool active, base::nanos now, actions& out) {
  if (!push() || active == _push_active) return;
  _push_active = active;
  _last_activity = now;
  if (active) {
    _push_hb_next = now + _p.idle_heartbeat;
    deliver(now, out);
  }
}

void consumer_state_machine::on_flow_control_reply(const std::string& subject, base::nanos now,
                                                   actions& out, std::optional<sequence_pair> last) {
  bool acked = false;
  if (last && _p.ack == ack_policy::flow_control && last->stream_seq > 0 && _sseq > 1) {
    // Only what was delivered; the receiver reports what it stored.
    const std::uint64_t sseq = std::min(last->stream_seq, _sseq - 1);
    const std::uint64_t dseq = std::min(last->consumer_seq, _dseq - 1);
    const std::size_t before = _pending.size();
    ack_all_upto(sseq, dseq, now, out);
    acked = _pending.size() != before;
    _last_activity = now;
  }
  if (_fc_pending.empty() || subject != _fc_pending) {  // stale ids are ignored
    if (acked) deliver(now, out);
    return;
  }
  _fc_outstanding -= std::min(_fc_outstanding, _fc_bytes_at_request);
  _fc_window = std::min(kMaxWindow, _fc_window * 2);
  _fc_pending.clear();
  deliver(now, out);
}

void consumer_state_machine::rebind_push(std::string deliver_subject, base::nanos now,
                                         actions& out) {
  _p.deliver_subject = std::move(deliver_subject);
  for (auto& [seq, e] : _pending) {
    disarm(seq);
    if (_rdq_set.insert(seq).second) _rdq.push_back(seq);
  }
  _fc_outstanding = 0;
  _fc_pending.clear();
  deliver(now, out);
}

}  // namespace js
