// Runs js_compare.py: the same JetStream requests to this server and to Debian's nats-server
// 2.9.10, replies diffed after removing newer-server fields (streams.md §14).
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include "tests/integration/server_process.h"

namespace peregrine::test {
namespace {

TEST(js_compare, replies_match_nats_server_2_9_10) {
  const std::string bin = server_binary();
  if (bin.empty() || bin.find("peregrine") == std::string::npos) GTEST_SKIP() << "needs peregrine-server";
  if (std::system("command -v nats-server >/dev/null 2>&1 && command -v python3 >/dev/null 2>&1") != 0)
    GTEST_SKIP() << "nats-server or python3 missing";
  std::filesystem::path script = std::filesystem::path(__FILE__).parent_path() / "js_compare.py";
  ASSERT_TRUE(std::filesystem::exists(script)) << script;
  const std::string cmd = "python3 '" + script.string() + "' '" + bin + "'";
  const int rc = std::system(cmd.c_str());
  ASSERT_TRUE(WIFEXITED(rc));
  EXPECT_EQ(WEXITSTATUS(rc), 0) << "see the DIFF lines above";
}

}  // namespace
}  // namespace peregrine::test
