#include "src/js/stream.h"

#include <algorithm>
#include <cctype>

#include "src/base/log.h"
#include "src/js/batch_recovery.h"
#include "src/js/json_util.h"
#include "src/js/msg_ttl.h"
#include "src/js/source_link.h"
#include "src/js/stream_counter.h"

namespace js {

namespace {
constexpr std::int64_t kExpiryCheckNs = 100'000'000;
constexpr std::int64_t kAckSpinNs = 500'000;  // nats-server checks at most every 250 ms
constexpr std::int64_t kTimedWorkNs = 1'000'000;

}  // namespace

stream::stream(group_host& host, stream_config cfg, std::int64_t created_ns, std::string dir,
               std::unique_ptr<storage::stream_store> store)
    : _host(host), _cfg(std::move(cfg)), _created(created_ns), _dir(std::move(dir)), _store(std::move(store)),
      _fast(_cfg.name, host.domain(), {}, host.fast_batch_counter()) {
  // Store completions wake shard 0 through its eventfd, so the loop may block while PubAcks
  // wait for the disk; without that signal, poll() keeps reporting work instead.
  const int efd = _host.wake_eventfd();
  _completions_wake_loop = efd >= 0 && _store->signal_completions_to(efd);
  _rewrites.configure(_cfg);
  _store->on_durable([this](std::uint64_t seq) { flush_acks(seq); });
  _store->on_error([this](base::error e, std::uint64_t first, std::uint64_t last) {
    PG_ERROR("JetStream stream '{}' store error {} for sequences {}..{}", _cfg.name,
             base::errc_name(e.code), first, last);
    // Publishes that will never become durable get an error PubAck instead of silence.
    const auto err = make_error(err::store_failed, base::errc_name(e.code));
    while (!_acks.empty() && _acks.back().wait_seq >= first) {
      reply_error(_acks.back().reply, err);
      _acks.pop_back();
    }
  });
  drop_torn_batch();
  finish_tail_rollups();
  apply_limits();
  rebuild_dedup();
  load_schedules(_host.now());
  configure_sources();
}

// A crash during an atomic batch's append: its prefix at the tail goes, so the stream holds
// the whole batch or none of it (the publisher never got the commit PubAck).
void stream::drop_torn_batch() {
  const torn_batch t = find_torn_batch(*_store);
  if (t.seqs.empty()) return;
  for (const auto seq : t.seqs) (void)_store->remove(seq);
  (void)_store->flush();
  PG_WARN("JetStream stream '{}': dropped {} message(s) of atomic batch '{}' (sequences {}..{}) whose commit did "
          "not reach the disk before a crash",
          _cfg.name, t.seqs.size(), t.id, t.seqs.back(), t.seqs.front());
}

// A crash after a roll-up's message (or its batch's commit) reached the disk but before all of
// its removals did: the tail's roll-ups run again (they are bounded, so a second run is a no-op).
void stream::finish_tail_rollups() {
  if (_store->last_seq() == 0 || !_cfg.allow_rollup_hdrs || _cfg.deny_purge || _cfg.has_mirror()) return;
  const auto tail = tail_rollups(*_store);
  for (const auto& r : tail) roll_up(r.value, r.subject, r.seq);
  if (!tail.empty()) (void)_store->flush();
}

stream::~stream() { close(); }

void stream::close() {
  if (_closed) return;
  stop_sources();
  unsubscribe();
  _store->flush();
  flush_acks(_store->durable_seq());
  _store->close();
  _closed = true;
}

void stream::subscribe() {
  while (!subscribe_some(_cfg.subjects.size() + 1)) {
  }
}

bool stream::subscribe_some(std::size_t max) {
  auto& h = _host;
  const std::size_t n = std::min(max, _cfg.subjects.size() - _next_subject);
  // _sub_ids[i] is subjects[i]'s (0: refused), so an update can keep the ones it keeps.
  // Announced to the routes: in a cluster, publishes on every server reach the stream.
  for (const std::size_t end = _next_subject + n; _next_subject < end; ++_next_subject)
    _sub_ids.push_back(h.subscribe_cluster(_cfg.subjects[_next_subject], this));
  if (_next_subject < _cfg.subjects.size()) return false;
  if (_cfg.allow_direct && !_direct_subscribed) {
    std::vector<std::string> prefixes{"$JS.API"};
    if (!_host.domain().empty()) prefixes.push_back("$JS." + _host.domain() + ".API");
    for (const auto& p : prefixes) {
      const std::string base = p + ".DIRECT.GET." + _cfg.name;
      for (const auto& subj : {base, base + ".>"})
        if (auto id = h.subscribe(subj, "_sys_", &_direct); id != 0) _direct_ids.push_back(id);
    }
  }
  if (!_direct_subscribed) subscribe_mirror_direct();
  _direct_subscribed = true;
  return true;
}

void stream::unsubscribe() {
  for (auto id : _sub_ids)
    if (id != 0) _host.unsubscribe(id);
  for (auto id : _to_unsubscribe) _host.unsubscribe(id);
  unsubscribe_direct();
  _sub_ids.clear();
  _next_subject = 0;
  _to_unsubscribe.clear();
  _to_subscribe.clear();
}

bool stream::unsubscribe_some(std::size_t max) {
  for (; max > 0 && !_to_unsubscribe.empty(); --max) {
    _host.unsubscribe(_to_unsubscribe.back());
    _to_unsubscribe.pop_back();
  }
  for (; max > 0 && !_sub_ids.empty(); --max) {
    if (_sub_ids.back() != 0) _host.unsubscribe(_sub_ids.back());
    _sub_ids.pop_back();
  }
  if (!_to_unsubscribe.empty() || !_sub_ids.empty()) return false;
  unsubscribe();  // direct get and the rest: a few
  return true;
}

void stream::unsubscribe_direct() {
  for (auto id : _direct_ids) _host.unsubscribe(id);
  _direct_ids.clear();
  _direct_subscribed = false;
}

void stream::update(stream_config cfg, bool sliced, const std::vector<std::int64_t>* kept_from) {
  const bool direct_changed =
      cfg.allow_direct != _cfg.allow_direct || cfg.mirror_direct != _cfg.mirror_direct || cfg.mirror != _cfg.mirror;
  const bool resub = cfg.subjects != _cfg.subjects || direct_changed;
  if (resub && sliced) {
    plan_resubscribe(cfg.subjects, direct_changed, kept_from);
  } else if (resub) {
    unsubscribe();
  }
  _cfg = std::move(cfg);
  _rewrites.configure(_cfg);
  if (!_cfg.allow_atomic) _batches.clear();  // disabling drops the open batches
  if (!_cfg.allow_batched) _fast.clear();
  if (resub && !sliced) subscribe();
  configure_sources();  // a removed mirror (promotion) or changed sources
  apply_limits();
  prune_dedup(_host.now());
}

std::vector<std::int64_t> subject_positions(const std::vector<std::string>& prev, const std::vector<std::string>& next) {
  std::unordered_map<std::string_view, std::int64_t> at;
  at.reserve(prev.size());
  for (std::size_t i = 0; i < prev.size(); ++i) at.emplace(prev[i], std::int64_t(i));
  std::vector<std::int64_t> out(next.size(), -1);
  for (std::size_t i = 0; i < next.size(); ++i)
    if (auto it = at.find(next[i]); it != at.end()) {
      out[i] = it->second;
      at.erase(it);  // a subject listed twice keeps one subscription
    }
  return out;
}

// The subjects both configs hold keep their subscriptions (publishes to them never miss);
// the others are queued for resubscribe_some. Runs with the old config still in _cfg.
void stream::plan_resubscribe(const std::vector<std::string>& subjects, bool direct_changed,
                              const std::vector<std::int64_t>* kept_from) {
  if (_next_subject < _cfg.subjects.size()) {  // not all subscribed yet: start over
    for (auto id : _sub_ids)
      if (id != 0) _to_unsubscribe.push_back(id);
    _sub_ids.clear();
    _next_subject = 0;
  } else {
    std::vector<std::int64_t> found;
    if (kept_from == nullptr || kept_from->size() != subjects.size()) {
      found = subject_positions(_cfg.subjects, subjects);
      kept_from = &found;
    }
    std::vector<bool> kept(_sub_ids.size(), false);
    std::vector<std::uint64_t> ids(subjects.size(), 0);
    for (std::size_t i = 0; i < subjects.size(); ++i) {
      const std::int64_t from = (*kept_from)[i];
      if (from >= 0 && std::size_t(from) < _sub_ids.size() && _sub_ids[from] != 0) {
        ids[i] = _sub_ids[from];
        kept[from] = true;
      } else {
        _to_subscribe.push_back(i);
      }
    }
    for (std::size_t j = 0; j < _sub_ids.size(); ++j)
      if (!kept[j] && _sub_ids[j] != 0) _to_unsubscribe.push_back(_sub_ids[j]);
    _sub_ids = std::move(ids);
    _next_subject = subjects.size();
  }
  if (direct_changed) unsubscribe_direct();
}

bool stream::resubscribe_some(std::size_t max) {
  for (; max > 0 && !_to_unsubscribe.empty(); --max) {
    _host.unsubscribe(_to_unsubscribe.back());
    _to_unsubscribe.pop_back();
  }
  for (; max > 0 && !_to_subscribe.empty(); --max) {
    const std::size_t i = _to_subscribe.back();
    _to_subscribe.pop_back();
    _sub_ids[i] = _host.subscribe_cluster(_cfg.subjects[i], this);
  }
  if (!_to_unsubscribe.empty() || !_to_subscribe.empty()) return false;
  return subscribe_some(std::max<std::size_t>(max, 1));  // what is left of a restart, then direct get
}

void stream::apply_limits() {
  storage::stream_limits l;
  // Discard new never trims msgs/bytes (the publish is refused instead); per-subject
  // limits roll under both policies.
  if (_cfg.discard == discard_policy::old_msgs) {
    l.max_msgs = _cfg.max_msgs;
    l.max_bytes = _cfg.max_bytes;
  }
  l.max_age_ns = _cfg.max_age;
  l.max_msgs_per_subject = _cfg.max_msgs_per_subject;
  _store->set_limits(l);
  std::vector<std::uint64_t> removed;
  _store->enforce_limits(&removed);
  if (_cfg.max_age > 0 || _cfg.allow_msg_ttl) expire_msgs(_host.now(), removed);
  if (!removed.empty()) notify_removed(removed);
}

// Nats-Rollup (already validated): keep only the new message of its subject, or of the stream.
// Bounded by the rolling-up message's sequence (not "keep the last one"), so it may run after
// later messages were appended (a batch's roll-ups wait for its commit) and again at recovery.
void stream::roll_up(std::string_view value, std::string_view subject, std::uint64_t seq) {
  storage::purge_request pr;
  if (ascii_lower(value) == "sub") pr.filter = std::string(subject);
  pr.seq = seq;
  if (auto n = _store->purge(pr); n.ok() && *n > 0) notify_removed({});
}

// After an append: discard-old limits; consumers hear which messages went.
void stream::trim_after_append() {
  if (!_events) {
    _store->enforce_limits();
    return;
  }
  std::vector<std::uint64_t> removed;
  _store->enforce_limits(&removed);
  if (!removed.empty()) notify_removed(removed);
}

std::string stream::ack_body(std::uint64_t seq, bool duplicate, std::string_view val) const {
  std::string out = "{\"stream\":" + nlohmann::json(_cfg.name).dump() + ",";
  if (!_host.domain().empty()) out += "\"domain\":" + nlohmann::json(_host.domain()).dump() + ",";
  out += "\"seq\":" + std::to_string(seq);
  if (duplicate) out += ",\"duplicate\": true";
  if (!val.empty()) out += ",\"val\":\"" + std::string(val) + "\"";  // decimal digits: no escaping
  out += "}";
  return out;
}

void stream::reply_error(std::string_view reply, const api_error& e) {
  ojson j;
  j["error"] = to_json(e);
  j["stream"] = _cfg.name;
  if (!_host.domain().empty()) j["domain"] = _host.domain();
  j["seq"] = 0;
  _host.publish(reply, "", "", j.dump());
}

void stream::queue_ack(std::string reply, std::string body, std::uint64_t wait_seq) {
  // persist_mode async (ADR-56): the PubAck leaves before the write; a crash may lose what
  // it acknowledged (README, durability).
  const bool async = _cfg.persist_mode == "async";
  if ((async || wait_seq <= _store->durable_seq()) && _acks.empty()) {
    _host.publish(reply, "", "", body);
    _puback_latency.observe_ns(_host.clk().monotonic_ns() - _msg_start_ns);
    return;
  }
  _acks.push_back({wait_seq, std::move(reply), std::move(body), _msg_start_ns});
  _last_ack_queued = _host.now();
}

void stream::flush_acks(std::uint64_t durable) {
  while (!_acks.empty() && _acks.front().wait_seq <= durable) {
    auto a = std::move(_acks.front());
    _acks.pop_front();
    _host.publish(a.reply, "", "", a.body);
    _puback_latency.observe_ns(_host.clk().monotonic_ns() - a.start_ns);
  }
  if (!_fast.empty()) {
    _fast.on_durable(durable, _fast_out);
    send_fast_out();
  }
  if (_stalled || !_acks.empty()) watch_write_stall();
}

void stream::watch_write_stall() {
  const std::int64_t now = _host.clk().monotonic_ns();
  const bool held = !_acks.empty() && now - _acks.front().start_ns > kWriteStallNs;
  if (held && !_stalled) {
    _stalled = true;
    _stall_since_ns = _acks.front().start_ns;
    ++_write_stalls;
    _stall_logged = now - _stall_log_ns >= kStallLogEveryNs;
    if (!_stall_logged) return;
    PG_WARN("JetStream stream '{}': a PubAck has waited {} ms for its write to become durable ({} waiting, "
            "{} stalls so far); the storage is slow or its completions are starved (docs/tuning.md)",
            _cfg.name, (now - _stall_since_ns) / 1'000'000, _acks.size(), _write_stalls);
    _stall_log_ns = now;
  } else if (!held && _stalled) {
    if (_stall_logged)
      PG_INFO("JetStream stream '{}': writes durable again after a {} ms stall", _cfg.name,
              (now - _stall_since_ns) / 1'000'000);
    _stalled = false;
  }
}

std::int64_t stream::next_wakeup(std::int64_t now) const {
  if (_closed) return kNever;
  if (!idle()) return now;
  std::int64_t t = kNever;
  if (_cfg.max_age > 0 || _cfg.allow_msg_ttl) t = _next_expiry_check;
  // Fast-batch expiry and the mirror/source links' retries and heartbeats: every 1 ms.
  if (!_fast.empty() || !_links.empty()) t = std::min(t, now + kTimedWorkNs);
  if (!_batches.empty()) t = std::min(t, _batches.next_deadline());  // an abandoned batch's advisory
  return std::min(t, _schedules.next_deadline());
}

std::size_t stream::poll(std::int64_t now_wall) {
  if (_closed) return 0;
  std::size_t work = static_cast<std::size_t>(std::max(0, _store->poll()));
  if (!_links.empty()) work += poll_sources(now_wall);
  flush_acks(_store->durable_seq());  // also watches for a write stall
  if ((_cfg.max_age > 0 || _cfg.allow_msg_ttl) && now_wall >= _next_expiry_check) {
    _next_expiry_check = now_wall + kExpiryCheckNs;
    std::vector<std::uint64_t> removed;
    work += expire_msgs(now_wall, removed);
    if (!removed.empty()) notify_removed(removed);
  }
  if (!_batches.empty())
    for (const auto& id : _batches.expire(now_wall)) batch_abandoned(id, "timeout");
  if (!_fast.empty()) _fast.expire(now_wall);
  work += fire_schedules(now_wall);
  // While acks wait for the disk keep the loop turning for a typical O_DIRECT write (blocking
  // and being woken by the completion eventfd costs tens of µs of PubAck latency), then let it
  // block (an fdatasync can take milliseconds); without the eventfd, always keep turning.
  const bool spin = !_acks.empty() && (!_completions_wake_loop || now_wall - _last_ack_queued < kAckSpinNs);
  return work + (spin ? 1 : 0);
}

void stream::record_msg_id(std::string_view id, std::uint64_t seq, std::int64_t ts) {
  if (_cfg.duplicate_window <= 0 || id.empty()) return;
  auto [it, inserted] = _dedup.try_emplace(std::string(id), dedup_entry{seq, ts});
  if (!inserted) it->second = {seq, ts};
  _dedup_order.emplace_back(ts, std::string(id));
}

void stream::prune_dedup(std::int64_t now) {
  const std::int64_t floor = now - _cfg.duplicate_window;
  while (!_dedup_order.empty() && (_cfg.duplicate_window <= 0 || _dedup_order.front().first < floor)) {
    auto it = _dedup.find(_dedup_order.front().second);
    if (it != _dedup.end() && it->second.ts == _dedup_order.front().first) _dedup.erase(it);
    _dedup_order.pop_front();
  }
}

void stream::rebuild_dedup() {
  const std::uint64_t last = _store->last_seq();
  if (last == 0) return;
  if (auto m = _store->load(last); m.ok() && !m->headers.empty())
    if (auto id = find_header(m->headers, "Nats-Msg-Id")) _last_msg_id = std::string(*id);
  if (_cfg.duplicate_window <= 0) return;
  auto start = _store->seq_for_time(_host.now() - _cfg.duplicate_window);
  if (!start.ok()) return;
  for (std::uint64_t seq = *start; seq <= last;) {
    auto m = _store->load_next("", seq);
    if (!m.ok()) break;
    if (!m->headers.empty())
      if (auto id = find_header(m->headers, "Nats-Msg-Id")) record_msg_id(*id, m->seq, m->ts);
    seq = m->seq + 1;
  }
}

std::optional<api_error> stream::check_discard_new(std::string_view subject, std::uint64_t size, bool rollup) {
  const auto st = _store->state(false);
  std::uint64_t subj_count = 0;
  std::uint64_t subj_first_bytes = 0;
  if (_cfg.max_msgs_per_subject > 0) {
    auto counts = _store->subject_counts(subject);
    if (auto it = counts.find(std::string(subject)); it != counts.end()) subj_count = it->second;
  }
  const bool subj_full = _cfg.max_msgs_per_subject > 0 &&
                         subj_count >= static_cast<std::uint64_t>(_cfg.max_msgs_per_subject);
  if (_cfg.discard == discard_policy::new_msgs) {
    if (_cfg.max_msgs > 0 && st.msgs >= static_cast<std::uint64_t>(_cfg.max_msgs) && !subj_full)
      return make_error(err::store_failed, "maximum messages exceeded");
    if (_cfg.max_bytes > 0 && st.bytes + size > static_cast<std::uint64_t>(_cfg.max_bytes)) {
      bool freed = false;
      if (subj_full) {
        if (auto first = _store->load_next(subject, 0); first.ok()) {
          subj_first_bytes = storage::msg_size(
              _cfg.storage == storage_type::memory ? storage::byte_accounting::memory
                                                   : storage::byte_accounting::file,
              first->subject.size(), first->headers.size(), first->payload.size());
          freed = st.bytes - subj_first_bytes + size <= static_cast<std::uint64_t>(_cfg.max_bytes);
        }
      }
      if (!freed) return make_error(err::store_failed, "maximum bytes exceeded");
    }
    if (_cfg.discard_new_per_subject && subj_full && !rollup)
      return make_error(err::store_failed, "maximum messages per subject exceeded");
  }
  return std::nullopt;
}

void stream::on_msg(const core::inbound_msg& m) {
  if (_closed) return;
  // A fast-ingest message gets no PubAck of its own: it is not timed (one clock read less).
  if (is_fast_batch_reply(m.reply)) return on_fast_batch_msg(m);
  if (!m.reply.empty()) _msg_start_ns = _host.clk().monotonic_ns();  // only PubAcks are timed
  const bool want_ack = !_cfg.no_ack && !m.reply.empty();
  auto fail = [&](const api_error& e) {
    if (_copy_error) *_copy_error = e;  // a sourced message: the link retries from here
    if (want_ack) reply_error(m.reply, e);
  };
  if (_cfg.sealed) return fail(make_error(err::sealed));
  // The ingest transform first: every check below and the store see the stored subject.
  std::string transformed;
  const std::string_view subject = _rewrites.ingest(m.subject, transformed);
  const js_headers h = m.headers.empty() ? js_headers{} : parse_js_headers(m.headers);
  if (auto e = check_incr_headers(h, _cfg.allow_msg_counter, m.payload.size(), _copy_error != nullptr)) return fail(*e);
  if (h.expected_stream && *h.expected_stream != _cfg.name) return fail(make_error(err::expected_stream));
  if (h.batch_id) return on_batch_msg(m, subject, h);
  const auto r = store_msg(subject, m.headers, h, m.payload);
  if (r.what == publish_result::failed && _copy_error) *_copy_error = r.error;  // the link retries
  if (!want_ack) return;
  switch (r.what) {
    case publish_result::stored:
      return queue_ack(std::string(m.reply), ack_body(r.seq, false, r.val), r.seq);
    case publish_result::duplicate:
      return queue_ack(std::string(m.reply), ack_body(r.seq, true), _store->last_seq());
    case publish_result::failed:
      return reply_error(m.reply, r.error);
  }
}

// The checks of a plain publish after the stream-level ones, then the append.
stream::publish_result stream::store_msg(std::string_view subject, std::string_view hdr, const js_headers& h,
                                         std::string_view payload) {
  const std::int64_t now = _host.now();
  auto fail = [](api_error e) { return publish_result{publish_result::failed, 0, std::move(e)}; };
  std::string_view msg_id;
  std::optional<std::string_view> rollup;
  std::int64_t ttl = storage::ttl_none;
  std::string raised_ttl_hdr;  // hdr with a Nats-TTL raised to the marker TTL
  std::string schedule_hdr;    // hdr with the Nats-Rollup a schedule implies
  if (!hdr.empty()) {
    if (auto e = check_incr_headers(h, _cfg.allow_msg_counter, payload.size(), _copy_error != nullptr)) return fail(*e);
    if (const auto& v = h.ttl) {
      // A standalone server parses first: an invalid value is 10165 even where TTLs are off.
      const auto parsed = parse_msg_ttl(*v);
      if (!parsed) return fail(make_error(err::ttl_invalid));
      if (*parsed != 0 && !_cfg.allow_msg_ttl) return fail(make_error(err::ttl_disabled));
      ttl = *parsed;
      if (auto r = raise_ttl_to_marker_ttl(_cfg, ttl, hdr)) hdr = raised_ttl_hdr = std::move(*r);
    }
    // De-duplication first (as 2.9.10 and clustered streams): a retried publish gets its
    // original sequence even when its expectations are now stale.
    if (const auto& v = h.msg_id; v && !v->empty()) {
      msg_id = *v;
      prune_dedup(now);
      if (auto it = _dedup.find(std::string(msg_id)); it != _dedup.end())
        return publish_result{publish_result::duplicate, it->second.seq, {}};
    }
    const auto& subj_filter = h.expected_last_subj_seq_subject;
    if (const auto& v = h.expected_last_subj_seq) {
      std::string_view filter = subj_filter && !subj_filter->empty() ? *subj_filter : subject;
      std::uint64_t actual = 0;
      if (auto last = _store->load_last(filter); last.ok()) actual = last->seq;
      auto want = parse_u64(*v);
      if (!want || *want != actual) return fail(make_error(err::wrong_last_seq, std::to_string(actual)));
    } else if (subj_filter) {
      return fail(make_error(err::missing_subject_seq));
    }
    if (const auto& v = h.expected_last_seq) {
      auto want = parse_u64(*v);
      if (!want || *want != _store->last_seq())
        return fail(make_error(err::wrong_last_seq, std::to_string(_store->last_seq())));
    }
    if (auto e = check_schedule(subject, h, hdr, schedule_hdr, rollup)) return fail(*e);
    if (const auto& v = h.expected_last_msg_id; v && *v != _last_msg_id)
      return fail(make_error(err::wrong_last_msg_id, _last_msg_id));
    if (h.rollup) rollup = h.rollup;
    if (rollup) {
      if (!_cfg.allow_rollup_hdrs || _cfg.deny_purge) return fail(make_error(err::rollup_failed, "rollup not permitted"));
      auto r = ascii_lower(*rollup);
      if (r != "sub" && r != "all")
        return fail(make_error(err::rollup_failed, "rollup value invalid: \"" + std::string(*rollup) + "\""));
    }
  }
  // A counter stores its new total instead of the (empty) published payload.
  std::optional<counter_update> counted;
  if (_cfg.allow_msg_counter) {
    auto last = _store->load_last(subject);
    std::optional<std::string_view> last_payload;
    std::string_view last_hdr;
    if (last.ok()) {
      last_payload = last->payload;
      last_hdr = last->headers;
    }
    const auto source = _copy_error ? find_header(hdr, "Nats-Stream-Source") : std::nullopt;
    auto c = apply_increment(subject, hdr, h, payload, last_payload, last_hdr, source);
    if (!c.update) return fail(c.error);
    counted = std::move(c.update);
    hdr = counted->headers;
    payload = counted->payload;
  }
  if (_cfg.max_msg_size >= 0 && hdr.size() + payload.size() > static_cast<std::uint64_t>(_cfg.max_msg_size))
    return fail(make_error(err::message_too_large));
  if (_host.storage_exhausted(_cfg.storage)) return fail(make_error(err::insufficient_resources));
  if (hdr.size() > kMaxHeaderBytes) return fail(make_error(err::header_too_large));

  // Interest retention with nobody interested: the sequence is consumed, nothing stored.
  if (_cfg.retention == retention_policy::interest && !(_events && _events->consumer_wants(subject))) {
    if (auto st = _store->skip(1); !st.ok()) return fail(make_error(err::store_failed, base::errc_name(st.code())));
    const std::uint64_t seq = _store->last_seq();
    record_msg_id(msg_id, seq, now);
    _last_msg_id = std::string(msg_id);
    return publish_result{publish_result::stored, seq, {}};
  }

  const auto acct = _cfg.storage == storage_type::memory ? storage::byte_accounting::memory
                                                         : storage::byte_accounting::file;
  const std::uint64_t size = storage::msg_size(acct, subject.size(), hdr.size(), payload.size());
  if (auto e = _host.account_limit_error(_cfg.storage, size)) return fail(*e);
  if (auto e = check_discard_new(subject, size, rollup.has_value())) return fail(*e);

  const std::uint64_t prev_on_subject = _rewrites.republishes() ? _store->subject_last_seq(subject) : 0;
  auto seq = _store->append(subject, hdr, payload, now, ttl);
  if (!seq.ok()) return fail(make_error(err::store_failed, base::errc_name(seq.code())));
  if (rollup) roll_up(*rollup, subject, *seq);
  trim_after_append();
  record_msg_id(msg_id, *seq, now);
  _last_msg_id = std::string(msg_id);
  if (_rewrites.republishes()) {  // at most once, as a plain core publish
    if (auto c = _rewrites.republish(_cfg.name, subject, hdr, payload.size(), *seq, now, prev_on_subject))
      _host.publish(c->subject, "", c->headers, c->headers_only ? std::string_view() : payload);
  }
  if (_events) _events->on_stored(*seq, subject);
  if (!hdr.empty()) on_schedule_stored(*seq, subject, h, now);
  return publish_result{publish_result::stored, *seq, {}, counted ? counted->total : std::string()};
}

ojson stream_state_json(const storage::stream_state& st, bool deleted_details,
                        const std::map<std::string, std::uint64_t>* subjects, std::uint64_t consumer_count) {
  ojson j;
  j["messages"] = st.msgs;
  j["bytes"] = st.bytes;
  j["first_seq"] = st.first_seq;
  j["first_ts"] = base::rfc3339_nano(st.msgs ? st.first_ts : 0);
  j["last_seq"] = st.last_seq;
  j["last_ts"] = base::rfc3339_nano(st.last_ts);
  if (st.num_subjects) j["num_subjects"] = st.num_subjects;
  if (subjects && !subjects->empty()) {
    // The map's keys are unique and sorted (Go encodes a map sorted): append without the
    // ordered map's keyed insert, which scans every key (quadratic at 100,000 subjects).
    ojson s = ojson::object();
    auto& entries = static_cast<ojson::object_t::Container&>(s.get_ref<ojson::object_t&>());
    entries.reserve(subjects->size());
    for (const auto& [k, v] : *subjects) entries.emplace_back(k, v);
    j["subjects"] = std::move(s);
  }
  if (st.num_deleted) j["num_deleted"] = st.num_deleted;
  if (deleted_details && !st.deleted.empty()) j["deleted"] = st.deleted;
  if (!st.lost.empty()) j["lost"] = ojson{{"msgs", st.lost}, {"bytes", st.lost_bytes}};
  j["consumer_count"] = consumer_count;
  return j;
}

ojson stream::state_json(bool deleted_details, const std::map<std::string, std::uint64_t>* subjects) const {
  return stream_state_json(_store->state(deleted_details), deleted_details, subjects,
                           _events ? _events->consumer_count() : 0);
}

}  // namespace js
