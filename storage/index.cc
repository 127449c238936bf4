#include "storage/index.h"

#include <algorithm>
#include <cstring>

#include "src/base/assert.h"
#include "src/base/crc32c.h"
#include "storage/subject_match.h"

namespace storage {
namespace {

bool is_all(std::string_view f) { return f.empty() || f == ">"; }

}  // namespace

std::uint32_t indexed_store::intern(std::string_view subject) {
  // Streams are often written on one subject at a time: skip the hash lookup then. A freed
  // id has an empty name, and appends never have an empty subject.
  if (_last_subj < _subjects.size() && _subjects[_last_subj].name == subject) return _last_subj;
  auto it = _subj_ids.find(subject);
  if (it != _subj_ids.end()) return _last_subj = it->second;
  std::uint32_t id;
  if (!_free_subjects.empty()) {
    id = _free_subjects.back();
    _free_subjects.pop_back();
  } else {
    id = static_cast<std::uint32_t>(_subjects.size());
    _subjects.emplace_back();
  }
  _subjects[id].name.assign(subject);
  _subjects[id].seqs.clear();
  _subjects[id].head = 0;
  _subj_ids.emplace(std::string(subject), id);
  return _last_subj = id;
}

msg_entry* indexed_store::find_mut(std::uint64_t seq) {
  if (seq < _base || seq - _base >= _idx.size()) return nullptr;
  msg_entry* e = &_idx[seq - _base];
  return e->subj == kDead ? nullptr : e;
}

const msg_entry* indexed_store::find(std::uint64_t seq) const {
  return const_cast<indexed_store*>(this)->find_mut(seq);
}

void indexed_store::index_insert(std::uint64_t seq, msg_entry e, std::uint32_t subj) {
  if (_msgs == 0) {
    _idx.clear();
    _base = seq;
  }
  PG_ASSERT(seq >= _base + _idx.size());
  msg_entry dead;
  dead.subj = kDead;
  dead.ts = e.ts;  // keeps timestamps non-decreasing along the index for seq_for_time
  while (_base + _idx.size() < seq) _idx.push_back(dead);
  e.subj = subj;
  _idx.push_back(e);
  ++_msgs;
  _bytes += entry_bytes(e);
  _subjects[subj].seqs.push_back(seq);
  if (e.ttl > 0) _ttl.emplace(e.ts + e.ttl, seq);
  if (_limits.max_msgs_per_subject > 0) _dirty_subjects.push_back(subj);
}

void indexed_store::trim_front() {
  while (!_idx.empty() && _idx.front().subj == kDead) {
    _idx.pop_front();
    ++_base;
  }
  if (_idx.empty()) _base = _last + 1;
}

void indexed_store::advance_last(std::uint64_t new_last) {
  if (new_last <= _last) return;
  _last = new_last;
  if (_msgs == 0) {
    _idx.clear();
    _base = _last + 1;
  }
}

void indexed_store::remove_live(std::uint64_t seq, bool persist, bool erase) {
  msg_entry* e = find_mut(seq);
  PG_ASSERT(e != nullptr);
  // Hooks first, while the entry and its subject are still intact.
  if (persist) persist_remove(seq, *e, erase);
  dropped(seq, *e);
  subject_rec& sr = _subjects[e->subj];
  if (sr.seqs[sr.head] == seq) {
    ++sr.head;
    if (sr.head > 32 && sr.head * 2 > sr.seqs.size()) {
      sr.seqs.erase(sr.seqs.begin(), sr.seqs.begin() + static_cast<std::ptrdiff_t>(sr.head));
      sr.head = 0;
    }
  } else {
    auto it = std::lower_bound(sr.seqs.begin() + static_cast<std::ptrdiff_t>(sr.head),
                               sr.seqs.end(), seq);
    PG_ASSERT(it != sr.seqs.end() && *it == seq);
    sr.seqs.erase(it);
  }
  --_msgs;
  _bytes -= entry_bytes(*e);
  if (e->ttl > 0) _ttl.erase({e->ts + e->ttl, seq});
  if (sr.count() == 0) {
    _subj_ids.erase(sr.name);
    sr.name.clear();
    sr.seqs.clear();
    sr.seqs.shrink_to_fit();
    sr.head = 0;
    _free_subjects.push_back(e->subj);
  }
  e->subj = kDead;
  trim_front();
}

base::result<std::uint64_t> indexed_store::append(std::string_view subject,
                                                  std::string_view headers,
                                                  std::string_view payload, std::int64_t ts,
                                                  std::int64_t ttl) {
  if (auto st = check_writable(); !st) return st.err();
  if (subject.empty() || subject.size() > 0xffff) return base::errc::invalid_argument;
  std::uint64_t seq = _last + 1;
  msg_entry e;
  e.ts = ts;
  e.ttl = ttl;
  e.hdr_len = static_cast<std::uint32_t>(headers.size());
  e.payload_len = static_cast<std::uint32_t>(payload.size());
  if (auto st = persist_msg(seq, e, subject, headers, payload); !st) return st.err();
  _last = seq;
  _last_ts = ts;
  index_insert(seq, e, intern(subject));
  return seq;
}

void indexed_store::replay_msg(std::uint64_t seq, const msg_entry& e, std::string_view subject) {
  if (seq <= _last) return;  // recovery only feeds increasing sequences
  _last = std::max(_last, seq);
  _last_ts = e.ts;
  index_insert(seq, e, intern(subject));
}

void indexed_store::replay_remove(std::uint64_t seq) {
  if (find(seq)) remove_live(seq, false, false);
}

void indexed_store::rewind_empty() {
  PG_ASSERT(_msgs == 0);
  _idx.clear();
  _ttl.clear();
  _base = 1;
  _last = 0;
  _last_ts = 0;
}

void indexed_store::replay_purge(std::uint64_t first_keep, std::int64_t ts) {
  purge_below(first_keep, false);
  if (ts) _last_ts = std::max(_last_ts, ts);
}

void indexed_store::replay_skip(std::uint64_t new_last, std::int64_t ts) {
  advance_last(new_last);
  if (ts) _last_ts = std::max(_last_ts, ts);
}

base::status indexed_store::remove(std::uint64_t seq, bool erase) {
  if (auto st = check_writable(); !st) return st;
  if (!find(seq)) return base::errc::not_found;
  remove_live(seq, true, erase);
  return {};
}

std::uint64_t indexed_store::purge_below(std::uint64_t first_keep, bool persist) {
  std::uint64_t n = 0;
  const std::uint64_t end = std::min(first_keep, _base + _idx.size());
  for (std::uint64_t s = _base; s < end && _msgs > 0; ++s) {
    if (find(s)) {
      remove_live(s, false, false);
      ++n;
    }
  }
  bool jump = first_keep > _last + 1;
  if (jump) advance_last(first_keep - 1);
  if (persist && (n > 0 || jump)) persist_purge(first_keep);
  return n;
}

base::result<std::uint64_t> indexed_store::purge(const purge_request& req) {
  if (auto st = check_writable(); !st) return st.err();
  if (req.seq && req.keep) return base::errc::invalid_argument;
  if (is_all(req.filter)) {
    if (req.keep) {
      if (req.keep >= _msgs) return std::uint64_t{0};
      std::uint64_t drop = _msgs - req.keep, seen = 0, cut = _base;
      for (std::size_t i = 0; i < _idx.size(); ++i) {
        if (_idx[i].subj == kDead) continue;
        if (seen++ == drop) {
          cut = _base + i;
          break;
        }
      }
      return purge_below(cut, true);
    }
    return purge_below(req.seq ? req.seq : _last + 1, true);
  }
  std::vector<std::uint64_t> victims;
  for (const auto& [name, id] : _subj_ids) {
    if (!subject_matches(req.filter, name)) continue;
    const subject_rec& sr = _subjects[id];
    for (std::size_t i = sr.head; i < sr.seqs.size(); ++i)
      if (!req.seq || sr.seqs[i] < req.seq) victims.push_back(sr.seqs[i]);
  }
  std::sort(victims.begin(), victims.end());
  if (req.keep) {
    if (req.keep >= victims.size()) return std::uint64_t{0};
    victims.resize(victims.size() - req.keep);
  }
  for (std::uint64_t s : victims) remove_live(s, true, false);
  return std::uint64_t{victims.size()};
}

base::status indexed_store::skip(std::uint64_t n) {
  if (auto st = check_writable(); !st) return st;
  if (n == 0) return {};
  advance_last(_last + n);
  persist_skip(_last);
  return {};
}

base::result<stored_msg> indexed_store::load(std::uint64_t seq) {
  const msg_entry* e = find(seq);
  if (!e) return base::errc::not_found;
  return fetch(seq, *e);
}

std::uint64_t indexed_store::next_live_matching(std::string_view filter,
                                                std::uint64_t start) const {
  if (_msgs == 0) return 0;
  start = std::max(start, _base);
  std::uint64_t end = _base + _idx.size();
  if (start >= end) return 0;
  bool all = is_all(filter);
  if (!all && !filter_has_wildcard(filter)) {
    auto it = _subj_ids.find(filter);
    if (it == _subj_ids.end()) return 0;
    const subject_rec& sr = _subjects[it->second];
    auto p = std::lower_bound(sr.seqs.begin() + static_cast<std::ptrdiff_t>(sr.head),
                              sr.seqs.end(), start);
    return p == sr.seqs.end() ? 0 : *p;
  }
  if (!all && _subj_ids.size() * 8 < end - start) {
    std::uint64_t best = 0;
    for (const auto& [name, id] : _subj_ids) {
      if (!subject_matches(filter, name)) continue;
      const subject_rec& sr = _subjects[id];
      auto p = std::lower_bound(sr.seqs.begin() + static_cast<std::ptrdiff_t>(sr.head),
                                sr.seqs.end(), start);
      if (p != sr.seqs.end() && (best == 0 || *p < best)) best = *p;
    }
    return best;
  }
  for (std::uint64_t s = start; s < end; ++s) {
    const msg_entry& e = _idx[s - _base];
    if (e.subj == kDead) continue;
    if (all || subject_matches(filter, _subjects[e.subj].name)) return s;
  }
  return 0;
}

base::result<stored_msg> indexed_store::load_next(std::string_view filter, std::uint64_t start) {
  std::uint64_t s = next_live_matching(filter, start);
  if (s == 0) return base::errc::not_found;
  return fetch(s, *find(s));
}

base::result<stored_msg> indexed_store::load_next(const std::vector<std::string>& filters,
                                                  std::uint64_t start) {
  if (filters.empty()) return load_next(std::string_view{}, start);
  std::uint64_t best = 0;
  for (const auto& f : filters) {
    std::uint64_t s = next_live_matching(f, start);
    if (s && (best == 0 || s < best)) best = s;
  }
  if (best == 0) return base::errc::not_found;
  return fetch(best, *find(best));
}

base::result<stored_msg> indexed_store::load_last(std::string_view filter) {
  std::uint64_t best = 0;
  if (is_all(filter)) {
    for (std::size_t i = _idx.size(); i-- > 0;)
      if (_idx[i].subj != kDead) {
        best = _base + i;
        break;
      }
  } else if (!filter_has_wildcard(filter)) {
    auto it = _subj_ids.find(filter);
    if (it != _subj_ids.end()) best = _subjects[it->second].seqs.back();
  } else {
    for (const auto& [name, id] : _subj_ids)
      if (subject_matches(filter, name)) best = std::max(best, _subjects[id].seqs.back());
  }
  if (best == 0) return base::errc::not_found;
  return fetch(best, *find(best));
}

base::result<std::uint64_t> indexed_store::seq_for_time(std::int64_t ts) const {
  // Store times are non-decreasing along the index (removed entries keep theirs), so a
  // binary search finds the start; a clock step backwards only makes it start a bit late.
  auto it = std::lower_bound(_idx.begin(), _idx.end(), ts,
                             [](const msg_entry& e, std::int64_t t) { return e.ts < t; });
  for (auto i = std::size_t(it - _idx.begin()); i < _idx.size(); ++i)
    if (_idx[i].subj != kDead) return _base + i;
  return base::errc::not_found;
}

std::uint64_t indexed_store::subject_last_seq(std::string_view subject) const {
  auto it = _subj_ids.find(subject);
  return it == _subj_ids.end() ? 0 : _subjects[it->second].seqs.back();
}

std::uint64_t indexed_store::subject_count(std::string_view subject) const {
  auto it = _subj_ids.find(subject);
  return it == _subj_ids.end() ? 0 : _subjects[it->second].count();
}

std::map<std::string, std::uint64_t> indexed_store::subject_counts(std::string_view filter) const {
  std::map<std::string, std::uint64_t> out;
  if (!is_all(filter) && !filter_has_wildcard(filter)) {
    if (std::uint64_t n = subject_count(filter)) out.emplace(filter, n);
    return out;
  }
  for (const auto& [name, id] : _subj_ids)
    if (is_all(filter) || subject_matches(filter, name)) out.emplace(name, _subjects[id].count());
  return out;
}

// By record id: _subjects is contiguous (unlike the hash map) and ids stay put while a
// subject has messages, so a cursor survives stores and removals between the slices.
bool indexed_store::subject_list(std::vector<std::pair<std::string, std::uint64_t>>& out, std::size_t& cursor,
                                 std::size_t max) const {
  if (cursor == 0) out.reserve(out.size() + _subj_ids.size());
  const std::size_t end = std::min(_subjects.size(), cursor + max);
  for (; cursor < end; ++cursor)
    if (const subject_rec& r = _subjects[cursor]; r.count() > 0) out.emplace_back(r.name, r.count());
  return cursor >= _subjects.size();
}

stream_state indexed_store::state(bool with_deleted) const {
  stream_state s;
  s.msgs = _msgs;
  s.bytes = _bytes;
  s.first_seq = first_seq();
  s.last_seq = _last;
  s.last_ts = _last_ts;
  s.num_subjects = _subj_ids.size();
  if (_msgs) {
    s.first_ts = _idx.front().ts;
    s.num_deleted = _last - _base + 1 - _msgs;
    if (with_deleted) {
      for (std::uint64_t q = _base; q <= _last; ++q)
        if (!find(q)) s.deleted.push_back(q);
    }
  }
  s.lost = _lost;
  s.lost_bytes = _lost_bytes;
  return s;
}

void indexed_store::set_limits(const stream_limits& l) {
  _limits = l;
  _dirty_subjects.clear();
  if (l.max_msgs_per_subject > 0)
    for (const auto& kv : _subj_ids) _dirty_subjects.push_back(kv.second);
}

std::uint64_t indexed_store::enforce_limits(std::vector<std::uint64_t>* removed) {
  std::uint64_t n = 0;
  auto note = [&](std::uint64_t s) {
    ++n;
    if (removed) removed->push_back(s);
  };
  if (_limits.max_msgs_per_subject > 0) {
    auto max = static_cast<std::size_t>(_limits.max_msgs_per_subject);
    std::vector<std::uint32_t> ids;
    ids.swap(_dirty_subjects);
    std::sort(ids.begin(), ids.end());
    ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
    // Sorted so the result does not depend on subject ids (which differ after a reopen).
    std::vector<std::uint64_t> victims;
    for (std::uint32_t id : ids) {
      const subject_rec& sr = _subjects[id];
      for (std::size_t i = sr.head; sr.count() > max && i < sr.seqs.size() - max; ++i)
        victims.push_back(sr.seqs[i]);
    }
    std::sort(victims.begin(), victims.end());
    for (std::uint64_t s : victims) {
      remove_live(s, true, false);
      note(s);
    }
  } else {
    _dirty_subjects.clear();
  }
  // Oldest-first removals are a prefix: log them as one purge record.
  std::uint64_t msgs = _msgs, bytes = _bytes, cut = 0;
  for (std::size_t i = 0; i < _idx.size(); ++i) {
    bool over = (_limits.max_msgs >= 0 && msgs > std::uint64_t(_limits.max_msgs)) ||
                (_limits.max_bytes >= 0 && bytes > std::uint64_t(_limits.max_bytes));
    if (!over) break;
    if (_idx[i].subj == kDead) continue;
    --msgs;
    bytes -= entry_bytes(_idx[i]);
    note(_base + i);
    cut = _base + i + 1;
  }
  if (cut) purge_below(cut, true);
  return n;
}

std::uint64_t indexed_store::expire(std::int64_t now_ns, std::vector<std::uint64_t>* removed,
                                    const spare_fn& spare) {
  std::vector<std::uint64_t> victims;
  std::set<std::uint64_t> spared;
  std::unordered_map<std::uint32_t, std::uint64_t> going;  // subject id -> victims so far
  // A message stays when it would be its subject's last and spare says so.
  auto keep = [&](std::uint64_t seq, std::uint32_t subj) {
    if (!spare) return false;
    if (spared.count(seq)) return true;
    const subject_rec& r = _subjects[subj];
    if (r.count() - going[subj] == 1 && spare(seq, r.name)) {
      spared.insert(seq);
      return true;
    }
    ++going[subj];
    return false;
  };
  bool prefix = true;
  if (_limits.max_age_ns > 0) {
    std::int64_t cutoff = now_ns - _limits.max_age_ns;
    for (std::size_t i = 0; i < _idx.size(); ++i) {
      const msg_entry& e = _idx[i];
      if (e.subj == kDead) continue;
      if (e.ts > cutoff) break;
      if (e.ttl == ttl_never || keep(_base + i, e.subj)) {
        prefix = false;
        continue;
      }
      victims.push_back(_base + i);
    }
  }
  if (!victims.empty()) {
    if (prefix) {
      purge_below(victims.back() + 1, true);
    } else {
      for (std::uint64_t s : victims) remove_live(s, true, false);
    }
  }
  going.clear();
  std::vector<std::uint64_t> due;
  for (auto it = _ttl.begin(); it != _ttl.end() && it->first <= now_ns; ++it) due.push_back(it->second);
  std::size_t from = victims.size();
  for (std::uint64_t s : due)  // decide all first: keep() counts against unchanged subjects
    if (!keep(s, find(s)->subj)) victims.push_back(s);
  for (std::size_t i = from; i < victims.size(); ++i) remove_live(victims[i], true, false);
  if (removed) removed->insert(removed->end(), victims.begin(), victims.end());
  return victims.size();
}

std::int64_t indexed_store::next_expiry() const {
  std::int64_t best = _ttl.empty() ? 0 : _ttl.begin()->first;
  if (_limits.max_age_ns > 0) {
    for (const msg_entry& e : _idx) {
      if (e.subj == kDead || e.ttl == ttl_never) continue;
      std::int64_t t = e.ts + _limits.max_age_ns;
      if (best == 0 || t < best) best = t;
      break;
    }
  }
  return best;
}

// --- state snapshot encoding: magic, fixed fields, deleted, lost, crc32c of all before.
namespace {
constexpr std::uint32_t kStateMagic = 0x50475353;  // "PGSS"

void put64(std::string& o, std::uint64_t v) { o.append(reinterpret_cast<const char*>(&v), 8); }
bool get64(std::string_view& in, std::uint64_t& v) {
  if (in.size() < 8) return false;
  std::memcpy(&v, in.data(), 8);
  in.remove_prefix(8);
  return true;
}
}  // namespace

std::string encode_state(const stream_state& s) {
  std::string o;
  put64(o, kStateMagic);
  for (std::uint64_t v : {s.msgs, s.bytes, s.first_seq, s.last_seq, std::uint64_t(s.first_ts),
                          std::uint64_t(s.last_ts), s.num_subjects, s.num_deleted, s.lost_bytes})
    put64(o, v);
  put64(o, s.deleted.size());
  for (auto d : s.deleted) put64(o, d);
  put64(o, s.lost.size());
  for (auto d : s.lost) put64(o, d);
  put64(o, base::crc32c(o.data(), o.size()));
  return o;
}

base::result<stream_state> decode_state(std::string_view in) {
  if (in.size() < 16) return base::errc::corrupt;
  std::uint64_t crc;
  std::memcpy(&crc, in.data() + in.size() - 8, 8);
  if (crc != base::crc32c(in.data(), in.size() - 8)) return base::errc::corrupt;
  in.remove_suffix(8);
  stream_state s;
  std::uint64_t magic, ft, lt, n;
  if (!get64(in, magic) || magic != kStateMagic) return base::errc::corrupt;
  if (!get64(in, s.msgs) || !get64(in, s.bytes) || !get64(in, s.first_seq) ||
      !get64(in, s.last_seq) || !get64(in, ft) || !get64(in, lt) || !get64(in, s.num_subjects) ||
      !get64(in, s.num_deleted) || !get64(in, s.lost_bytes))
    return base::errc::corrupt;
  s.first_ts = std::int64_t(ft);
  s.last_ts = std::int64_t(lt);
  for (auto* v : {&s.deleted, &s.lost}) {
    if (!get64(in, n) || n > in.size() / 8) return base::errc::corrupt;
    v->resize(n);
    for (auto& d : *v) get64(in, d);
  }
  if (!in.empty()) return base::errc::corrupt;
  return s;
}

}  // namespace storage
