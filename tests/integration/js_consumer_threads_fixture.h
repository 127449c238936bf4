#pragma once
// The fixture of the consumer-thread suites (js_threads: 2, consumer_threads: 1): what each
// owner and the consumer thread handled (/metrics), the server's threads, pulls and pushes.
// Peregrine only (nats-server has no such placement).
#include <gtest/gtest.h>

#include <dirent.h>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "tests/integration/js_fixture.h"
#include "tests/integration/ops_harness.h"

namespace peregrine::test {

using namespace std::chrono_literals;

// Sanitizer builds run a slower server: meson sets PEREGRINE_TIME_SCALE (5 there, else 1).
inline int time_scale() {
  const char* v = std::getenv("PEREGRINE_TIME_SCALE");
  return v && std::atoi(v) > 0 ? std::atoi(v) : 1;
}

class js_consumer_threads : public js_test {
 protected:
  std::string extra_conf() const override {
    return js_test::extra_conf() + "js_threads: 2\nconsumer_threads: 1\nhttp_port: " + std::to_string(http_port_) +
           "\n";
  }
  void SetUp() override {
    if (server_binary().find("nats-server") != std::string::npos) GTEST_SKIP() << "Peregrine's consumer threads";
    js_test::SetUp();
  }

  // Messages both owners handled so far; -1 when /metrics does not show them.
  long long owners_handled() {
    const http_result r = http_get(http_port_, "/metrics");
    long long n = 0;
    for (int k : {0, 1}) {
      std::smatch m;
      const std::regex re("peregrine_jetstream_owner_messages_total\\{owner=\"" + std::to_string(k) + "\"\\} ([0-9]+)");
      if (!std::regex_search(r.body, m, re)) return -1;
      n += std::stoll(m[1]);
    }
    return n;
  }

  // Acks, flow-control answers and pulls consumer thread 0 received; -1 when not shown.
  long long consumer_thread_handled() {
    const http_result r = http_get(http_port_, "/metrics");
    std::smatch m;
    static const std::regex re("peregrine_jetstream_consumer_thread_messages_total\\{account=\"\\$G\",thread=\"0\"\\} ([0-9]+)");
    return std::regex_search(r.body, m, re) ? std::stoll(m[1]) : -1;
  }

  std::set<std::string> thread_names() {
    std::set<std::string> out;
    const std::string dir = "/proc/" + std::to_string(server_pid()) + "/task";
    DIR* d = opendir(dir.c_str());
    while (dirent* e = d ? readdir(d) : nullptr) {
      std::ifstream in(dir + "/" + e->d_name + "/comm");
      std::string name;
      if (std::getline(in, name)) out.insert(name);
    }
    if (d) closedir(d);
    return out;
  }

  // One pull of up to `batch` (expires 2 s); the messages' subjects, each acked unless `ack`
  // is false.
  std::vector<std::string> pull(const std::string& stream, const std::string& consumer, int batch, bool ack = true) {
    std::vector<std::string> got;
    natsSubscription* raw = nullptr;
    const std::string inbox = "_INBOX.ct." + std::to_string(++inbox_n_);
    if (natsConnection_SubscribeSync(&raw, nc_.get(), inbox.c_str()) != NATS_OK) return got;
    const std::string subj = "$JS.API.CONSUMER.MSG.NEXT." + stream + "." + consumer;
    const std::string body = nlohmann::json{{"batch", batch}, {"expires", 2000000000}}.dump();
    natsConnection_PublishRequestString(nc_.get(), subj.c_str(), inbox.c_str(), body.c_str());
    for (int i = 0; i < batch; ++i) {
      natsMsg* m = nullptr;
      if (natsSubscription_NextMsg(&m, raw, 5000) != NATS_OK) break;
      const char* reply = natsMsg_GetReply(m);
      if (reply == nullptr || std::string(reply).rfind("$JS.ACK.", 0) != 0) {  // a status: the batch is over
        natsMsg_Destroy(m);
        break;
      }
      got.emplace_back(natsMsg_GetSubject(m));
      if (ack) {
        natsMsg* r = nullptr;  // +ACK with a reply: answered once the ack is applied
        natsConnection_RequestString(&r, nc_.get(), reply, "+ACK", 5000);
        natsMsg_Destroy(r);
      }
      natsMsg_Destroy(m);
    }
    natsSubscription_Destroy(raw);
    return got;
  }

  // Reads the push consumer's deliver subject `sub` until `want` messages came (acking each
  // unless `ack` is false, answering flow control) and then an idle heartbeat, or the deadline.
  struct push_read {
    std::vector<std::string> subjects;
    int heartbeats = 0, flow_controls = 0;
  };
  push_read read_push(natsSubscription* sub, std::size_t want, bool ack = true) {
    push_read out;
    const auto deadline = std::chrono::steady_clock::now() + 10s * time_scale();
    while (std::chrono::steady_clock::now() < deadline && (out.subjects.size() < want || out.heartbeats == 0)) {
      natsMsg* m = nullptr;
      if (natsSubscription_NextMsg(&m, sub, 200) != NATS_OK) continue;
      const std::string reply = natsMsg_GetReply(m) ? natsMsg_GetReply(m) : "";
      if (reply.rfind("$JS.ACK.", 0) == 0) {
        out.subjects.emplace_back(natsMsg_GetSubject(m));
        if (ack) natsConnection_PublishString(nc_.get(), reply.c_str(), "+ACK");
      } else if (reply.rfind("$JS.FC.", 0) == 0) {
        ++out.flow_controls;
        natsConnection_PublishString(nc_.get(), reply.c_str(), "");
      } else if (out.subjects.size() >= want) {
        ++out.heartbeats;  // a status without a reply: the idle heartbeat
      }
      natsMsg_Destroy(m);
    }
    return out;
  }

  nlohmann::json consumer_info(const std::string& stream, const std::string& consumer) {
    return request("$JS.API.CONSUMER.INFO." + stream + "." + consumer);
  }

  int http_port_ = pick_free_port();
  int inbox_n_ = 0;
};

}  // namespace peregrine::test
