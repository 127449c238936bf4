#pragma once
// naive_store: the slowest, most literal reading of the stream semantics (std::map keyed
// by sequence, linear scans everywhere). memory_store and file_store share their index
// code, so comparing them cannot catch a bug in it; comparing memory_store against this
// independent model can.
#include <algorithm>
#include <map>
#include <set>

#include "storage/store.h"
#include "storage/subject_match.h"

namespace storage_test {

using namespace storage;

class naive_store final : public stream_store {
 public:
  base::result<std::uint64_t> append(std::string_view subject, std::string_view headers,
                                     std::string_view payload, std::int64_t ts,
                                     std::int64_t ttl = ttl_none) override {
    if (subject.empty()) return base::errc::invalid_argument;
    std::uint64_t seq = ++_last;
    _m[seq] = stored_msg{seq, ts, ttl, std::string(subject), std::string(headers),
                         std::string(payload)};
    _last_ts = ts;
    return seq;
  }
  base::status remove(std::uint64_t seq, bool = false) override {
    return _m.erase(seq) ? base::status{} : base::status(base::errc::not_found);
  }
  base::result<std::uint64_t> purge(const purge_request& req) override {
    if (req.seq && req.keep) return base::errc::invalid_argument;
    std::vector<std::uint64_t> match;
    for (const auto& [s, m] : _m)
      if (all(req.filter) || subject_matches(req.filter, m.subject))
        if (!req.seq || s < req.seq) match.push_back(s);
    if (req.keep) match.resize(match.size() > req.keep ? match.size() - req.keep : 0);
    for (auto s : match) _m.erase(s);
    if (all(req.filter) && req.seq > _last + 1) _last = req.seq - 1;
    return std::uint64_t{match.size()};
  }
  base::status skip(std::uint64_t n) override {
    _last += n;
    return {};
  }
  base::result<stored_msg> load(std::uint64_t seq) override {
    auto it = _m.find(seq);
    if (it == _m.end()) return base::errc::not_found;
    return it->second;
  }
  base::result<stored_msg> load_next(std::string_view f, std::uint64_t start) override {
    for (auto it = _m.lower_bound(start); it != _m.end(); ++it)
      if (all(f) || subject_matches(f, it->second.subject)) return it->second;
    return base::errc::not_found;
  }
  base::result<stored_msg> load_next(const std::vector<std::string>& fs,
                                     std::uint64_t start) override {
    for (auto it = _m.lower_bound(start); it != _m.end(); ++it)
      for (const auto& f : fs.empty() ? std::vector<std::string>{""} : fs)
        if (all(f) || subject_matches(f, it->second.subject)) return it->second;
    return base::errc::not_found;
  }
  base::result<stored_msg> load_last(std::string_view f) override {
    for (auto it = _m.rbegin(); it != _m.rend(); ++it)
      if (all(f) || subject_matches(f, it->second.subject)) return it->second;
    return base::errc::not_found;
  }
  std::uint64_t subject_last_seq(std::string_view subject) const override {
    std::uint64_t best = 0;
    for (const auto& [s, m] : _m)
      if (m.subject == subject) best = s;
    return best;
  }
  std::uint64_t subject_count(std::string_view subject) const override {
    return std::uint64_t(std::count_if(_m.begin(), _m.end(),
                                       [&](const auto& kv) { return kv.second.subject == subject; }));
  }
  base::result<std::uint64_t> seq_for_time(std::int64_t ts) const override {
    for (const auto& [s, m] : _m)
      if (m.ts >= ts) return s;
    return base::errc::not_found;
  }
  std::uint64_t first_seq() const override {
    return _m.empty() ? (_last ? _last + 1 : 0) : _m.begin()->first;
  }
  std::uint64_t last_seq() const override { return _last; }
  std::map<std::string, std::uint64_t> subject_counts(std::string_view f) const override {
    std::map<std::string, std::uint64_t> out;
    for (const auto& [s, m] : _m)
      if (all(f) || subject_matches(f, m.subject)) ++out[m.subject];
    return out;
  }
  std::uint64_t num_subjects() const override { return subject_counts("").size(); }
  stream_state state(bool with_deleted = false) const override {
    stream_state st;
    st.msgs = _m.size();
    for (const auto& [s, m] : _m)
      st.bytes += msg_size(byte_accounting::file, m.subject.size(), m.headers.size(),
                           m.payload.size());
    st.first_seq = first_seq();
    st.last_seq = _last;
    st.last_ts = _last_ts;
    st.num_subjects = num_subjects();
    if (!_m.empty()) {
      st.first_ts = _m.begin()->second.ts;
      st.num_deleted = _last - st.first_seq + 1 - st.msgs;
      if (with_deleted)
        for (std::uint64_t q = st.first_seq; q <= _last; ++q)
          if (!_m.count(q)) st.deleted.push_back(q);
    }
    return st;
  }
  void set_limits(const stream_limits& l) override { _limits = l; }
  const stream_limits& limits() const override { return _limits; }
  std::uint64_t enforce_limits(std::vector<std::uint64_t>* removed = nullptr) override {
    std::vector<std::uint64_t> out;
    if (_limits.max_msgs_per_subject > 0) {
      for (const auto& [subj, n] : subject_counts("")) {
        std::uint64_t extra = n > std::uint64_t(_limits.max_msgs_per_subject)
                                  ? n - std::uint64_t(_limits.max_msgs_per_subject) : 0;
        for (const auto& [s, m] : _m)
          if (extra && m.subject == subj) out.push_back(s), --extra;
      }
      std::sort(out.begin(), out.end());
      for (auto s : out) _m.erase(s);
    }
    while (!_m.empty() &&
           ((_limits.max_msgs >= 0 && _m.size() > std::uint64_t(_limits.max_msgs)) ||
            (_limits.max_bytes >= 0 && state().bytes > std::uint64_t(_limits.max_bytes)))) {
      out.push_back(_m.begin()->first);
      _m.erase(_m.begin());
    }
    if (removed) removed->insert(removed->end(), out.begin(), out.end());
    return out.size();
  }
  std::uint64_t expire(std::int64_t now, std::vector<std::uint64_t>* removed = nullptr,
                       const spare_fn& spare = {}) override {
    std::vector<std::uint64_t> out;
    std::set<std::uint64_t> kept;
    // The last message of a subject may stay when spare says so (subject delete markers).
    auto keep = [&](std::uint64_t s, const std::vector<std::uint64_t>& going) {
      if (!spare) return false;
      if (kept.count(s)) return true;
      const std::string& subj = _m.at(s).subject;
      std::size_t left = 0;
      for (const auto& [q, m] : _m)
        if (m.subject == subj && std::find(going.begin(), going.end(), q) == going.end()) ++left;
      if (left == 1 && spare(s, subj)) return kept.insert(s), true;
      return false;
    };
    if (_limits.max_age_ns > 0)
      for (const auto& [s, m] : _m)
        if (m.ttl != ttl_never && m.ts <= now - _limits.max_age_ns && !keep(s, out)) out.push_back(s);
    for (auto s : out) _m.erase(s);
    std::vector<std::pair<std::int64_t, std::uint64_t>> ttl;
    for (const auto& [s, m] : _m)
      if (m.ttl > 0 && m.ts + m.ttl <= now) ttl.emplace_back(m.ts + m.ttl, s);
    std::sort(ttl.begin(), ttl.end());
    std::vector<std::uint64_t> due;
    for (auto& [d, s] : ttl)
      if (!keep(s, due)) due.push_back(s);
    for (auto s : due) {
      out.push_back(s);
      _m.erase(s);
    }
    if (removed) removed->insert(removed->end(), out.begin(), out.end());
    return out.size();
  }
  std::int64_t next_expiry() const override {
    std::int64_t best = 0;
    for (const auto& [s, m] : _m) {
      std::int64_t t = 0;
      if (m.ttl > 0) t = m.ts + m.ttl;
      if (m.ttl != ttl_never && _limits.max_age_ns > 0 &&
          (t == 0 || m.ts + _limits.max_age_ns < t))
        t = m.ts + _limits.max_age_ns;
      if (t && (best == 0 || t < best)) best = t;
    }
    return best;
  }
  int poll() override { return 0; }
  std::uint64_t durable_seq() const override { return _last; }
  std::uint64_t backlog_bytes() const override { return 0; }
  void on_durable(durable_fn) override {}
  void on_error(error_fn) override {}
  base::status flush() override { return {}; }
  base::status close() override { return {}; }

 private:
  static bool all(std::string_view f) { return f.empty() || f == ">"; }
  std::map<std::uint64_t, stored_msg> _m;
  std::uint64_t _last = 0;
  std::int64_t _last_ts = 0;
  stream_limits _limits;
};

}  // namespace storage_test
