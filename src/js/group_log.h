// The log of a replication group as the JetStream hub sees it (cluster_streams and
// cluster_consumers).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "src/core/cluster_replication.h"
#include "src/repl/replicated_log.h"

namespace js {

// The replicated_log of one replication group (a stream's or a consumer's) as its owner thread
// (the hub) sees it: role and term as of the last event it applied; proposals go to the
// replication thread with that term, synchronously (the index is returned) or queued on the
// ring (the index comes as a `proposed` event; a synchronous propose drains the ring first).
class group_log final : public repl::replicated_log {
 public:
  group_log(core::cluster_replication& r, std::uint64_t group) : _repl(r), _group(group) {}
  repl::propose_result propose(std::span<const std::uint8_t> data) override {
    using st = core::group_propose_result::status;
    if (!leader) return {repl::propose_status::not_leader, 0};
    const auto r = _repl.propose(_group, term_, std::vector<std::uint8_t>(data.begin(), data.end()));
    if (r.st == st::ok) return {repl::propose_status::ok, r.index};
    return {r.st == st::not_leader ? repl::propose_status::not_leader : repl::propose_status::failed, 0};
  }
  // The publish path: on the ring to pg-repl, no wait; the index comes as a `proposed` event.
  repl::propose_result propose_async(std::span<const std::uint8_t> data) override {
    if (!leader) return {repl::propose_status::not_leader, 0};
    core::group_proposal p{_group, term_, _next_ticket, std::vector<std::uint8_t>(data.begin(), data.end())};
    if (!_repl.propose_async(p)) return {repl::propose_status::busy, 0};
    return {repl::propose_status::queued, _next_ticket++};
  }
  bool is_leader() const override { return leader; }
  std::uint64_t term() const override { return term_; }

  bool leader = false;
  std::uint64_t term_ = 0;

 private:
  core::cluster_replication& _repl;
  std::uint64_t _group;
  std::uint64_t _next_ticket = 1;
};

}  // namespace js
