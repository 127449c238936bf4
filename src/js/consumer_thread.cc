#include "src/js/consumer_thread.h"

#include <unistd.h>

#include <algorithm>

#include "src/js/consumer_agent.h"

namespace js {

thread_local const consumer_thread* consumer_thread::t_standing_in = nullptr;

bool consumer_thread::start(core::service_host& host, std::string&) {
  _host = &host;
  _domain = host.options().js_domain;
  _wake_fd.store(host.wake_eventfd());
  _wake_host.store(&host);
  _tid.store(std::this_thread::get_id());
  host.add_poller(this);
  return true;
}

void consumer_thread::stop() {
  // Owners stopping after this thread run their calls themselves (nothing runs here now).
  std::lock_guard lk(_mu);
  for (task* t : _tasks) {
    (*t->fn)();
    t->done = true;
  }
  _tasks.clear();
  _stopped = true;
  _cv.notify_all();
}

void consumer_thread::signal() {
  if (const int fd = _wake_fd.load(); fd >= 0) {
    const std::uint64_t one = 1;
    (void)!::write(fd, &one, sizeof one);
  } else if (core::service_host* h = _wake_host.load()) {
    h->call([] {});  // the loop's doorbell
  }
}

void consumer_thread::run_sync(const std::function<void()>& fn) {
  if (on_thread()) return fn();
  std::unique_lock lk(_mu);
  if (_stopped) {  // the thread is gone: the caller runs it, as this thread would
    lk.unlock();
    const consumer_thread* was = t_standing_in;
    t_standing_in = this;
    fn();
    t_standing_in = was;
    return;
  }
  task t{&fn};
  _tasks.push_back(&t);
  lk.unlock();
  signal();
  lk.lock();
  _cv.wait(lk, [&] { return t.done; });
}

std::size_t consumer_thread::run_tasks() {
  std::vector<task*> mine;
  {
    std::lock_guard lk(_mu);
    if (_tasks.empty()) return 0;
    mine.swap(_tasks);
  }
  for (task* t : mine) (*t->fn)();
  std::lock_guard lk(_mu);
  for (task* t : mine) t->done = true;
  _cv.notify_all();
  return mine.size();
}

void consumer_thread::adopt(std::shared_ptr<consumer_link> link) {
  link->wake_consumer = [this] { signal(); };
  run_sync([this, &link] { _links.push_back(std::move(link)); });
}

void consumer_thread::drop(consumer_link* link) {
  run_sync([this, link] {
    if (link->agent) link->agent->unsubscribe_all();
    link->agent = nullptr;
    std::erase_if(_links, [link](const auto& l) { return l.get() == link; });
  });
}

// The entries from the owner into the reader (telling the agent what was stored and
// removed), the reader's requests back, the agent's floor into the reader.
std::size_t consumer_thread::pump(consumer_link& l, std::int64_t now) {
  std::size_t work = 0;
  consumer_agent* a = l.agent;
  std::vector<std::pair<std::uint64_t, std::string>> stored;
  std::vector<std::uint64_t> removed;
  work += l.to_consumer.drain([&](feed_entry&& e) {
    if (e.t == feed_entry::type::stored || e.t == feed_entry::type::page)
      for (const auto& m : e.msgs) stored.emplace_back(m->seq, m->subject);
    if (e.t == feed_entry::type::removed) removed.insert(removed.end(), e.seqs.begin(), e.seqs.end());
    if (e.t == feed_entry::type::page || e.t == feed_entry::type::stored) l.last_seq = std::max(l.last_seq, e.upto);
    l.reader.on_entry(std::move(e));
  });
  if (a && l.started) {
    for (const auto& [seq, subject] : stored) a->on_stored(seq, subject);
    if (!removed.empty()) a->on_removed(removed, now);
    work += a->poll(now);
    if (a->expired() && !l.expired.exchange(true)) l.wake_owner();
    l.reader.forget_below(a->ack_floor_seq() + 1);
  }
  if (a && l.started) l.reader.release_below(a->needed_from());
  l.send_requests();
  return work;
}

std::size_t consumer_thread::poll(base::nanos now) {
  std::size_t work = run_tasks();
  const std::int64_t wall = _host->clk().wall_ns();
  std::int64_t next = INT64_MAX;
  for (std::size_t i = 0; i < _links.size(); ++i) {  // an agent's call may add or drop links
    auto keep = _links[i];
    work += pump(*keep, wall);
    if (keep->agent) next = std::min(next, keep->agent->next_wakeup());
  }
  _next_wakeup = next;
  (void)now;
  return work;
}

base::nanos consumer_thread::idle_limit(base::nanos) {
  if (_next_wakeup == INT64_MAX) return 0;
  const std::int64_t d = _next_wakeup - _host->clk().wall_ns();
  return d <= 0 ? 1 : d;
}

}  // namespace js
