// Storage benchmarks: append latency per durability point (io_uring O_DIRECT vs a plain
// pwrite(+fdatasync) baseline, plus the raw O_DIRECT 4 KiB write it is judged against),
// group-commit throughput with 1 vs 64 concurrent appenders, reads, and recovery time.
// Latencies are measured per operation; p50/p99 are reported as counters (us).
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "io/aligned_buf.h"
#include "storage/memory_store.h"
#include "io/sync_backend.h"
#include "io/uring_backend.h"
#include "src/base/rng.h"
#include "storage/file_store.h"

namespace {

using clk = std::chrono::steady_clock;
using storage::durability;

struct bench_dir {
  std::string path;
  bench_dir() {
    char tmpl[] = "/tmp/pg_bench_XXXXXX";
    path = ::mkdtemp(tmpl);
  }
  ~bench_dir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
};

std::unique_ptr<io::backend> make(int kind, const std::string& dir) {
  if (kind == 0) return io::make_backend(dir, io::backend_kind::uring);
  return std::make_unique<io::sync_backend>(false);  // plain buffered pwrite(+fdatasync)
}

void report_latency(benchmark::State& st, std::vector<double>& us) {
  if (us.empty()) return;
  std::sort(us.begin(), us.end());
  st.counters["p50_us"] = us[us.size() / 2];
  st.counters["p99_us"] = us[std::min(us.size() - 1, us.size() * 99 / 100)];
  st.counters["p999_us"] = us[std::min(us.size() - 1, us.size() * 999 / 1000)];
}

std::unique_ptr<storage::file_store> open_store(const std::string& dir, durability d, int kind,
                                                std::uint64_t block = 64ull << 20) {
  storage::file_store_config c;
  c.dir = dir;
  c.dur = d;
  c.block_size = block;
  auto r = storage::file_store::open(c, make(kind, dir));
  if (!r.ok()) std::abort();
  return std::move(*r);
}

// Raw O_DIRECT 4 KiB writes at new sequential offsets of a preallocated file: the floor
// an append at `write` is compared with.
void BM_raw_odirect_4k_write(benchmark::State& st) {
  bench_dir d;
  auto be = io::make_backend(d.path, io::backend_kind::uring);
  auto fh = be->open(d.path + "/raw", true);
  constexpr std::uint64_t kFile = 64ull << 20;
  (void)be->allocate(*fh, kFile);
  io::aligned_buf b(io::kDioAlign);
  b.resize(io::kDioAlign);
  if (st.range(1)) {  // prefilled: written once, so overwrites need no extent conversion
    io::aligned_buf z(1 << 20);
    z.resize(1 << 20);
    for (std::uint64_t o = 0; o < kFile; o += z.size()) {
      (void)be->submit_write(*fh, o, z.data(), z.size(), false, 1);
      io::completion c;
      while (be->reap(&c, 1, true) == 0) {
      }
    }
    (void)be->datasync(*fh);
  }
  std::vector<double> us;
  std::uint64_t off = 0;
  for (auto _ : st) {
    auto t0 = clk::now();
    (void)be->submit_write(*fh, off, b.data(), io::kDioAlign, st.range(0) == 1, 1);
    io::completion c;
    while (be->reap(&c, 1, true) == 0) {
    }
    us.push_back(std::chrono::duration<double, std::micro>(clk::now() - t0).count());
    off = (off + io::kDioAlign) % kFile;
  }
  report_latency(st, us);
  be->close(*fh);
}
BENCHMARK(BM_raw_odirect_4k_write)
    ->ArgNames({"dsync", "prefilled"})
    ->ArgsProduct({{0, 1}, {0, 1}})
    ->Iterations(10000)
    ->UseRealTime();

// Each iteration: one append, then polling until it reached the durability point.
void measure_append_latency(benchmark::State& st, storage::file_store& s, const std::string& payload) {
  std::vector<double> us;
  for (auto _ : st) {
    auto t0 = clk::now();
    auto seq = *s.append("bench.latency", "", payload, 1);
    while (s.durable_seq() < seq) {
      if (s.poll() == 0) (void)s.flush();
    }
    us.push_back(std::chrono::duration<double, std::micro>(clk::now() - t0).count());
  }
  report_latency(st, us);
  st.SetLabel(std::string(s.backend_name()));
}

// One append, then wait until it reached the durability point: the publish-ack latency.
void BM_append_latency(benchmark::State& st) {
  bench_dir d;
  auto size = std::size_t(st.range(0));
  auto dur = st.range(1) ? durability::sync : durability::write;
  auto s = open_store(d.path, dur, int(st.range(2)));
  std::string payload(size, 'x');
  measure_append_latency(st, *s, payload);
}
BENCHMARK(BM_append_latency)
    ->ArgNames({"bytes", "sync", "pwrite"})
    ->ArgsProduct({{128, 1024}, {0, 1}, {0, 1}})
    ->Iterations(1500)
    ->UseRealTime();

// Group commit: keep `appenders` appends outstanding (each appender waits for its ack
// before publishing again), sync durability. Reports records per write (= per fdatasync
// with RWF_DSYNC) and throughput.
void BM_group_commit(benchmark::State& st) {
  bench_dir d;
  auto appenders = std::uint64_t(st.range(0));
  auto s = open_store(d.path, durability::sync, int(st.range(1)));
  std::string payload(128, 'g');
  std::uint64_t records = 0;
  auto t0 = clk::now();
  for (auto _ : st) {
    while (s->last_seq() - s->durable_seq() < appenders) {
      (void)s->append("bench.gc", "", payload, 1);
      ++records;
    }
    if (s->poll() == 0) (void)s->flush();
  }
  (void)s->flush();
  double secs = std::chrono::duration<double>(clk::now() - t0).count();
  const auto& io = s->stats();
  st.counters["recs_per_sync"] = io.writes ? double(io.records) / double(io.writes) : 0;
  st.counters["recs_per_s"] = double(records) / secs;
  st.counters["MB_per_s"] = double(records) * 128 / secs / 1e6;
  st.SetLabel(std::string(s->backend_name()));
}
BENCHMARK(BM_group_commit)
    ->ArgNames({"appenders", "pwrite"})
    ->ArgsProduct({{1, 64}, {0, 1}})
    ->Iterations(1500)
    ->UseRealTime();

// The same two with other stores on the thread, all sharing its io_uring (io/uring_hub.h)
// and the fd cache: idle neighbours (each holding one message), or busy ones that keep
// their own 64 appends outstanding. The measured store should not notice either.
// own_ring: each neighbour on a ring of its own (the layout before the shared ring), to tell
// the sharing's cost from that of merely having 1,000 stores and their files.
std::vector<std::unique_ptr<storage::file_store>> neighbours(const std::string& dir, int n, bool own_ring = false) {
  std::vector<std::unique_ptr<storage::file_store>> v;
  for (int i = 0; i < n; ++i) {
    storage::file_store_config c;
    c.dir = dir + "/n" + std::to_string(i);
    c.block_size = 8ull << 20;
    std::unique_ptr<io::backend> be;
    if (own_ring) {
      std::filesystem::create_directories(c.dir);
      auto u = std::make_unique<io::uring_backend>(true);
      if (!u->init(64)) std::abort();
      be = std::move(u);
    }
    auto r = storage::file_store::open(c, std::move(be));
    if (!r.ok()) std::abort();
    (void)(*r)->append("n", "", "hello", 1);
    (void)(*r)->flush();
    v.push_back(std::move(*r));
  }
  return v;
}

// The store measured beside the neighbours, in its own directory (made before the O_DIRECT
// probe runs on it).
std::unique_ptr<storage::file_store> measured_store(const bench_dir& d, durability dur) {
  std::filesystem::create_directories(d.path + "/main");
  return open_store(d.path + "/main", dur, 0);
}

void BM_append_latency_beside(benchmark::State& st) {
  bench_dir d;
  auto others = neighbours(d.path, int(st.range(0)), st.range(1) != 0);
  auto s = measured_store(d, durability::write);
  std::string payload(128, 'x');
  measure_append_latency(st, *s, payload);
}
BENCHMARK(BM_append_latency_beside)
    ->ArgNames({"idle_stores", "own_rings"})
    ->Args({0, 0})
    ->Args({1000, 0})
    ->Args({1000, 1})
    ->Iterations(1500)
    ->UseRealTime();

void BM_group_commit_beside(benchmark::State& st) {
  bench_dir d;
  auto busy = neighbours(d.path, int(st.range(0)));
  auto s = measured_store(d, durability::sync);
  std::string payload(128, 'g');
  std::uint64_t records = 0;
  auto t0 = clk::now();
  for (auto _ : st) {
    while (s->last_seq() - s->durable_seq() < 64) {
      (void)s->append("bench.gc", "", payload, 1);
      ++records;
    }
    for (auto& b : busy) {
      while (b->last_seq() - b->durable_seq() < 64) (void)b->append("bench.gc", "", payload, 1);
      b->poll();
    }
    if (s->poll() == 0) (void)s->flush();
  }
  (void)s->flush();
  double secs = std::chrono::duration<double>(clk::now() - t0).count();
  const auto& io = s->stats();
  st.counters["recs_per_sync"] = io.writes ? double(io.records) / double(io.writes) : 0;
  st.counters["recs_per_s"] = double(records) / secs;
  st.SetLabel(std::string(s->backend_name()));
}
BENCHMARK(BM_group_commit_beside)->ArgNames({"busy_stores"})->Arg(0)->Arg(8)->Iterations(1500)->UseRealTime();

struct read_fixture {
  bench_dir d;
  std::unique_ptr<storage::file_store> s;
  explicit read_fixture(std::uint64_t cache) {
    storage::file_store_config c;
    c.dir = d.path;
    c.cache_bytes = cache;
    c.block_size = 16ull << 20;
    s = storage::file_store::open(c).value();
    std::string payload(1000, 'r');
    for (int i = 0; i < 50'000; ++i)
      (void)s->append("kv." + std::to_string(i % 1000), "", payload, 1);
    (void)s->flush();
  }
};

void BM_read_by_seq(benchmark::State& st) {
  read_fixture f(st.range(0) ? 1ull << 30 : 0);
  base::rng r(1);
  for (auto _ : st) benchmark::DoNotOptimize(f.s->load(1 + r.below(50'000)));
  st.SetLabel(st.range(0) ? "cache" : "disk (O_DIRECT read)");
}
BENCHMARK(BM_read_by_seq)->ArgNames({"cached"})->Arg(0)->Arg(1);

void BM_last_by_subject(benchmark::State& st) {
  read_fixture f(1ull << 30);
  base::rng r(2);
  for (auto _ : st)
    benchmark::DoNotOptimize(f.s->load_last("kv." + std::to_string(r.below(1000))));
}
BENCHMARK(BM_last_by_subject);

// Recovery of a store of PG_BENCH_RECOVERY_MB (default 64) MiB of 1 KiB messages.
void BM_recovery(benchmark::State& st) {
  std::uint64_t mb = 64;
  if (const char* e = std::getenv("PG_BENCH_RECOVERY_MB")) mb = std::strtoull(e, nullptr, 10);
  bench_dir d;
  storage::file_store_config c;
  c.dir = d.path;
  {
    auto s = storage::file_store::open(c).value();
    std::string payload(1024, 'v');
    std::uint64_t n = mb * 1024 * 1024 / 1100;
    for (std::uint64_t i = 0; i < n; ++i) {
      (void)s->append("rec." + std::to_string(i % 100), "", payload, 1);
      if (i % 256 == 0) s->poll();
    }
    (void)s->close();
  }
  std::uint64_t msgs = 0;
  for (auto _ : st) {
    auto s = storage::file_store::open(c).value();
    msgs = s->state().msgs;
    st.counters["recovery_ms"] = double(s->recovery().elapsed_ns) / 1e6;
  }
  st.counters["msgs"] = double(msgs);
  st.counters["store_MiB"] = double(mb);
}
BENCHMARK(BM_recovery)->Iterations(2)->UseRealTime()->Unit(benchmark::kMillisecond);

// A replicated stream's snapshot clones its memory_store on the owner thread (the helper
// thread encodes the clone): the owner's cost, for a store like r3-async's 7 MB one (43,203
// messages of 128 B on one subject).
static void BM_memory_store_clone(benchmark::State& state) {
  storage::memory_store s(storage::byte_accounting::file);
  const std::string payload(128, 'x');
  for (int i = 0; i < 43203; ++i) (void)s.append("PGBENCH.file", "", payload, 1000 + i);
  for (auto _ : state) {
    auto c = s.clone();
    benchmark::DoNotOptimize(c.get());
  }
  state.SetItemsProcessed(state.iterations() * 43203);
}
BENCHMARK(BM_memory_store_clone)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
