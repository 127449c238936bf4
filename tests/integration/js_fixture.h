// JetStream test fixture: a server with JetStream on a private store dir, a libnats
// connection and jsCtx, plus raw JSON request helpers for exact wire checks.
#pragma once

#include <dirent.h>
#include <signal.h>

#include <fstream>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "tests/integration/server_fixture.h"

namespace peregrine::test {

struct js_deleter {
  void operator()(jsCtx* js) const { jsCtx_Destroy(js); }
};
struct stream_info_deleter {
  void operator()(jsStreamInfo* si) const { jsStreamInfo_Destroy(si); }
};
struct ack_deleter {
  void operator()(jsPubAck* a) const { jsPubAck_Destroy(a); }
};
using js_ptr = std::unique_ptr<jsCtx, js_deleter>;
using stream_info_ptr = std::unique_ptr<jsStreamInfo, stream_info_deleter>;
using ack_ptr = std::unique_ptr<jsPubAck, ack_deleter>;

class js_test : public server_test {
 protected:
  std::string extra_conf() const override { return "jetstream {\n  store_dir: \"@TMPDIR@/js\"\n}\n"; }

  void SetUp() override {
    server_test::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    reconnect();
  }
  void TearDown() override {
    js_.reset();
    nc_.reset();
    server_test::TearDown();
  }

  void reconnect() {
    js_.reset();
    nc_.reset();
    std::string err;
    nc_ = connect(url(), &err);
    ASSERT_TRUE(nc_) << err;
    jsCtx* js = nullptr;
    ASSERT_EQ(natsConnection_JetStream(&js, nc_.get(), nullptr), NATS_OK);
    js_.reset(js);
  }

  // Raw request; returns the reply payload as JSON (null on timeout: 2 s, stretched under the
  // sanitizers, where a 1 MB create takes several seconds).
  nlohmann::json request(const std::string& subject, const std::string& body = {}) {
    natsMsg* reply = nullptr;
    const int timeout_ms = int(2000 * sanitizer_time_scale());
    natsStatus s = natsConnection_RequestString(&reply, nc_.get(), subject.c_str(), body.c_str(), timeout_ms);
    if (s != NATS_OK) return nullptr;
    msg_ptr m(reply);
    std::string data(natsMsg_GetData(m.get()), static_cast<size_t>(natsMsg_GetDataLength(m.get())));
    auto j = nlohmann::json::parse(data, nullptr, false);
    return j.is_discarded() ? nlohmann::json(data) : j;
  }

  // Creates a stream from raw JSON config; returns the response.
  nlohmann::json create(const nlohmann::json& cfg) {
    return request("$JS.API.STREAM.CREATE." + cfg["name"].get<std::string>(), cfg.dump());
  }

  // Publishes with headers (name, value pairs) and returns the PubAck JSON.
  nlohmann::json publish(const std::string& subject, const std::string& data,
                         std::initializer_list<std::pair<const char*, const char*>> headers = {}) {
    natsMsg* msg = nullptr;
    natsMsg_Create(&msg, subject.c_str(), nullptr, data.data(), static_cast<int>(data.size()));
    for (const auto& [k, v] : headers) natsMsgHeader_Set(msg, k, v);
    natsMsg* reply = nullptr;
    natsStatus s = natsConnection_RequestMsg(&reply, nc_.get(), msg, 2000);
    natsMsg_Destroy(msg);
    if (s != NATS_OK) return std::string("status: ") + natsStatus_GetText(s);
    msg_ptr m(reply);
    std::string body(natsMsg_GetData(m.get()), static_cast<size_t>(natsMsg_GetDataLength(m.get())));
    auto j = nlohmann::json::parse(body, nullptr, false);
    return j.is_discarded() ? nlohmann::json(body) : j;
  }

  nlohmann::json state(const std::string& stream, const std::string& body = {}) {
    return request("$JS.API.STREAM.INFO." + stream, body)["state"];
  }

  // The server's pid, found through the config path on its command line (for kill -9).
  pid_t server_pid() const {
    const std::string needle = (server_->tmp_dir() / "server.conf").string();
    DIR* d = opendir("/proc");
    pid_t found = -1;
    while (dirent* e = d ? readdir(d) : nullptr) {
      std::ifstream in(std::string("/proc/") + e->d_name + "/cmdline");
      std::string cmd((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      if (cmd.find(needle) != std::string::npos) found = static_cast<pid_t>(std::atoi(e->d_name));
    }
    if (d) closedir(d);
    return found;
  }

  // Stops the server (SIGKILL first when hard: nothing is flushed) and starts it again on
  // the same store, then reconnects.
  void restart(bool hard) {
    js_.reset();
    nc_.reset();
    if (hard) {
      pid_t pid = server_pid();
      ASSERT_GT(pid, 0);
      ::kill(pid, SIGKILL);
    }
    server_->stop();
    ASSERT_TRUE(server_->start()) << server_->error();
    reconnect();
  }

  nc_ptr nc_;
  js_ptr js_;
};

}  // namespace peregrine::test
