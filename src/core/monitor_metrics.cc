// /metrics: Prometheus text exposition (beyond nats-server, which has none). Server and
// per-shard counters from the shards' snapshots; per-stream and per-consumer series and the
// PubAck latency histograms from JetStream's thread.
#include <fmt/format.h>

#include "src/core/monitor.h"
#include "src/core/monitor_types.h"
#include "src/core/server.h"

namespace core {
namespace {

struct writer {
  std::string out;
  void family(const char* name, const char* type, const char* help) {
    out += fmt::format("# HELP {} {}\n# TYPE {} {}\n", name, help, name, type);
  }
  void sample(const char* name, const std::string& labels, double v) {
    out += fmt::format("{}{}{}{} {}\n", name, labels.empty() ? "" : "{", labels, labels.empty() ? "" : "}", v);
  }
};

}  // namespace

http_reply monitor_metrics(server& srv, const http_query&) {
  const auto snaps = collect_snapshots(srv, {});
  const server_shared& sh = srv.shared();
  writer w;
  w.family("peregrine_info", "gauge", "Server identity; the value is always 1.");
  w.sample("peregrine_info", fmt::format("server_id=\"{}\",server_name=\"{}\"", sh.server_id, sh.server_name), 1);
  w.family("peregrine_connections", "gauge", "Client connections open now.");
  w.sample("peregrine_connections", "", sh.connections.load());
  w.family("peregrine_connections_total", "counter", "Client connections accepted since start.");
  w.sample("peregrine_connections_total", "", double(sh.total_connections.load()));
  w.family("peregrine_lame_duck", "gauge", "1 while in lame duck mode.");
  w.sample("peregrine_lame_duck", "", sh.lame_duck_since_ns.load() != 0 ? 1 : 0);

  struct per_shard {
    const char* name;
    const char* type;
    const char* help;
    std::uint64_t (*get)(const shard_snapshot&);
  };
  static const per_shard kSeries[] = {
      {"peregrine_shard_in_msgs_total", "counter", "Messages published by this shard's clients.",
       [](const shard_snapshot& s) { return s.counters.in_msgs; }},
      {"peregrine_shard_in_bytes_total", "counter", "Payload and header bytes published by this shard's clients.",
       [](const shard_snapshot& s) { return s.counters.in_bytes; }},
      {"peregrine_shard_out_msgs_total", "counter", "Messages delivered to this shard's clients.",
       [](const shard_snapshot& s) { return s.counters.out_msgs; }},
      {"peregrine_shard_out_bytes_total", "counter", "Payload and header bytes delivered to this shard's clients.",
       [](const shard_snapshot& s) { return s.counters.out_bytes; }},
      {"peregrine_shard_connections", "gauge", "Connections owned by the shard.",
       [](const shard_snapshot& s) { return s.clients; }},
      {"peregrine_shard_subscriptions", "gauge", "Subscriptions of the shard's connections and services.",
       [](const shard_snapshot& s) { return s.subscriptions; }},
      {"peregrine_shard_slow_consumers_total", "counter", "Connections the shard cut as slow consumers.",
       [](const shard_snapshot& s) { return s.slow_consumers; }},
      {"peregrine_shard_loop_blocks_total", "counter", "Times the shard's loop found no work and blocked.",
       [](const shard_snapshot& s) { return s.loop_blocks; }},
      {"peregrine_shard_calls_total", "counter",
       "Functions other threads had the shard run (monitor snapshots, the system account's worker).",
       [](const shard_snapshot& s) { return s.calls; }},
      {"peregrine_shard_ring_depth", "gauge", "Messages waiting in the shard's inbound rings.",
       [](const shard_snapshot& s) { return s.ring_depth; }},
      {"peregrine_shard_overflow_depth", "gauge", "Posts waiting behind full rings to other shards.",
       [](const shard_snapshot& s) { return s.overflow_depth; }},
      {"peregrine_shard_uring_submissions_total", "counter", "io_uring submission queue entries queued (io_uring transport).",
       [](const shard_snapshot& s) { return s.uring_submissions; }},
      {"peregrine_shard_uring_completions_total", "counter", "io_uring completions handled (io_uring transport).",
       [](const shard_snapshot& s) { return s.uring_completions; }},
  };
  for (const auto& series : kSeries) {
    w.family(series.name, series.type, series.help);
    for (const auto& s : snaps) w.sample(series.name, fmt::format("shard=\"{}\"", s.shard), double(series.get(s)));
  }
  w.out += collect_service_metrics(srv);
  return {200, "text/plain; version=0.0.4; charset=utf-8", std::move(w.out)};
}

}  // namespace core
