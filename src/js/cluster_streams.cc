#include "src/js/cluster_streams.h"
#include "src/js/cluster_streams_hosted.h"

#include <chrono>
#include <unistd.h>

#include <algorithm>

#include "src/base/assert.h"
#include "src/base/go_text.h"
#include "src/base/log.h"
#include "src/js/api_json.h"
#include "src/js/cluster_consumers.h"
#include "src/js/cluster_event_router.h"
#include "src/js/cluster_info.h"
#include "src/js/event_json.h"
#include "src/js/cluster_stream_update.h"
#include "src/js/json_util.h"
#include "src/js/placement.h"
#include "src/js/stream.h"
#include "src/js/stream_config.h"
#include "src/js/cluster_constants.h"

namespace js {

using cluster::kMetaGroup;
using cluster::kAnswerWindowNs;
using cluster::kMaxHops;
using cluster::prefix_of;

namespace re = repl_entries;
using ojson = nlohmann::ordered_json;

namespace {



// The stream's Raft group id: unique per incarnation of the name (a re-created stream gets a
// new group, so a replica never mistakes an old log for its own); 0 and 1 are taken.
std::uint64_t group_id_for(const std::string& name, std::int64_t created_ns) {
  std::uint64_t h = 14695981039346656037ull;
  auto mix = [&](std::string_view s) {
    for (unsigned char c : s) {
      h ^= c;
      h *= 1099511628211ull;
    }
  };
  mix(name);
  mix("/");
  mix(std::to_string(created_ns));
  return h < 2 ? h + 2 : h;
}

}  // namespace

cluster_streams::cluster_streams(core::service_host& host, core::cluster_replication& repl, std::string domain,
                                 std::string account, std::shared_ptr<cluster_event_router> router)
    : _host(host), _repl(repl), _domain(std::move(domain)), _self(host.server_name()), _meta(_self),
      _account(std::move(account)),
      _router(router ? std::move(router) : std::make_shared<cluster_event_router>(_account)) {
  _primary = _router->primary() == _account;
  _consumers = std::make_unique<cluster_consumers>(_host, _repl, _meta, _domain, _account, [this](const std::string& name) {
    auto it = _hosted.find(name);
    if (it == _hosted.end()) return cluster_consumers::stream_ref{};
    return cluster_consumers::stream_ref{&it->second->cfg, it->second->store.get()};
  });
}

// The replication thread stops before the services are destroyed (src/main.cc).
cluster_streams::~cluster_streams() {
  _router->detach(*this);
  if (_encoder) _encoder->thread.join();
}

void cluster_streams::start() {
  _router->attach(*this, _repl, _host.wake_eventfd());
  _sub = _host.subscribe_cluster(prefix_of(_self) + ">", this);
}

bool cluster_streams::holds_group(std::uint64_t group) const {
  return _by_group.count(group) || _consumers->holds_group(group);
}

bool cluster_streams::meta_leader(std::string& leader) const {
  const auto m = _repl.meta();
  leader = m.leader;
  return m.running && m.self_leader;
}

void cluster_streams::respond(std::string_view reply, const ojson& j) {
  if (!reply.empty()) _host.publish(reply, "", "", j.dump());
}

void cluster_streams::respond_error(std::string_view reply, std::string_view type, const api_error& e,
                                    const ojson& extra) {
  ojson j;
  j["type"] = "io.nats.jetstream.api.v1." + std::string(type);
  j["error"] = to_json(e);
  for (auto it = extra.begin(); it != extra.end(); ++it) j[it.key()] = it.value();
  respond(reply, j);
}

void cluster_streams::forward(const std::string& server, std::string_view what, const core::inbound_msg& m,
                              int hops) {
  const std::string subject = prefix_of(server) + std::to_string(hops + 1) + "." + std::string(what);
  _host.publish(subject, m.reply, m.headers, m.payload);
}

// ---- API

bool cluster_streams::on_api(std::string_view rest, const core::inbound_msg& m, int hops) {
  auto token_after = [&](std::string_view p) -> std::optional<std::string_view> {
    if (!rest.starts_with(p)) return std::nullopt;
    std::string_view t = rest.substr(p.size());
    if (t.empty() || t.find('.') != std::string_view::npos) return std::nullopt;
    return t;
  };
  if (forward_r1(rest, m, hops)) return true;  // another server's R1 stream
  if (rest.starts_with("CONSUMER.")) return _consumers->on_api(rest, m, hops);
  if (rest == "SERVER.REMOVE") {
    api_server_remove(m, hops);
    return true;
  }
  if (auto name = token_after("STREAM.CREATE.")) {
    if (is_replicated(*name)) {
      api_create(*name, m, hops);
      return true;
    }
    // Only a create asking for replicas is ours; the config's checks come first (the hub's).
    stream_config cfg;
    if (parse_stream_config(m.payload, cfg)) return false;
    if (cfg.num_replicas <= 1) return place_r1_create(*name, cfg, m, hops);
    api_create(*name, m, hops);
    return true;
  }
  if (auto name = token_after("STREAM.DELETE.")) {
    if (!is_replicated(*name)) return false;
    api_delete(*name, m, hops);
    return true;
  }
  if (auto name = token_after("STREAM.UPDATE.")) {
    if (!is_replicated(*name)) return false;
    api_update(*name, m, hops);
    return true;
  }
  if (rest.starts_with("DIRECT.GET.")) {  // its replicas' responders answer (cluster_direct_get.cc)
    std::string_view name = rest.substr(11);
    return direct_allowed(name.substr(0, name.find('.')));
  }
  for (std::string_view p :
       {"STREAM.INFO.", "STREAM.PURGE.", "STREAM.MSG.GET.", "STREAM.MSG.DELETE.", "STREAM.LEADER.STEPDOWN.",
        "STREAM.PEER.REMOVE."}) {
    if (auto name = token_after(p)) {
      if (!is_replicated(*name)) return false;
      p.remove_suffix(1);
      api_at_leader(p.substr(7), *name, m, hops);
      return true;
    }
  }
  return false;
}

void cluster_streams::api_create(std::string_view name, const core::inbound_msg& m, int hops) {
  constexpr std::string_view type = "stream_create_response";
  std::string leader;
  if (!meta_leader(leader)) {
    if (leader.empty() || hops >= kMaxHops) return respond_error(m.reply, type, make_error(err::cluster_unavailable));
    return forward(leader, "STREAM.CREATE." + std::string(name), m, hops);
  }
  stream_config cfg;
  if (auto e = parse_stream_config(m.payload, cfg)) return respond_error(m.reply, type, *e);
  if (name != cfg.name) return respond_error(m.reply, type, make_error(err::name_mismatch));
  if (auto e = normalise(cfg)) return respond_error(m.reply, type, *e);
  if (auto e = validate(cfg)) return respond_error(m.reply, type, *e);
  if (auto e = check_replicated_features(cfg)) return respond_error(m.reply, type, *e);
  if (auto e = check_cluster_origins(cfg)) return respond_error(m.reply, type, *e);
  if (_hub.check_limits && !is_replicated(cfg.name))
    if (auto e = _hub.check_limits(cfg, {}, true, cfg.num_replicas)) return respond_error(m.reply, type, *e);
  const std::int64_t now = _host.clk().wall_ns();
  if (overlaps_cluster_streams(cfg, true)) return respond_error(m.reply, type, make_error(err::subjects_overlap));
  if (const auto* s = _meta.find(_account, cfg.name)) {
    stream_config old;
    const bool parsed = !parse_stream_config(s->assignment.config_json, old) && !normalise(old);
    if (!parsed || !same_config(old, cfg)) return respond_error(m.reply, type, make_error(err::name_in_use));
    // The same config again: its leader answers (as for a fresh create).
    for (const auto& p : s->assignment.peers) {
      core::inbound_msg n = m;
      n.payload = cfg.name;
      forward(p, "CREATED", n, kMaxHops);
    }
    return;
  }
  if (_creating.count(cfg.name)) return respond_error(m.reply, type, make_error(err::cluster_unavailable));
  // Candidates: the meta group's members as the leader sees them.
  const auto placed = place_replicas(placement_of(cfg, unsigned(cfg.num_replicas)), placement_candidates());
  if (placed.error) return respond_error(m.reply, type, *placed.error);
  re::stream_assign a;
  a.account = _account;
  a.name = cfg.name;
  a.config_json = to_json(cfg, false).dump();
  a.peers = placed.peers;
  a.created_ns = now;
  a.group_id = group_id_for(cluster::group_key(_account, cfg.name), now);
  const auto r = _repl.propose(kMetaGroup, 0, re::encode(re::meta_op{a}));
  if (r.st != core::group_propose_result::status::ok)
    return respond_error(m.reply, type, make_error(err::cluster_unavailable));
  _creating[cfg.name] = {std::string(m.reply), now + kAnswerWindowNs};
}

// From the system account (core/sys_js_relay.h); the reply goes back through the relay.
void cluster_streams::on_operator_request(std::string_view rest, const core::inbound_msg& m, int hops) {
  if (rest == "SERVER.REMOVE") return api_server_remove(m, hops);
  if (rest != "META.LEADER.STEPDOWN") return;
  constexpr std::string_view type = "meta_leader_stepdown_response";
  if (m.payload.find_first_not_of(" \t\r\n") != std::string_view::npos &&
      !nlohmann::json::parse(m.payload, nullptr, false).is_object())
    return respond_error(m.reply, type, make_error(err::invalid_json));
  if (!_repl.meta_stepdown()) return;  // no leader: nobody answers (only nats-server's leader listens)
  respond(m.reply, ojson{{"type", "io.nats.jetstream.api.v1." + std::string(type)}, {"success", true}});
}

void cluster_streams::api_delete(std::string_view name, const core::inbound_msg& m, int hops) {
  constexpr std::string_view type = "stream_delete_response";
  std::string leader;
  if (!meta_leader(leader)) {
    if (leader.empty() || hops >= kMaxHops) return respond_error(m.reply, type, make_error(err::cluster_unavailable));
    return forward(leader, "STREAM.DELETE." + std::string(name), m, hops);
  }
  const auto r = _repl.propose(kMetaGroup, 0, re::encode(re::meta_op{re::stream_remove{_account, std::string(name)}}));
  if (r.st != core::group_propose_result::status::ok)
    return respond_error(m.reply, type, make_error(err::cluster_unavailable));
  _deleting[std::string(name)] = {std::string(m.reply), _host.clk().wall_ns() + kAnswerWindowNs};
}

// ---- the cluster's requests to this server

void cluster_streams::on_msg(const core::inbound_msg& m) {
  std::string_view rest = m.subject.substr(prefix_of(_self).size());
  const auto dot = rest.find('.');
  if (dot == std::string_view::npos) return;
  const int hops = std::atoi(std::string(rest.substr(0, dot)).c_str());
  rest.remove_prefix(dot + 1);
  if (rest == "CCREATED") return _consumers->on_created_notice(m);
  if (rest == "CSTATE") return _consumers->on_state_request(m, hops);  // a scale's origin asks
  if (rest == "CSTATED") return _consumers->on_state_reply(m);
  if (rest == "CREATED") {  // the meta leader: answer this create once the stream is led here
    const std::string name(m.payload);
    auto it = _hosted.find(name);
    if (it != _hosted.end() && it->second->log->leader && it->second->replica->ready()) {
      ojson j = typed_response("stream_create_response", stream_info(*it->second, _host.clk().wall_ns(), false));
      j["did_create"] = true;
      return respond(m.reply, j);
    }
    if (it != _hosted.end() && !it->second->leader_name.empty() && it->second->leader_name != _self)
      return;  // its leader answers
    _answer_when_leading[name].push_back({std::string(m.reply), _host.clk().wall_ns() + kAnswerWindowNs});
    return;
  }
  if (rest == "SCALE") return on_scale(m.payload, m.reply);
  if (rest == "R1REPORT") return on_r1_report(m);
  if (rest.starts_with("SYS.")) return on_operator_request(rest.substr(4), m, hops);
  if (rest == "UNSEED") return unseed(std::string(m.payload));
  if (rest.starts_with("LISTED.")) return on_listed(rest.substr(7), m);  // a gather's answer
  if (rest == "UPDATED" || rest == "SEEDED") {  // the meta leader: answer once applied here as leader
    const auto nl = m.payload.find('\n');
    if (nl == std::string_view::npos) return;
    const std::string name(m.payload.substr(0, nl));
    pending_update p{std::string(m.reply), std::string(m.payload.substr(nl + 1)),
                     _host.clk().wall_ns() + kAnswerWindowNs, rest == "SEEDED"};
    auto it = _hosted.find(name);
    if (!p.origin && it != _hosted.end() && !it->second->leader_name.empty() && it->second->leader_name != _self)
      return;
    _answer_when_current[name].push_back(std::move(p));
    if (it != _hosted.end()) answer_updates(*it->second, _host.clk().wall_ns());
    return;
  }
  if (!on_api(rest, m, hops) && !serve_r1_here(rest, m)) {
    // The stream is gone (or not known here yet): as the hub would answer.
    if (rest.starts_with("STREAM.") || rest.starts_with("CONSUMER."))
      respond_error(m.reply, "stream_info_response", make_error(err::stream_not_found));
  }
}

// ---- events from the replication thread

std::size_t cluster_streams::poll(std::int64_t) {
  const std::int64_t now = _host.clk().wall_ns();
  std::size_t work = _router->drain(now);  // every account's events (the first to poll takes them)
  for (auto& [name, h] : _hosted) {
    if (h->log->leader && !h->replica->ready()) h->replica->on_role(now);  // a busy leader_start
    if (!h->backlog.empty()) work += drain_backlog(*h);
    work += poll_links(*h, now);
    if (h->fast) work += h->fast->expire(now);
    if (h->log->leader && h->replica->tick(now)) ++work;
    for (const auto& [id, why] : h->replica->take_abandoned()) {  // as the standalone stream's
      const std::string subject = "$JS.EVENT.ADVISORY.STREAM.BATCH_ABANDONED." + name;
      if (_host.has_interest(subject))
        _host.publish(subject, "", "",
                      event_json("stream_batch_abandoned", ojson{{"stream", name}, {"batch", id}, {"reason", why}},
                                 _domain, now));
    }
  }
  work += _consumers->poll(now);
  _repl.flush_proposals();  // this turn's proposals: one wake-up of pg-repl
  auto expire = [&](auto& map) {
    std::erase_if(map, [&](auto& kv) {
      if (kv.second.deadline_ns > now) return false;
      return true;  // the client's request timed out long ago
    });
  };
  expire(_creating);
  expire(_deleting);
  expire(_updating);
  std::erase_if(_removing, [&](auto& kv) {
    if (kv.second.deadline_ns > now) return false;
    respond_error(kv.second.reply, "stream_remove_peer_response", make_error(err::cluster_unavailable));
    return true;  // no other server came to lead it
  });
  poll_scaling(now);
  poll_remaps(now);
  sync_r1(now);
  work += poll_queries(now);  // gathers' deadlines, direct-get responders
  for (auto& [name, v] : _answer_when_current)
    std::erase_if(v, [&](const pending_update& p) { return p.deadline_ns <= now; });
  std::erase_if(_answer_when_current, [](const auto& kv) { return kv.second.empty(); });
  for (auto& [name, v] : _answer_when_leading)
    std::erase_if(v, [&](const pending_reply& p) { return p.deadline_ns <= now; });
  std::erase_if(_answer_when_leading, [](const auto& kv) { return kv.second.empty(); });
  return work;
}

// Log compaction: the replica's state goes to its group as a snapshot once the applied log
// outweighs it (snapshot_policy). This thread only clones the store (chunk copies); a helper
// thread reads the messages from the clone and encodes them (85-215 ms for 7 MB when done
// here, holding every stream and consumer of this thread). One snapshot encodes at a time:
// another stream that is due waits for a later apply.
void cluster_streams::maybe_snapshot(hosted& h) {
  if (h.replica->failed() || h.replica->applied_index() == 0) return;
  const std::uint64_t last = h.store->last_seq(), first = h.store->first_seq();
  const std::uint64_t state = h.store->stored_bytes() + 64 * (last >= first ? last - first + 1 : 0);
  if (!h.snapshots.due(state)) return;
  if (_encoder && !_encoder->done.load(std::memory_order_acquire)) return;
  if (_encoder) {
    _encoder->thread.join();
    _encoder.reset();
  }
  h.snapshots.taken();
  const std::int64_t t0 = _host.clk().monotonic_ns();
  const std::uint64_t group = h.assignment.group_id, index = h.replica->applied_index();
  stream_replica::snapshot_parts parts = h.replica->snapshot_source();
  PG_ASSERT(parts.store != nullptr);  // a replica's store is a memory_store, which clones
  const std::int64_t copy_ms = (_host.clk().monotonic_ns() - t0) / 1'000'000;
  _encoder = std::make_unique<snapshot_encoder>();
  _encoder->thread = std::thread([this, enc = _encoder.get(), parts = std::move(parts), name = h.cfg.name, group, index,
                                  copy_ms]() mutable {
    const auto t1 = std::chrono::steady_clock::now();
    auto data = std::make_shared<const std::vector<std::uint8_t>>(
        stream_replica::encode_snapshot(std::move(parts.head), *parts.store));
    parts.store.reset();
    const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t1).count();
    PG_INFO("Replicated stream {}: snapshot at index {}, {} bytes (store copied in {} ms on the owner, encoded in {} ms "
            "off it)", name, index, data->size(), copy_ms, ms);
    _repl.snapshot_taken(group, index, std::move(data));
    enc->done.store(true, std::memory_order_release);
  });
}

void cluster_streams::on_event(core::group_event& ev, std::int64_t now_ns) {
  if (ev.group == kMetaGroup) return apply_meta(ev, now_ns);
  auto it = _by_group.find(ev.group);
  if (it == _by_group.end()) {
    (void)_consumers->on_event(ev, now_ns);  // a consumer's group (or removed meanwhile)
    return;
  }
  hosted& h = *it->second;
  if (ev.what == core::group_event::kind::proposed) {
    h.replica->on_proposed(ev.ticket, ev.count, ev.index, ev.term);
    h.replica->on_role(now_ns);
  } else if (ev.what == core::group_event::kind::role) {
    h.log->leader = ev.leader;
    h.log->term_ = ev.term;
    h.leader_name = ev.leader_name;
    h.replica->on_role(now_ns);
  } else {
    repl::committed_entry e;
    e.index = ev.index;
    e.value.term = ev.term;
    e.value.type = repl::entry_type(ev.type);
    e.value.data = std::move(ev.data);
    const bool restored = e.value.type == repl::entry_type::snapshot;
    h.snapshots.applied(restored ? 0 : e.value.data.size());
    if (restored) h.snapshots.taken();
    std::vector<replica_reply> out;
    const bool was_failed = h.replica->failed();
    h.replica->apply(e, out);
    if (h.replica->failed() && !was_failed) PG_ERROR("replicated stream {} stopped: {}", h.cfg.name, h.replica->error());
    if (restored && !h.replica->failed()) {
      PG_INFO("Replicated stream {}: restored from a snapshot at index {} (last sequence {})", h.cfg.name, e.index,
              h.store->last_seq());
      _consumers->sweep_retained(h.cfg.name);  // acks applied here before may release restored messages
    }
    maybe_snapshot(h);
    for (const auto& r : h.replica->take_republished()) _host.publish(r.subject, "", r.headers, r.payload);
    publish_replies(h, out);
    fast_applied(h);
    h.replica->on_role(now_ns);  // a leader_start that could not be proposed is tried again
    follow_config(h);
    _consumers->on_stream_applied(h.cfg.name, now_ns);
  }
  after_event(h, now_ns);
}

void cluster_streams::apply_meta(const core::group_event& ev, std::int64_t now_ns) {
  if (ev.what != core::group_event::kind::apply) return;
  ++_meta_version;
  if (ev.type == std::uint8_t(repl::entry_type::snapshot)) return restore_meta(ev, now_ns);
  if (ev.type != std::uint8_t(repl::entry_type::command)) return;
  std::vector<meta_change> mine;
  const auto op = re::decode_meta(ev.data);
  if (!_meta.apply(ev.data, mine)) {
    if (_primary) PG_ERROR("meta entry {} does not decode: ignored", ev.index);
    return;
  }
  keep_own_account(mine);
  _meta_snapshots.applied(ev.data.size());
  if (op && !is_own_account(*op)) {  // another account's stream or consumer: its instance acts
    maybe_snapshot_meta(ev.index);
    return;
  }
  // A server left out by a scale: its consumers' replicas go with the stream's, silently
  // (the new groups take over their state).
  const bool scaled = op && std::holds_alternative<re::stream_update>(*op);
  apply_meta_changes(mine, ev.index, scaled, now_ns);
  if (op) _consumers->on_meta(mine, &*op, now_ns);
  maybe_snapshot_meta(ev.index);
  if (!op) return;
  if (const auto* gone = std::get_if<re::server_remove>(&*op)) return on_server_removed(gone->name, now_ns);
  if (const auto* r1 = std::get_if<re::r1_streams>(&*op)) {
    if (r1->server == _self) {  // this server's report applied: compare again at once
      _r1_report_until_ns = 0;
      _r1_dirty = true;
    }
    _r1_synced = false;  // another's may have freed a name this server holds: within a second
    return;
  }
  const re::stream_assign* seeded = std::get_if<re::stream_assign>(&*op);
  if (!seeded) seeded = std::get_if<re::stream_update>(&*op);
  if (seeded && !seeded->seed_from.empty()) {  // a scale: answered as an update
    auto p = _updating.find(seeded->name);
    if (p == _updating.end()) return;
    const std::string notice = seeded->name + "\n" + seeded->config_json;
    core::inbound_msg n;
    n.reply = p->second.reply;
    n.payload = notice;
    // Only the origin can lead it first (the others step down until it is seeded).
    forward(seeded->seed_from, "SEEDED", n, kMaxHops);
    _updating.erase(p);
    return;
  }
  if (const auto* a = std::get_if<re::stream_assign>(&*op)) {
    auto p = _creating.find(a->name);
    if (p == _creating.end()) return;
    // Its leader answers the client (once elected and caught up).
    core::inbound_msg n;
    n.reply = p->second.reply;
    n.payload = a->name;
    for (const auto& peer : a->peers) forward(peer, "CREATED", n, kMaxHops);
    _creating.erase(p);
  } else if (const auto* u = std::get_if<re::stream_update>(&*op)) {
    auto p = _updating.find(u->name);
    if (p == _updating.end()) return;
    // The stream's leader answers once it has applied this config.
    const std::string notice = u->name + "\n" + u->config_json;
    core::inbound_msg n;
    n.reply = p->second.reply;
    n.payload = notice;
    for (const auto& peer : u->peers) forward(peer, "UPDATED", n, kMaxHops);
    _updating.erase(p);
  } else if (const auto* r = std::get_if<re::stream_remove>(&*op)) {
    auto p = _deleting.find(r->name);
    if (p == _deleting.end()) return;
    respond(p->second.reply, ojson{{"type", "io.nats.jetstream.api.v1.stream_delete_response"}, {"success", true}});
    _deleting.erase(p);
  }
  (void)now_ns;
}

void cluster_streams::apply_meta_changes(const std::vector<meta_change>& mine, std::uint64_t meta_index, bool scaled,
                                         std::int64_t now_ns) {
  for (const auto& c : mine) {
    if (c.what == meta_change::kind::create_stream) host_stream(c.stream, meta_index);
    if (c.what == meta_change::kind::remove_stream) drop_stream(c.stream.name, scaled);
    if (c.what == meta_change::kind::update_stream) update_hosted(c.stream, meta_index, now_ns);
  }
}

// The meta group's snapshot (a restart from it, or InstallSnapshot after this server fell
// behind the leader's compacted log): the whole table at once, and this server's replicas
// brought in line with it.
void cluster_streams::restore_meta(const core::group_event& ev, std::int64_t now_ns) {
  std::vector<meta_change> mine;
  const std::set<std::string> removed_before = _meta.removed();
  if (!_meta.restore(ev.data, mine)) {
    if (_primary) PG_ERROR("meta snapshot at index {} does not decode: ignored", ev.index);
    return;
  }
  keep_own_account(mine);
  _meta_snapshots.taken();
  _meta_snapshot_bytes = ev.data.size();
  if (_primary || !mine.empty()) PG_INFO("JetStream cluster: meta state restored from a snapshot at index {} ({} streams, {} changes here)",
          ev.index, _meta.streams().size(), mine.size());
  apply_meta_changes(mine, ev.index, false, now_ns);
  _consumers->on_meta(mine, nullptr, now_ns);
  for (const auto& name : _meta.removed())
    if (!removed_before.count(name)) on_server_removed(name, now_ns);
  _r1_dirty = true;  // compare this server's R1 streams with what the table says
  _r1_synced = false;
}

void cluster_streams::keep_own_account(std::vector<meta_change>& mine) const {
  std::erase_if(mine, [&](const meta_change& c) {
    const bool consumer = c.what == meta_change::kind::create_consumer ||
                          c.what == meta_change::kind::remove_consumer ||
                          c.what == meta_change::kind::update_consumer;
    return (consumer ? c.consumer.account : c.stream.account) != _account;
  });
}

bool cluster_streams::is_own_account(const re::meta_op& op) const {
  return std::visit(
      [&](const auto& v) {
        if constexpr (requires { v.account; }) return v.account == _account;
        else return true;  // server_remove, r1_streams: the cluster's, every account's
      },
      op);
}

// Only the primary account's instance snapshots the meta log (every instance holds the whole
// table; one snapshot serves them all).
void cluster_streams::maybe_snapshot_meta(std::uint64_t index) {
  if (!_primary || !_meta_snapshots.due(_meta_snapshot_bytes)) return;
  _meta_snapshots.taken();
  auto data = std::make_shared<const std::vector<std::uint8_t>>(_meta.snapshot());
  _meta_snapshot_bytes = data->size();
  PG_INFO("JetStream cluster: meta snapshot at index {}, {} bytes", index, data->size());
  _repl.snapshot_taken(kMetaGroup, index, std::move(data));
}

void cluster_streams::host_stream(const re::stream_assign& a, std::uint64_t meta_index, seed* from) {
  if (_hosted.count(a.name)) return;
  auto h = std::make_unique<hosted>();
  h->assignment = a;
  if (auto e = parse_stream_config(a.config_json, h->cfg)) {
    PG_ERROR("replicated stream {}: its assigned config does not parse: {}", a.name, e->description);
    return;
  }
  (void)normalise(h->cfg);
  // The Raft log is the durable copy: a restarted replica replays it into an empty store.
  h->store = std::make_unique<storage::memory_store>(h->cfg.storage == storage_type::memory
                                                         ? storage::byte_accounting::memory
                                                         : storage::byte_accounting::file);
  h->log = std::make_unique<remote_log>(_repl, a.group_id);
  h->replica = std::make_unique<stream_replica>(h->cfg, *h->store, *h->log, _self);
  h->replica->start_config(a.config_json, meta_index);
  h->replica->set_interest_check(
      [this, name = a.name](std::string_view subject) { return _consumers->wants(name, subject); });
  h->config_index = meta_index;
  if (!a.seed_from.empty()) {
    bool r1 = false;
    if (!from && a.seed_from == _self) {
      if (auto sd = _r1_seeds.find(a.name); sd != _r1_seeds.end()) {
        from = &sd->second;
        r1 = true;
      }
    }
    // An origin without its messages (restarted before the seed was done) cannot seed: it
    // steps down like any other leader of the unseeded group.
    h->replica->await_seed(from ? _self : a.seed_from == _self ? std::string() : a.seed_from,
                           from ? std::move(from->msgs) : std::vector<re::msg>{}, from ? from->last_seq : 0);
    if (r1) {
      _r1_seeds.erase(a.name);
      if (on_r1_scaled) on_r1_scaled(a.name, true);
    }
  }
  h->handler.owner = this;
  h->handler.h = h.get();
  _by_group[a.group_id] = h.get();
  PG_INFO("Replicated stream {} (R{}) placed here, group {}", a.name, a.peers.size(), a.group_id);
  _hosted.emplace(a.name, std::move(h));
  _repl.create_group(a.group_id, a.peers);
}

void cluster_streams::drop_stream(const std::string& name, bool silent) {
  auto it = _hosted.find(name);
  if (it == _hosted.end()) return;
  _consumers->drop_stream(name, silent);
  for (auto id : it->second->subs) _host.unsubscribe(id);
  if (it->second->links)
    for (auto& l : it->second->links->links) l->stop(true);  // the origin's consumers go too
  _repl.remove_group(it->second->assignment.group_id);
  _by_group.erase(it->second->assignment.group_id);
  _hosted.erase(it);
}

// A committed STREAM.UPDATE on a server with a replica: the new limits apply at once, the
// leader moves its subscriptions to the new subjects (after_event subscribes them again).
void cluster_streams::update_hosted(const re::stream_assign& a, std::uint64_t meta_index, std::int64_t now_ns) {
  auto it = _hosted.find(a.name);
  if (it == _hosted.end()) return host_stream(a, meta_index);
  hosted& h = *it->second;
  if (h.assignment.group_id != a.group_id) {  // num_replicas changed: a new group, seeded
    seed from;
    seed* own = nullptr;
    if (a.seed_from == _self) {
      from.last_seq = h.store->last_seq();
      for (std::uint64_t seq = h.store->first_seq();;) {
        auto msg = h.store->load_next("", seq);
        if (!msg.ok()) break;
        from.msgs.push_back({msg->seq, msg->ts, msg->ttl, msg->subject, msg->headers, msg->payload});
        seq = msg->seq + 1;
      }
      own = &from;
    }
    drop_stream(a.name, true);
    return host_stream(a, meta_index, own);
  }
  // It takes effect at its entry in the stream's log (follow_config), proposed by the leader.
  h.assignment = a;
  h.replica->want_config(a.config_json, meta_index);
  follow_config(h);
  after_event(h, now_ns);
}

void cluster_streams::follow_config(hosted& h) {
  if (h.replica->config_index() == h.config_index) return;
  stream_config cfg;
  if (auto e = parse_stream_config(h.replica->config_json(), cfg)) {
    PG_ERROR("replicated stream {}: its updated config does not parse: {}", h.cfg.name, e->description);
    return;
  }
  (void)normalise(cfg);
  h.config_index = h.replica->config_index();
  const bool to_interest = h.cfg.retention == retention_policy::limits && cfg.retention == retention_policy::interest;
  h.cfg = std::move(cfg);  // in place: consumers hold a pointer to it
  if (to_interest) _consumers->retention_now_interest(h.cfg.name);
  // The leader moves its subscriptions to the new subjects (after_event subscribes again).
  for (auto id : h.subs) _host.unsubscribe(id);
  h.subs.clear();
  h.subscribed = false;
}

void cluster_streams::answer_updates(hosted& h, std::int64_t now_ns) {
  auto it = _answer_when_current.find(h.cfg.name);
  if (it == _answer_when_current.end()) return;
  auto& v = it->second;
  if (!h.leader_name.empty() && h.leader_name != _self) {
    std::erase_if(v, [](const pending_update& p) { return !p.origin; });  // its leader answers
    if (v.empty()) _answer_when_current.erase(it);
    return;
  }
  if (!h.log->leader || !h.replica->ready()) return;
  std::erase_if(v, [&](const pending_update& p) {
    if (p.config_json != h.replica->config_json()) return false;  // not applied in the log yet
    respond(p.reply, typed_response("stream_update_response", stream_info(h, now_ns, false)));
    return true;
  });
  if (v.empty()) _answer_when_current.erase(it);
}

void cluster_streams::after_event(hosted& h, std::int64_t now_ns) {
  if (h.log->leader && h.replica->take_stepdown_wish()) {
    PG_INFO("Replicated stream {}: not seeded here, handing leadership on", h.cfg.name);
    _repl.group_stepdown(h.assignment.group_id);
  }
  if (auto r = _removing.find(h.cfg.name);
      r != _removing.end() && !h.leader_name.empty() && h.leader_name != _self) {
    core::inbound_msg n;  // a PEER.REMOVE of this server: the new leader carries it out
    n.reply = r->second.reply;
    n.payload = r->second.payload;
    forward(h.leader_name, "STREAM.PEER.REMOVE." + h.cfg.name, n, 0);
    _removing.erase(r);
  }
  const bool serving = h.log->leader && h.replica->ready() && !h.frozen;
  if (serving && !h.subscribed) {
    for (const auto& s : h.cfg.subjects) h.subs.push_back(_host.subscribe_cluster(s, &h.handler));
    h.subscribed = true;
    PG_INFO("Replicated stream {}: leading (term {})", h.cfg.name, h.log->term_);
  } else if (!serving && h.subscribed) {
    for (auto id : h.subs) _host.unsubscribe(id);
    h.subs.clear();
    h.subscribed = false;
  }
  sync_links(h, serving, now_ns);
  if (!serving && h.fast) h.fast.reset();  // its batches end unanswered, as with a lost leader
  answer_updates(h, now_ns);
  if (!serving) {
    // Another server leads and answers the create: a reply kept here would be a second one.
    if (!h.leader_name.empty() && h.leader_name != _self) _answer_when_leading.erase(h.cfg.name);
    return;
  }
  auto it = _answer_when_leading.find(h.cfg.name);
  if (it == _answer_when_leading.end()) return;
  ojson j = typed_response("stream_create_response", stream_info(h, now_ns, false));
  j["did_create"] = true;
  for (const auto& p : it->second) respond(p.reply, j);
  _answer_when_leading.erase(it);
}

}  // namespace js
