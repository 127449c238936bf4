#include "src/repl/repl_host.h"

#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cerrno>
#include <filesystem>
#include <random>
#include <set>

#include "io/backend.h"
#include "src/base/clock.h"
#include "src/base/log.h"
#include "src/repl/meta_bootstrap.h"
#include "src/repl/raft_codec.h"

namespace repl {
namespace {

std::uint64_t now_ms() {
  return std::uint64_t(base::system_clock::instance().monotonic_ns() / base::kMilli);
}

constexpr std::size_t kMaxQueuedBytes = 64u << 20;  // a peer that stopped reading is dropped

void no_delay(int fd) {
  const int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

}  // namespace

repl_host::repl_host(repl_host_options o) : _o(std::move(o)) {
  _wake_fd = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
}

repl_host::~repl_host() {
  stop();
  if (_snapshot_writer.joinable()) _snapshot_writer.join();
  _groups.clear();  // before the journal they write to
  _journal.reset();
  if (_wake_fd >= 0) ::close(_wake_fd);
}

std::int64_t repl_host::backoff_ms(int failures) {
  std::int64_t ms = 100;
  for (int i = 0; i < failures && ms < 2000; ++i) ms *= 2;
  return std::min<std::int64_t>(ms, 2000);
}

void repl_host::start() {
  _thread = std::thread([this] { run(); });
  pthread_setname_np(_thread.native_handle(), "pg-repl");
  if (_o.cpu >= 0) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(_o.cpu, &set);
    pthread_setaffinity_np(_thread.native_handle(), sizeof set, &set);
  }
}

void repl_host::stop() {
  _stop.store(true);
  if (_wake_fd >= 0) {
    const std::uint64_t one = 1;
    (void)!::write(_wake_fd, &one, sizeof one);
  }
  if (_thread.joinable()) _thread.join();
}

void repl_host::post(std::function<void()> fn) {
  {
    std::lock_guard lk(_cmd_mu);
    _commands.push_back(std::move(fn));
  }
  const std::uint64_t one = 1;
  (void)!::write(_wake_fd, &one, sizeof one);
}

void repl_host::run_commands() {
  std::vector<std::function<void()>> cmds;
  {
    std::lock_guard lk(_cmd_mu);
    cmds.swap(_commands);
  }
  for (auto& c : cmds) c();
}

void repl_host::route_peer(const std::string& name, const std::string& host, int repl_port,
                           bool up) {
  post([this, name, host, repl_port, up] {
    if (name.empty() || name == _o.server_name) return;
    peer& p = _peers[name];
    p.routed = up;
    if (up) {
      p.host = host;
      p.port = repl_port;
      p.failures = 0;
      p.due_ms = 0;
    }
  });
}

void repl_host::adopt_connection(int fd) {
  post([this, fd] {
    no_delay(fd);
    auto l = std::make_unique<repl_link>(fd, false, false, std::string{});
    l->set_opened_ms(now_ms());
    if (_o.tls) l->use_tls(_o.tls(false, {}));
    _links.push_back(std::move(l));
  });
}

core::meta_status repl_host::meta() const {
  std::lock_guard lk(_status_mu);
  return _status;
}

bool repl_host::meta_stepdown() {
  {
    std::lock_guard lk(_status_mu);
    if (!_status.running || _status.leader.empty()) return false;
  }
  post([this] { stepdown(kMetaGroup, now_ms()); });
  return true;
}

void repl_host::forget_server(const std::string& name) {
  post([this, name] { _removed.insert(name); });
}

void repl_host::open_journal() {
  std::error_code ec;
  std::filesystem::create_directories(_o.journal_dir, ec);
  auto backend = io::make_backend(_o.journal_dir);
  _completions_signal = backend->signal_completions_to(_wake_fd);
  auto j = disk_journal::open(_o.journal_dir + "/journal", std::move(backend), _o.sync_journal);
  if (!j) {
    PG_ERROR("replication journal {}/journal cannot be opened ({}): no replication on this server",
             _o.journal_dir, j.err().sys_errno);
    return;
  }
  _journal = std::move(*j);
  PG_INFO("Replication journal {}/journal ({}, durability {}): {} bytes recovered", _o.journal_dir,
          _journal->backend_name(), _o.sync_journal ? "sync" : "write", _journal->recovered_bytes());
  const std::uint64_t now = now_ms();
  for (const auto& [id, rec] : _journal->recovered())
    if (id == kMetaGroup) start_group(rec.def, &rec, now);
}

void repl_host::start_group(const group_definition& def, const recovered_group* rec,
                            std::uint64_t now) {
  group_slot slot;
  slot.def = def;
  group_config cfg;
  cfg.group_id = def.group;
  cfg.self = server_raft_id(_o.server_name);
  // A definition without this server is a join (meta_bootstrap.h decide_join): the leader
  // adds it and sends the log. Kept that way in the journal, so a restart before the log
  // arrived joins again instead of bootstrapping a group of its own.
  cfg.join = std::find(def.members.begin(), def.members.end(), _o.server_name) == def.members.end();
  for (const std::string& n : def.members) {
    const std::uint64_t id = server_raft_id(n);
    if (!slot.names.emplace(id, n).second) {
      PG_ERROR("replication group {}: two members have one raft id ({}); not started", def.group, n);
      return;
    }
    cfg.voters.push_back(id);
  }
  slot.names.emplace(cfg.self, _o.server_name);  // a joiner is not in its definition
  cfg.election_timeout_ms = _o.election_timeout_ms;
  cfg.heartbeat_timeout_ms = _o.heartbeat_timeout_ms;
  // Entries a snapshot leaves in the log (512); PEREGRINE_SNAPSHOT_TRAILING sets fewer, so a
  // test reaches InstallSnapshot with a few dozen entries.
  static const unsigned trailing = [] {
    const char* e = std::getenv("PEREGRINE_SNAPSHOT_TRAILING");
    return e != nullptr && *e != '\0' ? unsigned(std::strtoul(e, nullptr, 10)) : group_config{}.snapshot_trailing;
  }();
  cfg.snapshot_trailing = trailing;
  cfg.seed = std::random_device{}();
  slot.apply = def.group == kMetaGroup ? _meta_apply : group_apply_fn();
  if (!rec) _journal->define_group(def);  // written (synced) with the group's first records
  auto [it, added] = _groups.emplace(def.group, std::move(slot));
  if (!added) return;
  group_slot& g = it->second;
  g.store = std::make_unique<disk_log_store>(*_journal, def.group, rec);
  g.raft = std::make_unique<raft_group>(cfg, *g.store);
  actions a;
  if (!g.raft->start(now, a)) {
    PG_ERROR("replication group {} cannot start: {}", def.group, g.raft->error());
    _groups.erase(it);
    return;
  }
  std::string members;
  for (const auto& n : def.members) members += (members.empty() ? "" : ", ") + n;
  PG_INFO("Replication group {} started with members [{}]", def.group == kMetaGroup ? "meta" : std::to_string(def.group), members);
  handle(g, a, now);
}

// A member's name from its raft id: the group's definition, else a peer whose name hashes to
// it (a server added since; every server computes the same ids).
const std::string* repl_host::name_of(group_slot& g, std::uint64_t id) {
  if (auto it = g.names.find(id); it != g.names.end()) return &it->second;
  for (const auto& [name, p] : _peers)
    if (server_raft_id(name) == id) return &g.names.emplace(id, name).first->second;
  return nullptr;
}

void repl_host::manage_membership(std::uint64_t now) {
  auto it = _groups.find(kMetaGroup);
  if (it == _groups.end()) return;
  group_slot& g = it->second;
  if (g.raft->current_role() != role::leader || g.raft->change_pending()) return;
  actions a;
  // A removed server goes first; the leader itself hands leadership on (at most once a second).
  for (const auto& name : _removed) {
    const std::uint64_t id = server_raft_id(name);
    if (!g.raft->is_member(id)) continue;
    if (id == g.raft->id()) {
      if (now < _removed_stepdown_ms + 1000) return;
      _removed_stepdown_ms = now;
      PG_INFO("JetStream cluster: this server was removed, handing meta leadership on");
      stepdown(kMetaGroup, now);
      return;
    }
    if (g.raft->remove_peer(now, id, a)) PG_INFO("JetStream cluster: removing peer {} from the meta group", name);
    handle(g, a, now);
    return;  // one change at a time
  }
  // A linked server of this cluster outside the group, with a registered route (a server of
  // the cluster, not just something that sent a hello).
  for (const auto& [name, l] : _up) {
    const std::uint64_t id = server_raft_id(name);
    auto p = _peers.find(name);
    if (g.raft->is_member(id) || p == _peers.end() || !p->second.routed || _removed.count(name)) continue;
    g.names.emplace(id, name);
    if (g.raft->add_peer(now, id, a)) PG_INFO("JetStream cluster: adding peer {} to the meta group", name);
    handle(g, a, now);
    return;  // one change at a time
  }
  if (g.raft->promote_caught_up(now, a)) PG_INFO("JetStream cluster: a caught-up meta group peer becomes a voter");
  handle(g, a, now);
}

void repl_host::handle(group_slot& g, actions& a, std::uint64_t now) {
  (void)now;
  for (auto& s : a.sends) {
    const std::string* name = name_of(g, s.to);
    if (name == nullptr) continue;
    auto link = _up.find(*name);
    if (link == _up.end()) continue;  // no connection: lost, raft resends
    link->second->queue(link_kind::raft, s.frame);
  }
  for (auto& e : a.applies) g.unapplied.push_back({std::move(e), std::nullopt});
  offer_applies(g);
  if (a.timer_at) {
    g.timer_at = *a.timer_at;
    _timers.push({*a.timer_at, g.def.group});
  }
  a.clear();
}

void repl_host::offer_applies(group_slot& g) {
  while (!g.unapplied.empty()) {
    auto& o = g.unapplied.front();
    if (o.result) {
      if (_group_sink && !_group_sink(*o.result)) return;  // the owner is behind
    } else {
      if (g.apply && !g.apply(g.def.group, o.entry)) return;
      if (g.def.group == kMetaGroup) _meta_applied.fetch_add(1, std::memory_order_relaxed);
    }
    g.unapplied.pop_front();
  }
  if (g.def.group != kMetaGroup) report_role(g);
}

void repl_host::fire_timers(std::uint64_t now) {
  while (!_timers.empty() && _timers.top().at <= now) {
    const timer t = _timers.top();
    _timers.pop();
    auto it = _groups.find(t.group);
    if (it == _groups.end() || it->second.timer_at != t.at) continue;  // replaced since
    actions a;
    it->second.raft->on_timeout(now, a);
    handle(it->second, a, now);
  }
}

void repl_host::notify_durable(std::uint64_t now) {
  while (_journal && _journal->durable_seq() > _notified_seq) {
    _notified_seq = _journal->durable_seq();
    for (auto& [id, g] : _groups) {
      actions a;
      g.raft->on_persisted(now, _notified_seq, a);
      handle(g, a, now);
    }
  }
}

void repl_host::dial_due(std::uint64_t now) {
  for (auto& [name, p] : _peers) {
    if (!p.routed || p.port <= 0 || !(_o.server_name < name) || _up.count(name) || p.due_ms > now)
      continue;
    const bool dialing = std::any_of(_links.begin(), _links.end(), [&](const auto& l) {
      return l->dialed() && l->peer() == name;
    });
    if (dialing) continue;
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* res = nullptr;
    int fd = -1;
    int rc = -1;
    if (::getaddrinfo(p.host.c_str(), std::to_string(p.port).c_str(), &hints, &res) == 0 && res) {
      fd = ::socket(res->ai_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
      if (fd >= 0) rc = ::connect(fd, res->ai_addr, res->ai_addrlen);
      ::freeaddrinfo(res);
    }
    if (fd < 0 || (rc != 0 && errno != EINPROGRESS)) {
      if (fd >= 0) ::close(fd);
      p.due_ms = now + std::uint64_t(backoff_ms(p.failures++));
      continue;
    }
    no_delay(fd);
    auto l = std::make_unique<repl_link>(fd, true, rc != 0, name);
    l->set_opened_ms(now);
    l->queue_raw(encode_hello({kLinkVersion, _o.server_name, _o.cluster_name}));
    if (_o.tls) l->use_tls(_o.tls(true, p.host));
    _links.push_back(std::move(l));
  }
}

bool repl_host::accept_hello(repl_link& l, const link_hello& h, std::uint64_t now) {
  if (h.version != kLinkVersion || h.cluster != _o.cluster_name || h.server_name == _o.server_name) {
    PG_WARN("replication connection from {} (cluster {}) refused", h.server_name, h.cluster);
    return false;
  }
  if (!l.dialed()) l.queue_raw(encode_hello({kLinkVersion, _o.server_name, _o.cluster_name}));
  if (auto old = _up.find(h.server_name); old != _up.end() && old->second != &l) {
    repl_link* prev = old->second;
    _up.erase(old);
    close_link(*prev, now);  // the peer restarted or redialed: the new connection wins
  }
  _up[h.server_name] = &l;
  if (l.dialed()) _peers[h.server_name].failures = 0;
  l.queue(link_kind::view, encode_view(_view));
  PG_DEBUG("replication connection to {} up", h.server_name);
  return true;
}

void repl_host::on_message(repl_link& l, const link_message& m, std::uint64_t now) {
  switch (m.kind) {
    case link_kind::raft: {
      const auto route = peek_route(m.payload);
      if (!route) return;
      auto it = _groups.find(route->group);
      if (it == _groups.end()) return;  // a group this server does not run (yet)
      actions a;
      it->second.raft->on_frame(now, m.payload, a);
      handle(it->second, a, now);
      return;
    }
    case link_kind::view: {
      membership_view v;
      if (decode_view(m.payload, v)) _views[l.peer()] = std::move(v);
      return;
    }
    case link_kind::stepdown: {
      std::uint64_t group = 0;
      if (decode_group_id(m.payload, group)) stepdown(group, now);
      return;
    }
  }
}

void repl_host::close_link(repl_link& l, std::uint64_t now) {
  if (l.fd() < 0) return;
  if (!l.tls_error().empty())
    PG_WARN("replication TLS {} {}: {}", l.dialed() ? "connection to" : "connection from",
            l.peer().empty() ? std::string("a peer") : l.peer(), l.tls_error());
  if (l.up()) {
    auto it = _up.find(l.peer());
    if (it != _up.end() && it->second == &l) {
      _up.erase(it);
      _views.erase(l.peer());
      PG_DEBUG("replication connection to {} closed", l.peer());
    }
  }
  if (l.dialed()) {
    peer& p = _peers[l.peer()];
    p.due_ms = now + std::uint64_t(backoff_ms(p.failures++));
  }
  l.close();
}

void repl_host::reap_closed() {
  std::erase_if(_links, [](const auto& l) { return l->fd() < 0; });
}

void repl_host::service_link(repl_link& l, short revents, std::uint64_t now) {
  if (l.fd() < 0 || revents == 0) return;
  if (l.connecting()) {
    if (!(revents & (POLLOUT | POLLERR | POLLHUP))) return;
    if (!l.finish_connect()) return close_link(l, now);
  }
  if (!(revents & (POLLIN | POLLERR | POLLHUP))) return;
  const bool open = l.read_some(now);
  const bool ok = l.parse([&](const link_hello& h) { return accept_hello(l, h, now); },
                          [&](const link_message& m) { on_message(l, m, now); });
  if (!open || !ok) close_link(l, now);
}

void repl_host::stepdown(std::uint64_t group, std::uint64_t now) {
  auto it = _groups.find(group);
  if (it == _groups.end()) return;
  group_slot& g = it->second;
  if (g.raft->current_role() == role::leader) {
    // The most caught-up voter; among equals, each stepdown takes the next one (always the
    // first made two servers hand it back and forth, and a third never led).
    std::vector<std::uint64_t> most;
    std::uint64_t best_match = 0;
    for (std::uint64_t v : g.raft->voters()) {
      const std::string* vn = name_of(g, v);
      if (v == g.raft->id() || vn == nullptr || !_up.count(*vn)) continue;
      const std::uint64_t m = g.raft->match_index(v);
      if (most.empty() || m > best_match) {
        most.assign(1, v);
        best_match = m;
      } else if (m == best_match) {
        most.push_back(v);
      }
    }
    if (most.empty()) return;
    const std::uint64_t best = most[_stepdowns++ % most.size()];
    actions a;
    if (g.raft->transfer_leadership(now, best, a))
      PG_INFO("Replication group {}: handing leadership to {}", group, *name_of(g, best));
    handle(g, a, now);
    return;
  }
  const std::string* leader = name_of(g, g.raft->leader_id());
  if (leader == nullptr) return;
  if (auto l = _up.find(*leader); l != _up.end())
    l->second->queue(link_kind::stepdown, encode_group_id(group));
}

void repl_host::refresh_view(std::uint64_t now) {
  membership_view v;
  if (auto it = _groups.find(kMetaGroup); it != _groups.end()) {
    v = {true, it->second.def.members};
    std::vector<std::string> now_members;
    for (const auto& m : it->second.raft->members())
      if (const std::string* n = name_of(it->second, m.id)) now_members.push_back(*n);
    if (!now_members.empty()) {  // the configuration raft holds (members added since)
      std::sort(now_members.begin(), now_members.end());
      v.members = std::move(now_members);
    }
  } else {
    std::vector<std::string> linked;
    for (const auto& [name, l] : _up) linked.push_back(name);
    v = own_view(_o.server_name, linked);
  }
  if (v == _view) return;
  _view = std::move(v);
  _view_since_ms = now;
  const auto bytes = encode_view(_view);
  for (auto& [name, l] : _up) l->queue(link_kind::view, bytes);
}

void repl_host::try_bootstrap(std::uint64_t now) {
  if (!_journal || _journal->failed() || _groups.count(kMetaGroup)) return;
  bootstrap_input in;
  in.self = _o.server_name;
  for (const auto& [name, l] : _up) in.linked.push_back(name);
  in.views = _views;
  in.min_size = _o.min_meta_size;
  in.now_ms = now;
  in.view_since_ms = _view_since_ms;
  in.settle_ms = _o.settle_ms;
  if (auto members = decide_bootstrap(in)) {
    start_group({kMetaGroup, *members}, nullptr, now);
    refresh_view(now);  // frozen now: the others adopt it
  } else if (auto formed = decide_join(in)) {
    PG_INFO("JetStream cluster: joining the formed meta group as a new peer");
    start_group({kMetaGroup, *formed}, nullptr, now);
    refresh_view(now);
  }
}

void repl_host::publish_status(std::uint64_t now) {
  core::meta_status s;
  auto it = _groups.find(kMetaGroup);
  if (it != _groups.end()) {
    group_slot& g = it->second;
    s.running = true;
    s.cluster = _o.cluster_name;
    const auto members = g.raft->members();
    s.cluster_size = members.empty() ? g.def.members.size() : members.size();
    if (const std::string* l = name_of(g, g.raft->leader_id())) s.leader = *l;
    s.self_leader = g.raft->current_role() == role::leader;
    for (const auto& m : members) {
      const std::string* n = name_of(g, m.id);
      if (m.id != g.raft->id() && n != nullptr && !_up.count(*n)) s.unreachable.push_back(*n);
    }
    if (s.self_leader) {
      const std::uint64_t last = g.raft->last_index();
      for (const auto& m : members) {
        const std::uint64_t id = m.id;
        const std::string* n = name_of(g, id);
        if (id == g.raft->id() || n == nullptr) continue;
        const std::string& name = *n;
        core::meta_peer_status p;
        p.name = name;
        auto l = _up.find(name);
        p.offline = l == _up.end();
        const std::uint64_t match = g.raft->match_index(id);
        p.current = !p.offline && match >= last;
        p.lag = match < last ? last - match : 0;
        if (!p.offline) p.active_ns = std::int64_t(now - std::min(now, l->second->last_rx_ms())) * 1'000'000;
        s.replicas.push_back(std::move(p));
      }
      std::sort(s.replicas.begin(), s.replicas.end(),
                [](const auto& x, const auto& y) { return x.name < y.name; });
    }
  }
  std::lock_guard lk(_status_mu);
  if (s.leader != _status.leader && !s.leader.empty())
    PG_INFO("JetStream cluster new metadata leader: {}", s.leader);
  _status = std::move(s);
}

int repl_host::poll_timeout_ms(std::uint64_t now) const {
  std::uint64_t wait = 1000;
  if (!_timers.empty()) wait = std::min(wait, _timers.top().at > now ? _timers.top().at - now : 0);
  for (const auto& [name, p] : _peers)
    if (p.routed && p.port > 0 && _o.server_name < name && !_up.count(name))
      wait = std::min(wait, p.due_ms > now ? p.due_ms - now : 0);
  // Bootstrap waits for the view to settle; after that only a socket event can change it.
  if (_journal && !_groups.count(kMetaGroup) && !_up.empty() && _view_since_ms + _o.settle_ms > now)
    wait = std::min<std::uint64_t>(wait, _view_since_ms + _o.settle_ms - now);
  if (_journal && !_journal->idle() && !_completions_signal) wait = std::min<std::uint64_t>(wait, 1);
  for (const auto& [id, g] : _groups)
    if (!g.unapplied.empty() || !g.held.empty() || role_unreported(g)) wait = std::min<std::uint64_t>(wait, 1);
  return int(wait);
}

void repl_host::maybe_rewrite_journal(std::uint64_t now) {
  if (!_journal || _journal->failed()) return;
  if (_journal->rewriting()) {
    (void)_journal->poll_rewrite();
    return;
  }
  if (now < _rewrite_checked_ms + 1000) return;
  _rewrite_checked_ms = now;
  static const std::uint64_t floor = [] {
    const char* e = std::getenv("PEREGRINE_JOURNAL_MIN_BYTES");
    return e != nullptr && *e != '\0' ? std::strtoull(e, nullptr, 10) : std::uint64_t(64) << 20;
  }();
  if (_journal->size() < std::max(floor, 2 * _last_image_bytes)) return;
  // Estimated first: building an image as big as the journal only to drop it held this
  // thread (and every PubAck) for a copy of the whole log each second.
  std::uint64_t estimate = 0;
  for (const auto& [id, g] : _groups) estimate += g.store->image_bytes();
  for (const auto& [id, rec] : _journal->recovered())
    if (!_groups.count(id) && !_removed_groups.count(id))
      estimate += group_image_bytes(rec.log, entry_data_bytes(rec.log.entries));
  if (2 * estimate > _journal->size()) {
    _last_image_bytes = estimate;
    return;  // not worth it yet
  }
  std::vector<std::uint8_t> image;
  auto define = [&](const group_definition& def) {
    append_journal_record(image, 0, encode_group_definition(def));
  };
  for (const auto& [id, g] : _groups) {
    define(g.def);
    g.store->write_image(image);
  }
  // Groups recovered at the start that JetStream has not started (again) yet keep theirs.
  for (const auto& [id, rec] : _journal->recovered()) {
    if (_groups.count(id) || _removed_groups.count(id)) continue;
    define(rec.def);
    append_group_image(image, id, rec.log);
  }
  _last_image_bytes = image.size();
  if (2 * image.size() > _journal->size()) return;  // not worth it yet
  PG_INFO("Replication journal: rewriting {} bytes as {}", _journal->size(), image.size());
  (void)_journal->begin_rewrite(std::move(image));
}

void repl_host::run() {
  open_journal();
  std::vector<pollfd> fds;
  while (!_stop.load()) {
    std::uint64_t now = now_ms();
    fds.clear();
    fds.push_back({_wake_fd, POLLIN, 0});
    for (const auto& l : _links)
      fds.push_back({l->fd(), short(l->connecting() ? POLLOUT : (POLLIN | (l->wants_write() ? POLLOUT : 0))), 0});
    ::poll(fds.data(), nfds_t(fds.size()), poll_timeout_ms(now));
    now = now_ms();
    std::uint64_t drained = 0;
    (void)!::read(_wake_fd, &drained, sizeof drained);
    run_commands();
    take_proposals(now);
    // Only links polled above (run_commands may have adopted new ones behind them).
    for (std::size_t i = 1; i < fds.size(); ++i) service_link(*_links[i - 1], fds[i].revents, now);
    if (_journal)
      while (_journal->poll()) {
      }
    notify_durable(now);
    fire_timers(now);
    manage_membership(now);
    for (auto& [id, g] : _groups) offer_applies(g);
    end_event_batch();  // the owner takes this turn's applies while the sends below go out
    dial_due(now);
    refresh_view(now);
    try_bootstrap(now);
    notify_durable(now);  // a hard-state sync this turn made other groups' writes durable
    if (_journal) _journal->flush();
    maybe_rewrite_journal(now);
    poll_snapshot_writer(now);
    for (auto& l : _links) {
      if (l->fd() < 0) continue;
      if (!l->up() && now > l->opened_ms() + kLinkHelloTimeoutMs) {
        PG_DEBUG("replication connection {} {}: no hello within {} ms", l->dialed() ? "to" : "from",
                 l->peer().empty() ? std::string("a peer") : l->peer(), kLinkHelloTimeoutMs);
        close_link(*l, now);
        continue;
      }
      if (l->queued_bytes() > kMaxQueuedBytes || !l->write_some()) close_link(*l, now);
    }
    reap_closed();
    publish_status(now);
    end_event_batch();
  }
}

void repl_host::end_event_batch() {
  if (_events_taken && _group_turn_end) _group_turn_end();
  _events_taken = false;
}

}  // namespace repl
