// GoogleTest fixture: one fresh server per test, configured by the fixture's extra_conf().
#pragma once

#include <gtest/gtest.h>

#include <iostream>
#include <memory>
#include <string>

#include "tests/integration/nats_helpers.h"
#include "tests/integration/raw_client.h"
#include "tests/integration/server_process.h"

namespace peregrine::test {

class server_test : public ::testing::Test {
 protected:
  // Config keys appended to `port: N`; override per fixture.
  virtual std::string extra_conf() const { return {}; }

  void SetUp() override {
    if (server_binary().empty()) GTEST_SKIP() << "PEREGRINE_SERVER_BIN not set and no nats-server found";
    server_ = std::make_unique<server_process>(extra_conf());
    ASSERT_TRUE(server_->start()) << "binary: " << server_binary() << "\n" << server_->error();
  }

  void TearDown() override {
    if (HasFailure() && server_) std::cerr << "---- server log ----\n" << server_->log() << "----\n";
    server_.reset();
  }

  int port() const { return server_->port(); }
  std::string url() const { return server_->url(); }

  std::unique_ptr<server_process> server_;
};

}  // namespace peregrine::test
