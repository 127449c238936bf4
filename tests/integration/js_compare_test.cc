// Runs js_compare.py: the same JetStream requests to this server and to Debian's nats-server
// 2.9.10, replies diffed after removing newer-server fields (streams.md §14).
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include "tests/integration/server_process.h"

namespace peregrine::test {
namespace {

// Runs the script with extra arguments; returns its exit code (-1 when it did not exit).
int run_compare(const std::string& args) {
  std::filesystem::path script = std::filesystem::path(__FILE__).parent_path() / "js_compare.py";
  if (!std::filesystem::exists(script)) {
    ADD_FAILURE() << script << " not found (run from the build directory, as meson does)";
    return -1;
  }
  const std::string cmd = "python3 '" + script.string() + "' " + args + " '" + server_binary() + "'";
  const int rc = std::system(cmd.c_str());
  return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

bool have_tools() {
  const std::string bin = server_binary();
  return !bin.empty() && bin.find("peregrine") != std::string::npos &&
         std::system("command -v nats-server >/dev/null 2>&1 && command -v python3 >/dev/null 2>&1") == 0;
}

TEST(js_compare, replies_match_nats_server_2_9_10) {
  if (!have_tools()) GTEST_SKIP() << "needs peregrine-server, nats-server and python3";
  EXPECT_EQ(run_compare(""), 0) << "see the DIFF lines above";
}

// Consumer API requests (CREATE with many configs, INFO, NAMES, LIST, DELETE, MSG.NEXT statuses).
// The script exits 77 while Peregrine answers the consumer API with no responders (not wired yet);
// from the moment it answers, every difference fails.
TEST(js_compare, consumer_replies_match_nats_server_2_9_10) {
  if (!have_tools()) GTEST_SKIP() << "needs peregrine-server, nats-server and python3";
  const int rc = run_compare("--consumers");
  if (rc == 77) GTEST_SKIP() << "consumer API answers with no responders";
  EXPECT_EQ(rc, 0) << "see the DIFF lines above";
}

}  // namespace
}  // namespace peregrine::test
