// Sublist match cost: literal and wildcard subjects, cache hit vs miss, at 10k subscriptions.
#include <benchmark/benchmark.h>

#include <memory>
#include <string>
#include <vector>

#include "src/core/sublist.h"

namespace {

using core::sublist;
using core::subscription;

// 10k subscriptions shaped like a busy server: per-client inboxes, per-entity literal
// subjects, and a few wildcard and queue subscriptions.
struct fixture {
  std::vector<std::unique_ptr<subscription>> subs;
  sublist sl;
  explicit fixture(std::size_t n, std::size_t cache_max, bool wildcards) : sl(cache_max) {
    auto add = [&](std::string subject, std::string queue = "") {
      auto s = std::make_unique<subscription>();
      s->subject = std::move(subject);
      s->queue = std::move(queue);
      if (!sl.insert(s.get()).ok()) std::abort();
      subs.push_back(std::move(s));
    };
    for (std::size_t i = 0; i < n; ++i) {
      switch (i % 4) {
        case 0: add("_INBOX.client" + std::to_string(i) + ".*"); break;
        case 1: add("orders." + std::to_string(i % 500) + ".created"); break;
        case 2: add("svc.req." + std::to_string(i % 200), "workers"); break;
        default: add("telemetry.host" + std::to_string(i) + ".cpu"); break;
      }
    }
    if (wildcards) {
      add("orders.*.created");
      add("orders.>");
      add("telemetry.*.cpu", "agg");
      add(">");
    }
  }
};

void BM_MatchLiteralHit(benchmark::State& state) {
  fixture f(static_cast<std::size_t>(state.range(0)), 4096, false);
  const std::string subject = "orders.42.created";
  for (auto _ : state) benchmark::DoNotOptimize(&f.sl.match(subject));
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_MatchLiteralHit)->Arg(10'000);

void BM_MatchWildcardHit(benchmark::State& state) {
  fixture f(static_cast<std::size_t>(state.range(0)), 4096, true);
  const std::string subject = "orders.42.created";
  for (auto _ : state) benchmark::DoNotOptimize(&f.sl.match(subject));
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_MatchWildcardHit)->Arg(10'000);

// Cache off: every call walks the trie (the cost of a miss, without cache insertion).
void BM_MatchLiteralMiss(benchmark::State& state) {
  fixture f(static_cast<std::size_t>(state.range(0)), 0, false);
  const std::string subject = "orders.42.created";
  for (auto _ : state) benchmark::DoNotOptimize(&f.sl.match(subject));
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_MatchLiteralMiss)->Arg(10'000);

void BM_MatchWildcardMiss(benchmark::State& state) {
  fixture f(static_cast<std::size_t>(state.range(0)), 0, true);
  const std::string subject = "orders.42.created";
  for (auto _ : state) benchmark::DoNotOptimize(&f.sl.match(subject));
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_MatchWildcardMiss)->Arg(10'000);

// Inbox replies: `_INBOX.clientN.<token>` hits a '*' subscription; subjects rotate over
// more distinct values than the cache holds, so most calls miss and insert into the cache.
void BM_MatchInboxChurn(benchmark::State& state) {
  fixture f(static_cast<std::size_t>(state.range(0)), 4096, true);
  std::vector<std::string> subjects;
  for (int i = 0; i < 16384; ++i) subjects.push_back("_INBOX.client" + std::to_string((i * 4) % 10000) + ".r" + std::to_string(i));
  std::size_t i = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(&f.sl.match(subjects[i]));
    i = (i + 1) & 16383;
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_MatchInboxChurn)->Arg(10'000);

void BM_HasMatchNoSubscriber(benchmark::State& state) {
  fixture f(static_cast<std::size_t>(state.range(0)), 4096, false);
  const std::string subject = "nobody.listens.here";
  for (auto _ : state) benchmark::DoNotOptimize(f.sl.has_match(subject));
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_HasMatchNoSubscriber)->Arg(10'000);

// Subscribe + unsubscribe of an inbox-style subscription (cache invalidation included).
void BM_InsertRemove(benchmark::State& state) {
  fixture f(static_cast<std::size_t>(state.range(0)), 4096, true);
  for (int i = 0; i < 1000; ++i) f.sl.match("orders." + std::to_string(i) + ".created");  // warm cache
  subscription s;
  s.subject = "_INBOX.fresh.*";
  for (auto _ : state) {
    if (!f.sl.insert(&s).ok()) std::abort();
    f.sl.remove(&s);
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_InsertRemove)->Arg(10'000);

}  // namespace

BENCHMARK_MAIN();
