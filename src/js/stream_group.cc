#include "src/js/stream_group.h"

#include <algorithm>

#include "src/core/subject.h"
#include "src/js/consumer_thread.h"

namespace js {

namespace {

// Retention of a remote agent travels as `released` requests (its link), not through here.
class no_release final : public release_sink {
 public:
  void on_released(std::uint64_t) override {}
};
no_release g_no_release;

// What the owner's feed_writer reads of the stream for one remote consumer (its filter).
class filtered_store final : public feed_store {
 public:
  // `lps`: a last_per_subject consumer's start set (sorted): below its end only these.
  filtered_store(storage::stream_store& st, const std::vector<std::string>& f, const std::vector<std::uint64_t>* lps = nullptr)
      : _st(st), _f(f), _lps(lps && !lps->empty() ? lps : nullptr) {}
  std::optional<storage::stored_msg> next_matching(std::uint64_t from) override {
    if (_lps && from <= _lps->back()) {
      for (auto it = std::lower_bound(_lps->begin(), _lps->end(), from); it != _lps->end(); ++it)
        if (auto m = _st.load(*it); m.ok()) return std::move(*m);
      from = _lps->back() + 1;
    }
    auto m = _f.empty() ? _st.load_next("", from) : _f.size() == 1 ? _st.load_next(_f[0], from) : _st.load_next(_f, from);
    if (!m.ok()) return std::nullopt;
    return std::move(*m);
  }
  std::uint64_t last_seq() const override { return _st.last_seq(); }
  // The backlog past a full page, as an upper bound (exact counting would walk the stream at
  // every page); num_pending is exact again once the reader is live.
  std::uint64_t count_matching(std::uint64_t from) override {
    const std::uint64_t last = _st.last_seq(), msgs = _st.state(false).msgs;
    std::uint64_t n = 0;
    if (_lps && from <= _lps->back()) {
      n = std::uint64_t(_lps->end() - std::lower_bound(_lps->begin(), _lps->end(), from));
      from = _lps->back() + 1;
    }
    return std::min<std::uint64_t>(msgs, n + (from > last ? 0 : last - from + 1));
  }

 private:
  storage::stream_store& _st;
  const std::vector<std::string>& _f;
  const std::vector<std::uint64_t>* _lps;
};

class ring_queue final : public feed_queue {
 public:
  explicit ring_queue(base::spsc_ring<feed_entry>& r) : _r(r) {}
  bool try_push(feed_entry& e) override { return _r.try_push(std::move(e)); }

 private:
  base::spsc_ring<feed_entry>& _r;
};

}  // namespace

stream_group::stream_group(group_host& owner, stream_config cfg, std::int64_t created, std::string dir,
                           std::unique_ptr<storage::stream_store> store)
    : _owner(owner), _stream(std::make_unique<js::stream>(*this, std::move(cfg), created, std::move(dir), std::move(store))) {
  _thread.claim();  // made on its owner thread, which alone calls it from now on
  _stream->set_events(this);
  account();  // what a restored stream holds
}

stream_group::~stream_group() {
  _owner.report_usage(_stream->config().storage, -_reported_bytes);
  while (!_remote.empty()) unlink(_remote.back().agent);
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

std::uint64_t stream_group::subscribe_cluster(std::string_view subject, core::internal_handler* h) {
  auto& e = _entries[h];
  if (!e) e = std::make_unique<entry>(*this, h);
  return _owner.subscribe_cluster(subject, e.get());
}

// ---- consumers

consumer_agent& stream_group::add_consumer(const consumer_config& cfg, std::int64_t created, std::string state_dir,
                                           std::int64_t now) {
  PG_ASSERT_OWNER(_thread);
  consumer_thread* ct = runs_remote(cfg) ? _owner.pick_consumer_thread(cfg) : nullptr;
  if (!ct) {
    auto agent = std::make_unique<consumer_agent>(*this, *this, *_stream, cfg, created, std::move(state_dir), now);
    if (_owner.consumers_subscribe_pulls()) agent->own_pulls();
    consumer_agent& ref = *agent;
    _consumers[cfg.name] = std::move(agent);
    enter();
    return ref;
  }
  // Made here (its start sequence is resolved against the store), then run on `ct`: it reads
  // the stream through its link's window, paged from the stream's first message.
  auto agent = std::make_unique<consumer_agent>(*ct, g_no_release, *_stream, cfg, created, std::move(state_dir), now);
  auto& st = _stream->store();
  auto link = std::make_shared<consumer_link>(std::max<std::uint64_t>(1, st.first_seq()), st.last_seq());
  link->group = this;
  link->filters = cfg.match_filters();
  link->lps = agent->lps_start();  // the window pages these, then everything from the stream's end
  link->agent = agent.get();
  std::weak_ptr<consumer_link> weak = link;
  group_host* owner = &_owner;
  link->wake_owner = [owner, weak] {
    owner->post_to_owner([weak] {
      auto l = weak.lock();
      if (!l) return;
      l->owner_woken.store(false);
      if (l->group) l->group->enter();
    });
  };
  link->seed_pending = agent->initial_pending();
  link->interest = remote_interest(agent->start_seq());
  agent->attach(link, ct);
  ct->adopt(link);
  _remote.push_back({agent.get(), ct, std::move(link)});
  consumer_agent& ref = *agent;
  _consumers[cfg.name] = std::move(agent);
  enter();
  return ref;
}

bool stream_group::runs_remote(const consumer_config&) const {
  // Pull and push consumers of every retention and deliver policy (interest and work queues
  // hear from them as `released` requests; last_per_subject's start set, read from the
  // store's subject index here, filters its pages on the owner), and the mirror and source
  // feeds' direct push consumers (flow-controlled, their answers reach the thread too).
  return true;
}

stream_group::remote_consumer* stream_group::remote_of(const consumer_agent* c) {
  for (auto& r : _remote)
    if (r.agent == c) return &r;
  return nullptr;
}

void stream_group::unlink(const consumer_agent* c) {
  auto it = std::find_if(_remote.begin(), _remote.end(), [c](const remote_consumer& r) { return r.agent == c; });
  if (it == _remote.end()) return;
  it->thread->drop(it->link.get());
  it->link->group = nullptr;
  _remote.erase(it);
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
  unlink(c.get());
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
  while (!_remote.empty()) unlink(_remote.back().agent);
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
  std::vector<const consumer_config*> others;
  for (const auto& [name, other] : _consumers)
    if (name != self) others.push_back(&other->config());
  return js::check_workqueue(_stream->config(), c, others);
}

// ---- retention, accounting and the stream's events

void stream_group::account() {
  const auto bytes = std::int64_t(_stream->bytes());
  if (bytes == _reported_bytes) return;
  _owner.report_usage(_stream->config().storage, bytes - _reported_bytes);
  _reported_bytes = bytes;
}

void stream_group::on_stored(std::uint64_t seq, std::string_view subject) {
  for (auto& [n, c] : _consumers)
    if (!c->remote()) c->on_stored(seq, subject);
  if (!_remote.empty()) feed_stored(seq, subject);
  account();
}

// One immutable copy of the message, shared by every remote consumer that is live.
void stream_group::feed_stored(std::uint64_t seq, std::string_view subject) {
  shared_msg m;
  for (auto& r : _remote) {
    if (r.link->writer.state() != feed_writer::mode::live) continue;
    if (!m) {
      auto loaded = _stream->store().load(seq);
      if (!loaded.ok()) return;
      m = std::make_shared<const storage::stored_msg>(std::move(*loaded));
    }
    ring_queue q(r.link->to_consumer);
    r.link->writer.on_stored(m, r.link->matches(subject), q);
    r.notify = true;
  }
}

void stream_group::feed_removed(const std::vector<std::uint64_t>& seqs) {
  for (auto& r : _remote) {
    ring_queue q(r.link->to_consumer);
    if (seqs.empty()) {  // a purge: the reader pages again, the agent drops what went now
      r.link->writer.on_bulk_removed(q);
      consumer_agent* a = r.agent;
      const std::int64_t t = now();
      r.thread->run_sync([a, t] { a->purge_now(t); });
    } else {
      r.link->writer.on_removed(seqs, q);
    }
    r.notify = true;
  }
}

// The remote consumer's reads and releases; the writer's retries; the consumer thread woken
// once per turn for whatever went out.
std::size_t stream_group::pump_remote(remote_consumer& r) {
  consumer_link& l = *r.link;
  ring_queue q(l.to_consumer);
  filtered_store fs(_stream->store(), l.filters, &l.lps);
  const std::size_t before = l.to_consumer.produced();
  std::vector<std::uint64_t> unused;  // releases are applied here, not by the writer
  std::size_t work = l.to_owner.drain([&](feed_request&& req) {
    if (req.t == feed_request::type::released) return apply_released(l, req);
    l.writer.on_request(std::move(req), fs, q, unused);
  });
  work += l.writer.poll(fs, q);
  if (r.notify || l.to_consumer.produced() != before) l.wake_consumer();
  r.notify = false;
  if (l.expired.load() && !r.expired_seen) {  // an inactive ephemeral: the owner deletes it
    r.expired_seen = true;
    _expired.push_back(r.agent->name());
  }
  return work;
}

// A remote consumer's `released` request moves the owner's picture of it; what no consumer
// needs any more goes (interest: once every matching consumer released it; work queue: at once).
void stream_group::apply_released(consumer_link& l, const feed_request& req) {
  if (req.gen != l.release_gen) return;  // sent before a RESET made it need them again
  const remote_interest::change ch = l.interest.apply(req);
  if (_stream->config().retention == retention_policy::limits) return;
  for (std::uint64_t seq : ch.seqs) on_released(seq);
  // Its floor passed these: the ones it never released one by one (a restored state's) too.
  filtered_store fs(_stream->store(), l.filters);
  for (std::uint64_t seq = ch.range_from; seq < ch.range_to;) {
    auto m = fs.next_matching(seq);
    if (!m || m->seq >= ch.range_to) break;
    on_released(m->seq);
    seq = m->seq + 1;
  }
}

void stream_group::settle_remote() {
  for (std::size_t i = 0; i < _remote.size(); ++i) pump_remote(_remote[i]);
}

bool stream_group::still_needs(const consumer_agent& c, std::uint64_t seq) const {
  if (const consumer_link* l = c.feed_link()) return l->interest.needs(seq);
  return c.needs(seq);
}

// A remote consumer's filters as the owner knows them (its link's); the agent's are its thread's.
bool stream_group::matches(const consumer_agent& c, std::string_view subject) {
  if (const consumer_link* l = c.feed_link()) return l->matches(subject);
  return c.filter_matches(subject);
}

bool stream_group::consumer_wants(std::string_view subject) {
  for (auto& [n, c] : _consumers)
    if (matches(*c, subject)) return true;
  return false;
}

void stream_group::on_removed(const std::vector<std::uint64_t>& seqs) {
  const std::int64_t t = now();
  for (auto* c : consumer_list())
    if (!c->remote()) c->on_removed(seqs, t);
  if (!_remote.empty()) feed_removed(seqs);
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
      if (matches(*c, msg->subject) && still_needs(*c, seq)) return;
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
      if (!matches(*c, msg->subject)) continue;
      matched = true;
      needed = needed || still_needs(*c, msg->seq);
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
      if (c->remote()) continue;  // polled on its consumer thread
      work += c->poll(t);
      if (c->expired()) _expired.push_back(c->name());
    }
  }
  for (std::size_t i = 0; i < _remote.size(); ++i) work += pump_remote(_remote[i]);
  account();  // whatever else changed the store (API purges and deletes, limits)
  _last_work = work;
  return work;
}

bool stream_group::busy(std::int64_t) const {
  if (_last_work > 0 || !_expired.empty() || !_retired.empty() || !_stream->idle()) return true;
  for (const auto& [n, c] : _consumers)
    if (!c->remote() && c->awaits_write()) return true;
  for (const auto& r : _remote)  // a page or resync that did not fit the ring yet
    if (r.link->writer.has_pending_read() || r.link->writer.state() == feed_writer::mode::broken) return true;
  return false;
}

std::int64_t stream_group::next_wakeup(std::int64_t t) const {
  std::int64_t next = _stream->next_wakeup(t);
  for (const auto& [n, c] : _consumers)
    if (!c->remote()) next = std::min(next, c->next_wakeup());
  return next;
}

}  // namespace js
