// Connection helpers shared by every peregrine-bench mode: owning pointers for libnats objects, one way
// to open a connection (no reconnect, bounded connect timeout) and error texts.
#pragma once

#include <nats/nats.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "bench/e2e/modes.h"

namespace peregrine::bench {

struct nc_closer {
  void operator()(natsConnection* nc) const {
    natsConnection_Close(nc);
    natsConnection_Destroy(nc);
  }
};
using nc_ptr = std::unique_ptr<natsConnection, nc_closer>;
struct sub_deleter {
  void operator()(natsSubscription* s) const { natsSubscription_Destroy(s); }
};
using sub_ptr = std::unique_ptr<natsSubscription, sub_deleter>;
struct js_deleter {
  void operator()(jsCtx* js) const { jsCtx_Destroy(js); }
};
using js_ptr = std::unique_ptr<jsCtx, js_deleter>;

inline int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// "<what>: <status text> (<libnats last error>)".
std::string err_text(const std::string& what, natsStatus s);

// send_asap: write every publish immediately (latency modes) instead of batching (throughput).
// On failure returns null and sets err.
nc_ptr open_conn(const config& cfg, bool send_asap, std::string& err);
// The same to `url` (one server or a comma-separated list) instead of cfg.url.
nc_ptr open_conn_to(const config& cfg, const std::string& url, bool send_asap, std::string& err);
std::vector<std::string> split_list(const std::string& text);
// One URL, or a comma-separated list (natsOptions_SetServers: libnats' SetURL takes one).
natsStatus set_urls(natsOptions* opts, const std::string& urls);

// A connection with a synchronous subscription on `subject`, flushed so the server has it.
struct sync_sub {
  nc_ptr nc;
  sub_ptr sub;
};
sync_sub open_sync_sub(const config& cfg, const std::string& subject, std::string& err);

// A JetStream session on one connection owning a benchmark stream, deleted on destruction.
struct js_session {
  nc_ptr nc;
  js_ptr js;
  std::string stream;
  std::string url;     // the server the connection is on (cfg.url unless placed)
  std::string leader;  // replicated stream: its leader when the session was opened
  js_session() = default;
  js_session(const js_session&) = delete;
  js_session& operator=(const js_session&) = delete;
  ~js_session();
};

// Connects (send_asap when window == 1: one request in flight) and (re)creates stream
// PGBENCH_<tag> capturing `<subject>.>` on memory or file storage. window bounds async publishes.
// Returns an error text, empty on success.
std::string open_stream(const config& cfg, bool file, int64_t window, js_session& s,
                        const std::string& subject, const std::string& tag);

// Placement of the last stream open_stream made (replicas, leader, the client's server), as a
// JSON object for the report's "extra"; empty for R1 streams.
std::string last_placement_json();

// The stream's cluster leader, polled until known (bounded by timeout_ms); empty if none.
std::string wait_stream_leader(jsCtx* js, const std::string& stream, int timeout_ms);

}  // namespace peregrine::bench
