#include "tests/integration/server_process.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <mutex>
#include <random>
#include <set>
#include <sstream>
#include <thread>
#include <vector>

namespace peregrine::test {
namespace {

using clock_type = std::chrono::steady_clock;

bool port_accepts(int port) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bool ok = ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
  ::close(fd);
  return ok;
}

std::string replace_all(std::string s, const std::string& from, const std::string& to) {
  for (size_t pos = s.find(from); pos != std::string::npos; pos = s.find(from, pos + to.size()))
    s.replace(pos, from.size(), to);
  return s;
}

}  // namespace

std::string server_binary() {
  for (const char* name : {"PEREGRINE_SERVER_BIN_OVERRIDE", "PEREGRINE_SERVER_BIN"}) {
    const char* v = std::getenv(name);
    if (v != nullptr && *v != '\0') return v;
  }
  return {};
}

namespace {
bool port_is_free(int port) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(std::uint16_t(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  const bool ok = ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
  ::close(fd);
  return ok;
}
}  // namespace

// Below the kernel's ephemeral range (32768-60999 by default): a port picked here and bound
// by a server a little later cannot be taken meanwhile by an ephemeral bind or connect of
// another server (a replication listener, a route dialing out), which bind(0) picks from.
// Parallel test processes pick from the same range, and a port picked for a server started
// later (a cluster port that other servers' routes name) stays unbound for a while: each pick
// is reserved by an flock on /tmp/peregrine-test-ports/<port>, held until this process exits,
// so two test processes never hand out the same port.
namespace {
bool reserve_port(int port) {
  static std::mutex mu;
  static std::set<int> held;  // flock conflicts with our own earlier lock on the same file
  std::lock_guard lock(mu);
  if (held.contains(port)) return false;
  const std::string dir = "/tmp/peregrine-test-ports";
  ::mkdir(dir.c_str(), 01777);
  const std::string path = dir + "/" + std::to_string(port);
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0666);
  if (fd < 0) return true;  // no lock directory: fall back to the bind probe alone
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    ::close(fd);
    return false;
  }
  held.insert(port);  // the fd stays open: the lock lasts as long as this process
  return true;
}
}  // namespace

int pick_free_port() {
  static std::mt19937 rng{std::random_device{}() ^ std::uint32_t(::getpid())};
  std::uniform_int_distribution<int> pick(20000, 32000);
  for (int i = 0; i < 200; ++i)
    if (const int port = pick(rng); port_is_free(port) && reserve_port(port)) return port;
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return 0;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = 0;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  int port = 0;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0)
    port = ntohs(addr.sin_port);
  ::close(fd);
  return port;
}

server_process::server_process(std::string extra_conf) : extra_conf_(std::move(extra_conf)) {}

server_process::~server_process() {
  stop();
  if (!tmp_dir_.empty()) {
    std::error_code ec;
    std::filesystem::remove_all(tmp_dir_, ec);
  }
}

std::string server_process::url() const { return "nats://127.0.0.1:" + std::to_string(port_); }

std::string server_process::log() const {
  std::ifstream in(tmp_dir_ / "server.log");
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

bool server_process::running() {
  if (pid_ <= 0) return false;
  int status = 0;
  if (::waitpid(pid_, &status, WNOHANG) == pid_) {
    pid_ = -1;
    return false;
  }
  return true;
}

bool server_process::start(std::chrono::milliseconds ready_timeout) {
  const std::string bin = binary_.empty() ? server_binary() : binary_;
  if (bin.empty()) {
    error_ = "PEREGRINE_SERVER_BIN is not set";
    return false;
  }
  if (::access(bin.c_str(), X_OK) != 0) {
    error_ = "server binary is missing or not executable: " + bin;
    return false;
  }
  if (tmp_dir_.empty()) {
    std::string templ = (std::filesystem::temp_directory_path() / "pg-it-XXXXXX").string();
    std::vector<char> buf(templ.begin(), templ.end());
    buf.push_back('\0');
    if (::mkdtemp(buf.data()) == nullptr) {
      error_ = std::string("mkdtemp: ") + std::strerror(errno);
      return false;
    }
    tmp_dir_ = buf.data();
  }
  // A port picked free can be taken by a parallel test before the server binds it: retry.
  for (int attempt = 0; attempt < 3; ++attempt) {
    if (start_once(ready_timeout)) return true;
    stop();
  }
  return false;
}

bool server_process::start_once(std::chrono::milliseconds ready_timeout) {
  port_ = pick_free_port();
  if (port_ == 0) {
    error_ = "no free port";
    return false;
  }
  const auto conf_path = tmp_dir_ / "server.conf";
  {
    std::ofstream conf(conf_path, std::ios::trunc);
    conf << "port: " << port_ << "\n"
         << replace_all(extra_conf_, "@TMPDIR@", tmp_dir_.string()) << "\n";
    // Suite variants (e.g. `shards: 2`, `transport: socket`) come from the environment.
    // (Not for a binary set per process: the reference server in a mixed cluster.)
    if (const char* variant = std::getenv("PEREGRINE_EXTRA_CONF"); variant && binary_.empty()) conf << variant << "\n";
    if (!conf) {
      error_ = "cannot write " + conf_path.string();
      return false;
    }
  }
  const std::string bin = binary_.empty() ? server_binary() : binary_;
  const std::string port_str = std::to_string(port_);
  const std::string log_path = (tmp_dir_ / "server.log").string();
  const std::string conf_str = conf_path.string();
  const pid_t parent = ::getpid();

  pid_t pid = ::fork();
  if (pid < 0) {
    error_ = std::string("fork: ") + std::strerror(errno);
    return false;
  }
  if (pid == 0) {
    // Child: die with the test process so a crashed test never leaks a server.
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(127);
    int fd = ::open(log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (fd >= 0) {
      ::dup2(fd, STDOUT_FILENO);
      ::dup2(fd, STDERR_FILENO);
      ::close(fd);
    }
    if (nofile_ > 0) {
      rlimit rl{nofile_, nofile_};
      if (::setrlimit(RLIMIT_NOFILE, &rl) != 0) ::_exit(126);
    }
    const char* argv[] = {bin.c_str(), "-a", "127.0.0.1", "-p", port_str.c_str(),
                          "-c", conf_str.c_str(), nullptr};
    ::execv(bin.c_str(), const_cast<char* const*>(argv));
    ::_exit(127);
  }
  pid_ = pid;

  const auto deadline = clock_type::now() + ready_timeout;
  while (clock_type::now() < deadline) {
    if (!running()) {
      error_ = "server exited during startup; log:\n" + log();
      return false;
    }
    if (port_accepts(port_)) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  error_ = "server did not accept on port " + port_str + " within " +
           std::to_string(ready_timeout.count()) + " ms; log:\n" + log();
  return false;
}

void server_process::stop() { (void)stop(std::chrono::seconds(2)); }

bool server_process::stop(std::chrono::milliseconds grace) {
  if (pid_ <= 0) return true;
  ::kill(pid_, SIGTERM);
  const auto deadline = clock_type::now() + grace;
  while (clock_type::now() < deadline) {
    int status = 0;
    pid_t r = ::waitpid(pid_, &status, WNOHANG);
    if (r == pid_ || (r < 0 && errno == ECHILD)) {
      // A crash on the way out is a bug even when the test passed: say so in its output.
      if (r == pid_ && WIFSIGNALED(status) && WTERMSIG(status) != SIGKILL)  // not a test's own kill -9
        std::fprintf(stderr, "server_process: pid %d died of signal %d at SIGTERM\n", int(pid_), WTERMSIG(status));
      pid_ = -1;
      return true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  ::kill(pid_, SIGKILL);
  int status = 0;
  ::waitpid(pid_, &status, 0);
  pid_ = -1;
  return false;
}

}  // namespace peregrine::test
