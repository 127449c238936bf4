// The group simulation's checker: the model replays the ordered trace of one step (PubAcks,
// deliveries, status replies, ack confirmations, store removals), judging each entry, then
// compares streams and consumers with what the groups report.
#include <cstdio>

#include <nlohmann/json.hpp>

#include "src/js/ack.h"
#include "tests/unit/js/group_sim_model.h"

namespace js::sim {

namespace {

constexpr std::int64_t kExpiryCheck = 100 * base::kMilli;  // stream.cc checks max_age this often

std::string seqs(const std::vector<std::uint64_t>& v) {
  std::string s;
  for (auto x : v) s += (s.empty() ? "" : ",") + std::to_string(x);
  return s;
}

const char* cause_name(removal_cause c) {
  switch (c) {
    case removal_cause::remove: return "remove";
    case removal_cause::purge: return "purge";
    case removal_cause::limits: return "limits";
    case removal_cause::expire: return "max_age";
  }
  return "?";
}

}  // namespace

// Ack-wait expiries are applied after the entries: within a poll the stream (limits, age)
// runs before its consumers' timers.
void simulation::replay_trace() {
  const std::vector<trace_entry> entries = std::move(_host.trace);
  _host.trace.clear();
  for (const auto& e : entries) {
    if (failed()) return;
    if (_o.trace) {
      if (e.k == trace_entry::removal)
        std::printf("    removed S%zu seq %llu (%s)\n", e.stream, (unsigned long long)e.seq, cause_name(e.cause));
      else
        std::printf("    %s %s reply %s %s\n", e.k == trace_entry::deliver ? "deliver" : "publish", e.to.c_str(),
                    e.reply.c_str(), e.headers.empty() ? e.payload.substr(0, 60).c_str() : e.headers.substr(0, 40).c_str());
    }
    switch (e.k) {
      case trace_entry::removal: on_removal(e); break;
      case trace_entry::deliver: on_delivery(e); break;
      case trace_entry::publish: on_publish(e); break;
    }
  }
  for (auto& s : _streams) {
    for (auto& c : s->consumers) {
      c.expire(now());
      if (!s->group || _reopening) continue;
      // A restored pending message the stream no longer holds is dropped by the agent when
      // it comes up for redelivery (terminated, nothing to release).
      std::vector<std::uint64_t> orphans;
      for (const auto& [seq, p] : c.pending)
        if (!s->msgs.count(seq)) orphans.push_back(seq);
      if (orphans.empty()) continue;
      const auto st = s->group->find_consumer(c.name)->durable_state();
      for (auto seq : orphans)
        if (!st.pending.count(seq)) {
          c.leave(seq);
          c.rdc.erase(seq);
        }
    }
  }
}

void simulation::on_removal(const trace_entry& e) {
  model_stream& s = *_streams.at(e.stream);
  const std::string what = s.name + " seq " + std::to_string(e.seq) + " removed by " + cause_name(e.cause);
  ++_r.removed;
  if (e.cause == removal_cause::remove || e.cause == removal_cause::purge) {
    auto it = s.expect_removed.find(e.seq);
    if (it == s.expect_removed.end()) {
      fail(what + ": the model expected no such removal");
      return;
    }
    s.expect_removed.erase(it);
    return;
  }
  auto m = s.msgs.find(e.seq);
  if (m == s.msgs.end()) {
    fail(what + ": not in the model's stream");
    return;
  }
  if (e.cause == removal_cause::limits) {
    if (s.cfg.discard == discard_policy::new_msgs || !s.over_limits() || e.seq != s.msgs.begin()->first) {
      fail(what + " while within limits or not the oldest (" + std::to_string(s.msgs.size()) + " msgs, " +
           std::to_string(s.bytes) + " bytes)");
      return;
    }
  } else if (s.cfg.max_age <= 0 || now() - m->second.ts < s.cfg.max_age) {
    fail(what + " before its age");
    return;
  }
  s.erase(e.seq);
  s.removed_ever.insert(e.seq);
  if (!_reopening) s.removed_notify(e.seq);
}

void simulation::on_delivery(const trace_entry& e) {
  auto a = decode_ack_subject(e.reply);
  if (!a) {
    fail("delivery to " + e.to + " with a bad ack subject '" + e.reply + "'");
    return;
  }
  model_stream* sp = nullptr;
  for (auto& s : _streams)
    if (s->name == a->stream) sp = s.get();
  model_consumer* cp = nullptr;
  if (sp)
    for (auto& c : sp->consumers)
      if (c.name == a->consumer) cp = &c;
  if (!cp) {
    fail("delivery for an unknown consumer: " + e.reply);
    return;
  }
  model_stream& s = *sp;
  model_consumer& c = *cp;
  const std::uint64_t seq = a->stream_seq;
  const std::string who = s.name + " > " + c.name + " seq " + std::to_string(seq) + " (dc " +
                          std::to_string(a->delivered) + "): ";
  auto m = s.msgs.find(seq);
  if (m == s.msgs.end()) {
    fail(who + "delivered a message the stream does not hold");
    return;
  }
  if (m->second.subject != e.subject || m->second.payload != e.payload) {
    fail(who + "delivered content differs from what was published");
    return;
  }
  if (!c.matches(e.subject)) {
    fail(who + "delivered outside the filter");
    return;
  }
  if (a->consumer_seq != c.dseq) {
    fail(who + "consumer seq " + std::to_string(a->consumer_seq) + ", expected " + std::to_string(c.dseq));
    return;
  }
  if (c.push ? e.to != c.deliver_subject : !c.requests.count(e.to)) {
    fail(who + "delivered to " + e.to + ", no request or deliver subject there");
    return;
  }
  // Restored pending messages the stream no longer holds: the agent terminates those queued
  // for redelivery ahead of this delivery. The queue's order: when entries became due (naks,
  // then this step's timer expiries by sequence); a first delivery waits for an empty queue.
  auto queue_rank = [&](std::uint64_t p_seq, const model_pending& p) -> std::uint64_t {
    if (p.due) return p.rank;
    const bool to_max = c.max_deliver > 0 && p.dc >= std::uint64_t(c.max_deliver);  // kept, not queued
    return p.at + c.ack_wait <= now() && !to_max ? (1ull << 62) + p_seq : 0;
  };
  std::uint64_t my_rank = ~0ull;
  if (a->delivered > 1)
    if (auto p = c.pending.find(seq); p != c.pending.end()) my_rank = queue_rank(seq, p->second);
  std::vector<std::uint64_t> orphans;
  for (const auto& [p_seq, p] : c.pending) {
    const std::uint64_t r = queue_rank(p_seq, p);
    if (!s.msgs.count(p_seq) && r != 0 && r < my_rank) orphans.push_back(p_seq);
  }
  for (auto o : orphans) {
    if (_o.trace)
      std::printf("    (model: %s > %s drops orphan %llu, delivered at %lld, due %d)\n", s.name.c_str(), c.name.c_str(),
                  (unsigned long long)o, (long long)(c.pending.at(o).at / base::kMilli % 1000000), int(c.pending.at(o).due));
    c.leave(o);
    c.rdc.erase(o);
  }
  if (a->delivered == 1) {
    std::uint64_t expect = 0;
    for (auto it = s.msgs.lower_bound(c.next); it != s.msgs.end(); ++it)
      if (c.matches(it->second.subject)) {
        expect = it->first;
        break;
      }
    if (seq != expect) {
      fail(who + "first delivery out of order, expected seq " + std::to_string(expect));
      return;
    }
    std::uint64_t outstanding = 0;  // pending, less those the timers are about to keep at max_deliver
    for (const auto& [p_seq, p] : c.pending)
      outstanding += !(c.max_deliver > 0 && !p.due && p.at + c.ack_wait <= now() && p.dc >= std::uint64_t(c.max_deliver));
    if (c.max_ack_pending > 0 && outstanding >= std::uint64_t(c.max_ack_pending)) {
      fail(who + "delivered with max_ack_pending reached");
      return;
    }
    c.next = seq + 1;
    c.pending[seq] = {c.dseq, 1, now(), false};
  } else {
    auto p = c.pending.find(seq);
    if (p == c.pending.end()) {
      fail(who + "redelivered a message that is not pending");
      return;
    }
    if (!p->second.due && p->second.at + c.ack_wait > now()) {
      fail(who + "redelivered before its ack wait ended or a nak");
      return;
    }
    if (a->delivered != p->second.dc + 1) {
      fail(who + "delivery count, expected " + std::to_string(p->second.dc + 1));
      return;
    }
    if (c.max_deliver > 0 && a->delivered > std::uint64_t(c.max_deliver)) {
      fail(who + "delivered more than max_deliver times");
      return;
    }
    p->second = {c.dseq, a->delivered, now(), false};
    c.rdc[seq] = a->delivered - 1;
    ++_r.redelivered;
  }
  ++c.dseq;
  bool received = c.push ? c.listening : true;
  if (!c.push) {
    auto r = c.requests.find(e.to);
    if (r->second.left == 0 || (r->second.expires_at != 0 && now() >= r->second.expires_at)) {
      fail(who + "delivered to a request that had ended");
      return;
    }
    if (--r->second.left == 0) {
      c.requests.erase(r);
      _host.listeners.erase(e.to);
    }
  }
  if (received) {
    c.inbox.push_back({seq, a->delivered, e.reply});
    ++_r.delivered;
  }
}

void simulation::on_publish(const trace_entry& e) {
  if (e.to.starts_with("_INBOX.pub.")) {
    auto it = _pubacks.find(e.to);
    if (it == _pubacks.end()) {
      fail("PubAck nobody waits for on " + e.to + ": " + e.payload);
      return;
    }
    const expected_ack x = it->second;
    _pubacks.erase(it);
    model_stream& s = *_streams.at(x.stream);
    auto j = nlohmann::json::parse(e.payload, nullptr, false);
    if (x.seq == 0) {
      if (j.is_discarded() || !j.contains("error") || j["error"].value("err_code", 0) != x.error)
        fail("PubAck " + e.payload + ", expected error " + std::to_string(x.error));
      return;
    }
    if (j.is_discarded() || j.contains("error") || j.value("seq", std::uint64_t(0)) != x.seq ||
        j.value("stream", std::string()) != s.name) {
      fail("PubAck " + e.payload + ", expected " + s.name + " seq " + std::to_string(x.seq));
      return;
    }
    ++_r.published;
    s.max_acked_seq = std::max(s.max_acked_seq, x.seq);
    if (auto m = s.msgs.find(x.seq); m != s.msgs.end()) m->second.puback = true;
    if (auto h = s.history.find(x.seq); h != s.history.end()) h->second.puback = true;
    return;
  }
  if (e.to.starts_with("_INBOX.pull.")) {
    for (auto& s : _streams)
      for (auto& c : s->consumers) {
        auto r = c.requests.find(e.to);
        if (r == c.requests.end()) continue;
        const bool timeout = e.headers.starts_with("NATS/1.0 408 Request Timeout") && r->second.expires_at != 0 &&
                             now() >= r->second.expires_at;
        const bool shutdown = _shutting_down && e.headers.starts_with("NATS/1.0 409 Server Shutdown");
        if (!timeout && !shutdown) {
          fail(s->name + " > " + c.name + ": unexpected status to " + e.to + ": " + e.headers.substr(0, 40));
          return;
        }
        c.requests.erase(r);
        _host.listeners.erase(e.to);
        return;
      }
    fail("status to a request nobody made: " + e.to + " " + e.headers.substr(0, 40));
    return;
  }
  if (e.to.starts_with("_INBOX.ack.")) {
    auto it = _sync_acks.find(e.to);
    if (it == _sync_acks.end()) {
      fail("ack confirmation nobody waits for on " + e.to);
      return;
    }
    if (it->second.settles) _streams.at(it->second.stream)->consumers.at(it->second.consumer).confirmed.insert(it->second.seq);
    _sync_acks.erase(it);
  }
}

// ---- invariants after a step ---------------------------------------------------------

bool simulation::available(const model_stream& s, const model_consumer& c) const {
  for (const auto& [seq, p] : c.pending)
    if (p.due && s.msgs.count(seq)) return true;
  if (c.max_ack_pending > 0 && c.pending.size() >= std::uint64_t(c.max_ack_pending)) return false;
  for (auto it = s.msgs.lower_bound(c.next); it != s.msgs.end(); ++it)
    if (c.matches(it->second.subject)) return true;
  return false;
}

void simulation::check() {
  for (auto& s : _streams) {
    if (failed()) return;
    check_stream(*s);
    for (auto& c : s->consumers)
      if (!failed()) check_consumer(*s, c);
  }
}

void simulation::check_stream(model_stream& s) {
  if (!s.expect_removed.empty()) {
    std::vector<std::uint64_t> v;
    for (const auto& [seq, cause] : s.expect_removed) v.push_back(seq);
    fail(s.name + ": the model expected removals that did not happen: " + seqs(v));
    return;
  }
  auto& store = s.group->get_stream().store();
  const auto st = store.state(false);
  if (st.msgs != s.msgs.size() || st.bytes != s.bytes || st.last_seq != s.last ||
      (st.first_seq != s.first() && !(s.msgs.empty() && st.first_seq == 0))) {
    fail(s.name + " holds " + std::to_string(st.msgs) + " msgs / " + std::to_string(st.bytes) + " bytes, seqs " +
         std::to_string(st.first_seq) + ".." + std::to_string(st.last_seq) + "; the model " +
         std::to_string(s.msgs.size()) + " / " + std::to_string(s.bytes) + ", " + std::to_string(s.first()) +
         ".." + std::to_string(s.last));
    return;
  }
  auto it = s.msgs.begin();
  for (std::uint64_t seq = st.first_seq;; ++it) {
    auto m = store.load_next("", seq);
    if (!m.ok()) break;
    if (it == s.msgs.end() || it->first != m->seq || it->second.payload != m->payload) {
      fail(s.name + " holds seq " + std::to_string(m->seq) + " where the model has " +
           (it == s.msgs.end() ? std::string("nothing") : std::to_string(it->first)));
      return;
    }
    seq = m->seq + 1;
  }
  for (const auto& [seq, m] : s.msgs) {
    if (s.cfg.max_age > 0 && now() - m.ts > s.cfg.max_age + 2 * kExpiryCheck) {
      fail(s.name + " seq " + std::to_string(seq) + " outlived max_age");
      return;
    }
    if (s.cfg.retention == retention_policy::limits) continue;
    bool matched = false, needed = false;
    for (const auto& c : s.consumers) {
      if (!c.matches(m.subject)) continue;
      matched = true;
      needed = needed || c.needs(seq);
    }
    if (s.cfg.retention == retention_policy::interest ? !needed : matched && !needed) {
      fail(s.name + " keeps seq " + std::to_string(seq) + " that no consumer needs (" +
           (s.cfg.retention == retention_policy::interest ? "interest" : "work queue") + " retention)");
      return;
    }
  }
}

void simulation::check_consumer(model_stream& s, model_consumer& c) {
  const std::string who = s.name + " > " + c.name + ": ";
  consumer_agent* agent = s.group->find_consumer(c.name);
  if (!agent) {
    fail(who + "gone");
    return;
  }
  const auto st = agent->durable_state();
  if (st.delivered.stream != c.next - 1 || st.delivered.consumer != c.dseq - 1) {
    fail(who + "delivered " + std::to_string(st.delivered.consumer) + "/" + std::to_string(st.delivered.stream) +
         ", model " + std::to_string(c.dseq - 1) + "/" + std::to_string(c.next - 1));
    return;
  }
  // The floor's exact value depends on the order of events within a poll (a timer before or
  // after a delivery); what must hold: monotonic, below every pending message, at the
  // delivered pair when nothing is pending. The model then takes the agent's value.
  const std::string floor = std::to_string(st.ack_floor.consumer) + "/" + std::to_string(st.ack_floor.stream);
  if (st.ack_floor.stream < c.seen_floor_s || st.ack_floor.consumer < c.seen_floor_c) {
    fail(who + "ack floor went back to " + floor);
    return;
  }
  if (st.ack_floor.stream > st.delivered.stream || st.ack_floor.consumer > st.delivered.consumer ||
      (!c.pending.empty() && st.ack_floor.stream >= c.pending.begin()->first) ||
      (c.pending.empty() && (st.ack_floor.stream != c.next - 1 || st.ack_floor.consumer != c.dseq - 1))) {
    fail(who + "ack floor " + floor + " does not fit the pending and delivered messages");
    return;
  }
  c.seen_floor_s = c.floor_s = st.ack_floor.stream;
  c.seen_floor_c = c.floor_c = st.ack_floor.consumer;
  bool same = st.pending.size() == c.pending.size();
  for (const auto& [seq, p] : c.pending) {
    auto q = st.pending.find(seq);
    same = same && q != st.pending.end() && q->second.consumer_seq == p.dseq && q->second.ts == p.at;
  }
  if (!same) {
    std::vector<std::uint64_t> a, b;
    for (const auto& [seq, p] : st.pending) a.push_back(seq);
    for (const auto& [seq, p] : c.pending) b.push_back(seq);
    fail(who + "pending " + seqs(a) + ", model " + seqs(b) + " (or their consumer seqs or times differ)");
    return;
  }
  if (st.redelivered != c.rdc) {
    std::vector<std::uint64_t> a, b;
    for (const auto& [seq, n] : st.redelivered) a.push_back(seq);
    for (const auto& [seq, n] : c.rdc) b.push_back(seq);
    fail(who + "redelivered " + seqs(a) + ", model " + seqs(b) + " (or their counts differ)");
    return;
  }
  const auto info = agent->info_json(now());
  std::uint64_t num_pending = 0;
  for (auto it = s.msgs.lower_bound(c.next); it != s.msgs.end(); ++it) num_pending += c.matches(it->second.subject);
  const std::uint64_t num_redelivered = c.max_deliver == 1 ? 0 : c.rdc.size();
  if (info["num_pending"] != num_pending || info["num_ack_pending"] != c.pending.size() ||
      info["num_redelivered"] != num_redelivered) {
    fail(who + "num_pending/num_ack_pending/num_redelivered " + info["num_pending"].dump() + "/" +
         info["num_ack_pending"].dump() + "/" + info["num_redelivered"].dump() + ", model " +
         std::to_string(num_pending) + "/" + std::to_string(c.pending.size()) + "/" + std::to_string(num_redelivered) +
         " (next " + std::to_string(c.next) + ", stream " + std::to_string(s.first()) + ".." + std::to_string(s.last) + ")");
    return;
  }
  // Liveness: a waiting request (or a bound push consumer) gets what is deliverable.
  bool waiting = c.push && agent->push_bound();
  for (const auto& [reply, r] : c.requests) waiting = waiting || (r.left > 0 && (r.expires_at == 0 || now() < r.expires_at));
  if (waiting && available(s, c)) fail(who + "messages are deliverable but a waiting " +
                                       (c.push ? std::string("push subscriber") : std::string("pull request")) + " got none");
}

void simulation::check_drained() {
  if (!_pubacks.empty()) fail("after the drain, " + std::to_string(_pubacks.size()) + " publishes still wait for a PubAck");
  for (auto& s : _streams)
    for (auto& c : s->consumers) {
      if (failed()) return;
      const std::string who = s->name + " > " + c.name + ": ";
      if (!c.pending.empty()) fail(who + "after the drain, messages are still pending");
      for (auto it = s->msgs.lower_bound(c.next); it != s->msgs.end(); ++it)
        if (c.matches(it->second.subject)) {
          fail(who + "after the drain, seq " + std::to_string(it->first) + " was never delivered");
          break;
        }
    }
}

}  // namespace js::sim
