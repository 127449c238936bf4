// The config file's values onto server_options: nats-server's keys, names and ranges, plus
// Peregrine's own keys named as the flags (the file's syntax is config_file.cc's).
#include "src/core/options.h"

#include <algorithm>
#include <cctype>
#include <string_view>

#include "src/core/auth_config.h"
#include "src/core/config_file.h"

namespace core {

namespace {

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

}  // namespace

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

}  // namespace core
