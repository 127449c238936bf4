#pragma once
// What the seeded simulations' test drivers share (raft_sim, group_sim, replica_sim): seed
// counts from the environment, a replay line printed if an assertion inside the code under
// test aborts the process, and the loop over a range of seeds that stops after three failures.
#include <gtest/gtest.h>

#include <algorithm>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <unistd.h>

namespace sim_seeds {

#if defined(__SANITIZE_ADDRESS__)
// The CI's ASan pass is a debug build, many times slower: callers run fewer seeds there
// (memory errors show on any seed; the plain pass covers the count).
inline constexpr bool kSanitized = true;
#else
inline constexpr bool kSanitized = false;
#endif

inline std::uint64_t env_or(const char* name, std::uint64_t fallback) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? std::strtoull(v, nullptr, 10) : fallback;
}

namespace detail {
inline char g_abort_line[256] = {0};
inline void on_abort(int) {
  const std::size_t n = std::strlen(g_abort_line);
  if (n > 0) (void)!write(2, g_abort_line, n);
  std::signal(SIGABRT, SIG_DFL);
  std::raise(SIGABRT);
}
}  // namespace detail

// Says `replay` (a command line) on stderr if the process aborts before the next call: an
// assertion inside raft or the server code kills the test without a gtest failure.
inline void on_abort_say(const std::string& replay) {
  std::signal(SIGABRT, detail::on_abort);
  std::snprintf(detail::g_abort_line, sizeof detail::g_abort_line, "\nsimulation aborted: %s\n", replay.c_str());
}

// The seeds a many-seeds test runs: <PREFIX>_FIRST_SEED (default 1), <PREFIX>_SEEDS
// (default `default_count`), <PREFIX>_VERBOSE (one line per seed).
struct seed_range {
  std::uint64_t first = 1;
  std::uint64_t count = 0;
  bool verbose = false;
};

inline seed_range seeds_from_env(const std::string& prefix, std::uint64_t default_count) {
  seed_range r;
  r.first = env_or((prefix + "_FIRST_SEED").c_str(), 1);
  r.count = env_or((prefix + "_SEEDS").c_str(), default_count);
  r.verbose = env_or((prefix + "_VERBOSE").c_str(), 0) != 0;
  return r;
}

// Runs `run(seed)` over the range; it returns an empty string when the seed passed, else the
// failure text (with its replay line), which becomes a gtest failure. Stops after three
// failures. `replay(seed)` is what to print if the seed aborts the process.
template <typename Run, typename Replay>
std::uint64_t run_range(const seed_range& r, Run&& run, Replay&& replay) {
  std::uint64_t failures = 0;
  for (std::uint64_t seed = r.first; seed < r.first + r.count && failures < 3; ++seed) {
    on_abort_say(replay(seed));
    const std::string failure = run(seed);
    if (!failure.empty()) {
      ++failures;
      ADD_FAILURE() << "seed " << seed << ": " << failure;
    }
  }
  return failures;
}

}  // namespace sim_seeds
