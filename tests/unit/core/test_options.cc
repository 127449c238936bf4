#include "src/core/options.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <string>
#include <vector>

#include "peregrine_config.h"

namespace {

using namespace core;
namespace fs = std::filesystem;

struct parsed {
  cli_result res;
  server_options opts;
};

parsed run(std::initializer_list<const char*> args, server_options start = {}) {
  std::vector<const char*> argv{"peregrine-server"};
  argv.insert(argv.end(), args.begin(), args.end());
  parsed p;
  p.opts = std::move(start);
  p.res = parse_command_line(static_cast<int>(argv.size()), argv.data(), p.opts);
  return p;
}

class TempDir {
 public:
  TempDir() {
    std::string tmpl = (fs::temp_directory_path() / "pg_opts_XXXXXX").string();
    _path = ::mkdtemp(tmpl.data());
  }
  ~TempDir() { fs::remove_all(_path); }
  std::string write(const std::string& name, const std::string& text) const {
    const auto p = (fs::path(_path) / name).string();
    std::ofstream(p) << text;
    return p;
  }

 private:
  std::string _path;
};

TEST(Cli, DefaultsWithoutFlags) {
  auto p = run({});
  EXPECT_EQ(p.res.outcome, cli_outcome::run);
  const server_options d;
  EXPECT_EQ(p.opts.port, d.port);
  EXPECT_EQ(p.opts.host, d.host);
  EXPECT_FALSE(p.opts.jetstream);
}

TEST(Cli, EveryValueFlagBothDashStyles) {
  for (const char* dash : {"-", "--"}) {
    auto f = [&](const char* name) { return std::string(dash) + name; };
    const std::vector<std::string> args = {
        f("addr"), "127.0.0.1", f("port"), "5222", f("server_name"), "srv", f("store_dir"), "/data/js",
        f("http_port"), "8222", f("log"), "/tmp/x.log", f("user"), "u", f("pass"), "pw",
        f("auth"), "tok", f("max_payload"), "2MB", f("shards"), "3", f("poll"), "busy",
        f("spin_us"), "7", f("cpus"), "0-1,3", f("transport"), "socket", f("durability"), "sync",
        f("jetstream"), f("debug"), f("trace")};
    std::vector<const char*> argv{"peregrine-server"};
    for (const auto& a : args) argv.push_back(a.c_str());
    server_options o;
    const auto r = parse_command_line(static_cast<int>(argv.size()), argv.data(), o);
    ASSERT_EQ(r.outcome, cli_outcome::run) << dash << " " << r.message;
    EXPECT_EQ(o.host, "127.0.0.1");
    EXPECT_EQ(o.port, 5222);
    EXPECT_EQ(o.server_name, "srv");
    EXPECT_EQ(o.store_dir, "/data/js");
    EXPECT_EQ(o.http_port, 8222);
    EXPECT_EQ(o.log_file, "/tmp/x.log");
    EXPECT_EQ(o.user, "u");
    EXPECT_EQ(o.pass, "pw");
    EXPECT_EQ(o.token, "tok");
    EXPECT_EQ(o.max_payload, 2 * 1024 * 1024);
    EXPECT_EQ(o.shards, 3);
    EXPECT_EQ(o.poll_mode, "busy");
    EXPECT_EQ(o.spin_us, 7);
    EXPECT_EQ(o.cpus, "0-1,3");
    EXPECT_EQ(o.transport, "socket");
    EXPECT_EQ(o.durability, "sync");
    EXPECT_TRUE(o.jetstream);
    EXPECT_TRUE(o.debug);
    EXPECT_TRUE(o.trace);
  }
}

TEST(Cli, ShortAndAliasNames) {
  auto p = run({"-a", "10.0.0.1", "-p", "4333", "-n", "n1", "-m", "8223", "-l", "log.txt", "-D", "-V"});
  ASSERT_EQ(p.res.outcome, cli_outcome::run) << p.res.message;
  EXPECT_EQ(p.opts.host, "10.0.0.1");
  EXPECT_EQ(p.opts.port, 4333);
  EXPECT_EQ(p.opts.server_name, "n1");
  EXPECT_EQ(p.opts.http_port, 8223);
  EXPECT_EQ(p.opts.log_file, "log.txt");
  EXPECT_TRUE(p.opts.debug);
  EXPECT_TRUE(p.opts.trace);

  p = run({"--net", "1.2.3.4", "--name", "n2", "--sd", "/s", "--js"});
  ASSERT_EQ(p.res.outcome, cli_outcome::run) << p.res.message;
  EXPECT_EQ(p.opts.host, "1.2.3.4");
  EXPECT_EQ(p.opts.server_name, "n2");
  EXPECT_EQ(p.opts.store_dir, "/s");
  EXPECT_TRUE(p.opts.jetstream);

  p = run({"-js", "-sd", "/t", "--p", "1", "--a", "::1"});  // Go accepts two dashes on letters too
  ASSERT_EQ(p.res.outcome, cli_outcome::run) << p.res.message;
  EXPECT_TRUE(p.opts.jetstream);
  EXPECT_EQ(p.opts.store_dir, "/t");
  EXPECT_EQ(p.opts.port, 1);
  EXPECT_EQ(p.opts.host, "::1");
}

TEST(Cli, DebugTraceCombined) {
  for (const char* f : {"-DV", "--DV"}) {
    auto p = run({f});
    ASSERT_EQ(p.res.outcome, cli_outcome::run) << p.res.message;
    EXPECT_TRUE(p.opts.debug);
    EXPECT_TRUE(p.opts.trace);
  }
}

TEST(Cli, EqualsForms) {
  auto p = run({"-p=4500", "--server_name=abc", "-js=true", "-sd=/q", "-D=false"});
  ASSERT_EQ(p.res.outcome, cli_outcome::run) << p.res.message;
  EXPECT_EQ(p.opts.port, 4500);
  EXPECT_EQ(p.opts.server_name, "abc");
  EXPECT_TRUE(p.opts.jetstream);
  EXPECT_EQ(p.opts.store_dir, "/q");
  EXPECT_FALSE(p.opts.debug);
  p = run({"--js=false"}, [] { server_options o; o.jetstream = true; return o; }());
  ASSERT_EQ(p.res.outcome, cli_outcome::run) << p.res.message;
  EXPECT_FALSE(p.opts.jetstream);
}

TEST(Cli, ValuesThatLookLikeFlagsAreKept) {
  auto p = run({"--auth", "-secret", "-n", "-js"});
  ASSERT_EQ(p.res.outcome, cli_outcome::run) << p.res.message;
  EXPECT_EQ(p.opts.token, "-secret");
  EXPECT_EQ(p.opts.server_name, "-js");
  EXPECT_FALSE(p.opts.jetstream);
  p = run({"-p", "-1"});
  ASSERT_EQ(p.res.outcome, cli_outcome::run) << p.res.message;
  EXPECT_EQ(p.opts.port, -1);
}

TEST(Cli, LastValueWins) {
  auto p = run({"-p", "1", "--port", "2"});
  ASSERT_EQ(p.res.outcome, cli_outcome::run) << p.res.message;
  EXPECT_EQ(p.opts.port, 2);
}

TEST(Cli, HelpListsEveryFlag) {
  for (const char* h : {"-h", "--help", "-help"}) {
    auto p = run({h, "--port", "nonsense"});  // help wins over bad values
    ASSERT_EQ(p.res.outcome, cli_outcome::exit_ok) << h;
    for (const char* name : {"--addr", "--net", "--port", "--name", "--server_name", "--config", "--js",
                             "--jetstream", "--sd", "--store_dir", "--http_port", "--log", "--debug",
                             "--trace", "--DV", "--user", "--pass", "--auth", "--max_payload",
                             "--version", "--help", "--shards", "--poll", "--spin_us", "--cpus",
                             "--transport", "--durability", "-a", "-p", "-n", "-c", "-m", "-l", "-D",
                             "-V", "-v", "-h"}) {
      EXPECT_NE(p.res.message.find(name), std::string::npos) << name;
    }
    EXPECT_NE(p.res.message.find("Enable JetStream"), std::string::npos);
  }
  auto p = run({"--help=false", "-p", "5"});
  EXPECT_EQ(p.res.outcome, cli_outcome::run) << p.res.message;
  EXPECT_EQ(p.opts.port, 5);
}

TEST(Cli, Version) {
  const std::string expect =
      std::string("peregrine-server: v") + PEREGRINE_NATS_LEVEL + " (peregrine " + PEREGRINE_VERSION + ")";
  for (const char* v : {"-v", "--version", "-version"}) {
    auto p = run({v});
    EXPECT_EQ(p.res.outcome, cli_outcome::exit_ok);
    EXPECT_EQ(p.res.message, expect);
  }
}

TEST(Cli, BadValues) {
  const std::vector<std::vector<const char*>> cases = {
      {"-p", "abc"},           {"-p", "70000"},        {"-p"},
      {"-m", "x"},             {"--shards", "-3"},     {"--shards", "many"},
      {"--poll", "sometimes"}, {"--spin_us", "-1"},    {"--cpus", "a,b"},
      {"--cpus", "3-1"},       {"--cpus", "1,"},       {"--transport", "carrier-pigeon"},
      {"--durability", "maybe"}, {"--max_payload", "lots"}, {"--max_payload", "0"},
      {"--bogus"},             {"-x"},                 {"stray-positional"},
  };
  for (const auto& c : cases) {
    std::vector<const char*> argv{"peregrine-server"};
    argv.insert(argv.end(), c.begin(), c.end());
    server_options o;
    const auto r = parse_command_line(static_cast<int>(argv.size()), argv.data(), o);
    EXPECT_EQ(r.outcome, cli_outcome::exit_error) << c[0];
    EXPECT_FALSE(r.message.empty()) << c[0];
  }
  auto p = run({"--poll", "sometimes"});
  EXPECT_NE(p.res.message.find("--poll"), std::string::npos) << p.res.message;
}

TEST(Cli, ConfigFileThenFlagsOverride) {
  TempDir d;
  const auto conf = d.write("a.conf", "port: 5000\nserver_name: from_file\ndebug: true\n"
                                       "jetstream { store_dir: /from/file }\n");
  for (const char* c : {"-c", "--config", "-config"}) {
    auto p = run({"-p", "6000", c, conf.c_str()});  // flag before -c still wins
    ASSERT_EQ(p.res.outcome, cli_outcome::run) << p.res.message;
    EXPECT_EQ(p.opts.port, 6000);
    EXPECT_EQ(p.opts.server_name, "from_file");
    EXPECT_TRUE(p.opts.debug);
    EXPECT_TRUE(p.opts.jetstream);
    EXPECT_EQ(p.opts.store_dir, "/from/file");
    EXPECT_EQ(p.opts.config_file, conf);
  }
  auto p = run({("--config=" + conf).c_str(), "--sd", "/flag"});
  ASSERT_EQ(p.res.outcome, cli_outcome::run) << p.res.message;
  EXPECT_EQ(p.opts.store_dir, "/flag");
  EXPECT_EQ(p.opts.port, 5000);
}

TEST(Cli, ConfigErrorsAndWarnings) {
  TempDir d;
  const auto bad = d.write("bad.conf", "port: 1\nfoo {\n");
  auto p = run({"-c", bad.c_str()});
  EXPECT_EQ(p.res.outcome, cli_outcome::exit_error);
  EXPECT_NE(p.res.message.find("bad.conf:"), std::string::npos) << p.res.message;
  p = run({"-c", "/nonexistent/x.conf"});
  EXPECT_EQ(p.res.outcome, cli_outcome::exit_error);
  const auto warn = d.write("warn.conf", "port: 1\ncluster_thing: 3\n");
  p = run({"-c", warn.c_str()});
  EXPECT_EQ(p.res.outcome, cli_outcome::run);
  ASSERT_EQ(p.res.warnings.size(), 1u);
  EXPECT_NE(p.res.warnings[0].find("cluster_thing"), std::string::npos);
}

TEST(Options, DefaultStoreDir) {
  const char* old = std::getenv("TMPDIR");
  const std::string saved = old ? old : "";
  ::setenv("TMPDIR", "/var/tmp/", 1);
  EXPECT_EQ(default_store_dir(), "/var/tmp/peregrine/jetstream");
  ::unsetenv("TMPDIR");
  EXPECT_EQ(default_store_dir(), "/tmp/peregrine/jetstream");
  ::setenv("TMPDIR", "", 1);
  EXPECT_EQ(default_store_dir(), "/tmp/peregrine/jetstream");
  if (old) {
    ::setenv("TMPDIR", saved.c_str(), 1);
  } else {
    ::unsetenv("TMPDIR");
  }
}

TEST(ConfigKeys, EverySupportedKey) {
  TempDir d;
  const auto conf = d.write("all.conf", R"(
listen: "10.1.2.3:4999"
server_name: alpha
max_payload: 4MB
max_control_line: 8KB
max_pending: 128MB
max_connections: 1000
ping_interval: "30s"
ping_max: 5
write_deadline: "2s"
http_port: 8222
debug: yes
trace: on
logfile: "/var/log/pg.log"
jetstream {
  store_dir: "/js"
  max_memory_store: 1G
  max_file_store: 10GB
  domain: hub
}
authorization {
  user: alice
  password: "s3cret"
  token: "t0k"
  timeout: 3
}
shards: 2
poll: busy
spin_us: 100
cpus: "0-1"
transport: socket
durability: sync
)");
  server_options o;
  std::string err;
  std::vector<std::string> warns;
  ASSERT_TRUE(load_config_file(conf, o, err, warns)) << err;
  EXPECT_TRUE(warns.empty()) << warns[0];
  EXPECT_EQ(o.host, "10.1.2.3");
  EXPECT_EQ(o.port, 4999);
  EXPECT_EQ(o.server_name, "alpha");
  EXPECT_EQ(o.max_payload, 4 * 1024 * 1024);
  EXPECT_EQ(o.max_control_line, 8192);
  EXPECT_EQ(o.max_pending, 128ll * 1024 * 1024);
  EXPECT_EQ(o.max_connections, 1000);
  EXPECT_EQ(o.ping_interval_ms, 30'000);
  EXPECT_EQ(o.ping_max, 5);
  EXPECT_EQ(o.write_deadline_ms, 2'000);
  EXPECT_EQ(o.http_port, 8222);
  EXPECT_TRUE(o.debug);
  EXPECT_TRUE(o.trace);
  EXPECT_EQ(o.log_file, "/var/log/pg.log");
  EXPECT_TRUE(o.jetstream);
  EXPECT_EQ(o.store_dir, "/js");
  EXPECT_EQ(o.max_memory_store, 1'000'000'000);
  EXPECT_EQ(o.max_file_store, 10ll * 1024 * 1024 * 1024);
  EXPECT_EQ(o.js_domain, "hub");
  EXPECT_EQ(o.user, "alice");
  EXPECT_EQ(o.pass, "s3cret");
  EXPECT_EQ(o.token, "t0k");
  EXPECT_EQ(o.auth_timeout_ms, 3000);
  EXPECT_EQ(o.shards, 2);
  EXPECT_EQ(o.poll_mode, "busy");
  EXPECT_EQ(o.spin_us, 100);
  EXPECT_EQ(o.cpus, "0-1");
  EXPECT_EQ(o.transport, "socket");
  EXPECT_EQ(o.durability, "sync");
  EXPECT_EQ(o.config_file, conf);
}

TEST(ConfigKeys, AliasesAndForms) {
  TempDir d;
  server_options o;
  std::string err;
  std::vector<std::string> warns;
  auto load = [&](const std::string& text) {
    o = server_options{};
    warns.clear();
    return load_config_file(d.write("x.conf", text), o, err, warns);
  };
  ASSERT_TRUE(load("listen: :4333\nnet: 1.1.1.1\nmonitor_port: 9\nlog_file: l\nmax_mem: 0")) << err;
  EXPECT_EQ(o.port, 4333);
  EXPECT_EQ(o.host, "1.1.1.1");
  EXPECT_EQ(o.http_port, 9);
  EXPECT_EQ(o.log_file, "l");
  ASSERT_EQ(warns.size(), 1u);  // max_mem is only known inside jetstream { }
  ASSERT_TRUE(load("listen: 127.0.0.1:4222\nhost: 0.0.0.0")) << err;
  EXPECT_EQ(o.host, "0.0.0.0");
  EXPECT_EQ(o.port, 4222);
  ASSERT_TRUE(load("listen: \"[::1]:7\"")) << err;
  EXPECT_EQ(o.host, "::1");
  EXPECT_EQ(o.port, 7);
  ASSERT_TRUE(load("listen: 4444")) << err;
  EXPECT_EQ(o.port, 4444);
  ASSERT_TRUE(load("jetstream: enabled")) << err;
  EXPECT_TRUE(o.jetstream);
  ASSERT_TRUE(load("jetstream: false")) << err;
  EXPECT_FALSE(o.jetstream);
  ASSERT_TRUE(load("jetstream { max_mem: 1MB, max_file: 2M, enabled: false }")) << err;
  EXPECT_FALSE(o.jetstream);
  EXPECT_EQ(o.max_memory_store, 1 << 20);
  EXPECT_EQ(o.max_file_store, 2'000'000);
  ASSERT_TRUE(load("ping_interval: 2m\nwrite_deadline: 500ms\nauthorization { timeout: 0.5 }")) << err;
  EXPECT_EQ(o.ping_interval_ms, 120'000);
  EXPECT_EQ(o.write_deadline_ms, 500);
  EXPECT_EQ(o.auth_timeout_ms, 500);
  ASSERT_TRUE(load("ping_interval: 45")) << err;  // bare number: seconds
  EXPECT_EQ(o.ping_interval_ms, 45'000);
  ASSERT_TRUE(load("PORT: 99\nDebug: TRUE")) << err;  // keys are case-insensitive
  EXPECT_EQ(o.port, 99);
  EXPECT_TRUE(o.debug);
}

TEST(ConfigKeys, UnknownKeysWarn) {
  TempDir d;
  const auto conf = d.write("u.conf", "port: 1\nmystery: 2\njetstream { store_dir: /a, odd: 1 }\n"
                                      "authorization { users: [] }\nTOKEN: abc\n"
                                      "authorization { token: $TOKEN }\n");
  server_options o;
  std::string err;
  std::vector<std::string> warns;
  ASSERT_TRUE(load_config_file(conf, o, err, warns)) << err;
  ASSERT_EQ(warns.size(), 2u) << warns[0];  // TOKEN is a variable; the 2nd authorization replaces the 1st
  EXPECT_NE(warns[0].find("u.conf:2:1: unknown config key 'mystery'"), std::string::npos) << warns[0];
  EXPECT_NE(warns[1].find("'jetstream.odd'"), std::string::npos) << warns[1];
  EXPECT_EQ(o.token, "abc");
}

TEST(ConfigKeys, BadValuesNamePosition) {
  TempDir d;
  server_options o;
  std::string err;
  std::vector<std::string> warns;
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"port: abc", ":1:7:"},          {"port: 70000", ":1:7:"},
      {"\nmax_payload: [1]", ":2:14:"}, {"debug: maybe", ":1:8:"},
      {"ping_interval: soon", ":1:16:"}, {"listen: nope", ":1:9:"},
      {"poll: lazy", ":1:7:"},          {"cpus: \"x\"", ":1:7:"},
      {"jetstream: [1]", ":1:12:"},     {"authorization: 1", ":1:16:"},
      {"max_payload: 0", ":1:14:"},
  };
  for (const auto& [text, pos] : cases) {
    const auto path = d.write("b.conf", text);
    EXPECT_FALSE(load_config_file(path, o, err, warns)) << text;
    EXPECT_NE(err.find("b.conf" + pos), std::string::npos) << text << " -> " << err;
  }
}

}  // namespace

TEST(Cli, DpdkQueuesFlagAndKey) {
  auto p = run({"--transport", "dpdk", "--dpdk_queues", "1", "--shards", "2"});
  ASSERT_EQ(p.res.outcome, cli_outcome::run) << p.res.message;
  EXPECT_EQ(p.opts.dpdk_queues, 1);
  EXPECT_EQ(server_options{}.dpdk_queues, 0);  // default: one queue pair per shard
  for (const char* bad : {"-1", "many", "5000"})
    EXPECT_EQ(run({"--dpdk_queues", bad}).res.outcome, cli_outcome::exit_error) << bad;
  TempDir d;
  const auto conf = d.write("q.conf", "transport: dpdk\ndpdk_queues: 2\n");
  server_options o;
  std::string err;
  std::vector<std::string> warns;
  ASSERT_TRUE(load_config_file(conf, o, err, warns)) << err;
  EXPECT_TRUE(warns.empty());
  EXPECT_EQ(o.dpdk_queues, 2);
}

namespace core {
namespace {

TEST(ops_options, launcher_config_keys_and_unsupported_blocks) {
  const std::string path = ::testing::TempDir() + "ops_options.conf";
  {
    std::ofstream f(path);
    f << "port: -1\nhttp: \"127.0.0.1:-1\"\nports_file_dir: \"/tmp/pf\"\npid_file: \"/tmp/x.pid\"\n"
         "server_tags: [\"a:1\", \"b\"]\nlame_duck_duration: \"3s\"\nlame_duck_grace_period: \"500ms\"\n"
         "http_base_path: \"/mon\"\n"
         "leafnodes { listen: \"127.0.0.1:-1\" }\nwebsocket { listen: \"127.0.0.1:-1\", no_tls: true }\n"
         "mqtt { port: -1 }\ngateway { name: g, port: -1 }\n";
  }
  server_options o;
  std::string err;
  std::vector<std::string> warnings;
  ASSERT_TRUE(load_config_file(path, o, err, warnings)) << err;
  EXPECT_EQ(o.port, -1);
  EXPECT_EQ(o.http_host, "127.0.0.1");
  EXPECT_EQ(o.http_port, -1);
  EXPECT_EQ(o.ports_file_dir, "/tmp/pf");
  EXPECT_EQ(o.pid_file, "/tmp/x.pid");
  EXPECT_EQ(o.server_tags, (std::vector<std::string>{"a:1", "b"}));
  EXPECT_EQ(o.lame_duck_duration_ms, 3000);
  EXPECT_EQ(o.lame_duck_grace_period_ms, 500);
  EXPECT_EQ(o.http_base_path, "/mon");
  ASSERT_EQ(warnings.size(), 4u);  // one per unsupported block, nothing for their contents
  EXPECT_NE(warnings[0].find("'leafnodes' is not supported"), std::string::npos) << warnings[0];
  EXPECT_NE(warnings[3].find("'gateway' is not supported"), std::string::npos) << warnings[3];
}

TEST(ops_options, process_flags) {
  server_options o;
  const char* argv[] = {"peregrine-server", "--ports_file_dir", "/tmp/d", "-P", "/tmp/p.pid", "-sl", "reload=42",
                        "--http_base_path=/x", "-m", "-1"};
  const cli_result r = parse_command_line(10, argv, o);
  ASSERT_EQ(r.outcome, cli_outcome::run) << r.message;
  EXPECT_EQ(o.ports_file_dir, "/tmp/d");
  EXPECT_EQ(o.pid_file, "/tmp/p.pid");
  EXPECT_EQ(o.signal, "reload=42");
  EXPECT_EQ(o.http_base_path, "/x");
  EXPECT_EQ(o.http_port, -1);
}

TEST(ops_options, bad_http_listen_is_an_error) {
  const std::string path = ::testing::TempDir() + "ops_bad_http.conf";
  { std::ofstream(path) << "http: \"127.0.0.1:99999\"\n"; }
  server_options o;
  std::string err;
  std::vector<std::string> warnings;
  EXPECT_FALSE(load_config_file(path, o, err, warnings));
  EXPECT_NE(err.find("invalid value for 'http'"), std::string::npos) << err;
}

}  // namespace
}  // namespace core

namespace {

TEST(tls_options, tls_block_and_allow_non_tls) {
  TempDir d;
  const auto conf = d.write("tls.conf", R"(
allow_non_tls: true
tls {
  cert_file: "/c/server.pem"
  key_file: "/c/server-key.pem"
  ca_file: "/c/ca.pem"
  verify: true
  verify_and_map: true
  timeout: 0.5
  handshake_first: true
  cipher_suites: ["TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256", "TLS_AES_128_GCM_SHA256"]
  min_version: "1.3"
  curve_preferences: ["X25519"]
}
)");
  auto p = run({"-c", conf.c_str()});
  ASSERT_EQ(p.res.outcome, cli_outcome::run) << p.res.message;
  const net::tls_options& t = p.opts.tls;
  EXPECT_TRUE(t.enabled);
  EXPECT_EQ(t.cert_file, "/c/server.pem");
  EXPECT_EQ(t.key_file, "/c/server-key.pem");
  EXPECT_EQ(t.ca_file, "/c/ca.pem");
  EXPECT_TRUE(t.verify);
  EXPECT_TRUE(t.verify_and_map);
  EXPECT_EQ(t.timeout_ms, 500);
  EXPECT_TRUE(t.handshake_first);
  EXPECT_TRUE(t.allow_non_tls);
  EXPECT_EQ(t.cipher_suites, (std::vector<std::string>{"TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256", "TLS_AES_128_GCM_SHA256"}));
  EXPECT_EQ(t.min_version, "1.3");
  EXPECT_EQ(p.opts.auth_timeout_ms, 1500);  // nats-server: tls timeout + 1 s unless set
  ASSERT_EQ(p.res.warnings.size(), 1u);  // curve_preferences is not supported
  EXPECT_NE(p.res.warnings[0].find("'tls.curve_preferences'"), std::string::npos) << p.res.warnings[0];
}

TEST(tls_options, bad_values_name_the_key) {
  TempDir d;
  auto p = run({"-c", d.write("a.conf", "tls: yes\n").c_str()});
  EXPECT_EQ(p.res.outcome, cli_outcome::exit_error);
  EXPECT_NE(p.res.message.find("'tls': expected a map"), std::string::npos) << p.res.message;
  p = run({"-c", d.write("b.conf", "tls { verify: maybe }\n").c_str()});
  EXPECT_EQ(p.res.outcome, cli_outcome::exit_error);
  EXPECT_NE(p.res.message.find("'verify'"), std::string::npos) << p.res.message;
}

TEST(tls_options, flags_turn_tls_on_and_override_the_file) {
  auto none = run({});
  EXPECT_FALSE(none.opts.tls.enabled);
  auto p = run({"--tls", "--tlscert", "/a.pem", "-tlskey", "/a-key.pem"});
  ASSERT_EQ(p.res.outcome, cli_outcome::run) << p.res.message;
  EXPECT_TRUE(p.opts.tls.enabled);
  EXPECT_FALSE(p.opts.tls.verify);
  EXPECT_EQ(p.opts.tls.cert_file, "/a.pem");
  EXPECT_EQ(p.opts.tls.key_file, "/a-key.pem");
  // --tlsverify alone is enough to turn TLS on, and verifies clients.
  auto v = run({"-tlsverify", "--tlscacert=/ca.pem", "--tlscert", "/b.pem", "--tlskey", "/b-key.pem"});
  ASSERT_EQ(v.res.outcome, cli_outcome::run) << v.res.message;
  EXPECT_TRUE(v.opts.tls.enabled);
  EXPECT_TRUE(v.opts.tls.verify);
  EXPECT_EQ(v.opts.tls.ca_file, "/ca.pem");
  TempDir d;
  const auto conf = d.write("t.conf", "tls { cert_file: /file.pem, key_file: /file-key.pem }\n");
  auto o = run({"-c", conf.c_str(), "--tlscert", "/flag.pem"});
  EXPECT_EQ(o.opts.tls.cert_file, "/flag.pem");
  EXPECT_EQ(o.opts.tls.key_file, "/file-key.pem");
  EXPECT_EQ(run({"--tls"}).opts.auth_timeout_ms, 3000);
  EXPECT_EQ(run({}).opts.auth_timeout_ms, 2000);
  const auto set = d.write("s.conf", "tls { timeout: 1 }\nauthorization { timeout: 5 }\n");
  EXPECT_EQ(run({"-c", set.c_str()}).opts.auth_timeout_ms, 5000);
  auto help = run({"--help"});
  for (const char* f : {"--tls", "--tlscert", "--tlskey", "--tlscacert", "--tlsverify"})
    EXPECT_NE(help.res.message.find(f), std::string::npos) << f;
}

TEST(Cluster, ConfigBlock) {
  TempDir d;
  const auto conf = d.write("c.conf",
                            "server_name: a\ncluster {\n  name: east\n  listen: 127.0.0.1:7244\n"
                            "  routes: [nats-route://127.0.0.1:7245, \"nats://h2:7246\"]\n"
                            "  pool_size: 3\n  no_advertise: true\n  advertise: \"10.1.1.1:7244\"\n}\n");
  auto p = run({"-c", conf.c_str()});
  ASSERT_EQ(p.res.outcome, cli_outcome::run) << p.res.message;
  EXPECT_TRUE(p.res.warnings.empty());
  EXPECT_TRUE(p.opts.cluster);
  EXPECT_EQ(p.opts.cluster_name, "east");
  EXPECT_EQ(p.opts.cluster_host, "127.0.0.1");
  EXPECT_EQ(p.opts.cluster_port, 7244);
  EXPECT_EQ(p.opts.routes, (std::vector<std::string>{"nats-route://127.0.0.1:7245", "nats://h2:7246"}));
  EXPECT_EQ(p.opts.cluster_pool_size, 3);
  EXPECT_TRUE(p.opts.cluster_no_advertise);
  EXPECT_EQ(p.opts.cluster_advertise, "10.1.1.1:7244");
  const auto bad = d.write("bad.conf", "cluster {\n  routes: [\"nats://nohost\"]\n}\n");
  p = run({"-c", bad.c_str()});
  EXPECT_EQ(p.res.outcome, cli_outcome::exit_error);
  EXPECT_NE(p.res.message.find("bad route URL"), std::string::npos) << p.res.message;
}

TEST(Cluster, AuthorizationAndTls) {
  TempDir d;
  const auto conf = d.write("c.conf",
                            "server_name: a\ncluster {\n  listen: 127.0.0.1:7244\n"
                            "  authorization { user: ruser, password: rpw, timeout: 0.5 }\n"
                            "  tls { cert_file: c.pem, key_file: k.pem, ca_file: ca.pem, verify: true, timeout: 3 }\n}\n");
  auto p = run({"-c", conf.c_str()});
  ASSERT_EQ(p.res.outcome, cli_outcome::run) << p.res.message;
  EXPECT_TRUE(p.res.warnings.empty());
  EXPECT_EQ(p.opts.cluster_user, "ruser");
  EXPECT_EQ(p.opts.cluster_pass, "rpw");
  EXPECT_EQ(p.opts.cluster_auth_timeout_ms, 500);
  EXPECT_TRUE(p.opts.cluster_tls.enabled);
  EXPECT_EQ(p.opts.cluster_tls.cert_file, "c.pem");
  EXPECT_EQ(p.opts.cluster_tls.ca_file, "ca.pem");
  EXPECT_TRUE(p.opts.cluster_tls.verify);
  EXPECT_EQ(p.opts.cluster_tls.timeout_ms, 3000);
  EXPECT_FALSE(p.opts.tls.enabled);  // the client listener's TLS is another block
  // nats-server 2.9's refusals, at the authorization key.
  for (const auto& [body, text] : std::vector<std::pair<std::string, std::string>>{
           {"token: abc", "Cluster authorization does not support tokens"},
           {"users: []", "Cluster authorization does not allow multiple users"}}) {
    const auto bad = d.write("bad.conf", "cluster {\n  listen: 127.0.0.1:7244\n  authorization { " + body + " }\n}\n");
    p = run({"-c", bad.c_str()});
    EXPECT_EQ(p.res.outcome, cli_outcome::exit_error) << body;
    EXPECT_NE(p.res.message.find("bad.conf:3:3: " + text), std::string::npos) << p.res.message;
  }
}

TEST(Cluster, RouteUrlCredentials) {
  std::string user, pass;
  route_url_credentials("nats-route://ruser:p%40ss@127.0.0.1:6222", user, pass);
  EXPECT_EQ(user, "ruser");
  EXPECT_EQ(pass, "p@ss");
  route_url_credentials("nats://only@h:1", user, pass);
  EXPECT_EQ(user, "only");
  EXPECT_EQ(pass, "");
  route_url_credentials("nats-route://127.0.0.1:6222", user, pass);
  EXPECT_TRUE(user.empty() && pass.empty());
  std::string host;
  int port = 0;
  ASSERT_TRUE(parse_route_url("nats-route://ruser:p%40ss@127.0.0.1:6222", host, port));
  EXPECT_EQ(host, "127.0.0.1");
  EXPECT_EQ(port, 6222);
}

TEST(Cluster, Flags) {
  auto p = run({"--cluster", "nats://127.0.0.1:6333", "-cluster_name", "west", "--routes",
                "nats://127.0.0.1:6334,nats-route://u:p@127.0.0.1:6335", "--no_advertise"});
  ASSERT_EQ(p.res.outcome, cli_outcome::run) << p.res.message;
  EXPECT_TRUE(p.opts.cluster);
  EXPECT_EQ(p.opts.cluster_host, "127.0.0.1");
  EXPECT_EQ(p.opts.cluster_port, 6333);
  EXPECT_EQ(p.opts.cluster_name, "west");
  EXPECT_EQ(p.opts.routes.size(), 2u);
  EXPECT_TRUE(p.opts.cluster_no_advertise);
  EXPECT_FALSE(run({}).opts.cluster);
  EXPECT_EQ(run({"--cluster", "nonsense"}).res.outcome, cli_outcome::exit_error);
  EXPECT_EQ(run({"--routes", "nats://a:1,bad"}).res.outcome, cli_outcome::exit_error);
}

}  // namespace
