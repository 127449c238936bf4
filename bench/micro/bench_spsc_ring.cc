// SPSC ring throughput: push/pop on one thread, and producer/consumer on two threads.
#include <benchmark/benchmark.h>

#include <atomic>
#include <cstdint>
#include <thread>

#include "src/base/spsc_ring.h"

namespace {

void BM_SpscPushPopSingleThread(benchmark::State& state) {
  base::spsc_ring<std::uint64_t> ring(1024);
  std::uint64_t v = 0, sum = 0;
  for (auto _ : state) {
    ring.try_push(v++);
    sum += *ring.try_pop();
  }
  benchmark::DoNotOptimize(sum);
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_SpscPushPopSingleThread);

// Fill then drain in batches, the way a shard drains its inbound ring.
void BM_SpscBatchSingleThread(benchmark::State& state) {
  const auto batch = static_cast<std::size_t>(state.range(0));
  base::spsc_ring<std::uint64_t> ring(1024);
  std::uint64_t sum = 0;
  for (auto _ : state) {
    for (std::size_t i = 0; i < batch; ++i) ring.try_push(i);
    ring.drain([&](std::uint64_t&& x) { sum += x; });
  }
  benchmark::DoNotOptimize(sum);
  state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(batch));
}
BENCHMARK(BM_SpscBatchSingleThread)->Arg(64)->Arg(512);

// A producer thread pushes kItems while this thread drains; spins on full/empty.
void BM_SpscTwoThreads(benchmark::State& state) {
  constexpr std::uint64_t kItems = 1 << 20;
  const auto capacity = static_cast<std::size_t>(state.range(0));
  for (auto _ : state) {
    base::spsc_ring<std::uint64_t> ring(capacity);
    std::thread producer([&] {
      for (std::uint64_t i = 0; i < kItems;) {
        if (ring.try_push(i)) {
          ++i;
        } else {
          std::this_thread::yield();  // only 2 cores on the test box: let the consumer run
        }
      }
    });
    std::uint64_t got = 0, sum = 0;
    while (got < kItems) {
      const auto n = ring.drain([&](std::uint64_t&& x) { sum += x; });
      if (n == 0) std::this_thread::yield();
      got += n;
    }
    producer.join();
    benchmark::DoNotOptimize(sum);
  }
  state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(kItems));
}
BENCHMARK(BM_SpscTwoThreads)->Arg(1024)->Arg(65536)->UseRealTime()->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
