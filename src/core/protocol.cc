// Client protocol handling and publish routing for one shard (see dispatcher.h).
#include <nlohmann/json.hpp>

#include "src/base/log.h"
#include "src/core/dispatcher.h"
#include "src/core/subject.h"
#include "src/proto/writer.h"

namespace core {
namespace {
constexpr std::size_t kEarlyFlushBytes = 256 * 1024;
// publish_owned: a payload at least this big goes to its one receiver's transport whole
// (smaller ones cost less to copy than a buffer of their own).
constexpr std::size_t kTakeWholeBytes = 64 * 1024;
}  // namespace

std::size_t dispatcher::process(client& c, std::string_view data) {
  if (c.route) return process_route(c, data);
  std::size_t off = 0;
  while (off < data.size() && !c.closing) {
    const proto::parse_result r = proto::parse_client(data.substr(off), _limits);
    if (r.status == proto::parse_status::need_more) {
      c.need = r.needed;
      return off;
    }
    if (r.status == proto::parse_status::error) {
      protocol_error(c, r.error);
      return data.size();
    }
    off += r.consumed;
    _stall_current = 0;  // only this op's deliveries may stall this publisher
    if (!handle_op(c, r.op)) return data.size();
    if (_stall_current) {  // a subscriber is nearly full: pause this publisher until it drains
      c.stalled_on = _stall_current;
      _stall_current = 0;
      if (off < data.size()) {
        c.stalled = true;
        _stalled.push_back(&c);
        _transport->pause_reading(c.handle);  // let TCP flow control hold the publisher
        c.need = 0;
        return off;
      }
    }
  }
  c.need = 0;
  return off;
}

void dispatcher::protocol_error(client& c, proto::parse_error e) {
  switch (e) {
    case proto::parse_error::unknown_op: close_client(c, proto::err_text::unknown_op); break;
    case proto::parse_error::control_line_too_long: close_client(c, proto::err_text::max_control_line); break;
    case proto::parse_error::max_payload: close_client(c, proto::err_text::max_payload); break;
    case proto::parse_error::bad_args:
    case proto::parse_error::none: close_client(c, {}); break;
  }
}

void dispatcher::send_err(client& c, std::string_view text) {
  proto::append_err(_transport->outbuf(c.handle), text);
}

void dispatcher::send_ok(client& c) {
  if (c.verbose) _transport->outbuf(c.handle).append(proto::kOk);
}

bool dispatcher::handle_op(client& c, const proto::client_op& op) {
  using k = proto::op_kind;
  if (!c.connected && _live->auth_required && op.kind != k::connect) {
    close_client(c, proto::err_text::auth_violation);
    return false;
  }
  switch (op.kind) {
    case k::connect: return handle_connect(c, op.json);
    case k::pub:
    case k::hpub:
      if (op.kind == k::hpub && !c.headers && c.connected) {
        close_client(c, {});  // HPUB without negotiated headers: nats-server just closes
        return false;
      }
      handle_pub(c, op);
      return !c.closing;
    case k::sub: handle_sub(c, op); return true;
    case k::unsub: handle_unsub(c, op); return true;
    case k::ping: handle_ping(c); return true;
    case k::pong: c.pings_out = 0; return true;
    case k::info:
    case k::ok: return true;
  }
  return true;
}

bool dispatcher::handle_connect(client& c, std::string_view json) {
  nlohmann::json j = nlohmann::json::parse(json, nullptr, false);
  if (j.is_discarded() || !j.is_object()) {
    close_client(c, {});  // malformed CONNECT: closed without -ERR, like nats-server
    return false;
  }
  auto get_bool = [&](const char* key, bool& out) {
    auto it = j.find(key);
    if (it != j.end() && it->is_boolean()) out = it->get<bool>();
  };
  auto get_str = [&](const char* key) -> std::string {
    auto it = j.find(key);
    return (it != j.end() && it->is_string()) ? it->get<std::string>() : std::string();
  };
  get_bool("verbose", c.verbose);
  get_bool("pedantic", c.pedantic);
  get_bool("echo", c.echo);
  get_bool("headers", c.headers);
  get_bool("no_responders", c.no_responders);
  if (auto it = j.find("protocol"); it != j.end() && it->is_number_integer()) c.protocol = it->get<int>();
  c.name = get_str("name");
  c.lang = get_str("lang");
  c.version = get_str("version");
  if (c.rtt_ns == 0) c.rtt_ns = std::max<base::nanos>(1, c.last_in_ns - c.created_ns);
  c.auth_user = get_str("user");
  c.auth_pass = get_str("pass");
  c.auth_token = get_str("auth_token");
  c.auth_nkey = get_str("nkey");
  c.auth_sig = get_str("sig");
  if (_live->auth_required) {
    const auth_outcome a = authenticate_client(c);
    if (!a.ok) {
      PG_WARN("{}:{} - cid:{} - authentication error", c.peer_ip, c.peer_port, c.id);
      sys_auth_error_event(c);
      close_client(c, proto::err_text::auth_violation);
      return false;
    }
    c.auth = a.user;
    c.perms = a.user ? a.user->perms.get() : nullptr;
    c.account = a.user ? a.user->account : kGlobalAccount;
  }
  if (c.protocol < 0 || c.protocol > 1) {
    close_client(c, proto::err_text::bad_protocol);
    return false;
  }
  if (c.no_responders && !c.headers) {
    close_client(c, proto::err_text::no_responders_headers);
    return false;
  }
  c.connected = true;
  send_ok(c);
  sys_client_event(c, false);
  if (c.account != kGlobalAccount) _srv.sys_wake.connections_changed();  // it left $G for its account
  return true;
}

void dispatcher::handle_ping(client& c) {
  if (c.deferred_pongs == 0 && pong_ready_now(c)) {
    _transport->outbuf(c.handle).append(proto::kPong);
    return;
  }
  const std::size_t n = _inbox.size();
  pong_gate g{&c, c.sub_seq, std::vector<std::uint64_t>(2 * n, 0)};
  for (std::size_t i = 0; i < n; ++i) {
    if (_inbox[i]) g.marks[i] = _inbox[i]->produced();
    g.marks[n + i] = _posted[i];
  }
  ++c.deferred_pongs;
  _pong_gates.push_back(std::move(g));
}

void dispatcher::handle_sub(client& c, const proto::client_op& op) {
  if (c.perms && !subscribe_allowed(*c.perms, op.subject, op.queue)) {
    PG_ERROR("{}:{} - cid:{} - Subscription Violation - User \"{}\", Subject \"{}\", SID {}", c.peer_ip, c.peer_port,
             c.cid, c.auth ? c.auth->name : "N/A", op.subject, op.sid);
    send_err(c, subscribe_violation(op.subject, op.queue));
    return;
  }
  if (!valid_subject(op.subject) || (!op.queue.empty() && !valid_queue_name(op.queue))) {
    send_err(c, proto::err_text::invalid_subject);
    return;
  }
  const std::string sid(op.sid);
  if (c.subs.count(sid)) {  // a reused sid is ignored; the first subscription stays
    send_ok(c);
    return;
  }
  auto s = std::make_unique<subscription>();
  s->subject = std::string(op.subject);
  s->queue = std::string(op.queue);
  s->sid = sid;
  s->shard = _index;
  s->conn_id = c.id;
  s->conn = &c;
  s->account = c.account;
  if (!subs_for(s->account).insert(s.get()).ok()) {
    send_err(c, proto::err_text::invalid_subject);
    return;
  }
  broadcast_sub(shard_msg::kind::sub_add, c, *s);
  interest_change(*s, +1);
  c.subs.emplace(sid, std::move(s));
  ++_sub_stats.inserts;
  send_ok(c);
}

void dispatcher::handle_unsub(client& c, const proto::client_op& op) {
  auto it = c.subs.find(std::string(op.sid));
  if (it != c.subs.end()) {
    subscription& s = *it->second;
    if (op.max_msgs > 0 && s.delivered < std::uint64_t(op.max_msgs)) {
      s.max_msgs = std::uint64_t(op.max_msgs);
    } else {
      remove_sub(c, it->first, true);
    }
  }
  send_ok(c);
}

void dispatcher::broadcast_sub(shard_msg::kind k, client& c, const subscription& s) {
  if (_peers.size() < 2) return;
  ++_bcast_seq;
  c.sub_seq = _bcast_seq;
  for (std::uint32_t to = 0; to < _peers.size(); ++to) {
    if (to == _index) continue;
    shard_msg m;
    m.k = k;
    m.seq = _bcast_seq;
    m.conn_id = c.id;
    m.sid = s.sid;
    if (k == shard_msg::kind::sub_add) {
      m.subject = s.subject;
      m.queue = s.queue;
      m.account = s.account;
      m.via_route = s.via_route;
      m.weight = s.weight;
      m.announce = s.announce;
    }
    post(to, std::move(m));
  }
}

void dispatcher::remove_sub(client& c, const std::string& sid, bool broadcast) {
  auto it = c.subs.find(sid);
  if (it == c.subs.end()) return;
  subs_for(it->second->account).remove(it->second.get());
  interest_change(*it->second, -1);
  ++_sub_stats.removes;
  if (broadcast) broadcast_sub(shard_msg::kind::sub_del, c, *it->second);
  c.subs.erase(it);
}

void dispatcher::handle_pub(client& c, const proto::client_op& op) {
  if (c.pedantic && !valid_literal_subject(op.subject)) send_err(c, proto::err_text::invalid_publish_subject);
  _srv.in_msgs.fetch_add(1, std::memory_order_relaxed);
  ++c.in_msgs;
  c.in_bytes += op.headers.size() + op.payload.size();
  ++_counters.in_msgs;
  _counters.in_bytes += op.headers.size() + op.payload.size();
  // $PG. is the cluster's own namespace (JetStream requests between servers, which act on
  // what they say): only servers publish there, never a client of any account.
  const bool reserved = op.subject.starts_with("$PG.");
  if (reserved || (c.perms && c.perms->publish && !publish_allowed(*c.perms, op.subject) &&
                   !(c.perms->responses &&
                     c.replies.use(op.subject, _loop.clk().monotonic_ns() / base::kMilli, *c.perms->responses)))) {
    PG_ERROR("{}:{} - cid:{} - Publish Violation - User \"{}\", Subject \"{}\"", c.peer_ip, c.peer_port, c.cid,
             c.auth ? c.auth->name : "N/A", op.subject);
    send_err(c, publish_violation(op.subject));  // no +OK; the connection stays open
    return;
  }
  send_ok(c);
  if (!valid_subject(op.subject)) return;  // e.g. "foo..bar": silently not delivered
  if (c.account == kGlobalAccount && _live->auth->global_only) {
    route(kGlobalAccount, &c, op.subject, op.reply, op.headers, op.payload);
  } else {
    publish_in_account(c, op.subject, op.reply, op.headers, op.payload);
  }
}

bool dispatcher::deliver_local(subscription& s, std::string_view subject, std::string_view reply,
                               std::string_view headers, std::string_view payload) {
  if (s.handler) {  // server-internal subscriber (JetStream)
    s.handler->on_msg(inbound_msg{subject, reply, headers, payload, _publishing_client, _publisher_no_responders});
    return true;
  }
  client& c = *static_cast<client*>(s.conn);
  if (c.closing) return false;
  if (c.route) {  // one RMSG per route and message, after the match (flush_route_batch)
    batch_for_route(c, s);
    return true;
  }
  if (s.max_msgs && s.delivered >= s.max_msgs) return false;
  if (c.perms) {
    // A wildcard subscription may cover denied subjects: those messages are not delivered.
    if (c.perms->subscribe && s.subject.find_first_of("*>") != std::string::npos && delivery_denied(*c.perms, subject))
      return false;
    if (c.perms->responses && !reply.empty() && !publish_allowed(*c.perms, reply))
      c.replies.grant(reply, _loop.clk().monotonic_ns() / base::kMilli, *c.perms->responses);
  }
  std::string& out = _transport->outbuf(c.handle);
  if (!headers.empty() && c.headers) {
    proto::append_hmsg(out, subject, s.sid, reply, headers, payload);
  } else if (_take_payload && headers.empty()) {
    proto::append_msg_line(out, subject, s.sid, reply, payload.size());
    _transport->append_owned(c.handle, std::move(*std::exchange(_take_payload, nullptr)));
    _transport->outbuf(c.handle).append("\r\n");
  } else {
    proto::append_msg(out, subject, s.sid, reply, payload);
  }
  ++s.delivered;
  ++c.out_msgs;
  c.out_bytes += headers.size() + payload.size();
  ++_counters.out_msgs;
  _counters.out_bytes += headers.size() + payload.size();
  if (s.max_msgs && s.delivered >= s.max_msgs) _expired.emplace_back(&c, s.sid);
  const std::size_t limit = std::size_t(_live->opts.max_pending);
  std::size_t pending = _transport->pending_bytes(c.handle);
  // Push big backlogs to the kernel early: a small outbound buffer is never reallocated and
  // copied, and the subscriber starts reading sooner.
  if (pending > std::min<std::size_t>(limit / 2, kEarlyFlushBytes)) {
    _transport->flush_now(c.handle);
    pending = _transport->pending_bytes(c.handle);
  }
  if (pending > limit) {
    cut_slow_consumer(c, fmt::format("MaxPending of {} Exceeded", limit), "Slow Consumer (Pending Bytes)");
  } else if (pending > limit / 4 * 3) {
    if (c.pressure_since_ns == 0) c.pressure_since_ns = _loop.clk().monotonic_ns();
    if (holds_publishers(c, _loop.clk().monotonic_ns())) _stall_current = c.id;
  }
  return true;
}

bool dispatcher::route(std::uint32_t account, client* from, std::string_view subject, std::string_view reply,
                       std::string_view headers, std::string_view payload, std::string_view shown, bool notify) {
  const match_result& r = subs_for(account).match(subject);
  // Routes carry the matched subject (a JetStream delivery's inbox), so the remote server
  // matches the same subscription; local receivers see `shown`.
  const std::string_view matched = subject;
  if (!shown.empty()) subject = shown;
  const std::uint64_t fanout = r.plain.size() + r.queues.size();
  // Taken now (a handler's own publishes below route again with payloads of their own).
  std::string* const owned = std::exchange(_owned_payload, nullptr);
  ++_sub_stats.matches;
  _sub_stats.fanout_sum += fanout;
  if (fanout > _sub_stats.max_fanout) _sub_stats.max_fanout = fanout;
  const bool multi = _peers.size() > 1;
  // Routed in (RMSG): local receivers only, no forwarding. Cleared here: what internal
  // handlers publish in reaction is routed as this server's own.
  const route_op* routed = _from_route;
  _from_route = nullptr;
  const bool from_route = routed != nullptr;
  // An import's copy (or a routed message) stays on this server: the other servers apply
  // the import themselves to the message in its own account (nats-server's shadow subs).
  const bool local_only = from_route || _local_only;
  _local_only = false;
  bool any = false;
  // Internal handlers run after the match result is no longer used: they may subscribe or
  // publish, which changes the sublist.
  std::vector<std::string> internal_sids;
  auto eligible = [&](const subscription* s) {
    return !(from && !from->echo && s->conn_id == from->id) && !(local_only && s->via_route);
  };
  auto take = [&](subscription* s) {
    if (!eligible(s)) return;
    any = true;
    if (s->handler) {
      internal_sids.push_back(s->sid);
    } else if (s->shard == _index) {
      if (owned && fanout == 1 && payload.size() >= kTakeWholeBytes) _take_payload = owned;
      deliver_local(*s, subject, reply, headers, payload);
      _take_payload = nullptr;
    } else {
      _remote_targets[s->shard].push_back({s->conn_id, s->sid});
    }
  };
  for (subscription* s : r.plain) take(s);
  for (const auto& group : r.queues) {
    if (from_route) {  // only the groups the sending server chose this server for
      bool listed = false;
      for_each_queue(routed->queues, [&](std::string_view q) { listed = listed || q == group.front()->queue; });
      if (!listed) continue;
    }
    if (!_srv.routes) {  // standalone: the first eligible member from a rotating start, O(1) usually
      const std::size_t n = group.size();
      const std::size_t start = std::size_t(_rr++ % n);
      for (std::size_t i = 0; i < n; ++i) {
        subscription* s = group[(start + i) % n];
        if (!eligible(s)) continue;
        take(s);
        break;
      }
      continue;
    }
    // One member per group, rotating; a route's member counts as many as it has behind it.
    std::uint64_t total = 0;
    for (const subscription* s : group)
      if (eligible(s)) total += s->weight;
    if (total == 0) continue;
    std::uint64_t pick = _rr++ % total;
    for (subscription* s : group) {
      if (!eligible(s)) continue;
      if (pick < s->weight) {
        take(s);
        break;
      }
      pick -= s->weight;
    }
  }
  if (multi) {
    std::shared_ptr<shared_msg> shared;
    for (std::uint32_t to = 0; to < _remote_targets.size(); ++to) {
      auto& targets = _remote_targets[to];
      if (targets.empty()) continue;
      if (!shared)
        shared = std::make_shared<shared_msg>(shared_msg{std::string(subject), std::string(reply),
                                                         std::string(headers), std::string(payload),
                                                         from && from->no_responders && from->headers,
                                                         shown.empty() ? std::string() : std::string(matched)});
      shard_msg m;
      m.k = shard_msg::kind::deliver;
      m.msg = shared;
      m.targets = std::move(targets);
      targets.clear();
      post(to, std::move(m));
      if (!_overflow[to].empty() && from && !_stall_current) _stall_current = kRemoteStall;
    }
  }
  if (!_route_batch.empty()) flush_route_batch(matched, reply, headers, payload, subject);
  for (auto& [c, sid] : _expired) remove_sub(*c, sid, true);
  _expired.clear();
  if (!internal_sids.empty()) {
    const std::uint64_t saved = _publishing_client;
    const bool saved_nr = _publisher_no_responders;
    _publishing_client = from ? from->id : 0;
    _publisher_no_responders = from && from->no_responders && from->headers;
    for (const auto& sid : internal_sids) {
      auto it = _internal.subs.find(sid);
      if (it != _internal.subs.end())
        deliver_local(*it->second, subject, reply, headers, payload);
    }
    _publishing_client = saved;
    _publisher_no_responders = saved_nr;
  }
  if (notify && !any && from && !reply.empty() && from->no_responders && from->headers) send_no_responders(*from, reply);
  return any;
}

void dispatcher::cut_slow_consumer(client& c, std::string_view why, std::string_view reason) {
  _srv.slow_consumers.fetch_add(1, std::memory_order_relaxed);
  ++_slow_cut;
  PG_INFO("{}:{} - cid:{} - Slow Consumer Detected: {}", c.peer_ip, c.peer_port, c.cid, why);
  c.closing = true;
  c.close_reason = reason;
  _transport->close(c.handle, false);
}

std::size_t dispatcher::resume_stalled() {
  if (_stalled.empty()) return 0;
  std::vector<client*> list;
  list.swap(_stalled);
  const std::size_t mark = std::size_t(_live->opts.max_pending) / 2;
  std::size_t resumed = 0;
  for (client* c : list) {
    if (c->closing || !c->stalled) continue;
    bool still_full = false;
    if (c->stalled_on == kRemoteStall) {
      for (const auto& q : _overflow) still_full = still_full || !q.empty();
    } else {
      auto sub = _by_id.find(c->stalled_on);
      still_full = sub != _by_id.end() && !sub->second->closing &&
                   _transport->pending_bytes(sub->second->handle) > mark &&
                   holds_publishers(*sub->second, _loop.clk().monotonic_ns());
    }
    if (still_full) {
      _stalled.push_back(c);  // still full: stay paused (the deadline check cuts it if stuck)
      continue;
    }
    ++resumed;
    c->stalled = false;
    parse_inbuf(*c);
    if (!c->stalled && !c->closing) _transport->resume_reading(c->handle);
  }
  return resumed;
}

void dispatcher::send_no_responders(client& c, std::string_view reply) {
  for (auto& [sid, s] : c.subs) {
    if (subject_matches(s->subject, reply)) {
      proto::append_hmsg(_transport->outbuf(c.handle), reply, sid, {}, "NATS/1.0 503\r\n\r\n", {});
      return;
    }
  }
}

}  // namespace core
