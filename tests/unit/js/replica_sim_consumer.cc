// The replicated simulation's consumer CA on stream A: the client pulling from its leader,
// its acks, and the consumer checkers.
#include "tests/unit/js/replica_sim_world.h"

namespace js::sim::detail {


// --- the consumer "CA" on stream A: one client pulls from whichever replica leads, acks
// most deliveries (all once healed) a little later, and counts confirmed acks.
void simulation::create_consumer_group(server& s, const std::vector<std::uint64_t>& voters, storage::stream_store& stream) {
  create_group(s, kConsumerGroup, voters, nullptr, &stream);
}

std::pair<server*, group_node*> simulation::consumer_leader() {
  for (auto& s : _servers) {
    if (!s.up) continue;
    auto it = s.groups.find(kConsumerGroup);
    if (it != s.groups.end() && it->second.consumer->ready()) return {&s, &it->second};
  }
  return {nullptr, nullptr};
}

std::uint64_t simulation::local_a_last(server& s) {
  auto it = s.groups.find(_streams[0].group);
  return it == s.groups.end() ? 0 : it->second.store->last_seq();
}

void simulation::consumer_client() {
  // Each replica learns how far its server's stream A goes (a new leader waits for it).
  for (auto& srv : _servers) {
    auto it = srv.groups.find(kConsumerGroup);
    if (!srv.up || it == srv.groups.end()) continue;
    js::actions advanced;
    const std::uint64_t last = local_a_last(srv);
    group_node& cg = it->second;
    drive(srv, cg, [&](repl::actions&) { cg.consumer->on_stream_advanced(last, now_ns(), advanced); });
    route(advanced);
  }
  auto [s, g] = consumer_leader();
  if (s == nullptr) return;
  js::actions out;
  drive(*s, *g, [&](repl::actions&) {
    g->consumer->tick(now_ns(), out);
    if (_rng.chance(0.5)) {
      pull_request req;
      req.batch = 10;
      req.expires = 200'000'000;
      (void)g->consumer->pull("pull", req, now_ns(), out);
    }
  });
  route(out);
}

void simulation::route(const js::actions& out) {
  for (const auto& a : out) {
    const auto* d = std::get_if<delivery>(&a);
    if (d == nullptr) continue;
    ++_report.deliveries;
    if (_confirmed.count(d->stream_seq))
      return violation(fmt::format("consumer: stream seq {} redelivered (delivery {}) after its "
                                   "ack was confirmed", d->stream_seq, d->delivery_count));
    _delivered.insert(d->stream_seq);
    if (!_healed && _rng.chance(0.15)) continue;  // lost, or the client never acks it
    const std::uint64_t token = ++_next_token;
    _ack_of[token] = {d->stream_seq, d->consumer_seq, d->delivery_count, d->timestamp};
    schedule(_now + 1 + _rng.below(30), {ev_kind::ack, 0, 0, 0, 0, token});
  }
}

void simulation::send_ack(std::uint64_t token) {
  auto [s, g] = consumer_leader();
  if (s == nullptr) return;  // lost: redelivered after ack wait
  const auto& a = _ack_of.at(token);
  ack_subject subj;
  subj.stream = "A";
  subj.consumer = "CA";
  subj.delivered = a.deliveries;
  subj.stream_seq = a.sseq;
  subj.consumer_seq = a.dseq;
  subj.timestamp = a.ts;
  ack_body body;
  body.kind = ack_kind::ack;
  js::actions out;
  consumer_submit r = consumer_submit::ignored;
  _hold_consumer_outbox = _rng.chance(0.5);  // proposed with the next turn's
  drive(*s, *g, [&](repl::actions&) { r = g->consumer->ack(subj, body, token, now_ns(), out); });
  _hold_consumer_outbox = false;
  if (_o.confirm_ack_at_proposal && r == consumer_submit::done) on_ack_confirmed({token, a.sseq});
  route(out);
}

void simulation::on_ack_confirmed(const consumer_ack_confirm& c) {
  if (!_ack_of.count(c.token))
    return violation(fmt::format("consumer: confirmation of unknown ack {}", c.token));
  if (_ack_of.at(c.token).sseq != c.stream_seq)
    return violation(fmt::format("consumer: ack {} confirmed for seq {}", c.token, c.stream_seq));
  if (_confirmed.insert(c.stream_seq).second) ++_report.confirmed_acks;
}

// Every replica of the consumer has applied acks for all of its server's stream A.
bool simulation::consumer_caught_up() {
  unsigned holders = 0;
  for (auto& s : _servers) {
    auto it = s.groups.find(kConsumerGroup);
    if (!s.up || it == s.groups.end()) continue;
    const auto st = it->second.consumer->state();
    if (st.ack_floor.stream_seq < local_a_last(s) || !st.pending.empty()) return false;
    ++holders;
  }
  return holders >= _streams[0].replicas;
}

std::string simulation::consumer_progress() {
  std::string out;
  for (auto& s : _servers) {
    auto it = s.groups.find(kConsumerGroup);
    if (!s.up || it == s.groups.end()) continue;
    const auto st = it->second.consumer->state();
    out += fmt::format("{} {} floor {} delivered {} pending {} ready {} A last {}; ", s.name,
                       it->second.raft->debug_state(), st.ack_floor.stream_seq,
                       st.delivered.stream_seq, st.pending.size(),
                       it->second.consumer->ready(), local_a_last(s));
    if (const auto* m = it->second.consumer->machine()) {
      out += fmt::format("machine pending {} rdq {} waiting {} pend:", m->pending().size(),
                         m->redelivery_queue().size(), m->waiting().size());
      for (const auto& [seq, e] : st.pending) out += fmt::format(" {}", seq);
    }
  }
  return out;
}

void simulation::consumer_checks() {
  std::optional<consumer_snapshot> first;
  for (auto& s : _servers) {
    auto it = s.groups.find(kConsumerGroup);
    if (!s.up || it == s.groups.end()) continue;
    const auto st = it->second.consumer->state();
    if (first && !(st == *first))
      return violation(fmt::format("consumer: {} holds another state after settling", s.name));
    first = st;
    for (std::uint64_t seq : _confirmed)
      if (seq > st.ack_floor.stream_seq)
        return violation(fmt::format("consumer: confirmed ack of {} above {}'s floor {}", seq,
                                     s.name, st.ack_floor.stream_seq));
    for (std::uint64_t seq = 1; seq <= local_a_last(s); ++seq)
      if (!_delivered.count(seq))
        return violation(fmt::format("consumer: stream A seq {} never delivered", seq));
  }
  if (!first) violation("consumer: no replica after settling");
}

}  // namespace js::sim::detail
