#pragma once
// Server options: nats-server's flags and config-file keys where they overlap, plus
// Peregrine's own (shards, polling, transport, durability). Command-line flags override
// the config file, as in nats-server.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "net/tls_options.h"
#include "src/core/auth_types.h"

namespace core {

struct server_options {
  // identity and listener
  std::string host = "0.0.0.0";
  int port = 4222;
  std::string server_name;        // default: the server id
  std::string config_file;
  // logging
  std::string log_file;           // empty: stderr
  bool debug = false;
  bool trace = false;
  // limits (nats-server defaults)
  std::int64_t max_payload = 1048576;
  int max_control_line = 4096;
  std::int64_t max_pending = 64ll * 1024 * 1024;
  int max_connections = 65536;
  std::int64_t ping_interval_ms = 120'000;
  int ping_max = 2;
  std::int64_t auth_timeout_ms = 2'000;  // with TLS and not set: tls timeout + 1 s (nats-server)
  bool auth_timeout_set = false;          // authorization.timeout was given
  std::int64_t write_deadline_ms = 10'000;
  // auth
  std::string user;
  std::string pass;
  std::string token;
  // TLS on the client listener: the tls block, allow_non_tls, --tls* flags
  net::tls_options tls;
  std::vector<user_config> users;                 // authorization.users
  std::optional<permissions> default_permissions;  // authorization.default_permissions ($G users only)
  std::string no_auth_user;                        // a client without credentials is this user
  std::vector<account_config> accounts;            // accounts { }: users outside them are in $G
  // The system account (server requests and events, system_account.h): this name, "$SYS"
  // when empty (made when no such account is configured); none with no_system_account.
  std::string system_account;
  bool no_system_account = false;
  // monitoring (HTTP): http_port 0 = off, -1 = a free port
  int http_port = 0;
  std::string http_host;          // empty: the client listener's host
  std::string http_base_path;     // prefix for every endpoint ("/nats" -> /nats/varz)
  // process management
  std::string ports_file_dir;     // write <dir>/<exe>_<pid>.ports once listening
  std::string pid_file;
  std::int64_t lame_duck_duration_ms = 120'000;
  std::int64_t lame_duck_grace_period_ms = 10'000;
  std::vector<std::string> server_tags;
  std::string signal;             // --signal cmd[=pid]: send it to a running server and exit
  // JetStream
  bool jetstream = false;
  std::string store_dir;          // empty: the embedded default (see default_store_dir())
  std::int64_t max_memory_store = -1;
  std::int64_t max_file_store = -1;
  std::string js_domain;
  // cluster (routes between servers); off unless a cluster listener is configured
  bool cluster = false;
  std::string cluster_host = "0.0.0.0";
  int cluster_port = 6222;               // -1: a free port
  std::string cluster_name;              // empty: the server id, as nats-server does
  std::vector<std::string> routes;       // nats-route://host:port URLs to solicit
  std::string cluster_advertise;         // host:port other servers should dial (default: the listener)
  bool cluster_no_advertise = false;     // keep the cluster's client URLs out of INFO connect_urls
  int cluster_pool_size = 0;             // accepted for nats-server 2.10 configs; one route per pair here
  // cluster.authorization: the user and password routes must present in their CONNECT
  // (nats-server 2.9 takes one user, no token); routes dial with the URL's user:pass.
  std::string cluster_user;
  std::string cluster_pass;
  std::int64_t cluster_auth_timeout_ms = 2'000;
  // cluster.tls: routes run TLS from their first byte (nats-server's order), server side when
  // accepted, client side (the same certificate, verifying the peer against ca_file) when dialed.
  net::tls_options cluster_tls;
  // cluster.permissions: `import` (kept as publish) filters the interest we send a route,
  // `export` (kept as subscribe) the interest we take from it. As in nats-server 2.9 they
  // apply to dialed routes, and to accepted ones when cluster.authorization has a user.
  std::optional<permissions> cluster_permissions;
  // Peregrine
  int shards = 0;                 // 0: fit the machine
  std::string poll_mode = "adaptive";  // adaptive | busy
  std::int64_t spin_us = 50;
  std::string cpus;               // pin shard threads to these cpus ("0,1" or "0-3"); empty: no pinning
  std::string transport = "uring";     // uring | socket | dpdk
  std::string durability = "write";    // write | sync
  // JetStream (streams and their consumers) on a thread of its own instead of shard 0's;
  // clients reach it over the rings from every shard.
  bool js_thread = false;
  // JetStream owner threads (--js_threads N, `jetstream { threads: N }`): streams are placed
  // on them by a stable hash of the name; owner 0 also runs the control plane ($JS.API).
  // 0: js_thread decides (one thread, or shard 0's loop).
  int js_threads = 0;
  // Consumer threads (--consumer_threads N, `jetstream { consumer_threads: N }`): pull consumers
  // of limits streams run there (ack tracking, redelivery, pull matching), apart from their
  // stream's owner; 0 keeps them on the owner.
  int consumer_threads = 0;
  // DPDK transport (--transport dpdk): EAL arguments, port id, and our IPv4 on that port
  std::string dpdk_eal;
  int dpdk_port = 0;
  std::string dpdk_ip;
  std::string dpdk_netmask = "255.255.255.0";
  std::string dpdk_gateway;
  int dpdk_queues = 0;  // rx/tx queue pairs; 0: one per shard. Fewer than shards: software steering
};

// Owner threads past the cores of any host we target; each is a loop and its rings.
constexpr int kMaxJsThreads = 256;

// --cpus / `cpus:`: "0,1" or "0-3" or "0-3,6", comma-separated cpu numbers and ascending ranges.
bool valid_cpu_list(std::string_view s);

// How many JetStream owner threads the options ask for: 0 = JetStream on shard 0's loop.
inline int js_owner_threads(const server_options& o) { return o.js_threads > 0 ? o.js_threads : o.js_thread ? 1 : 0; }

// "nats://host:port", "nats-route://user:pass@host:port" or "host:port" -> host, port.
bool parse_route_url(const std::string& url, std::string& host, int& port);
// The URL's "user:pass@" part (percent-decoded, as Go's url.UserInfo gives it); empty without one.
void route_url_credentials(const std::string& url, std::string& user, std::string& pass);

// The default store directory when JetStream is on and none was given.
std::string default_store_dir();

enum class cli_outcome { run, exit_ok, exit_error };

struct cli_result {
  cli_outcome outcome = cli_outcome::run;
  std::string message;                // --help / --version text, or the error
  std::vector<std::string> warnings;  // e.g. unknown config keys
};

// Parses argv (command_line.cc), accepting -flag and --flag as nats-server does, loading -c
// FILE first so that flags override it. --help and -v/--version produce exit_ok with the
// text to print.
cli_result parse_command_line(int argc, const char* const* argv, server_options& out);

// Loads a nats-server style config file into `out` (config_mapper.cc). On a syntax error
// returns false and sets `error` to "<file>:<line>:<col>: <reason>"; unknown keys become
// warnings.
bool load_config_file(const std::string& path, server_options& out, std::string& error,
                      std::vector<std::string>& warnings);

}  // namespace core
