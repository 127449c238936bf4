// repl_host's stream groups (groups other than the meta group): created and removed by
// JetStream from the meta log, their entries and role changes handed to JetStream's owner
// thread as events, proposals and progress taken from it as commands on this thread.
#include <unistd.h>

#include <chrono>
#include <future>
#include <memory>
#include <utility>

#include "src/base/clock.h"
#include "src/base/log.h"
#include "src/repl/repl_host.h"
#include "src/repl/snapshot_files.h"

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

// The sink returns false when it cannot take the event now (its queue is full) and then
// leaves it as it was (cluster_streams' try_push moves only on success): each entry's data is
// moved into its event, not copied, and moved back when the owner is behind.
void repl_host::set_group_events(std::function<bool(core::group_event&)> sink, std::function<void()> turn_end) {
  _group_turn_end = std::move(turn_end);
  _group_sink = [this, deliver = std::move(sink)](core::group_event& ev) {
    if (!deliver(ev)) return false;
    _events_taken = true;
    return true;
  };
  _meta_apply = [this](std::uint64_t group, committed_entry& e) {
    core::group_event ev;
    ev.group = group;
    ev.index = e.index;
    ev.term = e.value.term;
    ev.type = std::uint8_t(e.value.type);
    ev.data = std::move(e.value.data);
    if (_group_sink(ev)) return true;
    e.value.data = std::move(ev.data);  // the owner's queue is full: offered again later
    return false;
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
    _removed_groups.insert(id);
    if (_groups.erase(id)) {
      if (_journal && !_journal->failed()) _journal->remove_group(id);  // recovery forgets it
      PG_INFO("Replication group {} removed", id);
    }
  });
}

core::group_propose_result repl_host::propose(std::uint64_t group, std::uint64_t term,
                                              std::vector<std::uint8_t> data) {
  return call_sync([this, group, term, data = std::move(data)]() -> core::group_propose_result {
    using st = core::group_propose_result::status;
    // What the same owner queued before this call goes first (a consumer's deliveries before
    // its ack): proposals keep the owner's order.
    take_proposals(now_ms());
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

bool repl_host::propose_async(core::group_proposal& p) {
  if (!_proposals.try_push(std::move(p))) return false;
  _proposals_unsignalled = true;
  return true;
}

void repl_host::flush_proposals() {
  if (!std::exchange(_proposals_unsignalled, false)) return;
  const std::uint64_t one = 1;
  (void)!::write(_wake_fd, &one, sizeof one);
}

// Everything the owner queued since the last turn, plus what raft refused during a leadership
// transfer, proposed per group in runs of one term: a run is one raft submit (one log append,
// one journal record, one AppendEntries per follower), all of it written by this turn's one
// journal flush.
void repl_host::take_proposals(std::uint64_t now) {
  std::map<std::uint64_t, std::vector<core::group_proposal>> by_group;
  for (auto& [id, g] : _groups) {
    if (g.held.empty()) continue;
    auto& list = by_group[id];
    for (auto& p : g.held) list.push_back(std::move(p));
    g.held.clear();
  }
  _proposals.drain([&](core::group_proposal&& p) { by_group[p.group].push_back(std::move(p)); });
  for (auto& [id, list] : by_group) {
    auto it = _groups.find(id);
    if (it == _groups.end()) continue;  // removed: its owner dropped the stream
    propose_run(it->second, list, now);
  }
}

void repl_host::propose_run(group_slot& g, std::vector<core::group_proposal>& list, std::uint64_t now) {
  // Bounds one submit (nats-server cuts its append batches at 256 KB); the rest is the next run.
  constexpr std::size_t kMaxRunBytes = 1u << 20;
  auto answer = [&](const core::group_proposal& first, std::size_t n, std::uint64_t index) {
    core::group_event ev;
    ev.what = core::group_event::kind::proposed;
    ev.group = g.def.group;
    ev.term = first.term;
    ev.ticket = first.ticket;
    ev.count = n;
    ev.index = index;
    g.unapplied.push_back({committed_entry{}, std::move(ev)});
  };
  std::size_t i = 0;
  while (i < list.size()) {
    std::size_t j = i;
    std::size_t bytes = 0;
    while (j < list.size() && list[j].term == list[i].term && (j == i || bytes + list[j].data.size() <= kMaxRunBytes))
      bytes += list[j++].data.size();
    const std::uint64_t term = list[i].term;
    const bool leads = g.raft->current_role() == role::leader && g.raft->term() == term;
    if (!leads) {
      answer(list[i], j - i, 0);
      i = j;
      continue;
    }
    std::vector<std::span<const std::uint8_t>> items;
    items.reserve(j - i);
    for (std::size_t k = i; k < j; ++k) items.emplace_back(list[k].data);
    actions a;
    const auto r = g.raft->propose_batch(now, items, a);
    if (r.status == propose_status::ok) {
      answer(list[i], j - i, r.index);  // before handle(): ahead of these entries' applies
      handle(g, a, now);
      i = j;
      continue;
    }
    handle(g, a, now);
    if (r.status == propose_status::not_leader && g.raft->current_role() == role::leader && g.raft->term() == term) {
      // A leadership transfer: refused for now, not lost. Kept, in order, for the next turn.
      for (std::size_t k = i; k < list.size(); ++k) g.held.push_back(std::move(list[k]));
      return;
    }
    answer(list[i], j - i, 0);
    i = j;
  }
  offer_applies(g);
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

void repl_host::snapshot_taken(std::uint64_t group, std::uint64_t index,
                               std::shared_ptr<const std::vector<std::uint8_t>> data) {
  post([this, group, index, data = std::move(data)]() mutable {
    if (!_groups.count(group)) return;
    // A newer one of the same group replaces one still waiting.
    std::erase_if(_snapshot_jobs, [&](const snapshot_job& j) { return j.group == group; });
    _snapshot_jobs.push_back({group, index, std::move(data), {}, 0});
    poll_snapshot_writer(now_ms());
  });
}

void repl_host::poll_snapshot_writer(std::uint64_t now) {
  if (_snapshot_writing) {
    const int state = _snapshot_written.load();
    if (state == 0) return;
    _snapshot_writer.join();
    snapshot_job job = std::move(*_snapshot_writing);
    _snapshot_writing.reset();
    auto it = _groups.find(job.group);
    if (state < 0 || it == _groups.end() || !_journal) {
      if (state < 0) PG_WARN("Replication group {}: snapshot file {} could not be written", job.group, job.file);
      if (_journal) remove_snapshot_file(_journal->snapshot_dir(), job.file);
    } else {
      group_slot& g = it->second;
      const std::uint64_t before = g.store->first_index();
      actions a;
      if (g.raft->take_snapshot(now, job.index, job.data, a, job.file, job.crc)) {
        PG_DEBUG("Replication group {}: snapshot at {}, log {}..{} (was from {})", job.group, job.index,
                 g.store->first_index(), g.store->last_index(), before);
      } else {
        remove_snapshot_file(_journal->snapshot_dir(), job.file);  // older than the group's own
      }
      handle(g, a, now);
    }
  }
  if (_snapshot_jobs.empty() || !_journal || _journal->failed()) return;
  _snapshot_writing = std::move(_snapshot_jobs.front());
  _snapshot_jobs.pop_front();
  snapshot_job& job = *_snapshot_writing;
  job.file = snapshot_file_name(job.group, job.index);
  _snapshot_written = 0;
  _snapshot_writer = std::thread([this, dir = _journal->snapshot_dir(), &job] {
    job.crc = snapshot_crc(*job.data);
    const bool ok = write_snapshot_file(dir, job.file, *job.data).ok();
    _snapshot_written = ok ? 1 : -1;
    const std::uint64_t one = 1;
    (void)!::write(_wake_fd, &one, sizeof one);  // the loop takes it at once
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
