// A real crash: a child process appends with the `write` durability point and reports
// every durable sequence over a pipe; the parent kill -9s it at a random moment, reopens
// the store and checks that every reported sequence is present and intact. Several
// rounds on the same directory, each child continuing where recovery left off.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <set>
#include <vector>

#include "src/base/rng.h"
#include "storage/file_store.h"
#include "tests/unit/storage/temp_dir.h"

namespace storage {
namespace {

std::string payload_for(std::uint64_t seq) {
  std::size_t n = 64 + (seq * 2654435761u) % 3000;
  std::string p(n, 'a');
  for (std::size_t i = 0; i < n; ++i) p[i] = char('a' + (seq + i) % 26);
  return p;
}

// Pipe messages: {kind, a, b}. kind 1: a = durable seq. kind 2: seq a was removed before
// seq b was assigned (so the removal is durable once b is). kind 3: seq a is about to be
// removed (it may or may not come back). kind 4: the child is ready.
struct note {
  std::uint64_t kind, a, b;
};

[[noreturn]] void child_main(const file_store_config& cfg, int fd) {
  auto r = file_store::open(cfg);
  if (!r.ok()) _exit(3);
  auto& s = **r;
  auto send = [fd](note n) {
    if (::write(fd, &n, sizeof n) != sizeof n) _exit(4);
  };
  s.on_durable([&](std::uint64_t d) { send({1, d, 0}); });
  send({4, 0, 0});  // recovered and appending: the parent starts its timer now
  base::rng rng(std::uint64_t(::getpid()));
  while (true) {
    int batch = int(1 + rng.below(40));
    for (int i = 0; i < batch; ++i) {
      std::uint64_t seq = s.last_seq() + 1;
      if (!s.append(rng.chance(0.5) ? "crash.a" : "crash.b", "", payload_for(seq), 1).ok())
        _exit(5);
    }
    if (rng.chance(0.3) && s.last_seq() > s.first_seq()) {
      std::uint64_t victim = s.first_seq() + rng.below(s.last_seq() - s.first_seq());
      // Intent first: an erase rewrites the record on disk at once, before any later note.
      send({3, victim, 0});
      if (s.remove(victim, rng.chance(0.3)).ok()) send({2, victim, s.last_seq() + 1});
    }
    s.poll();
  }
}

TEST(crash, kill9_keeps_every_reported_durable_seq) {
  storage_test::temp_dir d;
  file_store_config cfg;
  cfg.dir = d.path();
  cfg.block_size = 1 << 20;
  cfg.dur = durability::write;
  base::rng rng(0xdeadbeef);
  std::uint64_t checked_upto = 0;
  std::set<std::uint64_t> ever_removed, durably_removed;
  auto t_end = std::chrono::steady_clock::now() + std::chrono::seconds(15);
  int rounds = 0;
  for (; rounds < 8 && std::chrono::steady_clock::now() < t_end; ++rounds) {
    int p[2];
    ASSERT_EQ(::pipe(p), 0);
    pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      ::close(p[0]);
      child_main(cfg, p[1]);
    }
    ::close(p[1]);
    note ready{};
    ASSERT_EQ(::read(p[0], &ready, sizeof ready), ssize_t(sizeof ready));
    ASSERT_EQ(ready.kind, 4u);
    ::usleep(useconds_t(30'000 + rng.below(250'000)));
    ::kill(pid, SIGKILL);
    int status = 0;
    ::waitpid(pid, &status, 0);
    ASSERT_TRUE(WIFSIGNALED(status)) << "child exited early with " << WEXITSTATUS(status);
    std::uint64_t reported = 0;
    std::vector<note> removals;
    note n;
    while (::read(p[0], &n, sizeof n) == sizeof n) {
      if (n.kind == 1) reported = std::max(reported, n.a);
      if (n.kind == 2) removals.push_back(n);
      if (n.kind == 3) ever_removed.insert(n.a);
    }
    ::close(p[0]);
    for (const note& rm : removals) {
      ever_removed.insert(rm.a);
      if (reported >= rm.b) durably_removed.insert(rm.a);
    }

    auto r = file_store::open(cfg);
    ASSERT_TRUE(r.ok());
    auto& s = **r;
    SCOPED_TRACE("round " + std::to_string(rounds) + " reported durable " +
                 std::to_string(reported) + " recovered last " + std::to_string(s.last_seq()));
    ASSERT_GE(s.last_seq(), reported);
    EXPECT_TRUE(s.recovery().lost_seqs.empty());
    // Every seq since the previous round, plus a sample of older ones (reads hit the disk).
    std::vector<std::uint64_t> qs;
    for (std::uint64_t q = checked_upto > 50 ? checked_upto - 50 : 1; q <= s.last_seq(); ++q)
      qs.push_back(q);
    for (int k = 0; k < 300 && checked_upto > 0; ++k) qs.push_back(1 + rng.below(checked_upto));
    qs.insert(qs.end(), durably_removed.begin(), durably_removed.end());
    for (std::uint64_t q : qs) {
      auto m = s.load(q);
      if (durably_removed.count(q)) {
        ASSERT_EQ(m.code(), base::errc::not_found) << "durably removed seq " << q << " is back";
        continue;
      }
      if (m.ok()) {
        ASSERT_EQ(m->payload, payload_for(q)) << "seq " << q;
      } else {
        ASSERT_TRUE(ever_removed.count(q)) << "seq " << q << " lost";
      }
    }
    std::printf("round %d: reported durable %llu, recovered %llu, torn bytes cut %llu\n", rounds,
                (unsigned long long)reported, (unsigned long long)s.last_seq(),
                (unsigned long long)s.recovery().truncated_bytes);
    checked_upto = s.last_seq();
    ASSERT_TRUE(s.close().ok());
  }
  EXPECT_GE(rounds, 3);
  EXPECT_GT(checked_upto, 0u);
}

}  // namespace
}  // namespace storage
