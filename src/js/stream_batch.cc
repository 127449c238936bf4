// Atomic batch publishing on a stream: staging through atomic_batch_table,
// the commit validated as a whole against the stream as it was before the batch, then every
// message stored in one go with consecutive sequences and one PubAck for the batch.
#include <algorithm>
#include <unordered_set>

#include "src/js/json_util.h"
#include "src/js/msg_ttl.h"
#include "src/js/stream.h"
#include "src/js/stream_counter.h"

namespace js {
void stream::on_batch_msg(const core::inbound_msg& m, std::string_view subject, const js_headers& h) {
  const std::string_view id = *h.batch_id;
  const bool want_ack = !_cfg.no_ack && !m.reply.empty();
  auto fail = [&](const api_error& e) {
    if (want_ack) reply_error(m.reply, e);
  };
  if (!_cfg.allow_atomic) return fail(make_error(err::atomic_disabled));
  if (_host.storage_exhausted(_cfg.storage)) return fail(make_error(err::insufficient_resources));
  if (_cfg.max_msg_size >= 0 && m.headers.size() + m.payload.size() > static_cast<std::uint64_t>(_cfg.max_msg_size))
    return fail(make_error(err::message_too_large));
  const std::int64_t now = _host.now();
  // Nats-Required-Api-Level: above ours drops the batch; else stripped.
  std::string hdr(m.headers);
  if (h.required_api_level) {
    const auto want = parse_u64(*h.required_api_level);
    if (!want || *want > static_cast<std::uint64_t>(kApiLevel)) {
      if (_batches.drop(id)) batch_abandoned(id, "unsupported");
      return fail(make_error(err::min_api_level));
    }
    hdr = remove_header(hdr, "Nats-Required-Api-Level");
  }
  const bool plain = !h.msg_id && !h.expected_stream && !h.expected_last_seq && !h.expected_last_subj_seq &&
                     !h.expected_last_subj_seq_subject && !h.expected_last_msg_id && !h.rollup && !h.ttl && !h.incr &&
                     !h.required_api_level;
  auto out = _batches.add(id, h.batch_seq, h.batch_commit,
                          batch_msg{std::string(subject), std::move(hdr), std::string(m.payload), plain}, now);
  if (!out.abandoned.empty()) batch_abandoned(id, out.abandoned);
  if (out.what == atomic_batch_table::outcome::failed) return fail(*out.error);
  if (out.what == atomic_batch_table::outcome::staged) {
    if (want_ack) _host.publish(m.reply, "", "", "");  // a zero-byte ack
    return;
  }
  // Each staged header block is parsed once here; the views point into out.msgs.
  std::vector<js_headers> hdrs;
  hdrs.reserve(out.msgs.size());
  for (const auto& b : out.msgs)
    hdrs.push_back(b.headers.empty() || b.plain ? js_headers{} : parse_js_headers(b.headers));
  std::vector<std::int64_t> ttls;
  if (auto e = check_batch(out.msgs, hdrs, ttls)) return fail(*e);
  if (_cfg.allow_msg_counter)
    if (auto e = count_batch(out.msgs, hdrs)) return fail(*e);
  if (out.eob && !out.msgs.empty()) {  // the last stored message shows the commit
    out.msgs.back().headers = append_header(out.msgs.back().headers, "Nats-Batch-Commit", "1");
    hdrs.back() = parse_js_headers(out.msgs.back().headers);
  }
  std::uint64_t last = 0;
  std::vector<std::uint64_t> stored;
  stored.reserve(out.msgs.size());
  for (std::size_t i = 0; i < out.msgs.size(); ++i) {
    const batch_msg& b = out.msgs[i];
    const std::uint64_t prev_on_subject = _rewrites.republishes() ? _store->subject_last_seq(b.subject) : 0;
    auto seq = _store->append(b.subject, b.headers, b.payload, now, ttls[i]);
    if (!seq.ok()) return fail(make_error(err::store_failed, base::errc_name(seq.code())));
    last = *seq;
    stored.push_back(*seq);
    if (const auto& mid = hdrs[i].msg_id; mid && !mid->empty()) {
      record_msg_id(*mid, *seq, now);
      _last_msg_id = std::string(*mid);
    }
    if (auto c = _rewrites.republish(_cfg.name, b.subject, b.headers, b.payload.size(), *seq, now, prev_on_subject))
      _host.publish(c->subject, "", c->headers, c->headers_only ? std::string_view() : std::string_view(b.payload));
  }
  // The roll-ups only once the commit is appended: a crash that cuts the batch short (dropped
  // whole at recovery) must not have removed what it would have rolled up.
  for (std::size_t i = 0; i < out.msgs.size(); ++i)
    if (const auto& r = hdrs[i].rollup) roll_up(*r, out.msgs[i].subject, stored[i]);
  trim_after_append();
  if (want_ack) {
    ojson j;
    j["stream"] = _cfg.name;
    if (!_host.domain().empty()) j["domain"] = _host.domain();
    j["seq"] = last;
    j["batch"] = std::string(id);
    j["count"] = out.msgs.size();
    queue_ack(std::string(m.reply), j.dump(), last);
  }
  if (_events)
    for (std::size_t i = 0; i < stored.size(); ++i) _events->on_stored(stored[i], out.msgs[i].subject);
}

// The header checks of a publish, for the whole batch against the stream as it was before it.
std::optional<api_error> stream::check_batch(const std::vector<batch_msg>& msgs, const std::vector<js_headers>& hdrs,
                                             std::vector<std::int64_t>& ttls) {
  const std::uint64_t last = _store->last_seq();
  std::unordered_set<std::string> ids, written;
  // The subjects written so far matter only to a later subject expectation or roll-up.
  const bool track_written = std::any_of(hdrs.begin(), hdrs.end(), [](const js_headers& h) {
    return h.expected_last_subj_seq.has_value() || h.rollup.has_value();
  });
  std::uint64_t bytes = 0;
  ttls.reserve(msgs.size());
  prune_dedup(_host.now());
  for (std::size_t i = 0; i < msgs.size(); ++i) {
    const batch_msg& b = msgs[i];
    const std::string_view hdr = b.headers;
    const js_headers& h = hdrs[i];
    std::int64_t ttl = storage::ttl_none;
    if (const auto& v = h.expected_stream; v && *v != _cfg.name) return make_error(err::expected_stream);
    if (h.expected_last_msg_id) return make_error(10177, "Nats-Expected-Last-Msg-Id");
    if (const auto& v = h.msg_id; v && !v->empty()) {
      if (!ids.insert(std::string(*v)).second || _dedup.count(std::string(*v))) return make_error(10201);
    }
    if (const auto& v = h.expected_last_seq) {
      const auto want = parse_u64(*v);
      const std::uint64_t running = last + i;
      if (!want || *want != running) return make_error(err::wrong_last_seq, std::to_string(running));
      if (i > 0) return make_error(10164);
    }
    const auto& subj_filter = h.expected_last_subj_seq_subject;
    if (const auto& v = h.expected_last_subj_seq) {
      const std::string filter(subj_filter && !subj_filter->empty() ? *subj_filter : std::string_view(b.subject));
      if (written.count(filter)) return make_error(10164);
      std::uint64_t actual = 0;
      if (auto l = _store->load_last(filter); l.ok()) actual = l->seq;
      const auto want = parse_u64(*v);
      if (!want || *want != actual) return make_error(err::wrong_last_seq, std::to_string(actual));
    }
    if (const auto& r = h.rollup) {
      if (!_cfg.allow_rollup_hdrs || _cfg.deny_purge) return make_error(err::rollup_failed, "rollup not permitted");
      const std::string v = ascii_lower(*r);
      if (v == "sub" && written.count(b.subject)) return make_error(err::rollup_failed, "batch rollup sub invalid");
      if (v == "all" && i > 0) return make_error(err::rollup_failed, "batch rollup all invalid");
      if (v != "sub" && v != "all")
        return make_error(err::rollup_failed, "rollup value invalid: \"" + std::string(*r) + "\"");
    }
    if (const auto& v = h.ttl) {
      const auto parsed = parse_msg_ttl(*v);
      if (!parsed) return make_error(err::ttl_invalid);
      if (*parsed != 0 && !_cfg.allow_msg_ttl) return make_error(err::ttl_disabled);
      ttl = *parsed;
    }
    if (hdr.size() > kMaxHeaderBytes) return make_error(err::header_too_large);
    if (track_written) written.insert(b.subject);
    ttls.push_back(ttl);
    bytes += storage::msg_size(_cfg.storage == storage_type::memory ? storage::byte_accounting::memory
                                                                    : storage::byte_accounting::file,
                               b.subject.size(), hdr.size(), b.payload.size());
  }
  if (_cfg.discard == discard_policy::new_msgs) {  // the batch fits as a whole or not at all
    const auto st = _store->state(false);
    if (_cfg.max_msgs > 0 && st.msgs + msgs.size() > static_cast<std::uint64_t>(_cfg.max_msgs))
      return make_error(err::store_failed, "maximum messages exceeded");
    if (_cfg.max_bytes > 0 && st.bytes + bytes > static_cast<std::uint64_t>(_cfg.max_bytes))
      return make_error(err::store_failed, "maximum bytes exceeded");
  }
  // The account's max_memory / max_file: the batch as a whole, as a publish is judged alone.
  if (auto e = _host.account_limit_error(_cfg.storage, bytes)) return e;
  return std::nullopt;
}

void stream::batch_abandoned(std::string_view id, std::string_view reason) {
  _host.publish_event("$JS.EVENT.ADVISORY.STREAM.BATCH_ABANDONED." + _cfg.name, "stream_batch_abandoned",
                    ojson{{"stream", _cfg.name}, {"batch", std::string(id)}, {"reason", std::string(reason)}});
}

// A counter stream's batch: each increment adds to the total before it, this batch's earlier
// messages on the subject included; any failure refuses the whole batch before it is stored.
std::optional<api_error> stream::count_batch(std::vector<batch_msg>& msgs, const std::vector<js_headers>& hdrs) {
  std::unordered_map<std::string, std::pair<std::string, std::string>> running;  // subject -> payload, headers
  for (std::size_t i = 0; i < msgs.size(); ++i) {
    batch_msg& b = msgs[i];
    std::optional<std::string_view> last_payload;
    std::string_view last_hdr;
    storage::stored_msg stored;
    if (auto it = running.find(b.subject); it != running.end()) {
      last_payload = it->second.first;
      last_hdr = it->second.second;
    } else if (auto l = _store->load_last(b.subject); l.ok()) {
      stored = std::move(*l);
      last_payload = stored.payload;
      last_hdr = stored.headers;
    }
    auto c = apply_increment(b.subject, b.headers, hdrs[i], b.payload, last_payload, last_hdr, std::nullopt);
    if (!c.update) return c.error;
    b.payload = c.update->payload;  // the headers stay (hdrs views into them)
    running[b.subject] = {std::move(c.update->payload), b.headers};
  }
  return std::nullopt;
}

}  // namespace js
