// peregrine-server: parse flags and config, start the shards, then serve signals as
// nats-server does (INT/TERM stop, HUP reloads the config, USR1 reopens the log file, USR2
// enters lame duck mode) until it stops.
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "net/dpdk/dpdk_factory.h"
#include "net/epoll_transport.h"
#include "net/tls/tls_session.h"
#include "net/tls/tls_transport.h"
#include "net/uring_transport.h"
#include "peregrine_config.h"
#include "src/base/fd_limit.h"
#include "src/base/log.h"
#include "src/core/options.h"
#include "src/core/process_files.h"
#include "src/core/reload.h"
#include "src/core/server.h"
#include "src/js/api_worker.h"
#include "src/js/jetstream.h"
#include "src/repl/repl_host.h"

namespace {

// Picks the shards' transports from --transport: io_uring (falling back to epoll sockets
// where the kernel refuses it), epoll sockets, or DPDK (one transport per port queue pair).
class option_transports final : public core::transport_factory {
 public:
  option_transports(const core::server_options& o, std::shared_ptr<net::tls_context> tls)
      : _o(o), _tls(std::move(tls)) {}
  // cluster.tls: shard 0 (which owns every route) gets a TLS layer for routes.
  void set_route_tls(std::shared_ptr<net::tls_context> server, std::shared_ptr<net::tls_context> client) {
    _route_server = std::move(server);
    _route_client = std::move(client);
  }

  base::result<std::vector<std::unique_ptr<net::transport>>> client_transports(std::uint32_t shards) override {
    std::vector<std::unique_ptr<net::transport>> out;
    if (_o.transport == "dpdk") {
      std::string why;
      out = net::make_dpdk_transports(
          net::dpdk_options{_o.dpdk_eal, _o.dpdk_port, _o.dpdk_ip, _o.dpdk_netmask, _o.dpdk_gateway, _o.dpdk_queues},
          int(shards), why);
      if (out.empty()) {
        PG_ERROR("{}", why);
        return base::error{base::errc::unsupported, net::dpdk_available() ? ENODEV : EOPNOTSUPP};
      }
      _name = "dpdk";
      return out;
    }
    for (std::uint32_t i = 0; i < shards; ++i) {
      auto t = socket_transport();
      const bool routes = i == 0 && _route_server;
      if (_tls || routes) {
        auto tls = std::make_unique<net::tls_transport>(std::move(t), _tls, _o.tls);
        if (routes) tls->set_route_tls(_route_server, _route_client, _o.cluster_tls.timeout_ms);
        t = std::move(tls);
      }
      out.push_back(std::move(t));
    }
    return out;
  }

  std::unique_ptr<net::transport> idle_transport() override {
    std::string why;
    std::unique_ptr<net::transport> idle;
    if (_o.transport != "socket") idle = net::uring_transport::create(why);
    if (!idle) idle = std::make_unique<net::epoll_transport>();
    return idle;
  }

  std::string name() const override { return _name; }

 private:
  std::unique_ptr<net::transport> socket_transport() {
    if (_o.transport == "uring") {
      std::string why;
      if (auto u = net::uring_transport::create(why)) {
        _name = "io_uring";
        return u;
      }
      if (!_fallback_logged) {
        PG_WARN("io_uring unavailable ({}); falling back to epoll sockets", why);
        _fallback_logged = true;
      }
    }
    _name = "epoll";
    return std::make_unique<net::epoll_transport>();
  }

  const core::server_options _o;  // a copy: the factory may outlive the caller's options
  std::shared_ptr<net::tls_context> _tls;  // null: plaintext listener
  std::shared_ptr<net::tls_context> _route_server, _route_client;  // null: plaintext routes
  std::string _name;
  bool _fallback_logged = false;
};

// A tls_session behind the interface src/repl sees.
class tls_session_stream final : public net::tls_stream {
 public:
  tls_session_stream(std::shared_ptr<net::tls_context> ctx, const std::string& server_name)
      : _s(std::move(ctx), server_name) {}
  void start(std::string& out) override { _s.start(out); }
  state feed(std::string_view in, std::string& plain, std::string& out) override {
    switch (_s.feed(in, plain, out)) {
      case net::tls_session::state::handshaking: return state::handshaking;
      case net::tls_session::state::established: return state::established;
      case net::tls_session::state::failed: return state::failed;
      case net::tls_session::state::closed: return state::closed;
    }
    return state::failed;
  }
  bool write(std::string_view plain, std::string& out) override { return _s.write(plain, out); }
  bool established() const override { return _s.established(); }
  const std::string& error() const override { return _s.error(); }

 private:
  net::tls_session _s;
};

// Replication links over the routes' TLS contexts (cluster.tls).
net::tls_stream_factory replication_tls(std::shared_ptr<net::tls_context> server,
                                        std::shared_ptr<net::tls_context> client) {
  return [server, client](bool dialed, const std::string& host) -> std::unique_ptr<net::tls_stream> {
    return std::make_unique<tls_session_stream>(dialed ? client : server, dialed ? host : std::string());
  };
}

// The replication thread's settings: the journal beside the streams, the configured routes as
// the meta group's minimum size (meta_bootstrap.h), pinned to the last CPU of --cpus.
repl::repl_host_options repl_options(const core::server_options& o) {
  repl::repl_host_options r;
  r.server_name = o.server_name;
  r.cluster_name = o.cluster_name;
  r.journal_dir = o.store_dir + "/repl";
  r.sync_journal = o.durability == "sync";
  r.min_meta_size = o.routes.size();
  if (const auto last = o.cpus.find_last_of(",-"); !o.cpus.empty()) {
    try {
      r.cpu = std::stoi(last == std::string::npos ? o.cpus : o.cpus.substr(last + 1));
    } catch (...) {
      r.cpu = -1;
    }
  }
  return r;
}

// Which accounts have JetStream, as nats-server decides: without an accounts block (or when
// none of them enables it) the global account, as before (nats-server gives $G none once an
// accounts block exists); otherwise the accounts with `jetstream`. Every other account except
// the system account is answered 10039.
void js_accounts(const core::server_options& o, std::vector<js::account_limits>& enabled,
                 std::vector<std::string>& disabled) {
  const std::string sys = o.no_system_account ? std::string() : o.system_account.empty() ? "$SYS" : o.system_account;
  for (const auto& a : o.accounts)
    if (a.jetstream)
      enabled.push_back({a.name, a.js_max_memory, a.js_max_file, a.js_max_streams, a.js_max_consumers,
                         a.js_max_ack_pending, a.js_max_bytes_required, a.js_memory_max_stream_bytes,
                         a.js_store_max_stream_bytes});
  if (enabled.empty()) enabled.push_back({});
  else disabled.push_back("$G");
  for (const auto& a : o.accounts)
    if (!a.jetstream && a.name != sys && a.name != "$G") disabled.push_back(a.name);
}

void apply_logging(const core::server_options& o, bool reopen_file) {
  if (reopen_file) base::log_set_file(o.log_file);
  base::log_set_level(o.trace ? base::log_level::trace : o.debug ? base::log_level::debug : base::log_level::info);
}

// SIGHUP: the config file and flags again, as at start; what cannot change live is refused.
void reload(int argc, char** argv, core::server_options& configured, core::server& srv, net::tls_context* tls) {
  if (configured.config_file.empty()) {
    PG_ERROR("Failed to reload server configuration: can only reload config when a file is provided using -c or --config");
    return;
  }
  core::server_options next;
  const core::cli_result cli = core::parse_command_line(argc, argv, next);
  if (cli.outcome != core::cli_outcome::run) {
    PG_ERROR("Failed to reload server configuration: {}", cli.message);
    return;
  }
  for (const auto& w : cli.warnings) PG_WARN("{}", w);
  if (next.jetstream && next.store_dir.empty()) next.store_dir = core::default_store_dir();  // as at start
  const core::reload_plan plan = core::plan_reload(configured, next);
  for (const auto& r : plan.refused)
    PG_WARN("Config reload: {} needs a restart; keeping the running value", r);
  // New certificates first: a bad one refuses the whole reload, as nats-server does.
  if (plan.tls_changed && tls) {
    std::string error;
    if (!tls->reload(plan.result.tls, error)) {
      PG_ERROR("Failed to reload server configuration: error parsing tls config: {}", error);
      return;
    }
  }
  const bool new_file = plan.result.log_file != configured.log_file;
  configured = plan.result;
  if (plan.logging_changed) apply_logging(configured, new_file);
  srv.reload(configured);
  for (const auto& c : plan.changed) PG_INFO("Reloaded: {}", c);
  PG_INFO("Reloaded server configuration");
}

}  // namespace

int main(int argc, char** argv) {
  core::server_options opts;
  const core::cli_result cli = core::parse_command_line(argc, argv, opts);
  if (cli.outcome == core::cli_outcome::exit_ok) {
    std::fputs(cli.message.c_str(), stdout);
    if (!cli.message.empty() && cli.message.back() != '\n') std::fputc('\n', stdout);
    return 0;
  }
  if (cli.outcome == core::cli_outcome::exit_error) {
    std::fprintf(stderr, "peregrine-server: %s\n", cli.message.c_str());
    return 1;
  }
  if (!opts.signal.empty()) {
    std::string message;
    const int rc = core::send_signal_command(opts.signal, argv[0], message);
    if (rc != 0) std::fprintf(stderr, "peregrine-server: %s\n", message.c_str());
    return rc;
  }
  apply_logging(opts, !opts.log_file.empty());
  for (const auto& w : cli.warnings) PG_WARN("{}", w);

  // Block the signals we serve in every thread; the main thread waits for them below.
  sigset_t served;
  sigemptyset(&served);
  for (int s : {SIGINT, SIGTERM, SIGHUP, SIGUSR1, SIGUSR2}) sigaddset(&served, s);
  pthread_sigmask(SIG_BLOCK, &served, nullptr);
  signal(SIGPIPE, SIG_IGN);

  PG_INFO("Starting peregrine-server");
  PG_INFO("  Version:  {} (NATS protocol level {})", PEREGRINE_VERSION, PEREGRINE_NATS_LEVEL);
  if (!opts.config_file.empty()) PG_INFO("Using configuration file: {}", opts.config_file);
  // Before any store opens: the block-file cache sizes itself from the limit in force.
  if (const base::fd_limit lim = base::raise_fd_limit(); lim.error != 0) {
    PG_WARN("cannot raise the open files limit from {} to {}: {}", lim.before, lim.hard, std::strerror(lim.error));
  } else if (lim.now != lim.before) {
    PG_INFO("  Max open files: {} (raised from {})", lim.now, lim.before);
  } else {
    PG_INFO("  Max open files: {}", lim.now);
  }
  if (!opts.pid_file.empty()) {
    std::string error;
    if (!core::write_pid_file(opts.pid_file, error)) {
      PG_ERROR("{}", error);
      return 1;
    }
  }
  if (opts.cluster) {
    if (opts.server_name.empty()) {  // a cluster tells servers apart by name (routez, logs, JetStream later)
      PG_ERROR("server_name is required in a cluster: set server_name (or -n) to a name unique in the cluster");
      return 1;
    }
    if (opts.transport == "dpdk") {
      PG_ERROR("cluster routes need kernel sockets: use --transport uring or socket");
      return 1;
    }
    if (opts.jetstream)
      PG_INFO("JetStream in a cluster: streams with num_replicas > 1 are replicated over the meta group's "
              "servers; an R1 stream stays on the server that created it and is served through every server");
  }
  core::server_options configured = opts;  // as configured (port -1 unresolved): reloads diff against it
  if (opts.jetstream) {
    if (opts.store_dir.empty()) opts.store_dir = core::default_store_dir();
    std::error_code ec;
    std::filesystem::create_directories(opts.store_dir, ec);
    if (ec) {
      PG_ERROR("cannot create store directory {}: {}", opts.store_dir, ec.message());
      return 1;
    }
    PG_INFO("Starting JetStream");
    PG_INFO("  Store Directory: \"{}\"", opts.store_dir);
  }
  configured.store_dir = opts.store_dir;
  std::shared_ptr<net::tls_context> tls;
  if (opts.tls.enabled) {
    if (opts.transport == "dpdk") {
      PG_ERROR("TLS is not supported with --transport dpdk yet; use --transport uring or socket");
      return 1;
    }
    std::string error;
    tls = net::tls_context::create_server(opts.tls, error);
    if (!tls) {
      PG_ERROR("error parsing tls config: {}", error);
      return 1;
    }
    PG_INFO("TLS required for client connections");
  }
  auto transports = std::make_unique<option_transports>(opts, tls);
  std::shared_ptr<net::tls_context> route_tls_server, route_tls_client;
  if (opts.cluster && opts.cluster_tls.enabled) {
    std::string error;
    auto server = net::tls_context::create_server(opts.cluster_tls, error);
    auto client = server ? net::tls_context::create_client(opts.cluster_tls.ca_file, opts.cluster_tls.cert_file,
                                                           opts.cluster_tls.key_file, error)
                         : nullptr;
    if (!server || !client) {
      PG_ERROR("error parsing cluster tls config: {}", error);
      return 1;
    }
    route_tls_server = server;  // replication links use the routes' certificates
    route_tls_client = client;
    transports->set_route_tls(std::move(server), std::move(client));
  }
  // Replication (src/repl): declared before the server, so it outlives the shards that call it.
  std::unique_ptr<repl::repl_host> repl;
  if (opts.cluster && opts.jetstream) {
    if (opts.cluster_name.empty()) {
      PG_WARN("JetStream clustering needs a cluster name (cluster {{ name }}): no meta group on this server");
    } else {
      auto ro = repl_options(opts);
      if (route_tls_server) ro.tls = replication_tls(route_tls_server, route_tls_client);
      repl = std::make_unique<repl::repl_host>(std::move(ro));
    }
  }
  core::server srv(opts, std::move(transports));
  if (repl) srv.set_replication(repl.get());
  if (opts.jetstream) {  // per account with JetStream, one instance per owner thread (on owner k)
    js::api_worker::yield_to_loops = opts.poll_mode != "busy";
    std::vector<js::account_limits> enabled;
    std::vector<std::string> disabled;
    js_accounts(opts, enabled, disabled);
    if (!enabled.empty()) srv.set_operator_js_account(enabled.front().account);
    for (auto& a : js::make_jetstream_accounts(std::size_t(std::max(1, core::js_owner_threads(opts))), enabled, disabled,
                                               std::size_t(opts.consumer_threads)))
      srv.add_service(std::move(a.svc), a.account, a.owner);
  }
  if (auto st = srv.start(); !st) {
    if (!srv.start_error().empty()) {
      PG_ERROR("{}", srv.start_error());
    } else {
      PG_ERROR("Error listening on port: {}:{}, \"{}\"", opts.host, opts.port, std::strerror(st.err().sys_errno));
    }
    return 1;
  }
  const std::string http_host = opts.http_host.empty() ? opts.host : opts.http_host;
  if (srv.monitor_port() != 0) PG_INFO("Starting http monitor on {}:{}", http_host, srv.monitor_port());
  const int js_owners = opts.jetstream ? core::js_owner_threads(opts) : 0;
  PG_INFO("Listening for client connections on {}:{} ({} shard{}{}, {} transport)", opts.host,
          srv.shared().opts.port, srv.shared().shard_count, srv.shared().shard_count == 1 ? "" : "s",
          js_owners == 0 ? std::string()
                         : fmt::format(" + {} JetStream thread{}", js_owners, js_owners == 1 ? "" : "s"),
          srv.transport_name());
  std::string ports_file;
  if (!opts.ports_file_dir.empty()) {
    ports_file = core::ports_file_path(opts.ports_file_dir, argv[0]);
    std::string error;
    const auto nats = core::listen_urls("nats", opts.host, srv.shared().opts.port);
    const auto mon = srv.monitor_port() ? core::listen_urls("http", http_host, srv.monitor_port())
                                        : std::vector<std::string>{};
    if (!core::write_ports_file(ports_file, nats, mon, error)) {
      PG_ERROR("{}", error);
      ports_file.clear();
    }
  }
  if (srv.cluster_port() != 0) {
    PG_INFO("Cluster name is {}", srv.shared().route_info.value("cluster", ""));
    PG_INFO("Listening for route connections on {}:{}", opts.cluster_host, srv.cluster_port());
  }
  if (repl) {
    PG_INFO("Replication connections share the cluster port {}", srv.cluster_port());
    // JetStream sets the replication's event sink in its start(), which runs on shard 0's
    // first turn: a recovered meta group must not apply its log before that.
    for (core::dispatcher* d : srv.shards())
      while (!d->services_started()) std::this_thread::sleep_for(std::chrono::microseconds(200));
    repl->start();
  }
  PG_INFO("Server is ready");

  bool lame_duck = false;
  std::int64_t lame_duck_end = 0;
  for (;;) {
    const timespec tick{0, 100'000'000};
    const int sig = sigtimedwait(&served, nullptr, &tick);
    const std::int64_t now = base::system_clock::instance().monotonic_ns();
    if (sig == SIGINT || sig == SIGTERM) {
      PG_INFO("Trapped \"{}\" signal", sig == SIGINT ? "interrupt" : "terminated");
      break;
    }
    if (sig == SIGHUP) {
      PG_INFO("Trapped \"hangup\" signal");
      reload(argc, argv, configured, srv, tls.get());
    } else if (sig == SIGUSR1) {
      if (configured.log_file.empty()) {
        PG_INFO("File log re-open ignored, not a file logger");
      } else {
        base::log_set_file(configured.log_file);
        PG_INFO("File log re-opened");
      }
    } else if (sig == SIGUSR2 && !lame_duck) {
      lame_duck = true;
      const auto live = srv.shared().live();
      lame_duck_end = now + live->opts.lame_duck_duration_ms * base::kMilli;
      PG_INFO("Entering lame duck mode, stop accepting new clients");
      srv.enter_lame_duck();
    }
    if (lame_duck) {
      // Done when the last connection is gone (at once when there was none), or at the end.
      if (now >= lame_duck_end || srv.shared().connections.load() == 0) break;
    }
  }
  PG_INFO("Initiating Shutdown...");
  srv.shutdown();
  if (repl) repl->stop();  // its event sink points into JetStream, destroyed with the server
  if (!ports_file.empty()) unlink(ports_file.c_str());
  if (!opts.pid_file.empty()) unlink(opts.pid_file.c_str());
  PG_INFO("Server Exiting..");
  return 0;
}
