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
#include "src/js/fast_batch.h"
#include "src/js/group_log.h"
#include "src/js/publish_backlog.h"
#include "src/js/snapshot_policy.h"
#include "src/js/source_link.h"
#include "src/js/stream_replica.h"
#include "storage/memory_store.h"

namespace js {

// A stream group's log as its owner thread sees it (group_log.h).
using remote_log = group_log;

struct cluster_streams::sub_handler final : core::internal_handler {
  cluster_streams* owner = nullptr;
  hosted* h = nullptr;
  void on_msg(const core::inbound_msg& m) override { owner->on_publish(*h, m); }
};

// A replicated stream's mirror or sources, run by its leader (cluster_stream_sources.cc):
// the links copy through the replica's proposals, so every replica stores each copy.
struct cluster_streams::replica_links final : copy_target {
  replica_links(cluster_streams& o, hosted& s, core::service_host& host) : owner(o), h(s), bus(host) {}
  const std::string& copy_stream_name() const override;
  copy_result store_copied(const source_spec& src, bool mirror, std::string_view subject,
                           std::string_view origin_subject, std::string_view headers, std::string_view payload,
                           const delivery_meta& d, std::uint64_t skip) override;
  std::uint64_t taken_seq() const override;
  std::uint64_t durable_seq() const override;

  cluster_streams& owner;
  hosted& h;
  link_bus_of<core::service_host> bus;
  std::vector<std::unique_ptr<source_link>> links;
  ojson cfg;  // the mirror/sources config they were built from
  std::uint64_t config_index = 0;  // the meta entry of the config last compared with it
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
  bool subscribed = false;          // subs are the current config's (a mirror has none)
  std::unique_ptr<replica_links> links;  // its mirror or sources, while this server leads
  std::unique_ptr<fast_batch_table> fast;  // its open fast-ingest batches, while this server leads
  sub_handler handler;
  publish_backlog backlog;  // publishes waiting for room in the in-flight window
  snapshot_policy snapshots;
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
