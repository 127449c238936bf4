#pragma once
// indexed_store: the in-memory indexes both stores share (sequence index, per-subject
// index, TTL index, byte accounting, limits, purge). Subclasses decide where message
// bytes live through a handful of hooks; the file store also logs every change.
#include <deque>
#include <set>
#include <unordered_map>

#include "storage/store.h"

namespace storage {

struct msg_entry {
  std::int64_t ts = 0;
  std::int64_t ttl = ttl_none;
  std::uint64_t loc = 0;  // where the bytes live (subclass-defined)
  std::uint32_t subj = 0;  // subject id; kDead when removed
  std::uint32_t hdr_len = 0;
  std::uint32_t payload_len = 0;
  std::uint32_t rec_len = 0;  // subclass-defined (file: record length)
};

class indexed_store : public stream_store {
 public:
  static constexpr std::uint32_t kDead = 0xffffffffu;

  explicit indexed_store(byte_accounting acct) : _acct(acct) {}

  base::result<std::uint64_t> append(std::string_view subject, std::string_view headers,
                                     std::string_view payload, std::int64_t ts,
                                     std::int64_t ttl = ttl_none) override;
  base::status remove(std::uint64_t seq, bool erase = false) override;
  base::result<std::uint64_t> purge(const purge_request& req) override;
  base::status skip(std::uint64_t n) override;

  base::result<stored_msg> load(std::uint64_t seq) override;
  base::result<stored_msg> load_next(std::string_view filter, std::uint64_t start) override;
  base::result<stored_msg> load_next(const std::vector<std::string>& filters,
                                     std::uint64_t start) override;
  base::result<stored_msg> load_last(std::string_view filter) override;
  base::result<std::uint64_t> seq_for_time(std::int64_t ts) const override;
  std::uint64_t subject_last_seq(std::string_view subject) const override;
  std::uint64_t subject_count(std::string_view subject) const override;
  std::uint64_t first_seq() const override { return _msgs ? _base : _last + 1 - (_last == 0); }
  std::uint64_t last_seq() const override { return _last; }
  std::map<std::string, std::uint64_t> subject_counts(std::string_view filter) const override;
  bool subject_list(std::vector<std::pair<std::string, std::uint64_t>>& out, std::size_t& cursor,
                    std::size_t max) const override;
  std::uint64_t num_subjects() const override { return _subj_ids.size(); }
  stream_state state(bool with_deleted = false) const override;
  std::uint64_t stored_bytes() const override { return _bytes; }

  void set_limits(const stream_limits& l) override;
  const stream_limits& limits() const override { return _limits; }
  std::uint64_t enforce_limits(std::vector<std::uint64_t>* removed = nullptr) override;
  std::uint64_t expire(std::int64_t now_ns, std::vector<std::uint64_t>* removed = nullptr,
                       const spare_fn& spare = {}) override;
  std::int64_t next_expiry() const override;

 protected:
  // Hooks. persist_msg runs before the message enters the index and may fail (then the
  // sequence is not consumed); the others log a change that already happened in memory.
  virtual base::status persist_msg(std::uint64_t seq, msg_entry& e, std::string_view subject,
                                   std::string_view headers, std::string_view payload) = 0;
  virtual base::result<stored_msg> fetch(std::uint64_t seq, const msg_entry& e) = 0;
  virtual void persist_remove(std::uint64_t seq, const msg_entry& e, bool erase) = 0;
  virtual void persist_purge(std::uint64_t first_keep) = 0;  // all < first_keep gone
  virtual void persist_skip(std::uint64_t new_last) = 0;
  virtual void dropped(std::uint64_t seq, const msg_entry& e) { (void)seq, (void)e; }
  virtual base::status check_writable() const { return {}; }

  // With every message purged: the sequences start over at 1 (reset()).
  void rewind_empty();

  // Replay helpers for recovery: apply without persisting.
  void replay_msg(std::uint64_t seq, const msg_entry& e, std::string_view subject);
  void replay_remove(std::uint64_t seq);
  void replay_purge(std::uint64_t first_keep, std::int64_t ts);
  void replay_skip(std::uint64_t new_last, std::int64_t ts);

  const msg_entry* find(std::uint64_t seq) const;
  void set_loc(std::uint64_t seq, std::uint64_t loc) { find_mut(seq)->loc = loc; }
  const std::string& subject_name(std::uint32_t id) const { return _subjects[id].name; }
  std::uint64_t entry_bytes(const msg_entry& e) const {
    return msg_size(_acct, _subjects[e.subj].name.size(), e.hdr_len, e.payload_len);
  }
  // Visits live entries in sequence order.
  template <typename F>
  void for_each_live(F&& f) const {
    for (std::size_t i = 0; i < _idx.size(); ++i)
      if (_idx[i].subj != kDead) f(_base + i, _idx[i]);
  }

  std::int64_t _last_ts = 0;
  std::vector<std::uint64_t> _lost;
  std::uint64_t _lost_bytes = 0;

 private:
  struct subject_rec {
    std::string name;
    std::vector<std::uint64_t> seqs;  // live sequences, ascending, from head
    std::size_t head = 0;
    std::size_t count() const { return seqs.size() - head; }
  };

  std::uint32_t intern(std::string_view subject);
  void index_insert(std::uint64_t seq, msg_entry e, std::uint32_t subj);
  void remove_live(std::uint64_t seq, bool persist, bool erase);
  void trim_front();
  void advance_last(std::uint64_t new_last);
  std::uint64_t next_live_matching(std::string_view filter, std::uint64_t start) const;
  std::uint64_t purge_below(std::uint64_t first_keep, bool persist);
  msg_entry* find_mut(std::uint64_t seq);

  byte_accounting _acct;
  stream_limits _limits;
  std::deque<msg_entry> _idx;  // _idx[i] is sequence _base + i
  std::uint64_t _base = 1;
  std::uint64_t _last = 0;
  std::uint64_t _msgs = 0;
  std::uint64_t _bytes = 0;
  std::vector<subject_rec> _subjects;
  std::vector<std::uint32_t> _free_subjects;
  struct sv_hash {
    using is_transparent = void;
    std::size_t operator()(std::string_view v) const { return std::hash<std::string_view>{}(v); }
  };
  // Transparent lookup: finding a subject never allocates.
  std::unordered_map<std::string, std::uint32_t, sv_hash, std::equal_to<>> _subj_ids;
  std::set<std::pair<std::int64_t, std::uint64_t>> _ttl;  // (deadline, seq)
  std::vector<std::uint32_t> _dirty_subjects;  // appended to since the last enforce
  std::uint32_t _last_subj = kDead;             // intern()'s last answer
};

}  // namespace storage
