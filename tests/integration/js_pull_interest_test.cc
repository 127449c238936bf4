// Pull requests and interest, as nats-server does them (issue 15, item 3): the 503
// no-responders status for a pull or direct get that reaches no stream or consumer, waiting
// requests whose inbox lost interest, requests that outlive their connection, push consumers
// removed after inactive_threshold without interest, and the stream's consumer_limits.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <mutex>
#include <thread>
#include <vector>

#include "tests/integration/js_fixture.h"

namespace peregrine::test {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;

bool is_peregrine() { return server_binary().find("peregrine") != std::string::npos; }

// A TCP forwarder to the server whose connections the test can cut, so a libnats client
// reconnects (through it again) while the server keeps running.
class cuttable_proxy {
 public:
  explicit cuttable_proxy(int server_port) : server_port_(server_port) {
    listen_fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(a);
    if (::bind(listen_fd_, reinterpret_cast<sockaddr*>(&a), len) != 0 || ::listen(listen_fd_, 8) != 0) return;
    ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&a), &len);
    port_ = ntohs(a.sin_port);
    accept_thread_ = std::thread([this] { accept_loop(); });
  }
  ~cuttable_proxy() {
    stopping_ = true;
    ::shutdown(listen_fd_, SHUT_RDWR);
    ::close(listen_fd_);
    cut();
    if (accept_thread_.joinable()) accept_thread_.join();
    for (auto& t : pumps_) t.join();
    std::lock_guard lk(mu_);
    for (int fd : fds_) ::close(fd);
  }
  int port() const { return port_; }
  // Drops every forwarded connection (both sides see a reset/EOF).
  void cut() {
    std::lock_guard lk(mu_);
    for (int fd : fds_) ::shutdown(fd, SHUT_RDWR);
  }

 private:
  void accept_loop() {
    while (!stopping_) {
      int client = ::accept(listen_fd_, nullptr, nullptr);
      if (client < 0) return;
      int upstream = ::socket(AF_INET, SOCK_STREAM, 0);
      sockaddr_in a{};
      a.sin_family = AF_INET;
      a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
      a.sin_port = htons(std::uint16_t(server_port_));
      if (::connect(upstream, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0) {
        ::close(client);
        ::close(upstream);
        continue;
      }
      std::lock_guard lk(mu_);
      fds_.push_back(client);
      fds_.push_back(upstream);
      pumps_.emplace_back([client, upstream] { pump(client, upstream); });
      pumps_.emplace_back([client, upstream] { pump(upstream, client); });
    }
  }
  static void pump(int from, int to) {
    char buf[16384];
    for (;;) {
      ssize_t n = ::recv(from, buf, sizeof buf, 0);
      if (n <= 0 || ::send(to, buf, size_t(n), MSG_NOSIGNAL) != n) break;
    }
    ::shutdown(to, SHUT_RDWR);
    ::shutdown(from, SHUT_RDWR);
  }

  int server_port_;
  int listen_fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stopping_{false};
  std::thread accept_thread_;
  std::mutex mu_;
  std::vector<int> fds_;
  std::vector<std::thread> pumps_;
};

class js_pull_interest : public js_test {
 protected:
  json create_consumer(const std::string& stream, const json& cfg) {
    json req = {{"stream_name", stream}, {"config", cfg}};
    const std::string name = cfg.contains("durable_name") ? "." + cfg["durable_name"].get<std::string>() : "";
    return request("$JS.API.CONSUMER.CREATE." + stream + name, req.dump());
  }
  void fill(const std::string& subject, int n) {
    for (int i = 0; i < n; ++i) {
      json ack = publish(subject, "m" + std::to_string(i));
      ASSERT_TRUE(ack.contains("seq")) << ack;
    }
  }
  std::int64_t info_waiting(const std::string& consumer) {
    json i = request("$JS.API.CONSUMER.INFO.ORDERS." + consumer);
    return i.contains("num_waiting") ? i["num_waiting"].get<std::int64_t>() : -1;
  }
  // A request with libnats (headers + no_responders, as every libnats connection): its status.
  natsStatus request_status(const std::string& subject, const std::string& body) {
    natsMsg* reply = nullptr;
    natsStatus s = natsConnection_RequestString(&reply, nc_.get(), subject.c_str(), body.c_str(), 1500);
    natsMsg_Destroy(reply);
    return s;
  }
};

// nats-server 2.10.26+/2.11: nothing is subscribed to MSG.NEXT of a missing consumer, so the
// requester gets the 503 no-responders status at once (2.9.10 stays silent: Peregrine only).
TEST_F(js_pull_interest, pull_for_missing_stream_or_consumer_gets_no_responders) {
  if (!is_peregrine()) GTEST_SKIP() << "nats-server 2.9.10 predates the 503 for missing consumers";
  ASSERT_FALSE(create({{"name", "ORDERS"}, {"subjects", {"orders.>"}}}).contains("error"));
  ASSERT_FALSE(create_consumer("ORDERS", {{"durable_name", "C"}, {"ack_policy", "explicit"}}).contains("error"));
  natsStatus missing_stream = request_status("$JS.API.CONSUMER.MSG.NEXT.NOPE.C", "{\"batch\":1}");
  EXPECT_EQ(missing_stream, NATS_NO_RESPONDERS) << status_text(missing_stream);
  natsStatus missing_consumer = request_status("$JS.API.CONSUMER.MSG.NEXT.ORDERS.NOPE", "{\"batch\":1}");
  EXPECT_EQ(missing_consumer, NATS_NO_RESPONDERS) << status_text(missing_consumer);
  // The existing consumer still answers (a no_wait pull on an empty stream: 404).
  natsStatus existing = request_status("$JS.API.CONSUMER.MSG.NEXT.ORDERS.C", "{\"batch\":1,\"no_wait\":true}");
  EXPECT_EQ(existing, NATS_OK) << status_text(existing);
}

TEST_F(js_pull_interest, direct_get_for_missing_stream_gets_no_responders) {
  if (!is_peregrine()) GTEST_SKIP() << "nats-server 2.9.10 predates the 503 for missing streams";
  ASSERT_FALSE(create({{"name", "KV"}, {"subjects", {"kv.>"}}, {"allow_direct", true}}).contains("error"));
  ASSERT_FALSE(create({{"name", "NODIRECT"}, {"subjects", {"nd.>"}}}).contains("error"));
  fill("kv.a", 1);
  natsStatus missing = request_status("$JS.API.DIRECT.GET.NOPE", "{\"seq\":1}");
  EXPECT_EQ(missing, NATS_NO_RESPONDERS) << status_text(missing);
  natsStatus missing_subj = request_status("$JS.API.DIRECT.GET.NOPE.kv.a", "");
  EXPECT_EQ(missing_subj, NATS_NO_RESPONDERS) << status_text(missing_subj);
  natsStatus no_stream_token = request_status("$JS.API.DIRECT.GET", "{\"seq\":1}");
  EXPECT_EQ(no_stream_token, NATS_NO_RESPONDERS) << status_text(no_stream_token);
  natsStatus no_direct = request_status("$JS.API.DIRECT.GET.NODIRECT", "{\"seq\":1}");
  EXPECT_EQ(no_direct, NATS_NO_RESPONDERS) << status_text(no_direct);
  natsStatus found = request_status("$JS.API.DIRECT.GET.KV", "{\"seq\":1}");
  EXPECT_EQ(found, NATS_OK) << status_text(found);
}

// The exact wire form, and only to clients that asked for it (headers + no_responders).
TEST_F(js_pull_interest, no_responders_status_bytes_and_opt_out) {
  if (!is_peregrine()) GTEST_SKIP() << "nats-server 2.9.10 predates the 503 for missing consumers";
  raw_client c;
  ASSERT_TRUE(c.open(port()));
  ASSERT_TRUE(c.send("SUB _INBOX.r 1\r\nPUB $JS.API.CONSUMER.MSG.NEXT.NOPE.C _INBOX.r 0\r\n\r\n"));
  auto line = c.read_line();
  ASSERT_TRUE(line);
  EXPECT_EQ(*line, "HMSG _INBOX.r 1 16 16\r\n");
  auto body = c.read_bytes(18);
  ASSERT_TRUE(body);
  EXPECT_EQ(*body, "NATS/1.0 503\r\n\r\n\r\n");

  raw_client old;
  ASSERT_TRUE(old.open(port(), "CONNECT {\"verbose\":false,\"headers\":true,\"no_responders\":false}\r\n"));
  ASSERT_TRUE(old.send("SUB _INBOX.r 1\r\nPUB $JS.API.DIRECT.GET.NOPE _INBOX.r 0\r\n\r\n"));
  EXPECT_TRUE(old.quiet_for(300ms));
}

// A waiting request belongs to its reply subject, not to the connection that sent it: a
// client that reconnects and re-subscribes its inbox before the request expires gets the
// messages (nats.c's fetch across a reconnect).
TEST_F(js_pull_interest, waiting_request_outlives_its_connection) {
  ASSERT_FALSE(create({{"name", "ORDERS"}, {"subjects", {"orders.>"}}}).contains("error"));
  ASSERT_FALSE(create_consumer("ORDERS", {{"durable_name", "C"}, {"ack_policy", "explicit"}}).contains("error"));
  {
    raw_client first;
    ASSERT_TRUE(first.open(port()));
    ASSERT_TRUE(first.send("SUB _INBOX.keep.1 1\r\n"));
    const std::string body = "{\"batch\":2,\"expires\":10000000000}";
    ASSERT_TRUE(first.send("PUB $JS.API.CONSUMER.MSG.NEXT.ORDERS.C _INBOX.keep.1 " + std::to_string(body.size()) +
                           "\r\n" + body + "\r\n"));
    ASSERT_TRUE(first.ping_pong());
    // nats-server queues pull requests to the consumer asynchronously: wait until it holds it.
    for (int i = 0; i < 100 && info_waiting("C") < 1; ++i) std::this_thread::sleep_for(20ms);
    ASSERT_EQ(info_waiting("C"), 1);
  }  // the connection drops with the request waiting
  std::this_thread::sleep_for(300ms);
  raw_client second;
  ASSERT_TRUE(second.open(port()));
  ASSERT_TRUE(second.send("SUB _INBOX.keep.1 7\r\n"));
  ASSERT_TRUE(second.ping_pong());
  fill("orders.new", 1);
  auto line = second.read_line(3s);
  ASSERT_TRUE(line) << "the waiting request died with its connection";
  EXPECT_TRUE(line->starts_with("MSG orders.new 7 $JS.ACK.ORDERS.C.1.1.1.")) << *line;
  json info = request("$JS.API.CONSUMER.INFO.ORDERS.C");
  EXPECT_EQ(info["num_waiting"], 1) << info;  // one more message to go
}

// An inbox unsubscribed while its request waits: the request is dropped when a message
// comes, so the messages go to the next request (partly filled no_wait: messages, then 408).
TEST_F(js_pull_interest, request_of_unsubscribed_inbox_gets_nothing) {
  ASSERT_FALSE(create({{"name", "ORDERS"}, {"subjects", {"orders.>"}}}).contains("error"));
  ASSERT_FALSE(create_consumer("ORDERS", {{"durable_name", "C"}, {"ack_policy", "explicit"}}).contains("error"));
  sub_ptr dead = subscribe_sync(nc_.get(), "_INBOX.dead");
  natsConnection_PublishRequestString(nc_.get(), "$JS.API.CONSUMER.MSG.NEXT.ORDERS.C", "_INBOX.dead",
                                      "{\"batch\":10,\"expires\":30000000000}");
  ASSERT_EQ(natsConnection_Flush(nc_.get()), NATS_OK);
  ASSERT_EQ(natsSubscription_Unsubscribe(dead.get()), NATS_OK);
  ASSERT_EQ(natsConnection_Flush(nc_.get()), NATS_OK);
  fill("orders.new", 3);
  sub_ptr live = subscribe_sync(nc_.get(), "_INBOX.live");
  natsConnection_PublishRequestString(nc_.get(), "$JS.API.CONSUMER.MSG.NEXT.ORDERS.C", "_INBOX.live",
                                      "{\"batch\":5,\"no_wait\":true}");
  int data = 0;
  std::string status;
  while (msg_ptr m = next_msg(live.get(), 2000ms)) {
    const char* v = nullptr;
    if (natsMsgHeader_Get(m.get(), "Status", &v) == NATS_OK) {
      status = v;
      break;
    }
    ++data;
  }
  EXPECT_EQ(data, 3);
  EXPECT_EQ(status, "408");
}

// nats-server removes a push consumer whose deliver subject lost interest once the
// threshold passed, unacked deliveries or not (2.9.10: ~0.15 s for 50 ms).
TEST_F(js_pull_interest, push_consumer_without_interest_expires_despite_unacked) {
  ASSERT_FALSE(create({{"name", "ORDERS"}, {"subjects", {"orders.>"}}}).contains("error"));
  fill("orders.new", 2);
  sub_ptr dlv = subscribe_sync(nc_.get(), "dlv.push");
  json r = create_consumer("ORDERS", {{"durable_name", "P"}, {"deliver_subject", "dlv.push"},
                                      {"ack_policy", "explicit"}, {"inactive_threshold", 50000000}});
  ASSERT_FALSE(r.contains("error")) << r;
  ASSERT_TRUE(next_msg(dlv.get(), 2000ms));  // delivered, never acked
  ASSERT_EQ(natsSubscription_Unsubscribe(dlv.get()), NATS_OK);
  ASSERT_EQ(natsConnection_Flush(nc_.get()), NATS_OK);
  const auto t0 = std::chrono::steady_clock::now();
  json info;
  while (std::chrono::steady_clock::now() - t0 < 5s) {
    info = request("$JS.API.CONSUMER.INFO.ORDERS.P");
    if (info.contains("error")) break;
    std::this_thread::sleep_for(20ms);
  }
  const auto took = std::chrono::steady_clock::now() - t0;
  ASSERT_TRUE(info.contains("error")) << "still there after 5 s: " << info;
  EXPECT_EQ(info["error"]["err_code"], 10014);
  std::cout << "removed after " << std::chrono::duration<double, std::milli>(took).count() << " ms\n";
  EXPECT_LT(took, 2500ms);  // nats-server: ~0.1 s; loose for a loaded machine (the ack wait is 30 s)
}

// Stream consumer_limits as ceilings and pedantic consumer creates (nats-server 2.10/2.11;
// 2.9.10 has neither: Peregrine only).
TEST_F(js_pull_interest, consumer_limits_ceiling_and_pedantic_create) {
  if (!is_peregrine()) GTEST_SKIP() << "nats-server 2.9.10 predates consumer_limits and pedantic";
  json s = create({{"name", "ORDERS"}, {"subjects", {"orders.>"}},
                   {"consumer_limits", {{"max_ack_pending", 100}, {"inactive_threshold", 30000000000}}}});
  ASSERT_FALSE(s.contains("error")) << s;
  json r = create_consumer("ORDERS", {{"durable_name", "BIG"}, {"ack_policy", "explicit"}, {"max_ack_pending", 500}});
  ASSERT_TRUE(r.contains("error")) << r;
  EXPECT_EQ(r["error"], json({{"code", 400}, {"err_code", 10121},
                              {"description", "consumer max ack pending exceeds system limit of 100"}}));
  r = create_consumer("ORDERS", {{"durable_name", "LONG"}, {"inactive_threshold", 60000000000}});
  EXPECT_EQ(r["error"]["err_code"], 10153) << r;
  EXPECT_EQ(r["error"]["description"], "consumer inactive threshold exceeds system limit of 30s") << r;
  r = create_consumer("ORDERS", {{"durable_name", "OK"}, {"ack_policy", "explicit"}});
  ASSERT_FALSE(r.contains("error")) << r;
  EXPECT_EQ(r["config"]["max_ack_pending"], 100);
  EXPECT_EQ(r["config"]["inactive_threshold"], 30000000000LL);

  json req = {{"stream_name", "ORDERS"}, {"pedantic", true},
              {"config", {{"durable_name", "P"}, {"ack_policy", "explicit"}, {"inactive_threshold", 1000000000}}}};
  r = request("$JS.API.CONSUMER.CREATE.ORDERS.P", req.dump());
  EXPECT_EQ(r["error"], json({{"code", 400}, {"err_code", 10157},
                              {"description", "pedantic mode: max_ack_pending must be set if it's configured in stream limits"}}))
      << r;
  req["config"]["max_ack_pending"] = 10;
  r = request("$JS.API.CONSUMER.CREATE.ORDERS.P", req.dump());
  EXPECT_FALSE(r.contains("error")) << r;
}

// nats.c's fetch across a reconnect: the pull request sent before the connection dropped
// still delivers to the inbox the client re-subscribed after reconnecting.
TEST_F(js_pull_interest, libnats_fetch_survives_a_reconnect) {
  ASSERT_FALSE(create({{"name", "ORDERS"}, {"subjects", {"orders.>"}}}).contains("error"));
  ASSERT_FALSE(create_consumer("ORDERS", {{"durable_name", "W"}, {"ack_policy", "explicit"}}).contains("error"));
  cuttable_proxy proxy(port());
  ASSERT_GT(proxy.port(), 0);
  opts_ptr opts = make_opts("nats://127.0.0.1:" + std::to_string(proxy.port()));
  natsOptions_SetAllowReconnect(opts.get(), true);
  natsOptions_SetMaxReconnect(opts.get(), 50);
  natsOptions_SetReconnectWait(opts.get(), 50);
  std::string err;
  nc_ptr worker = connect(opts.get(), &err);
  ASSERT_TRUE(worker) << err;
  jsCtx* raw_js = nullptr;
  ASSERT_EQ(natsConnection_JetStream(&raw_js, worker.get(), nullptr), NATS_OK);
  js_ptr wjs(raw_js);
  natsSubscription* raw = nullptr;
  jsErrCode jerr{};
  jsSubOptions so;
  jsSubOptions_Init(&so);
  so.Stream = "ORDERS";
  so.Consumer = "W";
  ASSERT_EQ(js_PullSubscribe(&raw, wjs.get(), nullptr, "W", nullptr, &so, &jerr), NATS_OK) << int(jerr);
  sub_ptr sub(raw);

  natsMsgList list{};
  natsStatus fetched = NATS_ERR;
  std::chrono::milliseconds took{};
  std::thread fetcher([&] {
    auto t0 = std::chrono::steady_clock::now();
    jsErrCode e{};
    fetched = natsSubscription_Fetch(&list, sub.get(), 1, 8000, &e);
    took = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0);
  });
  // The fetch's waiting request is in; then the connection drops and comes back.
  for (int i = 0; i < 100 && info_waiting("W") < 1; ++i) std::this_thread::sleep_for(20ms);
  proxy.cut();
  std::this_thread::sleep_for(200ms);
  for (int i = 0; i < 100 && natsConnection_Status(worker.get()) != NATS_CONN_STATUS_CONNECTED; ++i)
    std::this_thread::sleep_for(20ms);
  EXPECT_EQ(natsConnection_Status(worker.get()), NATS_CONN_STATUS_CONNECTED);
  EXPECT_EQ(natsConnection_Flush(worker.get()), NATS_OK);  // its subscriptions are back
  fill("orders.new", 1);
  fetcher.join();
  EXPECT_EQ(fetched, NATS_OK) << status_text(fetched) << " after " << took.count() << " ms";
  EXPECT_EQ(list.Count, 1);
  EXPECT_LT(took, 6000ms);
  natsMsgList_Destroy(&list);
}

}  // namespace
}  // namespace peregrine::test
