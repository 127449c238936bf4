// Two tcp_conn machines over a simulated link with seeded loss, duplication, reordering and
// delay. Every byte must arrive once and in order. PG_SEED=<n> replays a failing run.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <queue>
#include <random>

#include "net/tcp/tcp_conn.h"

using namespace net::tcp;
using base::kMilli;

namespace {

struct link_config {
  double loss = 0.05, dup = 0.01, reorder = 0.05;
  base::nanos delay = 5 * kMilli, jitter = 2 * kMilli;
};

struct packet {
  base::nanos at;
  std::uint64_t order;
  int to;  // 0 = client, 1 = server
  tcp_header h;
  std::string payload;
  bool operator>(const packet& o) const { return at != o.at ? at > o.at : order > o.order; }
};

struct sim;

// TIME_WAIT must outlast the peer's backed-off FIN retransmissions (2*MSL >= max RTO), else a
// lost last ACK leaves the peer retrying at a machine that is gone.
tcp_config sim_tcp_config() {
  tcp_config c;
  c.time_wait = 2 * c.rto_max;
  return c;
}

struct endpoint final : tcp_output {
  sim* s = nullptr;
  int side = 0;
  std::string received;
  bool established = false, peer_fin = false, closed = false, reset = false;
  void send(const tcp_header& h, std::string_view p) override;
  void deliver(std::string_view d) override { received.append(d); }
  void event(tcp_event e) override {
    if (e == tcp_event::established) established = true;
    if (e == tcp_event::peer_fin) peer_fin = true;
    if (e == tcp_event::closed) closed = true;
    if (e == tcp_event::reset) reset = true;
  }
};

struct sim {
  link_config cfg;
  std::mt19937_64 rng;
  base::nanos now = 0;
  std::uint64_t order = 0, sent = 0, dropped = 0;
  std::priority_queue<packet, std::vector<packet>, std::greater<>> wire;
  endpoint ep[2];
  std::unique_ptr<tcp_conn> conn[2];

  explicit sim(std::uint64_t seed, link_config c = {}) : cfg(c), rng(seed) {
    for (int i = 0; i < 2; ++i) {
      ep[i].s = this;
      ep[i].side = i;
    }
  }
  double uniform() { return std::uniform_real_distribution<double>(0, 1)(rng); }
  void put(int to, const tcp_header& h, std::string_view p) {
    ++sent;
    if (std::getenv("PG_TCP_TRACE"))
      std::fprintf(stderr, "%lld %s seq=%u ack=%u fl=%x win=%u len=%zu\n", (long long)now, to ? "c->s" : "s->c", h.seq,
                   h.ack, h.flags, h.window, p.size());
    if (uniform() < cfg.loss) {
      ++dropped;
      return;
    }
    const int copies = uniform() < cfg.dup ? 2 : 1;
    for (int i = 0; i < copies; ++i) {
      base::nanos d = cfg.delay + base::nanos(uniform() * double(cfg.jitter));
      if (uniform() < cfg.reorder) d += 3 * cfg.delay;  // overtaken by later packets
      wire.push(packet{now + d, order++, to, h, std::string(p)});
    }
  }
  // Advances to the next packet or timer; false when nothing is left to happen.
  bool step() {
    base::nanos next = wire.empty() ? 0 : wire.top().at;
    for (auto& c : conn) {
      const base::nanos t = c ? c->next_timer() : 0;
      if (t != 0 && (next == 0 || t < next)) next = t;
    }
    if (next == 0) return false;
    now = std::max(now, next);
    while (!wire.empty() && wire.top().at <= now) {
      packet p = wire.top();
      wire.pop();
      if (p.to == 1 && !conn[1]) {
        if (p.h.flags == kSyn) conn[1] = std::make_unique<tcp_conn>(sim_tcp_config(), p.h, 0xfffff000u, now, ep[1]);
        continue;
      }
      if (conn[p.to]) conn[p.to]->on_segment(p.h, p.payload, now, ep[p.to]);
    }
    for (int i = 0; i < 2; ++i)
      if (conn[i] && conn[i]->next_timer() != 0 && conn[i]->next_timer() <= now) conn[i]->on_timer(now, ep[i]);
    return true;
  }
};

void endpoint::send(const tcp_header& h, std::string_view p) { s->put(1 - side, h, p); }

std::uint64_t seed_from_env(std::uint64_t dflt) {
  const char* e = std::getenv("PG_SEED");
  return e ? std::strtoull(e, nullptr, 10) : dflt;
}

std::string pattern(std::size_t n, std::uint64_t seed) {
  std::string s(n, '\0');
  std::mt19937_64 g(seed ^ 0x9e3779b97f4a7c15ull);
  for (auto& c : s) c = char(g());
  return s;
}

// Sends `a_to_b` from the client and `b_to_a` from the server, then both close.
void run_transfer(std::uint64_t seed, link_config lc, std::size_t a_to_b, std::size_t b_to_a) {
  SCOPED_TRACE("PG_SEED=" + std::to_string(seed));
  sim s(seed, lc);
  const std::string up = pattern(a_to_b, seed), down = pattern(b_to_a, seed + 1);
  s.conn[0] = std::make_unique<tcp_conn>(sim_tcp_config(), 0x7ffffff0u, 0, s.ep[0]);  // wraps sequence space
  std::size_t up_off = 0, down_off = 0;
  bool closed_up = false, closed_down = false;
  for (int iter = 0; iter < 5'000'000; ++iter) {
    // Applications: keep at most 256 KiB queued, like a socket buffer.
    if (s.ep[0].established && up_off < up.size() && s.conn[0]->unsent_bytes() < 256 * 1024) {
      const std::size_t n = std::min<std::size_t>(64 * 1024, up.size() - up_off);
      s.conn[0]->send_buffer().append(up, up_off, n);
      up_off += n;
      s.conn[0]->push(s.now, s.ep[0]);
    } else if (s.ep[0].established && up_off == up.size() && !closed_up) {
      closed_up = true;
      s.conn[0]->close(s.now, s.ep[0]);
    }
    if (s.conn[1] && s.ep[1].established && down_off < down.size() && s.conn[1]->unsent_bytes() < 256 * 1024) {
      const std::size_t n = std::min<std::size_t>(64 * 1024, down.size() - down_off);
      s.conn[1]->send_buffer().append(down, down_off, n);
      down_off += n;
      s.conn[1]->push(s.now, s.ep[1]);
    } else if (s.ep[1].peer_fin && down_off == down.size() && !closed_down) {
      closed_down = true;
      s.conn[1]->close(s.now, s.ep[1]);
    }
    if (!s.step()) break;
  }
  if (std::getenv("PG_TCP_TRACE"))
    std::fprintf(stderr, "client %s server %s t=%lld sent=%llu dropped=%llu\n", state_name(s.conn[0]->state()),
                 s.conn[1] ? state_name(s.conn[1]->state()) : "-", (long long)s.now, (unsigned long long)s.sent,
                 (unsigned long long)s.dropped);
  ASSERT_FALSE(s.ep[0].reset);
  ASSERT_FALSE(s.ep[1].reset);
  ASSERT_EQ(s.ep[1].received.size(), up.size());
  EXPECT_TRUE(s.ep[1].received == up) << "server got corrupted bytes";
  ASSERT_EQ(s.ep[0].received.size(), down.size());
  EXPECT_TRUE(s.ep[0].received == down) << "client got corrupted bytes";
  EXPECT_TRUE(s.ep[0].peer_fin);
  EXPECT_TRUE(s.ep[1].peer_fin);
  // Both ends are fully closed: the server after LAST_ACK, the client after TIME_WAIT.
  EXPECT_EQ(s.conn[1]->state(), tcp_state::closed);
  EXPECT_EQ(s.conn[0]->state(), tcp_state::closed);
  if (lc.loss > 0) {
    EXPECT_GT(s.dropped, 0u);
    EXPECT_GT(s.conn[0]->retransmits() + s.conn[1]->retransmits(), 0u);
  }
}

}  // namespace

TEST(TcpFakeLink, LosslessTransferBothWays) {
  link_config lc;
  lc.loss = lc.dup = lc.reorder = 0;
  run_transfer(seed_from_env(1), lc, 1 << 20, 256 * 1024);
}

TEST(TcpFakeLink, FivePercentLossLongTransferIsExact) {
  run_transfer(seed_from_env(42), link_config{}, 4 << 20, 512 * 1024);
}

TEST(TcpFakeLink, HeavyReorderingAndDuplication) {
  link_config lc;
  lc.loss = 0.02;
  lc.dup = 0.2;
  lc.reorder = 0.3;
  run_transfer(seed_from_env(7), lc, 1 << 20, 1 << 20);
}

TEST(TcpFakeLink, ManySeedsSmallTransfers) {
  const std::uint64_t base_seed = seed_from_env(1000);
  link_config lc;
  lc.loss = 0.1;
  for (std::uint64_t s = base_seed; s < base_seed + 20; ++s) run_transfer(s, lc, 100 * 1000, 20 * 1000);
}
