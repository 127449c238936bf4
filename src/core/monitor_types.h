#pragma once
// What a shard hands the HTTP monitor: copies of its connections, subscriptions and
// counters, built on the shard's own thread so the monitor never touches live state.
#include <cstdint>
#include <string>
#include <vector>

namespace core {

struct sub_snapshot {
  std::string subject;
  std::string queue;
  std::string sid;
  std::uint64_t msgs = 0;
  std::uint64_t cid = 0;
  std::string account = "$G";
};

struct conn_snapshot {
  std::uint64_t cid = 0;
  std::string ip;
  int port = 0;
  std::int64_t start_ns = 0;   // wall clock
  std::int64_t last_ns = 0;    // last input, wall clock
  std::int64_t stop_ns = 0;    // closed connections only
  std::string reason;          // closed connections only
  std::int64_t rtt_ns = 0;      // 0: not measured (no CONNECT yet)
  std::uint64_t pending_bytes = 0;
  std::uint64_t in_msgs = 0, out_msgs = 0, in_bytes = 0, out_bytes = 0;
  std::uint64_t subscriptions = 0;
  std::string name, lang, version, user;
  std::string tls_version, tls_cipher;  // TLS connections only
  std::string account;  // empty: the global account (connz omits it, as nats-server)
  std::vector<sub_snapshot> subs;  // filled when asked for (subs=1 / detail)
};

// One route connection (/routez), as nats-server 2.9 reports it.
struct route_snapshot {
  std::uint64_t rid = 0;
  std::string remote_id;
  bool did_solicit = false;
  bool is_configured = false;
  std::string ip;
  int port = 0;
  std::int64_t start_ns = 0, last_ns = 0, rtt_ns = 0;  // wall clock; rtt 0: not measured
  std::uint64_t pending_bytes = 0;
  std::uint64_t in_msgs = 0, out_msgs = 0, in_bytes = 0, out_bytes = 0;
  std::vector<std::string> subs;  // the interest it holds for the remote server
};

struct shard_counters {
  std::uint64_t in_msgs = 0, out_msgs = 0, in_bytes = 0, out_bytes = 0;
};

// The shard's sublist activity (/subsz): inserts/removes of its own connections' (and its
// services') subscriptions, matches of the messages published on it; summed over shards.
struct sublist_stats {
  std::uint64_t cache = 0, inserts = 0, removes = 0, matches = 0, max_fanout = 0, fanout_sum = 0;
};

struct shard_snapshot {
  shard_counters counters;
  sublist_stats sublist;
  std::uint64_t subscriptions = 0;  // subscriptions of this shard's own connections (and internal)
  std::vector<conn_snapshot> open;
  std::vector<conn_snapshot> closed;
  std::vector<sub_snapshot> subs;  // /subsz?subs=1
  std::uint64_t routes = 0;              // registered routes (shard 0)
  std::vector<route_snapshot> route_list;  // when asked for (/routez)
  bool has_jetstream = false;
  // loop and rings (/metrics)
  std::uint32_t shard = 0;
  std::uint64_t clients = 0;
  std::uint64_t loop_blocks = 0;       // times the loop blocked idle
  std::uint64_t calls = 0;             // functions other threads had it run (call_on_shard)
  std::uint64_t ring_depth = 0;        // messages waiting in the inbound rings
  std::uint64_t overflow_depth = 0;    // posts waiting behind full outbound rings
  std::uint64_t slow_consumers = 0;    // connections this shard cut as slow
  std::uint64_t uring_submissions = 0, uring_completions = 0;  // 0 on other transports
};

struct snapshot_request {
  bool conns = false;       // open connections
  bool closed = false;      // recently closed connections
  bool conn_subs = false;   // each connection's subscriptions
  bool all_subs = false;    // every subscription of the shard (/subsz)
  bool routes = false;      // route connections (/routez)
};

}  // namespace core
