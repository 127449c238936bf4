// The io_uring socket transport against a real loopback connection: pausing and resuming a
// connection's reads within one loop turn (what publisher back-pressure does when the full
// subscriber drains at once) must not lose the connection or its bytes. The tests only ever
// poll, never wait.
#include "net/uring_transport.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <string>
#include <thread>

namespace net {
namespace {

struct recorder final : transport_handler {
  conn_handle last = 0;
  int opened = 0, closed = 0;
  std::string data;
  void on_open(conn_handle h, std::string_view, int) override {
    last = h;
    ++opened;
  }
  void on_data(conn_handle, std::string_view bytes) override { data.append(bytes); }
  void on_close(conn_handle) override { ++closed; }
};

// Polls until `done` or ~2 s.
template <typename F>
bool poll_until(uring_transport& t, F done) {
  for (int i = 0; i < 2000 && !done(); ++i) {
    t.poll(0);
    t.flush();
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return done();
}

// A client socket connected to 127.0.0.1:port (-1 on failure).
int connect_loopback(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<std::uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

// A transport listening on a free port with one client connected to it (`fd`).
class uring_transport_test : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    t = uring_transport::create(why);
    if (!t) GTEST_SKIP() << "io_uring unavailable: " << why;
    t->set_handler(&rec);
    ASSERT_TRUE(t->listen("127.0.0.1", 0).ok());
    port = t->bound_port();
    fd = connect_loopback(port);
    ASSERT_GE(fd, 0);
    ASSERT_TRUE(poll_until(*t, [&] { return rec.opened == 1; }));
  }
  std::unique_ptr<uring_transport> t;
  recorder rec;
  int port = 0, fd = -1;
};

// Bytes that arrive while the recv is already armed complete as deferred task work: poll()
// skips io_uring_enter when it has nothing to submit, so it must still enter when the kernel
// flags that work (IORING_SQ_TASKRUN), or the bytes would wait for the next blocking wait.
TEST_F(uring_transport_test, bytes_arriving_on_an_armed_recv_are_taken_by_poll_alone) {
  for (int i = 0; i < 5; ++i) t->poll(0);  // the recv is armed, nothing to read, nothing queued
  for (int round = 0; round < 3; ++round) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    const std::string more = "late" + std::to_string(round);
    ASSERT_EQ(::send(fd, more.data(), more.size(), 0), static_cast<ssize_t>(more.size()));
    const std::string want = rec.data + more;
    EXPECT_TRUE(poll_until(*t, [&] { return rec.data == want; })) << rec.data;
  }
}

TEST_F(uring_transport_test, pause_then_resume_in_one_turn_keeps_reading) {
  ASSERT_EQ(::send(fd, "one", 3, 0), 3);
  ASSERT_TRUE(poll_until(*t, [&] { return rec.data == "one"; }));
  for (int round = 0; round < 3; ++round) {
    t->pause_reading(rec.last);  // queues a cancel of the armed recv
    t->resume_reading(rec.last);  // before the cancel completed: the recv still looks armed
    const std::string more = "more" + std::to_string(round);
    ASSERT_EQ(::send(fd, more.data(), more.size(), 0), static_cast<ssize_t>(more.size()));
    const std::string want = rec.data + more;
    EXPECT_TRUE(poll_until(*t, [&] { return rec.data == want || rec.closed > 0; })) << rec.data;
    EXPECT_EQ(rec.closed, 0) << "the connection was closed as if the peer had gone";
    EXPECT_EQ(rec.data, want);
  }
  ::close(fd);
  EXPECT_TRUE(poll_until(*t, [&] { return rec.closed == 1; }));
}

// A server restarted the moment the old process exits must be able to bind its port: after
// shutdown() the ring holds no listener or connection (its own teardown is asynchronous),
// with an accept and a connection's recv armed at the time.
TEST_F(uring_transport_test, shutdown_releases_the_port_at_once) {
  t->shutdown();
  t.reset();
  auto again = open_listener("127.0.0.1", port, false);
  EXPECT_TRUE(again.ok()) << "the port is still bound after shutdown";
  if (again.ok()) ::close(*again);
  EXPECT_EQ(rec.closed, 0) << "shutdown calls no handler";
  char byte = 0;
  EXPECT_EQ(::recv(fd, &byte, 1, 0), 0) << "the connection was closed";
  ::close(fd);
}

// append_owned: a string taken whole goes out after what the outbound buffer held before it
// and before what is appended after it, across several sends (bigger than a send chunk and
// than the socket's buffer), with flush_now in between, and counts as pending until sent.
TEST_F(uring_transport_test, taken_strings_leave_in_order_with_the_bytes_around_them) {
  const conn_handle h = rec.last;

  std::string want;
  auto append = [&](const std::string& s) {
    t->outbuf(h).append(s);
    want += s;
  };
  auto take = [&](std::string s) {
    want += s;
    t->append_owned(h, std::move(s));
  };
  append("head;");
  take(std::string(3 << 20, 'a'));  // three send chunks
  append("middle;");
  t->flush_now(h);  // sends some of what came first, synchronously
  take(std::string(1000, 'b'));
  take(std::string(70000, 'c'));  // two taken in a row
  append("tail;");
  EXPECT_GE(t->pending_bytes(h), 5u);
  t->flush();

  std::string got;
  auto receive = [&] {  // turns the transport while the client reads, until `want` is in
    char buf[65536];
    for (int i = 0; i < 4000 && got.size() < want.size(); ++i) {
      t->poll(0);
      t->flush();
      const ssize_t n = ::recv(fd, buf, sizeof buf, MSG_DONTWAIT);
      if (n > 0) got.append(buf, std::size_t(n));
      if (n <= 0) std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
  };
  receive();
  ASSERT_EQ(got.size(), want.size());
  EXPECT_TRUE(got == want) << "bytes out of order";
  EXPECT_TRUE(poll_until(*t, [&] { return t->pending_bytes(h) == 0; }));

  // Appended again afterwards: still in order behind them.
  take(std::string(100000, 'd'));
  append("after;");
  t->flush();
  const std::size_t before = got.size();
  receive();
  ASSERT_GT(got.size(), before);
  EXPECT_TRUE(got == want);
  ::close(fd);
  EXPECT_TRUE(poll_until(*t, [&] { return rec.closed == 1; }));
}

}  // namespace
}  // namespace net
