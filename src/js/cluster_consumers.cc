#include "src/js/cluster_consumers.h"
#include "src/js/cluster_consumer_hosted.h"

#include <algorithm>

#include "src/base/log.h"
#include "src/core/subject.h"
#include "src/js/ack.h"
#include "src/js/api_json.h"
#include "src/js/cluster_info.h"
#include "src/js/consumer_config.h"
#include "src/js/consumer_replica.h"
#include "src/js/group_host.h"
#include "src/js/json_util.h"
#include "src/js/pull_request.h"

namespace js {

namespace re = repl_entries;
using ojson = nlohmann::ordered_json;

namespace {

constexpr std::int64_t kInterestCheckNs = 10'000'000;
constexpr std::int64_t kDeleteRetryNs = 5'000'000'000;  // an expired ephemeral asks again
constexpr std::int64_t kFreezeNs = 15'000'000'000;      // a scale's pause: past this, given up
constexpr std::int64_t kSettleNs = 1'000'000'000;       // acks in flight: wait this long at most

}  // namespace

cluster_consumers::cluster_consumers(core::service_host& host, core::cluster_replication& repl, const meta_state& meta,
                                     std::string domain, std::string account, stream_lookup streams)
    : _host(host), _repl(repl), _meta(meta), _domain(std::move(domain)), _self(host.server_name()),
      _account(std::move(account)), _streams(std::move(streams)) {}

cluster_consumers::~cluster_consumers() {
  for (auto& [k, h] : _hosted)
    for (auto id : h->subs) _host.unsubscribe(id);
}

const re::consumer_assign* cluster_consumers::assigned(const key& k) const {
  const auto* s = _meta.find(_account, k.first);
  if (!s) return nullptr;
  auto it = s->consumers.find(k.second);
  return it == s->consumers.end() ? nullptr : &it->second;
}

// ---- meta entries

void cluster_consumers::on_meta(const std::vector<meta_change>& mine, const re::meta_op* applied, std::int64_t now_ns) {
  for (const auto& c : mine) {
    if (c.what == meta_change::kind::create_consumer) host_consumer(c.consumer, now_ns);
    if (c.what == meta_change::kind::remove_consumer) drop_consumer({c.consumer.stream, c.consumer.name});
    if (c.what == meta_change::kind::update_consumer) update_hosted(c.consumer, now_ns);
  }
  if (!applied) return;
  const re::meta_op& op = *applied;
  if (const auto* u = std::get_if<re::consumer_update>(&op)) return on_update_applied(*u);
  if (const auto* a = std::get_if<re::consumer_assign>(&op)) {
    auto p = _creating.find({a->stream, a->name});
    if (p == _creating.end()) return;
    const std::string payload = a->stream + " " + a->name;  // inbound_msg holds views
    core::inbound_msg n;
    n.reply = p->second.reply;
    n.payload = payload;
    for (const auto& peer : a->peers) forward(peer, "CCREATED", n, 1);
    _creating.erase(p);
  } else if (const auto* r = std::get_if<re::consumer_remove>(&op)) {
    auto p = _deleting.find({r->stream, r->name});
    if (p == _deleting.end()) return;
    respond(p->second.reply, ojson{{"type", "io.nats.jetstream.api.v1.consumer_delete_response"}, {"success", true}});
    _deleting.erase(p);
  }
}

// The start of a new consumer, resolved against this replica of the stream. Replicas agree
// for deliver all / by_start_sequence; for the others each resolves against what it holds.
static std::uint64_t resolve_start_seq(const consumer_config& cfg, const std::vector<std::string>& filters,
                                       storage::stream_store& st) {
  const std::uint64_t first = st.first_seq(), last = st.last_seq();
  switch (cfg.deliver) {
    case deliver_policy::all: return std::max<std::uint64_t>(1, first);
    case deliver_policy::new_: return last + 1;
    case deliver_policy::by_start_sequence: return std::max(cfg.opt_start_seq, std::max<std::uint64_t>(1, first));
    case deliver_policy::by_start_time: {
      auto seq = st.seq_for_time(cfg.opt_start_time.value_or(0));
      return seq.ok() ? *seq : last + 1;
    }
    case deliver_policy::last:
    case deliver_policy::last_per_subject: {
      if (filters.empty()) return std::max<std::uint64_t>(1, last);
      std::uint64_t best = 0;
      for (const auto& f : filters)
        if (auto m = st.load_last(f); m.ok()) best = std::max(best, m->seq);
      return best ? best : last + 1;
    }
  }
  return 1;
}

void cluster_consumers::host_consumer(const re::consumer_assign& a, std::int64_t now_ns) {
  const key k{a.stream, a.name};
  if (_hosted.count(k)) return;
  const stream_ref s = _streams(a.stream);
  if (!s.cfg || !s.store) {
    PG_ERROR("replicated consumer {} > {}: its stream has no replica here", a.stream, a.name);
    return;
  }
  auto j = ojson::parse(a.config_json, nullptr, false);
  auto cfg = j.is_object() ? consumer_config_from_json(j) : std::nullopt;
  if (!cfg) {
    PG_ERROR("replicated consumer {} > {}: its assigned config does not parse", a.stream, a.name);
    return;
  }
  auto h = std::make_unique<hosted>();
  h->assignment = a;
  h->cfg = *cfg;
  h->scfg = *s.cfg;
  h->store = s.store;
  h->filters = h->cfg.match_filters();
  h->acks.owner = h->fc.owner = this;
  h->acks.h = h->fc.h = h.get();
  h->fc.flow_control = true;
  consumer_params p = params_for(*h);
  p.start_seq = resolve_start_seq(h->cfg, h->filters, *h->store);
  h->log = std::make_unique<consumer_group_log>(_repl, a.group_id);
  h->replica = std::make_unique<consumer_replica>(p, *h, *h->log, _self);
  if (h->cfg.pause_until) {  // created paused: its first leader starts paused
    actions none;  // no machine yet: nothing comes out
    h->replica->update(std::move(p), *h->cfg.pause_until, now_ns, none);
  }
  if (a.state) h->replica->seed(*a.state);  // a scale: where the old group left off
  _by_group[a.group_id] = h.get();
  PG_INFO("Replicated consumer {} > {} (R{}) placed here, group {}", a.stream, a.name, a.peers.size(), a.group_id);
  _hosted.emplace(k, std::move(h));
  _repl.create_group(a.group_id, a.peers);
}

void cluster_consumers::drop_consumer(const key& k, bool silent, bool retain) {
  auto it = _hosted.find(k);
  if (it == _hosted.end()) return;
  hosted& h = *it->second;
  if (!silent) {
    // Waiting pull requests hear 409 Consumer Deleted, as from a standalone consumer.
    actions out;
    h.replica->on_delete(out);
    run(h, out, _host.clk().wall_ns());
  }
  for (auto id : h.subs) _host.unsubscribe(id);
  if (!silent)
    for (const auto& [t, reply] : h.ack_replies) _host.publish(reply, "", "", "");  // nothing can redeliver now
  _repl.remove_group(h.assignment.group_id);
  _by_group.erase(h.assignment.group_id);
  _answer_when_leading.erase(k);
  _hosted.erase(it);
  if (!silent && retain) drop_unneeded(k.first);  // interest: what only it needed
}

void cluster_consumers::drop_stream(const std::string& stream, bool silent) {
  std::vector<key> gone;
  for (auto it = _hosted.lower_bound({stream, ""}); it != _hosted.end() && it->first.first == stream; ++it)
    gone.push_back(it->first);
  for (const auto& k : gone) drop_consumer(k, silent, false);  // the stream goes too
  _early_releases.erase(stream);
}

// ---- group events

bool cluster_consumers::on_event(core::group_event& ev, std::int64_t now_ns) {
  auto it = _by_group.find(ev.group);
  if (it == _by_group.end()) return false;
  hosted& h = *it->second;
  if (ev.what == core::group_event::kind::proposed) {
    h.replica->on_proposed(ev.ticket, ev.count, ev.index);  // queued deliveries' and acks' indexes
    return true;
  }
  if (ev.what == core::group_event::kind::role) {
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
    std::vector<consumer_ack_confirm> confirmed;
    const bool was_failed = h.replica->failed();
    h.replica->apply(e, now_ns, confirmed);
    if (h.replica->failed() && !was_failed) PG_ERROR("replicated consumer {} stopped: {}", h.cfg.name, h.replica->error());
    if (restored && !h.replica->failed()) sweep_retained(h.assignment.stream);
    maybe_snapshot(h);
    release(h, h.replica->take_released());  // before the ack-sync reply: it sees the removal
    for (const auto& c : confirmed) {
      if (answer_reset(h, c.token, now_ns)) continue;
      auto r = h.ack_replies.find(c.token);
      if (r == h.ack_replies.end()) continue;
      _host.publish(r->second, "", "", "");  // the ack is applied: a majority holds it
      h.ack_replies.erase(r);
    }
    h.replica->on_role(now_ns);  // a leader_start that could not be proposed is tried again
  }
  after_event(h, now_ns);
  return true;
}

// Log compaction, as the stream's (cluster_streams::maybe_snapshot).
void cluster_consumers::maybe_snapshot(hosted& h) {
  if (h.replica->failed() || h.replica->applied_index() == 0) return;
  if (!h.snapshots.due(64 * h.replica->tracked())) return;
  h.snapshots.taken();
  auto data = std::make_shared<const std::vector<std::uint8_t>>(h.replica->snapshot());
  _repl.snapshot_taken(h.assignment.group_id, h.replica->applied_index(), std::move(data));
}

void cluster_consumers::on_stream_applied(const std::string& stream, std::int64_t now_ns) {
  release_early(stream);
  for (auto it = _hosted.lower_bound({stream, ""}); it != _hosted.end() && it->first.first == stream; ++it) {
    hosted& h = *it->second;
    if (!h.log->leader || frozen(h, now_ns)) continue;
    const bool was_ready = h.replica->ready();
    actions out;
    h.replica->on_stream_advanced(h.store->last_seq(), now_ns, out);
    run(h, out, now_ns);
    if (!was_ready && h.replica->ready()) after_event(h, now_ns);
  }
}

void cluster_consumers::after_event(hosted& h, std::int64_t now_ns) {
  const bool is_frozen = frozen(h, now_ns);
  if (!is_frozen) {
    actions out;  // the stream replica's end: lets a new leader resume, delivers what waits
    h.replica->on_stream_advanced(h.store->last_seq(), now_ns, out);
    run(h, out, now_ns);
  }
  const bool serving = h.log->leader && h.replica->ready() && !is_frozen;
  const std::string base = h.assignment.stream + "." + h.assignment.name + ".>";
  if (serving && h.subs.empty()) {
    if (h.cfg.ack != ack_policy::none) h.subs.push_back(_host.subscribe_cluster("$JS.ACK." + base, &h.acks));
    if (h.cfg.push() && h.cfg.flow_control) h.subs.push_back(_host.subscribe_cluster("$JS.FC." + base, &h.fc));
    h.push_bound = false;
    h.next_interest_check = 0;
    PG_INFO("Replicated consumer {} > {}: leading (term {})", h.assignment.stream, h.assignment.name, h.log->term_);
  } else if (!serving && !h.subs.empty()) {
    for (auto id : h.subs) _host.unsubscribe(id);
    h.subs.clear();
    // Never confirmed: the client's ack-sync times out and it acks again (paused for a
    // scale, the acks in flight are still confirmed as they apply).
    if (!is_frozen) h.ack_replies.clear();
    h.reset_replies.clear();  // the client asks again
  }
  const key k{h.assignment.stream, h.assignment.name};
  if (!serving) {
    if (!h.leader_name.empty() && h.leader_name != _self) _answer_when_leading.erase(k);
    return;
  }
  if (h.cfg.push()) check_push_interest(h, now_ns);
  auto it = _answer_when_leading.find(k);
  if (it == _answer_when_leading.end()) return;
  const ojson j = typed_response("consumer_create_response", info_json(h, now_ns));
  std::erase_if(it->second, [&](const pending_reply& p) {
    if (!p.want_config.empty() && p.want_config != h.assignment.config_json) return false;  // not applied yet
    respond(p.reply, j);
    return true;
  });
  if (it->second.empty()) _answer_when_leading.erase(it);
}

// ---- the leader's inputs

void cluster_consumers::on_ack(hosted& h, const core::inbound_msg& m) {
  auto subj = decode_ack_subject(m.subject);
  if (!subj) return;
  const std::int64_t now = _host.clk().wall_ns();
  const ack_body body = parse_ack_body(m.payload);
  const std::uint64_t token = h.next_token++;
  actions out;
  const auto st = h.replica->ack(*subj, body, token, now, out);
  h.last_ack = now;
  if (st == consumer_submit::done && !m.reply.empty() && body.kind != ack_kind::next) {
    h.ack_replies[token] = std::string(m.reply);  // answered once applied
  } else if (st == consumer_submit::ignored && !m.reply.empty() && body.kind != ack_kind::next) {
    _host.publish(m.reply, "", "", "");  // nothing to replicate (a nak, progress, a repeat)
  }
  if (body.kind == ack_kind::next && !m.reply.empty() &&
      (st == consumer_submit::done || st == consumer_submit::ignored)) {
    auto req = parse_pull_request(body.next_body);
    if (auto* r = std::get_if<pull_request>(&req)) (void)h.replica->pull(std::string(m.reply), *r, now, out);
  }
  run(h, out, now);
}

void cluster_consumers::on_flow_control(hosted& h, const core::inbound_msg& m) {
  const std::int64_t now = _host.clk().wall_ns();
  actions out;
  // Flow-control bookkeeping is not replicated (a new leader starts afresh).
  h.replica->on_flow_control_reply(std::string(m.subject), now, out);
  run(h, out, now);
}

void cluster_consumers::on_pull(hosted& h, const core::inbound_msg& m) {
  const std::int64_t now = _host.clk().wall_ns();
  if (m.reply.empty() || frozen(h, now)) return;  // a scale: the client asks the new group again
  actions out;
  // not_ready (an election under way): the client's fetch times out and it asks again.
  if (auto req = parse_pull_or_400(m.reply, m.payload, out)) (void)h.replica->pull(std::string(m.reply), *req, now, out);
  run(h, out, now);
}

void cluster_consumers::check_push_interest(hosted& h, std::int64_t now_ns) {
  h.next_interest_check = now_ns + kInterestCheckNs;
  if (!h.replica->ready() || frozen(h, now_ns)) return;
  const bool bound = _host.has_interest(h.cfg.deliver_subject);
  if (bound == h.push_bound) return;
  h.push_bound = bound;
  actions out;
  h.replica->set_push_interest(bound, now_ns, out);
  run(h, out, now_ns);
}

// The machine's actions: deliveries read this server's replica of the stream.
void cluster_consumers::run(hosted& h, actions& out, std::int64_t now_ns) {
  if (h.replica->has_unflushed() && !h.unflushed) {
    h.unflushed = true;
    _unflushed.push_back(h.assignment.group_id);
  }
  for (auto& a : out) {
    if (auto* d = std::get_if<delivery>(&a)) {
      auto m = h.store->load(d->stream_seq);
      if (!m.ok()) continue;  // removed meanwhile; the ack wait brings it back or the ack drops it
      h.last_delivery = now_ns;
      const std::string ack = encode_ack_subject(h.assignment.stream, h.assignment.name, d->delivery_count,
                                                 d->stream_seq, d->consumer_seq, d->timestamp, d->pending);
      std::string hdr;
      std::string_view headers = m->headers, payload = m->payload;
      if (h.cfg.headers_only) {
        hdr = append_header(m->headers, "Nats-Msg-Size", std::to_string(m->payload.size()));
        headers = hdr;
        payload = {};
      }
      if (!d->pin_id.empty()) {
        hdr = append_header(headers, "Nats-Pin-Id", d->pin_id);
        headers = hdr;
      }
      _host.deliver(d->to, m->subject, ack, headers, payload);
    } else if (auto* s = std::get_if<status_reply>(&a)) {
      _host.publish(s->to, s->reply, s->render(), "");
    } else if (auto* adv = std::get_if<advisory>(&a)) {
      send_advisory(h, *adv);
    } else if (std::holds_alternative<inactive>(a)) {
      h.expired = true;
    }
    // The machine's `released` are not acted on: retention follows the committed acks
    // (cluster_consumer_retention.cc).
  }
  out.clear();
}

std::size_t cluster_consumers::poll(std::int64_t now_ns) {
  std::size_t work = 0;
  for (auto& [k, hp] : _hosted) {
    hosted& h = *hp;
    work += answer_state_requests(h, now_ns);
    if (h.frozen_until != 0 && now_ns >= h.frozen_until) {  // the scale was given up
      h.frozen_until = 0;
      after_event(h, now_ns);
    }
    if (!h.replica->ready() || !h.log->leader || frozen(h, now_ns)) continue;
    if (h.replica->next_deadline() <= now_ns) {
      actions out;
      h.replica->tick(now_ns, out);
      run(h, out, now_ns);
      ++work;
    }
    if (h.cfg.push() && now_ns >= h.next_interest_check) check_push_interest(h, now_ns);
    if (h.expired && now_ns - h.delete_asked_at >= kDeleteRetryNs) {
      // An inactive ephemeral: the meta leader removes it from the cluster.
      h.delete_asked_at = now_ns;
      core::inbound_msg n;
      api_delete(k, n, 0);
    }
  }
  auto expire = [&](auto& map) {
    std::erase_if(map, [&](auto& kv) { return kv.second.deadline_ns <= now_ns; });
  };
  expire(_creating);
  expire(_deleting);
  poll_ops(now_ns);
  for (auto& [k, v] : _answer_when_leading)
    std::erase_if(v, [&](const pending_reply& p) { return p.deadline_ns <= now_ns; });
  std::erase_if(_answer_when_leading, [](const auto& kv) { return kv.second.empty(); });
  for (const std::uint64_t g : _unflushed) {  // last: everything of this turn is in them
    auto it = _by_group.find(g);
    if (it == _by_group.end()) continue;  // dropped meanwhile
    it->second->unflushed = false;
    it->second->replica->flush();
  }
  work += _unflushed.size();
  _unflushed.clear();
  return work;
}

// ---- a scale of the stream (cluster_consumer_scale.cc): the leader's pause and answer

bool cluster_consumers::frozen(const hosted& h, std::int64_t now_ns) const { return h.frozen_until > now_ns; }

void cluster_consumers::freeze_for_state(hosted& h, std::string reply, std::int64_t now_ns) {
  if (!frozen(h, now_ns))
    PG_INFO("Replicated consumer {} > {}: paused for its stream's scale", h.assignment.stream, h.assignment.name);
  h.frozen_until = now_ns + kFreezeNs;
  h.state_replies.emplace_back(std::move(reply), now_ns + kSettleNs);
  after_event(h, now_ns);  // its ack subscription goes
  (void)answer_state_requests(h, now_ns);
}

std::size_t cluster_consumers::answer_state_requests(hosted& h, std::int64_t now_ns) {
  if (h.state_replies.empty()) return 0;
  if (!serving(h)) {  // no longer leads: the origin asks the new leader
    h.state_replies.clear();
    return 1;
  }
  const bool settled = h.replica->settled();
  std::size_t n = 0;
  std::erase_if(h.state_replies, [&](const auto& r) {
    if (!settled && now_ns < r.second) return false;
    consumer_snapshot st = h.replica->state();
    // Nothing delivered yet: where the machine starts (deliver new/last/by time resolved
    // against this stream, not against the new group's replica, empty while it is seeded).
    if (const auto* m = h.replica->machine(); m && st.delivered == sequence_pair{} && st.pending.empty()) {
      const consumer_snapshot ms = m->snapshot();
      if (ms.delivered.consumer_seq == 0 && ms.pending.empty()) {
        st.delivered = ms.delivered;
        st.ack_floor = ms.ack_floor;
      }
    }
    const ojson j{{"stream", h.assignment.stream}, {"name", h.assignment.name},
                  {"state", consumer_seed_json(to_seed(st))}};
    _host.publish(r.first, "", "", j.dump());
    ++n;
    return true;
  });
  return n;
}

std::optional<ojson> cluster_consumers::local_state(const key& k) const {
  auto it = _hosted.find(k);
  if (it == _hosted.end()) return std::nullopt;
  return consumer_seed_json(to_seed(it->second->replica->state()));
}

bool cluster_consumers::serving(const hosted& h) const { return h.log->leader && h.replica->ready(); }
const std::string& cluster_consumers::leader_of(const hosted& h) const { return h.leader_name; }

void cluster_consumers::serve_at_leader(hosted& h, std::string_view what, const core::inbound_msg& m) {
  const std::int64_t now = _host.clk().wall_ns();
  if (what == "MSG.NEXT") return on_pull(h, m);
  if (what == "UNPIN") return serve_unpin(h, m);
  if (what == "RESET") return serve_reset(h, m);
  if (what == "LEADER.STEPDOWN") {
    _repl.group_stepdown(h.assignment.group_id);
    return respond(m.reply, ojson{{"type", "io.nats.jetstream.api.v1.consumer_leader_stepdown_response"},
                                  {"success", true}});
  }
  // Due timers first, as the standalone INFO: an expired pull gets its 408 before the answer.
  if (h.replica->next_deadline() <= now) {
    actions out;
    h.replica->tick(now, out);
    run(h, out, now);
  }
  respond(m.reply, typed_response("consumer_info_response", info_json(h, now)));
}

// ---- ConsumerInfo

ojson cluster_consumers::cluster_json_of(std::uint64_t group, std::int64_t now_ns) {
  return cluster_json(_repl.progress(group), _repl.meta().cluster, now_ns);
}

ojson cluster_consumers::info_json(hosted& h, std::int64_t now_ns) {
  consumer_numbers n;
  if (auto live = h.replica->numbers(now_ns)) {
    n = *live;
  } else {  // a follower's view: the replicated state
    const consumer_snapshot s = h.replica->state();
    n.delivered = s.delivered;
    n.ack_floor = s.ack_floor;
    n.num_ack_pending = s.pending.size();
    n.num_redelivered = s.redelivered.size();
    n.num_pending = h.count_matching(s.delivered.stream_seq + 1);
  }
  ojson j;
  j["stream_name"] = h.assignment.stream;
  j["name"] = h.assignment.name;
  j["created"] = base::rfc3339_nano(h.assignment.created_ns);
  j["config"] = to_json(h.cfg, true);
  ojson delivered{{"consumer_seq", n.delivered.consumer_seq}, {"stream_seq", n.delivered.stream_seq}};
  if (h.last_delivery) delivered["last_active"] = base::rfc3339_nano(h.last_delivery);
  ojson floor{{"consumer_seq", n.ack_floor.consumer_seq}, {"stream_seq", n.ack_floor.stream_seq}};
  if (h.last_ack && n.ack_floor.consumer_seq > 0) floor["last_active"] = base::rfc3339_nano(h.last_ack);
  j["delivered"] = delivered;
  j["ack_floor"] = floor;
  j["num_ack_pending"] = n.num_ack_pending;
  j["num_redelivered"] = h.cfg.max_deliver == 1 ? 0 : n.num_redelivered;
  j["num_waiting"] = n.num_waiting;
  j["num_pending"] = n.num_pending;
  j["cluster"] = cluster_json_of(h.assignment.group_id, now_ns);
  if (h.cfg.push() && h.push_bound) j["push_bound"] = true;
  if (h.replica->pause_until() > now_ns) {  // a follower's view from the config, as the leader's
    j["paused"] = true;
    j["pause_remaining"] = n.paused ? n.pause_remaining : h.replica->pause_until() - now_ns;
  }
  j["ts"] = base::rfc3339_nano(now_ns);
  if (h.cfg.priority != priority_policy::none && !h.cfg.priority_groups.empty()) {
    ojson g{{"group", h.cfg.priority_groups.front()}};
    if (!n.pinned_id.empty()) g["pinned_client_id"] = n.pinned_id;
    g["pinned_ts"] = base::rfc3339_nano(n.pinned_id.empty() ? 0 : n.pinned_at);
    j["priority_groups"] = ojson::array({g});
  }
  return j;
}

void cluster_consumers::respond(std::string_view reply, const ojson& j) {
  if (!reply.empty()) _host.publish(reply, "", "", j.dump());
}

void cluster_consumers::respond_error(std::string_view reply, std::string_view type, const api_error& e,
                                      const ojson& extra) {
  ojson j;
  j["type"] = "io.nats.jetstream.api.v1." + std::string(type);
  j["error"] = to_json(e);
  if (extra.is_object())
    for (auto it = extra.begin(); it != extra.end(); ++it) j[it.key()] = it.value();
  respond(reply, j);
}

}  // namespace js
