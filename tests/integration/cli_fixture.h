// Fixture for the `peregrine` CLI integration tests: a JetStream server, the CLI binary run
// as a child process against it, and matchers for natscli's aligned "Label: value" lines.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "tests/integration/cli_runner.h"
#include "tests/integration/js_fixture.h"

namespace peregrine::test {

inline const std::string kOrder1 = R"({"order_id":"ord_8w2k","customer":"acme-co","total_cents":4200,"ts":"2026-05-22T10:14:22Z"})";
inline const std::string kOrder2 = R"({"order_id":"ord_2zr9","customer":"globex","total_cents":1250,"ts":"2026-05-22T10:14:25Z"})";

// `label: value` as a whole line of natscli's aligned output.
inline bool has_line(const std::string& text, const std::string& label, const std::string& value) {
  const std::string want = label + ": " + value + "\n";
  for (size_t p = text.find(want); p != std::string::npos; p = text.find(want, p + 1))
    if (p == 0 || text[p - 1] == ' ' || text[p - 1] == '\n') return true;
  return false;
}
inline bool contains(const std::string& text, const std::string& what) { return text.find(what) != std::string::npos; }
inline size_t occurrences(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t p = text.find(what); p != std::string::npos; p = text.find(what, p + 1)) ++n;
  return n;
}

class cli_test : public js_test {
 protected:
  void SetUp() override {
    if (cli_binary().empty()) GTEST_SKIP() << "PEREGRINE_CLI_BIN not set";
    js_test::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    cli_ = std::make_unique<cli_runner>(server_->tmp_dir(), url());
  }
  bool reference() const { return server_binary().find("nats-server") != std::string::npos; }

  cli_result ok(const std::vector<std::string>& args, const std::string& input = {}) {
    cli_result r = cli_->run(args, input);
    EXPECT_EQ(r.rc, 0) << join(args) << "\n" << r.all();
    return r;
  }
  cli_result fails(const std::vector<std::string>& args, const std::string& input = {}) {
    cli_result r = cli_->run(args, input);
    EXPECT_EQ(r.rc, 1) << join(args) << "\n" << r.all();
    return r;
  }
  static std::string join(const std::vector<std::string>& args) {
    std::string s = "peregrine";
    for (const auto& a : args) s += " " + a;
    return s;
  }
  // 13.1 + the first three publishes of 13.2.
  void orders_with_three() {
    ok({"stream", "add", "ORDERS", "--subjects", "orders.>", "--defaults"});
    ok({"pub", "--jetstream", "orders.created", kOrder1});
    ok({"pub", "--jetstream", "orders.created", kOrder2});
    ok({"pub", "--jetstream", "orders.shipped", kOrder1});
  }

  std::unique_ptr<cli_runner> cli_;
};

}  // namespace peregrine::test
