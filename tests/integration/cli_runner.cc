#include "tests/integration/cli_runner.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <thread>

namespace peregrine::test {

std::string cli_binary() {
  const char* p = std::getenv("PEREGRINE_CLI_BIN");
  return p != nullptr ? p : "";
}

namespace {

std::string slurp(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace

cli_runner::running cli_runner::spawn(const std::vector<std::string>& args, const std::string& input) {
  running r;
  const std::string base = (dir_ / ("cli" + std::to_string(++seq_))).string();
  r.out = base + ".out";
  r.err = base + ".err";
  const std::string in_path = base + ".in";
  std::ofstream(in_path) << input;
  std::vector<std::string> argv_s{cli_binary()};
  if (!url_.empty()) argv_s.insert(argv_s.end(), {"--server", url_});
  argv_s.insert(argv_s.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : argv_s) argv.push_back(a.data());
  argv.push_back(nullptr);
  r.pid = fork();
  if (r.pid == 0) {
    const int in = open(in_path.c_str(), O_RDONLY);
    const int out = open(r.out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    const int err = open(r.err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(in, 0);
    dup2(out, 1);
    dup2(err, 2);
    execv(argv[0], argv.data());
    _exit(127);
  }
  return r;
}

cli_runner::running cli_runner::start(const std::vector<std::string>& args) { return spawn(args, ""); }

cli_result cli_runner::finish(running& r, std::chrono::milliseconds limit) {
  cli_result res;
  const auto deadline = std::chrono::steady_clock::now() + limit;
  int status = 0;
  for (;;) {
    const pid_t done = waitpid(r.pid, &status, WNOHANG);
    if (done == r.pid) {
      res.rc = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      break;
    }
    if (std::chrono::steady_clock::now() > deadline) {
      kill(r.pid, SIGKILL);
      waitpid(r.pid, &status, 0);
      res.rc = -1;
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  res.out = slurp(r.out);
  res.err = slurp(r.err);
  if (res.rc == -1) res.err += "\n[killed: did not finish in time]";
  return res;
}

cli_result cli_runner::run(const std::vector<std::string>& args, const std::string& input,
                           std::chrono::milliseconds limit) {
  running r = spawn(args, input);
  return finish(r, limit);
}

}  // namespace peregrine::test
