// Helpers for the operations tests (ops_test.cc, monitor_test.cc): a server process started
// from a config file with its pid at hand (for signals), its log, the ports file and a
// minimal HTTP GET for the monitoring endpoints.
#pragma once

#include <signal.h>
#include <sys/types.h>

#include <chrono>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

namespace peregrine::test {

struct http_result {
  int status = 0;  // 0: no answer
  std::string content_type;
  std::string body;
};
// GET http://127.0.0.1:<port><path> (HTTP/1.0, bounded by a timeout).
http_result http_get(int port, const std::string& path);

// Polls `pred` every 10 ms until it holds or `limit` passes.
bool eventually(const std::function<bool()>& pred, std::chrono::milliseconds limit);

std::string read_text(const std::filesystem::path& p);

class ops_server {
 public:
  // `dir` holds the config, the log and whatever the config points into.
  ops_server(std::filesystem::path dir, std::string binary);
  ~ops_server();
  ops_server(const ops_server&) = delete;
  ops_server& operator=(const ops_server&) = delete;

  void write_config(const std::string& text) const;
  // Starts `binary -c <dir>/server.conf <extra...>`; false if it exited at once.
  bool start(const std::vector<std::string>& extra = {});
  void signal(int sig) const { ::kill(pid_, sig); }
  // Waits for the process to exit; returns its wait status or -1 on timeout (then kills it).
  int wait_exit(std::chrono::milliseconds limit);
  bool running();
  std::string log() const { return read_text(dir_ / "server.log"); }
  bool log_has(const std::string& text) const { return log().find(text) != std::string::npos; }
  pid_t pid() const { return pid_; }
  const std::filesystem::path& dir() const { return dir_; }
  std::filesystem::path config_path() const { return dir_ / "server.conf"; }
  // <dir>/ports/<binary basename>_<pid>.ports
  std::filesystem::path ports_file() const;
  // Waits for the ports file and reads the first loopback URL's port of `kind` ("nats",
  // "monitoring"); 0 if it does not appear in time.
  int port_from_ports_file(const std::string& kind, std::chrono::milliseconds limit = std::chrono::seconds(5));

 private:
  std::filesystem::path dir_;
  std::string binary_;
  pid_t pid_ = -1;
};

// A fresh private directory under the test temp dir.
std::filesystem::path make_test_dir(const std::string& name);

}  // namespace peregrine::test
