// The publish path's header lookups: one parse_js_headers pass against the find_header scans
// it replaced (one per header name the plain and atomic-batch paths ask about).
#include <benchmark/benchmark.h>

#include <string>

#include "src/js/js_headers.h"
#include "src/js/json_util.h"

namespace {

// An atomic batch message as libnats sends it, and a plain publish with a Msg-Id.
const std::string kBatch = "NATS/1.0\r\nNats-Batch-Id: 8cVIG6oH2ZSpqC4m3H1Ahv\r\nNats-Batch-Sequence: 517\r\n\r\n";
const std::string kMsgId = "NATS/1.0\r\nNats-Msg-Id: 8cVIG6oH2ZSpqC4m3H1Ahv-517\r\n\r\n";

const char* const kNames[] = {"Nats-Expected-Stream", "Nats-Batch-Id", "Nats-Batch-Sequence", "Nats-Batch-Commit",
                              "Nats-Incr", "Nats-TTL", "Nats-Msg-Id",
                              "Nats-Expected-Last-Subject-Sequence-Subject", "Nats-Expected-Last-Subject-Sequence",
                              "Nats-Expected-Last-Sequence", "Nats-Expected-Last-Msg-Id", "Nats-Rollup"};

void find_header_per_name(benchmark::State& st, const std::string& block) {
  for (auto _ : st)
    for (const char* n : kNames) benchmark::DoNotOptimize(js::find_header(block, n));
}

void one_pass(benchmark::State& st, const std::string& block) {
  for (auto _ : st) benchmark::DoNotOptimize(js::parse_js_headers(block));
}

BENCHMARK_CAPTURE(find_header_per_name, batch_msg, kBatch);
BENCHMARK_CAPTURE(one_pass, batch_msg, kBatch);
BENCHMARK_CAPTURE(find_header_per_name, msg_id, kMsgId);
BENCHMARK_CAPTURE(one_pass, msg_id, kMsgId);

}  // namespace

BENCHMARK_MAIN();
