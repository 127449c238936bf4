#pragma once
// cluster_streams' private types, shared by its .cc files (cluster_streams.cc, the queries in
// cluster_stream_queries.cc, the direct-get responders in cluster_direct_get.cc): one
// replica this server holds (`hosted`), the replicated_log its owner thread sees
// (`remote_log`), a STREAM.LIST / $JS.API.INFO gather of StreamInfos from the streams'
// leaders, and a replica's direct-get responder. Included only by those files.
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "src/js/cluster_streams.h"
#include "src/js/publish_backlog.h"
#include "src/js/stream_replica.h"
#include "storage/memory_store.h"

namespace js {

// The replicated_log of one stream group, as its owner thread sees it: role and term as of
// the last event it applied; proposals go to the replication thread with that term.
class remote_log final : public repl::replicated_log {
 public:
  remote_log(core::cluster_replication& r, std::uint64_t group) : _repl(r), _group(group) {}
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

struct cluster_streams::sub_handler final : core::internal_handler {
  cluster_streams* owner = nullptr;
  hosted* h = nullptr;
  void on_msg(const core::inbound_msg& m) override { owner->on_publish(*h, m); }
};

struct cluster_streams::hosted {
  repl_entries::stream_assign assignment;
  stream_config cfg;              // as its log has applied it (the replica's config)
  std::uint64_t config_index = 0; // the meta entry cfg comes from
  std::unique_ptr<storage::memory_store> store;
  std::unique_ptr<remote_log> log;
  std::unique_ptr<stream_replica> replica;
  std::string leader_name;
  std::vector<std::uint64_t> subs;  // the stream's subjects, while this server leads
  sub_handler handler;
  publish_backlog backlog;  // publishes waiting for room in the in-flight window
  std::uint64_t next_token = 1;
  std::map<std::uint64_t, std::string> replies;  // token -> reply subject
  // token -> what kind of API reply it gets ("" = a PubAck)
  std::map<std::uint64_t, std::string> api_type;
  // A change of num_replicas asked here: no writes meanwhile; the request goes to the meta
  // leader once nothing is in flight (poll_scaling), it is given up at frozen_until.
  bool frozen = false;
  std::int64_t frozen_until = 0;
  std::string scale_request, scale_reply;
};

// StreamInfos (STREAM.LIST's form: no type, no paging fields) asked of the streams' leaders
// (cluster_stream_queries.cc). Answers come to $PG.JSC.<self>.0.LISTED.<id>.<index>; what has
// not answered by `deadline_ns` (or answered with an error) is missing.
struct cluster_streams::info_gather {
  std::vector<std::string> names;
  std::vector<ojson> infos;     // null until answered
  std::vector<bool> answered;   // an info or an error came
  std::size_t left = 0;
  std::int64_t deadline_ns = 0;
  info_done done;
};

// A replica's direct-get responder (cluster_direct_get.cc): $JS.API.DIRECT.GET.<stream> and
// .<stream>.>, announced to the routes, while the replica leads.
struct cluster_streams::direct_responder final : core::internal_handler {
  cluster_streams* owner = nullptr;
  std::string name;
  std::uint64_t group_id = 0;
  std::vector<std::uint64_t> ids;  // empty: not subscribed (not leading)
  void on_msg(const core::inbound_msg& m) override { owner->on_direct_get(name, m); }
};

}  // namespace js
