// repl_host end to end inside one process: real loopback sockets, real journals in temp
// dirs, the threads running; route peers are reported by hand (what shard 0 does), and each
// host's "cluster port" is a listener of the test's that hands every accepted socket to the
// host (what the route listener does with a "PGREPL" first line). Waits poll the hosts' meta
// snapshots with generous bounds.
#include "src/repl/repl_host.h"

#include <gtest/gtest.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>
#include <vector>

#include "src/base/tcp_listen.h"

#include "tests/unit/storage/temp_dir.h"

namespace {

using namespace repl;
using namespace std::chrono_literals;

repl_host_options options(const std::string& name, const std::string& cluster, const std::string& dir) {
  repl_host_options o;
  o.server_name = name;
  o.cluster_name = cluster;
  o.journal_dir = dir;
  o.min_meta_size = 2;
  o.settle_ms = 100;
  return o;
}

template <class F>
bool eventually(F f, std::chrono::milliseconds limit = 15s) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < deadline) {
    if (f()) return true;
    std::this_thread::sleep_for(10ms);
  }
  return false;
}

// A host's cluster port: accepted sockets go to the host, as route_manager hands them over.
class cluster_port {
 public:
  explicit cluster_port(repl_host& h) {
    auto l = base::listen_tcp("127.0.0.1", 0, 16, false);
    if (!l) return;
    _fd = l->fd;
    _port = l->port;
    _thread = std::thread([this, &h] {
      while (!_stop.load()) {
        pollfd p{_fd, POLLIN, 0};
        if (::poll(&p, 1, 20) != 1) continue;
        const int fd = ::accept4(_fd, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
        if (fd >= 0) h.adopt_connection(fd);
      }
    });
  }
  ~cluster_port() {
    _stop.store(true);
    if (_thread.joinable()) _thread.join();
    if (_fd >= 0) ::close(_fd);
  }
  int port() const { return _port; }

 private:
  int _fd = -1;
  int _port = 0;
  std::atomic<bool> _stop{false};
  std::thread _thread;
};

void link(repl_host& a, const std::string& a_name, const cluster_port& ap, repl_host& b,
          const std::string& b_name, const cluster_port& bp) {
  a.route_peer(b_name, "127.0.0.1", bp.port(), true);
  b.route_peer(a_name, "127.0.0.1", ap.port(), true);
}

// Two hosts of cluster c1 with their cluster ports, not started.
struct two_hosts {
  storage_test::temp_dir d;
  repl_host a{options("a", "c1", d.sub("a"))}, b{options("b", "c1", d.sub("b"))};
  cluster_port ap{a}, bp{b};
  bool listening() const { return ap.port() > 0 && bp.port() > 0; }
};

TEST(repl_host, two_servers_form_the_meta_group_elect_and_hand_over_leadership) {
  two_hosts h;
  ASSERT_TRUE(h.listening());
  auto& [d, a, b, ap, bp] = h;
  std::atomic<int> applied{0};
  a.set_meta_apply([&](std::uint64_t, const committed_entry&) {
    ++applied;
    return true;
  });
  a.start();
  b.start();
  link(a, "a", ap, b, "b", bp);
  std::string leader;
  ASSERT_TRUE(eventually([&] {
    const auto ma = a.meta(), mb = b.meta();
    leader = ma.leader;
    return ma.running && mb.running && !ma.leader.empty() && ma.leader == mb.leader;
  }));
  const auto m = a.meta();
  EXPECT_EQ(m.cluster, "c1");
  EXPECT_EQ(m.cluster_size, 2u);
  EXPECT_GT(applied.load(), 0);  // at least the configuration entry reached the apply function
  repl_host& l = leader == "a" ? a : b;
  const auto lm = l.meta();
  EXPECT_TRUE(lm.self_leader);
  ASSERT_EQ(lm.replicas.size(), 1u);
  EXPECT_FALSE(lm.replicas[0].offline);
  // Asked on the follower: forwarded to the leader, which hands over.
  repl_host& f = leader == "a" ? b : a;
  ASSERT_TRUE(f.meta_stepdown());
  EXPECT_TRUE(eventually([&] {
    const auto ma = a.meta(), mb = b.meta();
    return !ma.leader.empty() && ma.leader == mb.leader && ma.leader != leader;
  })) << "leadership stayed with " << leader;
}

// The owner's sink may refuse an event (its ring is full): the entry stays with pg-repl,
// its data moved back whole, and is offered again later, in order. The owner is woken
// (turn_end) once per turn that delivered events, not once per event.
TEST(repl_host, a_refused_event_is_offered_again_whole_and_the_owner_is_woken_per_turn) {
  two_hosts h;
  ASSERT_TRUE(h.listening());
  auto& [d, a, b, ap, bp] = h;
  struct offer {
    std::uint64_t index;
    std::vector<std::uint8_t> data;
  };
  std::mutex mu;
  std::vector<offer> refused, taken;
  int refuse_next = 2;  // the first applies offered are refused twice each
  std::atomic<int> turn_ends{0}, events{0}, accepted{0};
  a.set_group_events(
      [&](core::group_event& ev) {
        std::lock_guard lk(mu);
        if (ev.what != core::group_event::kind::apply) {
          ++accepted;
          return true;
        }
        if (refuse_next > 0 && taken.size() < 2) {
          --refuse_next;
          refused.push_back({ev.index, ev.data});
          return false;
        }
        refuse_next = 2;
        taken.push_back({ev.index, std::move(ev.data)});
        ++events;
        ++accepted;
        return true;
      },
      [&] { ++turn_ends; });
  a.start();
  b.start();
  link(a, "a", ap, b, "b", bp);
  ASSERT_TRUE(eventually([&] {
    const auto ma = a.meta(), mb = b.meta();
    return ma.running && mb.running && !ma.leader.empty() && ma.leader == mb.leader && events.load() >= 1;
  }));
  std::lock_guard lk(mu);
  ASSERT_GE(refused.size(), 2u);
  ASSERT_FALSE(taken.empty());
  // Each refused offer came back with the same index and the same bytes (moved back, not lost).
  for (const auto& r : refused) {
    const auto t = std::find_if(taken.begin(), taken.end(), [&](const offer& o) { return o.index == r.index; });
    ASSERT_NE(t, taken.end()) << "index " << r.index << " was never taken";
    EXPECT_EQ(t->data, r.data) << "index " << r.index;
  }
  for (std::size_t i = 1; i < taken.size(); ++i) EXPECT_EQ(taken[i].index, taken[i - 1].index + 1) << i;
  EXPECT_GE(turn_ends.load(), 1);
  // Never more wake-ups than events taken (each waking turn took at least one).
  EXPECT_LE(turn_ends.load(), accepted.load());
}

TEST(repl_host, a_server_of_another_cluster_is_refused_and_a_late_one_joins) {
  storage_test::temp_dir d;
  repl_host a(options("a", "c1", d.sub("a"))), b(options("b", "c1", d.sub("b")));
  repl_host x(options("x", "other", d.sub("x")));
  cluster_port ap(a), bp(b), xp(x);
  for (repl_host* h : {&a, &b, &x}) h->start();
  link(a, "a", ap, x, "x", xp);  // a dials x; x refuses a hello from cluster c1
  link(a, "a", ap, b, "b", bp);
  ASSERT_TRUE(eventually([&] { return !a.meta().leader.empty() && a.meta().leader == b.meta().leader; }));
  EXPECT_EQ(a.meta().cluster_size, 2u);
  EXPECT_FALSE(x.meta().running);
  // c comes up after the group formed: it joins, the leader adds it and promotes it.
  repl_host c(options("c", "c1", d.sub("c")));
  cluster_port cp(c);
  c.start();
  link(a, "a", ap, c, "c", cp);
  link(b, "b", bp, c, "c", cp);
  EXPECT_TRUE(eventually([&] {
    const auto mc = c.meta();
    const auto ma = a.meta(), mb = b.meta();
    const auto& lm = ma.self_leader ? ma : mb;
    return mc.running && !mc.leader.empty() && mc.leader == ma.leader && lm.cluster_size == 3u &&
           lm.replicas.size() == 2u;
  })) << "c did not join: a " << a.meta().cluster_size << ", c running " << c.meta().running;
  EXPECT_FALSE(x.meta().running);
}

}  // namespace
