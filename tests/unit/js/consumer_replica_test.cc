// consumer_replica over a fake replicated log: deliveries and acks go through the log, acks
// are confirmed on apply, followers hold the same state, a new leader resumes from it.
#include "src/js/consumer_replica.h"
#include "tests/unit/js/stream_replica_rig.h"

#include <gtest/gtest.h>

#include <algorithm>

namespace {

using js::consumer_submit;

using stream_replica_rig::fake_log;  // the log a test commits by hand

// Messages 1..last, all 10 bytes.
class seq_source final : public js::message_source {
 public:
  std::uint64_t last = 0;
  std::optional<js::msg_meta> next_matching(std::uint64_t from) override {
    if (from > last) return std::nullopt;
    return js::msg_meta{from, 1000 + std::int64_t(from), 3, 0, 10};
  }
  std::optional<js::msg_meta> load(std::uint64_t seq) override {
    if (seq == 0 || seq > last) return std::nullopt;
    return js::msg_meta{seq, 1000 + std::int64_t(seq), 3, 0, 10};
  }
  std::uint64_t count_matching(std::uint64_t from) override { return from > last ? 0 : last - from + 1; }
};

constexpr base::nanos kNow = 1'700'000'000'000'000'000;
constexpr base::nanos kAckWait = 1'000'000'000;

js::consumer_params params() {
  js::consumer_params p;
  p.stream_name = "A";
  p.consumer_name = "C";
  p.ack = js::ack_policy::explicit_;
  p.ack_wait = kAckWait;
  return p;
}

struct node {
  explicit node(const char* name, seq_source& src) : replica(params(), src, log, name) {}
  fake_log log;
  js::consumer_replica replica;
};

std::vector<std::uint64_t> delivered(const js::actions& out) {
  std::vector<std::uint64_t> seqs;
  for (const auto& a : out)
    if (const auto* d = std::get_if<js::delivery>(&a)) seqs.push_back(d->stream_seq);
  return seqs;
}

js::ack_subject ack_of(std::uint64_t sseq, std::uint64_t dseq) {
  js::ack_subject s;
  s.stream = "A";
  s.consumer = "C";
  s.delivered = 1;
  s.stream_seq = sseq;
  s.consumer_seq = dseq;
  return s;
}

// Applies `entries` to every replica; returns the confirmations of the first.
std::vector<js::consumer_ack_confirm> apply_all(const std::vector<repl::committed_entry>& entries,
                                                std::vector<js::consumer_replica*> to) {
  std::vector<js::consumer_ack_confirm> first;
  for (std::size_t i = 0; i < to.size(); ++i) {
    std::vector<js::consumer_ack_confirm> c;
    for (const auto& e : entries) to[i]->apply(e, kNow, c);
    if (i == 0) first = c;
  }
  return first;
}

TEST(ConsumerReplica, LeaderDeliversOnlyOnceItsLeaderStartIsApplied) {
  seq_source src;
  src.last = 3;
  node a("s1", src);
  js::actions out;
  js::pull_request req;
  req.batch = 2;
  a.replica.on_role(kNow);
  EXPECT_EQ(a.replica.pull("r", req, kNow, out), consumer_submit::not_ready);
  apply_all(a.log.proposed, {&a.replica});
  a.log.proposed.clear();
  ASSERT_TRUE(a.replica.ready());
  EXPECT_EQ(a.replica.pull("r", req, kNow, out), consumer_submit::done);
  EXPECT_EQ(delivered(out), (std::vector<std::uint64_t>{1, 2}));
  EXPECT_TRUE(a.log.proposed.empty());  // in the outbox until the owner's flush
  EXPECT_TRUE(a.replica.has_unflushed());
  a.replica.flush();
  ASSERT_EQ(a.log.proposed.size(), 1u);  // one entry for both deliveries
  const auto op = js::repl_entries::decode_consumer(a.log.proposed[0].value.data);
  ASSERT_TRUE(op);
  const auto* u = std::get_if<js::repl_entries::consumer_updates>(&*op);
  ASSERT_NE(u, nullptr);
  ASSERT_EQ(u->updates.size(), 2u);
  EXPECT_EQ(std::get<js::repl_entries::consumer_delivered>(u->updates[1]).sseq, 2u);
  EXPECT_EQ(a.replica.state().delivered.stream_seq, 0u);  // replicated state: on apply only
  apply_all(a.log.proposed, {&a.replica});
  EXPECT_EQ(a.replica.state().delivered.stream_seq, 2u);
  EXPECT_EQ(a.replica.state().pending.size(), 2u);
}

// Acks of one turn share one entry with the deliveries before them: each is confirmed when
// that entry applies, and a lost entry confirms none of them.
TEST(ConsumerReplica, OneTurnsAcksShareAnEntryAndAreConfirmedTogether) {
  seq_source src;
  src.last = 5;
  node a("s1", src), b("s2", src);
  b.log.leader = false;
  a.replica.on_role(kNow);
  apply_all(a.log.proposed, {&a.replica, &b.replica});
  a.log.proposed.clear();
  js::actions out;
  js::pull_request req;
  req.batch = 5;
  a.replica.pull("r", req, kNow, out);
  for (std::uint64_t s : {2, 4, 1}) EXPECT_EQ(a.replica.ack(ack_of(s, s), {js::ack_kind::ack}, 10 + s, kNow, out), consumer_submit::done);
  EXPECT_FALSE(a.replica.settled());  // acks in the outbox count as not applied
  a.replica.flush();
  EXPECT_FALSE(a.replica.has_unflushed());
  ASSERT_EQ(a.log.proposed.size(), 1u);
  auto confirmed = apply_all(a.log.proposed, {&a.replica, &b.replica});
  a.log.proposed.clear();
  ASSERT_EQ(confirmed.size(), 3u);
  EXPECT_EQ(confirmed[0].token, 12u);
  EXPECT_EQ(confirmed[1].token, 14u);
  EXPECT_EQ(confirmed[2].token, 11u);
  EXPECT_TRUE(a.replica.settled());
  EXPECT_EQ(a.replica.state(), b.replica.state());
  EXPECT_EQ(b.replica.ack_floor(), (js::sequence_pair{2, 2}));
  EXPECT_EQ(b.replica.state().pending.size(), 2u);  // 3, 5

  // The next turn's acks: their entry comes back at its index with another leader's term.
  EXPECT_EQ(a.replica.ack(ack_of(3, 3), {js::ack_kind::ack}, 20, kNow, out), consumer_submit::done);
  EXPECT_EQ(a.replica.ack(ack_of(5, 5), {js::ack_kind::ack}, 21, kNow, out), consumer_submit::done);
  a.replica.flush();
  ASSERT_EQ(a.log.proposed.size(), 1u);
  auto lost = a.log.proposed;
  lost[0].value.term = 2;
  lost[0].value.data = js::repl_entries::encode(
      js::repl_entries::consumer_op{js::repl_entries::consumer_leader_start{2, "s2"}});
  EXPECT_TRUE(apply_all(lost, {&a.replica}).empty());
  EXPECT_FALSE(a.replica.ready());
  EXPECT_EQ(a.replica.state().pending.size(), 2u);  // still owed: redelivered by s2
}

TEST(ConsumerReplica, AckConfirmedOnApplyAndNewLeaderDoesNotRedeliverIt) {
  seq_source src;
  src.last = 3;
  node a("s1", src), b("s2", src);
  b.log.leader = false;
  a.replica.on_role(kNow);
  apply_all(a.log.proposed, {&a.replica, &b.replica});
  a.log.proposed.clear();
  js::actions out;
  js::pull_request req;
  req.batch = 3;
  a.replica.pull("r", req, kNow, out);
  ASSERT_EQ(delivered(out).size(), 3u);
  EXPECT_EQ(a.replica.ack(ack_of(1, 1), {js::ack_kind::ack}, 77, kNow, out), consumer_submit::done);
  EXPECT_EQ(a.replica.ack(ack_of(1, 1), {js::ack_kind::ack}, 78, kNow, out), consumer_submit::ignored);
  EXPECT_EQ(b.replica.ack(ack_of(2, 2), {js::ack_kind::ack}, 79, kNow, out), consumer_submit::not_leader);
  a.replica.flush();
  auto confirmed = apply_all(a.log.proposed, {&a.replica, &b.replica});
  ASSERT_EQ(confirmed.size(), 1u);
  EXPECT_EQ(confirmed[0].token, 77u);
  EXPECT_EQ(confirmed[0].stream_seq, 1u);
  a.log.proposed.clear();
  EXPECT_EQ(a.replica.state(), b.replica.state());
  EXPECT_EQ(b.replica.state().ack_floor, (js::sequence_pair{1, 1}));
  EXPECT_EQ(b.replica.state().pending.size(), 2u);

  // b takes over: after its leader_start it redelivers 2 and 3 (unacked) once their ack wait
  // has passed, never 1, and carries on with new messages after 3.
  a.log.leader = false;
  a.replica.on_role(kNow);
  b.log.leader = true;
  b.log.current_term = 2;
  b.log.next_index = a.log.next_index;
  b.replica.on_role(kNow);
  apply_all(b.log.proposed, {&b.replica, &a.replica});
  b.log.proposed.clear();
  // Not before its stream replica holds everything delivered (3): 2 would look deleted.
  js::actions out2;
  EXPECT_FALSE(b.replica.ready());
  b.replica.on_stream_advanced(2, kNow, out2);
  EXPECT_FALSE(b.replica.ready());
  b.replica.on_stream_advanced(3, kNow, out2);
  ASSERT_TRUE(b.replica.ready());
  EXPECT_FALSE(a.replica.ready());
  src.last = 4;
  req.batch = 10;
  b.replica.pull("r", req, kNow + kAckWait / 2, out2);
  EXPECT_EQ(delivered(out2), (std::vector<std::uint64_t>{4}));
  b.replica.tick(kNow + kAckWait, out2);
  EXPECT_EQ(delivered(out2), (std::vector<std::uint64_t>{4, 2, 3}));
}

TEST(ConsumerReplica, AckLostWithItsLeaderIsNeverConfirmed) {
  seq_source src;
  src.last = 1;
  node a("s1", src);
  a.replica.on_role(kNow);
  apply_all(a.log.proposed, {&a.replica});
  a.log.proposed.clear();
  js::actions out;
  js::pull_request req;
  a.replica.pull("r", req, kNow, out);
  a.replica.flush();  // a turn ends
  a.replica.ack(ack_of(1, 1), {js::ack_kind::ack}, 5, kNow, out);
  a.replica.flush();
  ASSERT_EQ(a.log.proposed.size(), 2u);  // delivered, acked
  // Another leader's entry of term 2 lands at the ack's index.
  std::vector<repl::committed_entry> entries{a.log.proposed[0], a.log.proposed[1]};
  entries[1].value.term = 2;
  entries[1].value.data = js::repl_entries::encode(
      js::repl_entries::consumer_op{js::repl_entries::consumer_leader_start{2, "s2"}});
  auto confirmed = apply_all(entries, {&a.replica});
  EXPECT_TRUE(confirmed.empty());
  EXPECT_FALSE(a.replica.ready());
  EXPECT_EQ(a.replica.state().pending.size(), 1u);  // still owed: redelivered by s2
}

TEST(ConsumerReplica, AckFloorNeverMovesBack) {
  seq_source src;
  src.last = 3;
  node a("s1", src);
  a.replica.on_role(kNow);
  apply_all(a.log.proposed, {&a.replica});
  a.log.proposed.clear();
  js::actions out;
  js::pull_request req;
  req.batch = 3;
  a.replica.pull("r", req, kNow, out);
  a.replica.ack(ack_of(2, 2), {js::ack_kind::ack}, 1, kNow, out);
  a.replica.flush();
  apply_all(a.log.proposed, {&a.replica});
  a.log.proposed.clear();
  EXPECT_EQ(a.replica.ack_floor(), (js::sequence_pair{0, 0}));  // 1 still pending
  a.replica.ack(ack_of(1, 1), {js::ack_kind::ack}, 2, kNow, out);
  a.replica.flush();
  apply_all(a.log.proposed, {&a.replica});
  a.log.proposed.clear();
  EXPECT_EQ(a.replica.ack_floor(), (js::sequence_pair{2, 2}));
  a.replica.ack(ack_of(3, 3), {js::ack_kind::ack}, 3, kNow, out);
  a.replica.flush();
  apply_all(a.log.proposed, {&a.replica});
  EXPECT_EQ(a.replica.ack_floor(), (js::sequence_pair{3, 3}));
  EXPECT_TRUE(a.replica.state().pending.empty());
}

// A replica with another ack policy: leader a, follower b, a leading and ready.
struct pair_with_policy {
  pair_with_policy(js::ack_policy ack, seq_source& src)
      : a(with(ack), src, la, "s1"), b(with(ack), src, lb, "s2") {
    lb.leader = false;
    a.on_role(kNow);
    apply_all(la.proposed, {&a, &b});
    la.proposed.clear();
    (void)a.take_released();
    (void)b.take_released();
  }
  static js::consumer_params with(js::ack_policy ack) {
    auto p = params();
    p.ack = ack;
    return p;
  }
  void commit() {
    a.flush();  // the owner's turn ends
    apply_all(la.proposed, {&a, &b});
    la.proposed.clear();
  }
  fake_log la, lb;
  js::consumer_replica a, b;
};

TEST(ConsumerReplica, AckAllAcksEveryEarlierDeliveryOnEveryReplica) {
  seq_source src;
  src.last = 5;
  pair_with_policy p(js::ack_policy::all, src);
  js::actions out;
  js::pull_request req;
  req.batch = 4;
  p.a.pull("r", req, kNow, out);
  ASSERT_EQ(delivered(out).size(), 4u);
  EXPECT_EQ(p.a.ack(ack_of(3, 3), {js::ack_kind::ack}, 9, kNow, out), consumer_submit::done);
  p.commit();
  for (auto* r : {&p.a, &p.b}) {
    EXPECT_EQ(r->ack_floor(), (js::sequence_pair{3, 3}));
    EXPECT_EQ(r->state().pending.size(), 1u);  // 4
    EXPECT_EQ(r->take_released(), (std::vector<std::uint64_t>{1, 2, 3}));
    EXPECT_FALSE(r->needs(2));
    EXPECT_TRUE(r->needs(4));
    EXPECT_TRUE(r->needs(5));  // not delivered yet
  }
  EXPECT_EQ(p.a.state(), p.b.state());
}

TEST(ConsumerReplica, AckNoneDeliveryIsNeverPendingAndReleasesTheMessage) {
  seq_source src;
  src.last = 3;
  pair_with_policy p(js::ack_policy::none, src);
  js::actions out;
  js::pull_request req;
  req.batch = 2;
  p.a.pull("r", req, kNow, out);
  ASSERT_EQ(delivered(out).size(), 2u);
  p.commit();
  for (auto* r : {&p.a, &p.b}) {
    EXPECT_TRUE(r->state().pending.empty());
    EXPECT_EQ(r->ack_floor(), (js::sequence_pair{2, 2}));
    EXPECT_EQ(r->take_released(), (std::vector<std::uint64_t>{1, 2}));
    EXPECT_FALSE(r->needs(1));
    EXPECT_TRUE(r->needs(3));
  }
}

TEST(ConsumerReplica, ExplicitAckReleasesOnlyWhatItAcknowledges) {
  seq_source src;
  src.last = 4;
  pair_with_policy p(js::ack_policy::explicit_, src);
  js::actions out;
  js::pull_request req;
  req.batch = 3;
  p.a.pull("r", req, kNow, out);
  p.a.ack(ack_of(2, 2), {js::ack_kind::ack}, 1, kNow, out);
  p.a.ack(ack_of(2, 2), {js::ack_kind::ack}, 2, kNow, out);  // a repeat: not proposed
  p.commit();
  for (auto* r : {&p.a, &p.b}) {
    EXPECT_EQ(r->take_released(), (std::vector<std::uint64_t>{2}));
    EXPECT_TRUE(r->needs(1));
    EXPECT_FALSE(r->needs(2));
    EXPECT_TRUE(r->needs(3));
    EXPECT_TRUE(r->needs(4));
  }
}

TEST(ConsumerReplica, NothingBeforeItsStartIsNeeded) {
  seq_source src;
  src.last = 4;
  fake_log log;
  auto params_from_3 = params();
  params_from_3.start_seq = 3;  // deliver new after 2 messages
  js::consumer_replica r(params_from_3, src, log, "s1");
  EXPECT_FALSE(r.needs(2));
  EXPECT_TRUE(r.needs(3));
}

}  // namespace

// A consumer whose deliver policy starts past 1 (deliver new, by_start_sequence) starts there
// on its first leader, not at 1 as a restore of the empty replicated state would say.
TEST(ConsumerReplica, FirstLeaderStartsAtTheDeliverPolicysSequence) {
  seq_source src;
  src.last = 4;
  fake_log log;
  js::consumer_params p = params();
  p.start_seq = 3;
  js::consumer_replica r(p, src, log, "s1");
  r.on_role(kNow);
  apply_all(log.proposed, {&r});
  log.proposed.clear();
  ASSERT_TRUE(r.ready());
  js::actions out;
  js::pull_request req;
  req.batch = 5;
  EXPECT_EQ(r.pull("r", req, kNow, out), consumer_submit::done);
  EXPECT_EQ(delivered(out), (std::vector<std::uint64_t>{3, 4}));
}

// A scale's new group: every replica starts from the carried state, and its first leader
// resumes from it: no delivery of what was acked, pending ones wait for their ack wait and
// come back with their redelivery counts, new deliveries continue the consumer sequence.
TEST(ConsumerReplica, SeededGroupResumesFromTheCarriedState) {
  seq_source src;
  src.last = 10;
  node a("s1", src), b("s2", src);
  b.log.leader = false;
  // 1-5 acked, 6 delivered twice (consumer seq 9), 7 and 8 pending.
  const js::repl_entries::consumer_seed seed{9, 8, 5, 5, {{6, 9, kNow}, {7, 7, kNow}, {8, 8, kNow}}, {{6, 1}}};
  a.replica.seed(seed);
  b.replica.seed(seed);
  EXPECT_EQ(a.replica.state(), b.replica.state());
  EXPECT_EQ(a.replica.state().ack_floor, (js::sequence_pair{5, 5}));
  EXPECT_EQ(a.replica.state().pending.size(), 3u);
  a.replica.on_role(kNow);
  apply_all(a.log.proposed, {&a.replica, &b.replica});
  a.log.proposed.clear();
  js::actions out;
  a.replica.on_stream_advanced(src.last, kNow, out);
  ASSERT_TRUE(a.replica.ready());
  js::pull_request req;
  req.batch = 5;
  EXPECT_EQ(a.replica.pull("r", req, kNow, out), consumer_submit::done);
  EXPECT_EQ(delivered(out), (std::vector<std::uint64_t>{9, 10}));
  std::uint64_t first_dseq = 0;
  for (const auto& x : out)
    if (const auto* d = std::get_if<js::delivery>(&x); d && !first_dseq) first_dseq = d->consumer_seq;
  EXPECT_EQ(first_dseq, 10u) << "consumer sequences continue after the carried 9";
  // An ack of a delivery made before the scale (7, consumer seq 7) is taken and confirmed.
  out.clear();
  EXPECT_EQ(a.replica.ack(ack_of(7, 7), {js::ack_kind::ack}, 1, kNow, out), consumer_submit::done);
  a.replica.flush();
  const auto confirmed = apply_all(a.log.proposed, {&a.replica, &b.replica});
  a.log.proposed.clear();
  ASSERT_EQ(confirmed.size(), 1u);
  EXPECT_EQ(confirmed[0].stream_seq, 7u);
  // After the ack wait, 6 and 8 come back (and 9, 10, unacked); 6 as its third delivery.
  out.clear();
  a.replica.tick(kNow + kAckWait + 1, out);
  std::vector<std::uint64_t> again;
  std::uint64_t count6 = 0;
  req.batch = 5;
  (void)a.replica.pull("r2", req, kNow + kAckWait + 2, out);
  for (const auto& x : out)
    if (const auto* d = std::get_if<js::delivery>(&x)) {
      again.push_back(d->stream_seq);
      if (d->stream_seq == 6) count6 = d->delivery_count;
    }
  std::sort(again.begin(), again.end());
  EXPECT_EQ(again, (std::vector<std::uint64_t>{6, 8, 9, 10}));
  EXPECT_EQ(count6, 3u);
}

// CONSUMER.RESET on the leader: a consumer_reset entry; every replica's state starts over
// after the floor, the reset is confirmed once applied, and the next leader delivers from
// the floor on with consumer sequences from 1.
TEST(ConsumerReplica, ResetIsReplicatedAndTheNextLeaderResumesFromIt) {
  seq_source src;
  src.last = 5;
  node a("s1", src), b("s2", src);
  b.log.leader = false;
  a.replica.on_role(kNow);
  apply_all(a.log.proposed, {&a.replica, &b.replica});
  a.log.proposed.clear();
  js::actions out;
  js::pull_request req;
  req.batch = 4;
  a.replica.pull("r", req, kNow, out);
  ASSERT_EQ(delivered(out).size(), 4u);
  a.replica.ack(ack_of(1, 1), {js::ack_kind::ack}, 1, kNow, out);
  out.clear();
  EXPECT_EQ(b.replica.reset(1, 9, kNow, out), consumer_submit::not_leader);
  EXPECT_EQ(a.replica.reset(1, 9, kNow, out), consumer_submit::done);
  EXPECT_TRUE(delivered(out).empty());  // nobody waits
  auto confirmed = apply_all(a.log.proposed, {&a.replica, &b.replica});
  a.log.proposed.clear();
  ASSERT_EQ(confirmed.size(), 2u);  // the ack, then the reset
  EXPECT_EQ(confirmed[1].token, 9u);
  EXPECT_EQ(a.replica.state(), b.replica.state());
  EXPECT_EQ(b.replica.state().delivered, (js::sequence_pair{0, 1}));
  EXPECT_EQ(b.replica.state().ack_floor, (js::sequence_pair{0, 1}));
  EXPECT_TRUE(b.replica.state().pending.empty());
  // An ack of a delivery before the reset finds nothing pending.
  EXPECT_EQ(a.replica.ack(ack_of(2, 2), {js::ack_kind::ack}, 2, kNow, out), consumer_submit::ignored);

  a.log.leader = false;
  a.replica.on_role(kNow);
  b.log.leader = true;
  b.log.current_term = 2;
  b.log.next_index = a.log.next_index;
  b.replica.on_role(kNow);
  apply_all(b.log.proposed, {&b.replica, &a.replica});
  b.log.proposed.clear();
  js::actions out2;
  b.replica.on_stream_advanced(src.last, kNow, out2);
  ASSERT_TRUE(b.replica.ready());
  req.batch = 2;
  b.replica.pull("r", req, kNow, out2);
  ASSERT_EQ(delivered(out2), (std::vector<std::uint64_t>{2, 3}));
  EXPECT_EQ(std::get<js::delivery>(out2[0]).consumer_seq, 1u);
}

// A reset to floor 0 of a consumer whose deliver policy started later: the next leader
// starts at 1 (the reset state), not at the deliver policy's sequence.
TEST(ConsumerReplica, ResetToTheStartIsNotTheDeliverPolicysStart) {
  seq_source src;
  src.last = 4;
  fake_log log;
  js::consumer_params p = params();
  p.start_seq = 4;
  js::consumer_replica r(p, src, log, "s1");
  r.on_role(kNow);
  apply_all(log.proposed, {&r});
  log.proposed.clear();
  js::actions out;
  ASSERT_EQ(r.reset(0, 1, kNow, out), consumer_submit::done);
  apply_all(log.proposed, {&r});
  log.proposed.clear();
  // Leadership again (a new term): the machine is rebuilt from the replicated state.
  log.current_term = 2;
  r.on_role(kNow);
  apply_all(log.proposed, {&r});
  log.proposed.clear();
  r.on_stream_advanced(src.last, kNow, out);
  ASSERT_TRUE(r.ready());
  out.clear();
  js::pull_request req;
  req.batch = 2;
  r.pull("r", req, kNow, out);
  EXPECT_EQ(delivered(out), (std::vector<std::uint64_t>{1, 2}));
}

// A config update (meta group) on every replica: the leader's machine pauses at once and
// advises it; a later leader is built paused with the new parameters; resuming delivers.
TEST(ConsumerReplica, UpdatePausesTheLeaderAndTheNextLeaderStartsPaused) {
  seq_source src;
  src.last = 6;
  node a("s1", src), b("s2", src);
  b.log.leader = false;
  a.replica.on_role(kNow);
  apply_all(a.log.proposed, {&a.replica, &b.replica});
  a.log.proposed.clear();
  js::consumer_params p = params();
  p.max_ack_pending = 2;
  const base::nanos until = kNow + 3600 * base::kSecond;
  js::actions out;
  a.replica.update(p, until, kNow, out);
  b.replica.update(p, until, kNow, out);
  ASSERT_EQ(out.size(), 1u);
  const auto* adv = std::get_if<js::advisory>(&out[0]);
  ASSERT_NE(adv, nullptr);
  EXPECT_EQ(adv->kind, js::advisory_kind::pause);
  EXPECT_TRUE(adv->paused);
  out.clear();
  js::pull_request req;
  req.batch = 5;
  a.replica.pull("r", req, kNow, out);
  EXPECT_TRUE(delivered(out).empty());
  EXPECT_TRUE(a.replica.numbers(kNow)->paused);

  a.log.leader = false;
  a.replica.on_role(kNow);
  b.log.leader = true;
  b.log.current_term = 2;
  b.log.next_index = a.log.next_index;
  b.replica.on_role(kNow);
  apply_all(b.log.proposed, {&b.replica, &a.replica});
  b.log.proposed.clear();
  js::actions out2;
  b.replica.on_stream_advanced(src.last, kNow, out2);
  ASSERT_TRUE(b.replica.ready());
  b.replica.pull("r", req, kNow, out2);
  EXPECT_TRUE(delivered(out2).empty()) << "the new leader delivered while paused";
  EXPECT_TRUE(b.replica.numbers(kNow)->paused);
  // Resumed: delivers, two at most (the updated max_ack_pending).
  b.replica.update(p, 0, kNow, out2);
  EXPECT_EQ(delivered(out2), (std::vector<std::uint64_t>{1, 2}));
}

// The hub's real log: deliveries and acks are queued on the ring to pg-repl (tickets); their
// indexes come later, with the `proposed` event.
class queued_log final : public repl::replicated_log {
 public:
  bool leader = true;
  std::uint64_t next_index = 1;
  std::vector<repl::committed_entry> proposed;           // in the log, not yet committed
  std::vector<std::vector<std::uint8_t>> queued;         // on the ring
  std::uint64_t next_ticket = 1, first_queued_ticket = 1;

  repl::propose_result propose(std::span<const std::uint8_t> d) override {
    if (!leader) return {repl::propose_status::not_leader, 0};
    flush();  // a synchronous propose drains the ring first
    return {repl::propose_status::ok, append(d)};
  }
  repl::propose_result propose_async(std::span<const std::uint8_t> d) override {
    if (!leader) return {repl::propose_status::not_leader, 0};
    queued.emplace_back(d.begin(), d.end());
    return {repl::propose_status::queued, next_ticket++};
  }
  bool is_leader() const override { return leader; }
  std::uint64_t term() const override { return 1; }

  // pg-repl's turn: what is queued goes into the log; returns (first ticket, count, first index).
  std::tuple<std::uint64_t, std::uint64_t, std::uint64_t> flush() {
    const std::uint64_t first_ticket = first_queued_ticket, count = queued.size(), first = next_index;
    for (const auto& d : queued) append(d);
    queued.clear();
    first_queued_ticket += count;
    return {first_ticket, count, first};
  }

 private:
  std::uint64_t append(std::span<const std::uint8_t> d) {
    repl::committed_entry e;
    e.index = next_index++;
    e.value.term = 1;
    e.value.data.assign(d.begin(), d.end());
    proposed.push_back(e);
    return e.index;
  }
};

TEST(ConsumerReplica, QueuedAckSyncIsConfirmedOnceItsIndexIsKnownAndApplied) {
  seq_source src;
  src.last = 3;
  queued_log log;
  js::consumer_replica r(params(), src, log, "s1");
  r.on_role(kNow);
  std::vector<js::consumer_ack_confirm> c;
  for (const auto& e : std::exchange(log.proposed, {})) r.apply(e, kNow, c);
  ASSERT_TRUE(r.ready());
  js::actions out;
  js::pull_request req;
  req.batch = 2;
  ASSERT_EQ(r.pull("r", req, kNow, out), consumer_submit::done);
  EXPECT_EQ(delivered(out), (std::vector<std::uint64_t>{1, 2}));  // sent at once
  EXPECT_TRUE(log.queued.empty());
  r.flush();  // the owner's turn ends: both deliveries, one entry on the ring
  EXPECT_EQ(log.queued.size(), 1u);
  EXPECT_EQ(r.ack(ack_of(1, 1), {js::ack_kind::ack}, 77, kNow, out), consumer_submit::done);
  r.flush();
  EXPECT_EQ(log.queued.size(), 2u);
  const auto [ticket, count, first] = log.flush();
  r.on_proposed(ticket, count, first);
  c.clear();
  const auto entries = std::exchange(log.proposed, {});
  ASSERT_EQ(entries.size(), 2u);
  r.apply(entries[0], kNow, c);
  EXPECT_TRUE(c.empty()) << "the ack's own entry is not applied yet";
  r.apply(entries[1], kNow, c);
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0].token, 77u);
  EXPECT_EQ(r.state().ack_floor, (js::sequence_pair{1, 1}));
  EXPECT_EQ(r.state().delivered, (js::sequence_pair{2, 2}));
}

TEST(ConsumerReplica, RefusedQueuedDeliveryRebuildsTheMachine) {
  seq_source src;
  src.last = 3;
  queued_log log;
  js::consumer_replica r(params(), src, log, "s1");
  r.on_role(kNow);
  std::vector<js::consumer_ack_confirm> c;
  for (const auto& e : std::exchange(log.proposed, {})) r.apply(e, kNow, c);
  ASSERT_TRUE(r.ready());
  js::actions out;
  js::pull_request req;
  req.batch = 1;
  r.pull("r", req, kNow, out);
  r.flush();
  ASSERT_EQ(log.queued.size(), 1u);
  log.queued.clear();
  r.on_proposed(1, 1, 0);  // refused (a term change on the way)
  EXPECT_FALSE(r.ready()) << "the machine believed it delivered what the log does not hold";
  r.on_role(kNow);  // still leading: a new leader_start, then the replicated state again
  for (const auto& e : std::exchange(log.proposed, {})) r.apply(e, kNow, c);
  ASSERT_TRUE(r.ready());
  js::actions again;
  r.pull("r", req, kNow, again);
  EXPECT_EQ(delivered(again), (std::vector<std::uint64_t>{1})) << "delivered again";
}
