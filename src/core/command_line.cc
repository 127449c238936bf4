// The command line: nats-server's flags (one or two dashes) through CLI11, -c FILE first so
// that the flags override it.
#include "src/core/options.h"

#include <CLI/CLI.hpp>

#include <string_view>

#include "peregrine_config.h"
#include "src/core/config_file.h"

namespace core {

namespace {

// Go's flag package accepts -name and --name (and -name=value) for every flag. CLI11 wants
// one dash for single letters and two for words, so rewrite argv into that form.
struct flag_spec {
  std::string_view name;
  std::string_view canonical;  // long name used when a value is attached to a short flag
  bool takes_value;
};

constexpr flag_spec kFlags[] = {
    {"a", "addr", true},          {"addr", "addr", true},
    {"net", "addr", true},        {"p", "port", true},
    {"port", "port", true},       {"n", "name", true},
    {"name", "name", true},       {"server_name", "name", true},
    {"c", "config", true},        {"config", "config", true},
    {"js", "js", false},          {"jetstream", "js", false},
    {"sd", "store_dir", true},    {"store_dir", "store_dir", true},
    {"m", "http_port", true},     {"http_port", "http_port", true},
    {"l", "log", true},           {"log", "log", true},
    {"log_file", "log", true},    {"D", "debug", false},
    {"debug", "debug", false},    {"V", "trace", false},
    {"trace", "trace", false},    {"DV", "DV", false},
    {"user", "user", true},       {"pass", "pass", true},
    {"auth", "auth", true},       {"max_payload", "max_payload", true},
    {"v", "version", false},      {"version", "version", false},
    {"h", "help", false},         {"help", "help", false},
    {"shards", "shards", true},   {"poll", "poll", true},
    {"spin_us", "spin_us", true}, {"cpus", "cpus", true},
    {"transport", "transport", true}, {"durability", "durability", true},
    {"js_thread", "js_thread", false}, {"js_threads", "js_threads", true},
    {"consumer_threads", "consumer_threads", true},
    {"dpdk_eal", "dpdk_eal", true},   {"dpdk_port", "dpdk_port", true},
    {"dpdk_ip", "dpdk_ip", true},     {"dpdk_netmask", "dpdk_netmask", true},
    {"dpdk_gateway", "dpdk_gateway", true}, {"dpdk_queues", "dpdk_queues", true},
    {"ports_file_dir", "ports_file_dir", true}, {"P", "pid", true},
    {"pid", "pid", true},             {"sl", "signal", true},
    {"signal", "signal", true},       {"http_base_path", "http_base_path", true},
    {"tls", "tls", false},            {"tlscert", "tlscert", true},
    {"tlskey", "tlskey", true},       {"tlscacert", "tlscacert", true},
    {"tlsverify", "tlsverify", false},
    {"cluster", "cluster", true},     {"cluster_listen", "cluster", true},
    {"cluster_name", "cluster_name", true}, {"routes", "routes", true},
    {"cluster_advertise", "cluster_advertise", true}, {"no_advertise", "no_advertise", false},
};

const flag_spec* find_flag(std::string_view name) {
  for (const auto& f : kFlags) {
    if (f.name == name) return &f;
  }
  return nullptr;
}

struct normalised {
  std::vector<std::string> args;  // args[0] is the program name
  bool help = false;
  bool version = false;
  std::string config;
};

normalised normalise(int argc, const char* const* argv) {
  normalised n;
  n.args.emplace_back(argc > 0 && argv[0] ? argv[0] : "peregrine-server");
  bool rest_literal = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i] ? argv[i] : "";
    if (rest_literal || a.size() < 2 || a[0] != '-' || a == "--") {
      if (a == "--") rest_literal = true;
      n.args.push_back(a);
      continue;
    }
    std::string body = a.substr(a[1] == '-' ? 2 : 1);
    std::string value;
    const auto eq = body.find('=');
    const bool has_value = eq != std::string::npos;
    if (has_value) {
      value = body.substr(eq + 1);
      body.resize(eq);
    }
    const flag_spec* f = find_flag(body);
    if (f == nullptr) {  // unknown: keep it in CLI11's form so CLI11 reports it
      n.args.push_back((body.size() == 1 ? "-" : "--") + body + (has_value ? "=" + value : ""));
      continue;
    }
    bool on = true;
    if (has_value && !parse_bool(value, on)) on = true;  // CLI11 rejects the bad value later
    if (f->canonical == "help") n.help = n.help || on;
    if (f->canonical == "version") n.version = n.version || on;
    if (has_value) {
      n.args.push_back("--" + std::string(f->canonical) + "=" + value);
    } else {
      n.args.push_back((body.size() == 1 ? "-" : "--") + body);
    }
    if (f->canonical == "config") {
      if (has_value) {
        n.config = value;
      } else if (i + 1 < argc && argv[i + 1]) {
        n.config = argv[i + 1];
      }
    }
    if (f->takes_value && !has_value && i + 1 < argc) n.args.push_back(argv[++i]);  // the value, verbatim
  }
  return n;
}

}  // namespace

cli_result parse_command_line(int argc, const char* const* argv, server_options& out) {
  cli_result res;
  const normalised n = normalise(argc, argv);

  CLI::App app{"Peregrine: a NATS-protocol message broker with JetStream.", "peregrine-server"};
  app.set_help_flag();  // our own -h, so the text comes back instead of being printed
  app.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  app.footer("Every flag also works with one or two dashes (-js, --js, -sd, --port), as in nats-server.\n"
             "Flags override the config file given with -c.");

  bool help = false, version = false, dv = false;
  std::string max_payload, cluster_url, routes_list;
  bool no_advertise = false;
  app.add_option("-a,--addr,--net", out.host, "Address to listen on for clients");
  app.add_option("-p,--port", out.port, "Port for clients (-1: random)")->check(CLI::Range(-1, 65535));
  app.add_option("-n,--name,--server_name", out.server_name, "Server name (default: the server id)");
  app.add_option("-c,--config", out.config_file, "Configuration file (nats-server syntax)");
  app.add_flag("--js,--jetstream", out.jetstream, "Enable JetStream");
  app.add_option("--sd,--store_dir", out.store_dir, "JetStream storage directory");
  app.add_option("-m,--http_port", out.http_port, "HTTP monitoring port")->check(CLI::Range(-1, 65535));
  app.add_option("--http_base_path", out.http_base_path, "Path prefix of the HTTP monitoring endpoints");
  app.add_option("--ports_file_dir", out.ports_file_dir,
                 "Write <dir>/<exe>_<pid>.ports (JSON of the listen URLs) once listening");
  app.add_option("-P,--pid", out.pid_file, "File to write the process id to");
  app.add_option("--sl,--signal", out.signal,
                 "Send a signal to a running server and exit: stop|quit|term|reload|reopen|ldm[=<pid or pid file>]");
  app.add_option("-l,--log,--log_file", out.log_file, "Log file (default: stderr)");
  app.add_flag("-D,--debug", out.debug, "Enable debug logging");
  app.add_flag("-V,--trace", out.trace, "Enable protocol tracing");
  app.add_flag("--DV", dv, "Enable debug logging and protocol tracing");
  app.add_option("--user", out.user, "User required for connections");
  app.add_option("--pass", out.pass, "Password required for connections");
  app.add_option("--auth", out.token, "Authorization token required for connections");
  bool tls_flag = false;
  bool tlsverify_flag = false;
  app.add_flag("--tls", tls_flag, "Enable TLS, do not verify clients");
  app.add_option("--tlscert", out.tls.cert_file, "Server certificate file");
  app.add_option("--tlskey", out.tls.key_file, "Private key for server certificate");
  app.add_flag("--tlsverify", tlsverify_flag, "Enable TLS, verify client certificates");
  app.add_option("--tlscacert", out.tls.ca_file, "Client certificate CA for verification");
  app.add_option("--max_payload", max_payload, "Maximum message payload (bytes; 1MB, 512KB ...)");
  app.add_option("--cluster,--cluster_listen", cluster_url, "Cluster URL for route connections (nats://host:port)");
  app.add_option("--cluster_name", out.cluster_name, "Cluster name");
  app.add_option("--routes", routes_list, "Routes to solicit, comma separated (nats://host:port,...)");
  app.add_option("--cluster_advertise", out.cluster_advertise, "Cluster URL other servers should dial");
  app.add_flag("--no_advertise", no_advertise, "Do not advertise the cluster's client URLs to clients");
  app.add_flag("-v,--version", version, "Print the version and exit");
  app.add_flag("-h,--help", help, "Print this help and exit");
  app.add_option("--shards", out.shards, "Shard (worker thread) count; 0 fits the machine")
      ->check(CLI::Range(0, 4096));
  app.add_option("--poll", out.poll_mode, "Shard polling: adaptive or busy")
      ->check(CLI::IsMember({"adaptive", "busy"}));
  app.add_option("--spin_us", out.spin_us, "Microseconds an idle shard spins before sleeping (adaptive)")
      ->check(CLI::Range(std::int64_t{0}, std::int64_t{10'000'000}));
  app.add_option("--cpus", out.cpus, "Pin shard threads to these cpus, e.g. 0,1 or 0-3")
      ->check(CLI::Validator(
          [](std::string& s) { return valid_cpu_list(s) ? std::string() : "bad cpu list '" + s + "'"; },
          "CPU LIST"));
  app.add_option("--transport", out.transport, "Network transport: uring, socket or dpdk")
      ->check(CLI::IsMember({"uring", "socket", "dpdk"}));
  app.add_option("--durability", out.durability, "PubAck after the write or after fsync: write or sync")
      ->check(CLI::IsMember({"write", "sync"}));
  app.add_flag("--js_thread", out.js_thread,
               "Run JetStream (streams and their consumers) on a thread of its own, not on shard 0's "
               "(pinned to the cpu after the shards' in --cpus); the same as --js_threads 1");
  app.add_option("--js_threads", out.js_threads,
                 "JetStream owner threads (pg-js-<i>), streams placed on them by a hash of the name; "
                 "owner 0 also serves $JS.API (pinned to the cpus after the shards' in --cpus); 0: on shard 0")
      ->check(CLI::Range(0, kMaxJsThreads));
  app.add_option("--consumer_threads", out.consumer_threads,
                 "Consumer threads (pg-cons-<i>): pull consumers of limits streams run there, reading "
                 "their stream from its owner; 0: on the stream's owner")
      ->check(CLI::Range(0, kMaxJsThreads));
  app.add_option("--dpdk_eal", out.dpdk_eal,
                 "DPDK EAL arguments as one value, e.g. --dpdk_eal=\"-l 0 --no-huge -m 128 --no-pci "
                 "--vdev=net_tap0,iface=pg0\" (--transport dpdk)");
  app.add_option("--dpdk_port", out.dpdk_port, "DPDK port id (default 0)")->check(CLI::Range(0, 65535));
  app.add_option("--dpdk_ip", out.dpdk_ip, "IPv4 address of the server on the DPDK port");
  app.add_option("--dpdk_netmask", out.dpdk_netmask, "Netmask of the DPDK port's subnet (default 255.255.255.0)");
  app.add_option("--dpdk_gateway", out.dpdk_gateway, "IPv4 gateway for clients off the DPDK port's subnet");
  app.add_option("--dpdk_queues", out.dpdk_queues,
                 "DPDK rx/tx queue pairs (default 0: one per shard); fewer than --shards steers connections "
                 "to shards in software")
      ->check(CLI::Range(0, 1024));

  if (n.help) {
    res.outcome = cli_outcome::exit_ok;
    res.message = app.help();
    return res;
  }
  if (n.version) {
    res.outcome = cli_outcome::exit_ok;
    res.message = std::string("peregrine-server: v") + PEREGRINE_NATS_LEVEL + " (peregrine " +
                  PEREGRINE_VERSION + ")";
    return res;
  }
  // The config file first, so that the flags parsed below override it.
  if (!n.config.empty()) {
    std::string error;
    if (!load_config_file(n.config, out, error, res.warnings)) {
      res.outcome = cli_outcome::exit_error;
      res.message = error;
      return res;
    }
  }

  std::vector<const char*> cargv;
  for (const auto& a : n.args) cargv.push_back(a.c_str());
  try {
    app.parse(static_cast<int>(cargv.size()), cargv.data());
  } catch (const CLI::ParseError& e) {
    res.outcome = cli_outcome::exit_error;
    res.message = std::string("peregrine-server: ") + e.what();
    return res;
  }
  if (dv) out.debug = out.trace = true;
  // As nats-server: any of the TLS flags turns TLS on; --tlsverify also verifies clients.
  if (tls_flag || tlsverify_flag || app.count("--tlscert") || app.count("--tlskey")) out.tls.enabled = true;
  if (tlsverify_flag) out.tls.verify = true;
  // nats-server's default auth timeout under TLS: the handshake's time plus a second.
  if (out.tls.enabled && !out.auth_timeout_set) out.auth_timeout_ms = out.tls.timeout_ms + 1000;
  if (no_advertise) out.cluster_no_advertise = true;
  if (!cluster_url.empty()) {
    if (!parse_route_url(cluster_url, out.cluster_host, out.cluster_port)) {
      res.outcome = cli_outcome::exit_error;
      res.message = "peregrine-server: --cluster: expected nats://host:port, got '" + cluster_url + "'";
      return res;
    }
    out.cluster = true;
  }
  if (!routes_list.empty()) {
    out.routes.clear();
    std::size_t i = 0;
    while (i <= routes_list.size()) {
      std::size_t j = routes_list.find(',', i);
      if (j == std::string::npos) j = routes_list.size();
      std::string r = routes_list.substr(i, j - i);
      std::string h;
      int p = 0;
      if (!r.empty()) {
        if (!parse_route_url(r, h, p)) {
          res.outcome = cli_outcome::exit_error;
          res.message = "peregrine-server: --routes: bad route URL '" + r + "'";
          return res;
        }
        out.routes.push_back(r);
      }
      i = j + 1;
    }
  }
  if (!max_payload.empty()) {
    std::int64_t v = 0;
    if (!parse_size(max_payload, v) || v <= 0 || v > INT32_MAX) {
      res.outcome = cli_outcome::exit_error;
      res.message = "peregrine-server: --max_payload: expected a size such as 1048576 or 1MB, got '" +
                    max_payload + "'";
      return res;
    }
    out.max_payload = v;
  }
  return res;
}

}  // namespace core
