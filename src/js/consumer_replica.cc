#include "src/js/consumer_replica.h"

#include <fmt/format.h>

#include <algorithm>
#include <type_traits>
#include <utility>

namespace js {

namespace re = repl_entries;

consumer_replica::consumer_replica(consumer_params params, message_source& src,
                                   repl::replicated_log& log, std::string self)
    : _params(std::move(params)), _src(src), _log(log), _self(std::move(self)) {}

void consumer_replica::fail(std::string what) {
  if (_error.empty()) _error = std::move(what);
  _machine.reset();
}

void consumer_replica::lose_leadership() {
  _leading = false;
  _resume = false;
  _machine.reset();
  _acks.clear();  // never confirmed: the client's ack-sync times out and it acks again
  _outbox.clear();
  _outbox_acks.clear();
}

namespace {
// An outbox this long is proposed at once (a pull of a huge batch): entries stay far below
// the replication thread's 1 MiB run.
constexpr std::size_t kMaxOutbox = 4096;
}  // namespace

void consumer_replica::flush() {
  if (_outbox.empty()) return;
  std::vector<std::uint8_t> bytes;
  if (_outbox.size() == 1) {
    bytes = std::visit([](const auto& u) { return re::encode(re::consumer_op{u}); }, _outbox.front());
  } else {
    bytes = re::encode(re::consumer_op{re::consumer_updates{std::move(_outbox)}});
  }
  _outbox.clear();
  const auto r = _log.propose_async(std::move(bytes));
  if (r.status != repl::propose_status::ok && r.status != repl::propose_status::queued) {
    // Not in the log: the deliveries were sent and the acks taken by a machine that is now
    // dropped, rebuilt from the replicated state at the next election (delivered again; the
    // acks' syncs time out).
    lose_leadership();
    return;
  }
  const bool queued = r.status == repl::propose_status::queued;  // r.index: the ticket
  for (const auto& [token, sseq] : _outbox_acks)
    _acks.push_back({queued ? 0 : r.index, _lead_term, token, sseq, queued ? r.index : 0});
  _outbox_acks.clear();
}

consumer_snapshot consumer_replica::state() const {
  consumer_snapshot s;
  s.delivered = _delivered;
  s.ack_floor = _floor;
  s.pending.assign(_pending.begin(), _pending.end());
  s.redelivered.assign(_redelivered.begin(), _redelivered.end());
  return s;
}

void consumer_replica::on_role(base::nanos) {
  if (failed()) return;
  const bool leader = _log.is_leader();
  const std::uint64_t term = _log.term();
  if (leader && (!_leading || term != _lead_term)) {
    lose_leadership();
    _leading = true;
    _lead_term = term;
    const auto bytes = re::encode(re::consumer_op{re::consumer_leader_start{term, _self}});
    if (_log.propose(bytes).status != repl::propose_status::ok) _leading = false;  // next event
  } else if (!leader && _leading) {
    lose_leadership();
  }
}

void consumer_replica::replicate_deliveries(actions& out, std::size_t from, base::nanos now) {
  std::size_t keep = from;
  for (std::size_t i = from; i < out.size(); ++i) {
    if (const auto* d = std::get_if<delivery>(&out[i])) {
      if (!_machine) continue;  // dropped by a flush the log refused: not sent
      _outbox.emplace_back(re::consumer_delivered{d->consumer_seq, d->stream_seq, d->delivery_count, now});
      if (_outbox.size() >= kMaxOutbox) flush();
    }
    if (keep != i) out[keep] = std::move(out[i]);
    ++keep;
  }
  out.resize(keep);
}

consumer_submit consumer_replica::pull(std::string reply, const pull_request& req,
                                       base::nanos now, actions& out) {
  if (failed() || !_log.is_leader()) return consumer_submit::not_leader;
  if (!_machine) return consumer_submit::not_ready;
  const std::size_t from = out.size();
  _machine->on_pull(std::move(reply), req, now, out);
  replicate_deliveries(out, from, now);
  return consumer_submit::done;
}

consumer_submit consumer_replica::ack(const ack_subject& subj, const ack_body& body,
                                      std::uint64_t token, base::nanos now, actions& out) {
  if (failed() || !_log.is_leader()) return consumer_submit::not_leader;
  if (!_machine) return consumer_submit::not_ready;
  const bool was_pending = _machine->pending().count(subj.stream_seq) != 0;
  const std::size_t from = out.size();
  (void)_machine->on_ack(subj, body, now, out);
  replicate_deliveries(out, from, now);
  if (!_machine || !was_pending || _machine->pending().count(subj.stream_seq) != 0)
    return consumer_submit::ignored;  // a nak, progress, or nothing to acknowledge
  _outbox.emplace_back(re::consumer_acked{subj.stream_seq, subj.consumer_seq});
  _outbox_acks.emplace_back(token, subj.stream_seq);
  if (_outbox.size() >= kMaxOutbox) flush();
  if (!_machine) return consumer_submit::not_leader;  // that flush was refused
  return consumer_submit::done;
}

void consumer_replica::maybe_resume(base::nanos now) {
  if (!_resume || _stream_last < _delivered.stream_seq) return;
  _resume = false;
  _machine = std::make_unique<consumer_state_machine>(_params, _src, now);
  // Nothing delivered yet: the machine starts where its deliver policy says (start_seq), not
  // at sequence 1 as a restore of the empty state would.
  if (_delivered != sequence_pair{} || !_pending.empty() || _was_reset) _machine->restore(state(), now);
  if (_pause_until > now) {  // the config's pause (advised when it was set)
    actions ignored;
    _machine->set_pause(_pause_until, now, ignored);
  }
}

void consumer_replica::update(consumer_params p, base::nanos pause_until, base::nanos now, actions& out) {
  p.start_seq = _params.start_seq;
  const bool rebind = p.deliver_subject != _params.deliver_subject;
  const bool pause_changed = pause_until != _pause_until;
  _params = std::move(p);
  _pause_until = pause_until;
  if (!_machine || !_log.is_leader()) return;
  const std::size_t from = out.size();
  // Paused before the new limits can deliver; resumed only once they are in place.
  if (pause_changed && pause_until > now) _machine->set_pause(pause_until, now, out);
  _machine->update(_params, now, out);
  if (rebind) _machine->rebind_push(_params.deliver_subject, now, out);
  if (pause_changed && pause_until <= now) _machine->set_pause(pause_until, now, out);
  replicate_deliveries(out, from, now);
}

consumer_submit consumer_replica::reset(std::uint64_t floor, std::uint64_t token, base::nanos now, actions& out) {
  if (failed() || !_log.is_leader()) return consumer_submit::not_leader;
  if (!_machine) return consumer_submit::not_ready;
  flush();  // what the machine did before the reset is applied before it
  if (!_machine) return consumer_submit::not_leader;
  const auto r = _log.propose(re::encode(re::consumer_op{re::consumer_reset{floor}}));
  if (r.status != repl::propose_status::ok) {
    lose_leadership();
    return consumer_submit::not_leader;
  }
  _acks.push_back({r.index, _lead_term, token, 0, 0});
  // Deliveries after the reset are proposed after its entry, so every replica applies them
  // on top of the reset state.
  const std::size_t from = out.size();
  _machine->reset(floor, now, out);
  replicate_deliveries(out, from, now);
  return consumer_submit::done;
}

bool consumer_replica::unpin(const std::string& group, base::nanos now, actions& out) {
  if (!_machine || !_log.is_leader()) return false;
  const std::size_t from = out.size();
  const bool ok = _machine->unpin(group, now, out);
  replicate_deliveries(out, from, now);
  return ok;
}

void consumer_replica::apply_reset(const re::consumer_reset& r) {
  _delivered = _floor = {0, r.floor};
  _pending.clear();
  _redelivered.clear();
  _was_reset = true;
}

void consumer_replica::on_stream_advanced(std::uint64_t last_seq, base::nanos now, actions& out) {
  _stream_last = std::max(_stream_last, last_seq);
  if (_log.is_leader()) maybe_resume(now);
  if (!_machine || !_log.is_leader()) return;
  const std::size_t from = out.size();
  _machine->on_stream_advanced(last_seq, now, out);
  replicate_deliveries(out, from, now);
}

void consumer_replica::tick(base::nanos now, actions& out) {
  if (!_machine || !_log.is_leader()) return;
  const std::size_t from = out.size();
  _machine->tick(now, out);
  replicate_deliveries(out, from, now);
}

base::nanos consumer_replica::next_deadline() const {
  if (!_machine || !_log.is_leader()) return consumer_state_machine::kNever;
  return _machine->next_deadline();
}

void consumer_replica::set_push_interest(bool active, base::nanos now, actions& out) {
  if (!_machine || !_log.is_leader()) return;
  const std::size_t from = out.size();
  _machine->set_push_interest(active, now, out);
  replicate_deliveries(out, from, now);
}

void consumer_replica::on_flow_control_reply(const std::string& subject, base::nanos now, actions& out) {
  if (!_machine || !_log.is_leader()) return;
  const std::size_t from = out.size();
  _machine->on_flow_control_reply(subject, now, out);
  replicate_deliveries(out, from, now);
}

void consumer_replica::on_delete(actions& out) {
  if (_machine) _machine->on_delete(out);
}

std::optional<consumer_numbers> consumer_replica::numbers(base::nanos now) {
  if (!_machine || !_log.is_leader()) return std::nullopt;
  _machine->drop_uninterested();
  return _machine->numbers(now);
}

bool consumer_replica::settled() const {
  return _acks.empty() && _outbox_acks.empty();
}

void consumer_replica::seed(const re::consumer_seed& s) {
  _delivered = {s.delivered_consumer, s.delivered_stream};
  _floor = {s.floor_consumer, s.floor_stream};
  _pending.clear();
  for (const auto& p : s.pending_acks) _pending[p.sseq] = {p.dseq, p.ts};
  _redelivered.clear();
  for (const auto& [sseq, n] : s.redelivered) _redelivered[sseq] = n;
}

bool consumer_replica::needs(std::uint64_t seq) const {
  if (seq <= _floor.stream_seq) return false;
  if (seq > _delivered.stream_seq) return _was_reset || seq >= _params.start_seq;
  return _pending.count(seq) != 0;
}

void consumer_replica::apply_delivered(const re::consumer_delivered& d) {
  if (d.dseq > _delivered.consumer_seq) _delivered.consumer_seq = d.dseq;
  if (d.sseq > _delivered.stream_seq) _delivered.stream_seq = d.sseq;
  if (_params.ack == ack_policy::none) {  // nothing to wait for: delivered is acknowledged
    _floor.stream_seq = std::max(_floor.stream_seq, _delivered.stream_seq);
    _floor.consumer_seq = std::max(_floor.consumer_seq, _delivered.consumer_seq);
    _released.push_back(d.sseq);
    return;
  }
  _pending[d.sseq] = {d.dseq, d.ts};
  if (d.deliveries > 1) _redelivered[d.sseq] = d.deliveries - 1;
}

void consumer_replica::apply_acked(const re::consumer_acked& a) {
  if (_params.ack == ack_policy::all || _params.ack == ack_policy::flow_control) {
    while (!_pending.empty() && _pending.begin()->first <= a.sseq) {
      const std::uint64_t s = _pending.begin()->first;
      _pending.erase(_pending.begin());
      _redelivered.erase(s);
      _released.push_back(s);
    }
  } else if (_pending.erase(a.sseq)) {
    _redelivered.erase(a.sseq);
    _released.push_back(a.sseq);
  }
}

void consumer_replica::raise_floor() {
  sequence_pair next = _delivered;
  if (!_pending.empty()) {
    // Just below the oldest pending delivery (its first consumer sequence may be older than
    // the one pending now, after a redelivery; the floor never moves back).
    const auto& [sseq, e] = *_pending.begin();
    next = {e.consumer_seq - 1, sseq - 1};
    for (const auto& [s, p] : _pending) next.consumer_seq = std::min(next.consumer_seq, p.consumer_seq - 1);
  }
  _floor.stream_seq = std::max(_floor.stream_seq, next.stream_seq);
  _floor.consumer_seq = std::max(_floor.consumer_seq, next.consumer_seq);
}

std::vector<std::uint8_t> consumer_replica::snapshot() const {
  re::consumer_snapshot s;
  s.applied_index = _applied_index;
  s.was_reset = _was_reset;
  s.state.delivered_consumer = _delivered.consumer_seq;
  s.state.delivered_stream = _delivered.stream_seq;
  s.state.floor_consumer = _floor.consumer_seq;
  s.state.floor_stream = _floor.stream_seq;
  for (const auto& [sseq, p] : _pending) s.state.pending_acks.push_back({sseq, p.consumer_seq, p.delivered_at});
  s.state.redelivered.assign(_redelivered.begin(), _redelivered.end());
  return re::encode(s);
}

void consumer_replica::restore(const repl::committed_entry& e) {
  auto s = re::decode_consumer_snapshot(e.value.data);
  if (!s || s->applied_index != e.index) return fail(fmt::format("snapshot at index {} does not decode", e.index));
  if (e.index < _applied_index)
    return fail(fmt::format("snapshot at index {} is behind the applied {}", e.index, _applied_index));
  lose_leadership();
  seed(s->state);
  _was_reset = s->was_reset;
  _applied_index = e.index;
}

void consumer_replica::apply(const repl::committed_entry& e, base::nanos now,
                             std::vector<consumer_ack_confirm>& confirmed) {
  if (failed()) return;
  if (e.value.type == repl::entry_type::snapshot) return restore(e);
  if (e.index != _applied_index + 1) {
    fail(fmt::format("applied index {} after {}", e.index, _applied_index));
    return;
  }
  _applied_index = e.index;
  const std::uint64_t term = e.value.term;
  if (term > _lead_term && _leading) lose_leadership();  // someone else led since
  if (e.value.type == repl::entry_type::command) {
    auto op = re::decode_consumer(e.value.data);
    if (!op) return fail(fmt::format("index {}: undecodable consumer entry", e.index));
    std::visit(
        [&](const auto& v) {
          using T = std::decay_t<decltype(v)>;
          if constexpr (std::is_same_v<T, re::consumer_delivered>) {
            apply_delivered(v);
          } else if constexpr (std::is_same_v<T, re::consumer_acked>) {
            apply_acked(v);
            raise_floor();
          } else if constexpr (std::is_same_v<T, re::consumer_reset>) {
            apply_reset(v);
          } else if constexpr (std::is_same_v<T, re::consumer_updates>) {
            bool acked = false;
            for (const auto& u : v.updates) {
              if (const auto* d = std::get_if<re::consumer_delivered>(&u)) {
                apply_delivered(*d);
              } else {
                apply_acked(std::get<re::consumer_acked>(u));
                acked = true;
              }
            }
            // Once per entry, not per ack (it walks every pending delivery); the floor only
            // rises along the entry, so its end is where per-ack steps would have taken it.
            if (acked) raise_floor();
          } else if (_leading && v.term == _lead_term && term == _lead_term && v.leader == _self) {
            // Everything committed before this entry is applied: resume from it.
            _resume = true;
            maybe_resume(now);
          }
        },
        *op);
  }
  // Acks proposed at or before this index: ours of this term are confirmed, others lost.
  // Queued ones (index unknown) are at the back: their index arrives before their entry.
  while (!_acks.empty() && _acks.front().index != 0 && _acks.front().index <= e.index) {
    const pending_ack a = _acks.front();
    _acks.erase(_acks.begin());
    if (a.index == e.index && a.term == term) confirmed.push_back({a.token, a.sseq});
  }
}

void consumer_replica::on_proposed(std::uint64_t first_ticket, std::uint64_t count, std::uint64_t first_index) {
  if (first_index == 0) {
    if (_machine) lose_leadership();
    return;
  }
  for (auto& a : _acks)
    if (a.index == 0 && a.ticket >= first_ticket && a.ticket < first_ticket + count)
      a.index = first_index + (a.ticket - first_ticket);
}

}  // namespace js
