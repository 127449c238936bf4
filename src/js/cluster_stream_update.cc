#include "src/js/cluster_stream_update.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <filesystem>
#include <set>

#include "src/base/log.h"
#include "src/js/cluster_consumers.h"
#include "src/js/cluster_streams.h"
#include "src/js/cluster_streams_hosted.h"
#include "src/js/json_decode.h"
#include "src/js/json_util.h"
#include "src/js/api_json.h"
#include "src/js/consumer_agent.h"
#include "src/js/consumer_config.h"
#include "src/js/jetstream_service.h"
#include "src/js/placement.h"
#include "src/js/stream.h"
#include "src/js/stream_group.h"
#include "src/js/cluster_constants.h"

namespace js {

using cluster::kMetaGroup;
using cluster::kAnswerWindowNs;
using cluster::kMaxHops;

namespace re = repl_entries;
using ojson = nlohmann::ordered_json;

stream_update_plan plan_stream_update(const repl_entries::stream_assign& current, std::string_view name,
                                      std::string_view payload) {
  stream_update_plan p;
  auto fail = [&](api_error e) {
    p.error = std::move(e);
    return p;
  };
  stream_config& cfg = p.cfg;
  if (auto e = parse_stream_config(payload, cfg)) return fail(*e);
  if (name != cfg.name) return fail(make_error(err::name_mismatch));
  if (auto e = normalise(cfg)) return fail(*e);
  if (cfg.sealed) apply_seal(cfg);
  if (auto e = validate(cfg)) return fail(*e);
  if (auto e = check_replicated_features(cfg)) return fail(*e);
  stream_config old;
  if (auto e = parse_stream_config(current.config_json, old)) return fail(*e);
  (void)normalise(old);
  if (auto e = check_update(old, cfg)) return fail(*e);
  static_cast<repl_entries::stream_assign&>(p.next) = current;
  p.next.config_json = to_json(cfg, false).dump();
  if (std::size_t(cfg.num_replicas) != current.peers.size()) p.what = stream_update_plan::kind::scale;
  return p;
}


// ---- changes of num_replicas (cluster_streams' side; the wiring is in cluster_streams.cc)

namespace {

constexpr std::int64_t kScaleWindowNs = 10'000'000'000;

// A new group id for the stream's next incarnation of its group (never 0 or 1).
std::uint64_t next_group_id(const std::string& name, std::int64_t now_ns, std::uint64_t previous) {
  std::uint64_t h = 14695981039346656037ull;
  for (unsigned char c : name + "/scale/" + std::to_string(now_ns)) {
    h ^= c;
    h *= 1099511628211ull;
  }
  if (h == previous) ++h;
  return h < 2 ? h + 2 : h;
}

// How many of the stream's new peers a consumer gets, as nats-server remaps consumers on a
// change of the stream's replicas: a durable with num_replicas 0 follows the stream, and so
// does every consumer of an interest or work-queue stream (they must match it); an explicit
// count is kept while the stream has that many; an ephemeral keeps its count (nats-server's
// are R1) unless the stream shrinks below it.
std::size_t consumer_peers(const consumer_config& c, retention_policy r, std::size_t old_count, std::size_t stream_count) {
  if (r != retention_policy::limits) return stream_count;
  if (c.num_replicas > 0) return std::min(std::size_t(c.num_replicas), stream_count);
  if (!c.durable_name.empty()) return stream_count;
  return std::clamp<std::size_t>(old_count, 1, stream_count);
}

// The scale's consumers in their new groups (the request's states; a consumer the origin
// did not report starts afresh from its deliver policy).
std::vector<re::consumer_assign> scaled_consumers(const nlohmann::json& req, const re::stream_assign& a,
                                                  const stream_config& cfg, const meta_state::stream_entry* current,
                                                  std::int64_t now_ns) {
  std::vector<re::consumer_assign> out;
  std::set<std::string> seen;
  auto add = [&](const std::string& name, const std::string& config_json, std::int64_t created, std::size_t old_count,
                 std::optional<re::consumer_seed> state) {
    if (name.empty() || !seen.insert(name).second) return;
    const auto j = nlohmann::ordered_json::parse(config_json, nullptr, false);
    const auto cc = j.is_object() ? consumer_config_from_json(j) : std::nullopt;
    if (!cc) return;
    re::consumer_assign c;
    c.account = a.account;
    c.stream = a.name;
    c.name = name;
    c.config_json = config_json;
    c.created_ns = created;
    const std::size_t n = consumer_peers(*cc, cfg.retention, old_count, a.peers.size());
    c.peers.assign(a.peers.begin(), a.peers.begin() + std::ptrdiff_t(n));
    c.group_id = next_group_id(cluster::group_key(a.account, a.name) + "/" + name, now_ns, 0);
    c.state = std::move(state);
    out.push_back(std::move(c));
  };
  for (const auto& item : req.value("consumers", nlohmann::json::array())) {
    if (!item.is_object()) continue;
    add(item.value("name", ""), item.value("config", ""), item.value("created", std::int64_t(0)),
        item.value("replicas", std::size_t(1)), consumer_seed_from_json(item.value("state", nlohmann::json())));
  }
  if (current)
    for (const auto& [name, c] : current->consumers) add(name, c.config_json, c.created_ns, c.peers.size(), std::nullopt);
  return out;
}

}  // namespace

void cluster_streams::scale_up_r1(r1_scale s, std::string_view reply) {
  const std::string name = s.cfg.name;
  _r1_seeds[name] = {std::move(s.msgs), s.last_seq, _host.clk().wall_ns() + kScaleWindowNs, true};
  send_scale(ojson{{"config", to_json(s.cfg, false).dump()},
                   {"origin", _self},
                   {"created", s.created_ns},
                   {"consumers", std::move(s.consumers)}}
                 .dump(),
             reply);
}

void cluster_streams::send_scale(const std::string& request, std::string_view reply) {
  std::string leader;
  if (meta_leader(leader)) return on_scale(request, reply);
  if (leader.empty()) return on_scale(request, reply);  // refused there, the stream handed back
  _host.publish("$PG.JSC." + leader + ".1.SCALE", reply, "", request);
}

// A scale that will not happen: the R1 stream seeding it takes publishes again, a frozen
// replicated stream's leader subscribes again.
void cluster_streams::unseed(const std::string& name) {
  if (auto sd = _r1_seeds.find(name); sd != _r1_seeds.end()) {
    _r1_seeds.erase(sd);
    if (on_r1_scaled) on_r1_scaled(name, false);
    return;
  }
  if (auto it = _hosted.find(name); it != _hosted.end() && it->second->frozen) {
    it->second->frozen_until = 0;
    poll_scaling(_host.clk().wall_ns());
  }
}

// The stream's leader decides the new peers (this server first: it seeds the new group) and
// hands them to the meta leader like a change of num_replicas. Answered at the meta leader
// once proposed, as nats-server answers; StreamInfo shows the new peers once applied.
void cluster_streams::serve_peer_remove(hosted& h, const core::inbound_msg& m) {
  constexpr std::string_view type = "stream_remove_peer_response";
  if (trim_space(m.payload).empty() || trim_space(m.payload) == "{}")
    return respond_error(m.reply, type, make_error(err::bad_request));
  jdec::json req;
  if (auto e = jdec::decode_request(m.payload, "JSApiStreamRemovePeerRequest", {{"peer", jdec::field_kind::string}}, req))
    return respond_error(m.reply, type, *e);
  std::string peer;
  if (!get_field(req, "peer", peer) || peer.empty()) return respond_error(m.reply, type, make_error(err::bad_request));
  const auto& peers = h.assignment.peers;
  // By server name (nats-server 2.9's form) or by the peer id StreamInfo's replicas show.
  const auto found = std::find_if(peers.begin(), peers.end(), [&](const std::string& p) {
    return p == peer || core::server_name_hash(p) == peer;
  });
  if (found == peers.end()) return respond_error(m.reply, type, make_error(err::peer_not_member));
  const std::string gone = *found;
  if (h.frozen) return respond_error(m.reply, type, make_error(err::cluster_unavailable));
  const std::int64_t now = _host.clk().wall_ns();
  if (gone == _self) {
    // The seeding server must stay in the group: another leader carries the removal out.
    if (peers.size() == 1) return respond_error(m.reply, type, make_error(err::peer_remap));
    if (_removing.count(h.cfg.name) || !_repl.group_stepdown(h.assignment.group_id))
      return respond_error(m.reply, type, make_error(err::cluster_unavailable));
    _removing[h.cfg.name] = {std::string(m.reply), std::string(m.payload), now + kAnswerWindowNs};
    PG_INFO("Replicated stream {}: asked to remove this server, handing leadership on", h.cfg.name);
    return;
  }
  // The peers that stay, this server first; the meta leader places the replacement (only it
  // knows which servers are up).
  std::vector<std::string> next{_self};
  for (const auto& p : peers)
    if (p != gone && p != _self) next.push_back(p);
  h.frozen = true;
  h.frozen_until = now + kAnswerWindowNs;
  for (auto id : h.subs) _host.unsubscribe(id);
  h.subs.clear();
  h.scale_request = ojson{{"config", h.assignment.config_json}, {"origin", _self}, {"created", h.assignment.created_ns},
                          {"peers", next},                       {"remove", gone},  {"was", peers}}
                        .dump();
  h.scale_reply = std::string(m.reply);
  _consumers->begin_scale(h.cfg.name, now);
  poll_scaling(now);
}

void cluster_streams::api_server_remove(const core::inbound_msg& m, int hops) {
  constexpr std::string_view type = "meta_server_remove_response";
  std::string leader;
  if (!meta_leader(leader)) {  // nats-server: only the meta leader answers
    if (!leader.empty() && hops < kMaxHops) forward(leader, "SERVER.REMOVE", m, hops);
    return;
  }
  const std::string_view body = trim_space(m.payload);
  if (body.empty() || body == "{}") return respond_error(m.reply, type, make_error(err::bad_request));
  jdec::json req;
  if (auto e = jdec::decode_request(m.payload, "JSApiMetaServerRemoveRequest",
                                    {{"peer", jdec::field_kind::string}, {"peer_id", jdec::field_kind::string}}, req))
    return respond_error(m.reply, type, *e);
  std::string server, peer_id;
  if (!get_field(req, "peer", server) || !get_field(req, "peer_id", peer_id))
    return respond_error(m.reply, type, make_error(err::bad_request));
  // A member of the meta group, by server name or by peer id (2.10's peer_id field).
  std::string found;
  std::vector<std::string> members{_self};
  for (const auto& r : _repl.meta().replicas) members.push_back(r.name);
  for (const auto& n : members)
    if (!_meta.removed().count(n) && ((!server.empty() && n == server) ||
                                      (!peer_id.empty() && core::server_name_hash(n) == peer_id)))
      found = n;
  if (found.empty()) return respond_error(m.reply, type, make_error(err::server_not_member));
  const auto r = _repl.propose(kMetaGroup, 0, re::encode(re::meta_op{re::server_remove{found}}));
  if (r.st != core::group_propose_result::status::ok)
    return respond_error(m.reply, type, make_error(err::cluster_unavailable));
  respond(m.reply, ojson{{"type", "io.nats.jetstream.api.v1." + std::string(type)}, {"success", true}});
}

void cluster_streams::on_server_removed(const std::string& name, std::int64_t now_ns) {
  _repl.forget_server(name);
  if (!_primary) {  // logged once, by the primary account's instance
  } else if (name == _self) {
    PG_WARN("JetStream cluster: this server was removed from the cluster; its replicas move elsewhere");
  } else {
    PG_INFO("JetStream cluster: server {} removed from the cluster", name);
  }
  std::string leader;
  if (meta_leader(leader)) queue_remaps(name, now_ns);
}

void cluster_streams::queue_remaps(const std::string& server, std::int64_t now_ns) {
  for (const auto& [k, s] : _meta.streams()) {
    if (k.first != _account) continue;  // each account's instance moves its own
    const auto& peers = s.assignment.peers;
    if (std::find(peers.begin(), peers.end(), server) != peers.end())
      _remaps[k.second] = {server, now_ns, now_ns + 6 * kAnswerWindowNs};
  }
}

// Each stream that still holds a removed server: PEER.REMOVE to its other members, every 2 s
// (its leader may be the removed server, or being elected) until the assignment lacks it.
void cluster_streams::poll_remaps(std::int64_t now_ns) {
  if ((_meta.removed().empty() && _remaps.empty()) || now_ns < _next_remap_poll_ns) return;
  _next_remap_poll_ns = now_ns + 100'000'000;  // the meta status is a copy under a lock
  std::string leader;
  const bool leading = meta_leader(leader);
  if (leading && !_remapping) {
    // A new meta leader (or this one after a restart) takes over what the last one left
    // undone: the removals are in the replicated meta state, the retries were not.
    for (const auto& server : _meta.removed()) queue_remaps(server, now_ns);
  }
  _remapping = leading;
  if (!leading) _remaps.clear();  // the next meta leader takes them over
  if (_remaps.empty()) return;
  for (auto it = _remaps.begin(); it != _remaps.end();) {
    const std::string& stream = it->first;
    remap& r = it->second;
    const auto* s = _meta.find(_account, stream);
    const bool held = s && std::find(s->assignment.peers.begin(), s->assignment.peers.end(), r.server) !=
                               s->assignment.peers.end();
    if (held && now_ns >= r.deadline_ns)
      PG_WARN("Replicated stream {}: removed server {} could not be taken out of it", stream, r.server);
    if (!held || now_ns >= r.deadline_ns) {
      it = _remaps.erase(it);
      continue;
    }
    if (now_ns >= r.next_try_ns) {
      r.next_try_ns = now_ns + 2'000'000'000;
      const std::string body = ojson{{"peer", r.server}}.dump();
      core::inbound_msg n;  // no reply: nobody waits for it
      n.payload = body;
      // Every other member: the meta log's first peer may be the removed (lost) server, and
      // a member that does not lead sends it on to the one that does.
      for (const auto& p : s->assignment.peers) {
        if (p == r.server) continue;
        if (p == _self) api_at_leader("PEER.REMOVE", stream, n, 0);
        else forward(p, "STREAM.PEER.REMOVE." + stream, n, 0);
      }
    }
    ++it;
  }
}

// On the meta leader: the origin first (it seeds the group), the others placed as for a create
// (or, for a PEER.REMOVE, as its stream leader chose them).
void cluster_streams::on_scale(std::string_view request, std::string_view reply) {
  const auto req = nlohmann::json::parse(request, nullptr, false);
  if (!req.is_object()) return;
  const bool removal = req.contains("remove");
  const std::string_view type = removal ? "stream_remove_peer_response" : "stream_update_response";
  re::stream_assign a;
  a.account = _account;
  a.config_json = req.value("config", "");
  a.seed_from = req.value("origin", "");
  // A refused scale gives the origin its stream back at once (an R1 stream stopped taking
  // publishes for its seed; a frozen replicated one stopped too), not after the scale window.
  std::string refused_name;
  auto refuse = [&](const api_error& e) {
    respond_error(reply, type, e);
    if (refused_name.empty() || a.seed_from.empty()) return;
    if (a.seed_from == _self) return unseed(refused_name);
    _host.publish("$PG.JSC." + a.seed_from + ".1.UNSEED", "", "", refused_name);
  };
  std::string leader;
  a.created_ns = req.value("created", std::int64_t(0));
  stream_config cfg;
  if (parse_stream_config(a.config_json, cfg)) return respond_error(reply, type, make_error(err::bad_request));
  a.name = cfg.name;
  refused_name = a.name;
  if (!meta_leader(leader)) return refuse(make_error(err::cluster_unavailable));
  if (_updating.count(a.name)) return refuse(make_error(err::cluster_unavailable));
  auto cands = placement_candidates(a.seed_from);  // neither the origin nor a removed server
  a.peers = {a.seed_from};
  bool replaced = false;  // a PEER.REMOVE found a server for the removed one
  if (removal) {
    a.peers.clear();
    for (const auto& p : req.value("peers", nlohmann::json::array()))
      if (p.is_string()) a.peers.push_back(p.get<std::string>());
    if (a.peers.empty() || a.peers.front() != a.seed_from) return refuse(make_error(err::bad_request));
    std::set<std::string> was;
    for (const auto& p : req.value("was", nlohmann::json::array()))
      if (p.is_string()) was.insert(p.get<std::string>());
    std::erase_if(cands, [&](const placement_candidate& c) { return was.count(c.name) > 0; });
    const auto placed = place_replicas(placement_of(cfg, 1), cands);
    replaced = !placed.error && !placed.peers.empty();
    if (replaced) a.peers.push_back(placed.peers.front());
  } else if (cfg.num_replicas > 1) {
    const auto placed = place_replicas(placement_of(cfg, unsigned(cfg.num_replicas - 1)), cands);
    if (placed.error) return refuse(*placed.error);
    a.peers.insert(a.peers.end(), placed.peers.begin(), placed.peers.end());
  }
  const auto* current = _meta.find(_account, a.name);
  a.group_id = next_group_id(cluster::group_key(_account, a.name), _host.clk().wall_ns(), current ? current->assignment.group_id : 0);
  a.consumers = scaled_consumers(req, a, cfg, current, _host.clk().wall_ns());
  std::vector<std::uint8_t> entry;
  if (current) {
    re::stream_update u;
    static_cast<re::stream_assign&>(u) = a;
    entry = re::encode(re::meta_op{u});
  } else {
    entry = re::encode(re::meta_op{a});
  }
  const auto r = _repl.propose(kMetaGroup, 0, std::move(entry));
  if (r.st != core::group_propose_result::status::ok) return refuse(make_error(err::cluster_unavailable));
  if (removal) {
    PG_INFO("Replicated stream {}: peer {} removed, now on [{}]{}", a.name, req.value("remove", ""),
            fmt::format("{}", fmt::join(a.peers, ", ")), replaced ? "" : " (no server to replace it)");
    if (!replaced) return respond_error(reply, type, make_error(err::peer_remap));
    return respond(reply, ojson{{"type", "io.nats.jetstream.api.v1.stream_remove_peer_response"}, {"success", true}});
  }
  _updating[a.name] = {std::string(reply), _host.clk().wall_ns() + kScaleWindowNs};
  PG_INFO("Replicated stream {}: R{} on [{}], seeded from {}, {} consumer(s)", a.name, a.peers.size(),
          fmt::format("{}", fmt::join(a.peers, ", ")), a.seed_from, a.consumers.size());
}

// ---- the hub's R1 stream

void jetstream::scale_up_r1(stream& s, const stream_config& cfg, std::string_view reply) {
  constexpr std::string_view type = "stream_update_response";
  stream_group* g = group_of(cfg.name);
  if (!g || !_cluster) return respond_error(reply, type, make_error(err::replicas_not_supported));
  cluster_streams::r1_scale sc;
  // Its consumers move into replicated ones, each from its state now. Acks taken between now
  // and the R1 stream's removal (the meta entry's round trip) are not carried: those
  // messages are delivered again (at-least-once).
  for (const auto& [name, agent] : g->consumers()) {
    const re::consumer_seed seed = to_seed(agent->durable_state());
    sc.consumers.push_back(ojson{{"name", name},
                                 {"config", to_json(agent->config(), false).dump()},
                                 {"created", agent->created()},
                                 {"replicas", 1},
                                 {"state", consumer_seed_json(seed)}});
  }
  sc.cfg = cfg;
  sc.created_ns = s.created();
  auto& store = s.store();
  sc.last_seq = store.last_seq();
  for (std::uint64_t seq = store.first_seq();;) {
    auto m = store.load_next("", seq);
    if (!m.ok()) break;
    sc.msgs.push_back({m->seq, m->ts, m->ttl, m->subject, m->headers, m->payload});
    seq = m->seq + 1;
  }
  s.unsubscribe();  // nothing more is stored here; the seed is everything
  PG_INFO("Stream {}: R1 to R{} with {} messages", cfg.name, cfg.num_replicas, sc.msgs.size());
  _cluster->scale_up_r1(std::move(sc), reply);
}

void jetstream::r1_scaled(const std::string& name, bool drop) {
  stream_group* g = group_of(name);
  if (!g) return;
  if (!drop) {
    g->get_stream().subscribe();
    return;
  }
  const std::string dir = g->get_stream().dir();
  g->get_stream().close();
  retire(name);
  report_later(name);  // gone from the placement table too (else NAMES and INFO count it twice)
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
}

// ---- STREAM.UPDATE of a replicated stream, and its scaling

void cluster_streams::api_update(std::string_view name, const core::inbound_msg& m, int hops) {
  constexpr std::string_view type = "stream_update_response";
  const auto* s = _meta.find(_account, std::string(name));
  if (!s) return respond_error(m.reply, type, make_error(err::stream_not_found));
  auto plan = plan_stream_update(s->assignment, name, m.payload);
  if (plan.error) return respond_error(m.reply, type, *plan.error);
  auto limits = [&] {
    return _hub.check_limits ? _hub.check_limits(plan.cfg, name, false, plan.cfg.num_replicas) : std::nullopt;
  };
  if (plan.what == stream_update_plan::kind::scale) {
    if (auto e = limits()) return respond_error(m.reply, type, *e);
    return api_scale(name, to_json(plan.cfg, false), m, hops);
  }
  std::string leader;
  if (!meta_leader(leader)) {
    if (leader.empty() || hops >= kMaxHops) return respond_error(m.reply, type, make_error(err::cluster_unavailable));
    return forward(leader, "STREAM.UPDATE." + std::string(name), m, hops);
  }
  if (auto e = limits()) return respond_error(m.reply, type, *e);  // at the meta leader, as a create
  if (_updating.count(name)) return respond_error(m.reply, type, make_error(err::cluster_unavailable));
  const auto r = _repl.propose(kMetaGroup, 0, re::encode(re::meta_op{plan.next}));
  if (r.st != core::group_propose_result::status::ok)
    return respond_error(m.reply, type, make_error(err::cluster_unavailable));
  _updating[std::string(name)] = {std::string(m.reply), _host.clk().wall_ns() + kAnswerWindowNs};
}

void cluster_streams::api_scale(std::string_view name, const ojson& cfg_json, const core::inbound_msg& m, int hops) {
  constexpr std::string_view type = "stream_update_response";
  const std::size_t want = cfg_json.value("num_replicas", 1);
  if (want > std::max<std::size_t>(_repl.meta().cluster_size, 1))
    return respond_error(m.reply, type, make_error(err::no_suitable_peers, "no suitable peers for placement"));
  auto it = _hosted.find(name);
  if (it == _hosted.end() || !it->second->log->leader || !it->second->replica->ready()) {
    // Its leader holds every acknowledged message: it seeds the new group.
    std::string target = it != _hosted.end() ? it->second->leader_name : std::string();
    if (const auto* s = _meta.find(_account, std::string(name)); target.empty() && it == _hosted.end() && s)
      target = s->assignment.peers.front();
    if (target.empty() || target == _self || hops >= kMaxHops)
      return respond_error(m.reply, type, make_error(err::cluster_unavailable));
    return forward(target, "STREAM.UPDATE." + std::string(name), m, hops);
  }
  hosted& h = *it->second;
  if (h.frozen) return respond_error(m.reply, type, make_error(err::cluster_unavailable));
  h.frozen = true;
  h.frozen_until = _host.clk().wall_ns() + kAnswerWindowNs;
  for (auto id : h.subs) _host.unsubscribe(id);
  h.subs.clear();
  h.scale_request = ojson{{"config", cfg_json.dump()}, {"origin", _self}, {"created", h.assignment.created_ns}}.dump();
  h.scale_reply = std::string(m.reply);
  // Its consumers follow it into new groups, from the state their leaders hold now.
  _consumers->begin_scale(std::string(name), _host.clk().wall_ns());
  poll_scaling(_host.clk().wall_ns());
}

void cluster_streams::poll_scaling(std::int64_t now_ns) {
  for (auto& [name, h] : _hosted) {
    if (!h->frozen) continue;
    if (now_ns >= h->frozen_until || !h->log->leader) {  // given up (the client was answered or timed out)
      h->frozen = false;
      h->scale_request.clear();
      _consumers->end_scale(name);
      after_event(*h, now_ns);
    } else if (!h->scale_request.empty() && h->replica->pending() == 0) {
      auto consumers = _consumers->scale_states(name, now_ns);
      if (!consumers) continue;  // a consumer's leader has not answered yet
      auto req = ojson::parse(std::exchange(h->scale_request, {}));
      req["consumers"] = std::move(*consumers);
      send_scale(req.dump(), h->scale_reply);
    }
  }
  std::erase_if(_r1_seeds, [&](auto& kv) {
    if (kv.second.deadline_ns > now_ns) return false;
    if (on_r1_scaled) on_r1_scaled(kv.first, false);
    return true;
  });
}

}  // namespace js
