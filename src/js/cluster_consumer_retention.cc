// Interest and work-queue retention of replicated streams (issue 11), as nats-server keeps it:
// each server applies its consumers' committed acks to its own replica of the stream, so no
// entry of the stream's log removes an acknowledged message. An interest or work-queue
// consumer has the stream's num_replicas (10134) and its replicas live on the stream's
// servers, so every server holds every consumer's replicated state; a released message goes
// once no consumer matching it still needs it (work queue: at once, only one consumer
// matches). Every replica applies the same acks, so they converge on the same messages. A
// message is released only when its ack is committed, never on the leader's word alone.
#include <algorithm>

#include "src/js/cluster_consumer_hosted.h"
#include "src/js/cluster_consumers.h"

namespace js {

void cluster_consumers::release(hosted& h, const std::vector<std::uint64_t>& seqs) {
  if (seqs.empty()) return;
  const std::string& stream = h.assignment.stream;
  const stream_ref s = _streams(stream);
  if (!s.cfg || !s.store || s.cfg->retention == retention_policy::limits) return;
  const std::uint64_t last = s.store->last_seq();
  for (std::uint64_t seq : seqs) {
    if (seq > last) {
      _early_releases[stream].insert(seq);  // this replica of the stream lags the consumer's group
      continue;
    }
    drop_if_unneeded(stream, s, seq);
  }
}

void cluster_consumers::release_early(const std::string& stream) {
  auto it = _early_releases.find(stream);
  if (it == _early_releases.end()) return;
  const stream_ref s = _streams(stream);
  if (!s.cfg || !s.store) return;
  const std::uint64_t last = s.store->last_seq();
  auto& seqs = it->second;
  while (!seqs.empty() && *seqs.begin() <= last) {
    const std::uint64_t seq = *seqs.begin();
    seqs.erase(seqs.begin());
    drop_if_unneeded(stream, s, seq);
  }
  if (seqs.empty()) _early_releases.erase(it);
}

// A consumer without a replica here (fewer replicas, allowed while the stream had limits
// retention) may need anything: this server cannot tell, so it keeps every message.
bool cluster_consumers::knows_every_consumer(const std::string& stream) const {
  std::size_t here = 0;
  for (auto it = _hosted.lower_bound({stream, ""}); it != _hosted.end() && it->first.first == stream; ++it) ++here;
  const auto* s = _meta.find(_account, stream);
  return !s || s->consumers.size() <= here;
}

bool cluster_consumers::wants(const std::string& stream, std::string_view subject) const {
  if (!knows_every_consumer(stream)) return true;
  for (auto it = _hosted.lower_bound({stream, ""}); it != _hosted.end() && it->first.first == stream; ++it)
    if (it->second->matches(subject)) return true;
  return false;
}

bool cluster_consumers::needed(const std::string& stream, std::uint64_t seq, std::string_view subject) const {
  for (auto it = _hosted.lower_bound({stream, ""}); it != _hosted.end() && it->first.first == stream; ++it)
    if (it->second->matches(subject) && it->second->replica->needs(seq)) return true;
  return false;
}

void cluster_consumers::remove_retained(const std::string& stream, const stream_ref& s, std::uint64_t seq,
                                        std::string_view subject) {
  if (!s.store->remove(seq).ok()) return;
  for (auto it = _hosted.lower_bound({stream, ""}); it != _hosted.end() && it->first.first == stream; ++it)
    it->second->on_removed(seq, subject);
}

void cluster_consumers::drop_if_unneeded(const std::string& stream, const stream_ref& s, std::uint64_t seq) {
  // A work queue's message matches only the consumer that released it, and lies below what
  // that one counts as pending: no load, no count to adjust.
  if (s.cfg->retention == retention_policy::workqueue) {
    (void)s.store->remove(seq);
    return;
  }
  if (!knows_every_consumer(stream)) return;
  auto m = s.store->load(seq);
  if (!m.ok()) return;  // gone already (a limit, a delete, another consumer's ack)
  if (!needed(stream, seq, m->subject)) remove_retained(stream, s, seq, m->subject);
}

// A consumer of an interest stream went: what only it needed goes too (nats-server does the
// same on each replica).
void cluster_consumers::drop_unneeded(const std::string& stream) {
  const stream_ref s = _streams(stream);
  if (!s.cfg || !s.store || s.cfg->retention != retention_policy::interest) return;
  drop_every_unneeded(stream, s);
}

void cluster_consumers::sweep_retained(const std::string& stream) {
  const stream_ref s = _streams(stream);
  if (!s.cfg || !s.store || s.cfg->retention == retention_policy::limits) return;
  drop_every_unneeded(stream, s);
}

// One walk over this replica of the stream: a message no consumer here still needs goes,
// except that a work queue keeps one no consumer matches (it waits for one).
void cluster_consumers::drop_every_unneeded(const std::string& stream, const stream_ref& s) {
  if (!knows_every_consumer(stream)) return;
  const bool keep_unmatched = s.cfg->retention == retention_policy::workqueue;
  std::vector<std::pair<std::uint64_t, std::string>> drop;
  for (std::uint64_t seq = s.store->first_seq();;) {
    auto m = s.store->load_next("", seq);
    if (!m.ok()) break;
    bool matched = false, needs = false;
    for (auto it = _hosted.lower_bound({stream, ""}); it != _hosted.end() && it->first.first == stream; ++it) {
      if (!it->second->matches(m->subject)) continue;
      matched = true;
      if (it->second->replica->needs(m->seq)) {
        needs = true;
        break;
      }
    }
    if (!needs && (matched || !keep_unmatched)) drop.emplace_back(m->seq, m->subject);
    seq = m->seq + 1;
  }
  for (const auto& [seq, subject] : drop) remove_retained(stream, s, seq, subject);
}

}  // namespace js
