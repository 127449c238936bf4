// The worst single step of a subscription burst (issue 15 item 5): a stream's 74,000 subjects
// arrive on a client shard as 74,000 sub_adds, each applied as dispatcher::apply does (a
// subscription object, the per-connection map `_remote[conn][sid]`, the sublist insert at a
// level holding 74,000 literals). Reported per run: `max_step_us`, the slowest single apply
// (a whole-table rehash shows here), `p999_step_us` and the mean, in thread CPU time
// (CLOCK_THREAD_CPUTIME_ID: a preemption by another process on a shared machine is not the
// step's cost; wall time would show it), over every repetition. The maps alone too:
// std::unordered_map against base::inc_map (incremental growth).
//
//   build-test/bench/micro/bench_sub_burst --benchmark_filter=Burst
#include <benchmark/benchmark.h>

#include <algorithm>
#include <ctime>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "src/base/inc_map.h"
#include "src/core/sublist.h"

namespace {

using core::sublist;
using core::subscription;

double cpu_ns() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return double(ts.tv_sec) * 1e9 + double(ts.tv_nsec);
}

// `steps`: every step of every iteration, `n` a run. `median_max_us`: the median over the
// iterations of each one's slowest step (a rehash is in every run; a hypervisor's steal or
// a page fault that hit one run is not).
void report(benchmark::State& state, std::vector<double>& steps, std::size_t n) {
  std::vector<double> maxima;
  for (std::size_t i = 0; i + n <= steps.size(); i += n)
    maxima.push_back(*std::max_element(steps.begin() + std::ptrdiff_t(i), steps.begin() + std::ptrdiff_t(i + n)));
  std::sort(maxima.begin(), maxima.end());
  std::sort(steps.begin(), steps.end());
  double sum = 0;
  for (double s : steps) sum += s;
  state.counters["median_max_us"] = maxima[maxima.size() / 2] / 1000.0;
  state.counters["max_step_us"] = steps.back() / 1000.0;
  state.counters["p999_step_us"] = steps[steps.size() * 999 / 1000] / 1000.0;
  state.counters["mean_step_us"] = sum / double(steps.size()) / 1000.0;
}

template <template <class, class, class, class> class Map>
void BM_SubBurst(benchmark::State& state) {
  const auto n = static_cast<std::size_t>(state.range(0));
  std::vector<std::string> subjects, sids;
  for (std::size_t i = 0; i < n; ++i) {
    subjects.push_back("b." + std::to_string(i) + ".x");
    sids.push_back("_pg" + std::to_string(i + 1));
  }
  using remote_map = Map<std::string, std::unique_ptr<subscription>, std::hash<std::string>, std::equal_to<std::string>>;
  std::vector<double> steps;
  // Kept until every run is done: freeing 74,000 nodes between runs leaves glibc's next large
  // allocation consolidating them (~4 ms in one step, the allocator's, not the burst's).
  std::vector<std::unique_ptr<sublist>> lists;
  std::vector<std::unique_ptr<remote_map>> maps;
  for (auto _ : state) {
    sublist& sl = *lists.emplace_back(std::make_unique<sublist>());
    remote_map& remote = *maps.emplace_back(std::make_unique<remote_map>());
    for (std::size_t i = 0; i < n; ++i) {
      const double t0 = cpu_ns();
      auto s = std::make_unique<subscription>();
      s->subject = subjects[i];
      s->sid = sids[i];
      auto& slot = remote[s->sid];
      if (sl.insert(s.get()).ok()) slot = std::move(s);
      steps.push_back(cpu_ns() - t0);
    }
  }
  report(state, steps, n);
  for (std::size_t i = 0; i < maps.size(); ++i)  // after the timed loop
    for (auto& [sid, s] : *maps[i]) lists[i]->remove(s.get());
}

template <class K, class V, class H, class E>
using std_map = std::unordered_map<K, V, H, E>;
template <class K, class V, class H, class E>
using inc_map = base::inc_map<K, V, H, E>;

BENCHMARK_TEMPLATE(BM_SubBurst, std_map)->Arg(74'000)->Unit(benchmark::kMillisecond)->Iterations(5);
BENCHMARK_TEMPLATE(BM_SubBurst, inc_map)->Arg(74'000)->Unit(benchmark::kMillisecond)->Iterations(5);

// The map alone: n inserts of string keys, the slowest one.
template <template <class, class, class, class> class Map>
void BM_MapBurst(benchmark::State& state) {
  const auto n = static_cast<std::size_t>(state.range(0));
  std::vector<std::string> keys;
  for (std::size_t i = 0; i < n; ++i) keys.push_back("_pg" + std::to_string(i + 1));
  using map = Map<std::string, int, std::hash<std::string>, std::equal_to<std::string>>;
  std::vector<double> steps;
  std::vector<std::unique_ptr<map>> maps;  // as above
  for (auto _ : state) {
    map& m = *maps.emplace_back(std::make_unique<map>());
    for (std::size_t i = 0; i < n; ++i) {
      const double t0 = cpu_ns();
      m.try_emplace(keys[i], int(i));
      steps.push_back(cpu_ns() - t0);
    }
    benchmark::DoNotOptimize(m.size());
  }
  report(state, steps, n);
}

BENCHMARK_TEMPLATE(BM_MapBurst, std_map)->Arg(74'000)->Unit(benchmark::kMillisecond)->Iterations(5);
BENCHMARK_TEMPLATE(BM_MapBurst, inc_map)->Arg(74'000)->Unit(benchmark::kMillisecond)->Iterations(5);

// Lookups after the burst (the publish path's cost): a hit in a map of n.
template <template <class, class, class, class> class Map>
void BM_MapFind(benchmark::State& state) {
  const auto n = static_cast<std::size_t>(state.range(0));
  std::vector<std::string> keys;
  Map<std::string, int, std::hash<std::string>, std::equal_to<std::string>> m;
  for (std::size_t i = 0; i < n; ++i) {
    keys.push_back("b" + std::to_string(i));
    m.try_emplace(keys.back(), int(i));
  }
  std::size_t i = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(m.find(keys[i]));
    i = (i + 7919) % n;
  }
  state.SetItemsProcessed(state.iterations());
}

BENCHMARK_TEMPLATE(BM_MapFind, std_map)->Arg(74'000);
BENCHMARK_TEMPLATE(BM_MapFind, inc_map)->Arg(74'000);

}  // namespace

BENCHMARK_MAIN();
