// Atomic batches on a replicated stream's leader (stream_replica.h): the messages of a batch
// are staged in the leader's atomic_batch_table, answered with zero-byte acks; the commit is
// checked as a whole with the standalone stream's batch rules (stream_batch.cc) and proposed
// as one batch entry, so every replica stores all of it or none of it.
#include <unordered_set>

#include "src/js/js_headers.h"
#include "src/js/json_util.h"
#include "src/js/stream_replica.h"

namespace js {

submit_status stream_replica::publish_atomic(std::int64_t now_ns, std::string_view subject, std::string_view headers,
                                             std::string_view payload, std::uint64_t token,
                                             std::vector<replica_reply>& out) {
  auto answer = [&](api_error e) {
    out.push_back({token, replica_reply::kind::error, 0, false, std::move(e)});
    return submit_status::answered;
  };
  if (!_cfg.allow_atomic) return answer(make_error(err::atomic_disabled));
  if (_cfg.max_msg_size >= 0 && headers.size() + payload.size() > static_cast<std::uint64_t>(_cfg.max_msg_size))
    return answer(make_error(err::message_too_large));
  const js_headers h = parse_js_headers(headers);
  const std::string id(*h.batch_id);
  std::string hdr(headers);
  if (h.required_api_level) {  // above ours drops the batch; else stripped
    const auto want = parse_u64(*h.required_api_level);
    if (!want || *want > static_cast<std::uint64_t>(kApiLevel)) {
      if (_batches.drop(id)) _abandoned.emplace_back(id, "unsupported");
      return answer(make_error(err::min_api_level));
    }
    hdr = remove_header(hdr, "Nats-Required-Api-Level");
  }
  auto o = _batches.add(id, h.batch_seq, h.batch_commit,
                        batch_msg{std::string(subject), std::move(hdr), std::string(payload), false}, now_ns);
  if (!o.abandoned.empty()) _abandoned.emplace_back(id, o.abandoned);
  if (o.what == atomic_batch_table::outcome::failed) return answer(*o.error);
  if (o.what == atomic_batch_table::outcome::staged) {
    out.push_back({token, replica_reply::kind::staged, 0, false, {}});
    return submit_status::answered;
  }
  if (auto e = check_batch_rules(now_ns, o.msgs)) return answer(*e);
  if (o.eob && !o.msgs.empty())  // the last stored message shows the commit
    o.msgs.back().headers = append_header(o.msgs.back().headers, "Nats-Batch-Commit", "1");
  std::vector<replica_batch_msg> msgs;
  msgs.reserve(o.msgs.size());
  for (auto& m : o.msgs) msgs.push_back({std::move(m.subject), std::move(m.headers), std::move(m.payload)});
  return publish_batch(now_ns, msgs, token, out, id);
}

// What only a batch breaks; check_msg (run for each message by publish_batch) does the rest.
std::optional<api_error> stream_replica::check_batch_rules(std::int64_t now_ns,
                                                           const std::vector<batch_msg>& msgs) const {
  std::unordered_set<std::string> ids, written;
  for (std::size_t i = 0; i < msgs.size(); ++i) {
    const batch_msg& b = msgs[i];
    const js_headers h = b.headers.empty() ? js_headers{} : parse_js_headers(b.headers);
    if (const auto& v = h.expected_stream; v && *v != _cfg.name) return make_error(err::expected_stream);
    if (h.expected_last_msg_id) return make_error(10177, "Nats-Expected-Last-Msg-Id");
    if (const auto& v = h.msg_id; v && !v->empty()) {
      const std::string mid(*v);
      const auto d = _dedup.find(mid);
      const bool seen = (d != _dedup.end() && d->second.ts >= now_ns - _cfg.duplicate_window) ||
                        _pending_ids.count(mid);
      if (!ids.insert(mid).second || seen) return make_error(10201);
    }
    if (const auto& v = h.expected_last_seq; v && i > 0) {
      const std::uint64_t running = shadow_last_seq() + i;
      const auto want = parse_u64(*v);
      if (!want || *want != running) return make_error(err::wrong_last_seq, std::to_string(running));
      return make_error(10164);
    }
    const auto& subj_filter = h.expected_last_subj_seq_subject;
    if (h.expected_last_subj_seq &&
        written.count(std::string(subj_filter && !subj_filter->empty() ? *subj_filter : std::string_view(b.subject))))
      return make_error(10164);
    if (const auto& r = h.rollup) {
      if (!_cfg.allow_rollup_hdrs || _cfg.deny_purge) return make_error(err::rollup_failed, "rollup not permitted");
      const std::string v = ascii_lower(*r);
      if (v == "sub" && written.count(b.subject)) return make_error(err::rollup_failed, "batch rollup sub invalid");
      if (v == "all" && i > 0) return make_error(err::rollup_failed, "batch rollup all invalid");
    }
    if (b.headers.size() > kMaxHeaderBytes) return make_error(err::header_too_large);
    written.insert(b.subject);
  }
  return std::nullopt;
}

}  // namespace js
