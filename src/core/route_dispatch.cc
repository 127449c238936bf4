// Routes on shard 0 (see route.h): the handshake (INFO/CONNECT both ways), interest
// propagation (RS+/RS- with queue weights), routed messages (RMSG/HMSG), gossip of new
// servers, and the cluster's client URLs for INFO connect_urls.
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "src/base/log.h"
#include "src/core/cluster_replication.h"
#include "src/core/dispatcher.h"
#include "src/core/route_manager.h"
#include "src/core/subject.h"
#include "src/proto/writer.h"

namespace core {

void dispatcher::adopt_route(int fd, const std::string& url, bool implicit) {
  auto link = std::make_unique<route_link>();
  link->solicited = !url.empty();
  link->implicit = implicit;
  link->url = url;
  link->awaiting_auth = url.empty() && !_srv.opts.cluster_user.empty();
  if (!url.empty() && _srv.opts.cluster_permissions) link->perms = &*_srv.opts.cluster_permissions;
  link->rid = _next_rid++;
  _adopting_route = std::move(link);
  adopt_route_socket(fd, url);
  if (_adopting_route) {  // the transport could not take the socket
    _adopting_route.reset();
    if (!url.empty() && _srv.routes) _srv.routes->lost(url);
  }
}

// The socket goes to the transport, which calls on_open (taking _adopting_route): under the
// cluster's TLS (handshake first) when configured; the client listener's TLS never covers it.
void dispatcher::adopt_route_socket(int fd, const std::string& url) {
  if (!_srv.opts.cluster_tls.enabled) {
    _transport->adopt_plain(fd);
    return;
  }
  std::string host;
  int port = 0;
  if (!url.empty()) parse_route_url(url, host, port);
  if (!_transport->adopt_route_tls(fd, !url.empty(), host)) {
    PG_ERROR("route TLS is not available on this transport");
    ::close(fd);
  }
}

void dispatcher::open_route(client& c) {
  std::string& out = _transport->outbuf(c.handle);
  if (c.route->solicited) {
    std::string user, pass;
    route_url_credentials(c.route->url, user, pass);
    nlohmann::ordered_json j;
    j["echo"] = true;
    j["verbose"] = false;
    j["pedantic"] = false;
    if (!user.empty()) j["user"] = user;
    if (!pass.empty()) j["pass"] = pass;
    j["tls_required"] = _srv.opts.cluster_tls.enabled;
    j["headers"] = true;
    j["name"] = _srv.server_id;
    j["cluster"] = _srv.route_info.value("cluster", "");
    j["lnoc"] = true;
    out += "CONNECT " + j.dump() + "\r\n";
  }
  out += "INFO " + _srv.route_info.dump() + " \r\n";
  PG_INFO("{}:{} - rid:{} - Route connection created", c.peer_ip, c.peer_port, c.route->rid);
}

std::size_t dispatcher::process_route(client& c, std::string_view data) {
  std::size_t off = 0;
  while (off < data.size() && !c.closing) {
    const route_parse_result r = parse_route(data.substr(off), _limits);
    if (r.status == proto::parse_status::need_more) {
      c.need = r.needed;
      return off;
    }
    if (r.status == proto::parse_status::error) {
      PG_ERROR("{}:{} - rid:{} - route protocol error", c.peer_ip, c.peer_port, c.route->rid);
      protocol_error(c, r.error);
      return data.size();
    }
    off += r.consumed;
    _stall_current = 0;
    if (!handle_route_op(c, r.op)) return data.size();
    if (_stall_current) {  // as for a client publisher: a local subscriber is nearly full
      c.stalled_on = _stall_current;
      _stall_current = 0;
      if (off < data.size()) {
        c.stalled = true;
        _stalled.push_back(&c);
        _transport->pause_reading(c.handle);
        c.need = 0;
        return off;
      }
    }
  }
  c.need = 0;
  return off;
}

bool dispatcher::handle_route_op(client& c, const route_op& op) {
  if (c.route->awaiting_auth && !(op.kind == route_op_kind::client_op && op.op.kind == proto::op_kind::connect)) {
    route_auth_failed(c);  // as nats-server: nothing but CONNECT before the route authenticated
    return false;
  }
  switch (op.kind) {
    case route_op_kind::sub:
    case route_op_kind::unsub: route_sub(c, op); return true;
    case route_op_kind::msg: route_msg(c, op); return !c.closing;
    case route_op_kind::err:
      PG_ERROR("{}:{} - rid:{} - Route Error '{}'", c.peer_ip, c.peer_port, c.route->rid, op.err);
      c.close_reason = "Parse Error";  // nats-server's reason for a route closed by the peer's -ERR
      close_client(c, {});
      return false;
    case route_op_kind::client_op: break;
  }
  using k = proto::op_kind;
  switch (op.op.kind) {
    case k::info: return handle_route_info(c, op.op.json);
    case k::connect: return handle_route_connect(c, op.op.json);
    case k::ping: _transport->outbuf(c.handle).append(proto::kPong); return true;
    case k::pong:
      c.pings_out = 0;
      if (c.route->registered && !c.route->confirmed) route_confirmed(c);
      if (c.route->ping_sent_ns && c.rtt_ns == 0) c.rtt_ns = std::max<base::nanos>(1, _loop.clk().monotonic_ns() - c.route->ping_sent_ns);
      return true;
    default: return true;
  }
}

void dispatcher::route_confirmed(client& c) {
  c.route->confirmed = true;
  if (_srv.routes) _srv.routes->peer_took(c.route->url);
  publish_cluster_urls();
}

void dispatcher::send_route_err(client& c, std::string_view text) {
  proto::append_err(_transport->outbuf(c.handle), text);
}

void dispatcher::route_auth_failed(client& c) {
  PG_ERROR("{}:{} - rid:{} - authentication error", c.peer_ip, c.peer_port, c.route->rid);
  close_client(c, proto::err_text::auth_violation);
}

bool dispatcher::handle_route_connect(client& c, std::string_view json) {
  nlohmann::json j = nlohmann::json::parse(json, nullptr, false);
  if (!j.is_object()) {
    close_client(c, {});
    return false;
  }
  if (c.route->awaiting_auth) {
    auto text = [&](const char* k) {
      auto it = j.find(k);
      return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
    };
    if (text("user") != _srv.opts.cluster_user || !password_ok(_srv.opts.cluster_pass, text("pass"))) {
      route_auth_failed(c);
      return false;
    }
    c.route->awaiting_auth = false;
    if (_srv.opts.cluster_permissions) c.route->perms = &*_srv.opts.cluster_permissions;
  }
  if (j.value("name", "") == _srv.server_id) {  // we dialed ourselves; the other end drops it
    close_client(c, {});
    return false;
  }
  const std::string ours = _srv.route_info.value("cluster", "");
  const std::string theirs = j.value("cluster", "");
  if (!_srv.opts.cluster_name.empty() && !theirs.empty() && theirs != ours && !j.value("dynamic", false)) {
    PG_ERROR("{}:{} - rid:{} - Rejecting connection, cluster name \"{}\" does not match \"{}\"", c.peer_ip,
             c.peer_port, c.route->rid, theirs, ours);
    send_route_err(c, "Cluster Name Conflict");
    close_client(c, {});
    return false;
  }
  return true;
}

bool dispatcher::handle_route_info(client& c, std::string_view json) {
  nlohmann::ordered_json j = nlohmann::ordered_json::parse(json, nullptr, false);
  if (!j.is_object() || !j.contains("server_id") || !j["server_id"].is_string()) {
    close_client(c, {});
    return false;
  }
  route_link& r = *c.route;
  const std::string id = j["server_id"].get<std::string>();
  auto urls_of = [&] {
    std::vector<std::string> v;
    if (auto it = j.find("connect_urls"); it != j.end() && it->is_array())
      for (const auto& u : *it)
        if (u.is_string()) v.push_back(u.get<std::string>());
    return v;
  };
  if (r.registered) {
    if (id == r.remote_id) {  // its client URLs changed
      r.connect_urls = urls_of();
      publish_cluster_urls();
      return true;
    }
    // Gossip: a server that joined the cluster through this one. Dial it unless we know it.
    if (id == _srv.server_id) return true;
    for (client* o : _routes)
      if (o->route->remote_id == id) return true;
    if (auto it = j.find("ip"); it != j.end() && it->is_string() && _srv.routes) {
      PG_DEBUG("{}:{} - rid:{} - gossiped route to {} at {}", c.peer_ip, c.peer_port, r.rid, id,
               it->get<std::string>());
      _srv.routes->want(it->get<std::string>(), true);
    }
    return true;
  }
  if (id == _srv.server_id) {
    PG_DEBUG("{}:{} - rid:{} - Detected route to self, ignoring", c.peer_ip, c.peer_port, r.rid);
    if (r.solicited && _srv.routes) _srv.routes->drop(r.url);
    r.solicited = false;  // not redialed
    close_client(c, {});
    return false;
  }
  r.remote_id = id;
  r.remote_name = j.value("server_name", "");
  r.remote_cluster = j.value("cluster", "");
  r.connect_urls = urls_of();
  std::string host = j.value("host", "");
  if (host.empty() || host == "0.0.0.0" || host == "::") host = c.peer_ip;
  if (host.find(':') != std::string::npos) host = "[" + host + "]";
  r.remote_route_url = "nats-route://" + host + ":" + std::to_string(j.value("port", 0)) + "/";
  r.remote_info = j;
  if (r.solicited && _srv.routes) _srv.routes->remote_is(r.url, id);
  return register_route(c);
}

bool dispatcher::register_route(client& c) {
  route_link& r = *c.route;
  if (r.remote_name == _srv.server_name) {
    PG_ERROR("{}:{} - rid:{} - Remote server has a duplicate name: \"{}\"", c.peer_ip, c.peer_port, r.rid,
             r.remote_name);
    close_client(c, {});
    return false;
  }
  for (client* o : _routes) {
    if (o->route->remote_id != r.remote_id) {
      if (!r.remote_name.empty() && o->route->remote_name == r.remote_name) {
        PG_ERROR("{}:{} - rid:{} - Remote server has a duplicate name: \"{}\"", c.peer_ip, c.peer_port, r.rid,
                 r.remote_name);
        close_client(c, {});
        return false;
      }
      continue;
    }
    // Two routes to one server (both dialed each other): both ends keep the one dialed by the
    // server with the smaller id, so they agree without talking.
    auto dialer = [&](const client& x) { return x.route->solicited ? _srv.server_id : x.route->remote_id; };
    const bool keep_new = dialer(c) != dialer(*o) && dialer(c) < dialer(*o);
    client& loser = keep_new ? *o : c;
    PG_DEBUG("{}:{} - rid:{} - Duplicate route to {}, closing", loser.peer_ip, loser.peer_port, loser.route->rid,
             r.remote_id);
    if (!keep_new) {
      close_client(c, {});
      return false;
    }
    loser.route->registered = false;
    std::erase(_routes, &loser);
    close_client(loser, {});
    break;
  }
  r.registered = true;
  r.confirmed = !r.solicited;
  _routes.push_back(&c);
  if (_srv.routes) _srv.routes->set_connected(r.remote_id, true);
  if (_srv.replication) {  // where its replication listener is (a Peregrine peer announces one)
    std::string host;
    int port = 0;
    parse_route_url(r.remote_route_url, host, port);
    if (host.size() > 2 && host.front() == '[') host = host.substr(1, host.size() - 2);
    _srv.replication->route_peer(r.remote_name, host, r.remote_info.value("pg_repl_port", 0), true);
  }
  PG_INFO("{}:{} - rid:{} - Route to server {} ({}) registered", c.peer_ip, c.peer_port, r.rid, r.remote_name,
          r.remote_id);
  std::string& out = _transport->outbuf(c.handle);
  out += "PING\r\n";
  r.ping_sent_ns = _loop.clk().monotonic_ns();
  if (_interest_stale) rebuild_interest();
  for (const auto& [key, n] : _interest) send_interest(c, key, n);
  if (!r.solicited) {  // tell the servers we know about the new one, so they dial it
    nlohmann::ordered_json g = r.remote_info;
    g["ip"] = r.remote_route_url;
    const std::string line = "INFO " + g.dump() + " \r\n";
    for (client* o : _routes)
      if (o != &c) _transport->outbuf(o->handle).append(line);
  }
  publish_cluster_urls();
  return true;
}

void dispatcher::route_closed(client& c) {
  route_link& r = *c.route;
  if (r.registered) {
    r.registered = false;
    std::erase(_routes, &c);
    if (_srv.routes) _srv.routes->set_connected(r.remote_id, false);
    if (_srv.replication) _srv.replication->route_peer(r.remote_name, {}, 0, false);
    PG_INFO("{}:{} - rid:{} - Router connection closed", c.peer_ip, c.peer_port, r.rid);
    publish_cluster_urls();
  } else if (!c.close_reason.empty()) {
    PG_INFO("{}:{} - rid:{} - Router connection closed: {}", c.peer_ip, c.peer_port, r.rid, c.close_reason);
  }
  if (r.solicited && _srv.routes) _srv.routes->lost(r.url);
}

void dispatcher::route_sub(client& c, const route_op& op) {
  std::uint32_t account = 0;
  if (!route_account_id(op.account, account)) {  // e.g. nats-server's $SYS: not served here
    PG_DEBUG("{}:{} - rid:{} - Unknown account \"{}\" for subject \"{}\"", c.peer_ip, c.peer_port, c.route->rid,
             op.account, op.subject);
    return;
  }
  if (!valid_subject(op.subject) || (!op.queue.empty() && !valid_queue_name(op.queue))) return;
  const permissions* perms = c.route->perms;
  if (op.kind == route_op_kind::sub && perms && perms->subscribe && !subscribe_allowed(*perms, op.subject, {})) {
    PG_DEBUG("{}:{} - rid:{} - Can not export \"{}\", ignoring remote subscription request", c.peer_ip, c.peer_port,
             c.route->rid, op.subject);
    return;
  }
  const std::string key = route_interest_key(op.account, op.subject, op.queue);
  if (op.kind == route_op_kind::unsub) {
    remove_sub(c, key, true);
    return;
  }
  const std::uint32_t weight = std::uint32_t(std::max<std::int32_t>(1, op.weight));
  if (auto it = c.subs.find(key); it != c.subs.end()) {  // a queue group's new weight
    it->second->weight = weight;
    broadcast_sub(shard_msg::kind::sub_add, c, *it->second);
    return;
  }
  auto s = std::make_unique<subscription>();
  s->subject = std::string(op.subject);
  s->queue = std::string(op.queue);
  s->sid = key;
  s->shard = _index;
  s->conn_id = c.id;
  s->conn = &c;
  s->account = account;
  s->via_route = true;
  s->weight = weight;
  if (!subs_for(account).insert(s.get()).ok()) return;
  broadcast_sub(shard_msg::kind::sub_add, c, *s);
  c.subs.emplace(key, std::move(s));
}

void dispatcher::route_msg(client& c, const route_op& op) {
  std::uint32_t account = 0;
  if (!route_account_id(op.account, account)) {
    PG_DEBUG("{}:{} - rid:{} - Unknown account \"{}\" for routed message on subject: \"{}\"", c.peer_ip, c.peer_port,
             c.route->rid, op.account, op.subject);
    return;
  }
  ++c.in_msgs;
  c.in_bytes += op.headers.size() + op.payload.size();
  ++_counters.in_msgs;
  _counters.in_bytes += op.headers.size() + op.payload.size();
  if (_live->auth->accounts.size() > 1) {
    route_forwards(c, op, account);
    return;
  }
  _from_route = &op;  // consumed by route(): local receivers only, no forwarding
  const auto [reply, shown] = split_routed_delivery(op.reply);
  route(account, &c, op.subject, reply, op.headers, op.payload, shown, false);
}

void dispatcher::interest_change(const subscription& s, int delta) {
  if (!counts_as_interest(s)) return;
  _keys_scratch.clear();
  interest_keys(s, _keys_scratch);
  for (const auto& key : _keys_scratch) bump_interest(key, delta);
}

void dispatcher::bump_interest(const std::string& key, int delta) {
  auto it = _interest.try_emplace(key, 0).first;
  const int before = it->second;
  const int after = before + delta;
  if (after <= 0) {
    _interest.erase(it);
  } else {
    it->second = after;
  }
  // Plain interest is announced once per subject; a queue group's weight on every change.
  const bool queue = is_queue_interest_key(key);
  if (!queue && (before > 0) == (after > 0)) return;
  for (client* r : _routes) send_interest(*r, key, after);
}

void dispatcher::send_interest(client& r, std::string_view key, int count) {
  if (r.closing) return;
  if (const permissions* perms = r.route->perms; perms && perms->publish) {  // cluster.permissions import
    const std::string_view rest = key.substr(key.find(' ') + 1);
    if (!publish_allowed(*perms, rest.substr(0, rest.find(' ')))) return;
  }
  std::string& out = _transport->outbuf(r.handle);
  out += count > 0 ? "RS+ " : "RS- ";
  out += key;  // "account subject[ queue]"
  if (count > 0 && is_queue_interest_key(key)) out += " " + std::to_string(count);
  out += "\r\n";
}

void dispatcher::batch_for_route(client& c, const subscription& s) {
  route_batch* b = nullptr;
  for (auto& e : _route_batch)
    if (e.c == &c) b = &e;
  if (!b) b = &_route_batch.emplace_back(route_batch{&c, false, {}, s.account});
  if (s.queue.empty()) {
    b->plain = true;
  } else {
    if (!b->queues.empty()) b->queues += ' ';
    b->queues += s.queue;
  }
}

void dispatcher::flush_route_batch(std::string_view subject, std::string_view reply, std::string_view headers,
                                   std::string_view payload, std::string_view shown) {
  // nats-server's form for a JetStream delivery shown under another subject:
  // "<ack reply>@<shown>" (split_routed_delivery takes it apart on the other side).
  const bool with_shown = !shown.empty() && shown != subject && reply.starts_with("$JS.ACK.");
  auto put_reply = [&](std::string& out) {
    out += reply;
    if (with_shown) {
      out += '@';
      out += shown;
    }
  };
  for (const auto& b : _route_batch) {
    client& c = *b.c;
    if (c.closing) continue;
    std::string& out = _transport->outbuf(c.handle);
    out += headers.empty() ? "RMSG " : "HMSG ";
    out += b.account == kGlobalAccount ? std::string_view("$G") : std::string_view(account_ref(b.account));
    out += ' ';
    out += subject;
    if (!b.queues.empty()) {
      if (reply.empty()) {
        out += " | ";
      } else {
        out += " + ";
        put_reply(out);
        out += ' ';
      }
      out += b.queues;
    } else if (!reply.empty()) {
      out += ' ';
      put_reply(out);
    }
    if (!headers.empty()) out += " " + std::to_string(headers.size());
    out += " " + std::to_string(headers.size() + payload.size()) + "\r\n";
    out += headers;
    out += payload;
    out += "\r\n";
    ++c.out_msgs;
    c.out_bytes += headers.size() + payload.size();
    ++_counters.out_msgs;
    _counters.out_bytes += headers.size() + payload.size();
    if (_transport->pending_bytes(c.handle) > std::size_t(_live->opts.max_pending))
      cut_slow_consumer(c, "MaxPending exceeded on a route", "Slow Consumer (Pending Bytes)");
  }
  _route_batch.clear();
}

void dispatcher::publish_cluster_urls() {
  std::vector<std::string> urls;
  if (!_srv.opts.cluster_no_advertise) {
    auto add = [&](const std::string& u) {
      if (std::find(urls.begin(), urls.end(), u) == urls.end()) urls.push_back(u);
    };
    for (const auto& u : _srv.own_client_urls) add(u);
    for (client* r : _routes)
      if (r->route->confirmed)
        for (const auto& u : r->route->connect_urls) add(u);
  }
  _srv.set_cluster_urls(std::move(urls));
  for (dispatcher* d : _peers)
    if (d != this) d->_loop.wake();
}

std::size_t dispatcher::refresh_cluster_info() {
  _cluster_gen = _srv.cluster_gen.load(std::memory_order_acquire);
  const std::vector<std::string> urls = _srv.cluster_urls();
  if (_cluster_info.contains("connect_urls") && _cluster_info["connect_urls"] == nlohmann::ordered_json(urls))
    return 0;  // the same servers (a duplicate route replaced): no INFO to send
  nlohmann::ordered_json j;
  j["cluster"] = _srv.route_info.value("cluster", "");
  if (!urls.empty()) j["connect_urls"] = urls;
  _cluster_info = std::move(j);
  std::size_t sent = 0;
  for (auto& [h, cp] : _clients) {  // async INFO to clients that take it (CONNECT protocol 1)
    client& c = *cp;
    if (c.route || c.closing || !c.connected || c.protocol < 1) continue;
    _transport->outbuf(c.handle).append(client_info(c));
    ++sent;
  }
  return sent;
}

std::string dispatcher::client_info(const client& c) const {
  return server_shared::info_line(_live->info, c.cid, c.peer_ip, c.nonce,
                                 _cluster_info.is_null() ? nullptr : &_cluster_info);
}

}  // namespace core
