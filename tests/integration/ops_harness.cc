#include "tests/integration/ops_harness.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

namespace peregrine::test {

using namespace std::chrono_literals;

http_result http_get(int port, const std::string& path) {
  http_result r;
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return r;
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(std::uint16_t(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    ::close(fd);
    return r;
  }
  const std::string req = "GET " + path + " HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n";
  if (::send(fd, req.data(), req.size(), MSG_NOSIGNAL) != ssize_t(req.size())) {
    ::close(fd);
    return r;
  }
  std::string all;
  const auto deadline = std::chrono::steady_clock::now() + 5s;
  char buf[65536];
  while (std::chrono::steady_clock::now() < deadline) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 100) <= 0) continue;
    const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0) break;
    all.append(buf, std::size_t(n));
  }
  ::close(fd);
  const auto head_end = all.find("\r\n\r\n");
  if (all.rfind("HTTP/1.", 0) != 0 || head_end == std::string::npos) return r;
  r.status = std::atoi(all.c_str() + 9);
  std::istringstream head(all.substr(0, head_end));
  std::string line;
  while (std::getline(head, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    const auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string key = line.substr(0, colon);
    for (auto& ch : key) ch = char(std::tolower(static_cast<unsigned char>(ch)));
    if (key == "content-type") r.content_type = line.substr(colon + 2);
  }
  r.body = all.substr(head_end + 4);
  return r;
}

bool eventually(const std::function<bool()>& pred, std::chrono::milliseconds limit) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < deadline) {
    if (pred()) return true;
    std::this_thread::sleep_for(10ms);
  }
  return pred();
}

std::string read_text(const std::filesystem::path& p) {
  std::ifstream f(p);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

std::filesystem::path make_test_dir(const std::string& name) {
  auto d = std::filesystem::path(::testing::TempDir()) / (name + "_" + std::to_string(getpid()));
  std::filesystem::remove_all(d);
  std::filesystem::create_directories(d / "ports");
  return d;
}

ops_server::ops_server(std::filesystem::path dir, std::string binary) : dir_(std::move(dir)), binary_(std::move(binary)) {}

ops_server::~ops_server() {
  if (pid_ > 0 && running()) {
    ::kill(pid_, SIGKILL);
    int st = 0;
    waitpid(pid_, &st, 0);
  }
}

void ops_server::write_config(const std::string& text) const {
  const auto tmp = dir_ / "server.conf.tmp";
  // Suite variants (shards: 2 ...) for peregrine-server only: nats-server has no such keys.
  const char* extra = std::getenv("PEREGRINE_EXTRA_CONF");
  const bool reference = binary_.find("nats-server") != std::string::npos;
  std::ofstream(tmp) << text << "\n" << (extra && !reference ? extra : "") << "\n";
  std::filesystem::rename(tmp, config_path());
}

bool ops_server::start(const std::vector<std::string>& extra) {
  const std::string conf = config_path().string();
  const std::string log = (dir_ / "server.log").string();
  pid_ = fork();
  if (pid_ == 0) {
    const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    dup2(fd, 1);
    dup2(fd, 2);
    std::vector<const char*> argv{binary_.c_str(), "-c", conf.c_str()};
    for (const auto& e : extra) argv.push_back(e.c_str());
    argv.push_back(nullptr);
    execv(binary_.c_str(), const_cast<char* const*>(argv.data()));
    _exit(127);
  }
  std::this_thread::sleep_for(50ms);
  return running();
}

int ops_server::wait_exit(std::chrono::milliseconds limit) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  int status = 0;
  while (std::chrono::steady_clock::now() < deadline) {
    if (waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      return status;
    }
    std::this_thread::sleep_for(10ms);
  }
  ::kill(pid_, SIGKILL);
  waitpid(pid_, &status, 0);
  pid_ = -1;
  return -1;
}

bool ops_server::running() {
  if (pid_ <= 0) return false;
  int status = 0;
  if (waitpid(pid_, &status, WNOHANG) == pid_) {
    pid_ = -1;
    return false;
  }
  return true;
}

std::filesystem::path ops_server::ports_file() const {
  const std::string base = std::filesystem::path(binary_).filename().string();
  return dir_ / "ports" / (base + "_" + std::to_string(pid_) + ".ports");
}

int ops_server::port_from_ports_file(const std::string& kind, std::chrono::milliseconds limit) {
  int port = 0;
  eventually(
      [&] {
        const std::string text = read_text(ports_file());
        auto j = nlohmann::json::parse(text, nullptr, false);
        if (j.is_discarded() || !j.contains(kind)) return false;
        for (const auto& u : j[kind]) {
          const std::string s = u.get<std::string>();
          if (s.find("127.0.0.1") == std::string::npos) continue;
          port = std::atoi(s.c_str() + s.rfind(':') + 1);
          return true;
        }
        return false;
      },
      limit);
  return port;
}

}  // namespace peregrine::test
