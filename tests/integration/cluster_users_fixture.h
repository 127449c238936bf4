// The cluster suites whose servers share one config of accounts and users
// (cluster_accounts_test.cc, cluster_system_test.cc): the three servers of cluster_fixture.h
// (A -> B, C -> B) each started with that config, and clients that connect as its users.
#pragma once

#include <string>

#include "tests/integration/cluster_fixture.h"

namespace peregrine::test {

inline nc_ptr connect_as(const std::string& url, const char* user, const char* pass) {
  auto o = make_opts(url);
  natsOptions_SetUserInfo(o.get(), user, pass);
  std::string err;
  auto nc = connect(o.get(), &err);
  EXPECT_TRUE(nc) << user << ": " << err;
  return nc;
}

class cluster_with_users : public cluster {
 protected:
  // A, B and C with `conf` (and no HTTP port), then the full mesh.
  void start_three(const std::string& conf) {
    if (server_binary().empty()) GTEST_SKIP() << "PEREGRINE_SERVER_BIN not set";
    for (auto& p : cport_) p = pick_free_port();
    add("A", cport_[0], {cport_[1]}, {}, conf);
    add("B", cport_[1], {}, {}, conf);
    add("C", cport_[2], {cport_[1]}, {}, conf);
    for (auto& s : servers_) ASSERT_TRUE(s->start()) << s->error();
    ASSERT_TRUE(wait_mesh()) << logs();
  }
};

}  // namespace peregrine::test
