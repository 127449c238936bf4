// Process lifecycle: SIGTERM/SIGINT stop the server promptly and cleanly, and it restarts on
// the same port at once (SO_REUSEADDR), ready to serve clients, 200 times in a row (40 in
// sanitizer builds).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>

#include "tests/integration/nats_helpers.h"
#include "tests/integration/raw_client.h"
#include "tests/integration/server_process.h"

namespace peregrine::test {
namespace {

using clock_type = std::chrono::steady_clock;
using namespace std::chrono_literals;

struct child {
  pid_t pid = -1;
};

child spawn(const std::string& conf) {
  child c;
  c.pid = fork();
  if (c.pid == 0) {
    const std::string bin = server_binary();
    execl(bin.c_str(), bin.c_str(), "-a", "127.0.0.1", "-c", conf.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  return c;
}

// Polls until a client completes the INFO/CONNECT/PING handshake; returns the time it took.
std::chrono::milliseconds wait_ready(int port, std::chrono::milliseconds limit) {
  const auto start = clock_type::now();
  while (clock_type::now() - start < limit) {
    raw_client rc;
    if (rc.connect(port) && rc.read_info().rfind("INFO {", 0) == 0 &&
        rc.send("CONNECT {\"verbose\":false}\r\n") && rc.ping_pong())
      return std::chrono::duration_cast<std::chrono::milliseconds>(clock_type::now() - start);
    std::this_thread::sleep_for(2ms);
  }
  return limit + 1ms;
}

// Waits for the child to exit; returns its wait status or -1 on timeout (then kills it).
int wait_exit(pid_t pid, std::chrono::milliseconds limit) {
  const auto start = clock_type::now();
  int status = 0;
  while (clock_type::now() - start < limit) {
    if (waitpid(pid, &status, WNOHANG) == pid) return status;
    std::this_thread::sleep_for(5ms);
  }
  kill(pid, SIGKILL);
  waitpid(pid, &status, 0);
  return -1;
}

class lifecycle : public ::testing::Test {
 protected:
  void SetUp() override {
    if (server_binary().empty()) GTEST_SKIP() << "no server binary";
    port_ = pick_free_port();
    conf_ = ::testing::TempDir() + "lifecycle_" + std::to_string(getpid()) + ".conf";
    std::ofstream(conf_) << "port: " << port_ << "\n";
  }
  void TearDown() override { unlink(conf_.c_str()); }
  int port_ = 0;
  std::string conf_;
};

TEST_F(lifecycle, sigterm_stops_cleanly_with_clients_connected_and_restarts_on_same_port) {
  for (int sig : {SIGTERM, SIGINT}) {
    child c = spawn(conf_);
    ASSERT_GT(c.pid, 0);
    const auto ready = wait_ready(port_, 5000ms);
    ASSERT_LE(ready, 5000ms) << "server never became ready";
    std::cout << "ready after " << ready.count() << " ms\n";
    auto nc = connect("nats://127.0.0.1:" + std::to_string(port_));
    ASSERT_TRUE(nc);
    auto sub = subscribe_sync(nc.get(), "x.>");
    ASSERT_TRUE(sub);
    const auto t0 = clock_type::now();
    ASSERT_EQ(kill(c.pid, sig), 0);
    const int status = wait_exit(c.pid, 3000ms);
    const auto took = std::chrono::duration_cast<std::chrono::milliseconds>(clock_type::now() - t0);
    std::cout << "stopped after " << took.count() << " ms\n";
    ASSERT_NE(status, -1) << "server did not stop on signal " << sig;
    // Peregrine exits 0 after a clean stop (nats-server reports the signal instead).
    if (server_binary().find("peregrine") != std::string::npos) {
      EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "status " << status;
    }
  }
}

TEST_F(lifecycle, port_in_use_is_a_clear_startup_error) {
  child first = spawn(conf_);
  ASSERT_LE(wait_ready(port_, 5000ms), 5000ms);
  child second = spawn(conf_);
  const int status = wait_exit(second.pid, 5000ms);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 1) << "status " << status;
  kill(first.pid, SIGTERM);
  EXPECT_NE(wait_exit(first.pid, 3000ms), -1);
}

// One server start of the restart loop: stdout/stderr go to `log`, so a failed start can say why.
pid_t spawn_logged(const std::string& conf, const std::string& log) {
  const pid_t pid = fork();
  if (pid == 0) {
    const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd >= 0) {
      dup2(fd, STDOUT_FILENO);
      dup2(fd, STDERR_FILENO);
      ::close(fd);
    }
    const std::string bin = server_binary();
    execl(bin.c_str(), bin.c_str(), "-a", "127.0.0.1", "-c", conf.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  return pid;
}

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// Until the child answers INFO/CONNECT/PING, it exits (false), or `limit` passes (false).
bool ready_or_exited(pid_t pid, int port, std::chrono::milliseconds limit, int& status) {
  const auto start = clock_type::now();
  while (clock_type::now() - start < limit) {
    if (waitpid(pid, &status, WNOHANG) == pid) return false;
    raw_client rc;
    if (rc.connect(port) && rc.read_info(1000ms).rfind("INFO {", 0) == 0 &&
        rc.send("CONNECT {\"verbose\":false}\r\n") && rc.ping_pong(1000ms))
      return true;
    std::this_thread::sleep_for(1ms);
  }
  status = -1;
  return false;
}

// Process managers and client test suites restart a server on the same port the moment the
// old one was reaped. The old process must have released the port by then (io_uring's ring
// teardown used to run after exit and keep the listener bound for ~8 ms: EADDRINUSE), and
// the readiness probe must reach the new server, never a dying listener.
struct restart_case {
  const char* name;
  const char* conf;  // peregrine-only keys; empty for the reference server
};

class immediate_restart : public ::testing::TestWithParam<restart_case> {};

// PEREGRINE_RESTART_CYCLES (meson: 200, 40 in sanitizer builds) stop/start cycles.
int restart_cycles() {
  const char* v = std::getenv("PEREGRINE_RESTART_CYCLES");
  const int n = v != nullptr ? std::atoi(v) : 0;
  return n > 0 ? n : 200;
}

TEST_P(immediate_restart, stop_start_cycles_on_one_port) {
  if (server_binary().empty()) GTEST_SKIP() << "no server binary";
  const bool peregrine = server_binary().find("peregrine") != std::string::npos;
  if (!peregrine && *GetParam().conf != '\0') GTEST_SKIP() << "peregrine-only configuration";
  const int port = pick_free_port();
  const std::string base = ::testing::TempDir() + "restart_" + std::to_string(getpid()) + "_" + GetParam().name;
  const std::string conf = base + ".conf", log = base + ".log";
  std::ofstream(conf) << "port: " << port << "\n" << GetParam().conf << "\n";
  const int cycles = restart_cycles();
  const auto t0 = clock_type::now();
  int started = 0;
  for (int i = 0; i < cycles; ++i) {
    const pid_t pid = spawn_logged(conf, log);
    ASSERT_GT(pid, 0);
    int status = 0;
    if (!ready_or_exited(pid, port, 5000ms, status)) {
      if (status == -1) {
        kill(pid, SIGKILL);
        waitpid(pid, &status, 0);
      }
      FAIL() << "start " << i << " did not serve (status " << status << "); log:\n" << slurp(log);
    }
    ++started;
    raw_client held;  // a connection open at the stop: its recv is armed in the ring too
    ASSERT_TRUE(held.open(port)) << "start " << i;
    ASSERT_EQ(kill(pid, SIGTERM), 0);
    ASSERT_NE(wait_exit(pid, 3000ms), -1) << "stop " << i << " hung";
  }
  EXPECT_EQ(started, cycles);
  std::cout << cycles << " restarts in "
            << std::chrono::duration_cast<std::chrono::milliseconds>(clock_type::now() - t0).count() << " ms\n";
  unlink(conf.c_str());
  unlink(log.c_str());
}

INSTANTIATE_TEST_SUITE_P(transports, immediate_restart,
                         ::testing::Values(restart_case{"default", ""},
                                           restart_case{"uring_shards2", "shards: 2"},
                                           restart_case{"epoll", "transport: \"socket\""},
                                           restart_case{"epoll_shards2", "transport: \"socket\"\nshards: 2"}),
                         [](const auto& info) { return std::string(info.param.name); });

// A clean stop with JetStream state in every kind of object: streams, pull and push consumers,
// a mirror (its internal consumer on the origin). Their teardown must not touch what the
// server already released (a stream's consumers unsubscribed through the internal client
// after it was destroyed: SIGSEGV at every SIGTERM of a server with a consumer).
class jetstream_stop : public ::testing::TestWithParam<restart_case> {};

TEST_P(jetstream_stop, sigterm_with_streams_and_consumers_exits_zero) {
  if (server_binary().find("peregrine") == std::string::npos) GTEST_SKIP() << "peregrine's exit status";
  const int port = pick_free_port();
  const std::string base = ::testing::TempDir() + "jsstop_" + std::to_string(getpid()) + "_" + GetParam().name;
  const std::string conf = base + ".conf";
  std::ofstream(conf) << "port: " << port << "\njetstream { store_dir: \"" << base << "_store\" }\n"
                      << GetParam().conf << "\n";
  for (int life = 0; life < 2; ++life) {  // the second life restores them all, then stops again
    child c = spawn(conf);
    ASSERT_GT(c.pid, 0);
    ASSERT_LE(wait_ready(port, 5000ms), 5000ms) << "server never became ready";
    auto nc = connect("nats://127.0.0.1:" + std::to_string(port));
    ASSERT_TRUE(nc);
    auto api = [&](const std::string& subject, const std::string& body) {
      natsMsg* reply = nullptr;
      const natsStatus s = natsConnection_RequestString(&reply, nc.get(), subject.c_str(), body.c_str(), 5000);
      msg_ptr owned(reply);
      EXPECT_EQ(s, NATS_OK) << subject;
      return reply ? std::string(natsMsg_GetData(reply), natsMsg_GetDataLength(reply)) : std::string();
    };
    if (life == 0) {
      EXPECT_EQ(api("$JS.API.STREAM.CREATE.ORDERS", R"({"name":"ORDERS","subjects":["orders.>"]})")
                    .find("\"error\""), std::string::npos);
      EXPECT_EQ(api("$JS.API.CONSUMER.CREATE.ORDERS.billing",
                    R"({"stream_name":"ORDERS","config":{"durable_name":"billing","ack_policy":"explicit"}})")
                    .find("\"error\""), std::string::npos);
      EXPECT_EQ(api("$JS.API.CONSUMER.CREATE.ORDERS.mon",
                    R"({"stream_name":"ORDERS","config":{"durable_name":"mon","deliver_subject":"mon.in",)"
                    R"("ack_policy":"explicit"}})")
                    .find("\"error\""), std::string::npos);
      EXPECT_EQ(api("$JS.API.STREAM.CREATE.ARCHIVE", R"({"name":"ARCHIVE","mirror":{"name":"ORDERS"}})")
                    .find("\"error\""), std::string::npos);
      EXPECT_EQ(api("$JS.API.STREAM.CREATE.MEM", R"({"name":"MEM","subjects":["mem.>"],"storage":"memory"})")
                    .find("\"error\""), std::string::npos);
      EXPECT_EQ(api("$JS.API.CONSUMER.CREATE.MEM", R"({"stream_name":"MEM","config":{"ack_policy":"explicit"}})")
                    .find("\"error\""), std::string::npos);
    }
    for (int i = 0; i < 5; ++i) api("orders.created", "x");
    auto sub = subscribe_sync(nc.get(), "mon.in");  // the push consumer delivers, unacked
    ASSERT_TRUE(sub);
    api("$JS.API.CONSUMER.MSG.NEXT.ORDERS.billing", R"({"batch":2})");
    nc.reset();
    ASSERT_EQ(kill(c.pid, SIGTERM), 0);
    const int status = wait_exit(c.pid, 5000ms);
    ASSERT_NE(status, -1) << "life " << life << ": the server did not stop";
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
        << "life " << life << ": status " << status
        << (WIFSIGNALED(status) ? " (signal " + std::to_string(WTERMSIG(status)) + ")" : std::string());
  }
  std::filesystem::remove_all(base + "_store");
  unlink(conf.c_str());
}

INSTANTIATE_TEST_SUITE_P(placements, jetstream_stop,
                         ::testing::Values(restart_case{"default", ""}, restart_case{"shards2", "shards: 2"},
                                           restart_case{"jsthreads2", "js_threads: 2"},
                                           restart_case{"consthreads1", "js_threads: 2\nconsumer_threads: 1"}),
                         [](const auto& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace peregrine::test
