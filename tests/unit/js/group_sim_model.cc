#include "tests/unit/js/group_sim_model.h"

#include <algorithm>

#include "src/core/subject.h"

namespace js::sim {

bool model_consumer::matches(std::string_view subject) const {
  return filter.empty() || core::subject_matches(filter, subject);
}

bool model_consumer::needs(std::uint64_t seq) const {
  if (maxed.count(seq)) return true;
  if (seq <= floor_s) return false;
  return seq >= next || pending.count(seq) != 0;
}

void model_consumer::leave(std::uint64_t seq) {
  auto it = pending.find(seq);
  if (it == pending.end()) return;
  const bool lowest = it == pending.begin();
  pending.erase(it);
  if (pending.empty()) {
    floor_c = std::max(floor_c, dseq - 1);
    floor_s = std::max(floor_s, next - 1);
  } else if (lowest) {
    floor_c = std::max(floor_c, pending.begin()->second.dseq - 1);
    floor_s = std::max(floor_s, pending.begin()->first - 1);
  }
}

void model_consumer::to_maxed(std::uint64_t seq) {
  const std::uint64_t dc = pending.at(seq).dc;
  leave(seq);
  rdc[seq] = dc - 1;
  maxed.insert(seq);
}

void model_consumer::expire(std::int64_t now) {
  std::vector<std::uint64_t> expired;
  for (auto& [seq, p] : pending)
    if (!p.due && p.at + ack_wait <= now) expired.push_back(seq);
  for (auto seq : expired) {
    if (max_deliver > 0 && pending.at(seq).dc >= std::uint64_t(max_deliver)) to_maxed(seq);
    else make_due(seq);
  }
}

void model_consumer::make_due(std::uint64_t seq) {
  auto& p = pending.at(seq);
  if (p.due) return;
  p.due = true;
  p.rank = ++due_counter;
}

void model_stream::erase(std::uint64_t seq) {
  auto it = msgs.find(seq);
  if (it == msgs.end()) return;
  bytes -= it->second.size;
  msgs.erase(it);
}

void model_stream::release(std::uint64_t seq) {
  if (cfg.retention == retention_policy::limits) return;
  auto it = msgs.find(seq);
  if (it == msgs.end()) return;
  if (cfg.retention == retention_policy::interest)
    for (const auto& c : consumers)
      if (c.matches(it->second.subject) && c.needs(seq)) return;
  erase(seq);
  expect_removed[seq] = removal_cause::remove;
}

void model_stream::removed_notify(std::uint64_t seq) {
  for (auto& c : consumers) {
    // consumer_agent::on_removed: only a pending message is terminated (no release).
    if (!c.pending.count(seq)) continue;
    c.leave(seq);
    c.rdc.erase(seq);
  }
}

void model_stream::purged_notify() {
  const std::uint64_t f = first();
  for (auto& c : consumers) {
    if (c.next < f) c.next = f;
    if (f > 0 && c.floor_s < f) c.floor_s = f - 1;
    std::vector<std::uint64_t> gone;
    for (const auto& [seq, p] : c.pending)
      if (seq < f || !msgs.count(seq)) gone.push_back(seq);
    for (auto seq : gone) {
      c.floor_c = std::max(c.floor_c, c.pending.at(seq).dseq);
      c.pending.erase(seq);
      c.rdc.erase(seq);
    }
    for (auto it = c.maxed.begin(); it != c.maxed.end() && *it < f;) {
      c.rdc.erase(*it);
      it = c.maxed.erase(it);
    }
    if (c.pending.empty()) {
      c.floor_c = c.dseq - 1;
      c.floor_s = c.next - 1;
    }
  }
}

bool model_stream::over_limits() const {
  return (cfg.max_msgs > 0 && msgs.size() > std::uint64_t(cfg.max_msgs)) ||
         (cfg.max_bytes > 0 && bytes > std::uint64_t(cfg.max_bytes));
}

}  // namespace js::sim
