#include "src/js/atomic_batch.h"

#include <algorithm>
#include <limits>

#include "src/js/json_util.h"

namespace js {
namespace {

api_error too_large(std::uint64_t max) { return make_error(10199, std::to_string(max)); }

}  // namespace

atomic_batch_table::outcome atomic_batch_table::add(std::string_view id, std::optional<std::string_view> seq_hdr,
                                                    std::optional<std::string_view> commit, batch_msg m,
                                                    std::int64_t now) {
  outcome out;
  out.what = outcome::failed;
  if (id.empty() || id.size() > 64) {
    out.error = make_error(10179);
    return out;
  }
  const auto seq = seq_hdr ? parse_u64(*seq_hdr) : std::nullopt;
  if (!seq || *seq == 0) {
    out.error = make_error(10175);
    return out;
  }
  if (!commit && _last && *_last_id == id && *seq == _last->next_seq && *seq <= _limits.max_msgs) {
    _last->msgs.push_back(std::move(m));  // the next message of the batch staged last
    _last->next_seq = *seq + 1;
    _last->last_activity = now;
    out.what = outcome::staged;
    return out;
  }
  const std::string key(id);
  auto it = _open.find(key);
  auto erase = [&] {
    _open.erase(it);
    _last_id = nullptr;
    _last = nullptr;
  };
  auto drop = [&](api_error e, std::string_view reason) {
    if (it != _open.end()) {
      erase();
      out.abandoned = std::string(reason);
    }
    out.error = std::move(e);
    return out;
  };
  if (commit && *commit != "1" && *commit != "eob") return drop(make_error(10200), "incomplete");
  const bool eob = commit && *commit == "eob";
  const std::uint64_t counted = *seq - (eob ? 1 : 0);
  if (it == _open.end()) {
    if (*seq != 1) {
      out.error = counted > _limits.max_msgs ? too_large(_limits.max_msgs) : make_error(10176);
      return out;
    }
    if (eob) {
      out.error = make_error(10176);
      return out;
    }
    if (_open.size() >= _limits.max_inflight) {
      out.error = make_error(10210);
      return out;
    }
    it = _open.emplace(key, open_batch{}).first;
  } else if (*seq != it->second.next_seq) {
    return drop(make_error(10176), "incomplete");
  }
  if (counted > _limits.max_msgs) return drop(too_large(_limits.max_msgs), "large");
  open_batch& b = it->second;
  if (commit) {
    out.what = outcome::commit;
    out.eob = eob;
    out.msgs = std::move(b.msgs);
    if (!eob) out.msgs.push_back(std::move(m));
    erase();
    return out;
  }
  b.msgs.push_back(std::move(m));
  b.next_seq = *seq + 1;
  b.last_activity = now;
  _last_id = &it->first;
  _last = &b;
  out.what = outcome::staged;
  return out;
}

std::vector<std::string> atomic_batch_table::expire(std::int64_t now) {
  std::vector<std::string> gone;
  for (auto it = _open.begin(); it != _open.end();) {
    if (now - it->second.last_activity >= _limits.timeout_ns) {
      gone.push_back(it->first);
      it = _open.erase(it);
      _last_id = nullptr;
      _last = nullptr;
    } else {
      ++it;
    }
  }
  return gone;
}

std::int64_t atomic_batch_table::next_deadline() const {
  std::int64_t t = std::numeric_limits<std::int64_t>::max();
  for (const auto& [id, b] : _open) t = std::min(t, b.last_activity + _limits.timeout_ns);
  return t;
}

}  // namespace js
