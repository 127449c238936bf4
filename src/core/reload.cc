#include "src/core/reload.h"

#include <fmt/format.h>

namespace core {
namespace {

std::string show(const std::string& s) { return "\"" + s + "\""; }
std::string show(bool b) { return b ? "true" : "false"; }
std::string show(const std::vector<std::string>& v) {
  std::string out = "[";
  for (const auto& s : v) out += (out.size() > 1 ? ", " : "") + s;
  return out + "]";
}
template <typename T>
std::string show(const T& v) {
  return fmt::format("{}", v);
}
}  // namespace

reload_plan plan_reload(const server_options& current, const server_options& next) {
  reload_plan p;
  p.result = current;
  // Applied live: each shard picks the new values up on its next tick.
  auto live = [&](const char* key, auto server_options::*field, bool* flag = nullptr) {
    if (current.*field == next.*field) return;
    p.result.*field = next.*field;
    p.changed.emplace_back(key);
    if (flag) *flag = true;
  };
  // Fixed at start: sockets, threads, stores are built from them.
  auto fixed = [&](const char* key, auto server_options::*field) {
    if (current.*field == next.*field) return;
    p.refused.push_back(std::string(key) + ": " + show(current.*field) + " -> " + show(next.*field));
  };
  live("debug", &server_options::debug, &p.logging_changed);
  live("trace", &server_options::trace, &p.logging_changed);
  live("logfile", &server_options::log_file, &p.logging_changed);
  live("authorization.user", &server_options::user, &p.auth_changed);
  live("authorization.password", &server_options::pass, &p.auth_changed);
  live("authorization.token", &server_options::token, &p.auth_changed);
  live("authorization.users", &server_options::users, &p.auth_changed);
  live("authorization.default_permissions", &server_options::default_permissions, &p.auth_changed);
  live("no_auth_user", &server_options::no_auth_user, &p.auth_changed);
  // Accounts' users change live; the accounts themselves (their ids name every shard's
  // sublists), exports and imports need a restart.
  if (current.accounts != next.accounts) {
    auto shape = [](std::vector<account_config> v) {
      for (auto& a : v) {
        a.users.clear();
        a.default_permissions.reset();
      }
      return v;
    };
    if (shape(current.accounts) == shape(next.accounts)) {
      p.result.accounts = next.accounts;
      p.changed.emplace_back("accounts.users");  // and their default_permissions
      p.auth_changed = true;
    } else {
      p.refused.push_back("accounts: the accounts, their exports and imports (users change live)");
    }
  }
  live("authorization.timeout", &server_options::auth_timeout_ms);
  live("max_payload", &server_options::max_payload);
  live("max_control_line", &server_options::max_control_line);
  live("max_pending", &server_options::max_pending);
  live("max_connections", &server_options::max_connections);
  live("ping_interval", &server_options::ping_interval_ms);
  live("ping_max", &server_options::ping_max);
  live("write_deadline", &server_options::write_deadline_ms);
  live("lame_duck_duration", &server_options::lame_duck_duration_ms);
  live("lame_duck_grace_period", &server_options::lame_duck_grace_period_ms);
  live("server_tags", &server_options::server_tags);
  // TLS: certificate, key, CA, verification and ciphers apply to connections opened after the
  // reload (main swaps the context); turning TLS on or off and the handshake's shape need a
  // restart.
  const net::tls_options& ct = current.tls;
  const net::tls_options& nt = next.tls;
  if (ct.enabled != nt.enabled) {
    p.refused.push_back("tls: " + show(ct.enabled ? "enabled" : "disabled") + " -> " +
                        show(nt.enabled ? "enabled" : "disabled"));
  } else if (ct.enabled) {
    auto tls_live = [&](const char* key, auto net::tls_options::*field) {
      if (ct.*field == nt.*field) return;
      p.result.tls.*field = nt.*field;
      p.changed.emplace_back(key);
      p.tls_changed = true;
    };
    auto tls_fixed = [&](const char* key, auto net::tls_options::*field) {
      if (ct.*field == nt.*field) return;
      p.refused.push_back(std::string(key) + ": " + show(ct.*field) + " -> " + show(nt.*field));
    };
    tls_live("tls.cert_file", &net::tls_options::cert_file);
    tls_live("tls.key_file", &net::tls_options::key_file);
    tls_live("tls.ca_file", &net::tls_options::ca_file);
    tls_live("tls.verify", &net::tls_options::verify);
    tls_live("tls.verify_and_map", &net::tls_options::verify_and_map);
    tls_live("tls.cipher_suites", &net::tls_options::cipher_suites);
    tls_live("tls.min_version", &net::tls_options::min_version);
    tls_fixed("tls.timeout", &net::tls_options::timeout_ms);
    tls_fixed("tls.handshake_first", &net::tls_options::handshake_first);
    tls_fixed("allow_non_tls", &net::tls_options::allow_non_tls);
  }
  fixed("host", &server_options::host);
  fixed("port", &server_options::port);
  fixed("server_name", &server_options::server_name);
  fixed("http_port", &server_options::http_port);
  fixed("http_host", &server_options::http_host);
  fixed("http_base_path", &server_options::http_base_path);
  fixed("ports_file_dir", &server_options::ports_file_dir);
  fixed("pid_file", &server_options::pid_file);
  fixed("jetstream", &server_options::jetstream);
  fixed("jetstream.store_dir", &server_options::store_dir);
  fixed("jetstream.max_memory_store", &server_options::max_memory_store);
  fixed("jetstream.max_file_store", &server_options::max_file_store);
  fixed("jetstream.domain", &server_options::js_domain);
  fixed("shards", &server_options::shards);
  fixed("poll", &server_options::poll_mode);
  fixed("spin_us", &server_options::spin_us);
  fixed("cpus", &server_options::cpus);
  fixed("transport", &server_options::transport);
  fixed("durability", &server_options::durability);
  fixed("js_thread", &server_options::js_thread);
  fixed("jetstream.threads", &server_options::js_threads);
  fixed("jetstream.consumer_threads", &server_options::consumer_threads);
  fixed("dpdk_eal", &server_options::dpdk_eal);
  fixed("dpdk_port", &server_options::dpdk_port);
  fixed("dpdk_ip", &server_options::dpdk_ip);
  fixed("dpdk_netmask", &server_options::dpdk_netmask);
  fixed("dpdk_gateway", &server_options::dpdk_gateway);
  fixed("dpdk_queues", &server_options::dpdk_queues);
  // Routes are dialed and advertised as started; a changed cluster block needs a restart.
  fixed("cluster", &server_options::cluster);
  fixed("cluster.name", &server_options::cluster_name);
  fixed("cluster.host", &server_options::cluster_host);
  fixed("cluster.port", &server_options::cluster_port);
  fixed("cluster.routes", &server_options::routes);
  fixed("cluster.advertise", &server_options::cluster_advertise);
  fixed("cluster.no_advertise", &server_options::cluster_no_advertise);
  fixed("cluster.pool_size", &server_options::cluster_pool_size);
  // Route authorization, TLS and permissions are read when a route opens; not reloaded yet.
  auto fixed_quiet = [&](const char* key, bool same) {  // no values: they hold secrets or are blocks
    if (!same) p.refused.push_back(std::string(key) + ": changed");
  };
  fixed("cluster.authorization.user", &server_options::cluster_user);
  fixed_quiet("cluster.authorization.password", current.cluster_pass == next.cluster_pass);
  fixed("cluster.authorization.timeout", &server_options::cluster_auth_timeout_ms);
  const net::tls_options &rt = current.cluster_tls, &nrt = next.cluster_tls;
  fixed_quiet("cluster.tls", rt.enabled == nrt.enabled && rt.cert_file == nrt.cert_file && rt.key_file == nrt.key_file &&
                                 rt.ca_file == nrt.ca_file && rt.verify == nrt.verify && rt.timeout_ms == nrt.timeout_ms);
  fixed_quiet("cluster.permissions", current.cluster_permissions == next.cluster_permissions);
  return p;
}

std::size_t lame_duck_due(std::size_t initial, std::int64_t elapsed_ns, std::int64_t grace_ns,
                          std::int64_t duration_ns) {
  if (grace_ns > duration_ns) grace_ns = duration_ns;
  if (elapsed_ns < grace_ns || initial == 0) return 0;
  const std::int64_t spread = duration_ns - grace_ns;
  if (spread <= 0 || elapsed_ns - grace_ns >= spread) return initial;
  const auto due = std::size_t(double(initial) * double(elapsed_ns - grace_ns) / double(spread)) + 1;
  return due < initial ? due : initial;
}

}  // namespace core
