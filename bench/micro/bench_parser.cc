// proto::parse_client over recorded-like client traffic: PUB streams of 16 B / 128 B /
// 1 KiB payloads (a third with a reply subject), HPUB with a small header block, and a
// SUB/UNSUB/PING control mix. Each iteration parses a ~256 KiB buffer op by op like a
// connection does; bytes/s and ops/s come from SetBytesProcessed / SetItemsProcessed.
#include <benchmark/benchmark.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "src/proto/parser.h"

namespace {

constexpr std::size_t kStreamBytes = 256 * 1024;

std::string subject(std::size_t i) {
  static const char* const kSubjects[] = {"orders.eu.new", "orders.us.new", "telemetry.host42.cpu",
                                          "events.user.signup", "svc.billing.invoice.created"};
  return kSubjects[i % 5];
}

std::string payload(std::size_t n, std::size_t i) {
  std::string p(n, 'x');
  for (std::size_t k = 0; k < n; ++k) p[k] = char('a' + (k + i) % 26);
  return p;
}

std::string pub_stream(std::size_t size, std::size_t& ops) {
  std::string s;
  ops = 0;
  while (s.size() < kStreamBytes) {
    s += "PUB " + subject(ops);
    if (ops % 3 == 0) s += " _INBOX.Xh2Q0kCHmZbT3sGiU4aSu7." + std::to_string(ops % 1000);
    s += " " + std::to_string(size) + "\r\n" + payload(size, ops) + "\r\n";
    ++ops;
  }
  return s;
}

std::string hpub_stream(std::size_t& ops) {
  const std::string hdr = "NATS/1.0\r\nNats-Msg-Id: 7f3c2a9e\r\nContent-Type: application/json\r\n\r\n";
  std::string s;
  ops = 0;
  while (s.size() < kStreamBytes) {
    const std::string body = payload(128, ops);
    s += "HPUB " + subject(ops);
    if (ops % 3 == 0) s += " _INBOX.Xh2Q0kCHmZbT3sGiU4aSu7." + std::to_string(ops % 1000);
    s += " " + std::to_string(hdr.size()) + " " + std::to_string(hdr.size() + body.size()) + "\r\n";
    s += hdr + body + "\r\n";
    ++ops;
  }
  return s;
}

std::string control_stream(std::size_t& ops) {
  std::string s;
  ops = 0;
  while (s.size() < kStreamBytes) {
    const std::string sid = std::to_string(ops % 5000 + 1);
    switch (ops % 4) {
      case 0: s += "SUB " + subject(ops) + ".* " + sid + "\r\n"; break;
      case 1: s += "SUB " + subject(ops) + " workers " + sid + "\r\n"; break;
      case 2: s += (ops % 8 == 2 ? "UNSUB " + sid + " 10\r\n" : "UNSUB " + sid + "\r\n"); break;
      default: s += "PING\r\n"; break;
    }
    ++ops;
  }
  return s;
}

// Parses the whole buffer op by op; returns the op count (aborts on anything but ops).
std::size_t parse_all(std::string_view s, const proto::parser_limits& l) {
  std::size_t off = 0, n = 0;
  while (off < s.size()) {
    const auto r = proto::parse_client(s.substr(off), l);
    if (r.status != proto::parse_status::op) {
      std::fprintf(stderr, "bench_parser: stream does not parse at %zu\n", off);
      std::abort();
    }
    benchmark::DoNotOptimize(r.op.payload.data());
    off += r.consumed;
    ++n;
  }
  return n;
}

// Connection-style: the stream arrives in `read` byte reads; leftovers are kept and the
// parser is called again only once `needed` bytes are buffered.
std::size_t parse_in_reads(std::string_view s, std::size_t read, std::string& inbuf,
                           const proto::parser_limits& l) {
  std::size_t n = 0, need = 0;
  inbuf.clear();
  for (std::size_t fed = 0; fed < s.size(); fed += read) {
    inbuf.append(s.substr(fed, read));
    if (inbuf.size() < need) continue;
    std::size_t off = 0;
    while (off < inbuf.size()) {
      const auto r = proto::parse_client(std::string_view(inbuf).substr(off), l);
      if (r.status == proto::parse_status::need_more) {
        need = r.needed;
        break;
      }
      benchmark::DoNotOptimize(r.op.payload.data());
      off += r.consumed;
      ++n;
    }
    inbuf.erase(0, off);
  }
  return n;
}

void run(benchmark::State& state, const std::string& s, std::size_t ops) {
  const proto::parser_limits l;
  if (parse_all(s, l) != ops) state.SkipWithError("op count mismatch");
  for (auto _ : state) benchmark::DoNotOptimize(parse_all(s, l));
  state.SetBytesProcessed(std::int64_t(state.iterations()) * std::int64_t(s.size()));
  state.SetItemsProcessed(std::int64_t(state.iterations()) * std::int64_t(ops));
}

void bm_pub(benchmark::State& state) {
  std::size_t ops = 0;
  const std::string s = pub_stream(std::size_t(state.range(0)), ops);
  run(state, s, ops);
}
BENCHMARK(bm_pub)->Arg(16)->Arg(128)->Arg(1024);

void bm_hpub(benchmark::State& state) {
  std::size_t ops = 0;
  const std::string s = hpub_stream(ops);
  run(state, s, ops);
}
BENCHMARK(bm_hpub);

void bm_sub_unsub_ping(benchmark::State& state) {
  std::size_t ops = 0;
  const std::string s = control_stream(ops);
  run(state, s, ops);
}
BENCHMARK(bm_sub_unsub_ping);

void bm_pub_in_reads(benchmark::State& state) {
  std::size_t ops = 0;
  const std::string s = pub_stream(std::size_t(state.range(0)), ops);
  const proto::parser_limits l;
  std::string inbuf;
  inbuf.reserve(2 * 16384 + 4096);
  if (parse_in_reads(s, 16384, inbuf, l) != ops) state.SkipWithError("op count mismatch");
  for (auto _ : state) benchmark::DoNotOptimize(parse_in_reads(s, 16384, inbuf, l));
  state.SetBytesProcessed(std::int64_t(state.iterations()) * std::int64_t(s.size()));
  state.SetItemsProcessed(std::int64_t(state.iterations()) * std::int64_t(ops));
}
BENCHMARK(bm_pub_in_reads)->Arg(128)->Arg(1024);

}  // namespace

BENCHMARK_MAIN();
