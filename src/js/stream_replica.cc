#include "src/js/stream_replica.h"

#include <fmt/format.h>

#include <algorithm>
#include <type_traits>

#include "src/core/subject.h"
#include "src/js/js_headers.h"
#include "src/js/json_util.h"
#include "src/js/msg_ttl.h"
#include "src/js/delete_markers.h"
#include "src/js/stream_counter.h"

namespace js {

namespace re = repl_entries;

namespace {

std::string lower(std::string_view s) {
  std::string out(s);
  for (auto& c : out) c = static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
  return out;
}

}  // namespace

stream_replica::stream_replica(stream_config cfg, storage::stream_store& store,
                               repl::replicated_log& log, std::string self,
                               bool await_leader_start)
    : _cfg(std::move(cfg)),
      _store(store),
      _log(log),
      _self(std::move(self)),
      _acct(_cfg.storage == storage_type::memory ? storage::byte_accounting::memory
                                                 : storage::byte_accounting::file),
      _await_leader_start(await_leader_start) {
  _rewrites.configure(_cfg);
  set_store_limits();
}

void stream_replica::set_store_limits() {
  // As the standalone stream: discard new refuses rather than trims; per-subject limits roll
  // under both policies. max_age only takes effect through applied expire entries.
  storage::stream_limits l;
  l.max_age_ns = _cfg.max_age;
  if (_cfg.discard == discard_policy::old_msgs) {
    l.max_msgs = _cfg.max_msgs;
    l.max_bytes = _cfg.max_bytes;
  }
  l.max_msgs_per_subject = _cfg.max_msgs_per_subject;
  _store.set_limits(l);
}

void stream_replica::set_config(stream_config cfg) {
  _cfg = std::move(cfg);
  _rewrites.configure(_cfg);
  set_store_limits();
  _store.enforce_limits();  // tighter discard-old limits trim at once, on every replica here
}

void stream_replica::start_config(std::string config_json, std::uint64_t meta_index) {
  _config_index = _want_index = meta_index;
  _want_json = config_json;
  _config_json = std::move(config_json);
}

void stream_replica::want_config(std::string config_json, std::uint64_t meta_index) {
  if (meta_index <= _want_index) return;
  _want_index = meta_index;
  _want_json = std::move(config_json);
  propose_config();
}

void stream_replica::propose_config() {
  if (failed() || !_ready || !_log.is_leader() || _want_index <= _config_index) return;
  if (_config_proposed_term == _lead_term && _config_proposed_index >= _want_index) return;  // in flight
  const auto st = _log.propose_async(re::encode(re::stream_op{re::config_change{_want_index, _want_json}})).status;
  if (st != repl::propose_status::ok && st != repl::propose_status::queued) return;  // the next event tries again
  _config_proposed_term = _lead_term;
  _config_proposed_index = _want_index;
}

void stream_replica::await_seed(std::string origin, std::vector<re::msg> msgs, std::uint64_t last_seq) {
  _seeded = false;
  _seed_origin = std::move(origin);
  _seed = std::move(msgs);
  _seed_last = last_seq;
}

// After its own leader_start applied: the messages the store does not hold yet (a previous
// term of this server may have seeded part), in batches of about 512 KB, then seed_done.
void stream_replica::propose_seed() {
  constexpr std::size_t kBatchBytes = 512 * 1024;
  const std::uint64_t have = _store.last_seq();
  re::batch b;
  std::size_t bytes = 0;
  auto flush = [&] {
    if (b.msgs.empty()) return true;
    const bool ok = _log.propose(re::encode(re::stream_op{std::move(b)})).status == repl::propose_status::ok;
    b = {};
    bytes = 0;
    return ok;
  };
  for (const auto& m : _seed) {
    if (m.seq <= have) continue;
    b.msgs.push_back(m);
    bytes += m.subject.size() + m.headers.size() + m.payload.size() + 32;
    if (bytes >= kBatchBytes && !flush()) return;
  }
  if (!flush()) return;
  (void)_log.propose(re::encode(re::stream_op{re::seed_done{std::max(_seed_last, have)}}));
}

void stream_replica::fail(std::string what) {
  if (_error.empty()) _error = std::move(what);
  _ready = false;
}

void stream_replica::resume_from_applied() {
  _ready = true;
  _counters.clear();
  _next_seq = _store.last_seq() + 1;
  _last_ts = std::max(_last_ts, _store.state(false).last_ts);
  _shadow_last_msg_id = _last_msg_id;
  _config_proposed_term = 0;
  propose_config();  // a change the meta group gave this server that the log does not hold yet
}

void stream_replica::on_role(std::int64_t) {
  if (failed()) return;
  const bool leader = _log.is_leader();
  const std::uint64_t term = _log.term();
  if (leader && term != _refused_term && (!_leading || term != _lead_term)) {
    _leading = true;
    _lead_term = term;
    _ready = false;
    _expire_index = _expire_ticket = 0;  // an old term's expiry applies before this leader_start
    const auto bytes = re::encode(re::stream_op{re::leader_start{term, _self}});
    const auto st = _log.propose_async(bytes).status;
    if (st != repl::propose_status::ok && st != repl::propose_status::queued) _leading = false;  // next event
    if (_leading && !_await_leader_start) resume_from_applied();
  } else if (!leader && _leading) {
    _leading = false;
    _ready = false;
    _counters.clear();
    _batches.clear();
    _expire_index = 0;
    _expire_ticket = 0;
  }
  propose_config();  // a config change this leader has not proposed yet (or could not)
}

std::int64_t stream_replica::next_expiry() const {
  if (_cfg.max_age <= 0 && !_cfg.allow_msg_ttl) return 0;
  return _store.next_expiry();
}

bool stream_replica::tick(std::int64_t now_ns) {
  if (!_batches.empty())
    for (auto& id : _batches.expire(now_ns)) _abandoned.emplace_back(std::move(id), "timeout");
  if (failed() || !_ready || !_log.is_leader() || _expire_index != 0) return false;
  const std::int64_t due = next_expiry();
  if (due == 0 || due > now_ns) return false;
  const auto r = _log.propose_async(re::encode(re::stream_op{re::expire{now_ns}}));
  if (r.status == repl::propose_status::not_leader) {
    _leading = _ready = false;
    return false;
  }
  if (r.status == repl::propose_status::queued) {
    _expire_ticket = r.index;
    _expire_index = ~std::uint64_t(0);  // in flight, index not known yet
    return true;
  }
  if (r.status != repl::propose_status::ok) return false;
  _expire_index = r.index;
  return true;
}

std::uint64_t stream_replica::pending_on_subject(std::string_view subject) const {
  std::uint64_t n = 0;
  for (const auto& p : _pending)
    n += std::uint64_t(std::count(p.subjects.begin(), p.subjects.end(), subject));
  return n;
}

std::uint64_t stream_replica::shadow_subject_last(std::string_view filter) {
  // The newest proposed message on the subject wins over the store's.
  std::uint64_t seq = _next_seq;
  for (auto p = _pending.rbegin(); p != _pending.rend(); ++p) {
    for (auto s = p->subjects.rbegin(); s != p->subjects.rend(); ++s) {
      --seq;
      if (core::subject_matches(filter, *s)) return seq;
    }
  }
  auto last = _store.load_last(filter);
  return last.ok() ? last->seq : 0;
}

std::optional<api_error> stream_replica::check_msg(std::int64_t, std::string_view subject,
                                                   std::string_view headers,
                                                   std::string_view payload,
                                                   std::uint64_t extra_msgs,
                                                   std::uint64_t extra_bytes,
                                                   std::uint64_t& size, std::int64_t& ttl) {
  const js_headers h = headers.empty() ? js_headers{} : parse_js_headers(headers);
  ttl = storage::ttl_none;
  if (const auto& v = h.ttl) {
    // Parsed first, as the standalone stream: an invalid value is 10165 even with TTLs off.
    const auto parsed = parse_msg_ttl(*v);
    if (!parsed) return make_error(err::ttl_invalid);
    if (*parsed != 0 && !_cfg.allow_msg_ttl) return make_error(err::ttl_disabled);
    ttl = *parsed;
  }
  const auto& subj_filter = h.expected_last_subj_seq_subject;
  if (const auto& v = h.expected_last_subj_seq) {
    const std::string_view filter = subj_filter && !subj_filter->empty() ? *subj_filter : subject;
    const std::uint64_t actual = shadow_subject_last(filter);
    const auto want = parse_u64(*v);
    if (!want || *want != actual) return make_error(err::wrong_last_seq, std::to_string(actual));
  } else if (subj_filter) {
    return make_error(err::missing_subject_seq);
  }
  if (const auto& v = h.expected_last_seq) {
    const std::uint64_t actual = shadow_last_seq() + extra_msgs;
    const auto want = parse_u64(*v);
    if (!want || *want != actual) return make_error(err::wrong_last_seq, std::to_string(actual));
  }
  if (const auto& v = h.expected_last_msg_id; v && *v != _shadow_last_msg_id)
    return make_error(err::wrong_last_msg_id, _shadow_last_msg_id);
  if (const auto& v = h.rollup) {
    if (!_cfg.allow_rollup_hdrs || _cfg.deny_purge)
      return make_error(err::rollup_failed, "rollup not permitted");
    const auto r = lower(*v);
    if (r != "sub" && r != "all")
      return make_error(err::rollup_failed, "rollup value invalid: \"" + std::string(*v) + "\"");
  }
  if (_cfg.max_msg_size > 0 &&
      headers.size() + payload.size() > static_cast<std::uint64_t>(_cfg.max_msg_size))
    return make_error(err::message_too_large);
  size = storage::msg_size(_acct, subject.size(), headers.size(), payload.size());
  if (_cfg.discard == discard_policy::new_msgs) {
    const auto st = _store.state(false);
    const std::uint64_t msgs = st.msgs + _pending_msgs + extra_msgs;
    const std::uint64_t bytes = st.bytes + _pending_bytes + extra_bytes;
    if (_cfg.max_msgs > 0 && msgs >= static_cast<std::uint64_t>(_cfg.max_msgs))
      return make_error(err::store_failed, "maximum messages exceeded");
    if (_cfg.max_bytes > 0 && bytes + size > static_cast<std::uint64_t>(_cfg.max_bytes))
      return make_error(err::store_failed, "maximum bytes exceeded");
    if (_cfg.discard_new_per_subject && _cfg.max_msgs_per_subject > 0 &&
        _store.subject_count(subject) + pending_on_subject(subject) >=
            static_cast<std::uint64_t>(_cfg.max_msgs_per_subject))
      return make_error(err::store_failed, "maximum messages per subject exceeded");
  }
  return std::nullopt;
}

submit_status stream_replica::propose(re::stream_op op, pending_entry p,
                                      std::vector<replica_reply>&, std::uint64_t) {
  if (p.msgs > 0 && markers_pending()) return submit_status::busy;  // offered again once it applied
  const auto bytes = re::encode(op);
  const auto r = _log.propose_async(bytes);
  if (r.status == repl::propose_status::not_leader) {
    _leading = _ready = false;
    return submit_status::not_leader;
  }
  if (r.status == repl::propose_status::busy) return submit_status::busy;
  if (r.status == repl::propose_status::queued) {
    p.ticket = r.index;
  } else if (r.status == repl::propose_status::ok) {
    p.index = r.index;
  } else {
    return submit_status::not_ready;
  }
  p.id = _next_pending_id++;
  p.term = _lead_term;
  _next_seq += p.msgs;
  _pending_msgs += p.msgs;
  _pending_bytes += p.bytes;
  for (const auto& id : p.msg_ids)
    if (!id.empty()) _pending_ids[id] = p.id;
  if (!p.msg_ids.empty()) _shadow_last_msg_id = p.msg_ids.back();
  _pending.push_back(std::move(p));
  return submit_status::proposed;
}

bool stream_replica::counter_last(std::string_view subject, std::string& payload, std::string& headers) {
  if (auto it = _counters.find(std::string(subject)); it != _counters.end()) {
    if (it->second.seq > _store.last_seq()) {
      payload = it->second.payload;
      headers = it->second.headers;
      return true;
    }
    _counters.erase(it);  // applied: the store has it (or what became of it since)
  }
  auto last = _store.load_last(subject);
  if (!last.ok()) return false;
  payload = std::move(last->payload);
  headers = std::move(last->headers);
  return true;
}

submit_status stream_replica::publish(std::int64_t now_ns, std::string_view published_subject,
                                      std::string_view headers, std::string_view payload,
                                      std::uint64_t token, std::vector<replica_reply>& out, bool sourced) {
  if (failed() || !_log.is_leader()) return submit_status::not_leader;
  if (!_ready) return submit_status::not_ready;
  // Before anything is taken (an atomic batch's commit leaves the batch table when taken).
  if (markers_pending()) return submit_status::busy;
  std::string transformed;  // the config's subject_transform, applied before any check
  const std::string_view subject = _rewrites.ingest(published_subject, transformed);
  auto answer = [&](api_error e) {
    out.push_back({token, replica_reply::kind::error, 0, false, std::move(e)});
    return submit_status::answered;
  };
  if (_cfg.sealed) return answer(make_error(err::sealed));
  const js_headers h = headers.empty() ? js_headers{} : parse_js_headers(headers);
  if (auto e = check_incr_headers(h, _cfg.allow_msg_counter, payload.size(), sourced)) return answer(*e);
  if (h.expected_stream && *h.expected_stream != _cfg.name)
    return answer(make_error(err::expected_stream));
  if (h.batch_id) return publish_atomic(now_ns, subject, headers, payload, token, out);
  const std::string msg_id = h.msg_id ? std::string(*h.msg_id) : std::string();
  if (!msg_id.empty() && _cfg.duplicate_window > 0) {
    // De-duplication first: a retry gets the original sequence even when its expectations
    // are stale by now (as the standalone path).
    if (auto it = _dedup.find(msg_id);
        it != _dedup.end() && it->second.ts >= now_ns - _cfg.duplicate_window) {
      out.push_back({token, replica_reply::kind::pub_ack, it->second.seq, true, {}});
      return submit_status::answered;
    }
    if (auto it = _pending_ids.find(msg_id); it != _pending_ids.end()) {
      for (auto& p : _pending)
        if (p.id == it->second) {
          const auto pos = std::find(p.msg_ids.begin(), p.msg_ids.end(), msg_id) - p.msg_ids.begin();
          p.dup_tokens.emplace_back(token, std::uint64_t(pos));
          return submit_status::proposed;
        }
    }
  }
  // A counter stores its new total instead of the (empty) published payload.
  std::optional<counter_update> counted;
  if (_cfg.allow_msg_counter) {
    std::string last_payload, last_hdr;
    const bool has_last = counter_last(subject, last_payload, last_hdr);
    const auto source = sourced ? find_header(headers, "Nats-Stream-Source") : std::nullopt;
    auto c = apply_increment(subject, headers, h, payload,
                             has_last ? std::optional<std::string_view>(last_payload) : std::nullopt, last_hdr, source);
    if (!c.update) return answer(c.error);
    counted = std::move(c.update);
    headers = counted->headers;
    payload = counted->payload;
  }
  std::uint64_t size = 0;
  std::int64_t ttl = storage::ttl_none;
  if (auto e = check_msg(now_ns, subject, headers, payload, 0, 0, size, ttl)) return answer(*e);
  std::string raised;  // a Nats-TTL below the marker TTL, raised to it (as the standalone stream)
  if (auto r = raise_ttl_to_marker_ttl(_cfg, ttl, headers)) {
    raised = std::move(*r);
    headers = raised;
  }
  _last_ts = std::max(_last_ts, now_ns);
  const std::uint64_t seq = _next_seq;
  if (_cfg.retention == retention_policy::interest && _interest && !_interest(subject)) {
    // No consumer matches it: the sequence is used, nothing is stored (as on one server).
    pending_entry p;
    p.token = token;
    p.msgs = 1;
    p.msg_ids = {msg_id};
    return propose(re::stream_op{re::no_interest{seq, _last_ts, msg_id}}, std::move(p), out, token);
  }
  re::msg m{seq, _last_ts, ttl, std::string(subject), std::string(headers),
            std::string(payload)};
  pending_entry p;
  p.token = token;
  p.msgs = 1;
  p.bytes = size;
  p.subjects = {m.subject};
  p.msg_ids = {msg_id};
  if (counted) p.val = counted->total;
  const auto st = propose(re::stream_op{std::move(m)}, std::move(p), out, token);
  if (counted && st == submit_status::proposed)
    _counters[std::string(subject)] = counter_value{seq, std::move(counted->payload), std::move(counted->headers)};
  return st;
}

submit_status stream_replica::publish_batch(std::int64_t now_ns, const std::vector<replica_batch_msg>& msgs,
                                            std::uint64_t token, std::vector<replica_reply>& out,
                                            std::string batch_id) {
  if (failed() || !_log.is_leader()) return submit_status::not_leader;
  if (!_ready) return submit_status::not_ready;
  auto answer = [&](api_error e) {
    out.push_back({token, replica_reply::kind::error, 0, false, std::move(e)});
    return submit_status::answered;
  };
  if (_cfg.sealed) return answer(make_error(err::sealed));
  if (msgs.empty()) return answer(make_error(err::bad_request));
  _last_ts = std::max(_last_ts, now_ns);
  re::batch b;
  pending_entry p;
  p.token = token;
  p.batch_id = std::move(batch_id);
  const std::string saved_last_id = _shadow_last_msg_id;
  // A counter stream's batch: each increment adds to the total before it (this batch's
  // earlier messages first).
  std::unordered_map<std::string, counter_value> counted;
  for (const auto& bm : msgs) {
    std::string_view hdr = bm.headers, body = bm.payload;
    const js_headers h = bm.headers.empty() ? js_headers{} : parse_js_headers(bm.headers);
    if (_cfg.allow_msg_counter) {
      if (auto e = check_incr_headers(h, true, bm.payload.size(), false)) {
        _shadow_last_msg_id = saved_last_id;
        return answer(*e);
      }
      std::string last_payload, last_hdr;
      bool has_last = false;
      if (auto it = counted.find(bm.subject); it != counted.end()) {
        last_payload = it->second.payload;
        last_hdr = it->second.headers;
        has_last = true;
      } else {
        has_last = counter_last(bm.subject, last_payload, last_hdr);
      }
      auto c = apply_increment(bm.subject, bm.headers, h, bm.payload,
                               has_last ? std::optional<std::string_view>(last_payload) : std::nullopt, last_hdr,
                               std::nullopt);
      if (!c.update) {
        _shadow_last_msg_id = saved_last_id;
        return answer(c.error);
      }
      auto& v = counted[bm.subject];
      v = counter_value{_next_seq + p.msgs, std::move(c.update->payload), std::move(c.update->headers)};
      hdr = v.headers;
      body = v.payload;
    }
    std::uint64_t size = 0;
    std::int64_t ttl = storage::ttl_none;
    if (auto e = check_msg(now_ns, bm.subject, hdr, body, p.msgs, p.bytes, size, ttl)) {
      _shadow_last_msg_id = saved_last_id;
      return answer(*e);
    }
    std::string id = h.msg_id ? std::string(*h.msg_id) : std::string();
    std::string stored_hdr(hdr);
    if (auto r = raise_ttl_to_marker_ttl(_cfg, ttl, hdr)) stored_hdr = std::move(*r);
    b.msgs.push_back({_next_seq + p.msgs, _last_ts, ttl, bm.subject, std::move(stored_hdr), std::string(body)});
    p.subjects.push_back(bm.subject);
    p.msg_ids.push_back(id);
    _shadow_last_msg_id = id;  // the next message's Expected-Last-Msg-Id sees this one
    ++p.msgs;
    p.bytes += size;
  }
  _shadow_last_msg_id = saved_last_id;
  const auto st = propose(re::stream_op{std::move(b)}, std::move(p), out, token);
  if (st == submit_status::proposed)
    for (auto& [subject, v] : counted) _counters[subject] = std::move(v);
  return st;
}

submit_status stream_replica::copy_mirrored(re::msg m) {
  if (failed() || !_log.is_leader()) return submit_status::not_leader;
  if (!_ready) return submit_status::not_ready;
  if (m.seq < _next_seq) return submit_status::answered;  // taken already
  std::string transformed;  // the config's subject_transform, as the standalone mirror applies it
  if (const auto s = _rewrites.ingest(m.subject, transformed); s != m.subject) m.subject = std::string(s);
  pending_entry p;
  p.msgs = 1;
  p.bytes = storage::msg_size(_acct, m.subject.size(), m.headers.size(), m.payload.size());
  p.subjects = {m.subject};
  const std::uint64_t next = _next_seq;
  _next_seq = m.seq;  // propose() moves it past this message
  _last_ts = std::max(_last_ts, m.ts);
  std::vector<replica_reply> none;
  const auto st = propose(re::stream_op{std::move(m)}, std::move(p), none, 0);
  if (st != submit_status::proposed) _next_seq = next;
  return st;
}

submit_status stream_replica::purge(const storage::purge_request& req, std::uint64_t token,
                                    std::vector<replica_reply>& out) {
  if (failed() || !_log.is_leader()) return submit_status::not_leader;
  if (!_ready) return submit_status::not_ready;
  if (_cfg.sealed || _cfg.deny_purge) {
    out.push_back({token, replica_reply::kind::error, 0, false,
                   make_error(_cfg.sealed ? err::sealed : err::purge_failed, "purge not permitted")});
    return submit_status::answered;
  }
  pending_entry p;
  p.token = token;
  return propose(re::stream_op{re::purge{req.filter, req.seq, req.keep}}, std::move(p), out, token);
}

submit_status stream_replica::remove(std::uint64_t seq, bool erase, std::uint64_t token,
                                     std::vector<replica_reply>& out) {
  if (failed() || !_log.is_leader()) return submit_status::not_leader;
  if (!_ready) return submit_status::not_ready;
  // The standalone stream's errors (stream_api.cc): sealed 10109, deny_delete 10057, a
  // sequence not stored 10043.
  if (_cfg.sealed || _cfg.deny_delete || !_store.load(seq).ok()) {
    out.push_back({token, replica_reply::kind::error, 0, false,
                   _cfg.sealed        ? make_error(err::sealed)
                   : _cfg.deny_delete ? make_error(err::msg_delete_failed, "message delete not permitted")
                                      : make_error(err::sequence_not_found, std::to_string(seq))});
    return submit_status::answered;
  }
  pending_entry p;
  p.token = token;
  return propose(re::stream_op{re::msg_delete{seq, erase}}, std::move(p), out, token);
}

void stream_replica::resolve_pending(std::uint64_t index, std::uint64_t term,
                                     std::uint64_t first_seq, std::uint64_t last_seq,
                                     std::vector<replica_reply>& out, replica_reply::kind what,
                                     std::uint64_t value, std::optional<api_error> error) {
  auto drop = [&](bool answered) {
    pending_entry& p = _pending.front();
    _pending_msgs -= p.msgs;
    _pending_bytes -= p.bytes;
    for (const auto& id : p.msg_ids)
      if (auto it = _pending_ids.find(id); it != _pending_ids.end() && it->second == p.id)
        _pending_ids.erase(it);
    if (!answered) ++_lost;
    _pending.pop_front();
  };
  // Entries whose index is not known yet (queued) are at the back and stay: their index, or
  // their refusal, arrives before they could be applied.
  auto known = [&] { return !_pending.empty() && _pending.front().index != 0; };
  while (known() && _pending.front().index < index) drop(false);  // never matched
  if (!_pending.empty() && _pending.front().index == index) {
    pending_entry& p = _pending.front();
    const bool ours = p.term == term;
    if (ours) {
      if (error) {
        out.push_back({p.token, replica_reply::kind::error, 0, false, error});
      } else {
        out.push_back({p.token, what, what == replica_reply::kind::pub_ack ? last_seq : value,
                       false, {}, p.batch_id, p.batch_id.empty() ? 0 : p.msgs, p.val});
        for (const auto& [tok, pos] : p.dup_tokens)
          out.push_back({tok, replica_reply::kind::pub_ack, first_seq + pos, true, {}});
      }
    }
    drop(ours);
  }
  // An entry of term T committed at this index: a proposal of an older term further on can
  // never commit (terms never decrease along a log).
  while (known() && _pending.front().term < term) drop(false);
}

void stream_replica::on_proposed(std::uint64_t first_ticket, std::uint64_t count,
                                 std::uint64_t first_index, std::uint64_t term) {
  const std::uint64_t end = first_ticket + count;
  auto in_range = [&](std::uint64_t t) { return t >= first_ticket && t < end; };
  if (_expire_ticket != 0 && in_range(_expire_ticket)) {
    _expire_index = first_index ? first_index + (_expire_ticket - first_ticket) : 0;
    _expire_ticket = 0;
  }
  if (first_index == 0) {
    // Refused: this server does not lead in that term any more. What the shadow state
    // counted on will not be in the log; the proposals go unanswered, as if lost with it.
    std::deque<pending_entry> kept;
    for (auto& p : _pending) {
      if (p.index == 0 && in_range(p.ticket)) {
        _pending_msgs -= p.msgs;
        _pending_bytes -= p.bytes;
        for (const auto& id : p.msg_ids)
          if (auto it = _pending_ids.find(id); it != _pending_ids.end() && it->second == p.id)
            _pending_ids.erase(it);
        ++_lost;
        continue;
      }
      kept.push_back(std::move(p));
    }
    _pending = std::move(kept);
    _refused_term = std::max(_refused_term, term);
    if (_leading && term == _lead_term) _leading = _ready = false;
    return;
  }
  for (auto& p : _pending)
    if (p.index == 0 && in_range(p.ticket)) {
      p.index = first_index + (p.ticket - first_ticket);
      p.ticket = 0;
    }
}

void stream_replica::record_msg_id(std::string_view id, std::uint64_t seq, std::int64_t ts) {
  if (_cfg.duplicate_window <= 0) return;
  // Pruned by the entries' own timestamps, so every replica holds the same window.
  const std::int64_t floor = ts - _cfg.duplicate_window;
  while (!_dedup_order.empty() && _dedup_order.front().first < floor) {
    auto it = _dedup.find(_dedup_order.front().second);
    if (it != _dedup.end() && it->second.ts == _dedup_order.front().first) _dedup.erase(it);
    _dedup_order.pop_front();
  }
  if (id.empty()) return;
  _dedup[std::string(id)] = {seq, ts};
  _dedup_order.emplace_back(ts, std::string(id));
}

bool stream_replica::apply_msg(const re::msg& m) {
  const std::uint64_t last = _store.last_seq();
  // A seed and a mirror keep the origin's sequences: the ones deleted there are skipped.
  if ((!_seeded || _cfg.has_mirror()) && m.seq > last + 1) (void)_store.skip(m.seq - last - 1);
  if (m.seq != _store.last_seq() + 1) {
    fail(fmt::format("index {}: message sequence {} after the store's last {}", _applied_index,
                     m.seq, last));
    return false;
  }
  const bool republish = _rewrites.republishes() && _log.is_leader();
  const std::uint64_t prev_on_subject = republish ? _store.subject_last_seq(m.subject) : 0;
  auto seq = _store.append(m.subject, m.headers, m.payload, m.ts, m.ttl);
  if (!seq.ok() || *seq != m.seq) {
    fail(fmt::format("index {}: store append of sequence {} failed", _applied_index, m.seq));
    return false;
  }
  if (republish)
    if (auto c = _rewrites.republish(_cfg.name, m.subject, m.headers, m.payload.size(), m.seq, m.ts, prev_on_subject))
      _republished.push_back({std::move(c->subject), std::move(c->headers),
                              c->headers_only ? std::string() : m.payload});
  const js_headers h = m.headers.empty() ? js_headers{} : parse_js_headers(m.headers);
  if (h.rollup && _cfg.allow_rollup_hdrs) {
    const auto r = lower(*h.rollup);
    if (r == "sub") (void)_store.purge({m.subject, 0, 1});
    if (r == "all") (void)_store.purge({"", 0, 1});
  }
  _store.enforce_limits();
  const std::string id = h.msg_id ? std::string(*h.msg_id) : std::string();
  record_msg_id(id, m.seq, m.ts);
  _last_msg_id = id;
  return true;
}

void stream_replica::apply(const repl::committed_entry& e, std::vector<replica_reply>& out) {
  if (failed()) return;
  if (e.value.type == repl::entry_type::snapshot) return restore(e);
  if (e.index != _applied_index + 1) {
    fail(fmt::format("applied index {} after {}", e.index, _applied_index));
    return;
  }
  _applied_index = e.index;
  if (_expire_index != 0 && e.index >= _expire_index) _expire_index = 0;  // applied or lost
  const std::uint64_t term = e.value.term;
  if (term > _lead_term && _leading) {  // someone else led since
    _leading = _ready = false;
    _expire_index = _expire_ticket = 0;
  }
  if (e.value.type != repl::entry_type::command) {
    resolve_pending(e.index, term, 0, 0, out, replica_reply::kind::pub_ack, 0, std::nullopt);
    return;
  }
  auto op = re::decode_stream(e.value.data);
  if (!op) return fail(fmt::format("index {}: undecodable stream entry", e.index));
  std::visit(
      [&](auto& v) {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, re::msg>) {
          if (apply_msg(v))
            resolve_pending(e.index, term, v.seq, v.seq, out, replica_reply::kind::pub_ack, 0, {});
        } else if constexpr (std::is_same_v<T, re::batch>) {
          for (const auto& m : v.msgs)
            if (!apply_msg(m)) return;
          const std::uint64_t first = v.msgs.empty() ? 0 : v.msgs.front().seq;
          const std::uint64_t last = v.msgs.empty() ? 0 : v.msgs.back().seq;
          resolve_pending(e.index, term, first, last, out, replica_reply::kind::pub_ack, 0, {});
        } else if constexpr (std::is_same_v<T, re::purge>) {
          auto n = _store.purge({v.filter, v.seq, v.keep});
          std::optional<api_error> failure;
          if (!n.ok()) failure = make_error(err::purge_failed, base::errc_name(n.code()));
          resolve_pending(e.index, term, 0, 0, out, replica_reply::kind::purged,
                          n.ok() ? *n : 0, failure);
        } else if constexpr (std::is_same_v<T, re::msg_delete>) {
          const auto st = _store.remove(v.seq, v.erase);
          std::optional<api_error> failure;
          // Gone meanwhile (a second delete of it in flight): as nats-server's !removed.
          if (!st.ok())
            failure = st.err().code == base::errc::not_found
                          ? make_error(err::sequence_not_found, std::to_string(v.seq))
                          : make_error(err::msg_delete_failed, base::errc_name(st.err().code));
          resolve_pending(e.index, term, 0, 0, out, replica_reply::kind::deleted, v.seq, failure);
        } else if constexpr (std::is_same_v<T, re::expire>) {
          apply_expire(v.now);
          resolve_pending(e.index, term, 0, 0, out, replica_reply::kind::pub_ack, 0, {});
        } else if constexpr (std::is_same_v<T, re::seed_done>) {
          const std::uint64_t last = _store.last_seq();
          if (v.last_seq > last) (void)_store.skip(v.last_seq - last);
          _seeded = true;
          _seed.clear();
          _seed.shrink_to_fit();
          resolve_pending(e.index, term, 0, 0, out, replica_reply::kind::pub_ack, 0, {});
          // Proposed by this leader in its term, after its leader_start: it may write now.
          if (_leading && term == _lead_term) resume_from_applied();
        } else if constexpr (std::is_same_v<T, re::no_interest>) {
          if (v.seq != _store.last_seq() + 1)
            return fail(fmt::format("index {}: skipped sequence {} after the store's last {}", e.index, v.seq,
                                    _store.last_seq()));
          if (!_store.skip(1).ok()) return fail(fmt::format("index {}: store skip failed", e.index));
          record_msg_id(v.msg_id, v.seq, v.ts);
          _last_msg_id = v.msg_id;
          resolve_pending(e.index, term, v.seq, v.seq, out, replica_reply::kind::pub_ack, 0, {});
        } else if constexpr (std::is_same_v<T, re::config_change>) {
          resolve_pending(e.index, term, 0, 0, out, replica_reply::kind::pub_ack, 0, {});
          if (v.meta_index <= _config_index) return;  // an older change, or a repeat
          stream_config cfg;
          if (auto err = parse_stream_config(v.config_json, cfg))
            return fail(fmt::format("index {}: config change does not parse: {}", e.index, err->description));
          (void)normalise(cfg);
          set_config(std::move(cfg));
          _config_index = v.meta_index;
          _config_json = std::move(v.config_json);
        } else {
          resolve_pending(e.index, term, 0, 0, out, replica_reply::kind::pub_ack, 0, {});
          if (_leading && v.term == _lead_term && term == _lead_term && v.leader == _self) {
            // Everything committed before this entry is applied.
            if (_seeded) resume_from_applied();
            else if (_self == _seed_origin) propose_seed();
            else _stepdown_wish = true;  // only the origin holds the seed
          }
        }
      },
      *op);
}

}  // namespace js
