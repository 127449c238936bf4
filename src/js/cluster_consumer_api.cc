// $JS.API.CONSUMER.* for consumers of replicated streams (cluster_consumers.h): creates and
// deletes at the meta leader, INFO / MSG.NEXT / LEADER.STEPDOWN at the consumer's leader,
// NAMES and LIST from the meta log.
#include <algorithm>
#include <cctype>

#include "src/js/api_json.h"
#include "src/js/cluster_consumer_hosted.h"
#include "src/js/consumer_config.h"
#include "src/js/consumer_replica.h"
#include "src/js/group_host.h"
#include "src/js/json_util.h"
#include "src/js/cluster_constants.h"

namespace js {

using cluster::kMetaGroup;
using cluster::kAnswerWindowNs;
using cluster::kMaxHops;

namespace re = repl_entries;
using ojson = nlohmann::ordered_json;

namespace {

constexpr std::size_t kNamesLimit = 1024;
constexpr std::size_t kListLimit = 256;

std::vector<std::string_view> split(std::string_view s) {
  std::vector<std::string_view> out;
  while (true) {
    auto p = s.find('.');
    out.push_back(s.substr(0, p));
    if (p == std::string_view::npos) break;
    s.remove_prefix(p + 1);
  }
  return out;
}

// A consumer's group id: unique per incarnation (a re-created consumer gets a new group).
std::uint64_t group_id_for(const std::string& stream, const std::string& name, std::int64_t created_ns) {
  std::uint64_t h = 14695981039346656037ull;
  for (unsigned char c : "C/" + stream + "/" + name + "/" + std::to_string(created_ns)) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h < 2 ? h + 2 : h;
}

std::string_view type_of(std::string_view what) {
  if (what == "INFO") return "consumer_info_response";
  if (what == "DELETE") return "consumer_delete_response";
  if (what == "LEADER.STEPDOWN") return "consumer_leader_stepdown_response";
  if (what == "UNPIN") return "consumer_unpin_response";
  if (what == "RESET") return "consumer_reset_response";
  return "consumer_create_response";
}

}  // namespace

bool cluster_consumers::meta_leader(std::string& leader) const {
  const auto m = _repl.meta();
  leader = m.leader;
  return m.running && m.self_leader;
}

void cluster_consumers::forward(const std::string& server, std::string_view what, const core::inbound_msg& m,
                                int hops) {
  const std::string subject = "$PG.JSC." + server + "." + std::to_string(hops + 1) + "." + std::string(what);
  _host.publish(subject, m.reply, m.headers, m.payload);
}

bool cluster_consumers::on_api(std::string_view rest, const core::inbound_msg& m, int hops) {
  if (!rest.starts_with("CONSUMER.")) return false;
  const auto toks = split(rest.substr(9));
  if (toks.size() < 2) return false;
  const std::string_view op = toks[0];
  const bool two_word = (op == "MSG" && toks[1] == "NEXT") || (op == "LEADER" && toks[1] == "STEPDOWN") ||
                        (op == "DURABLE" && toks[1] == "CREATE");
  if (two_word && toks.size() < 3) return false;
  const std::string stream(two_word ? toks[2] : toks[1]);
  if (!_meta.find(_account, stream)) return false;  // not a replicated stream: the hub's
  if (op == "CREATE") {
    std::string filter;
    for (std::size_t i = 3; i < toks.size(); ++i) filter += (i > 3 ? "." : "") + std::string(toks[i]);
    api_create(stream, toks.size() > 2 ? toks[2] : "", filter, false, toks.size() > 2, m, hops);
    return true;
  }
  if (op == "DURABLE" && toks[1] == "CREATE") {
    if (toks.size() != 4) {
      respond_error(m.reply, "consumer_create_response", make_error(err::durable_name_not_in_subject));
      return true;
    }
    api_create(stream, toks[3], "", true, true, m, hops);
    return true;
  }
  if ((op == "NAMES" || op == "LIST") && toks.size() == 2) {
    api_names(stream, m, op == "LIST");
    return true;
  }
  if (op == "MSG" && toks[1] == "NEXT" && toks.size() == 4) {
    api_at_leader("MSG.NEXT", {stream, std::string(toks[3])}, m, hops);
    return true;
  }
  if (op == "LEADER" && toks[1] == "STEPDOWN" && toks.size() == 4) {
    api_at_leader("LEADER.STEPDOWN", {stream, std::string(toks[3])}, m, hops);
    return true;
  }
  if (toks.size() != 3) return false;
  const key k{stream, std::string(toks[2])};
  if (op == "INFO") {
    api_at_leader("INFO", k, m, hops);
  } else if (op == "DELETE") {
    api_delete(k, m, hops);
  } else if (op == "PAUSE") {
    api_pause(k, m, hops);
  } else if (op == "UNPIN") {
    api_unpin(k, m, hops);
  } else if (op == "RESET") {
    api_reset(k, m, hops);
  } else {
    respond_error(m.reply, "system_response", make_error(err::bad_request));
  }
  return true;
}

void cluster_consumers::api_create(std::string_view stream, std::string_view name, std::string_view filter,
                                   bool durable_api, bool subject_has_name, const core::inbound_msg& m, int hops) {
  constexpr std::string_view type = "consumer_create_response";
  std::string leader;
  if (!meta_leader(leader)) {
    if (leader.empty() || hops >= kMaxHops) return respond_error(m.reply, type, make_error(err::cluster_unavailable));
    std::string what = "CONSUMER." + std::string(durable_api ? "DURABLE.CREATE." : "CREATE.") + std::string(stream);
    if (subject_has_name) what += "." + std::string(name);
    if (!filter.empty()) what += "." + std::string(filter);
    return forward(leader, what, m, hops);
  }
  create_request req;
  if (auto e = parse_create_request(m.payload, req)) return respond_error(m.reply, type, *e);
  if (auto e = check_create_subject(req, stream, name, filter, durable_api, subject_has_name))
    return respond_error(m.reply, type, *e);
  consumer_config& cfg = req.config;
  const auto* s = _meta.find(_account, std::string(stream));
  if (!s) return respond_error(m.reply, type, make_error(err::stream_not_found));
  stream_config scfg;
  if (parse_stream_config(s->assignment.config_json, scfg) || normalise(scfg))
    return respond_error(m.reply, type, make_error(err::stream_not_found));
  if (auto e = normalise(cfg, scfg, req.pedantic, _acc_max_ack_pending)) return respond_error(m.reply, type, *e);
  if (auto e = validate(cfg, scfg, _acc_max_ack_pending)) return respond_error(m.reply, type, *e);
  const std::int64_t stream_r = std::int64_t(s->assignment.peers.size());
  if (scfg.retention != retention_policy::limits && cfg.num_replicas != 0 && cfg.num_replicas != stream_r)
    return respond_error(m.reply, type, make_error(err::consumer_replicas_match_stream));
  if (cfg.name.empty()) cfg.name = random_name(8);
  const key k{std::string(stream), cfg.name};
  if (scfg.retention == retention_policy::workqueue) {
    std::vector<consumer_config> configs;  // the stream's other consumers, with updates in flight
    for (const auto& [name, a] : s->consumers) {
      if (name == cfg.name) continue;
      auto j = ojson::parse(current_config({k.first, name}, a), nullptr, false);
      if (auto c = j.is_object() ? consumer_config_from_json(j) : std::nullopt) configs.push_back(std::move(*c));
    }
    std::vector<const consumer_config*> others;
    for (const auto& c : configs) others.push_back(&c);
    if (auto e = check_workqueue(scfg, cfg, others)) return respond_error(m.reply, type, *e);
  }

  if (auto it = s->consumers.find(cfg.name); it != s->consumers.end()) {
    auto j = ojson::parse(current_config(k, it->second), nullptr, false);  // with updates in flight
    auto old = j.is_object() ? consumer_config_from_json(j) : std::nullopt;
    const bool same = old && same_config(*old, cfg);
    if (!same) {
      if (req.action == create_action::create) return respond_error(m.reply, type, make_error(err::consumer_exists));
      if (old && old->durable_name != cfg.durable_name && !cfg.durable_name.empty())
        return respond_error(m.reply, type, make_error(err::consumer_name_in_use));
      if (!old) return respond_error(m.reply, type, make_error(err::consumer_create, "its config does not parse"));
      // A subscriber bound to the deliver subject anywhere in the cluster (route interest too).
      const bool bound = old->push() && _host.has_interest(old->deliver_subject);
      if (auto e = check_update(*old, cfg, bound)) return respond_error(m.reply, type, *e);
      return propose_config_update(k, std::move(cfg), *old, m);
    }
    // The same config again: its leader answers with its info, as for a fresh create, once it
    // serves the latest config (an update may still be on its way there).
    const std::string payload = k.first + " " + k.second + "\n" + current_config(k, it->second);  // inbound_msg holds views
    core::inbound_msg n = m;
    n.payload = payload;
    for (const auto& p : it->second.peers) forward(p, "CCREATED", n, kMaxHops);
    return;
  }
  if (req.action == create_action::update) return respond_error(m.reply, type, make_error(err::consumer_does_not_exist));
  std::int64_t max_consumers = scfg.max_consumers;  // the stream's, capped by the account's
  if (max_consumers <= 0 || (_acc_max_consumers > 0 && _acc_max_consumers < max_consumers))
    max_consumers = _acc_max_consumers;
  if (max_consumers > 0 && s->consumers.size() >= std::size_t(max_consumers))
    return respond_error(m.reply, type, make_error(err::max_consumers));
  if (_creating.count(k)) return respond_error(m.reply, type, make_error(err::cluster_unavailable));
  // The consumer's peers: the first num_replicas of its stream's (each holds the stream).
  const std::size_t r = cfg.num_replicas > 0 ? std::size_t(cfg.num_replicas) : s->assignment.peers.size();
  re::consumer_assign a;
  a.account = _account;
  a.stream = k.first;
  a.name = k.second;
  a.config_json = to_json(cfg, false).dump();
  a.peers.assign(s->assignment.peers.begin(), s->assignment.peers.begin() + std::min(r, s->assignment.peers.size()));
  a.created_ns = _host.clk().wall_ns();
  a.group_id = group_id_for(cluster::group_key(_account, a.stream), a.name, a.created_ns);
  const auto pr = _repl.propose(kMetaGroup, 0, re::encode(re::meta_op{a}));
  if (pr.st != core::group_propose_result::status::ok)
    return respond_error(m.reply, type, make_error(err::cluster_unavailable));
  _creating[k] = {std::string(m.reply), a.created_ns + kAnswerWindowNs};
}

void cluster_consumers::api_delete(const key& k, const core::inbound_msg& m, int hops) {
  constexpr std::string_view type = "consumer_delete_response";
  std::string leader;
  if (!meta_leader(leader)) {
    if (leader.empty() || hops >= kMaxHops) return respond_error(m.reply, type, make_error(err::cluster_unavailable));
    return forward(leader, "CONSUMER.DELETE." + k.first + "." + k.second, m, hops);
  }
  if (!assigned(k)) return respond_error(m.reply, type, make_error(err::consumer_not_found));
  const auto r = _repl.propose(kMetaGroup, 0, re::encode(re::meta_op{re::consumer_remove{_account, k.first, k.second}}));
  if (r.st != core::group_propose_result::status::ok)
    return respond_error(m.reply, type, make_error(err::cluster_unavailable));
  if (!m.reply.empty()) _deleting[k] = {std::string(m.reply), _host.clk().wall_ns() + kAnswerWindowNs};
}

void cluster_consumers::api_names(const std::string& stream, const core::inbound_msg& m, bool list) {
  const std::string_view type = list ? "consumer_list_response" : "consumer_names_response";
  std::int64_t offset = 0;
  if (!trim_space(m.payload).empty()) {
    const auto req = nlohmann::json::parse(m.payload, nullptr, false);
    if (!req.is_object()) return respond_error(m.reply, type, make_error(err::invalid_json));
    if (auto it = req.find("offset"); it != req.end() && it->is_number_integer()) offset = it->get<std::int64_t>();
  }
  offset = std::max<std::int64_t>(offset, 0);
  const auto* s = _meta.find(_account, stream);
  const std::size_t limit = list ? kListLimit : kNamesLimit;
  const std::int64_t now = _host.clk().wall_ns();
  ojson page = ojson::array();
  std::size_t i = 0;
  for (const auto& [name, a] : s->consumers) {
    if (i++ < std::size_t(offset) || page.size() >= limit) continue;
    if (!list) {
      page.push_back(name);
      continue;
    }
    if (auto h = _hosted.find({stream, name}); h != _hosted.end()) {
      page.push_back(info_json(*h->second, now));
      continue;
    }
    // No replica here: what the meta log knows (its config and group).
    auto j = ojson::parse(a.config_json, nullptr, false);
    auto cfg = j.is_object() ? consumer_config_from_json(j) : std::nullopt;
    ojson c;
    c["stream_name"] = stream;
    c["name"] = name;
    c["created"] = base::rfc3339_nano(a.created_ns);
    if (cfg) c["config"] = to_json(*cfg, true);
    c["cluster"] = ojson{{"name", _repl.meta().cluster}};
    c["ts"] = base::rfc3339_nano(now);
    page.push_back(std::move(c));
  }
  ojson j;
  j["type"] = "io.nats.jetstream.api.v1." + std::string(type);
  j["total"] = s->consumers.size();
  j["offset"] = offset;
  j["limit"] = limit;
  j["consumers"] = page;
  respond(m.reply, j);
}

void cluster_consumers::api_at_leader(std::string_view what, const key& k, const core::inbound_msg& m, int hops) {
  const auto* a = assigned(k);
  if (!a) {
    if (what == "MSG.NEXT") {
      // As nats-server 2.11: no consumer subscribed that subject.
      if (!m.reply.empty()) _host.publish(m.reply, "", "NATS/1.0 503\r\n\r\n", "");
      return;
    }
    return respond_error(m.reply, type_of(what), make_error(err::consumer_not_found));
  }
  auto it = _hosted.find(k);
  if (it != _hosted.end() && serving(*it->second))
    return serve_at_leader(*it->second, what, m);
  std::string target;
  if (it != _hosted.end()) target = leader_of(*it->second);
  if ((target.empty() || target == _self) && it == _hosted.end() && !a->peers.empty()) target = a->peers.front();
  if (target.empty() || target == _self || hops >= kMaxHops) {
    // During an election a fetch times out and the client asks again.
    if (what == "MSG.NEXT") return;
    return respond_error(m.reply, type_of(what), make_error(err::cluster_unavailable));
  }
  forward(target, "CONSUMER." + std::string(what) + "." + k.first + "." + k.second, m, hops);
}

// "stream name", or after an update "stream name\n<config_json>": answered by the leader
// once it has applied that config.
void cluster_consumers::on_created_notice(const core::inbound_msg& m) {
  const std::string_view p = m.payload;
  const auto nl = p.find('\n');
  const std::string_view head = p.substr(0, nl);
  const std::string want = nl == std::string_view::npos ? std::string() : std::string(p.substr(nl + 1));
  const auto sp = head.find(' ');
  if (sp == std::string_view::npos) return;
  const key k{std::string(head.substr(0, sp)), std::string(head.substr(sp + 1))};
  const std::int64_t now = _host.clk().wall_ns();
  auto it = _hosted.find(k);
  if (it != _hosted.end() && serving(*it->second)) {
    if (want.empty() || want == it->second->assignment.config_json)
      return respond(m.reply, typed_response("consumer_create_response", info_json(*it->second, now)));
  } else if (it != _hosted.end() && !leader_of(*it->second).empty() && leader_of(*it->second) != _self) {
    return;  // its leader answers
  }
  _answer_when_leading[k].push_back({std::string(m.reply), now + kAnswerWindowNs, want});
}

}  // namespace js
