// sys_event_pacer: when the system account's worker has periodic work. Above all, an idle server
// whose system account nobody listens to has none (next_wake is kNever), so it never asks
// its shards anything.
#include "src/core/sys_event_pacer.h"

#include <gtest/gtest.h>

namespace core {
namespace {

constexpr base::nanos S = base::kSecond;
constexpr base::nanos kNever = sys_event_pacer::kNever;
using listener = sys_event_pacer::listener;

std::vector<std::string> accounts_of(const std::vector<listener>& ls) {
  std::vector<std::string> out;
  for (const auto& l : ls) out.push_back(l.account);
  return out;
}

TEST(sys_event_pacer, asks_who_listens_first_and_then_sleeps_while_nobody_does) {
  sys_event_pacer p(100 * S);
  EXPECT_TRUE(p.needs_interest());
  EXPECT_EQ(p.next_wake(), 0);  // at once
  EXPECT_TRUE(p.wants_connections());
  p.set_interest(false, {{"A", false, false}, {"$G", false, false}});
  EXPECT_FALSE(p.needs_interest());
  EXPECT_EQ(p.next_wake(), kNever);
  EXPECT_FALSE(p.wants_connections());  // shards need not ring for clients
  // Connections come and go: still nothing to do; STATSZ times pass unsent.
  p.connections_changed();
  EXPECT_FALSE(p.conns_due(101 * S));
  EXPECT_EQ(p.next_wake(), kNever);
  for (base::nanos t = 100 * S; t < 200 * S; t += S) EXPECT_FALSE(p.statsz_due(t));
  EXPECT_EQ(p.next_wake(), kNever);
}

TEST(sys_event_pacer, statsz_follows_nats_server_schedule_while_heard) {
  sys_event_pacer p(0);
  p.set_interest(true, {});
  EXPECT_EQ(p.next_wake(), 1 * S);
  EXPECT_FALSE(p.statsz_due(S - 1));
  std::vector<base::nanos> sent;
  for (base::nanos t = 0; t <= 40 * S; t += S / 2)
    if (p.statsz_due(t)) sent.push_back(t);
  // 1 s after start, then 2, 4, 8 and 10 s apart.
  EXPECT_EQ(sent, (std::vector<base::nanos>{1 * S, 3 * S, 7 * S, 15 * S, 25 * S, 35 * S}));
  EXPECT_EQ(p.next_wake(), 45 * S);
}

TEST(sys_event_pacer, a_late_statsz_listener_gets_one_and_the_schedule_goes_on) {
  sys_event_pacer p(0);
  p.set_interest(false, {});
  EXPECT_FALSE(p.statsz_due(50 * S));  // nobody listened: the schedule moved on unsent
  p.interest_changed();
  EXPECT_EQ(p.next_wake(), 0);
  p.set_interest(true, {});
  const base::nanos next = p.next_wake();
  EXPECT_GT(next, 50 * S);
  EXPECT_LE(next, 60 * S);
  EXPECT_FALSE(p.statsz_due(next - 1));
  EXPECT_TRUE(p.statsz_due(next));
}

TEST(sys_event_pacer, conns_go_out_on_a_change_only) {
  sys_event_pacer p(0);
  p.set_interest(false, {{"A", true, true}, {"B", false, false}});
  EXPECT_TRUE(p.wants_connections());
  EXPECT_TRUE(p.conns_due(0));  // a new listener: counts wanted once
  auto ev = p.conns_events(0, {{"A", 0}, {"B", 3}});
  EXPECT_TRUE(ev.empty());  // A has no connections yet; nobody listens to B
  EXPECT_FALSE(p.conns_due(1 * S));
  EXPECT_EQ(p.next_wake(), kNever);  // nothing until a client comes or goes

  p.connections_changed();
  EXPECT_EQ(p.next_wake(), 0);
  ASSERT_TRUE(p.conns_due(2 * S));
  ev = p.conns_events(2 * S, {{"A", 1}, {"B", 4}});
  ASSERT_EQ(accounts_of(ev), (std::vector<std::string>{"A"}));
  EXPECT_TRUE(ev[0].new_subject && ev[0].old_subject);
  EXPECT_EQ(p.next_wake(), 32 * S);  // the heartbeat while A has connections

  p.connections_changed();  // someone in B connected: A's count is the same
  EXPECT_TRUE(p.conns_events(3 * S, {{"A", 1}, {"B", 5}}).empty());
  p.connections_changed();
  EXPECT_EQ(accounts_of(p.conns_events(4 * S, {{"B", 5}})), (std::vector<std::string>{"A"}));  // A: 0
  EXPECT_EQ(p.next_wake(), kNever);  // no connections: no heartbeat
}

TEST(sys_event_pacer, heartbeat_every_30_s_while_the_account_has_connections) {
  sys_event_pacer p(0);
  p.set_interest(false, {{"A", true, false}});
  EXPECT_EQ(p.conns_events(5 * S, {{"A", 2}}).size(), 1u);
  EXPECT_FALSE(p.conns_due(34 * S));
  EXPECT_TRUE(p.conns_due(35 * S));
  EXPECT_EQ(p.conns_events(35 * S, {{"A", 2}}).size(), 1u);
  EXPECT_EQ(p.next_wake(), 65 * S);
}

TEST(sys_event_pacer, a_listener_that_leaves_stops_the_heartbeat) {
  sys_event_pacer p(0);
  p.set_interest(false, {{"A", true, false}});
  EXPECT_EQ(p.conns_events(0, {{"A", 2}}).size(), 1u);
  EXPECT_EQ(p.next_wake(), 30 * S);
  p.interest_changed();
  p.set_interest(false, {{"A", false, false}});
  EXPECT_EQ(p.next_wake(), kNever);
  EXPECT_FALSE(p.conns_due(100 * S));
  // Back again: it gets the count at once, as a new listener.
  p.interest_changed();
  p.set_interest(false, {{"A", false, true}});
  ASSERT_TRUE(p.conns_due(101 * S));
  const auto ev = p.conns_events(101 * S, {{"A", 2}});
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_TRUE(ev[0].old_subject);
  EXPECT_FALSE(ev[0].new_subject);
}

}  // namespace
}  // namespace core
