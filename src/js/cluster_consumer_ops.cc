// The consumer API calls that change a replicated consumer after its create (issue 11), as a
// standalone server answers them (consumer_api.cc, consumer_reset.cc are the reference):
//
// - PAUSE: the meta leader puts pause_until into the consumer's config and proposes a
//   consumer_update meta entry (nats-server stores it in the config it commits through the
//   meta group); every replica applies the config, the leader's machine pauses (and advises),
//   a later leader starts paused. Answered by the meta leader once the entry is applied.
// - An update (CREATE of an existing consumer with another config allowed by check_update)
//   is a consumer_update too, pause_until kept; answered by the consumer's leader with its
//   info once it has applied that config (CCREATED carries it).
// - UNPIN and RESET are served by the consumer's leader. Pins are not replicated (nats-server
//   does not either); a reset is a consumer_reset entry of the consumer's own group, answered
//   once applied, so a new leader resumes from the reset state.
#include "src/base/go_text.h"
#include "src/base/log.h"
#include "src/js/api_json.h"
#include "src/js/cluster_consumer_hosted.h"
#include "src/js/consumer_advisory.h"
#include "src/js/event_json.h"
#include "src/js/group_host.h"
#include "src/js/cluster_constants.h"

namespace js {

using cluster::kMetaGroup;
using cluster::kAnswerWindowNs;
using cluster::kMaxHops;

namespace re = repl_entries;
using ojson = nlohmann::ordered_json;

namespace {


std::optional<consumer_config> parse_config(const std::string& config_json) {
  auto j = ojson::parse(config_json, nullptr, false);
  return j.is_object() ? consumer_config_from_json(j) : std::nullopt;
}

}  // namespace

// ---- at the meta leader: PAUSE and updates become consumer_update entries

const std::string& cluster_consumers::current_config(const key& k, const re::consumer_assign& a) const {
  auto it = _meta_waits.find(k);
  return it == _meta_waits.end() || it->second.empty() ? a.config_json : it->second.back().config_json;
}

bool cluster_consumers::propose_update(const key& k, std::string config_json, meta_wait w) {
  const auto r = _repl.propose(kMetaGroup, 0, re::encode(re::meta_op{re::consumer_update{_account, k.first, k.second,
                                                                                          config_json}}));
  if (r.st != core::group_propose_result::status::ok) return false;
  w.config_json = std::move(config_json);
  _meta_waits[k].push_back(std::move(w));
  return true;
}

void cluster_consumers::api_pause(const key& k, const core::inbound_msg& m, int hops) {
  constexpr std::string_view type = "consumer_pause_response";
  const ojson extra{{"paused", false}, {"pause_until", base::rfc3339_nano(0)}};
  std::optional<std::int64_t> until;
  if (auto e = parse_pause_request(m.payload, until)) return respond_error(m.reply, type, *e, extra);
  const auto* a = assigned(k);
  if (!a) return respond_error(m.reply, type, make_error(err::consumer_not_found), extra);
  std::string leader;
  if (!meta_leader(leader)) {
    if (leader.empty() || hops >= kMaxHops)
      return respond_error(m.reply, type, make_error(err::cluster_unavailable), extra);
    return forward(leader, "CONSUMER.PAUSE." + k.first + "." + k.second, m, hops);
  }
  auto cfg = parse_config(current_config(k, *a));
  if (!cfg) return respond_error(m.reply, type, make_error(err::consumer_not_found), extra);
  const std::int64_t now = _host.clk().wall_ns();
  if (until && *until <= now) until.reset();  // a time gone by resumes, as the standalone PAUSE
  cfg->pause_until = until;
  meta_wait w;
  w.reply = std::string(m.reply);
  w.deadline_ns = now + kAnswerWindowNs;
  w.pause = true;
  w.pause_until = until;
  if (!propose_update(k, to_json(*cfg, false).dump(), std::move(w)))
    respond_error(m.reply, type, make_error(err::cluster_unavailable), extra);
}

void cluster_consumers::propose_config_update(const key& k, consumer_config cfg, const consumer_config& old,
                                              const core::inbound_msg& m) {
  cfg.pause_until = old.pause_until;  // only the PAUSE API changes it
  meta_wait w;
  w.reply = std::string(m.reply);
  w.deadline_ns = _host.clk().wall_ns() + kAnswerWindowNs;
  if (!propose_update(k, to_json(cfg, false).dump(), std::move(w)))
    respond_error(m.reply, "consumer_create_response", make_error(err::cluster_unavailable));
}

void cluster_consumers::on_update_applied(const re::consumer_update& u) {
  const key k{u.stream, u.name};
  auto it = _meta_waits.find(k);
  if (it == _meta_waits.end()) return;
  auto& waits = it->second;
  // Entries apply in proposal order; one whose proposal was lost never comes.
  while (!waits.empty() && waits.front().config_json != u.config_json) waits.pop_front();
  if (waits.empty()) {
    _meta_waits.erase(it);
    return;
  }
  meta_wait w = std::move(waits.front());
  waits.pop_front();
  if (waits.empty()) _meta_waits.erase(it);
  if (w.pause) {
    const std::int64_t now = _host.clk().wall_ns();
    ojson j;
    j["type"] = "io.nats.jetstream.api.v1.consumer_pause_response";
    const bool paused = w.pause_until && *w.pause_until > now;
    j["paused"] = paused;
    j["pause_until"] = base::rfc3339_nano(w.pause_until.value_or(0));
    if (paused) j["pause_remaining"] = *w.pause_until - now;
    return respond(w.reply, j);
  }
  // An update: the consumer's leader answers with its info once it serves this config.
  const auto* a = assigned(k);
  if (!a || w.reply.empty()) return;
  const std::string payload = k.first + " " + k.second + "\n" + w.config_json;  // inbound_msg holds views
  core::inbound_msg n;
  n.reply = w.reply;
  n.payload = payload;
  for (const auto& peer : a->peers) forward(peer, "CCREATED", n, kMaxHops);
}

// ---- every replica: the new config

consumer_params cluster_consumers::params_for(const hosted& h) {
  consumer_params p = to_params(h.cfg, h.scfg, h.assignment.stream, h.assignment.name);
  p.has_interest = [this](const std::string& reply) { return _host.has_interest(reply); };
  p.new_pin_id = [] { return random_name(22); };
  p.new_fc_token = [] { return random_name(4); };
  p.sample_roll = [] { return int(random_name(1)[0]) % 100; };
  return p;
}

void cluster_consumers::update_hosted(const re::consumer_assign& a, std::int64_t now_ns) {
  auto it = _hosted.find({a.stream, a.name});
  if (it == _hosted.end()) return;
  hosted& h = *it->second;
  auto cfg = parse_config(a.config_json);
  if (!cfg) {
    PG_ERROR("replicated consumer {} > {}: its updated config does not parse", a.stream, a.name);
    return;
  }
  const bool rebind = cfg->deliver_subject != h.cfg.deliver_subject;
  h.assignment.config_json = a.config_json;
  h.cfg = std::move(*cfg);
  h.filters = h.cfg.match_filters();
  h.cnt_valid = false;
  if (rebind) {
    h.push_bound = false;
    h.next_interest_check = 0;
  }
  PG_INFO("Replicated consumer {} > {}: config updated", a.stream, a.name);
  actions out;
  h.replica->update(params_for(h), h.cfg.pause_until.value_or(0), now_ns, out);
  run(h, out, now_ns);
  after_event(h, now_ns);  // a new deliver subject's interest; updates waiting for this config
}

// ---- at the consumer's leader: UNPIN and RESET

void cluster_consumers::api_unpin(const key& k, const core::inbound_msg& m, int hops) {
  constexpr std::string_view type = "consumer_unpin_response";
  std::string group;
  if (auto e = parse_unpin_request(m.payload, group)) return respond_error(m.reply, type, *e);
  if (auto e = check_priority_group_name(group)) return respond_error(m.reply, type, *e);
  api_at_leader("UNPIN", k, m, hops);
}

void cluster_consumers::api_reset(const key& k, const core::inbound_msg& m, int hops) {
  std::optional<std::uint64_t> seq;
  if (auto e = parse_reset_request(m.payload, seq)) return respond_error(m.reply, "consumer_reset_response", *e);
  api_at_leader("RESET", k, m, hops);
}

void cluster_consumers::serve_unpin(hosted& h, const core::inbound_msg& m) {
  constexpr std::string_view type = "consumer_unpin_response";
  std::string group;
  if (auto e = parse_unpin_request(m.payload, group)) return respond_error(m.reply, type, *e);
  const auto& groups = h.cfg.priority_groups;
  if (std::find(groups.begin(), groups.end(), group) == groups.end())
    return respond_error(m.reply, type, make_error(err::priority_group_unknown));
  const std::int64_t now = _host.clk().wall_ns();
  actions out;
  (void)h.replica->unpin(group, now, out);
  run(h, out, now);
  respond(m.reply, ojson{{"type", "io.nats.jetstream.api.v1." + std::string(type)}});
}

void cluster_consumers::serve_reset(hosted& h, const core::inbound_msg& m) {
  constexpr std::string_view type = "consumer_reset_response";
  std::optional<std::uint64_t> seq;
  if (auto e = parse_reset_request(m.payload, seq)) return respond_error(m.reply, type, *e);
  const std::int64_t now = _host.clk().wall_ns();
  auto n = h.replica->numbers(now);
  if (!n || frozen(h, now)) return respond_error(m.reply, type, make_error(err::cluster_unavailable));
  std::uint64_t floor = 0;
  if (auto e = reset_floor(h.cfg, seq, n->ack_floor.stream_seq, h, floor)) return respond_error(m.reply, type, *e);
  const std::uint64_t token = h.next_token++;
  actions out;
  if (h.replica->reset(floor, token, now, out) != consumer_submit::done)
    return respond_error(m.reply, type, make_error(err::cluster_unavailable));
  h.reset_replies[token] = {std::string(m.reply), floor + 1};  // answered once applied
  run(h, out, now);
}

bool cluster_consumers::answer_reset(hosted& h, std::uint64_t token, std::int64_t now_ns) {
  auto it = h.reset_replies.find(token);
  if (it == h.reset_replies.end()) return false;
  ojson j = ojson::object();
  j["type"] = "io.nats.jetstream.api.v1.consumer_reset_response";
  const ojson info = info_json(h, now_ns);
  for (auto f = info.cbegin(); f != info.cend(); ++f) j[f.key()] = f.value();
  j["reset_seq"] = it->second.second;
  respond(it->second.first, j);
  h.reset_replies.erase(it);
  return true;
}

void cluster_consumers::poll_ops(std::int64_t now_ns) {
  if (_meta_waits.empty()) return;
  if (!_repl.meta().self_leader) {  // no longer the meta leader: those entries may never come
    _meta_waits.clear();
    return;
  }
  for (auto it = _meta_waits.begin(); it != _meta_waits.end();) {
    auto& waits = it->second;
    while (!waits.empty() && waits.front().deadline_ns <= now_ns) waits.pop_front();
    it = waits.empty() ? _meta_waits.erase(it) : std::next(it);
  }
}

// ---- the leader's advisories, as the standalone consumer's

void cluster_consumers::send_advisory(const hosted& h, const advisory& a) {
  const consumer_event e = consumer_advisory_event(a, _account, h.assignment.stream, h.assignment.name);
  if (!_host.has_interest(e.subject)) return;
  _host.publish(e.subject, "", "", event_json(e.type, e.body, _domain, _host.clk().wall_ns()));
}

}  // namespace js
