// The `peregrine` CLI beyond the chapter's pages: --help everywhere, --json, core pub/sub/req/reply,
// kv, push durables, server mappings, bad input, and the connection flags (users, TLS).
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <thread>

#include "tests/integration/cli_fixture.h"

namespace peregrine::test {
namespace {

TEST_F(cli_test, help_on_the_binary_and_every_subcommand) {
  const std::vector<std::vector<std::string>> paths = {
      {}, {"account"}, {"account", "info"}, {"stream"}, {"stream", "add"}, {"stream", "edit"}, {"stream", "info"},
      {"stream", "ls"}, {"stream", "rm"}, {"stream", "purge"}, {"stream", "get"}, {"stream", "rmm"},
      {"stream", "view"}, {"stream", "subjects"}, {"consumer"}, {"consumer", "add"}, {"consumer", "edit"},
      {"consumer", "info"}, {"consumer", "ls"}, {"consumer", "rm"}, {"consumer", "next"}, {"consumer", "pause"},
      {"consumer", "resume"}, {"consumer", "unpin"}, {"pub"}, {"sub"}, {"req"}, {"reply"}, {"kv"}, {"kv", "add"},
      {"kv", "put"}, {"kv", "get"}, {"kv", "del"}, {"kv", "ls"}, {"kv", "rm"}, {"kv", "info"},
      {"server"}, {"server", "mappings"}};
  for (auto args : paths) {
    args.push_back("--help");
    const cli_result r = ok(args);
    EXPECT_TRUE(contains(r.out, "Usage:")) << join(args) << "\n" << r.all();
  }
  EXPECT_TRUE(contains(ok({"stream", "add", "--help"}).out, "--max-msgs-per-subject"));
  EXPECT_TRUE(contains(ok({"pub", "--help"}).out, "--jetstream"));
  // `bench` hands everything to peregrine-bench (built after the tests, so it may be absent).
  const cli_result bench = cli_->run({"bench", "--help"});
  EXPECT_TRUE((bench.rc == 0 && contains(bench.out, "Usage: peregrine-bench")) ||
              (bench.rc == 1 && contains(bench.err, "cannot run peregrine-bench")))
      << bench.all();
  // No subcommand, an unknown one, a missing argument: usage errors, not crashes.
  EXPECT_NE(cli_->run({}).rc, 0);
  EXPECT_NE(cli_->run({"nonsense"}).rc, 0);
  EXPECT_NE(cli_->run({"stream", "info"}).rc, 0);
}

// A durable push consumer read with sub --durable: its delivery subject, acked, to the end.
TEST_F(cli_test, sub_reads_a_push_durable) {
  orders_with_three();
  cli_result r = ok({"consumer", "add", "ORDERS", "monitor", "--target", "deliver.monitor", "--deliver", "all", "--ack",
                     "explicit", "--defaults"});
  EXPECT_TRUE(has_line(r.out, "Delivery Subject", "deliver.monitor")) << r.out;
  EXPECT_FALSE(contains(r.out, "Pull Mode")) << r.out;
  r = ok({"sub", "--stream", "ORDERS", "--durable", "monitor", "--terminate-at-end", "--ack"});
  EXPECT_EQ(occurrences(r.out, "Received JetStream message"), 3u) << r.out;
  EXPECT_TRUE(contains(r.out, "stream: ORDERS seq: 3 / pending: 0 / subject: orders.shipped")) << r.out;
  // Acks are flushed before the CLI exits; the server may apply them a moment later.
  for (int i = 0; i < 50; ++i) {
    r = ok({"consumer", "info", "ORDERS", "monitor"});
    if (contains(r.out, "Acknowledgment Floor: Consumer sequence: 3 Stream sequence: 3")) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_TRUE(contains(r.out, "Acknowledgment Floor: Consumer sequence: 3 Stream sequence: 3")) << r.out;
}

// --json prints the server's own reply (its field order, without the API type tag).
TEST_F(cli_test, json_output_is_the_servers_json) {
  orders_with_three();
  cli_result r = ok({"stream", "info", "ORDERS", "--json"});
  const auto cli_json = nlohmann::ordered_json::parse(r.out, nullptr, false);
  ASSERT_FALSE(cli_json.is_discarded()) << r.out;
  EXPECT_FALSE(cli_json.contains("type"));
  EXPECT_EQ(cli_json["config"]["num_replicas"], 1);
  EXPECT_EQ(cli_json["state"]["messages"], 3);
  EXPECT_TRUE(contains(r.out, "\"num_replicas\": 1")) << r.out;  // the chapter's grep
  // Same keys in the same order as the raw API reply.
  natsMsg* reply = nullptr;
  ASSERT_EQ(natsConnection_RequestString(&reply, nc_.get(), "$JS.API.STREAM.INFO.ORDERS", "", 2000), NATS_OK);
  auto raw = nlohmann::ordered_json::parse(std::string(natsMsg_GetData(reply), natsMsg_GetDataLength(reply)));
  natsMsg_Destroy(reply);
  std::vector<std::string> raw_keys, cli_keys;
  for (auto it = raw["config"].begin(); it != raw["config"].end(); ++it) raw_keys.push_back(it.key());
  for (auto it = cli_json["config"].begin(); it != cli_json["config"].end(); ++it) cli_keys.push_back(it.key());
  EXPECT_EQ(cli_keys, raw_keys);

  ok({"consumer", "add", "ORDERS", "billing", "--pull", "--defaults"});
  const auto ci = nlohmann::json::parse(ok({"consumer", "info", "ORDERS", "billing", "--json"}).out);
  EXPECT_EQ(ci["name"], "billing");
  EXPECT_EQ(ci["num_pending"], 3);
  const auto msg = nlohmann::json::parse(ok({"stream", "get", "ORDERS", "1", "--json"}).out);
  EXPECT_EQ(msg["subject"], "orders.created");
  EXPECT_EQ(msg["seq"], 1);
  const auto names = nlohmann::json::parse(ok({"stream", "ls", "--names", "--json"}).out);
  EXPECT_EQ(names, nlohmann::json::array({"ORDERS"}));
}

// pub/sub/req/reply with templates and headers.
TEST_F(cli_test, core_pub_sub_request_reply) {
  auto sub = cli_->start({"sub", "greet.>", "--count", "3"});
  // Wait until the subscription is registered: a request to it gets "no responders" until then
  // is not observable for plain subs, so retry publishing until the subscriber saw all three.
  cli_result pub;
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  pub = ok({"pub", "greet.x", "hello {{Count}} {{ID}}", "--count", "3", "-H", "X-Seq:{{Count}}"});
  EXPECT_EQ(occurrences(pub.out, "Published "), 3u) << pub.out;
  cli_result got = cli_->finish(sub, std::chrono::seconds(10));
  if (got.rc == -1) GTEST_SKIP() << "subscriber missed the messages (it started late under load)";
  EXPECT_EQ(got.rc, 0) << got.all();
  EXPECT_TRUE(contains(got.out, "[#1] Received on \"greet.x\"")) << got.out;
  EXPECT_TRUE(contains(got.out, "X-Seq: 3")) << got.out;
  EXPECT_TRUE(contains(got.out, "hello 2 ")) << got.out;
  EXPECT_FALSE(contains(got.out, "{{")) << got.out;

  auto responder = cli_->start({"reply", "svc.echo", "pong {{Count}}", "--count", "1"});
  cli_result req;
  for (int i = 0; i < 50; ++i) {  // until the responder is subscribed
    req = cli_->run({"--timeout", "1", "req", "svc.echo", "ping"});
    if (req.rc == 0) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_EQ(req.rc, 0) << req.all();
  EXPECT_TRUE(contains(req.out, "Sending request on \"svc.echo\"")) << req.out;
  EXPECT_TRUE(contains(req.out, "Received with rtt ")) << req.out;
  EXPECT_TRUE(contains(req.out, "pong 1")) << req.out;
  const cli_result rep = cli_->finish(responder);
  EXPECT_EQ(rep.rc, 0) << rep.all();
  EXPECT_TRUE(contains(rep.out, "Received on subject \"svc.echo\"")) << rep.out;
  EXPECT_TRUE(contains(rep.out, "ping")) << rep.out;
}

TEST_F(cli_test, kv_basics) {
  cli_result r = ok({"kv", "add", "CFG", "--history", "3"});
  EXPECT_TRUE(contains(r.out, "CFG")) << r.out;
  EXPECT_EQ(ok({"kv", "put", "CFG", "color", "blue"}).out, "blue\n");
  ok({"kv", "put", "CFG", "size", "10"});
  r = ok({"kv", "get", "CFG", "color"});
  EXPECT_TRUE(contains(r.out, "CFG > color revision: 1 created @ ")) << r.out;
  EXPECT_TRUE(contains(r.out, "\nblue\n")) << r.out;
  EXPECT_EQ(ok({"kv", "get", "CFG", "size", "--raw"}).out, "10\n");
  ok({"kv", "del", "CFG", "color", "--force"});
  r = fails({"kv", "get", "CFG", "color"});
  EXPECT_TRUE(contains(r.err, "key not found")) << r.err;
  EXPECT_EQ(ok({"kv", "ls", "CFG"}).out, "size\n");
  EXPECT_EQ(ok({"kv", "ls"}).out, "CFG\n");
  EXPECT_TRUE(has_line(ok({"kv", "info", "CFG"}).out, "History Kept", "3"));
  ok({"kv", "rm", "CFG", "--force"});
  EXPECT_EQ(ok({"kv", "ls"}).out, "No Key-Value buckets found\n");
}

// 13.19: `server mappings` tries a transform locally (the server's transform code, no server).
TEST_F(cli_test, server_mappings_like_the_chapter) {
  EXPECT_EQ(ok({"server", "mappings", "orders.*", "orders.{{wildcard(1)}}.archived", "orders.created"}).out,
            "orders.created.archived\n");
  // The partitions the chapter's ORDERS-SHARDED stream shows for the same three subjects.
  EXPECT_EQ(ok({"server", "mappings", "ingest.*", "orders.{{partition(3,1)}}.{{wildcard(1)}}", "ingest.acme",
                "ingest.globex", "ingest.wayne"}).out,
            "orders.1.acme\norders.1.globex\norders.2.wayne\n");
  EXPECT_EQ(ok({"server", "mappings", "a.*", "b.{{wildcard(1)}}"}, "a.x\na.y\n").out, "b.x\nb.y\n");  // stdin
  cli_result r = fails({"server", "mappings", "a.*", "b.{{wildcard(2)}}", "a.x"});
  EXPECT_TRUE(contains(r.err, "invalid mapping destination")) << r.err;
  r = fails({"server", "mappings", "a.*", "b.{{wildcard(1)}}", "c.x"});
  EXPECT_TRUE(contains(r.err, "c.x does not match a.*")) << r.err;
}

// Bad input: a clear error and exit status, never a crash or a hang.
TEST_F(cli_test, bad_input_gets_clear_errors) {
  orders_with_three();
  cli_result r = fails({"stream", "edit", "ORDERS", "--max-age", "7 days"});
  EXPECT_TRUE(contains(r.err, "invalid duration for --max-age: 7 days")) << r.err;
  r = fails({"stream", "edit", "ORDERS", "--max-bytes", "lots"});
  EXPECT_TRUE(contains(r.err, "invalid size for --max-bytes")) << r.err;
  r = fails({"pub", "orders.created", "{{Nope}}"});
  EXPECT_TRUE(contains(r.err, "unknown template function: {{Nope}}")) << r.err;
  r = fails({"pub", "orders.created", "x", "-H", "no-colon"});
  EXPECT_TRUE(contains(r.err, "invalid header")) << r.err;
  r = fails({"stream", "info", "MISSING"});
  EXPECT_TRUE(contains(r.err, "stream not found (10059)")) << r.err;
  r = fails({"consumer", "info", "ORDERS", "missing"});
  EXPECT_TRUE(contains(r.err, "consumer not found (10014)")) << r.err;
  r = fails({"consumer", "next", "ORDERS", "missing"});
  EXPECT_TRUE(contains(r.err, "consumer not found")) << r.err;
  r = fails({"consumer", "add", "ORDERS", "x", "--pull", "--deliver", "sometime"});
  EXPECT_TRUE(contains(r.err, "invalid --deliver")) << r.err;
  r = fails({"stream", "get", "ORDERS"});
  EXPECT_TRUE(contains(r.err, "a message sequence or --last-for is required")) << r.err;
  EXPECT_NE(cli_->run({"stream", "add", "X", "--storage", "tape"}).rc, 0);
  // No server there: an error within the connect timeout.
  cli_runner nowhere(server_->tmp_dir(), "nats://127.0.0.1:1");
  r = nowhere.run({"stream", "ls"});
  EXPECT_EQ(r.rc, 1) << r.all();
  EXPECT_TRUE(contains(r.err, "peregrine: error: nats: no servers available for connection")) << r.err;
}

}  // namespace
}  // namespace peregrine::test

namespace peregrine::test {
namespace {

// --user/--password (and credentials in NATS_URL-style URLs) against a server with users.
class cli_auth_test : public js_test {
 protected:
  std::string extra_conf() const override {
    return js_test::extra_conf() + "authorization {\n  user: acme\n  password: s3cret\n}\n";
  }
  void SetUp() override {
    if (cli_binary().empty()) GTEST_SKIP() << "PEREGRINE_CLI_BIN not set";
    server_test::SetUp();  // no fixture connection: it would need the password
  }
};

TEST_F(cli_auth_test, user_and_password_flags) {
  cli_runner anonymous(server_->tmp_dir(), url());
  cli_result r = anonymous.run({"stream", "ls"});
  EXPECT_EQ(r.rc, 1) << r.all();
  EXPECT_TRUE(contains(r.err, "peregrine: error: ")) << r.err;
  EXPECT_TRUE(contains(r.err, "uthorization")) << r.err;  // libnats: "Authorization Violation"
  r = anonymous.run({"--user", "acme", "--password", "wrong", "stream", "ls"});
  EXPECT_EQ(r.rc, 1) << r.all();
  r = anonymous.run({"--user", "acme", "--password", "s3cret", "stream", "add", "ORDERS", "--subjects", "orders.>", "--defaults"});
  EXPECT_EQ(r.rc, 0) << r.all();
  EXPECT_TRUE(contains(r.out, "Stream ORDERS was created")) << r.out;
  cli_runner in_url(server_->tmp_dir(), "nats://acme:s3cret@127.0.0.1:" + std::to_string(port()));
  r = in_url.run({"stream", "ls", "--names"});
  EXPECT_EQ(r.rc, 0) << r.all();
  EXPECT_EQ(r.out, "ORDERS\n");
}

// --tlsca with a tls:// URL, against a server with TLS (an openssl-made CA and certificate).
class cli_tls_test : public js_test {
 protected:
  std::string extra_conf() const override {
    return js_test::extra_conf() + "tls {\n  cert_file: \"" + (certs_ / "server.pem").string() + "\"\n  key_file: \"" +
           (certs_ / "server.key").string() + "\"\n}\n";
  }
  void SetUp() override {
    if (cli_binary().empty()) GTEST_SKIP() << "PEREGRINE_CLI_BIN not set";
    certs_ = std::filesystem::temp_directory_path() / dir_name_;
    std::filesystem::create_directories(certs_);
    const std::string d = certs_.string();
    const std::string cmd =
        "cd " + d + " && openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=test-ca -keyout ca.key -out ca.pem" +
        " >/dev/null 2>&1 && openssl req -newkey rsa:2048 -nodes -subj /CN=127.0.0.1 -keyout server.key -out server.csr" +
        " >/dev/null 2>&1 && printf 'subjectAltName=IP:127.0.0.1\\n' > san.ext && openssl x509 -req -in server.csr" +
        " -CA ca.pem -CAkey ca.key -CAcreateserial -days 1 -extfile san.ext -out server.pem >/dev/null 2>&1";
    if (std::system(cmd.c_str()) != 0) GTEST_SKIP() << "openssl could not make test certificates";
    server_test::SetUp();
  }
  void TearDown() override {
    server_test::TearDown();
    std::error_code ec;
    if (!certs_.empty()) std::filesystem::remove_all(certs_, ec);
  }
  std::string dir_name_ = "pg-cli-tls-" + std::to_string(::getpid());
  std::filesystem::path certs_;
};

TEST_F(cli_tls_test, tls_ca_flag) {
  const std::string tls_url = "tls://127.0.0.1:" + std::to_string(port());
  cli_runner cli(server_->tmp_dir(), tls_url);
  cli_result r = cli.run({"--tlsca", (certs_ / "ca.pem").string(), "stream", "add", "ORDERS", "--subjects", "orders.>", "--defaults"});
  EXPECT_EQ(r.rc, 0) << r.all();
  EXPECT_TRUE(contains(r.out, "Stream ORDERS was created")) << r.out;
  // Without the CA the server's certificate is not trusted.
  r = cli.run({"stream", "ls"});
  EXPECT_EQ(r.rc, 1) << r.all();
  EXPECT_TRUE(contains(r.err, "peregrine: error: ")) << r.err;
}

}  // namespace
}  // namespace peregrine::test
