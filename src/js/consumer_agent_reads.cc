// The stream as a consumer agent reads it (its message_source): the store on the owner
// thread, or its link's window on a consumer thread; pending counts and the small cache of
// messages looked at ahead of their delivery.
#include "src/js/consumer_agent.h"

#include <algorithm>

#include "src/js/consumer_link.h"
#include "src/js/stream.h"

namespace js {

// ---- the stream as this agent reads it: the store on the owner thread, the feed's window
// on a consumer thread (a message the window does not hold yet is missing, and comes as an
// on_stored once its page arrives).

std::uint64_t consumer_agent::read_last() const {
  return _link ? _link->last_seq : _stream.store().last_seq();
}

base::result<storage::stored_msg> consumer_agent::read_one(std::uint64_t seq) {
  if (!_link) return _stream.store().load(seq);
  if (const storage::stored_msg* m = _link->reader.find(seq)) return *m;
  if (auto k = _kept.find(seq); k != _kept.end()) return k->second;  // pending under an older filter
  return base::errc::not_found;
}

base::result<storage::stored_msg> consumer_agent::read_next(std::uint64_t from) {
  if (_link) {
    if (const storage::stored_msg* m = _link->reader.next_matching(from)) return *m;
    return base::errc::not_found;
  }
  auto& st = _stream.store();
  if (_filters.empty()) return st.load_next("", from);
  if (_filters.size() == 1) return st.load_next(_filters[0], from);
  return st.load_next(_filters, from);
}

// ---- message_source -------------------------------------------------------------------

msg_meta consumer_agent::remember(storage::stored_msg&& m) {
  msg_meta meta{m.seq, m.ts, std::uint32_t(m.subject.size()), std::uint32_t(m.headers.size()),
                std::uint32_t(m.payload.size())};
  _cache[m.seq] = std::move(m);
  return meta;
}

std::optional<msg_meta> consumer_agent::next_matching(std::uint64_t from) {
  if (!_lps.empty() && !_link) {  // remote: the owner pages only the set into the window
    if (from <= _lps.back()) {
      auto it = std::lower_bound(_lps.begin(), _lps.end(), from);
      for (; it != _lps.end(); ++it)
        if (auto m = _stream.store().load(*it); m.ok()) return remember(std::move(*m));
    }
    from = std::max(from, _lps.back() + 1);
  }
  base::result<storage::stored_msg> m = base::errc::not_found;
  if (auto c = _cache.lower_bound(from); c != _cache.end() && c->first == from && filter_matches(c->second.subject))
    m = c->second;
  else m = read_next(from);
  if (!m.ok()) return std::nullopt;
  _last_next_from = from;
  _last_next_seq = m->seq;
  return remember(std::move(*m));
}

std::optional<msg_meta> consumer_agent::load(std::uint64_t seq) {
  if (auto c = _cache.find(seq); c != _cache.end())
    return msg_meta{seq, c->second.ts, std::uint32_t(c->second.subject.size()),
                    std::uint32_t(c->second.headers.size()), std::uint32_t(c->second.payload.size())};
  auto m = read_one(seq);
  if (!m.ok()) return std::nullopt;
  return remember(std::move(*m));
}

std::uint64_t consumer_agent::recount(std::uint64_t from) {
  if (_link) {
    const feed_reader& r = _link->reader;
    if (!r.live() && r.size() == 0 && r.known_upto() < r.floor()) return _link->seed_pending;  // no page yet
    return r.count_matching(from);
  }
  auto& st = _stream.store();
  std::uint64_t n = 0;
  if (from <= st.first_seq() && _lps.empty()) {
    if (_filters.empty()) return st.state(false).msgs;
    for (const auto& f : _filters)
      for (const auto& [subj, c] : st.subject_counts(f)) n += c;
    return n;
  }
  // Scan the part the consumer has not reached yet (its backlog).
  for (std::uint64_t s = from;;) {
    auto m = _filters.empty() ? st.load_next("", s) : _filters.size() == 1 ? st.load_next(_filters[0], s)
                                                                           : st.load_next(_filters, s);
    if (!m.ok()) break;
    if (_lps.empty() || m->seq > _lps.back() || std::binary_search(_lps.begin(), _lps.end(), m->seq)) ++n;
    s = m->seq + 1;
  }
  return n;
}

std::uint64_t consumer_agent::count_matching(std::uint64_t from) {
  if (_link) return recount(from);  // the window: cheap, and exact while live
  if (_cnt_valid && from == _cnt_from) return _cnt;
  if (_cnt_valid && from > _cnt_from && _lps.empty() && _last_next_from <= _cnt_from &&
      _last_next_seq + 1 == from) {
    // next_matching(f) found nothing in [f, s): exactly one matching message left the count.
    _cnt = _cnt > 0 ? _cnt - 1 : 0;
    _cnt_from = from;
    return _cnt;
  }
  _cnt = recount(from);
  _cnt_from = from;
  _cnt_upto = read_last();
  _cnt_valid = true;
  return _cnt;
}

}  // namespace js
