// The dispatcher's operational side: live config swaps after a reload, lame-duck eviction,
// and the snapshots the HTTP monitor asks for (all on the shard's own thread).
#include <algorithm>

#include "src/base/log.h"
#include "src/core/dispatcher.h"
#include "src/core/reload.h"
#include "src/proto/writer.h"

namespace core {

void dispatcher::refresh_live() {
  _live_gen = _srv.live_gen.load(std::memory_order_acquire);
  std::shared_ptr<const live_config> next = _srv.live();
  if (!next) {  // not published yet (unit tests that build a dispatcher directly)
    auto l = std::make_shared<live_config>();
    l->opts = _srv.opts;
    l->info = _srv.info;
    l->auth = build_auth_table(_srv.opts);
    l->auth_required = l->auth->required;
    next = std::move(l);
  }
  const bool auth_changed = _live && auth_options_changed(_live->opts, next->opts);
  _live = std::move(next);
  _interest_stale = true;  // accounts or imports may have changed: shard 0 recomputes the cluster's view
  _limits.max_control_line = std::size_t(_live->opts.max_control_line);
  _limits.max_payload = _live->opts.max_payload;
  if (_srv.conn_excess.load() > 0) {  // shards race for the budget: exactly that many close
    std::vector<client*> over;
    for (auto& [h, c] : _clients) {
      if (c->closing || c->route) continue;  // routes are not client connections
      if (_srv.conn_excess.fetch_sub(1) <= 0) {
        _srv.conn_excess.fetch_add(1);
        break;
      }
      over.push_back(c.get());
    }
    for (client* c : over) close_client(*c, proto::err_text::max_connections);
  }
  if (auth_changed) reauthorize_clients();
}

void dispatcher::call_on_shard(std::function<void(dispatcher&)> fn) {
  {
    std::lock_guard lk(_calls_mu);
    _calls.push_back(std::move(fn));
    _calls_pending.store(true, std::memory_order_release);
  }
  _loop.wake();
}

std::size_t dispatcher::run_calls() {
  std::vector<std::function<void(dispatcher&)>> calls;
  {
    std::lock_guard lk(_calls_mu);
    calls.swap(_calls);
    _calls_pending.store(false, std::memory_order_relaxed);
  }
  _calls_run += calls.size();
  for (auto& fn : calls) fn(*this);
  return calls.size();
}

// Lame duck: stop accepting, tell every client (INFO "ldm"), wait the grace period, then
// close the connections spread evenly over the rest of lame_duck_duration.
std::size_t dispatcher::lame_duck(base::nanos now) {
  const base::nanos since = _srv.lame_duck_since_ns.load(std::memory_order_relaxed);
  if (!_ldm) {
    _ldm = true;
    if (_index == 0) _transport->stop_listening();
    nlohmann::ordered_json info = _live->info;
    info["ldm"] = true;
    for (auto& [h, c] : _clients) {
      if (c->closing || !c->connected || c->route) continue;
      _transport->outbuf(h).append(
          server_shared::info_line(info, c->cid, c->peer_ip, {}, _cluster_info.is_null() ? nullptr : &_cluster_info));
    }
    _ldm_initial = _clients.size();
  }
  const std::size_t due = lame_duck_due(_ldm_initial, now - since, _live->opts.lame_duck_grace_period_ms * base::kMilli,
                                        _live->opts.lame_duck_duration_ms * base::kMilli);
  const bool all = due >= _ldm_initial;  // the end: whatever is left, late arrivals too
  std::vector<client*> victims;
  for (auto& [h, c] : _clients) {
    if (!all && _ldm_closed + victims.size() >= due) break;
    if (!c->closing && (all || !c->route)) victims.push_back(c.get());  // routes last: clients move over them
  }
  for (client* c : victims) {
    c->close_reason = "Server Shutdown";
    close_client(*c, {});
  }
  _ldm_closed += victims.size();
  return victims.size();
}

conn_snapshot dispatcher::snap(const client& c, bool with_subs) const {
  conn_snapshot s;
  s.cid = c.cid;
  s.ip = c.peer_ip;
  s.port = c.peer_port;
  s.start_ns = c.start_wall_ns;
  s.last_ns = c.start_wall_ns + (c.last_in_ns - c.created_ns);
  s.rtt_ns = c.rtt_ns;
  s.in_msgs = c.in_msgs;
  s.out_msgs = c.out_msgs;
  s.in_bytes = c.in_bytes;
  s.out_bytes = c.out_bytes;
  s.subscriptions = c.subs.size();
  s.name = c.name;
  s.lang = c.lang;
  s.version = c.version;
  s.user = c.auth_user;
  _transport->tls_info(c.handle, s.tls_version, s.tls_cipher);
  if (c.account != kGlobalAccount) s.account = account_name(c.account);
  if (with_subs) {
    for (const auto& [sid, sub] : c.subs)
      s.subs.push_back({sub->subject, sub->queue, sid, sub->delivered, c.cid, account_name(sub->account)});
    // In sid order (numeric sids as numbers): the order clients subscribed in, usually.
    std::sort(s.subs.begin(), s.subs.end(), [](const sub_snapshot& a, const sub_snapshot& b) {
      return a.sid.size() != b.sid.size() ? a.sid.size() < b.sid.size() : a.sid < b.sid;
    });
  }
  return s;
}

const std::string& dispatcher::account_ref(std::uint32_t account) const {
  static const std::string global = "$G";
  const auto& accounts = _live->auth->accounts;
  return account < accounts.size() ? accounts[account].name : global;
}

std::string dispatcher::account_name(std::uint32_t account) const {
  const auto& accounts = _live->auth->accounts;
  return account < accounts.size() ? accounts[account].name : "$G";
}

shard_snapshot dispatcher::snapshot(const snapshot_request& q) const {
  shard_snapshot out;
  out.counters = _counters;
  out.sublist = _sub_stats;
  out.sublist.cache = _subs.cache_size();
  out.subscriptions = _internal.subs.size();
  for (const auto& [h, c] : _clients)
    if (!c->route) out.subscriptions += c->subs.size();
  if (q.conns) {
    for (const auto& [h, c] : _clients) {
      if (c->closing || c->route) continue;  // routes are on /routez, not /connz
      out.open.push_back(snap(*c, q.conn_subs));
      out.open.back().pending_bytes = _transport->pending_bytes(h);
    }
  }
  if (q.closed) out.closed.assign(_closed.begin(), _closed.end());
  if (q.all_subs) {
    for (const auto& [sid, s] : _internal.subs) out.subs.push_back({s->subject, s->queue, sid, s->delivered, 0});
    for (const auto& [h, c] : _clients)
      if (!c->route)
        for (const auto& [sid, s] : c->subs)
          out.subs.push_back({s->subject, s->queue, sid, s->delivered, c->cid, account_name(s->account)});
  }
  out.routes = _routes.size();
  if (q.routes) {
    for (const client* c : _routes) {
      route_snapshot r;
      r.rid = c->route->rid;
      r.remote_id = c->route->remote_id;
      r.did_solicit = c->route->solicited;
      r.is_configured = c->route->solicited && !c->route->implicit;
      r.ip = c->peer_ip;
      r.port = c->peer_port;
      r.start_ns = c->start_wall_ns;
      r.last_ns = c->start_wall_ns + (c->last_in_ns - c->created_ns);
      r.rtt_ns = c->rtt_ns;
      r.pending_bytes = _transport->pending_bytes(c->handle);
      r.in_msgs = c->in_msgs;
      r.out_msgs = c->out_msgs;
      r.in_bytes = c->in_bytes;
      r.out_bytes = c->out_bytes;
      for (const auto& [key, s] : c->subs) r.subs.push_back(s->subject);  // nats-server lists subjects
      out.route_list.push_back(std::move(r));
    }
  }
  out.has_jetstream = !_services.empty();
  out.shard = _index;
  out.clients = _clients.size();
  out.loop_blocks = _loop.blocks();
  out.calls = _calls_run;
  for (const auto& r : _inbox)
    if (r) out.ring_depth += r->size_approx();
  for (const auto& b : _backlog) out.ring_depth += b.size();  // taken off the rings, not applied yet
  for (const auto& q : _overflow) out.overflow_depth += q.size();
  out.slow_consumers = _slow_cut;
  const net::transport_counters tc = _transport->counters();
  out.uring_submissions = tc.submissions;
  out.uring_completions = tc.completions;
  return out;
}

}  // namespace core
