// peregrine: a command line in the image of natscli (`nats`), so that docs written for `nats`
// read with `peregrine` in its place. Built on libnats; JetStream management is plain JSON
// requests to $JS.API.*, and --json prints the server's own replies.
#include <cstdio>

#include "peregrine_config.h"
#include "src/cli/commands.h"

int main(int argc, char** argv) {
  using namespace peregrine::cli;
  CLI::App app{"peregrine: NATS and JetStream command line for Peregrine (and any NATS server)", "peregrine"};
  app.set_version_flag("--version", std::string("peregrine ") + PEREGRINE_VERSION);
  app.require_subcommand(1);
  app.fallthrough();
  cli_context ctx;
  app.add_option("-s,--server", ctx.conn.server, "NATS server URLs, comma separated (default $NATS_URL, else nats://127.0.0.1:4222)");
  app.add_option("--user", ctx.conn.user, "username or token");
  app.add_option("--password", ctx.conn.password, "password");
  app.add_option("--token", ctx.conn.token, "authentication token");
  app.add_option("--creds", ctx.conn.creds, "user credentials file (JWT and NKey seed)")->check(CLI::ExistingFile);
  app.add_option("--tlscert", ctx.conn.tls_cert, "TLS client certificate file")->check(CLI::ExistingFile);
  app.add_option("--tlskey", ctx.conn.tls_key, "TLS client key file")->check(CLI::ExistingFile);
  app.add_option("--tlsca", ctx.conn.tls_ca, "TLS CA certificates file")->check(CLI::ExistingFile);
  app.add_option("--timeout", ctx.conn.timeout_s, "time to wait on responses from the server, seconds")
      ->check(CLI::Range(0.01, 3600.0))
      ->capture_default_str();

  add_account_commands(app, ctx);
  add_stream_commands(app, ctx);
  add_consumer_commands(app, ctx);
  add_core_commands(app, ctx);
  add_kv_commands(app, ctx);
  add_server_commands(app);

  if (nats_Open(-1) != NATS_OK) {
    std::fprintf(stderr, "peregrine: error: cannot initialise libnats\n");
    return 2;
  }
  int rc = 0;
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    rc = app.exit(e);
  } catch (const cli_error& e) {
    std::fflush(stdout);
    std::fprintf(stderr, "peregrine: error: %s\n", e.what());
    rc = 1;
  } catch (const std::exception& e) {
    std::fflush(stdout);
    std::fprintf(stderr, "peregrine: error: %s\n", e.what());
    rc = 1;
  }
  ctx.cl.reset();
  nats_Close();
  return rc;
}
