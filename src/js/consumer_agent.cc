#include "src/js/consumer_agent.h"

#include <algorithm>
#include <cstring>

#include "src/base/log.h"
#include "src/base/rng.h"
#include "src/core/subject.h"
#include "src/js/consumer_advisory.h"
#include "src/js/json_util.h"
#include "src/js/stream.h"

namespace js {

namespace {

constexpr std::int64_t kInterestCheck = 10 * base::kMilli;

// Pin ids (NUID-like, 22 chars) and flow-control tokens (4 chars), from [0-9A-Za-z].
base::rng& agent_rng() {
  static thread_local base::rng rng(static_cast<std::uint64_t>(base::read_clock(CLOCK_REALTIME)) ^ 0x9e3779b97f4a7c15ull);  // one per owner thread
  return rng;
}

// nats-server deletes an inactive pull consumer 100 ms to 1 s after its threshold (jitter);
// a push consumer exactly at its threshold after its deliver subject lost interest.
std::int64_t with_jitter(std::int64_t threshold, bool push) {
  if (threshold <= 0 || push) return threshold;
  return threshold + 100 * base::kMilli + std::int64_t(agent_rng().below(900)) * base::kMilli;
}

std::string random_token(std::size_t n) {
  base::rng& rng = agent_rng();
  static constexpr char kAlpha[] = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
  std::string s;
  for (std::size_t i = 0; i < n; ++i) s += kAlpha[rng.below(62)];
  return s;
}

}  // namespace

consumer_agent::consumer_agent(group_host& host, release_sink& owner, stream& s, consumer_config cfg, std::int64_t created,
                               std::string state_dir, std::int64_t now)
    : _host(host), _owner(owner), _stream(s), _sname(s.config().name), _scfg(s.config()), _cfg(std::move(cfg)),
      _created(created), _state_dir(std::move(state_dir)) {
  _filters = _cfg.match_filters();
  consumer_params p = to_params(_cfg, s.config(), s.config().name, _cfg.name);
  p.start_seq = _start_seq = resolve_start_seq();
  p.inactive_threshold = with_jitter(p.inactive_threshold, _cfg.push());
  p.has_interest = [&host](const std::string& reply) { return host.has_interest(reply); };
  p.new_pin_id = [] { return random_token(22); };
  p.new_fc_token = [] { return random_token(4); };
  p.sample_roll = [] { return int(agent_rng().below(100)); };
  _advanced_to = _notified = s.store().last_seq();
  _m = std::make_unique<consumer_state_machine>(std::move(p), *this, now);
}

consumer_agent::~consumer_agent() {
  for (auto id : _subs) _host.unsubscribe(id);
}

const std::string& consumer_agent::stream_name() const { return _sname; }

void consumer_agent::attach(std::shared_ptr<consumer_link> link, agent_executor* exec) {
  _link = link.get();
  _link_keep = std::move(link);
  _exec = exec;
}

void consumer_agent::unsubscribe_all() {
  for (auto id : _subs) _host.unsubscribe(id);
  _subs.clear();
}

std::uint64_t consumer_agent::ack_floor_seq() const { return _m->ack_floor().stream_seq; }

bool consumer_agent::push_bound() const {
  if (!off_thread()) return _push_bound;
  bool b = false;
  _exec->run_sync([&] { b = _push_bound; });
  return b;
}

base::latency_histogram consumer_agent::ack_latency() const {
  if (!off_thread()) return _m->ack_latency();
  base::latency_histogram h;
  _exec->run_sync([&] { h = _m->ack_latency(); });
  return h;
}

std::uint64_t consumer_agent::resolve_start_seq() {
  auto& st = _stream.store();
  const std::uint64_t first = st.first_seq(), last = st.last_seq();
  switch (_cfg.deliver) {
    case deliver_policy::all: return std::max<std::uint64_t>(1, first);
    case deliver_policy::new_: return last + 1;
    case deliver_policy::by_start_sequence: return std::max(_cfg.opt_start_seq, std::max<std::uint64_t>(1, first));
    case deliver_policy::by_start_time: {
      auto seq = st.seq_for_time(_cfg.opt_start_time.value_or(0));
      return seq.ok() ? *seq : last + 1;
    }
    case deliver_policy::last: {
      if (_filters.empty()) return std::max<std::uint64_t>(1, last);
      std::uint64_t best = 0;
      for (const auto& f : _filters)
        if (auto m = st.load_last(f); m.ok()) best = std::max(best, m->seq);
      return best ? best : last + 1;
    }
    case deliver_policy::last_per_subject: {
      for (const auto& f : _filters.empty() ? std::vector<std::string>{">"} : _filters)
        for (const auto& [subj, n] : st.subject_counts(f == ">" ? "" : f))
          if (auto seq = st.subject_last_seq(subj)) _lps.push_back(seq);
      std::sort(_lps.begin(), _lps.end());
      _lps.erase(std::unique(_lps.begin(), _lps.end()), _lps.end());
      return _lps.empty() ? last + 1 : _lps.front();
    }
  }
  return 1;
}

void consumer_agent::start(const storage::consumer_state* restore, std::int64_t now) {
  if (off_thread()) {
    std::uint64_t from = 0;
    bool lps_dropped = false;
    _exec->run_sync([&] {
      const bool had_lps = !_lps.empty();
      start(restore, now);
      keep_unmatched_pending();  // a restored state's, delivered under an earlier filter
      from = _m->needed_from();
      lps_dropped = had_lps && _lps.empty();
    });
    // Back on the owner: a restored state may need less (or, deliver new, more) than the
    // start sequence resolved against today's store.
    _link_keep->interest = remote_interest(from);
    // It resumes without its start set (as here): the pages read every matching message.
    // The reader started a new epoch, whose read is answered after this.
    if (lps_dropped) _link_keep->lps.clear();
    return;
  }
  auto& host = _host;
  const std::string& sname = _sname;
  // Announced to the routes: in a cluster, clients on every server ack and answer here.
  if (_cfg.ack != ack_policy::none)
    _subs.push_back(host.subscribe_cluster("$JS.ACK." + sname + "." + _cfg.name + ".>", this));
  if (_cfg.push() && _cfg.flow_control)
    _subs.push_back(host.subscribe_cluster("$JS.FC." + sname + "." + _cfg.name + ".>", &_fc));
  if (_link) _link->started = true;  // its floor now says what it needs
  if (_link || _own_pulls) {  // the pulls are its own subscription, not the owner's
    _subs.push_back(host.subscribe("$JS.API.CONSUMER.MSG.NEXT." + sname + "." + _cfg.name, "", &_pull));
    if (!host.domain().empty())
      _subs.push_back(
          host.subscribe("$JS." + host.domain() + ".API.CONSUMER.MSG.NEXT." + sname + "." + _cfg.name, "", &_pull));
  }
  // A memory stream's messages do not survive a restart, so neither does consumer state.
  if (!_state_dir.empty() && !_cfg.mem_storage && _scfg.storage == storage_type::file) {
    auto fs = storage::file_consumer_store::open(_state_dir, "state");
    if (fs.ok()) {
      _store = std::move(*fs);
    } else {
      PG_WARN("JetStream consumer '{} > {}': state unreadable ({}), starting fresh", sname, _cfg.name,
              base::errc_name(fs.code()));
    }
  }
  if (_store) {
    // Snapshot completions wake the loop, so held ack replies go out without polling.
    const int efd = host.wake_eventfd();
    if (efd >= 0) _store->signal_completions_to(efd);
    _wake_on_written = efd >= 0;
    _sync_acks = host.options().durability == "sync";
  }
  if (restore == nullptr && _store && _store->state().delivered.stream > 0) restore = &_store->state();
  const bool resolved = restore == nullptr && _store;
  if (restore) {
    // A crash can keep a consumer snapshot that delivered messages the stream's log lost (they
    // were not durable yet): the sequences past the stream's end will be reused by the next
    // publishes, so the state is cut back to the stream, or those would never be delivered
    // (nats-server 2.14 resets such a state at startup too).
    const std::uint64_t last = read_last();
    const bool ahead = restore->delivered.stream > last;
    if (ahead)
      PG_WARN("JetStream consumer '{} > {}': state delivered up to seq {} but the stream ends at {}; resuming from there",
              sname, _cfg.name, restore->delivered.stream, last);
    consumer_snapshot snap;
    snap.delivered = {restore->delivered.consumer, std::min(restore->delivered.stream, last)};
    snap.ack_floor = {restore->ack_floor.consumer, std::min(restore->ack_floor.stream, last)};
    for (const auto& [seq, p] : restore->pending)
      if (seq <= last) snap.pending.push_back({seq, {p.consumer_seq, p.ts}});
    for (const auto& [seq, n] : restore->redelivered)
      if (seq <= last) snap.redelivered.push_back({seq, n});
    if (ahead && snap.pending.empty()) snap.ack_floor = snap.delivered;
    _m->restore(snap, now);
    if (_link && !_lps.empty()) _link->reader.rewind(_link->reader.floor());  // paged without the set
    _lps.clear();
  }
  actions out;
  if (_cfg.pause_until && *_cfg.pause_until > now) _m->set_pause(*_cfg.pause_until, now, out);
  if (_cfg.push()) check_push_interest(now);
  _m->on_stream_advanced(_advanced_to, now, out);
  run(out, now);
  // A new durable saves its starting point at once, so a restart does not re-resolve
  // deliver policies such as "new" against a grown stream; a restored one whose state file
  // already says it is not rewritten (10,000 consumers each rewrote theirs at every start).
  if (resolved && (!_store->loaded() || durable_state() != _store->state())) _dirty = true;
}

bool consumer_agent::filter_matches(std::string_view subject) const {
  if (_filters.empty()) return true;
  for (const auto& f : _filters)
    if (core::subject_matches(f, subject)) return true;
  return false;
}

// ---- inputs ---------------------------------------------------------------------------

void consumer_agent::on_stored(std::uint64_t seq, std::string_view subject) {
  _advanced_to = std::max(_advanced_to, seq);
  _feed_new = _link != nullptr;
  // A recount may already have seen it (a trim that ran before this report delivered).
  if (_cnt_valid && seq >= _cnt_from && seq > _cnt_upto && filter_matches(subject)) {
    ++_cnt;
    _cnt_upto = seq;
  }
}

void consumer_agent::purge_now(std::int64_t now) {
  // On the consumer thread while the owner waits in run_sync: the store is safe to read.
  auto& st = _stream.store();
  _link->reader.erase_if([&st](std::uint64_t seq) { return !st.load(seq).ok(); });
  _link->last_seq = std::max(_link->last_seq, st.last_seq());
  feed_link_off();
  on_removed({}, now);
  // The resync that follows empties the reader until its first page: until then num_pending
  // is this count of the store, not the one taken at creation (which still held the purged).
  _link_keep->seed_pending = recount(_m->next_stream_seq());
  feed_link_on();
}

void consumer_agent::on_removed(const std::vector<std::uint64_t>& seqs, std::int64_t now) {
  actions out;
  if (seqs.empty() && !_link) {  // a purge: pending messages it took leave silently, the floors move
    _cnt_valid = false;
    _cache.clear();
    auto& st = _stream.store();
    const std::uint64_t first = st.first_seq();  // last_seq + 1 when empty
    std::vector<std::uint64_t> gone;
    for (const auto& [seq, e] : _m->pending())
      if (seq < first || !st.load(seq).ok()) gone.push_back(seq);
    _m->on_purged(first, gone, now, out);
  }
  // Forget every removed message before the machine runs: terminating a pending one can
  // deliver the next at once, and its num_pending must not count the rest of the batch.
  for (auto seq : seqs) {
    if (seq >= _cnt_from) _cnt_valid = false;
    _cache.erase(seq);
  }
  for (auto seq : seqs)
    if (_m->pending().count(seq)) _m->on_removed(seq, now, out);
  run(out, now);
}

void consumer_agent::on_msg(const core::inbound_msg& m) {
  if (_exec) _exec->count_message();
  auto subj = decode_ack_subject(m.subject);
  if (!subj) return;
  const std::int64_t now = _host.now();
  const ack_body body = parse_ack_body(m.payload);
  actions out;
  const bool sync = _m->on_ack(*subj, body, now, out);
  _last_ack = now;
  _dirty = true;
  bool reply_now = false;
  if (body.kind == ack_kind::next && !m.reply.empty()) {
    auto req = parse_pull_request(body.next_body);
    if (auto* r = std::get_if<pull_request>(&req)) _m->on_pull(std::string(m.reply), *r, now, out);
  } else if (sync && !m.reply.empty()) {
    // Confirmed once the state that includes this ack is durable; memory state at once.
    if (_store) _held.hold(std::string(m.reply), _store->handed() + 1);
    else if (_link) reply_now = true;  // after the release is on its way (below)
    else _host.publish(m.reply, "", "", "");
  }
  run(out, now);
  // On a consumer thread the release goes to the owner before the ack is answered: a client
  // that reads the stream after its ack sync sees a work-queue message gone.
  if (_link && _scfg.retention != retention_policy::limits) _link->send_requests();
  if (reply_now) _host.publish(m.reply, "", "", "");
}

void consumer_agent::fc_handler::on_msg(const core::inbound_msg& m) {
  if (_a._exec) _a._exec->count_message();
  const std::int64_t now = _a._host.now();
  actions out;
  // A sourcing receiver answers with what it stored (ack_policy flow_control acks by it).
  std::optional<sequence_pair> last;
  if (!m.headers.empty()) {
    auto c = find_header(m.headers, "Nats-Last-Consumer");
    auto s = find_header(m.headers, "Nats-Last-Stream");
    if (c && s)
      if (auto cn = parse_u64(*c), sn = parse_u64(*s); cn && sn) last = sequence_pair{*cn, *sn};
  }
  _a._m->on_flow_control_reply(std::string(m.subject), now, out, last);
  _a.run(out, now);
}

void consumer_agent::on_pull_request(const core::inbound_msg& m, std::int64_t now) {
  if (_exec) _exec->count_message();
  if (m.reply.empty()) return;
  actions out;
  if (auto req = parse_pull_or_400(m.reply, m.payload, out)) _m->on_pull(std::string(m.reply), *req, now, out);
  run(out, now);
}

void consumer_agent::check_push_interest(std::int64_t now) {
  _next_interest_check = now + kInterestCheck;
  const bool bound = _host.has_interest(_cfg.deliver_subject);
  if (bound == _push_bound) return;
  _push_bound = bound;
  actions out;
  _m->set_push_interest(bound, now, out);
  run(out, now);
}

std::size_t consumer_agent::poll(std::int64_t now) {
  if (_stopped) return 0;
  std::size_t work = 0;
  actions out;
  if (_advanced_to > _notified || _feed_new) {
    _notified = _advanced_to;
    _feed_new = false;
    _m->on_stream_advanced(_advanced_to, now, out);
    ++work;
  }
  if (_m->next_deadline() <= now) {
    _m->tick(now, out);
    ++work;
  }
  if (!out.empty()) run(out, now);
  if (_cfg.push() && now >= _next_interest_check) check_push_interest(now);
  if (_store) work += persist(now);
  return work;
}

std::int64_t consumer_agent::next_wakeup() const {
  if (_stopped) return consumer_state_machine::kNever;
  std::int64_t t = _m->next_deadline();
  if (_cfg.push()) t = std::min(t, _next_interest_check);
  if (!_store) return t;
  if (_dirty) t = std::min(t, _next_flush);
  if (_store->unsynced()) t = std::min(t, _next_sync);
  // Held ack replies: a write in flight wakes the loop itself (or poll keeps it turning).
  if (!_held.empty() && !_store->writing()) t = std::min(t, _confirm_retry_at);
  return t;
}

// ---- actions --------------------------------------------------------------------------

void consumer_agent::run(actions& out, std::int64_t now) {
  for (auto& a : out) {
    if (auto* d = std::get_if<delivery>(&a)) {
      send_delivery(*d, now);
    } else if (auto* s = std::get_if<status_reply>(&a)) {
      _host.publish(s->to, s->reply, s->render(), "");
    } else if (auto* adv = std::get_if<advisory>(&a)) {
      send_advisory(*adv);
    } else if (auto* r = std::get_if<released>(&a)) {
      release(r->stream_seq);
    } else if (std::holds_alternative<inactive>(a)) {
      _expired = true;
    }
  }
  out.clear();
  _cache.clear();
  if (!_kept.empty()) std::erase_if(_kept, [&](const auto& kv) { return !_m->pending().count(kv.first); });
}

void consumer_agent::send_delivery(const delivery& d, std::int64_t now) {
  // The message is taken out of the cache: delivering can run handlers that clear it.
  auto it = _cache.find(d.stream_seq);
  storage::stored_msg loaded;
  const storage::stored_msg* m = nullptr;
  if (it != _cache.end()) {
    loaded = std::move(it->second);
    _cache.erase(it);
    m = &loaded;
  } else if (auto r = read_one(d.stream_seq); r.ok()) {
    loaded = std::move(*r);
    m = &loaded;
  } else {
    return;  // removed meanwhile; the ack wait brings it back or the ack drops it
  }
  _last_delivery = now;
  _dirty = true;
  const std::string ack = encode_ack_subject(_sname, _cfg.name, d.delivery_count, d.stream_seq,
                                             d.consumer_seq, d.timestamp, d.pending);
  std::string hdr;
  std::string_view headers = m->headers, payload = m->payload;
  if (_cfg.headers_only) {
    hdr = append_header(m->headers, "Nats-Msg-Size", std::to_string(m->payload.size()));
    headers = hdr;
    payload = {};
  }
  if (!d.pin_id.empty()) {
    hdr = append_header(headers, "Nats-Pin-Id", d.pin_id);
    headers = hdr;
  }
  _host.deliver(d.to, m->subject, ack, headers, payload);
}

void consumer_agent::send_advisory(const advisory& a) {
  const consumer_event e = consumer_advisory_event(a, _host.account(), _sname, _cfg.name);
  _host.publish_event(e.subject, e.type, e.body);
}

void consumer_agent::release(std::uint64_t seq) {
  if (_link_keep) return _link_keep->reader.release(seq);  // also while purge_now or reset reads the store
  _owner.on_released(seq);
}

// ---- API-side operations --------------------------------------------------------------

void consumer_agent::update(const consumer_config& cfg, std::int64_t now) {
  if (off_thread()) {
    // The owner's half of the link first (it is this thread's, and waits below): its pages,
    // live pushes and retention follow the new filters from here on.
    if (consumer_link* l = feed_link()) l->filters = cfg.match_filters();
    return _exec->run_sync([&] { update(cfg, now); });
  }
  const auto pause = _cfg.pause_until;
  const bool rebind = _cfg.push() && cfg.deliver_subject != _cfg.deliver_subject;
  _cfg = cfg;
  _cfg.pause_until = pause;  // only the PAUSE API changes it
  auto filters = _cfg.match_filters();
  const bool refilter = _link && filters != _filters;
  _filters = std::move(filters);
  if (refilter) {
    // The window holds what the old filters matched: it is paged again under the new ones
    // (pages and pushes already on the ring belong to the old epoch and are dropped). Until
    // the first page, num_pending is the store's count, read while the owner waits.
    _link->reader.rewind(_link->reader.floor());
    feed_link_off();
    keep_unmatched_pending();
    _link_keep->seed_pending = recount(_m->next_stream_seq());
    feed_link_on();
  }
  _cnt_valid = false;
  const stream_config& scfg = _link ? _scfg : _stream.config();  // the owner's is not this thread's
  consumer_params p = to_params(_cfg, scfg, _sname, _cfg.name);
  p.inactive_threshold = with_jitter(p.inactive_threshold, _cfg.push());
  actions out;
  _m->update(p, now, out);
  if (rebind) {
    _m->rebind_push(_cfg.deliver_subject, now, out);
    _push_bound = false;
    check_push_interest(now);
  }
  run(out, now);
}

void consumer_agent::keep_unmatched_pending() {
  if (_filters.empty()) return;
  auto& st = _stream.store();
  for (const auto& [seq, e] : _m->pending()) {
    if (_kept.count(seq)) continue;
    if (auto m = st.load(seq); m.ok() && !filter_matches(m->subject)) _kept.emplace(seq, std::move(*m));
  }
}

void consumer_agent::pause(std::optional<std::int64_t> until, std::int64_t now) {
  if (off_thread()) return _exec->run_sync([&] { pause(until, now); });
  if (until && *until <= now) until.reset();
  _cfg.pause_until = until;
  actions out;
  _m->set_pause(until.value_or(0), now, out);
  run(out, now);
}

bool consumer_agent::unpin(const std::string& group, std::int64_t now) {
  if (off_thread()) {
    bool ok = false;
    _exec->run_sync([&] { ok = unpin(group, now); });
    return ok;
  }
  actions out;
  const bool ok = _m->unpin(group, now, out);
  run(out, now);
  return ok;
}

void consumer_agent::on_delete() {
  if (off_thread()) return _exec->run_sync([&] { on_delete(); });
  actions out;
  _m->on_delete(out);
  run(out, _host.now());
  for (auto id : _subs) _host.unsubscribe(id);
  _subs.clear();
  // Nothing can redeliver what these acks confirmed any more.
  for (const auto& r : _held.take_all()) _host.publish(r, "", "", "");
  _stopped = true;
}

void consumer_agent::on_shutdown(std::vector<storage::snapshot_file>* batch) {
  if (off_thread()) return _exec->run_sync([&] { on_shutdown(batch); });
  if (_stopped) return;
  actions out;
  _m->on_shutdown(out);
  run(out, _host.now());
  _stopped = true;
  if (!_store) return;
  if (batch) {
    if (_dirty) (void)_store->update(durable_state());  // else the store holds it already
    _dirty = false;
    _store->stage(*batch);
    return;
  }
  flush_state(true);
  finish_shutdown({});
}

void consumer_agent::finish_shutdown(const std::vector<storage::snapshot_file>& batch) {
  if (off_thread()) return _exec->run_sync([&] { finish_shutdown(batch); });
  if (!_store) return;
  _store->staged_done(batch);
  if (_store->dirty()) {
    PG_WARN("JetStream consumer '{} > {}': cannot persist state at shutdown", _sname, _cfg.name);
    return;
  }
  for (const auto& r : _held.take_all()) _host.publish(r, "", "", "");  // their acks are durable
}

ojson consumer_agent::info_json(std::int64_t now) {
  if (off_thread()) {
    ojson j;
    _exec->run_sync([&] { j = info_json(now); });
    return j;
  }
  // Timers already due run first, as nats-server's processWaiting at info time: a pull that
  // expired gets its 408 before this answer, never after an answer that no longer counts it.
  if (!_stopped && _m->next_deadline() <= now) {
    actions out;
    _m->tick(now, out);
    if (!out.empty()) run(out, now);
  }
  _m->drop_uninterested();  // num_waiting counts live requests (nats-server: processWaiting)
  const consumer_numbers n = _m->numbers(now);
  ojson j;
  j["stream_name"] = _sname;
  j["name"] = _cfg.name;
  j["created"] = base::rfc3339_nano(_created);
  j["config"] = to_json(_cfg, true);
  ojson delivered{{"consumer_seq", n.delivered.consumer_seq}, {"stream_seq", n.delivered.stream_seq}};
  if (_last_delivery) delivered["last_active"] = base::rfc3339_nano(_last_delivery);
  ojson floor{{"consumer_seq", n.ack_floor.consumer_seq}, {"stream_seq", n.ack_floor.stream_seq}};
  if (_last_ack && n.ack_floor.consumer_seq > 0) floor["last_active"] = base::rfc3339_nano(_last_ack);
  j["delivered"] = delivered;
  j["ack_floor"] = floor;
  j["num_ack_pending"] = n.num_ack_pending;
  j["num_redelivered"] = _cfg.max_deliver == 1 ? 0 : n.num_redelivered;
  j["num_waiting"] = n.num_waiting;
  j["num_pending"] = n.num_pending;
  j["cluster"] = ojson{{"leader", _host.server_name()}};
  if (_cfg.push() && _push_bound) j["push_bound"] = true;
  if (n.paused) {
    j["paused"] = true;
    j["pause_remaining"] = n.pause_remaining;
  }
  j["ts"] = base::rfc3339_nano(now);
  if (_cfg.priority != priority_policy::none && !_cfg.priority_groups.empty()) {
    ojson g{{"group", _cfg.priority_groups.front()}};
    if (!n.pinned_id.empty()) g["pinned_client_id"] = n.pinned_id;
    g["pinned_ts"] = base::rfc3339_nano(n.pinned_id.empty() ? 0 : n.pinned_at);
    j["priority_groups"] = ojson::array({g});
  }
  return j;
}

}  // namespace js
