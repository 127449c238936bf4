#include "src/core/server.h"

#include "src/core/cluster_replication.h"
#include "src/core/system_account.h"
#include "src/core/sys_js_relay.h"

#include <pthread.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <optional>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <future>
#include <random>
#include <string_view>

#include "peregrine_config.h"
#include "src/base/log.h"
#include "src/core/process_files.h"

namespace core {
namespace {
std::vector<int> parse_cpus(const std::string& list) {
  std::vector<int> out;
  std::size_t i = 0;
  while (i < list.size()) {
    std::size_t j = list.find(',', i);
    if (j == std::string::npos) j = list.size();
    const std::string part = list.substr(i, j - i);
    const auto dash = part.find('-');
    try {
      if (dash == std::string::npos) {
        out.push_back(std::stoi(part));
      } else {
        for (int c = std::stoi(part.substr(0, dash)); c <= std::stoi(part.substr(dash + 1)); ++c) out.push_back(c);
      }
    } catch (...) {
    }
    i = j + 1;
  }
  return out;
}
}  // namespace

std::string server_shared::info_line(const nlohmann::ordered_json& info, std::uint64_t client_id,
                                     const std::string& client_ip, const std::string& nonce,
                                     const nlohmann::ordered_json* cluster) {
  nlohmann::ordered_json j = info;
  j["client_id"] = client_id;
  if (!client_ip.empty()) j["client_ip"] = client_ip;
  if (!nonce.empty()) j["nonce"] = nonce;
  if (cluster)
    for (const auto& [k, v] : cluster->items()) j[k] = v;
  return "INFO " + j.dump() + " \r\n";
}

int default_shard_count() {
  // Leave a core for the kernel and other processes: one shard per two cores, at least one.
  const long n = sysconf(_SC_NPROCESSORS_ONLN);
  return n >= 4 ? int(n / 2) : 1;
}

std::string make_server_id() {
  static const char* alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";
  std::random_device rd;
  std::mt19937_64 g(rd());
  std::string id = "N";
  for (int i = 0; i < 55; ++i) id.push_back(alphabet[g() % 32]);
  return id;
}

nlohmann::ordered_json server::build_info(const server_options& o, int bound_port) const {
  nlohmann::ordered_json j = nlohmann::ordered_json::object();
  j["server_id"] = _shared.server_id;
  j["server_name"] = _shared.server_name;
  j["version"] = PEREGRINE_NATS_LEVEL;
  j["proto"] = 1;
  j["git_commit"] = std::string("peregrine-") + PEREGRINE_VERSION;
  j["go"] = std::string("peregrine ") + PEREGRINE_VERSION;
  j["host"] = o.host;
  j["port"] = bound_port;
  j["headers"] = true;
  // nats-server's Info order: auth_required, tls_required, tls_verify, tls_available, then max_payload.
  if (auth_configured(o)) j["auth_required"] = true;
  if (o.tls.enabled) {
    if (!o.tls.allow_non_tls) j["tls_required"] = true;
    if (o.tls.verify || o.tls.verify_and_map) j["tls_verify"] = true;
    if (o.tls.allow_non_tls) j["tls_available"] = true;
  }
  j["max_payload"] = o.max_payload;
  if (o.jetstream) j["jetstream"] = true;
  if (!o.js_domain.empty()) j["domain"] = o.js_domain;
  return j;
}

void server::publish_live(const server_options& o) {
  auto l = std::make_shared<live_config>();
  l->opts = o;
  l->opts.port = _shared.opts.port;  // the bound port, as the rest of the server sees it
  l->info = build_info(o, _shared.opts.port);
  l->auth = build_auth_table(o);
  l->auth_required = l->auth->required;
  _shared.publish_live(std::move(l));
}

server::server(server_options opts, std::unique_ptr<transport_factory> transports)
    : _transports(std::move(transports)) {
  _shared.opts = std::move(opts);
  const auto& o = _shared.opts;
  _shared.server_id = make_server_id();
  _shared.server_name = o.server_name.empty() ? _shared.server_id : o.server_name;
  _shared.auth_required = auth_configured(o);
  _shared.shard_count = std::uint32_t(o.shards > 0 ? o.shards : default_shard_count());
  _shared.info = build_info(o, o.port);
  _start_wall_ns = base::system_clock::instance().wall_ns();
  publish_live(o);
}

void server::reload(const server_options& applied) {
  // As nats-server: a lower max_connections closes connections until the count fits.
  const int excess = _shared.connections.load() - applied.max_connections;
  if (applied.max_connections > 0 && excess > 0 && applied.max_connections < _shared.live()->opts.max_connections)
    _shared.conn_excess.store(excess);
  publish_live(applied);
  _config_load_wall_ns = base::system_clock::instance().wall_ns();
}

void server::enter_lame_duck() {
  std::int64_t expected = 0;
  const std::int64_t now = base::system_clock::instance().monotonic_ns();
  if (!_shared.lame_duck_since_ns.compare_exchange_strong(expected, now)) return;
  for (auto& s : _shards) s->event_loop().wake();
}

server::~server() { shutdown(); }

// The route listener and the INFO routes see; before the shards exist (they read both).
base::status server::start_cluster() {
  const auto& o = _shared.opts;
  auto shard0 = std::make_shared<dispatcher*>(nullptr);  // set before the manager's thread starts
  _routes = std::make_unique<route_manager>(o, [shard0](int fd, const std::string& url, bool implicit) {
    (*shard0)->call_on_shard([fd, url, implicit](dispatcher& d) { d.adopt_route(fd, url, implicit); });
  });
  _route_shard0 = shard0;
  if (auto st = _routes->listen(); !st) {
    _start_error = fmt::format("Error listening on cluster port: {}:{}, \"{}\"", o.cluster_host, o.cluster_port,
                               std::strerror(st.err().sys_errno));
    return st;
  }
  std::string host = o.cluster_host;
  int port = _routes->bound_port();
  if (!o.cluster_advertise.empty()) parse_route_url(o.cluster_advertise.find(':') == std::string::npos
                                                        ? o.cluster_advertise + ":" + std::to_string(port)
                                                        : o.cluster_advertise,
                                                    host, port);
  nlohmann::ordered_json j = nlohmann::ordered_json::object();
  j["server_id"] = _shared.server_id;
  j["server_name"] = _shared.server_name;
  j["version"] = PEREGRINE_NATS_LEVEL;
  j["proto"] = 2;  // the route protocol level nats-server 2.9 speaks
  j["go"] = std::string("peregrine ") + PEREGRINE_VERSION;
  j["host"] = host;
  j["port"] = port;
  j["headers"] = true;
  if (!o.cluster_user.empty()) j["auth_required"] = true;
  if (o.cluster_tls.enabled) {
    j["tls_required"] = true;
    if (o.cluster_tls.verify) j["tls_verify"] = true;
  }
  j["max_payload"] = o.max_payload;
  j["cluster"] = o.cluster_name.empty() ? _shared.server_id : o.cluster_name;
  if (o.cluster_name.empty()) j["cluster_dynamic"] = true;
  // Our clients' URLs (a wildcard host: every interface but loopback, as nats-server lists them)
  std::vector<std::string> urls;
  for (auto u : listen_urls("nats", o.host, o.port)) urls.push_back(u.substr(7));
  const bool any = o.host.empty() || o.host == "0.0.0.0" || o.host == "::";
  if (any && urls.size() > 1)
    std::erase_if(urls, [](const std::string& u) { return u.starts_with("127.") || u.starts_with("[::1]"); });
  _shared.own_client_urls = urls;
  j["connect_urls"] = o.cluster_no_advertise ? std::vector<std::string>{} : urls;
  j["lnoc"] = true;
  // A Peregrine peer's replication connections come to this same port (route_manager tells
  // them from routes by their first line); the field says we take them (nats-server has none).
  if (_shared.replication) {
    j["pg_repl_port"] = port;
    cluster_replication* repl = _shared.replication;
    _routes->set_repl_handoff([repl](int fd) { repl->adopt_connection(fd); });
  }
  _shared.route_info = std::move(j);
  _shared.routes = _routes.get();
  return {};
}

base::status server::start() {
  const auto& o = _shared.opts;
  shard::loop_config lcfg;
  lcfg.mode = o.poll_mode == "busy" ? shard::poll_mode::busy : shard::poll_mode::adaptive;
  lcfg.spin_ns = o.spin_us * base::kMicro;
  // No spinning while the host is oversubscribed (spin_governor.h); PEREGRINE_SPIN_GOVERNOR=off
  // keeps the plain spin, for comparisons.
  const char* governor = std::getenv("PEREGRINE_SPIN_GOVERNOR");
  lcfg.govern_spin = governor == nullptr || std::string_view(governor) != "off";
  auto transports = _transports->client_transports(_shared.shard_count);
  if (!transports) return transports.err();
  _shared.shard_count = std::uint32_t(transports->size());
  for (std::uint32_t i = 0; i < _shared.shard_count; ++i)
    _shards.push_back(std::make_unique<dispatcher>(i, _shared, std::move((*transports)[i]), lcfg));
  // --js_threads N (or --js_thread, N = 1): the services get N dispatchers of their own
  // (owner threads) that never listen. Each is a shard without clients: its internal
  // subscriptions are copied to every client shard, so acks and requests arrive over the
  // rings, and what it publishes leaves over them. Service k runs on owner k % N.
  // --consumer_threads M: M more such dispatchers after the owners (pg-cons-<i>); a service
  // added with owner index >= max(1, N) runs on consumer thread (index - max(1, N)) % M.
  const std::size_t client_shards = _shards.size();
  const std::size_t owners = _pending_services.empty() ? 0 : std::size_t(js_owner_threads(o));
  const std::size_t consumers = _pending_services.empty() ? 0 : std::size_t(std::max(0, o.consumer_threads));
  const std::size_t owner_slots = std::max<std::size_t>(1, owners);
  for (std::size_t i = 0; i < owners + consumers; ++i)
    _shards.push_back(std::make_unique<dispatcher>(std::uint32_t(client_shards + i), _shared,
                                                   _transports->idle_transport(), lcfg));
  std::vector<dispatcher*> all;
  for (auto& s : _shards) all.push_back(s.get());
  for (auto& s : _shards) s->connect(all);
  const auto& accounts = _shared.live()->auth->accounts;
  auto account_id = [&](const std::string& name) -> std::optional<std::uint32_t> {
    if (name.empty() || name == "$G") return kGlobalAccount;
    auto it = std::find_if(accounts.begin(), accounts.end(), [&](const account_rules& a) { return a.name == name; });
    if (it == accounts.end()) return std::nullopt;
    return std::uint32_t(it - accounts.begin());
  };
  for (auto& p : _pending_services) {
    const auto found = account_id(p.account);
    if (!found) return base::error{base::errc::internal, EINVAL};
    const std::uint32_t account = *found;
    if (consumers && p.owner >= owner_slots)
      _shards[client_shards + owners + (p.owner - owner_slots) % consumers]->add_service(std::move(p.svc), account);
    else
      (owners ? _shards[client_shards + p.owner % owners] : _shards[0])->add_service(std::move(p.svc), account);
  }
  _pending_services.clear();
  // The system account's requests are served from shard 0 (a client shard: its answers reach
  // requesters without the JetStream thread).
  if (auto sys = make_system_service(*this, _shared.live()->auth->system_account)) _shards[0]->add_service(std::move(sys));
  // The cluster operator's JetStream requests come from the system account (sys_js_relay.h).
  if (auto relay = make_sys_js_relay(*this, _shared.live()->auth->system_account,
                                     account_id(_operator_js_account).value_or(kGlobalAccount)))
    _shards[0]->add_service(std::move(relay));
  // -1 asks for a random port, as in nats-server.
  auto st = _shards[0]->transport().listen(o.host, o.port < 0 ? 0 : o.port);
  if (!st) return st;
  if (o.port <= 0) {  // shards have not started: the options and INFO may still change
    _shared.opts.port = _shards[0]->transport().bound_port();
    _shared.info["port"] = _shared.opts.port;
    publish_live(_shared.live()->opts);
  }
  if (o.cluster) {
    if (auto cst = start_cluster(); !cst) return cst;
    *_route_shard0 = _shards[0].get();
    for (auto& s : _shards) s->init_cluster_info();
  }
  if (client_shards > 1) {
    // Shard 0 accepts; connections are spread round-robin and handed over on the rings.
    auto next = std::make_shared<std::uint32_t>(0);
    dispatcher* first = _shards[0].get();
    first->transport().set_accept_sink([first, next, client_shards](int fd) {
      const std::uint32_t to = (*next)++ % std::uint32_t(client_shards);
      if (to == 0) {
        first->place_connection(fd);
      } else {
        first->post_new_connection(to, fd);
      }
    });
  }
  const std::vector<int> cpus = parse_cpus(o.cpus);
  // The owner threads start first and the client shards only once their services have
  // started (streams recovered, subscriptions on the rings): a client shard drains its rings
  // before it accepts, so no client sees the API without responders.
  std::vector<std::size_t> order;
  for (std::size_t i = client_shards; i < _shards.size(); ++i) order.push_back(i);
  for (std::size_t i = 0; i < client_shards; ++i) order.push_back(i);
  for (std::size_t i : order) {
    if (i == 0)
      for (std::size_t k = client_shards; k < _shards.size(); ++k)
        while (!_shards[k]->services_started()) std::this_thread::sleep_for(std::chrono::microseconds(200));
    dispatcher* d = _shards[i].get();
    _threads.emplace_back([d] {
      d->event_loop().run();
      d->transport().stop_listening();  // refuse new clients while the services stop
      d->stop_services();
      d->transport().shutdown();  // the port is free before the process exits
    });
    if (!cpus.empty()) {
      cpu_set_t set;
      CPU_ZERO(&set);
      CPU_SET(cpus[i % cpus.size()], &set);
      pthread_setaffinity_np(_threads.back().native_handle(), sizeof set, &set);
    }
    const std::string name = i < client_shards          ? "pg-shard-" + std::to_string(i)
                             : i < client_shards + owners ? "pg-js-" + std::to_string(i - client_shards)
                                                          : "pg-cons-" + std::to_string(i - client_shards - owners);
    pthread_setname_np(_threads.back().native_handle(), name.c_str());
  }
  _started = true;
  if (_routes) _routes->start();
  if (o.http_port != 0) {
    _monitor = std::make_unique<monitor>(*this);
    if (!_monitor->start(o.http_host.empty() ? o.host : o.http_host, o.http_port, o.http_base_path,
                         _start_error)) {
      _monitor.reset();
      return base::error{base::errc::io_error, EADDRINUSE};
    }
  }
  return {};
}

void server::shutdown() {
  if (_monitor) _monitor->stop();  // before the shards: a request in flight gives up on them
  if (!_started) return;
  _started = false;
  if (!_shards.empty()) {
    // Services' last words while shard 0 still serves: one turn runs them, the next one
    // starts after their sends were handed to the kernel (bounded waits: a stuck shard).
    for (int turn = 0; turn < 2; ++turn) {
      auto done = std::make_shared<std::promise<void>>();
      auto ran = done->get_future();
      _shards[0]->call_on_shard([done, turn](dispatcher& d) {
        if (turn == 0)
          for (const auto& svc : d.services()) announce_system_shutdown(*svc);
        done->set_value();
      });
      ran.wait_for(std::chrono::milliseconds(500));
    }
  }
  if (_routes) _routes->stop();  // no more sockets handed to the shards
  for (auto& s : _shards) s->event_loop().stop();
  for (auto& t : _threads) t.join();
  _threads.clear();
  // Every shard's services go before any shard: an owner thread's consumers unsubscribe
  // through the client shards' rings as they are destroyed.
  for (auto& s : _shards) s->release_services();
  _shards.clear();
}

}  // namespace core
