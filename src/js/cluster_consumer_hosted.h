#pragma once
// One replica of a replicated consumer on this server (cluster_consumers' own; shared by
// cluster_consumers.cc, cluster_consumer_api.cc and cluster_consumer_ops.cc): its assignment
// and config, its group's log as the hub's thread sees it, the consumer_replica and the
// leader's subscriptions and pending replies. It is the machine's message_source, reading this
// server's replica of the stream.
#include <algorithm>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "src/core/subject.h"
#include "src/js/cluster_consumers.h"
#include "src/js/consumer_config.h"
#include "src/js/consumer_replica.h"
#include "src/js/group_log.h"
#include "src/js/snapshot_policy.h"
#include "src/repl/replicated_log.h"

namespace js {

// A consumer group's log as the hub sees it (group_log.h).
using consumer_group_log = group_log;

// One consumer replica on this server, reading this server's replica of the stream.
struct cluster_consumers::hosted final : message_source {
  struct handler final : core::internal_handler {
    cluster_consumers* owner = nullptr;
    hosted* h = nullptr;
    bool flow_control = false;
    void on_msg(const core::inbound_msg& m) override {
      flow_control ? owner->on_flow_control(*h, m) : owner->on_ack(*h, m);
    }
  };

  repl_entries::consumer_assign assignment;
  snapshot_policy snapshots;
  consumer_config cfg;
  stream_config scfg;
  storage::stream_store* store = nullptr;
  std::vector<std::string> filters;  // empty = everything
  std::unique_ptr<consumer_group_log> log;
  std::unique_ptr<consumer_replica> replica;
  std::string leader_name;
  std::vector<std::uint64_t> subs;  // ack and flow-control subjects, while this server leads
  handler acks, fc;
  std::uint64_t next_token = 1;
  std::map<std::uint64_t, std::string> ack_replies;  // token -> ack-sync reply subject
  std::map<std::uint64_t, std::pair<std::string, std::uint64_t>> reset_replies;  // token -> reply, reset_seq
  std::int64_t last_delivery = 0, last_ack = 0;
  bool push_bound = false;
  std::int64_t next_interest_check = 0;
  bool expired = false;  // an ephemeral past its inactive_threshold
  // A scale of its stream asked for its state: no deliveries, pulls or acks until then (the
  // new group takes over from that state; past it, the scale was given up).
  std::int64_t frozen_until = 0;
  std::vector<std::pair<std::string, std::int64_t>> state_replies;  // reply, answer-by
  std::int64_t delete_asked_at = 0;
  bool unflushed = false;  // listed in cluster_consumers::_unflushed (its replica's outbox)
  // num_pending bookkeeping: matching messages in [cnt_from, cnt_last].
  bool cnt_valid = false;
  std::uint64_t cnt_from = 0, cnt_last = 0, cnt = 0;

  bool matches(std::string_view subject) const {
    if (filters.empty()) return true;
    for (const auto& f : filters)
      if (core::subject_matches(f, subject)) return true;
    return false;
  }
  base::result<storage::stored_msg> next_from(std::uint64_t from) {
    if (filters.empty()) return store->load_next("", from);
    if (filters.size() == 1) return store->load_next(filters[0], from);
    return store->load_next(filters, from);
  }
  static msg_meta meta_of(const storage::stored_msg& m) {
    return {m.seq, m.ts, std::uint32_t(m.subject.size()), std::uint32_t(m.headers.size()),
            std::uint32_t(m.payload.size())};
  }
  // Matching messages in [from, to].
  std::uint64_t count_range(std::uint64_t from, std::uint64_t to) {
    std::uint64_t n = 0;
    for (std::uint64_t s = from; s <= to;) {
      auto m = next_from(s);
      if (!m.ok() || m->seq > to) break;
      ++n;
      s = m->seq + 1;
    }
    return n;
  }

  // Retention removed `seq` from the stream (cluster_consumer_retention.cc).
  void on_removed(std::uint64_t seq, std::string_view subject) {
    if (cnt_valid && seq >= cnt_from && seq <= cnt_last && cnt > 0 && matches(subject)) --cnt;
  }

  std::optional<msg_meta> next_matching(std::uint64_t from) override {
    auto m = next_from(from);
    if (!m.ok()) return std::nullopt;
    return meta_of(*m);
  }
  std::optional<msg_meta> load(std::uint64_t seq) override {
    auto m = store->load(seq);
    if (!m.ok()) return std::nullopt;
    return meta_of(*m);
  }
  // Kept incrementally: a delivery moves `from` up by a few, a publish moves the end, a
  // removal below the counted range changes nothing, retention's inside it is on_removed.
  std::uint64_t count_matching(std::uint64_t from) override {
    const std::uint64_t first = store->first_seq(), last = store->last_seq();
    if (!cnt_valid || first > cnt_from || from < cnt_from || last < cnt_last) {
      cnt = from <= first && filters.empty() ? store->state(false).msgs : count_range(from, last);
    } else {
      const std::uint64_t gone = from > cnt_from ? count_range(cnt_from, from - 1) : 0;
      cnt = cnt - std::min(cnt, gone) + (last > cnt_last ? count_range(std::max(cnt_last + 1, from), last) : 0);
    }
    cnt_valid = true;
    cnt_from = from;
    cnt_last = last;
    return cnt;
  }
};

}  // namespace js
