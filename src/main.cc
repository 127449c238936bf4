// peregrine-server: parse flags and config, start the shards, wait for a signal, stop.
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <filesystem>

#include "peregrine_config.h"
#include "src/base/log.h"
#include "src/core/options.h"
#include "src/core/server.h"
#include "src/js/jetstream.h"

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
  if (!opts.log_file.empty()) base::log_set_file(opts.log_file);
  if (opts.trace) {
    base::log_set_level(base::log_level::trace);
  } else if (opts.debug) {
    base::log_set_level(base::log_level::debug);
  }
  for (const auto& w : cli.warnings) PG_WARN("{}", w);

  // Block the stop signals in every thread; the main thread waits for them below.
  sigset_t stop_set;
  sigemptyset(&stop_set);
  sigaddset(&stop_set, SIGINT);
  sigaddset(&stop_set, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_set, nullptr);
  signal(SIGPIPE, SIG_IGN);

  PG_INFO("Starting peregrine-server");
  PG_INFO("  Version:  {} (NATS protocol level {})", PEREGRINE_VERSION, PEREGRINE_NATS_LEVEL);
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
  core::server srv(opts);
  if (opts.jetstream) srv.add_service(js::make_jetstream_service());
  if (auto st = srv.start(); !st) {
    PG_ERROR("Error listening on port: {}:{}, \"{}\"", opts.host, opts.port,
             std::strerror(st.err().sys_errno));
    return 1;
  }
  PG_INFO("Listening for client connections on {}:{} ({} shard{}{}, {} transport)", opts.host,
          srv.shared().opts.port, srv.shared().shard_count, srv.shared().shard_count == 1 ? "" : "s",
          opts.jetstream && opts.js_thread ? " + a JetStream thread" : "", srv.transport_name());
  PG_INFO("Server is ready");

  int sig = 0;
  sigwait(&stop_set, &sig);
  PG_INFO("Trapped \"{}\" signal", sig == SIGINT ? "interrupt" : "terminated");
  srv.shutdown();
  PG_INFO("Server Exiting..");
  return 0;
}
