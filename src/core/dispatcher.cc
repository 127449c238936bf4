#include "src/core/dispatcher.h"

#include <signal.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include "src/base/log.h"
#include "src/core/nkey.h"
#include "src/core/subject.h"
#include "src/proto/writer.h"

namespace core {
namespace {
constexpr std::size_t kRingSize = 4096;
constexpr base::nanos kTick = 50 * base::kMilli;

// nats-server's connz close reasons for the errors we close with.
std::string_view close_reason_for(std::string_view err_text) {
  namespace e = proto::err_text;
  if (err_text == e::auth_violation) return "Authentication Failure";
  if (err_text == e::auth_timeout) return "Authentication Timeout";
  if (err_text == e::stale) return "Stale Connection";
  if (err_text == e::max_connections) return "Maximum Connections Exceeded";
  if (err_text == e::max_payload) return "Maximum Message Payload Exceeded";
  if (err_text.empty()) return {};
  return "Protocol Violation";
}
}  // namespace

dispatcher::dispatcher(std::uint32_t index, server_shared& srv, std::unique_ptr<net::transport> t,
                       shard::loop_config lcfg)
    : _index(index), _srv(srv), _transport(std::move(t)), _loop(lcfg) {
  refresh_live();
  _transport->set_handler(this);
  _loop.add_poller(this);  // first: services start before the transport accepts anyone
  _loop.add_poller(_transport.get());
  _internal.id = 0;
  _internal.connected = true;
  _internal.headers = true;
  _by_id.emplace(0, &_internal);
  _loop.set_waiter(_transport.get());
  _loop.set_end_of_turn([this](base::nanos) { return _transport->flush(); });
}

void dispatcher::init_cluster_info() { _cluster_info["cluster"] = _srv.route_info.value("cluster", ""); }

void dispatcher::release_services() {
  _services.clear();
  _service_hosts.clear();
}

dispatcher::~dispatcher() {
  // Services unsubscribe through _internal and their hosts as they go (a stream's consumers do),
  // and members die in reverse order of declaration, _internal before _services: services first.
  release_services();
  if (_wake_fd >= 0) ::close(_wake_fd);
}

int dispatcher::wake_eventfd() {
  if (_wake_fd == -2) {
    _wake_fd = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (_wake_fd >= 0 && !_transport->watch_fd(_wake_fd)) {
      ::close(_wake_fd);
      _wake_fd = -1;
    }
  }
  return _wake_fd;
}

void dispatcher::connect(const std::vector<dispatcher*>& all) {
  const std::size_t n = all.size();
  _peers = all;
  _inbox.clear();
  for (std::size_t i = 0; i < n; ++i)
    _inbox.push_back(i == _index ? nullptr : std::make_unique<base::spsc_ring<shard_msg>>(kRingSize));
  _outbox.assign(n, nullptr);
  _overflow.assign(n, {});
  _backlog.assign(n, {});
  _posted.assign(n, 0);
  _pushed.assign(n, 0);
  _acked.assign(n, 0);
  _applied.assign(n, 0);
  _remote_targets.assign(n, {});
  _inbox_blocked_on.assign(n, 0);
}

bool dispatcher::inbox_blocked(std::uint32_t from) {
  const std::uint64_t id = _inbox_blocked_on[from];
  if (id == 0) return false;
  auto it = _by_id.find(id);
  if (it != _by_id.end() && !it->second->closing &&
      _transport->pending_bytes(it->second->handle) > std::size_t(_live->opts.max_pending) / 2 &&
      holds_publishers(*it->second, _loop.clk().monotonic_ns()))
    return true;
  _inbox_blocked_on[from] = 0;
  return false;
}

void dispatcher::place_connection(int fd) {
  _transport->adopt(fd);
}

void dispatcher::post_new_connection(std::uint32_t to, int fd) {
  shard_msg m;
  m.k = shard_msg::kind::new_conn;
  m.fd = fd;
  post(to, std::move(m));
}

void dispatcher::post(std::uint32_t to, shard_msg m) {
  if (!_outbox[to]) _outbox[to] = _peers[to]->_inbox[_index].get();
  m.from = _index;
  auto& pending = _overflow[to];
  ++_posted[to];
  if (pending.empty() && _outbox[to]->try_push(std::move(m))) {
    ++_pushed[to];
    _peers[to]->_loop.wake();
    return;
  }
  pending.push_back(std::move(m));  // keep order: later posts queue behind the overflow
}

std::size_t dispatcher::drain_inbox() {
  std::size_t work = 0;
  _sub_slice.start(_loop.clk().monotonic_ns());
  for (std::uint32_t from = 0; from < _inbox.size(); ++from) {
    if (!_inbox[from]) continue;
    if (inbox_blocked(from)) continue;
    const std::uint64_t before = _applied[from];
    work += drain_from(from);
    if (_applied[from] != before) {
      shard_msg ack;
      ack.k = shard_msg::kind::sub_ack;
      ack.seq = _applied[from];
      post(from, std::move(ack));
    }
  }
  for (std::uint32_t to = 0; to < _overflow.size(); ++to) {
    auto& q = _overflow[to];
    while (!q.empty() && _outbox[to]->try_push(std::move(q.front()))) {
      q.pop_front();
      ++_pushed[to];
      ++work;
    }
    if (work) _peers[to]->_loop.wake();
  }
  return work;
}

// One peer's share of the turn: what waits in its backlog first, then its ring. Moving a
// message into the backlog is cheap, so the ring is emptied well beyond what is applied,
// and a PONG gated behind subscription changes is not held for them.
std::size_t dispatcher::drain_from(std::uint32_t from) {
  constexpr std::size_t kApplyPerTurn = 1024;
  constexpr std::size_t kTakePerTurn = 4096;
  inbox_backlog& backlog = _backlog[from];
  auto& ring = *_inbox[from];
  const base::clock& clk = _loop.clk();
  std::size_t work = 0, applied = 0;
  const auto run = [&](shard_msg& m) {  // false: a local subscriber filled up, hold this ring
    if (inbox_backlog::is_sub_change(m.k)) _sub_slice.spent();
    apply(m);
    ++applied;
    ++work;
    if (!_stall_current) return true;
    _inbox_blocked_on[from] = _stall_current;
    _stall_current = 0;
    return false;
  };
  while (!backlog.empty() && applied < kApplyPerTurn) {
    if (inbox_backlog::is_sub_change(backlog.front_kind()) && !_sub_slice.fits(clk)) break;
    shard_msg m = backlog.pop();
    if (!run(m)) return work;
  }
  bool held = false;
  for (std::size_t n = 0; n < kTakePerTurn && applied < kApplyPerTurn && !held && backlog.accepting(); ++n) {
    const std::uint64_t pos = ring.consumed();
    const std::size_t got = ring.drain(
        [&](shard_msg&& m) {
          const bool budget = !inbox_backlog::is_sub_change(m.k) || _sub_slice.fits(clk);
          if (backlog.must_wait(m.k, budget)) {
            backlog.push(std::move(m), pos);
            ++work;
          } else {
            held = !run(m);
          }
        },
        1);
    if (got == 0) break;
  }
  if (!backlog.empty()) ++work;  // the loop keeps turning until it is applied
  return work;
}

void dispatcher::apply(shard_msg& m) {
  using k = shard_msg::kind;
  switch (m.k) {
    case k::new_conn: place_connection(m.fd); break;
    case k::sub_add: {
      auto s = std::make_unique<subscription>();
      s->subject = std::move(m.subject);
      s->queue = std::move(m.queue);
      s->sid = m.sid;
      s->shard = m.from;
      s->conn_id = m.conn_id;
      s->account = m.account;
      s->via_route = m.via_route;
      s->weight = m.weight;
      s->announce = m.announce;
      auto& slot = _remote[m.conn_id][m.sid];
      if (slot) {
        subs_for(slot->account).remove(slot.get());
        interest_change(*slot, -1);
        slot.reset();
      }
      if (subs_for(s->account).insert(s.get()).ok()) {
        interest_change(*s, +1);
        slot = std::move(s);
      }
      _applied[m.from] = m.seq;
      break;
    }
    case k::sub_del: {
      auto it = _remote.find(m.conn_id);
      if (it != _remote.end()) {
        auto sit = it->second.find(m.sid);
        if (sit != it->second.end()) {
          subs_for(sit->second->account).remove(sit->second.get());
          interest_change(*sit->second, -1);
          it->second.erase(sit);
        }
      }
      _applied[m.from] = m.seq;
      break;
    }
    case k::conn_gone: {
      auto it = _remote.find(m.conn_id);
      if (it != _remote.end()) {
        for (auto& [sid, s] : it->second) {
          if (!s) continue;
          subs_for(s->account).remove(s.get());
          interest_change(*s, -1);
        }
        _remote.erase(it);
      }
      _applied[m.from] = m.seq;
      break;
    }
    case k::deliver: {
      const shared_msg& msg = *m.msg;
      _publisher_no_responders = msg.no_responders;  // internal handlers see it
      for (const auto& t : m.targets) {
        auto cit = _by_id.find(t.conn_id);
        if (cit == _by_id.end()) continue;
        auto sit = cit->second->subs.find(t.sid);
        if (sit == cit->second->subs.end()) continue;
        deliver_local(*sit->second, msg.subject, msg.reply, msg.headers, msg.payload);
      }
      if (!_route_batch.empty())
        flush_route_batch(msg.matched.empty() ? msg.subject : msg.matched, msg.reply, msg.headers, msg.payload,
                          msg.matched.empty() ? std::string_view() : std::string_view(msg.subject));
      _publisher_no_responders = false;
      for (auto& [c, sid] : _expired) remove_sub(*c, sid, true);
      _expired.clear();
      break;
    }
    case k::sub_ack:
      if (m.seq > _acked[m.from]) _acked[m.from] = m.seq;
      break;
  }
}

std::uint64_t dispatcher::min_acked() const {
  std::uint64_t lo = _bcast_seq;
  for (std::uint32_t i = 0; i < _acked.size(); ++i)
    if (i != _index && _acked[i] < lo) lo = _acked[i];
  return lo;
}

bool dispatcher::pong_ready_now(const client& c) const {
  if (_peers.size() <= 1) return true;
  if (c.sub_seq > 0 && c.sub_seq > min_acked()) return false;
  for (std::uint32_t i = 0; i < _inbox.size(); ++i) {
    if (_inbox[i] && (!_inbox[i]->empty() || _backlog[i].holds_deliveries_to(c.id))) return false;
    if (!_overflow[i].empty()) return false;
  }
  return true;
}

bool dispatcher::gate_open(const pong_gate& g, std::uint64_t acked) const {
  if (g.sub_seq > acked) return false;
  const std::size_t n = _inbox.size();
  for (std::size_t i = 0; i < n; ++i) {
    if (_inbox[i] && (_inbox[i]->consumed() < g.marks[i] || _backlog[i].first_delivery_to(g.c->id) < g.marks[i]))
      return false;
    if (_pushed[i] < g.marks[n + i]) return false;
  }
  return true;
}

std::size_t dispatcher::release_pongs() {
  const std::uint64_t acked = min_acked();
  std::size_t work = 0;
  std::deque<pong_gate> kept;
  for (auto& g : _pong_gates) {
    if (!g.c->pong_held && gate_open(g, acked)) {
      _transport->outbuf(g.c->handle).append(proto::kPong);
      --g.c->deferred_pongs;
      ++work;
    } else {
      g.c->pong_held = true;  // later PONGs of this client stay behind this one
      kept.push_back(std::move(g));
    }
  }
  for (auto& g : kept) g.c->pong_held = false;
  _pong_gates = std::move(kept);
  return work;
}

std::size_t dispatcher::poll(base::nanos now) {
  if (_srv.live_gen.load(std::memory_order_acquire) != _live_gen) refresh_live();
  if (_interest_stale && _index == 0 && _srv.routes) rebuild_interest();
  if (_calls_pending.load(std::memory_order_relaxed)) run_calls();
  std::size_t cluster_work = 0;
  if (_srv.routes && _srv.cluster_gen.load(std::memory_order_acquire) != _cluster_gen)
    cluster_work = refresh_cluster_info();
  if (!_services_started) {
    _services_started = true;
    for (std::size_t i = 0; i < _services.size(); ++i) {
      std::string err;
      if (!_services[i]->start(_service_hosts[i] ? *_service_hosts[i] : *this, err)) {
        PG_ERROR("{}", err);
        ::kill(::getpid(), SIGTERM);  // a service that cannot start stops the server
      }
    }
    _services_ready.store(true, std::memory_order_release);
  }
  std::size_t work = cluster_work + (_inbox.empty() ? 0 : drain_inbox());
  for (shard::poller* p : _service_pollers) work += p->poll(now);
  work += resume_stalled();
  if (!_pong_gates.empty()) work += release_pongs();
  if (now >= _next_tick) {
    _next_tick = now + kTick;
    work += tick(now);
    if (_srv.lame_duck_since_ns.load(std::memory_order_relaxed) != 0) work += lame_duck(now);
  }
  return work;
}

std::size_t dispatcher::tick(base::nanos now) {
  const auto& o = _live->opts;
  const base::nanos interval = o.ping_interval_ms * base::kMilli;
  std::vector<client*> stale, auth_late, slow;
  const std::size_t stall_mark = std::size_t(o.max_pending) / 4 * 3;
  for (auto& [h, cp] : _clients) {
    client& c = *cp;
    if (c.closing) continue;
    if (_transport->pending_bytes(c.handle) > stall_mark) {
      if (c.pressure_since_ns == 0) {
        c.pressure_since_ns = now;
      } else if (now - c.pressure_since_ns > o.write_deadline_ms * base::kMilli) {
        slow.push_back(&c);
        continue;
      }
    } else {
      c.pressure_since_ns = 0;
    }
    const bool route_late =  // an accepted route that has not authenticated in cluster.authorization.timeout
        c.route && c.route->awaiting_auth && now - c.created_ns > o.cluster_auth_timeout_ms * base::kMilli;
    if (route_late || (_live->auth_required && !c.connected && now - c.created_ns > o.auth_timeout_ms * base::kMilli)) {
      auth_late.push_back(&c);
      continue;
    }
    if (now < c.next_ping_ns) continue;
    c.next_ping_ns = now + interval;
    if (c.pings_out == 0 && now - c.last_in_ns < interval && c.last_in_ns > c.created_ns) continue;
    if (c.pings_out + 1 > o.ping_max) {
      stale.push_back(&c);
      continue;
    }
    ++c.pings_out;
    _transport->outbuf(c.handle).append(proto::kPing);
  }
  for (client* c : slow)
    cut_slow_consumer(*c, fmt::format("WriteDeadline of {}ms Exceeded", o.write_deadline_ms),
                      "Slow Consumer (Write Deadline)");
  for (client* c : auth_late) close_client(*c, proto::err_text::auth_timeout);
  for (client* c : stale) {
    PG_DEBUG("{}:{} - cid:{} - Stale Client Connection - Closing", c->peer_ip, c->peer_port, c->id);
    close_client(*c, proto::err_text::stale);
  }
  return auth_late.size() + stale.size();
}

void dispatcher::on_open(net::conn_handle h, std::string_view ip, int port) {
  const bool is_route = _adopting_route != nullptr;  // routes are not client connections
  const int n = is_route ? 0 : _srv.connections.fetch_add(1) + 1;
  if (!is_route) {
    _srv.total_connections.fetch_add(1, std::memory_order_relaxed);
    _srv.sys_wake.connections_changed();
  }
  auto cp = std::make_unique<client>();
  client& c = *cp;
  c.handle = h;
  const std::uint64_t seq = _next_client++;
  c.id = (std::uint64_t(_index) << 48) | seq;
  // Unique across shards and dense: shard i hands out i+1, i+1+N, i+1+2N, ...
  c.cid = (seq - 1) * _srv.shard_count + _index + 1;
  c.start_wall_ns = _loop.clk().wall_ns();
  c.peer_ip = std::string(ip);
  c.peer_port = port;
  const base::nanos now = _loop.clk().monotonic_ns();
  c.created_ns = now;
  c.last_in_ns = now;
  const base::nanos interval = _live->opts.ping_interval_ms * base::kMilli;
  c.next_ping_ns = now + std::min<base::nanos>(interval, 2 * base::kSecond);
  _clients.emplace(h, std::move(cp));
  _by_id.emplace(c.id, &c);
  if (is_route) {
    c.route = std::move(_adopting_route);
    c.connected = true;
    c.headers = true;
    open_route(c);
    return;
  }
  if (n > _live->opts.max_connections) {
    close_client(c, proto::err_text::max_connections);
    return;
  }
  if (_live->auth->nkeys) c.nonce = make_nonce();
  _transport->outbuf(h).append(client_info(c));
  PG_DEBUG("{}:{} - cid:{} - Client connection created", c.peer_ip, c.peer_port, c.id);
}

void dispatcher::on_data(net::conn_handle h, std::string_view bytes) {
  auto it = _clients.find(h);
  if (it == _clients.end() || it->second->closing) return;
  client& c = *it->second;
  c.last_in_ns = _loop.clk().monotonic_ns();
  if (c.stalled) {  // paused by back-pressure: keep the bytes for resume_stalled()
    c.inbuf.append(bytes);
    return;
  }
  if (c.inbuf.size() == c.in_head) {  // nothing carried over: parse straight from the buffer
    const std::size_t used = process(c, bytes);
    c.inbuf.clear();
    c.in_head = 0;
    if (used < bytes.size() && !c.closing) c.inbuf.assign(bytes.substr(used));
    return;
  }
  c.inbuf.append(bytes);
  if (c.inbuf.size() - c.in_head < c.need) return;  // a large payload is still arriving
  parse_inbuf(c);
}

void dispatcher::parse_inbuf(client& c) {
  const std::size_t used = process(c, std::string_view(c.inbuf).substr(c.in_head));
  if (c.closing) {
    c.inbuf.clear();
    c.in_head = 0;
    return;
  }
  c.in_head += used;
  if (c.in_head == c.inbuf.size()) {
    c.inbuf.clear();
    c.in_head = 0;
  } else if (c.in_head > (64u << 10) && c.in_head > c.inbuf.size() / 2) {
    c.inbuf.erase(0, c.in_head);  // amortised: at most one move per halving
    c.in_head = 0;
  }
}

void dispatcher::on_close(net::conn_handle h) {
  auto it = _clients.find(h);
  if (it == _clients.end()) return;
  client& c = *it->second;
  if (c.route) route_closed(c);
  for (auto& [sid, s] : c.subs) {
    subs_for(s->account).remove(s.get());
    interest_change(*s, -1);
  }
  _sub_stats.removes += c.subs.size();
  if (!c.subs.empty() && _peers.size() > 1) {
    ++_bcast_seq;
    for (std::uint32_t to = 0; to < _peers.size(); ++to) {
      if (to == _index) continue;
      shard_msg m;
      m.k = shard_msg::kind::conn_gone;
      m.conn_id = c.id;
      m.seq = _bcast_seq;
      post(to, std::move(m));
    }
  }
  std::erase_if(_pong_gates, [&](const pong_gate& g) { return g.c == &c; });
  std::erase(_stalled, &c);
  if (c.id != 0 && !c.route) {  // kept for connz?state=closed
    _closed.push_back(snap(c, false));
    _closed.back().stop_ns = _loop.clk().wall_ns();
    _closed.back().reason = c.close_reason.empty() ? "Client Closed" : std::string(c.close_reason);
    if (c.connected) sys_client_event(c, true, &_closed.back());
    while (_closed.size() > std::max<std::size_t>(1, kClosedKept / _srv.shard_count)) _closed.pop_front();
  }
  _by_id.erase(c.id);
  if (!c.route) {
    _srv.connections.fetch_sub(1);
    _srv.sys_wake.connections_changed();
  }
  PG_DEBUG("{}:{} - cid:{} - Client connection closed", c.peer_ip, c.peer_port, c.id);
  _clients.erase(it);
}

void dispatcher::close_client(client& c, std::string_view err_text) {
  if (c.closing) return;
  c.closing = true;
  if (c.close_reason.empty()) c.close_reason = close_reason_for(err_text);
  if (!err_text.empty()) proto::append_err(_transport->outbuf(c.handle), err_text);
  _transport->close(c.handle, true);
}

}  // namespace core
