#include "src/core/options.h"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <string_view>

#include "peregrine_config.h"
#include "src/core/auth_config.h"
#include "src/core/config_file.h"

namespace core {

namespace {

// Owner threads past the cores of any host we target; each is a loop and its rings.
constexpr int kMaxJsThreads = 256;

// "0,1" or "0-3" or "0-3,6": comma-separated cpu numbers and ascending ranges.
bool valid_cpu_list(std::string_view s) {
  if (s.empty()) return false;
  std::size_t i = 0;
  for (;;) {
    auto number = [&](long& v) {
      const std::size_t start = i;
      v = 0;
      while (i < s.size() && s[i] >= '0' && s[i] <= '9' && i - start < 6) v = v * 10 + (s[i++] - '0');
      return i > start && (i == s.size() || s[i] < '0' || s[i] > '9');
    };
    long lo = 0, hi = 0;
    if (!number(lo)) return false;
    if (i < s.size() && s[i] == '-') {
      ++i;
      if (!number(hi) || hi < lo) return false;
    }
    if (i == s.size()) return true;
    if (s[i] != ',') return false;
    ++i;
  }
}

bool one_of(std::string_view v, std::initializer_list<std::string_view> allowed) {
  for (auto a : allowed) {
    if (v == a) return true;
  }
  return false;
}

// Converts config values to option fields; each failure names the value's position.
class mapper {
 public:
  mapper(server_options& o, std::string& error, std::vector<std::string>& warnings)
      : _o(o), _error(error), _warnings(warnings) {}

  bool apply(const config_value& root) {
    for (const auto& [key, v] : root.entries) {
      if (!top(key, v)) return false;
    }
    return true;
  }

 private:
  server_options& _o;
  std::string& _error;
  std::vector<std::string>& _warnings;

  static bool is(std::string_view key, std::initializer_list<std::string_view> names) {
    for (auto n : names) {
      if (key.size() == n.size() && std::equal(key.begin(), key.end(), n.begin(), [](char a, char b) {
            return std::tolower(static_cast<unsigned char>(a)) == b;
          })) {
        return true;
      }
    }
    return false;
  }
  bool bad(const config_value& v, const std::string& key, const std::string& what) {
    _error = v.where() + ": invalid value for '" + key + "': " + what;
    return false;
  }
  void unknown(const std::string& key, const config_value& v, const std::string& section = "") {
    if (v.used_as_variable) return;  // a variable definition, not an option
    _warnings.push_back(v.key_where() + ": unknown config key '" + section + key + "' ignored");
  }
  bool str(const config_value& v, const std::string& key, std::string& out) {
    if (!v.is_scalar()) return bad(v, key, "expected a string");
    out = v.text;
    return true;
  }
  template <typename T>
  bool num(const config_value& v, const std::string& key, T& out, std::int64_t lo, std::int64_t hi) {
    std::int64_t n = 0;
    if (!v.is_scalar() || !parse_size(v.text, n)) return bad(v, key, "expected an integer");
    if (n < lo || n > hi) {
      return bad(v, key, std::to_string(n) + " is out of range [" + std::to_string(lo) + ", " +
                             std::to_string(hi) + "]");
    }
    out = static_cast<T>(n);
    return true;
  }
  bool flag(const config_value& v, const std::string& key, bool& out) {
    if (!v.is_scalar() || !parse_bool(v.text, out)) return bad(v, key, "expected true or false");
    return true;
  }
  bool duration(const config_value& v, const std::string& key, std::int64_t& out_ms) {
    std::int64_t ms = 0;
    if (!v.is_scalar() || !parse_duration_ms(v.text, ms) || ms <= 0) {
      return bad(v, key, "expected a duration such as \"2m\", \"10s\", \"500ms\" or seconds");
    }
    out_ms = ms;
    return true;
  }
  bool choice(const config_value& v, const std::string& key, std::string& out,
              std::initializer_list<std::string_view> allowed) {
    std::string s;
    if (!str(v, key, s)) return false;
    if (!one_of(s, allowed)) {
      std::string list;
      for (auto a : allowed) list += (list.empty() ? "" : "|") + std::string(a);
      return bad(v, key, "expected one of " + list);
    }
    out = s;
    return true;
  }

  // "host:port", ":port" or a port; returns false with the error set.
  bool host_port(const config_value& v, const std::string& key, std::string& host, int& port) {
    if (!v.is_scalar()) return bad(v, key, "expected \"host:port\" or \":port\"");
    const std::string& s = v.text;
    std::int64_t n = 0;
    if (parse_size(s, n) && s.find_first_not_of("-0123456789") == std::string::npos) {
      if (n < -1 || n > 65535) return bad(v, key, "port out of range");
      port = static_cast<int>(n);
      return true;
    }
    const auto colon = s.rfind(':');
    if (colon == std::string::npos) return bad(v, key, "expected \"host:port\" or \":port\"");
    std::string h = s.substr(0, colon);
    const std::string p = s.substr(colon + 1);
    if (h.size() >= 2 && h.front() == '[' && h.back() == ']') h = h.substr(1, h.size() - 2);
    const bool random = p == "-1";
    if (!random && (p.empty() || p.find_first_not_of("0123456789") != std::string::npos || p.size() > 5 ||
                    std::stoi(p) > 65535)) {
      return bad(v, key, "bad port in '" + s + "'");
    }
    if (!h.empty()) host = h;
    port = random ? -1 : std::stoi(p);
    return true;
  }

  bool string_list(const config_value& v, const std::string& key, std::vector<std::string>& out) {
    out.clear();
    if (v.is_scalar()) {
      out.push_back(v.text);
      return true;
    }
    if (!v.is_array()) return bad(v, key, "expected an array of strings");
    for (const auto& item : v.items) {
      if (!item.is_scalar()) return bad(item, key, "expected an array of strings");
      out.push_back(item.text);
    }
    return true;
  }

  bool jetstream(const config_value& v, const std::string& key) {
    if (v.is_scalar()) {
      if (v.text == "enabled" || v.text == "disabled") {
        _o.jetstream = v.text == "enabled";
        return true;
      }
      return flag(v, key, _o.jetstream);
    }
    if (!v.is_map()) return bad(v, key, "expected a boolean or a map");
    _o.jetstream = true;  // a jetstream block turns it on unless it says otherwise
    for (const auto& [k, e] : v.entries) {
      bool ok = true;
      if (is(k, {"enabled", "enable"})) {
        ok = flag(e, k, _o.jetstream);
      } else if (is(k, {"store_dir", "store"})) {
        ok = str(e, k, _o.store_dir);
      } else if (is(k, {"max_memory_store", "max_mem", "max_memory", "max_mem_store"})) {
        ok = num(e, k, _o.max_memory_store, -1, INT64_MAX);
      } else if (is(k, {"max_file_store", "max_file", "max_file_size"})) {
        ok = num(e, k, _o.max_file_store, -1, INT64_MAX);
      } else if (is(k, {"domain"})) {
        ok = str(e, k, _o.js_domain);
      } else if (is(k, {"threads"})) {  // Peregrine's own (js_threads): owner threads
        ok = num(e, k, _o.js_threads, 0, kMaxJsThreads);
      } else if (is(k, {"consumer_threads"})) {  // Peregrine's own: consumer threads
        ok = num(e, k, _o.consumer_threads, 0, kMaxJsThreads);
      } else {
        unknown(k, e, "jetstream.");
      }
      if (!ok) return false;
    }
    return true;
  }

  bool cluster(const config_value& v, const std::string& key) {
    if (!v.is_map()) return bad(v, key, "expected a map");
    _o.cluster = true;
    for (const auto& [k, e] : v.entries) {
      bool ok = true;
      if (is(k, {"name"})) {
        ok = str(e, k, _o.cluster_name);
      } else if (is(k, {"listen"})) {
        ok = host_port(e, k, _o.cluster_host, _o.cluster_port);
      } else if (is(k, {"host", "net"})) {
        ok = str(e, k, _o.cluster_host);
      } else if (is(k, {"port"})) {
        ok = num(e, k, _o.cluster_port, -1, 65535);
      } else if (is(k, {"routes"})) {
        ok = string_list(e, k, _o.routes);
        for (const auto& r : _o.routes) {
          std::string h;
          int p = 0;
          if (ok && !parse_route_url(r, h, p)) ok = bad(e, k, "bad route URL '" + r + "'");
        }
      } else if (is(k, {"advertise", "cluster_advertise"})) {
        ok = str(e, k, _o.cluster_advertise);
      } else if (is(k, {"no_advertise"})) {
        ok = flag(e, k, _o.cluster_no_advertise);
      } else if (is(k, {"pool_size"})) {
        ok = num(e, k, _o.cluster_pool_size, -1, 1024);
      } else if (is(k, {"authorization"})) {
        ok = cluster_authorization(e, k);
      } else if (is(k, {"tls"})) {
        ok = tls(e, k, _o.cluster_tls);
      } else if (is(k, {"permissions"})) {
        ok = parse_permissions(e, _o.cluster_permissions.emplace(), _error, _warnings);
      } else if (is(k, {"connect_retries", "compression"})) {
        _warnings.push_back(e.key_where() + ": 'cluster." + k + "' is not supported by peregrine-server yet; ignored");
      } else {
        unknown(k, e, "cluster.");
      }
      if (!ok) return false;
    }
    return true;
  }

  // nats-server 2.9's errors for what a cluster's authorization cannot hold.
  bool cluster_authorization(const config_value& v, const std::string& key) {
    if (!v.is_map()) return bad(v, key, "expected a map");
    for (const auto& [k, e] : v.entries) {
      bool ok = true;
      if (is(k, {"user", "username"})) {
        ok = str(e, k, _o.cluster_user);
      } else if (is(k, {"password", "pass"})) {
        ok = str(e, k, _o.cluster_pass);
      } else if (is(k, {"timeout"})) {
        ok = duration(e, k, _o.cluster_auth_timeout_ms);
      } else if (is(k, {"users"})) {
        _error = v.key_where() + ": Cluster authorization does not allow multiple users";
        return false;
      } else if (is(k, {"token"})) {
        _error = v.key_where() + ": Cluster authorization does not support tokens";
        return false;
      } else {
        unknown(k, e, "cluster.authorization.");
      }
      if (!ok) return false;
    }
    return true;
  }

  bool authorization(const config_value& v, const std::string& key) {
    if (!v.is_map()) return bad(v, key, "expected a map");
    for (const auto& [k, e] : v.entries) {
      bool ok = true;
      if (is(k, {"user", "username"})) {
        ok = str(e, k, _o.user);
      } else if (is(k, {"password", "pass"})) {
        ok = str(e, k, _o.pass);
      } else if (is(k, {"token"})) {
        ok = str(e, k, _o.token);
      } else if (is(k, {"timeout"})) {
        ok = duration(e, k, _o.auth_timeout_ms);
        _o.auth_timeout_set = true;
      } else if (is(k, {"users"})) {
        ok = parse_users(e, _o.users, _error, _warnings);
      } else if (is(k, {"default_permissions"})) {
        ok = parse_permissions(e, _o.default_permissions.emplace(), _error, _warnings);
      } else {
        unknown(k, e, "authorization.");
      }
      if (!ok) return false;
    }
    return true;
  }

  bool tls(const config_value& v, const std::string& key) { return tls(v, key, _o.tls); }
  bool tls(const config_value& v, const std::string& key, net::tls_options& t) {
    if (!v.is_map()) return bad(v, key, "expected a map");
    t.enabled = true;
    for (const auto& [k, e] : v.entries) {
      bool ok = true;
      if (is(k, {"cert_file"})) {
        ok = str(e, k, t.cert_file);
      } else if (is(k, {"key_file"})) {
        ok = str(e, k, t.key_file);
      } else if (is(k, {"ca_file"})) {
        ok = str(e, k, t.ca_file);
      } else if (is(k, {"verify"})) {
        ok = flag(e, k, t.verify);
      } else if (is(k, {"verify_and_map"})) {
        ok = flag(e, k, t.verify_and_map);
      } else if (is(k, {"timeout"})) {
        ok = duration(e, k, t.timeout_ms);
      } else if (is(k, {"handshake_first", "first"})) {
        ok = flag(e, k, t.handshake_first);
      } else if (is(k, {"cipher_suites"})) {
        ok = string_list(e, k, t.cipher_suites);
      } else if (is(k, {"min_version"})) {
        ok = str(e, k, t.min_version);
      } else {
        unknown(k, e, "tls.");
      }
      if (!ok) return false;
    }
    return true;
  }

  bool top(const std::string& k, const config_value& v) {
    if (is(k, {"port"})) return num(v, k, _o.port, -1, 65535);
    if (is(k, {"listen"})) return host_port(v, k, _o.host, _o.port);
    if (is(k, {"host", "net"})) return str(v, k, _o.host);
    if (is(k, {"server_name"})) return str(v, k, _o.server_name);
    if (is(k, {"max_payload"})) return num(v, k, _o.max_payload, 1, INT32_MAX);
    if (is(k, {"max_control_line"})) return num(v, k, _o.max_control_line, 1, INT32_MAX);
    if (is(k, {"max_pending"})) return num(v, k, _o.max_pending, 1, INT64_MAX);
    if (is(k, {"max_connections", "max_conn"})) return num(v, k, _o.max_connections, 0, INT32_MAX);
    if (is(k, {"ping_interval"})) return duration(v, k, _o.ping_interval_ms);
    if (is(k, {"ping_max"})) return num(v, k, _o.ping_max, 0, INT32_MAX);
    if (is(k, {"write_deadline"})) return duration(v, k, _o.write_deadline_ms);
    if (is(k, {"http_port", "monitor_port"})) return num(v, k, _o.http_port, -1, 65535);
    if (is(k, {"http"})) return host_port(v, k, _o.http_host, _o.http_port);
    if (is(k, {"http_host"})) return str(v, k, _o.http_host);
    if (is(k, {"http_base_path"})) return str(v, k, _o.http_base_path);
    if (is(k, {"ports_file_dir"})) return str(v, k, _o.ports_file_dir);
    if (is(k, {"pid_file"})) return str(v, k, _o.pid_file);
    if (is(k, {"lame_duck_duration"})) return duration(v, k, _o.lame_duck_duration_ms);
    if (is(k, {"lame_duck_grace_period"})) return duration(v, k, _o.lame_duck_grace_period_ms);
    if (is(k, {"server_tags"})) return string_list(v, k, _o.server_tags);
    if (is(k, {"cluster"})) return cluster(v, k);
    if (is(k, {"websocket", "ws", "leafnodes", "leaf", "mqtt", "gateway"})) {
      // A nats-server config may carry these; they are not served yet, which is no reason
      // to refuse the rest of the file.
      _warnings.push_back(v.key_where() + ": '" + k + "' is not supported by peregrine-server yet; block ignored");
      return true;
    }
    if (is(k, {"debug"})) return flag(v, k, _o.debug);
    if (is(k, {"trace"})) return flag(v, k, _o.trace);
    if (is(k, {"logfile", "log_file"})) return str(v, k, _o.log_file);
    if (is(k, {"jetstream"})) return jetstream(v, k);
    if (is(k, {"authorization"})) return authorization(v, k);
    if (is(k, {"tls"})) return tls(v, k);
    if (is(k, {"allow_non_tls"})) return flag(v, k, _o.tls.allow_non_tls);
    if (is(k, {"no_auth_user"})) return str(v, k, _o.no_auth_user);
    if (is(k, {"accounts"})) return parse_accounts(v, _o.accounts, _error, _warnings);
    if (is(k, {"system_account"})) return str(v, k, _o.system_account);
    if (is(k, {"no_system_account"})) return flag(v, k, _o.no_system_account);
    // Peregrine's own keys, named as the flags.
    if (is(k, {"shards"})) return num(v, k, _o.shards, 0, 4096);
    if (is(k, {"poll", "poll_mode"})) return choice(v, k, _o.poll_mode, {"adaptive", "busy"});
    if (is(k, {"spin_us"})) return num(v, k, _o.spin_us, 0, 10'000'000);
    if (is(k, {"transport"})) return choice(v, k, _o.transport, {"uring", "socket", "dpdk"});
    if (is(k, {"durability"})) return choice(v, k, _o.durability, {"write", "sync"});
    if (is(k, {"js_thread"})) return flag(v, k, _o.js_thread);
    if (is(k, {"js_threads"})) return num(v, k, _o.js_threads, 0, kMaxJsThreads);
    if (is(k, {"consumer_threads"})) return num(v, k, _o.consumer_threads, 0, kMaxJsThreads);
    if (is(k, {"dpdk_eal"})) return str(v, k, _o.dpdk_eal);
    if (is(k, {"dpdk_port"})) return num(v, k, _o.dpdk_port, 0, 65535);
    if (is(k, {"dpdk_ip"})) return str(v, k, _o.dpdk_ip);
    if (is(k, {"dpdk_netmask"})) return str(v, k, _o.dpdk_netmask);
    if (is(k, {"dpdk_gateway"})) return str(v, k, _o.dpdk_gateway);
    if (is(k, {"dpdk_queues"})) return num(v, k, _o.dpdk_queues, 0, 1024);
    if (is(k, {"cpus"})) {
      std::string s;
      if (!str(v, k, s)) return false;
      if (!valid_cpu_list(s)) return bad(v, k, "expected a cpu list such as \"0,1\" or \"0-3\"");
      _o.cpus = s;
      return true;
    }
    unknown(k, v);
    return true;
  }
};

// Go's flag package accepts -name and --name (and -name=value) for every flag. CLI11 wants
// one dash for single letters and two for words, so rewrite argv into that form.
struct flag_spec {
  std::string_view name;
  std::string_view canonical;  // long name used when a value is attached to a short flag
  bool takes_value;
};

constexpr flag_spec kFlags[] = {
    {"a", "addr", true},          {"addr", "addr", true},
    {"net", "addr", true},        {"p", "port", true},
    {"port", "port", true},       {"n", "name", true},
    {"name", "name", true},       {"server_name", "name", true},
    {"c", "config", true},        {"config", "config", true},
    {"js", "js", false},          {"jetstream", "js", false},
    {"sd", "store_dir", true},    {"store_dir", "store_dir", true},
    {"m", "http_port", true},     {"http_port", "http_port", true},
    {"l", "log", true},           {"log", "log", true},
    {"log_file", "log", true},    {"D", "debug", false},
    {"debug", "debug", false},    {"V", "trace", false},
    {"trace", "trace", false},    {"DV", "DV", false},
    {"user", "user", true},       {"pass", "pass", true},
    {"auth", "auth", true},       {"max_payload", "max_payload", true},
    {"v", "version", false},      {"version", "version", false},
    {"h", "help", false},         {"help", "help", false},
    {"shards", "shards", true},   {"poll", "poll", true},
    {"spin_us", "spin_us", true}, {"cpus", "cpus", true},
    {"transport", "transport", true}, {"durability", "durability", true},
    {"js_thread", "js_thread", false}, {"js_threads", "js_threads", true},
    {"consumer_threads", "consumer_threads", true},
    {"dpdk_eal", "dpdk_eal", true},   {"dpdk_port", "dpdk_port", true},
    {"dpdk_ip", "dpdk_ip", true},     {"dpdk_netmask", "dpdk_netmask", true},
    {"dpdk_gateway", "dpdk_gateway", true}, {"dpdk_queues", "dpdk_queues", true},
    {"ports_file_dir", "ports_file_dir", true}, {"P", "pid", true},
    {"pid", "pid", true},             {"sl", "signal", true},
    {"signal", "signal", true},       {"http_base_path", "http_base_path", true},
    {"tls", "tls", false},            {"tlscert", "tlscert", true},
    {"tlskey", "tlskey", true},       {"tlscacert", "tlscacert", true},
    {"tlsverify", "tlsverify", false},
    {"cluster", "cluster", true},     {"cluster_listen", "cluster", true},
    {"cluster_name", "cluster_name", true}, {"routes", "routes", true},
    {"cluster_advertise", "cluster_advertise", true}, {"no_advertise", "no_advertise", false},
};

const flag_spec* find_flag(std::string_view name) {
  for (const auto& f : kFlags) {
    if (f.name == name) return &f;
  }
  return nullptr;
}

struct normalised {
  std::vector<std::string> args;  // args[0] is the program name
  bool help = false;
  bool version = false;
  std::string config;
};

normalised normalise(int argc, const char* const* argv) {
  normalised n;
  n.args.emplace_back(argc > 0 && argv[0] ? argv[0] : "peregrine-server");
  bool rest_literal = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i] ? argv[i] : "";
    if (rest_literal || a.size() < 2 || a[0] != '-' || a == "--") {
      if (a == "--") rest_literal = true;
      n.args.push_back(a);
      continue;
    }
    std::string body = a.substr(a[1] == '-' ? 2 : 1);
    std::string value;
    const auto eq = body.find('=');
    const bool has_value = eq != std::string::npos;
    if (has_value) {
      value = body.substr(eq + 1);
      body.resize(eq);
    }
    const flag_spec* f = find_flag(body);
    if (f == nullptr) {  // unknown: keep it in CLI11's form so CLI11 reports it
      n.args.push_back((body.size() == 1 ? "-" : "--") + body + (has_value ? "=" + value : ""));
      continue;
    }
    bool on = true;
    if (has_value && !parse_bool(value, on)) on = true;  // CLI11 rejects the bad value later
    if (f->canonical == "help") n.help = n.help || on;
    if (f->canonical == "version") n.version = n.version || on;
    if (has_value) {
      n.args.push_back("--" + std::string(f->canonical) + "=" + value);
    } else {
      n.args.push_back((body.size() == 1 ? "-" : "--") + body);
    }
    if (f->canonical == "config") {
      if (has_value) {
        n.config = value;
      } else if (i + 1 < argc && argv[i + 1]) {
        n.config = argv[i + 1];
      }
    }
    if (f->takes_value && !has_value && i + 1 < argc) n.args.push_back(argv[++i]);  // the value, verbatim
  }
  return n;
}

}  // namespace

bool parse_route_url(const std::string& url, std::string& host, int& port) {
  std::string rest = url;
  if (const auto scheme = rest.find("://"); scheme != std::string::npos) rest = rest.substr(scheme + 3);
  if (const auto at = rest.rfind('@'); at != std::string::npos) rest = rest.substr(at + 1);  // user:pass
  while (!rest.empty() && rest.back() == '/') rest.pop_back();
  const auto colon = rest.rfind(':');
  if (colon == std::string::npos || colon == 0) return false;
  std::string h = rest.substr(0, colon);
  const std::string p = rest.substr(colon + 1);
  if (h.size() >= 2 && h.front() == '[' && h.back() == ']') h = h.substr(1, h.size() - 2);
  if (p.empty() || p.size() > 5 || p.find_first_not_of("0123456789") != std::string::npos) {
    if (p != "-1") return false;
  }
  const int n = std::stoi(p);
  if (n > 65535) return false;
  host = h;
  port = n;
  return true;
}

void route_url_credentials(const std::string& url, std::string& user, std::string& pass) {
  user.clear();
  pass.clear();
  std::string rest = url;
  if (const auto scheme = rest.find("://"); scheme != std::string::npos) rest = rest.substr(scheme + 3);
  const auto at = rest.rfind('@');
  if (at == std::string::npos) return;
  const std::string info = rest.substr(0, at);
  auto decode = [](std::string_view in) {
    std::string out;
    for (std::size_t i = 0; i < in.size(); ++i) {
      const bool escape = in[i] == '%' && i + 2 < in.size() && std::isxdigit((unsigned char)in[i + 1]) &&
                          std::isxdigit((unsigned char)in[i + 2]);
      if (escape) {
        out.push_back(char(std::stoi(std::string(in.substr(i + 1, 2)), nullptr, 16)));
        i += 2;
      } else {
        out.push_back(in[i]);
      }
    }
    return out;
  };
  const auto colon = info.find(':');
  user = decode(std::string_view(info).substr(0, colon));
  if (colon != std::string::npos) pass = decode(std::string_view(info).substr(colon + 1));
}

std::string default_store_dir() {
  std::string base = "/tmp";
  if (const char* t = std::getenv("TMPDIR"); t != nullptr && *t != '\0') base = t;
  while (base.size() > 1 && base.back() == '/') base.pop_back();
  return base + "/peregrine/jetstream";
}

bool load_config_file(const std::string& path, server_options& out, std::string& error,
                      std::vector<std::string>& warnings) {
  config_value root;
  if (!parse_config_file(path, root, error)) return false;
  mapper m(out, error, warnings);
  if (!m.apply(root)) return false;
  if (!validate_auth(out, error)) {
    error = path + ": " + error;
    return false;
  }
  out.config_file = path;
  return true;
}

cli_result parse_command_line(int argc, const char* const* argv, server_options& out) {
  cli_result res;
  const normalised n = normalise(argc, argv);

  CLI::App app{"Peregrine: a NATS-protocol message broker with JetStream.", "peregrine-server"};
  app.set_help_flag();  // our own -h, so the text comes back instead of being printed
  app.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  app.footer("Every flag also works with one or two dashes (-js, --js, -sd, --port), as in nats-server.\n"
             "Flags override the config file given with -c.");

  bool help = false, version = false, dv = false;
  std::string max_payload, cluster_url, routes_list;
  bool no_advertise = false;
  app.add_option("-a,--addr,--net", out.host, "Address to listen on for clients");
  app.add_option("-p,--port", out.port, "Port for clients (-1: random)")->check(CLI::Range(-1, 65535));
  app.add_option("-n,--name,--server_name", out.server_name, "Server name (default: the server id)");
  app.add_option("-c,--config", out.config_file, "Configuration file (nats-server syntax)");
  app.add_flag("--js,--jetstream", out.jetstream, "Enable JetStream");
  app.add_option("--sd,--store_dir", out.store_dir, "JetStream storage directory");
  app.add_option("-m,--http_port", out.http_port, "HTTP monitoring port")->check(CLI::Range(-1, 65535));
  app.add_option("--http_base_path", out.http_base_path, "Path prefix of the HTTP monitoring endpoints");
  app.add_option("--ports_file_dir", out.ports_file_dir,
                 "Write <dir>/<exe>_<pid>.ports (JSON of the listen URLs) once listening");
  app.add_option("-P,--pid", out.pid_file, "File to write the process id to");
  app.add_option("--sl,--signal", out.signal,
                 "Send a signal to a running server and exit: stop|quit|term|reload|reopen|ldm[=<pid or pid file>]");
  app.add_option("-l,--log,--log_file", out.log_file, "Log file (default: stderr)");
  app.add_flag("-D,--debug", out.debug, "Enable debug logging");
  app.add_flag("-V,--trace", out.trace, "Enable protocol tracing");
  app.add_flag("--DV", dv, "Enable debug logging and protocol tracing");
  app.add_option("--user", out.user, "User required for connections");
  app.add_option("--pass", out.pass, "Password required for connections");
  app.add_option("--auth", out.token, "Authorization token required for connections");
  bool tls_flag = false;
  bool tlsverify_flag = false;
  app.add_flag("--tls", tls_flag, "Enable TLS, do not verify clients");
  app.add_option("--tlscert", out.tls.cert_file, "Server certificate file");
  app.add_option("--tlskey", out.tls.key_file, "Private key for server certificate");
  app.add_flag("--tlsverify", tlsverify_flag, "Enable TLS, verify client certificates");
  app.add_option("--tlscacert", out.tls.ca_file, "Client certificate CA for verification");
  app.add_option("--max_payload", max_payload, "Maximum message payload (bytes; 1MB, 512KB ...)");
  app.add_option("--cluster,--cluster_listen", cluster_url, "Cluster URL for route connections (nats://host:port)");
  app.add_option("--cluster_name", out.cluster_name, "Cluster name");
  app.add_option("--routes", routes_list, "Routes to solicit, comma separated (nats://host:port,...)");
  app.add_option("--cluster_advertise", out.cluster_advertise, "Cluster URL other servers should dial");
  app.add_flag("--no_advertise", no_advertise, "Do not advertise the cluster's client URLs to clients");
  app.add_flag("-v,--version", version, "Print the version and exit");
  app.add_flag("-h,--help", help, "Print this help and exit");
  app.add_option("--shards", out.shards, "Shard (worker thread) count; 0 fits the machine")
      ->check(CLI::Range(0, 4096));
  app.add_option("--poll", out.poll_mode, "Shard polling: adaptive or busy")
      ->check(CLI::IsMember({"adaptive", "busy"}));
  app.add_option("--spin_us", out.spin_us, "Microseconds an idle shard spins before sleeping (adaptive)")
      ->check(CLI::Range(std::int64_t{0}, std::int64_t{10'000'000}));
  app.add_option("--cpus", out.cpus, "Pin shard threads to these cpus, e.g. 0,1 or 0-3")
      ->check(CLI::Validator(
          [](std::string& s) { return valid_cpu_list(s) ? std::string() : "bad cpu list '" + s + "'"; },
          "CPU LIST"));
  app.add_option("--transport", out.transport, "Network transport: uring, socket or dpdk")
      ->check(CLI::IsMember({"uring", "socket", "dpdk"}));
  app.add_option("--durability", out.durability, "PubAck after the write or after fsync: write or sync")
      ->check(CLI::IsMember({"write", "sync"}));
  app.add_flag("--js_thread", out.js_thread,
               "Run JetStream (streams and their consumers) on a thread of its own, not on shard 0's "
               "(pinned to the cpu after the shards' in --cpus); the same as --js_threads 1");
  app.add_option("--js_threads", out.js_threads,
                 "JetStream owner threads (pg-js-<i>), streams placed on them by a hash of the name; "
                 "owner 0 also serves $JS.API (pinned to the cpus after the shards' in --cpus); 0: on shard 0")
      ->check(CLI::Range(0, kMaxJsThreads));
  app.add_option("--consumer_threads", out.consumer_threads,
                 "Consumer threads (pg-cons-<i>): pull consumers of limits streams run there, reading "
                 "their stream from its owner; 0: on the stream's owner")
      ->check(CLI::Range(0, kMaxJsThreads));
  app.add_option("--dpdk_eal", out.dpdk_eal,
                 "DPDK EAL arguments as one value, e.g. --dpdk_eal=\"-l 0 --no-huge -m 128 --no-pci "
                 "--vdev=net_tap0,iface=pg0\" (--transport dpdk)");
  app.add_option("--dpdk_port", out.dpdk_port, "DPDK port id (default 0)")->check(CLI::Range(0, 65535));
  app.add_option("--dpdk_ip", out.dpdk_ip, "IPv4 address of the server on the DPDK port");
  app.add_option("--dpdk_netmask", out.dpdk_netmask, "Netmask of the DPDK port's subnet (default 255.255.255.0)");
  app.add_option("--dpdk_gateway", out.dpdk_gateway, "IPv4 gateway for clients off the DPDK port's subnet");
  app.add_option("--dpdk_queues", out.dpdk_queues,
                 "DPDK rx/tx queue pairs (default 0: one per shard); fewer than --shards steers connections "
                 "to shards in software")
      ->check(CLI::Range(0, 1024));

  if (n.help) {
    res.outcome = cli_outcome::exit_ok;
    res.message = app.help();
    return res;
  }
  if (n.version) {
    res.outcome = cli_outcome::exit_ok;
    res.message = std::string("peregrine-server: v") + PEREGRINE_NATS_LEVEL + " (peregrine " +
                  PEREGRINE_VERSION + ")";
    return res;
  }
  // The config file first, so that the flags parsed below override it.
  if (!n.config.empty()) {
    std::string error;
    if (!load_config_file(n.config, out, error, res.warnings)) {
      res.outcome = cli_outcome::exit_error;
      res.message = error;
      return res;
    }
  }

  std::vector<const char*> cargv;
  for (const auto& a : n.args) cargv.push_back(a.c_str());
  try {
    app.parse(static_cast<int>(cargv.size()), cargv.data());
  } catch (const CLI::ParseError& e) {
    res.outcome = cli_outcome::exit_error;
    res.message = std::string("peregrine-server: ") + e.what();
    return res;
  }
  if (dv) out.debug = out.trace = true;
  // As nats-server: any of the TLS flags turns TLS on; --tlsverify also verifies clients.
  if (tls_flag || tlsverify_flag || app.count("--tlscert") || app.count("--tlskey")) out.tls.enabled = true;
  if (tlsverify_flag) out.tls.verify = true;
  // nats-server's default auth timeout under TLS: the handshake's time plus a second.
  if (out.tls.enabled && !out.auth_timeout_set) out.auth_timeout_ms = out.tls.timeout_ms + 1000;
  if (no_advertise) out.cluster_no_advertise = true;
  if (!cluster_url.empty()) {
    if (!parse_route_url(cluster_url, out.cluster_host, out.cluster_port)) {
      res.outcome = cli_outcome::exit_error;
      res.message = "peregrine-server: --cluster: expected nats://host:port, got '" + cluster_url + "'";
      return res;
    }
    out.cluster = true;
  }
  if (!routes_list.empty()) {
    out.routes.clear();
    std::size_t i = 0;
    while (i <= routes_list.size()) {
      std::size_t j = routes_list.find(',', i);
      if (j == std::string::npos) j = routes_list.size();
      std::string r = routes_list.substr(i, j - i);
      std::string h;
      int p = 0;
      if (!r.empty()) {
        if (!parse_route_url(r, h, p)) {
          res.outcome = cli_outcome::exit_error;
          res.message = "peregrine-server: --routes: bad route URL '" + r + "'";
          return res;
        }
        out.routes.push_back(r);
      }
      i = j + 1;
    }
  }
  if (!max_payload.empty()) {
    std::int64_t v = 0;
    if (!parse_size(max_payload, v) || v <= 0 || v > INT32_MAX) {
      res.outcome = cli_outcome::exit_error;
      res.message = "peregrine-server: --max_payload: expected a size such as 1048576 or 1MB, got '" +
                    max_payload + "'";
      return res;
    }
    out.max_payload = v;
  }
  return res;
}

}  // namespace core
