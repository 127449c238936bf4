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

[[noreturn]] void child_main(const file_store_config& cfg, int fd) {
  auto r = file_store::open(cfg);
  if (!r.ok()) _exit(3);
  auto& s = **r;
  s.on_durable([fd](std::uint64_t d) {
    if (::write(fd, &d, sizeof d) != sizeof d) _exit(4);
  });
  base::rng rng(std::uint64_t(::getpid()));
  while (true) {
    int batch = int(1 + rng.below(40));
    for (int i = 0; i < batch; ++i) {
      std::uint64_t seq = s.last_seq() + 1;
      if (!s.append(rng.chance(0.5) ? "crash.a" : "crash.b", "", payload_for(seq), 1).ok())
        _exit(5);
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
    ::usleep(useconds_t(30'000 + rng.below(250'000)));
    ::kill(pid, SIGKILL);
    int status = 0;
    ::waitpid(pid, &status, 0);
    ASSERT_TRUE(WIFSIGNALED(status)) << "child exited early with " << WEXITSTATUS(status);
    std::uint64_t reported = 0, v;
    while (::read(p[0], &v, sizeof v) == sizeof v) reported = std::max(reported, v);
    ::close(p[0]);

    auto r = file_store::open(cfg);
    ASSERT_TRUE(r.ok());
    auto& s = **r;
    SCOPED_TRACE("round " + std::to_string(rounds) + " reported durable " +
                 std::to_string(reported) + " recovered last " + std::to_string(s.last_seq()));
    ASSERT_GE(s.last_seq(), reported);
    EXPECT_TRUE(s.recovery().lost_seqs.empty());
    for (std::uint64_t q = 1; q <= s.last_seq(); ++q) {
      auto m = s.load(q);
      ASSERT_TRUE(m.ok()) << "seq " << q;
      ASSERT_EQ(m->payload, payload_for(q)) << "seq " << q;
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
