// A replicated stream's mirror or sources (cluster_streams.h): its leader runs the same
// source_links a standalone stream runs, and each copied message becomes a proposal of the
// stream's group, so every replica stores it (a mirror's copy under the origin's sequence and
// timestamp, a sourced one through the ordinary publish checks with its Nats-Stream-Source).
// Only the leader copies: a new leader starts its links from what its store has applied (a
// mirror after its last sequence, each source after the newest message carrying its header),
// so a proposal lost with the old leader is copied again and nothing is stored twice.
#include <nlohmann/json.hpp>

#include "src/js/cluster_constants.h"
#include "src/js/cluster_streams.h"
#include "src/js/cluster_streams_hosted.h"
#include "src/js/js_headers.h"
#include "src/js/json_util.h"
#include "src/js/stream_source.h"

namespace js {

namespace re = repl_entries;

const std::string& cluster_streams::replica_links::copy_stream_name() const { return h.cfg.name; }

copy_target::copy_result cluster_streams::replica_links::store_copied(const source_spec& src, bool mirror,
                                                                      std::string_view subject,
                                                                      std::string_view origin_subject,
                                                                      std::string_view headers,
                                                                      std::string_view payload,
                                                                      const delivery_meta& d, std::uint64_t) {
  using r = copy_result;
  const std::string hdr = strip_copy_headers(headers, !mirror);
  submit_status st;
  std::vector<replica_reply> out;
  if (mirror) {
    st = h.replica->copy_mirrored(
        re::msg{d.stream_seq, d.ts, mirrored_ttl(h.cfg.allow_msg_ttl, hdr), std::string(subject), hdr, std::string(payload)});
  } else {
    // The ordinary publish path, no reply (token 0 has none).
    const std::string with_source =
        append_header(hdr, "Nats-Stream-Source", stream_source_header(src, d.stream_seq, origin_subject));
    st = h.replica->publish(owner._host.clk().wall_ns(), subject, with_source, payload, 0, out, true);
  }
  switch (st) {
    case submit_status::proposed: return r::stored;
    case submit_status::answered:  // taken already (a duplicate), or refused by a limit
      for (const auto& a : out)
        if (a.error) return r::refused;
      return r::stored;
    case submit_status::busy: return r::later;
    default: return r::refused;  // no longer leads: the links stop with the next event
  }
}

std::uint64_t cluster_streams::replica_links::taken_seq() const { return h.replica->taken_seq(); }
// Applied means committed: a majority holds it at its durability point.
std::uint64_t cluster_streams::replica_links::durable_seq() const { return h.store->last_seq(); }

void cluster_streams::sync_links(hosted& h, bool serving, std::int64_t now_ns) {
  (void)now_ns;
  // Called after every event of the group: nothing is built unless the role or the config
  // (its meta entry) changed since the links were made.
  if (!serving || (!h.cfg.has_mirror() && !h.cfg.has_sources())) {
    if (!h.links) return;
  } else if (h.links && h.links->config_index == h.config_index) {
    return;
  }
  ojson want = ojson::object();
  if (h.cfg.has_mirror()) want["mirror"] = h.cfg.mirror;
  if (h.cfg.has_sources()) want["sources"] = h.cfg.sources;
  const bool run = serving && !want.empty();
  if (h.links && run && h.links->cfg == want) {  // another field of the config changed
    h.links->config_index = h.config_index;
    return;
  }
  if (h.links) {
    for (auto& l : h.links->links) l->stop(true);  // the origin's consumers go now
    h.links.reset();
  }
  if (!run) return;
  h.links = std::make_unique<replica_links>(*this, h, _host);
  auto& rl = *h.links;
  rl.cfg = std::move(want);
  rl.config_index = h.config_index;
  if (h.cfg.has_mirror()) {
    rl.links.push_back(std::make_unique<source_link>(rl.bus, rl, parse_source_spec(h.cfg.mirror), true, h.store->last_seq()));
    return;
  }
  std::vector<source_spec> specs;
  for (const auto& j : h.cfg.sources) specs.push_back(parse_source_spec(j));
  const auto resume = source_resume_points(*h.store, specs);
  for (std::size_t i = 0; i < specs.size(); ++i)
    rl.links.push_back(std::make_unique<source_link>(rl.bus, rl, std::move(specs[i]), false, resume[i]));
}

std::size_t cluster_streams::poll_links(hosted& h, std::int64_t now_ns) {
  if (!h.links) return 0;
  std::size_t work = 0;
  for (std::size_t i = 0; h.links && i < h.links->links.size(); ++i) work += h.links->links[i]->poll(now_ns);
  return work;
}

void cluster_streams::add_links_info(const hosted& h, ojson& info, std::int64_t now_ns) const {
  if (!h.links || h.links->links.empty()) return;
  if (h.cfg.has_mirror()) {
    info["mirror"] = h.links->links.front()->info_json(now_ns);
    return;
  }
  ojson arr = ojson::array();
  for (const auto& l : h.links->links) arr.push_back(l->info_json(now_ns));
  info["sources"] = std::move(arr);
}

std::optional<api_error> cluster_streams::check_cluster_origins(const stream_config& cfg) const {
  if (!cfg.has_mirror() && !cfg.has_sources()) return std::nullopt;
  std::map<std::string, stream_config, std::less<>> seen;  // parsed on demand, kept for the walk
  return check_source_origins(cfg, [&](std::string_view name) -> const stream_config* {
    if (auto it = seen.find(name); it != seen.end()) return &it->second;
    const auto* s = _meta.find(_account, std::string(name));
    if (!s) return nullptr;
    stream_config c;
    if (parse_stream_config(s->assignment.config_json, c) || normalise(c)) return nullptr;
    return &seen.emplace(std::string(name), std::move(c)).first->second;
  });
}

}  // namespace js
