// Test harness: runs one broker process (peregrine-server or the reference nats-server) on a free
// loopback port with a per-test config file, and tears it down reliably.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <filesystem>
#include <string>

namespace peregrine::test {

// Binary under test: $PEREGRINE_SERVER_BIN_OVERRIDE, else $PEREGRINE_SERVER_BIN (meson sets the
// latter, so the override is how a developer points `meson test` at another binary).
std::string server_binary();

// Asks the kernel for a currently free loopback port (bind to :0). Racy by nature; start() retries.
int pick_free_port();

class server_process {
 public:
  // extra_conf is appended verbatim to the generated config file; the token @TMPDIR@ is replaced
  // by this server's private temp directory (for jetstream { store_dir }).
  explicit server_process(std::string extra_conf = {});
  ~server_process();
  server_process(const server_process&) = delete;
  server_process& operator=(const server_process&) = delete;

  // Starts the server and waits (bounded) until its port accepts. On failure returns false and
  // error() explains; the server log is included.
  bool start(std::chrono::milliseconds ready_timeout = std::chrono::seconds(5));
  // SIGTERM, then SIGKILL after 2 s. Idempotent.
  void stop();
  // SIGTERM, then SIGKILL after `grace`; true when the server exited by itself within it.
  bool stop(std::chrono::milliseconds grace);

  // Runs this binary instead of server_binary() (a mixed cluster with the reference server).
  void set_binary(std::string bin) { binary_ = std::move(bin); }

  int port() const { return port_; }
  std::string url() const;  // nats://127.0.0.1:<port>
  const std::string& error() const { return error_; }
  const std::filesystem::path& tmp_dir() const { return tmp_dir_; }
  std::string log() const;  // server stdout+stderr so far
  bool running();
  pid_t pid() const { return pid_; }
  // Runs the server with RLIMIT_NOFILE soft = hard = n (set in the child before exec, as
  // prlimit would); 0 leaves the limit alone.
  void set_open_files_limit(unsigned n) { nofile_ = n; }

 private:
  bool start_once(std::chrono::milliseconds ready_timeout);

  std::string extra_conf_;
  std::string binary_;
  std::filesystem::path tmp_dir_;
  std::string error_;
  pid_t pid_ = -1;
  int port_ = 0;
  unsigned nofile_ = 0;
};

}  // namespace peregrine::test
