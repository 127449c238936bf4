// repl_host's stream groups (groups other than the meta group): created and removed by
// JetStream from the meta log, their entries and role changes handed to JetStream's owner
// thread as events, proposals and progress taken from it as commands on this thread.
#include <chrono>
#include <future>
#include <memory>

#include "src/base/clock.h"
#include "src/base/log.h"
#include "src/repl/repl_host.h"

namespace repl {
namespace {

std::uint64_t now_ms() {
  return std::uint64_t(base::system_clock::instance().monotonic_ns() / base::kMilli);
}

}  // namespace

template <class F>
auto repl_host::call_sync(F fn) -> decltype(fn()) {
  using R = decltype(fn());
  auto p = std::make_shared<std::promise<R>>();
  auto f = p->get_future();
  post([p, fn = std::move(fn)]() mutable { p->set_value(fn()); });
  // The thread may stop meanwhile (shutdown): never wait for a turn that will not come.
  while (f.wait_for(std::chrono::milliseconds(50)) != std::future_status::ready)
    if (_stop.load() || !_thread.joinable()) return R{};
  return f.get();
}

void repl_host::set_group_events(std::function<bool(core::group_event&)> sink) {
  _group_sink = sink;
  _meta_apply = [sink](std::uint64_t group, const committed_entry& e) {
    core::group_event ev;
    ev.group = group;
    ev.index = e.index;
    ev.term = e.value.term;
    ev.type = std::uint8_t(e.value.type);
    ev.data = e.value.data;
    return sink(ev);
  };
}

repl_host::apply_fn repl_host::group_apply_fn() {
  if (!_group_sink) return {};
  return _meta_apply;  // the same conversion: entries go to the one sink
}

bool repl_host::role_unreported(const group_slot& g) const {
  if (g.def.group == kMetaGroup || !_group_sink) return false;
  return g.reported_leader != (g.raft->current_role() == role::leader) ||
         g.reported_term != g.raft->term() || g.reported_leader_id != g.raft->leader_id();
}

bool repl_host::report_role(group_slot& g) {
  if (!role_unreported(g)) return true;
  core::group_event ev;
  ev.what = core::group_event::kind::role;
  ev.group = g.def.group;
  ev.term = g.raft->term();
  ev.leader = g.raft->current_role() == role::leader;
  if (auto n = g.names.find(g.raft->leader_id()); n != g.names.end()) ev.leader_name = n->second;
  if (!_group_sink(ev)) return false;
  g.reported_leader = ev.leader;
  g.reported_term = ev.term;
  g.reported_leader_id = g.raft->leader_id();
  return true;
}

void repl_host::create_group(std::uint64_t id, std::vector<std::string> members) {
  post([this, id, members = std::move(members)] {
    if (!_journal || _journal->failed() || id == kMetaGroup || _groups.count(id)) return;
    const auto& rec = _journal->recovered();
    auto it = rec.find(id);
    start_group({id, members}, it == rec.end() ? nullptr : &it->second, now_ms());
  });
}

void repl_host::remove_group(std::uint64_t id) {
  post([this, id] {
    if (id == kMetaGroup) return;
    if (_groups.erase(id)) PG_INFO("Replication group {} removed", id);
  });
}

core::group_propose_result repl_host::propose(std::uint64_t group, std::uint64_t term,
                                              std::vector<std::uint8_t> data) {
  return call_sync([this, group, term, data = std::move(data)]() -> core::group_propose_result {
    using st = core::group_propose_result::status;
    auto it = _groups.find(group);
    if (it == _groups.end()) return {st::failed, 0};
    group_slot& g = it->second;
    if (g.raft->current_role() != role::leader || (term != 0 && g.raft->term() != term)) return {st::not_leader, 0};
    const std::uint64_t now = now_ms();
    actions a;
    const auto r = g.raft->propose(now, data, a);
    handle(g, a, now);
    if (r.status == propose_status::ok) return {st::ok, r.index};
    return {r.status == propose_status::not_leader ? st::not_leader : st::failed, 0};
  });
}

core::group_progress repl_host::progress(std::uint64_t group) {
  return call_sync([this, group]() -> core::group_progress {
    core::group_progress p;
    auto it = _groups.find(group);
    if (it == _groups.end()) return p;
    group_slot& g = it->second;
    p.running = true;
    if (auto n = g.names.find(g.raft->leader_id()); n != g.names.end()) p.leader = n->second;
    p.commit = g.raft->commit_index();
    const bool leads = g.raft->current_role() == role::leader;
    const std::uint64_t now = now_ms();
    for (const auto& [id, name] : g.names) {
      core::group_progress::peer peer;
      peer.name = name;
      if (id == g.raft->id()) {
        peer.match = g.raft->last_index();
        peer.since_rx_ms = 0;
      } else {
        auto l = _up.find(name);
        peer.offline = l == _up.end();
        peer.match = leads ? g.raft->match_index(id) : 0;
        if (!peer.offline) peer.since_rx_ms = std::int64_t(now - std::min(now, l->second->last_rx_ms()));
      }
      p.peers.push_back(std::move(peer));
    }
    return p;
  });
}

bool repl_host::group_stepdown(std::uint64_t group) {
  return call_sync([this, group] {
    if (!_groups.count(group)) return false;
    stepdown(group, now_ms());
    return true;
  });
}

}  // namespace repl
