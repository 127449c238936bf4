// Runs the `peregrine` CLI binary ($PEREGRINE_CLI_BIN) as a child process with its stdout and
// stderr captured, bounded in time (a hung command is killed and reported, never waited on).
#pragma once

#include <sys/types.h>

#include <chrono>
#include <filesystem>
#include <string>
#include <vector>

namespace peregrine::test {

std::string cli_binary();  // $PEREGRINE_CLI_BIN, or empty

struct cli_result {
  int rc = -1;  // exit status; -1 when it had to be killed
  std::string out, err;
  std::string all() const { return out + err; }
};

class cli_runner {
 public:
  // dir holds the captured output files; url goes to --server on every call.
  cli_runner(std::filesystem::path dir, std::string url) : dir_(std::move(dir)), url_(std::move(url)) {}

  cli_result run(const std::vector<std::string>& args, const std::string& input = {},
                 std::chrono::milliseconds limit = std::chrono::seconds(20));

  // Starts a command and returns without waiting; finish() collects it.
  struct running {
    pid_t pid = -1;
    std::filesystem::path out, err;
  };
  running start(const std::vector<std::string>& args);
  cli_result finish(running& r, std::chrono::milliseconds limit = std::chrono::seconds(20));

 private:
  running spawn(const std::vector<std::string>& args, const std::string& input);
  std::filesystem::path dir_;
  std::string url_;
  int seq_ = 0;
};

}  // namespace peregrine::test
