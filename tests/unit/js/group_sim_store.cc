// The group simulation's fake disk (sim_store) and fake host (sim_host).
#include <algorithm>

#include "src/core/subject.h"
#include "tests/unit/js/group_sim.h"

namespace js::sim {

// ---- sim_store -----------------------------------------------------------------------

sim_store::sim_store(sim_disk& disk, std::function<bool()> commit_now, removal_fn removed)
    : _disk(disk), _commit_now(std::move(commit_now)), _removed(std::move(removed)) {
  for (const auto& r : _disk.log) {
    switch (r.k) {
      case disk_record::append: (void)_live.append(r.subject, r.headers, r.payload, r.ts, r.ttl); break;
      case disk_record::remove: (void)_live.remove(r.seq); break;
      case disk_record::purge: (void)_live.purge(r.purge_req); break;
      case disk_record::skip: (void)_live.skip(r.seq); break;
    }
  }
  _disk.durable = _disk.log.size();
  _durable_last = _live.last_seq();
}

void sim_store::record(disk_record r) {
  r.last_after = _live.last_seq();
  _disk.log.push_back(std::move(r));
}

base::result<std::uint64_t> sim_store::append(std::string_view subject, std::string_view headers,
                                              std::string_view payload, std::int64_t ts, std::int64_t ttl) {
  auto seq = _live.append(subject, headers, payload, ts, ttl);
  if (!seq.ok()) return seq;
  disk_record r;
  r.k = disk_record::append;
  r.seq = *seq;
  r.ts = ts;
  r.ttl = ttl;
  r.subject = std::string(subject);
  r.headers = std::string(headers);
  r.payload = std::string(payload);
  record(std::move(r));
  return seq;
}

base::status sim_store::remove(std::uint64_t seq, bool erase) {
  auto st = _live.remove(seq, erase);
  if (!st.ok()) return st;
  disk_record r;
  r.k = disk_record::remove;
  r.seq = seq;
  record(std::move(r));
  if (_removed) _removed(seq, removal_cause::remove);
  return st;
}

base::result<std::uint64_t> sim_store::purge(const storage::purge_request& req) {
  std::vector<std::uint64_t> before;
  for (std::uint64_t s = _live.first_seq();;) {
    auto m = _live.load_next("", s);
    if (!m.ok()) break;
    before.push_back(m->seq);
    s = m->seq + 1;
  }
  auto n = _live.purge(req);
  if (!n.ok()) return n;
  disk_record r;
  r.k = disk_record::purge;
  r.purge_req = req;
  record(std::move(r));
  for (auto seq : before)
    if (!_live.load(seq).ok() && _removed) _removed(seq, removal_cause::purge);
  return n;
}

base::status sim_store::skip(std::uint64_t n) {
  auto st = _live.skip(n);
  if (!st.ok()) return st;
  disk_record r;
  r.k = disk_record::skip;
  r.seq = n;
  record(std::move(r));
  return st;
}

void sim_store::removed_all(const std::vector<std::uint64_t>& seqs, removal_cause cause,
                            std::vector<std::uint64_t>* out) {
  for (auto seq : seqs) {
    disk_record r;
    r.k = disk_record::remove;
    r.seq = seq;
    record(std::move(r));
    if (_removed) _removed(seq, cause);
    if (out) out->push_back(seq);
  }
}

std::uint64_t sim_store::enforce_limits(std::vector<std::uint64_t>* removed) {
  std::vector<std::uint64_t> gone;
  const auto n = _live.enforce_limits(&gone);
  removed_all(gone, removal_cause::limits, removed);
  return n;
}

std::uint64_t sim_store::expire(std::int64_t now_ns, std::vector<std::uint64_t>* removed,
                                const storage::spare_fn& spare) {
  std::vector<std::uint64_t> gone;
  const auto n = _live.expire(now_ns, &gone, spare);
  removed_all(gone, removal_cause::expire, removed);
  return n;
}

void sim_store::commit() {
  if (_disk.crashed) return;
  if (!_disk.lies) _disk.durable = _disk.log.size();
  const std::uint64_t last = _disk.log.empty() ? _durable_last : std::max(_durable_last, _disk.log.back().last_after);
  if (last > _durable_last) {
    _durable_last = last;
    if (_on_durable) _on_durable(last);
  }
}

int sim_store::poll() {
  if (_disk.crashed || _disk.durable == _disk.log.size()) return 0;
  if (!_commit_now()) return 0;
  commit();
  return 1;
}

std::uint64_t sim_store::backlog_bytes() const {
  std::uint64_t n = 0;
  for (std::size_t i = _disk.durable; i < _disk.log.size(); ++i)
    n += 1 + _disk.log[i].subject.size() + _disk.log[i].payload.size();
  return n;
}

base::status sim_store::flush() {
  if (_disk.crashed) return base::errc::io_error;
  commit();
  return {};
}

// ---- sim_host ------------------------------------------------------------------------

sim_host::sim_host() = default;

std::uint64_t sim_host::subscribe(std::string_view subject, std::string_view, core::internal_handler* h) {
  _subs.push_back({++_next_id, std::string(subject), h});
  return _next_id;
}

void sim_host::unsubscribe(std::uint64_t id) {
  std::erase_if(_subs, [id](const sub& s) { return s.id == id; });
}

void sim_host::publish(std::string_view subject, std::string_view reply, std::string_view headers,
                       std::string_view payload) {
  trace_entry e;
  e.k = trace_entry::publish;
  e.to = e.subject = std::string(subject);
  e.reply = std::string(reply);
  e.headers = std::string(headers);
  e.payload = std::string(payload);
  trace.push_back(std::move(e));
}

void sim_host::deliver(std::string_view to, std::string_view subject, std::string_view reply,
                       std::string_view headers, std::string_view payload) {
  trace_entry e;
  e.k = trace_entry::deliver;
  e.to = std::string(to);
  e.subject = std::string(subject);
  e.reply = std::string(reply);
  e.headers = std::string(headers);
  e.payload = std::string(payload);
  trace.push_back(std::move(e));
}

std::size_t sim_host::inject(std::string_view subject, std::string_view reply, std::string_view payload) {
  core::inbound_msg m;
  m.subject = subject;
  m.reply = reply;
  m.payload = payload;
  std::vector<core::internal_handler*> hs;
  for (const auto& s : _subs)
    if (core::subject_matches(s.subject, subject)) hs.push_back(s.h);
  for (auto* h : hs) h->on_msg(m);
  return hs.size();
}

}  // namespace js::sim
