#include "src/js/stream_group.h"

#include <algorithm>

#include "src/core/subject.h"

namespace js {

stream_group::stream_group(group_host& owner, const stream_config& cfg, std::int64_t created, std::string dir,
                           std::unique_ptr<storage::stream_store> store)
    : _owner(owner), _stream(std::make_unique<js::stream>(*this, cfg, created, std::move(dir), std::move(store))) {
  _thread.claim();  // made on its owner thread, which alone calls it from now on
  _stream->set_events(this);
  account();  // what a restored stream holds
}

stream_group::~stream_group() {
  _owner.report_usage(_stream->config().storage, -_reported_bytes);
  _consumers.clear();
  _retired.clear();
  _stream.reset();
}

void stream_group::shutdown_consumers(std::vector<storage::snapshot_file>* batch) {
  for (auto* c : consumer_list()) c->on_shutdown(batch);
}

void stream_group::finish_shutdown(const std::vector<storage::snapshot_file>& batch) {
  for (auto* c : consumer_list()) c->finish_shutdown(batch);
}

// ---- entry point

std::uint64_t stream_group::subscribe(std::string_view subject, std::string_view queue, core::internal_handler* h) {
  auto& e = _entries[h];
  if (!e) e = std::make_unique<entry>(*this, h);
  return _owner.subscribe(subject, queue, e.get());
}

// ---- consumers

consumer_agent& stream_group::add_consumer(const consumer_config& cfg, std::int64_t created, std::string state_dir,
                                           std::int64_t now) {
  PG_ASSERT_OWNER(_thread);
  auto agent = std::make_unique<consumer_agent>(*this, *this, *_stream, cfg, created, std::move(state_dir), now);
  consumer_agent& ref = *agent;
  _consumers[cfg.name] = std::move(agent);
  enter();
  return ref;
}

consumer_agent* stream_group::find_consumer(std::string_view name) {
  PG_ASSERT_OWNER(_thread);
  auto it = _consumers.find(name);
  return it == _consumers.end() ? nullptr : it->second.get();
}

std::unique_ptr<consumer_agent> stream_group::take_consumer(std::string_view name) {
  PG_ASSERT_OWNER(_thread);
  auto it = _consumers.find(name);
  if (it == _consumers.end()) return nullptr;
  auto c = std::move(it->second);
  _consumers.erase(it);
  return c;
}

void stream_group::retire_consumer(std::unique_ptr<consumer_agent> c) {
  consumer_agent& gone = *c;
  _retired.push_back(std::move(c));
  gone.on_delete();
  if (_stream->config().retention == retention_policy::interest) drop_unneeded();
  enter();  // the retired agent is freed on the next poll
}

void stream_group::delete_consumers() {
  auto all = std::move(_consumers);
  _consumers.clear();
  std::vector<consumer_agent*> list;
  for (auto& [n, c] : all) {
    list.push_back(c.get());
    _retired.push_back(std::move(c));
  }
  for (auto* c : list) {
    c->on_delete();
    c->wait_state_written();  // the stream's directory goes next
  }
  enter();
}

std::vector<consumer_agent*> stream_group::consumer_list() const {
  std::vector<consumer_agent*> out;
  out.reserve(_consumers.size());
  for (const auto& [n, c] : _consumers) out.push_back(c.get());
  return out;
}

std::size_t stream_group::consumer_count() const {
  std::size_t n = 0;
  for (const auto& [name, c] : _consumers) n += c->config().direct ? 0 : 1;
  return n;
}

std::optional<api_error> stream_group::check_workqueue(const consumer_config& c, const std::string& self) const {
  if (_stream->config().retention != retention_policy::workqueue) return std::nullopt;
  // flow_control (2.14) is what durable sourcing of a work queue uses (ADR-58).
  if (c.ack != ack_policy::explicit_ && c.ack != ack_policy::flow_control)
    return make_error(err::wq_requires_explicit_ack);
  const auto mine = c.filters();
  for (const auto& [name, other] : _consumers) {
    if (name == self) continue;
    if (mine.empty()) return make_error(err::wq_multiple_unfiltered);
    const auto theirs = other->config().filters();
    if (theirs.empty()) return make_error(err::wq_consumer_not_unique);
    for (const auto& a : mine)
      for (const auto& b : theirs)
        if (core::subjects_overlap(a, b)) return make_error(err::wq_consumer_not_unique);
  }
  if (c.deliver != deliver_policy::all) return make_error(err::wq_consumer_not_deliver_all);
  return std::nullopt;
}

// ---- retention, accounting and the stream's events

void stream_group::account() {
  const auto bytes = std::int64_t(_stream->bytes());
  if (bytes == _reported_bytes) return;
  _owner.report_usage(_stream->config().storage, bytes - _reported_bytes);
  _reported_bytes = bytes;
}

void stream_group::on_stored(std::uint64_t seq, std::string_view subject) {
  for (auto& [n, c] : _consumers) c->on_stored(seq, subject);
  account();
}

bool stream_group::consumer_wants(std::string_view subject) {
  for (auto& [n, c] : _consumers)
    if (c->filter_matches(subject)) return true;
  return false;
}

void stream_group::on_removed(const std::vector<std::uint64_t>& seqs) {
  const std::int64_t t = now();
  for (auto* c : consumer_list()) c->on_removed(seqs, t);
  account();
}

void stream_group::on_released(std::uint64_t seq) {
  const auto retention = _stream->config().retention;
  if (retention == retention_policy::limits) return;
  auto& st = _stream->store();
  if (retention == retention_policy::interest) {
    auto msg = st.load(seq);
    if (!msg.ok()) return;
    for (auto& [n, c] : _consumers)
      if (c->filter_matches(msg->subject) && c->needs(seq)) return;
  }
  (void)st.remove(seq);
  account();
}

void stream_group::drop_unneeded() {
  auto& st = _stream->store();
  std::vector<std::uint64_t> drop;
  for (std::uint64_t seq = st.first_seq();;) {
    auto msg = st.load_next("", seq);
    if (!msg.ok()) break;
    bool matched = false, needed = false;
    for (auto& [n, c] : _consumers) {
      if (!c->filter_matches(msg->subject)) continue;
      matched = true;
      needed = needed || c->needs(msg->seq);
    }
    // A work queue keeps what no consumer matches (it waits for one); interest does not.
    const bool wq = _stream->config().retention == retention_policy::workqueue;
    if (!needed && (matched || !wq)) drop.push_back(msg->seq);
    seq = msg->seq + 1;
  }
  for (auto seq : drop) (void)st.remove(seq);
  account();
}

void stream_group::consumers_restored() {
  if (_stream->config().retention == retention_policy::limits || _consumers.empty()) return;
  drop_unneeded();
}

// ---- polling

std::size_t stream_group::poll(std::int64_t t) {
  PG_ASSERT_OWNER(_thread);
  for (const auto& c : _retired) {
    _entries.erase(c.get());
    _entries.erase(const_cast<core::internal_handler*>(c->flow_control_handler()));
  }
  _retired.clear();
  std::size_t work = _stream->poll(t);
  if (!_consumers.empty()) {
    _poll_list = consumer_list();  // handlers may add or remove consumers meanwhile
    for (consumer_agent* c : _poll_list) {
      work += c->poll(t);
      if (c->expired()) _expired.push_back(c->name());
    }
  }
  account();  // whatever else changed the store (API purges and deletes, limits)
  _last_work = work;
  return work;
}

bool stream_group::busy(std::int64_t) const {
  if (_last_work > 0 || !_expired.empty() || !_retired.empty() || !_stream->idle()) return true;
  for (const auto& [n, c] : _consumers)
    if (c->awaits_write()) return true;
  return false;
}

std::int64_t stream_group::next_wakeup(std::int64_t t) const {
  std::int64_t next = _stream->next_wakeup(t);
  for (const auto& [n, c] : _consumers) next = std::min(next, c->next_wakeup());
  return next;
}

}  // namespace js
