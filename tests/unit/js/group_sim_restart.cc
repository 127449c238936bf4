// The group simulation's restart checks: what a reopened stream and each restored consumer
// must hold given what the model saw before the crash (or clean shutdown), after which the
// model takes the recovered state.
#include <algorithm>
#include <cstdio>

#include "storage/consumer_state.h"
#include "tests/unit/js/group_sim_model.h"

namespace js::sim {

void simulation::reconcile_stream(model_stream& s, sim_store& recovered, bool crash) {
  std::map<std::uint64_t, model_msg> found;
  for (std::uint64_t seq = recovered.first_seq();;) {
    auto m = recovered.load_next("", seq);
    if (!m.ok()) break;
    seq = m->seq + 1;
    auto h = s.history.find(m->seq);
    if (h == s.history.end() || h->second.subject != m->subject || h->second.payload != m->payload) {
      fail(s.name + " recovered seq " + std::to_string(m->seq) + " that was never published as such");
      return;
    }
    found[m->seq] = h->second;
  }
  if (recovered.last_seq() < s.max_acked_seq)
    fail(s.name + " recovered last_seq " + std::to_string(recovered.last_seq()) + " below PubAck'd seq " +
         std::to_string(s.max_acked_seq));
  for (const auto& [seq, m] : s.msgs)
    if (m.puback && !found.count(seq)) fail(s.name + " lost PubAck'd seq " + std::to_string(seq) + " in a restart");
  if (!crash && (found.size() != s.msgs.size() || recovered.last_seq() != s.last))
    fail(s.name + " clean restart changed the stream: " + std::to_string(found.size()) + " msgs, last " +
         std::to_string(recovered.last_seq()) + "; model " + std::to_string(s.msgs.size()) + ", last " +
         std::to_string(s.last));
  s.msgs = std::move(found);
  s.bytes = 0;
  for (const auto& [seq, m] : s.msgs) s.bytes += m.size;
  s.last = recovered.last_seq();
  s.expect_removed.clear();  // a removal that was not durable comes back
}

void simulation::reconcile_consumer(model_stream& s, model_consumer& c, const storage::consumer_state& saved,
                                    bool crash) {
  const std::string who = s.name + " > " + c.name + ": ";
  // A snapshot that delivered past what the stream's log kept is cut back to the stream's end
  // (consumer_agent::start), or the sequences the next publishes reuse would be skipped.
  storage::consumer_state st = saved;
  if (st.delivered.stream > s.last) {
    if (!crash) {
      fail(who + "a clean restart left the consumer ahead of the stream");
      return;
    }
    if (_o.trace) std::printf("  %sstate ahead of the stream (%llu > %llu), cut back\n", who.c_str(),
                              (unsigned long long)st.delivered.stream, (unsigned long long)s.last);
    st.delivered.stream = s.last;
    st.ack_floor.stream = std::min(st.ack_floor.stream, s.last);
    std::erase_if(st.pending, [&](const auto& kv) { return kv.first > s.last; });
    std::erase_if(st.redelivered, [&](const auto& kv) { return kv.first > s.last; });
    if (st.pending.empty()) st.ack_floor = st.delivered;
  }
  if (saved.delivered.stream > c.next - 1 || saved.ack_floor.stream > c.floor_s) {
    fail(who + "restored state is ahead of what happened (delivered " + std::to_string(st.delivered.stream) +
         ", floor " + std::to_string(st.ack_floor.stream) + ")");
    return;
  }
  for (auto seq : c.confirmed)
    if (s.msgs.count(seq) && (seq > st.delivered.stream || st.pending.count(seq)))
      fail(who + "confirmed ack of seq " + std::to_string(seq) + " undone by a restart");
  if (!crash) {
    bool same = st.delivered.stream == c.next - 1 && st.delivered.consumer == c.dseq - 1 &&
                st.ack_floor.stream == c.floor_s && st.ack_floor.consumer == c.floor_c &&
                st.redelivered == c.rdc && st.pending.size() == c.pending.size();
    for (const auto& [seq, p] : c.pending)
      same = same && st.pending.count(seq) && st.pending.at(seq).consumer_seq == p.dseq;
    if (!same) fail(who + "clean restart did not keep the consumer's state");
  }
  if (failed()) return;
  if (_o.trace) {
    std::printf("  restored %s: delivered %llu/%llu floor %llu/%llu pending", who.c_str(),
                (unsigned long long)st.delivered.consumer, (unsigned long long)st.delivered.stream,
                (unsigned long long)st.ack_floor.consumer, (unsigned long long)st.ack_floor.stream);
    for (const auto& [seq, p] : st.pending) std::printf(" %llu(c%llu)", (unsigned long long)seq, (unsigned long long)p.consumer_seq);
    std::printf("\n");
  }
  // The agent restores a state that delivered something; else it starts afresh.
  c.pending.clear();
  c.maxed.clear();
  c.rdc.clear();
  if (saved.delivered.stream == 0) {  // as consumer_agent::start: nothing to restore
    c.next = std::max<std::uint64_t>(1, s.first());
    c.dseq = 1;
    c.floor_c = 0;
    c.floor_s = c.next - 1;
  } else {
    c.next = st.delivered.stream + 1;
    c.dseq = st.delivered.consumer + 1;
    c.floor_c = st.ack_floor.consumer;
    c.floor_s = st.ack_floor.stream;
    c.rdc = st.redelivered;
    for (const auto& [seq, p] : st.pending) {
      auto r = st.redelivered.find(seq);
      c.pending[seq] = {p.consumer_seq, (r == st.redelivered.end() ? 0 : r->second) + 1, p.ts, false};
    }
    for (const auto& [seq, n] : st.redelivered)
      if (!c.pending.count(seq)) c.maxed.insert(seq);
  }
  c.seen_floor_c = c.floor_c;
  c.seen_floor_s = c.floor_s;
  // At least once: whatever the restored consumer will not deliver again was settled.
  for (const auto& [seq, m] : s.msgs)
    if (c.matches(m.subject) && seq < c.next && !c.pending.count(seq) && !c.maxed.count(seq) &&
        !c.done.count(seq) && !s.removed_ever.count(seq))
      fail(who + "restored state skips seq " + std::to_string(seq) + ", never acked");
}

}  // namespace js::sim
