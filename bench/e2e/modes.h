// peregrine-bench measurement modes, each over real libnats connections to one server URL.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include "bench/e2e/recorder.h"

namespace peregrine::bench {

struct config {
  std::string url = "nats://127.0.0.1:4222";
  std::string tls_ca;        // --tls-ca: connect with TLS, trusting this CA file
  std::string mode = "latency";
  uint64_t count = 100000;   // measured messages (or requests)
  size_t size = 128;         // payload bytes; the first 8 carry the send timestamp
  uint64_t warmup = 1000;    // unmeasured messages sent first
  double duration_s = 60;    // hard cap on the measured phase
  int publishers = 1;        // publisher connections (latency, rr, js-mem/js-file, throughput)
  // Latency modes (latency, rr, js-mem, js-file): open loop by default, each publisher on a
  // fixed schedule of `rate` msgs/s with one message in flight; closed = send the next as soon
  // as the previous completes.
  double rate = 1000;
  bool closed = false;
  double interval_s = 1;     // time series interval
  int subscribers = 4;       // fanout
  int tp_subscribers = 1;    // throughput: subscriber connections, each gets every message (N x M)
  int keys = 100;            // kv-get, js-direct-get: keys (subjects) read round robin
  std::string subject = "pgbench";
  std::string stream;  // the JetStream modes' stream name ("": PGBENCH_<mode's tag>)
  // JetStream consumer modes.
  bool file = false;         // --storage file (else memory)
  int fetch_batch = 100;     // js-fetch: messages per fetch
  bool ack_all = false;      // js-fetch: ack_policy all, one ack per batch (else ack each)
  // js-batch / js-fast: batches in flight over a raw socket with pre-encoded messages (0 =
  // one batch at a time through libnats).
  int pipeline = 0;
  // Clusters (bench/cluster_compare.sh): --url may list several servers (comma separated);
  // streams get num_replicas `replicas`; with `place` leader|follower and `server_names` (the
  // --url servers' server_name, same order) the JetStream modes move their connection to the
  // stream leader or to a follower once the stream exists.
  int replicas = 1;
  std::string server_names;
  std::string place = "any";
  int rounds = 3;            // js-failover: leader kills
  int64_t pub_timeout_ms = 1000;  // js-failover: a publish attempt's wait for its PubAck
};

struct result {
  uint64_t sent = 0;
  uint64_t received = 0;
  double elapsed_s = 0;
  std::vector<int64_t> samples_ns;  // per-message latency of the throughput-style modes
  uint64_t missed_sends = 0;        // open loop: scheduled inside --duration but never sent
  bool paced = false;               // a latency mode: lat and series are filled, not samples_ns
  latency_set lat;                  // paced modes (closed loop: intended == actual send)
  std::vector<series_point> series;
  std::string error;                // non-empty if the run was cut short
  std::string extra_json;           // mode-specific report object ("extra"), JSON text
};

// Live counter the progress reporter reads while a mode runs.
struct progress {
  std::atomic<uint64_t> done{0};
  std::atomic<uint64_t> total{0};
  // Paced modes record their time series here (it outlives the mode, so the reporter thread
  // can read it at any time) and set has_series: the line then shows the last interval.
  interval_series series;
  std::atomic<bool> has_series{false};
};

// Paced modes (paced_modes.cc), each publisher with one message in flight:
// pub connection -> server -> sub connection, one-way latency.
result run_latency(const config& cfg, progress& prog);
// Request/reply round trips against a responder on a separate connection.
result run_request_reply(const config& cfg, progress& prog);
// JetStream: synchronous publish -> PubAck round trips on a memory or file stream.
result run_js_publish(const config& cfg, progress& prog, bool file);
// cfg.publishers connections publish flat out to cfg.tp_subscribers subscribers (N x M); rate =
// messages received by all subscribers together per second.
result run_throughput(const config& cfg, progress& prog);
// Raw sockets: publishers write pre-encoded PUB batches, the subscriber counts bytes. No
// latency samples: it measures the server's message rate without client-library costs.
result run_raw_throughput(const config& cfg, progress& prog);
// Fan-out: one publisher, cfg.subscribers subscriber connections; a sample is publish -> every
// subscriber has the message (kv_modes.cc).
result run_fanout(const config& cfg, progress& prog);
// KV put (sync, PubAck) and get (direct get of one of --keys keys) on bucket PGBENCH.
result run_kv(const config& cfg, progress& prog, bool get);
// JetStream direct get ($JS.API.DIRECT.GET, last by subject) from a stream with allow_direct.
result run_js_direct_get(const config& cfg, progress& prog);
// Pipelined open loop pub -> sub: the publisher never waits (pipelined_mode.cc).
result run_pubsub_pipelined(const config& cfg, progress& prog);
// JetStream push delivery (js_push_modes.cc): publish -> delivery on an explicit-ack push
// consumer, or on an ordered consumer.
result run_js_push(const config& cfg, progress& prog, bool ordered);
// JetStream: async publishes with at most 256 in flight; rate = count / time to the last ack.
result run_js_async(const config& cfg, progress& prog, bool file);

// JetStream atomic batch publishing: batches of cfg.fetch_batch messages (samples: one per
// batch, first send -> commit PubAck).
result run_js_batch(const config& cfg, progress& prog);
// JetStream fast-ingest batches (2.14) of cfg.fetch_batch messages (samples: one per batch,
// first send -> final PubAck).
result run_js_fast_batch(const config& cfg, progress& prog);

// JetStream pull consumer: fetch throughput from a prefilled stream (samples: one per fetch call).
result run_js_fetch(const config& cfg, progress& prog);
// JetStream: core publish into a stream -> delivery on a waiting pull request, one-way latency
// (paced: open loop at --rate, or --closed).
result run_js_consume_latency(const config& cfg, progress& prog);
// JetStream: ack sync round trips on fetched messages.
result run_js_ack_rtt(const config& cfg, progress& prog);

// JetStream failover (js_failover_mode.cc): sync publishes with retries to a replicated stream
// while the driving script kill -9s its leader --rounds times (a line protocol on stdin and
// stdout); per round the gap to the next ack, then a read-back of every acknowledged message.
result run_js_failover(const config& cfg, progress& prog);

}  // namespace peregrine::bench
