// Seeded randomized run against a small model: every delivery, status, advisory and
// release is checked as it comes out, and the reported numbers after every step.
// Reproduce a failure with PG_SEED=<seed printed on stderr>.
#include <chrono>
#include <cstdio>
#include <cstdlib>

#include "src/base/rng.h"
#include "tests/unit/js_consumer/fixture.h"

namespace js::test {
namespace {

using base::kMilli;
using base::kSecond;

struct model_msg {
  std::uint64_t dc = 0;
  base::nanos allowed_at = 0;  // earliest legal redelivery
  std::uint64_t dseq = 0;
};

struct model_req {
  std::int64_t n = 0;
  std::int64_t b = 0;
  bool has_bytes = false;
  bool alive = true;
  std::string id;
  int priority = 0;
};

class random_run {
 public:
  random_run(std::uint64_t seed, bool push) : _r(seed), _push(push) {}

  void run(int steps) {
    _p = explicit_params();
    _p.max_waiting = 8;
    _p.ack_wait = (1 + base::nanos(_r.below(3))) * kSecond;
    if (_r.chance(0.4)) {
      _p.backoff = {500 * kMilli, 1 * kSecond, 3 * kSecond};
      _p.ack_wait = _p.backoff[0];
    }
    const std::int64_t md[] = {-1, 2, 3, 5};
    _p.max_deliver = md[_r.below(4)];
    const std::int64_t map[] = {-1, 3, 10, 1000};
    _p.max_ack_pending = map[_r.below(4)];
    if (_r.chance(0.5)) _h.store.filter = [](const std::string& s) { return s == "s.a"; };
    if (_r.chance(0.3)) _p.ack = ack_policy::all;
    const priority_policy pols[] = {priority_policy::none, priority_policy::overflow,
                                    priority_policy::pinned_client, priority_policy::prioritized};
    _p.priority = pols[_r.below(4)];
    if (_p.priority != priority_policy::none) _p.priority_groups = {"g"};
    _p.priority_timeout = (1 + base::nanos(_r.below(4))) * kSecond;
    if (_push) {
      _p.deliver_subject = "dlv";
      _p.priority = priority_policy::none;
      _p.priority_groups.clear();
      _p.idle_heartbeat = kSecond;
      _p.flow_control = _r.chance(0.5);
      _reqs["dlv"] = {std::int64_t(1) << 60, 0, false, true, "", 0};
    }
    std::fprintf(stderr, "  ack %d wait %lld backoff %zu max_deliver %lld max_ack_pending %lld "
                 "filter %d priority %d push %d\n", int(_p.ack), static_cast<long long>(_p.ack_wait),
                 _p.backoff.size(), static_cast<long long>(_p.max_deliver),
                 static_cast<long long>(_p.max_ack_pending), bool(_h.store.filter),
                 int(_p.priority), int(_push) + int(_p.flow_control));
    _h.make(_p);
    for (int i = 0; i < steps && !::testing::Test::HasFatalFailure(); ++i) step(i);
    drain();
    std::fprintf(stderr, "  %llu deliveries, %zu released, %zu at max_deliver, %llu statuses, "
                 "%llu flow-control requests\n",
                 static_cast<unsigned long long>(_dseq), _done.size(), _maxed.size(),
                 static_cast<unsigned long long>(_statuses),
                 static_cast<unsigned long long>(_fc_requests));
  }

 private:
  base::nanos wait_for(std::uint64_t redeliveries) const {
    if (_p.backoff.empty()) return _p.ack_wait;
    return _p.backoff[std::min<std::size_t>(redeliveries, _p.backoff.size() - 1)];
  }
  bool matches(std::uint64_t seq) const { return _h.store.matches(_h.store.msgs.at(seq)); }

  void step(int i) {
    const auto op = _r.below(100);
    if (op < 20) {
      // Flow-controlled push runs publish large messages so the window matters.
      const std::uint32_t scale = _push && _p.flow_control ? 4000 : 1;
      for (auto k = _r.below(4); k > 0; --k)
        _h.store.add(_r.chance(0.5) ? "s.a" : "s.b", (20 + std::uint32_t(_r.below(100))) * scale);
      _h.c->on_stream_advanced(_h.store.last, _h.now, _h.out);
    } else if (op < 40) {
      if (_push && _r.chance(0.5)) {
        _active = !_active;  // subscribe / unsubscribe on the deliver subject
        _h.c->set_push_interest(_active, _h.now, _h.out);
      } else if (_push && !_fc_last.empty() && _r.chance(0.5)) {
        _h.c->on_flow_control_reply(_fc_last, _h.now, _h.out);
      } else {
        new_pull();
      }
    } else if (op < 75) {
      random_ack();
    } else if (op < 97) {
      advance(base::nanos(_r.below(1500)) * kMilli);
    } else if (i % 7 == 0) {
      restart();
    }
    absorb();
    check();
  }

  // As harness::advance, but the model sees each tick's actions at that tick's time.
  void advance(base::nanos d) {
    const base::nanos target = _h.now + d;
    for (;;) {
      base::nanos t = _h.c->next_deadline();
      if (t > target) break;
      _h.now = std::max(_h.now, t);
      _h.c->tick(_h.now, _h.out);
      absorb();
    }
    _h.now = target;
    _h.c->tick(_h.now, _h.out);
  }

  void new_pull() {
    pull_request r = pull(1 + std::int64_t(_r.below(10)));
    if (_r.chance(0.8)) r.expires = (1 + base::nanos(_r.below(5))) * kSecond;
    if (_r.chance(0.2)) r.no_wait = true;
    if (_r.chance(0.2)) r.max_bytes = 100 + std::int64_t(_r.below(400));
    if (r.expires >= 2 * kSecond && _r.chance(0.3)) r.idle_heartbeat = r.expires / 2;
    if (_p.priority != priority_policy::none) r.group = "g";
    if (_p.priority == priority_policy::overflow) {
      if (_r.chance(0.3)) r.min_pending = std::int64_t(_r.below(8));
      if (_r.chance(0.3)) r.min_ack_pending = std::int64_t(_r.below(4));
    }
    if (_p.priority == priority_policy::pinned_client && _r.chance(0.6))
      r.id = _r.chance(0.8) ? _pin : "stale";
    if (_p.priority == priority_policy::prioritized) r.priority = int(_r.below(4));
    std::string reply = "r" + std::to_string(++_serial);
    _reqs[reply] = {r.batch, r.max_bytes, r.max_bytes > 0, true, r.id, r.priority};
    _h.request(reply, r);
  }

  void random_ack() {
    std::uint64_t seq = 0;
    if (!_inflight.empty() && _r.chance(0.9)) {
      auto it = _inflight.begin();
      std::advance(it, std::ptrdiff_t(_r.below(_inflight.size())));
      seq = it->first;
    } else if (_h.store.last > 0) {
      seq = 1 + _r.below(_h.store.last);  // stale, maxed, or never delivered
    } else {
      return;
    }
    ack_subject s;
    s.stream = "S";
    s.consumer = "C";
    s.stream_seq = seq;
    s.consumer_seq = _inflight.count(seq) ? _inflight[seq].dseq : 0;
    const auto k = _r.below(100);
    std::string body = k < 50 ? "+ACK" : k < 60 ? "-NAK" : k < 68 ? "-NAK 700ms" : k < 80 ? "+WPI"
                     : k < 88 ? "+TERM why" : k < 93 ? "+NXT" : "junk";
    auto b = parse_ack_body(body);
    _hist[seq] += " t" + std::to_string(_h.now / kMilli) + ":" + body;
    if (auto it = _inflight.find(seq); it != _inflight.end()) {
      auto& m = it->second;
      if (b.kind == ack_kind::progress) m.allowed_at = _h.now + wait_for(m.dc - 1);
      if (b.kind == ack_kind::nak)
        m.allowed_at = b.delay ? _h.now + b.delay - _p.ack_wait + wait_for(m.dc - 1) : _h.now;
    }
    _h.c->on_ack(s, b, _h.now, _h.out);
  }

  void restart() {
    auto snap = _h.c->snapshot();
    _h.out.clear();
    _h.make(_p);
    _h.c->restore(snap, _h.now);
    for (auto& [k, v] : _hist) v += " restart";
    for (auto& [k, r] : _reqs) r.alive = k == "dlv";  // pull requests and pins are not durable
    _pin.clear();
    _active = false;  // interest is re-announced by the agent
    _fc_last.clear();
    EXPECT_EQ(_h.c->snapshot(), snap);
  }

  void absorb() {
    for (const auto& a : _h.out) {
      if (auto* d = std::get_if<delivery>(&a)) on_delivery(*d);
      if (auto* s = std::get_if<status_reply>(&a)) on_status(*s);
      if (auto* v = std::get_if<advisory>(&a)) on_advisory(*v);
      if (auto* r = std::get_if<released>(&a)) on_released(r->stream_seq);
    }
    _h.out.clear();
  }

  void on_delivery(const delivery& d) {
    ASSERT_TRUE(_reqs.count(d.to));
    auto& q = _reqs[d.to];
    ASSERT_TRUE(q.alive) << "delivery to a finished request " << d.to;
    if (_push) {
      ASSERT_EQ(d.to, "dlv");
      ASSERT_TRUE(_active);
    }
    ASSERT_EQ(d.consumer_seq, ++_dseq);
    ASSERT_TRUE(matches(d.stream_seq));
    if (auto it = _inflight.find(d.stream_seq); it != _inflight.end()) {
      // Redelivery: only after its deadline or a NAK, never while another holds it.
      ASSERT_GE(_h.now, it->second.allowed_at) << "seq " << d.stream_seq << " still in flight"
                                                << _hist[d.stream_seq];
      ASSERT_EQ(d.delivery_count, it->second.dc + 1);
    } else {
      ASSERT_FALSE(_done.count(d.stream_seq)) << "acked message redelivered";
      ASSERT_FALSE(_maxed.count(d.stream_seq));
      ASSERT_GT(d.stream_seq, _last_new);
      ASSERT_EQ(d.delivery_count, 1u);
      _last_new = d.stream_seq;
    }
    if (_p.max_deliver > 0) {
      ASSERT_LE(d.delivery_count, std::uint64_t(_p.max_deliver));
    }
    _hist[d.stream_seq] += " t" + std::to_string(_h.now / kMilli) + ":dlv" + std::to_string(d.delivery_count);
    _inflight[d.stream_seq] = {d.delivery_count, _h.now + wait_for(d.delivery_count - 1),
                               d.consumer_seq};
    ASSERT_GT(q.n, 0);
    if (_p.priority == priority_policy::pinned_client) {
      ASSERT_FALSE(d.pin_id.empty());
      ASSERT_EQ(d.pin_id, _pin) << "delivery outside the current pin";
      if (!q.id.empty()) {
        ASSERT_EQ(q.id, d.pin_id);
      }
      q.id = d.pin_id;  // a request that got pinned keeps the pin for its batch
    }
    if (_p.priority == priority_policy::prioritized) {
      // Served from the most preferred band that has a waiting request.
      for (const auto& [k, o] : _reqs) {
        if (o.alive && k != d.to) {
          ASSERT_GE(o.priority, q.priority) << k << " vs " << d.to;
        }
      }
    }
    --q.n;
    if (q.has_bytes) {
      q.b -= std::int64_t(d.size);
      ASSERT_GE(q.b, 0);
    }
    if (q.n == 0 || (q.has_bytes && q.b == 0)) q.alive = q.has_bytes && q.b > 0;  // 409 Batch Completed next
  }

  void on_status(const status_reply& s) {
    ++_statuses;
    ASSERT_TRUE(_reqs.count(s.to));
    auto& q = _reqs[s.to];
    if (s.code == 100) {
      ASSERT_TRUE(q.alive);
      if (!s.reply.empty()) {
        _fc_last = s.reply;
        ++_fc_requests;
      }
      if (_push) {
        ASSERT_TRUE(_active);
      }
      return;
    }
    if (s.description == "Batch Completed") {
      ASSERT_EQ(q.n, 0);
      ASSERT_GT(q.b, 0);
    }
    ASSERT_TRUE(q.alive) << s.to << " " << s.code << " " << s.description;
    if (s.pending_headers) {
      ASSERT_EQ(s.pending_msgs, q.n);
      ASSERT_EQ(s.pending_bytes, q.has_bytes ? q.b : 0);
    }
    q.alive = false;
  }

  void on_advisory(const advisory& a) {
    if (a.kind == advisory_kind::pinned) {
      ASSERT_TRUE(_pin.empty());
      _pin = a.pin_id;
    }
    if (a.kind == advisory_kind::unpinned) _pin.clear();
    if (a.kind == advisory_kind::max_deliveries) {
      ASSERT_TRUE(_inflight.count(a.stream_seq));
      ASSERT_EQ(a.deliveries, std::uint64_t(_p.max_deliver));
      _inflight.erase(a.stream_seq);
      _maxed.insert(a.stream_seq);
    }
  }

  void on_released(std::uint64_t seq) {
    ASSERT_TRUE(_inflight.count(seq) || _maxed.count(seq)) << "released " << seq;
    ASSERT_TRUE(_done.insert(seq).second);
    _inflight.erase(seq);
    _maxed.erase(seq);
  }

  void check() {
    auto n = _h.info();
    ASSERT_EQ(n.num_ack_pending, _inflight.size());
    ASSERT_EQ(n.delivered.consumer_seq, _dseq);
    ASSERT_GE(n.ack_floor.consumer_seq, _floor.consumer_seq) << "floor went back";
    ASSERT_GE(n.ack_floor.stream_seq, _floor.stream_seq) << "floor went back";
    ASSERT_GE(n.delivered.stream_seq, _delivered.stream_seq);
    ASSERT_LE(n.ack_floor.stream_seq, n.delivered.stream_seq);
    ASSERT_LE(n.ack_floor.consumer_seq, n.delivered.consumer_seq);
    if (!_inflight.empty()) {
      ASSERT_LT(n.ack_floor.stream_seq, _inflight.begin()->first);
    }
    _floor = n.ack_floor;
    _delivered = n.delivered;
    std::uint64_t redelivered = _maxed.size();
    for (const auto& [s, m] : _inflight) redelivered += m.dc > 1;
    ASSERT_EQ(n.num_redelivered, redelivered);
    std::uint64_t alive = 0;
    for (const auto& [k, r] : _reqs) alive += r.alive && k != "dlv";
    ASSERT_EQ(_h.c->waiting().size(), alive);
    ASSERT_LE(alive, std::uint64_t(_p.max_waiting));
    std::uint64_t pend = 0;
    for (const auto& [s, m] : _h.store.msgs) pend += s > n.delivered.stream_seq && _h.store.matches(m);
    ASSERT_EQ(n.num_pending, pend);
  }

  // Pull and ack until every matching message is acked or parked at max_deliver.
  void drain() {
    for (int round = 0; round < 200 && !::testing::Test::HasFatalFailure(); ++round) {
      std::string reply = "d" + std::to_string(++_serial);
      _reqs[reply] = {1000, 0, false, true};
      auto r = pull(1000, 60 * kSecond);
      if (_p.priority != priority_policy::none) r.group = "g";
      if (_push) {
        _reqs[reply].alive = false;
        if (!_active) _h.c->set_push_interest(_active = true, _h.now, _h.out);
        absorb();
        if (!_fc_last.empty()) _h.c->on_flow_control_reply(_fc_last, _h.now, _h.out);
      } else {
        _h.request(reply, r);
      }
      absorb();
      // Acks free max_ack_pending slots and pull more into the open request.
      for (int k = 0; k < 100000 && !_inflight.empty(); ++k) {
        ack_subject a;
        a.stream = "S";
        a.consumer = "C";
        a.stream_seq = _inflight.begin()->first;
        _h.c->on_ack(a, parse_ack_body("+ACK"), _h.now, _h.out);
        absorb();
        if (_push && !_fc_last.empty()) _h.c->on_flow_control_reply(_fc_last, _h.now, _h.out);
        absorb();
        if (::testing::Test::HasFatalFailure()) return;
      }
      check();
      advance(61 * kSecond);
      absorb();
      std::uint64_t left = 0;
      for (const auto& [s, m] : _h.store.msgs)
        left += _h.store.matches(m) && !_done.count(s) && !_maxed.count(s);
      if (left == 0) return;
    }
    std::string left;
    for (const auto& [s, m] : _h.store.msgs)
      if (_h.store.matches(m) && !_done.count(s) && !_maxed.count(s)) left += " " + std::to_string(s);
    auto n = _h.info();
    ADD_FAILURE() << "drain did not finish; left:" << left.substr(0, 200) << " delivered "
                  << n.delivered.stream_seq << " pending " << n.num_ack_pending << " map "
                  << _p.max_ack_pending << " inflight " << _inflight.size() << " rdq "
                  << _h.c->redelivery_queue().size() << " waiting " << _h.c->waiting().size()
                  << " machine pending " << (_h.c->pending().empty() ? 0 : _h.c->pending().begin()->first)
                  << " model " << (_inflight.empty() ? 0 : _inflight.begin()->first) << " pin '" << _h.c->pin_id() << "' model pin '" << _pin << "'";
  }

  base::rng _r;
  harness _h;
  consumer_params _p;
  std::map<std::uint64_t, model_msg> _inflight;
  std::set<std::uint64_t> _done;
  std::set<std::uint64_t> _maxed;
  std::map<std::string, model_req> _reqs;
  std::map<std::uint64_t, std::string> _hist;
  std::uint64_t _serial = 0;
  std::uint64_t _statuses = 0;
  std::uint64_t _fc_requests = 0;
  std::string _pin;
  bool _push = false;
  bool _active = false;
  std::string _fc_last;
  std::uint64_t _dseq = 0;
  std::uint64_t _last_new = 0;
  sequence_pair _floor;
  sequence_pair _delivered;
};

TEST(ConsumerRandom, InvariantsHold) {
  std::vector<std::uint64_t> seeds = {1, 2, 3, 42, 20261129};
  if (const char* env = std::getenv("PG_SEED")) {
    seeds = {std::strtoull(env, nullptr, 10)};
  } else {
    seeds.push_back(std::uint64_t(std::chrono::steady_clock::now().time_since_epoch().count()));
  }
  for (auto seed : seeds) {
    std::fprintf(stderr, "js_consumer random seed %llu\n", static_cast<unsigned long long>(seed));
    SCOPED_TRACE("seed " + std::to_string(seed));
    random_run(seed, false).run(5000);
    if (::testing::Test::HasFailure()) break;
    random_run(seed, true).run(3000);
    if (::testing::Test::HasFailure()) break;
  }
}

}  // namespace
}  // namespace js::test
