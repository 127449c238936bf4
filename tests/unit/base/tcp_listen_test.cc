#include "src/base/tcp_listen.h"

#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>

namespace {

TEST(tcp_listen, port_zero_gets_a_port_that_accepts_connections) {
  auto l = base::listen_tcp("127.0.0.1", 0, 8, false);
  ASSERT_TRUE(l);
  EXPECT_GT(l->port, 0);
  const int c = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(std::uint16_t(l->port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  EXPECT_EQ(::connect(c, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  ::close(c);
  ::close(l->fd);
}

TEST(tcp_listen, a_taken_port_is_an_io_error_with_its_errno) {
  auto first = base::listen_tcp("127.0.0.1", 0, 8, true);
  ASSERT_TRUE(first);
  auto second = base::listen_tcp("127.0.0.1", first->port, 8, true);
  ASSERT_FALSE(second);
  EXPECT_EQ(second.code(), base::errc::io_error);
  EXPECT_EQ(second.err().sys_errno, EADDRINUSE);
  ::close(first->fd);
}

TEST(tcp_listen, an_unresolvable_host_is_invalid) {
  auto l = base::listen_tcp("no such host.invalid", 0, 8, false);
  ASSERT_FALSE(l);
  EXPECT_EQ(l.code(), base::errc::invalid_argument);
}

}  // namespace
