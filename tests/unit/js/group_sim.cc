// The group simulation's driver: the seeded configuration, the actions a step picks from,
// restarts (crash or clean; their checks are in group_sim_restart.cc) and the drain phase.
// The model's replay of what the groups did and the invariants are in group_sim_check.cc.
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>

#include "src/core/subject.h"
#include "storage/consumer_state.h"
#include "tests/unit/js/group_sim_model.h"

namespace js::sim {

namespace fs = std::filesystem;

namespace {
constexpr std::int64_t kMs = base::kMilli;
constexpr std::int64_t kSec = base::kSecond;
constexpr unsigned kSettlePolls = 6;  // polls per step at most: durability may lag steps
}  // namespace

simulation::simulation(const sim_options& o) : _o(o), _rng(o.seed * 0x9e3779b97f4a7c15ull + 17) {
  std::string root = o.dir;
  if (root.empty()) root = fs::is_directory("/dev/shm") ? "/dev/shm" : "/tmp";
  _dir = root + "/peregrine-group-sim-" + std::to_string(::getpid()) + "-" + std::to_string(o.seed);
  std::error_code ec;
  fs::remove_all(_dir, ec);
  fs::create_directories(_dir, ec);
}

simulation::~simulation() {
  for (auto& s : _streams) s->group.reset();
  std::error_code ec;
  fs::remove_all(_dir, ec);
}

bool simulation::fail(const std::string& why) {
  if (_r.failure.empty()) _r.failure = "step " + std::to_string(_step) + ": " + why;
  return false;
}

// ---- configuration -------------------------------------------------------------------

void simulation::configure() {
  const std::size_t n = 1 + _rng.below(std::max(1u, _o.max_streams));
  for (std::size_t i = 0; i < n && !failed(); ++i) add_stream(i);
}

void simulation::add_stream(std::size_t idx) {
  auto sp = std::make_unique<model_stream>();
  model_stream& s = *sp;
  s.idx = idx;
  s.name = "S" + std::to_string(idx);
  s.prefix = "s" + std::to_string(idx);
  static constexpr const char* kRetention[] = {"limits", "interest", "workqueue"};
  std::string body = R"({"name":")" + s.name + R"(","subjects":[")" + s.prefix + R"(.>"],"storage":"file")";
  body += R"(,"retention":")" + std::string(kRetention[_rng.below(3)]) + "\"";
  body += R"(,"discard":")" + std::string(_rng.chance(0.3) ? "new" : "old") + "\"";
  if (_rng.chance(0.4)) body += R"(,"max_msgs":)" + std::to_string(5 + _rng.below(40));
  if (_rng.chance(0.25)) body += R"(,"max_bytes":)" + std::to_string(400 + _rng.below(3000));
  if (_rng.chance(0.2)) body += R"(,"max_age":)" + std::to_string((1 + _rng.below(8)) * kSec);
  body += "}";
  if (parse_stream_config(body, s.cfg) || normalise(s.cfg) || validate(s.cfg)) {
    fail("stream config refused: " + body);
    return;
  }
  _r.config += body + "\n";
  s.disk.lies = _o.disk_lies;
  s.commit_chance = 0.05 + 0.95 * double(_rng.below(1000)) / 1000.0;
  s.created = now();
  fs::create_directories(_dir + "/" + s.name);
  _streams.push_back(std::move(sp));
  open_group(s);
  const unsigned consumers = 1 + unsigned(_rng.below(3));
  for (unsigned i = 0; i < consumers && !failed(); ++i) add_consumer(s, i, consumers);
}

void simulation::add_consumer(model_stream& s, std::size_t idx, unsigned n) {
  model_consumer c;
  c.name = "C" + std::to_string(idx);
  c.push = _rng.chance(0.35);
  static constexpr const char* kSubj[] = {"a", "b", "c"};
  if (s.cfg.retention == retention_policy::workqueue) {
    // Work queues need filters that do not overlap: one unfiltered consumer or one per subject.
    if (n > 1 || _rng.chance(0.5)) c.filter = s.prefix + "." + kSubj[idx];
  } else if (_rng.chance(0.4)) {
    c.filter = s.prefix + "." + kSubj[_rng.below(3)];
  }
  static constexpr std::int64_t kMaxDeliver[] = {-1, -1, 1, 2, 3, 5};
  std::string cfg = R"({"durable_name":")" + c.name + R"(","ack_policy":"explicit")";
  cfg += R"(,"ack_wait":)" + std::to_string((1 + _rng.below(4)) * kSec);
  cfg += R"(,"max_deliver":)" + std::to_string(kMaxDeliver[_rng.below(6)]);
  if (_rng.chance(0.3)) cfg += R"(,"max_ack_pending":)" + std::to_string(1 + _rng.below(8));
  if (!c.filter.empty()) cfg += R"(,"filter_subject":")" + c.filter + "\"";
  if (c.push) {
    c.deliver_subject = "push." + s.name + "." + c.name;
    cfg += R"(,"deliver_subject":")" + c.deliver_subject + "\"";
  }
  cfg += "}";
  create_request r;
  const std::string body = R"({"stream_name":")" + s.name + R"(","config":)" + cfg + "}";
  if (parse_create_request(body, r) || normalise(r.config, s.cfg, false) || validate(r.config, s.cfg)) {
    fail("consumer config refused: " + body);
    return;
  }
  if (auto e = s.group->check_workqueue(r.config, c.name)) {
    fail("work-queue consumer refused: " + body);
    return;
  }
  _r.config += "  " + cfg + "\n";
  c.cfg = r.config;
  c.ack_wait = c.cfg.ack_wait;
  c.max_deliver = c.cfg.max_deliver;
  c.max_ack_pending = c.cfg.max_ack_pending;
  c.state_dir = _dir + "/" + s.name + "/obs/" + c.name;
  fs::create_directories(c.state_dir);
  c.next = std::max<std::uint64_t>(1, s.first());
  c.floor_s = c.next - 1;
  c.listening = c.push && _rng.chance(0.7);
  if (c.listening) _host.listeners[c.deliver_subject] = 1;
  s.consumers.push_back(std::move(c));
  const model_consumer& mc = s.consumers.back();
  s.group->add_consumer(mc.cfg, now(), mc.state_dir, now()).start(nullptr, now());
}

void simulation::open_group(model_stream& s) {
  const std::size_t idx = s.idx;
  auto store = std::make_unique<sim_store>(
      s.disk, [this, &s] { return _rng.chance(s.commit_chance); },
      [this, idx](std::uint64_t seq, removal_cause cause) {
        trace_entry e;
        e.k = trace_entry::removal;
        e.stream = idx;
        e.seq = seq;
        e.cause = cause;
        _host.trace.push_back(std::move(e));
      });
  s.group = std::make_unique<stream_group>(_host, s.cfg, s.created, _dir + "/" + s.name, std::move(store));
  s.group->get_stream().subscribe();
}

// ---- actions -------------------------------------------------------------------------

void simulation::publish(model_stream& s) {
  replay_trace();  // the model first catches up with what the last action caused
  static constexpr const char* kSubj[] = {"a", "b", "c"};
  const std::string subject = s.prefix + "." + kSubj[_rng.below(3)];
  const std::uint64_t id = ++_ids;
  std::string payload = "m" + std::to_string(id) + ":";
  payload.append(_rng.below(80), char('a' + id % 26));
  const std::string reply = "_INBOX.pub." + std::to_string(id);
  expected_ack x{s.idx, 0, 0};
  bool wanted = s.cfg.retention != retention_policy::interest;
  for (const auto& c : s.consumers) wanted = wanted || c.matches(subject);
  const std::uint64_t size = 30 + subject.size() + payload.size();
  if (!wanted) {
    x.seq = ++s.last;  // interest retention, nobody interested: the sequence is consumed
  } else if (s.cfg.discard == discard_policy::new_msgs &&
             ((s.cfg.max_msgs > 0 && s.msgs.size() >= std::uint64_t(s.cfg.max_msgs)) ||
              (s.cfg.max_bytes > 0 && s.bytes + size > std::uint64_t(s.cfg.max_bytes)))) {
    x.error = 10077;
  } else {
    x.seq = ++s.last;
    model_msg m{subject, payload, now(), size, false};
    s.msgs[x.seq] = m;
    s.history[x.seq] = m;
    s.bytes += size;
  }
  _pubacks[reply] = x;
  if (_host.inject(subject, reply, payload) != 1) fail("publish to " + subject + " reached no stream");
}

void simulation::pull(model_stream& s, model_consumer& c, std::uint64_t batch, std::int64_t expires) {
  replay_trace();  // the model first catches up with what the last action caused
  const std::string reply = "_INBOX.pull." + s.name + "." + c.name + "." + std::to_string(++_ids);
  _host.listeners[reply] = 1;
  c.requests[reply] = {batch, expires > 0 ? now() + expires : 0};
  std::string body = R"({"batch":)" + std::to_string(batch);
  if (expires > 0) body += R"(,"expires":)" + std::to_string(expires);
  body += "}";
  const std::string subject = "$JS.API.CONSUMER.MSG.NEXT." + s.name + "." + c.name;
  core::inbound_msg m;
  m.subject = subject;
  m.reply = reply;
  m.payload = body;
  s.group->enter();  // as the hub routes MSG.NEXT to the consumer's group
  s.group->find_consumer(c.name)->on_pull_request(m, now());
}

namespace {
enum class ack_op { ack, ack_sync, nak, nak_delay, progress, term };
}

void simulation::ack(model_stream& s, model_consumer& c) {
  replay_trace();  // the model first catches up with what the last action caused
  if (c.inbox.empty()) return;
  const std::size_t i = _rng.below(c.inbox.size());
  const held_msg h = c.inbox[i];
  const auto roll = _rng.below(100);
  const ack_op op = roll < 45 ? ack_op::ack : roll < 60 ? ack_op::ack_sync : roll < 72 ? ack_op::nak
                  : roll < 77 ? ack_op::nak_delay : roll < 90 ? ack_op::progress : ack_op::term;
  const std::uint64_t seq = h.sseq;
  const bool delivered = seq < c.next;
  std::string body;
  std::int64_t delay = 0;
  auto settle_msg = [&] { settle_ack(s, c, seq); };
  switch (op) {
    case ack_op::ack:
    case ack_op::ack_sync:
      body = "+ACK";
      if (delivered) settle_msg();
      ++_r.acked;
      break;
    case ack_op::term:
      body = "+TERM";
      settle_msg();
      break;
    case ack_op::nak:
    case ack_op::nak_delay: {
      if (op == ack_op::nak_delay) {
        delay = (1 + std::int64_t(_rng.below(20))) * 100 * kMs;
        body = R"(-NAK {"delay":)" + std::to_string(delay) + "}";
      } else {
        body = "-NAK";
      }
      auto it = c.pending.find(seq);
      if (it == c.pending.end()) break;
      if (delay > 0) {
        it->second.due = false;
        it->second.at = now() + delay - c.ack_wait;
      } else {
        it->second.at = now() - c.ack_wait;
        if (c.max_deliver > 0 && it->second.dc >= std::uint64_t(c.max_deliver)) c.to_maxed(seq);
        else c.make_due(seq);
      }
      break;
    }
    case ack_op::progress: {
      body = "+WPI";
      auto it = c.pending.find(seq);
      if (it != c.pending.end()) {
        it->second.due = false;
        it->second.at = now();
      }
      break;
    }
  }
  std::string reply;
  if (op == ack_op::ack_sync || (op != ack_op::ack && _rng.chance(0.2))) {
    reply = "_INBOX.ack." + std::to_string(++_ids);
    // The server answers an ack of a message it delivered (after the state is written).
    if (delivered) {
      const std::size_t ci = std::size_t(&c - s.consumers.data());
      _sync_acks[reply] = {s.idx, ci, seq, op == ack_op::ack_sync || op == ack_op::term};
    }
  }
  if (op != ack_op::progress) c.inbox.erase(c.inbox.begin() + std::ptrdiff_t(i));
  if (_o.trace) std::printf("  ack %s %s seq %llu: %s\n", s.name.c_str(), c.name.c_str(), (unsigned long long)seq, body.c_str());
  if (_host.inject(h.ack, reply, body) != 1) fail("ack " + h.ack + " reached no consumer");
}

// +ACK of a delivered message, or +TERM: it leaves pending (or the kept max_deliver set)
// and is released to retention.
void simulation::settle_ack(model_stream& s, model_consumer& c, std::uint64_t seq) {
  if (c.pending.count(seq)) {
    c.leave(seq);
  } else if (!c.maxed.erase(seq)) {
    return;
  }
  c.rdc.erase(seq);
  c.done.insert(seq);
  s.release(seq);
}

void simulation::purge(model_stream& s) {
  replay_trace();  // the model first catches up with what the last action caused
  storage::purge_request pr;
  static constexpr const char* kSubj[] = {"a", "b", "c"};
  const auto kind = _rng.below(5);
  if (kind == 1 || kind == 3) pr.filter = s.prefix + "." + kSubj[_rng.below(3)];
  if (kind == 2 || kind == 3) pr.keep = 1 + _rng.below(5);
  if (kind == 4) pr.seq = s.first() + _rng.below(s.last - s.first() + 2);
  std::vector<std::uint64_t> matching, gone;
  for (const auto& [seq, m] : s.msgs)
    if (pr.filter.empty() || core::subject_matches(pr.filter, m.subject)) matching.push_back(seq);
  if (pr.seq > 0) {
    for (auto seq : matching)
      if (seq < pr.seq) gone.push_back(seq);
  } else {
    const std::size_t keep = std::min<std::size_t>(pr.keep, matching.size());
    gone.assign(matching.begin(), matching.end() - std::ptrdiff_t(keep));
  }
  for (auto seq : gone) {
    s.erase(seq);
    s.expect_removed[seq] = removal_cause::purge;
    s.removed_ever.insert(seq);
  }
  if (_o.trace)
    std::printf("  purge %s filter '%s' keep %llu seq %llu: %zu\n", s.name.c_str(), pr.filter.c_str(),
                (unsigned long long)pr.keep, (unsigned long long)pr.seq, gone.size());
  // As the STREAM.PURGE handler: purge, make it durable, then tell the consumers.
  auto& st = s.group->get_stream();
  auto n = st.store().purge(pr);
  if (!n.ok() || *n != gone.size()) {
    fail("purge removed " + std::to_string(n.ok() ? *n : 0) + ", the model " + std::to_string(gone.size()));
    return;
  }
  (void)st.store().flush();
  if (*n > 0) {
    s.purged_notify();
    st.notify_removed({});
  }
}

void simulation::delete_msg(model_stream& s) {
  replay_trace();  // the model first catches up with what the last action caused
  if (s.msgs.empty()) return;
  auto it = s.msgs.begin();
  std::advance(it, std::ptrdiff_t(_rng.below(s.msgs.size())));
  const std::uint64_t seq = it->first;
  s.erase(seq);
  s.expect_removed[seq] = removal_cause::remove;
  s.removed_ever.insert(seq);
  s.removed_notify(seq);
  if (_o.trace) std::printf("  delete %s seq %llu\n", s.name.c_str(), (unsigned long long)seq);
  // As the STREAM.MSG.DELETE handler.
  auto& st = s.group->get_stream();
  if (!st.store().remove(seq, _rng.chance(0.5)).ok()) {
    fail("delete of stored seq " + std::to_string(seq) + " failed");
    return;
  }
  (void)st.store().flush();
  st.notify_removed({seq});
}

void simulation::step() {
  model_stream& s = *_streams[_rng.below(_streams.size())];
  model_consumer* c = s.consumers.empty() ? nullptr : &s.consumers[_rng.below(s.consumers.size())];
  const auto roll = _rng.below(1000);
  if (roll < 300) {
    const auto n = 1 + _rng.below(_rng.chance(0.2) ? 6 : 1);
    for (std::uint64_t i = 0; i < n; ++i) publish(s);
  } else if (roll < 420) {
    if (c && !c->push && c->requests.size() < 3)
      pull(s, *c, 1 + _rng.below(5), _rng.chance(0.5) ? 0 : std::int64_t(200 + _rng.below(2800)) * kMs);
  } else if (roll < 670) {
    if (c) ack(s, *c);
  } else if (roll < 800) {
    _host.clock.advance(std::int64_t(1 + _rng.below(100)) * kMs);
  } else if (roll < 860) {
    _host.clock.advance(std::int64_t(500 + _rng.below(3500)) * kMs);
  } else if (roll < 900) {
    if (c && c->push) {
      c->listening = !c->listening;
      if (c->listening) _host.listeners[c->deliver_subject] = 1;
      else _host.listeners.erase(c->deliver_subject);
    }
  } else if (roll < 930) {
    if (c && !c->inbox.empty()) c->inbox.erase(c->inbox.begin());  // the client forgets one
  } else if (roll < 955) {
    if (_o.purges) purge(s);
  } else if (roll < 980) {
    if (_o.deletes) delete_msg(s);
  } else if (_o.restarts) {
    restart(s, _o.crashes && _rng.chance(0.6));
  }
}

// ---- restarts ------------------------------------------------------------------------

void simulation::restart(model_stream& s, bool crash) {
  ++_r.restarts;
  if (_o.trace) std::printf("  restart %s (%s)\n", s.name.c_str(), crash ? "crash" : "clean");
  if (crash) {
    ++_r.crashes;
    s.disk.crashed = true;
    s.group.reset();
    _host.trace.clear();  // what the dying server still sent reached nobody
    s.disk.crash_and_truncate();
    std::erase_if(_pubacks, [&](const auto& kv) { return kv.second.stream == s.idx; });
    std::erase_if(_sync_acks, [&](const auto& kv) { return kv.second.stream == s.idx; });
  } else {
    _shutting_down = true;
    s.group->shutdown_consumers();
    s.group.reset();
    replay_trace();
    _shutting_down = false;
    for (const auto& [reply, x] : _pubacks)
      if (x.stream == s.idx) fail("clean shutdown of " + s.name + " left " + reply + " without its PubAck");
    for (const auto& [reply, x] : _sync_acks)
      if (x.stream == s.idx) fail("clean shutdown of " + s.name + " left ack " + reply + " unanswered");
  }
  // Pull requests die with the server; clients keep what they received and resubscribe.
  for (auto& c : s.consumers) {
    for (const auto& [reply, r] : c.requests) _host.listeners.erase(reply);
    c.requests.clear();
  }
  if (failed()) return;
  std::vector<storage::consumer_state> saved;
  for (auto& c : s.consumers) {
    auto fcs = storage::file_consumer_store::open(c.state_dir, "state");
    if (!fcs.ok()) {
      fail("consumer " + c.name + " state unreadable after restart");
      return;
    }
    saved.push_back((*fcs)->state());
  }
  // What the hub does at startup: the store reopened, the group, then each consumer.
  const std::size_t idx = s.idx;
  auto store = std::make_unique<sim_store>(
      s.disk, [this, &s] { return _rng.chance(s.commit_chance); },
      [this, idx](std::uint64_t seq, removal_cause cause) {
        trace_entry e;
        e.k = trace_entry::removal;
        e.stream = idx;
        e.seq = seq;
        e.cause = cause;
        _host.trace.push_back(std::move(e));
      });
  reconcile_stream(s, *store, crash);
  for (std::size_t i = 0; i < s.consumers.size() && !failed(); ++i)
    reconcile_consumer(s, s.consumers[i], saved[i], crash);
  if (failed()) return;
  s.group = std::make_unique<stream_group>(_host, s.cfg, s.created, _dir + "/" + s.name, std::move(store));
  s.group->get_stream().subscribe();
  _reopening = true;  // limits and age applied at open: no consumer is there to hear of it
  replay_trace();
  _reopening = false;
  // A consumer that had delivered nothing starts afresh at the first message left after that.
  for (std::size_t i = 0; i < s.consumers.size(); ++i) {
    if (saved[i].delivered.stream != 0) continue;
    auto& c = s.consumers[i];
    c.next = std::max<std::uint64_t>(1, s.first());
    c.floor_c = c.seen_floor_c = 0;
    c.floor_s = c.seen_floor_s = c.next - 1;
  }
  for (const auto& c : s.consumers) s.group->add_consumer(c.cfg, s.created, c.state_dir, now()).start(nullptr, now());
  // As jetstream::load_consumers: retention drops what the restored consumers no longer need.
  std::vector<std::uint64_t> unneeded;
  for (const auto& [seq, m] : s.msgs) {
    if (s.cfg.retention == retention_policy::limits || s.consumers.empty()) break;
    bool matched = false, needed = false;
    for (const auto& c : s.consumers) {
      if (!c.matches(m.subject)) continue;
      matched = true;
      needed = needed || c.needs(seq);
    }
    if (!needed && (matched || s.cfg.retention == retention_policy::interest)) unneeded.push_back(seq);
  }
  replay_trace();  // what the starts delivered, before the model removes anything
  for (auto seq : unneeded) {
    s.erase(seq);
    s.expect_removed[seq] = removal_cause::remove;
  }
  s.group->consumers_restored();
}

// ---- the loop ------------------------------------------------------------------------

void simulation::settle() {
  for (unsigned i = 0; i < kSettlePolls; ++i) {
    bool any = false;
    for (auto& s : _streams) {
      if (!s->group) continue;
      if (s->group->busy(now()) || s->group->next_wakeup(now()) <= now()) {
        s->group->poll(now());
        any = true;
      }
      // What a crash keeps of a consumer must not depend on the writer thread's timing.
      for (const auto& [name, c] : s->group->consumers()) c->wait_state_written();
    }
    if (!any) break;
  }
}

void simulation::drain() {
  for (unsigned round = 0; round < 400 && !failed(); ++round) {
    ++_step;
    const std::uint64_t delivered = _r.delivered;
    for (auto& s : _streams) {
      for (auto& c : s->consumers) {
        if (c.push && !c.listening) {
          c.listening = true;
          _host.listeners[c.deliver_subject] = 1;
        }
        if (!c.push && c.requests.empty()) pull(*s, c, 64, 0);
        while (!c.inbox.empty() && !failed()) {
          replay_trace();
          if (c.inbox.empty()) break;
          const held_msg h = c.inbox.back();
          c.inbox.pop_back();
          if (h.sseq < c.next) settle_ack(*s, c, h.sseq);
          ++_r.acked;
          if (_host.inject(h.ack, "", "+ACK") != 1) fail("ack " + h.ack + " reached no consumer");
        }
      }
    }
    settle();
    replay_trace();
    check();
    bool quiet = _pubacks.empty();
    for (auto& s : _streams)
      for (auto& c : s->consumers) quiet = quiet && c.pending.empty() && c.inbox.empty() && !available(*s, c);
    if (quiet) break;
    if (_r.delivered == delivered) _host.clock.advance(500 * kMs);
  }
  if (!failed()) check_drained();
}

sim_report simulation::run() {
  configure();
  settle();
  replay_trace();
  check();
  for (_step = 1; _step <= _o.steps && !failed(); ++_step) {
    if (_o.trace) std::printf("step %llu at %lld ms\n", (unsigned long long)_step, (long long)(now() / kMs) % 1000000);
    step();
    settle();
    replay_trace();
    check();
  }
  _r.steps = _step - 1;
  if (!failed()) drain();
  _r.ok = !failed();
  return _r;
}

sim_report run_group_simulation(const sim_options& options) {
  simulation sim(options);
  return sim.run();
}

}  // namespace js::sim
