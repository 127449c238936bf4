// What clients ask of replicated streams beyond create/update/delete (cluster_streams.h):
// requests served by the stream's leader (INFO, PURGE, MSG.GET, MSG.DELETE,
// LEADER.STEPDOWN), StreamInfo, STREAM.LIST's entries gathered from the streams' leaders (as
// nats-server's meta leader gathers them), $JS.API.INFO's part, /jsz's view of the replicas.
#include <algorithm>
#include <charconv>
#include <optional>
#include <set>
#include <system_error>

#include "src/base/go_text.h"
#include "src/js/api_json.h"
#include "src/js/big_request.h"
#include "src/js/cluster_info.h"
#include "src/js/cluster_streams.h"
#include "src/js/jetstream_owners.h"
#include "src/js/cluster_streams_hosted.h"
#include "src/js/json_decode.h"
#include "src/js/json_util.h"
#include "src/js/stream.h"
#include "src/js/cluster_constants.h"

namespace js {

using cluster::kMaxHops;
using cluster::prefix_of;
using cluster::r1_key;
using cluster::r1_name_in;

namespace {

// nats-server's jsClusteredStreamListRequest waits this long for the leaders' answers.
constexpr std::int64_t kGatherTimeoutNs = 4'000'000'000;


std::optional<std::uint64_t> to_u64(std::string_view s) {
  std::uint64_t v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size()) return std::nullopt;
  return v;
}

}  // namespace

std::vector<std::pair<std::string, std::vector<std::string>>> cluster_streams::names(bool with_subjects) const {
  std::vector<std::pair<std::string, std::vector<std::string>>> out;
  for (const auto& [k, s] : _meta.streams()) {
    if (k.first != _account) continue;
    stream_config cfg;
    if (with_subjects) (void)parse_stream_config(s.assignment.config_json, cfg);
    out.emplace_back(k.second, std::move(cfg.subjects));
  }
  for (const auto& [key, home] : _meta.r1_streams()) {  // other servers' R1 streams
    const std::string_view name = r1_name_in(_account, key);
    if (!name.empty() && !r1_home(name).empty())
      out.emplace_back(std::string(name), with_subjects ? home.subjects : std::vector<std::string>{});
  }
  return out;
}

bool cluster_streams::is_replicated(std::string_view name) const {
  return _meta.find(_account, std::string(name)) != nullptr;
}

// ---- served by the stream's leader

std::string cluster_streams::leader_target(std::string_view name) {
  auto it = _hosted.find(name);
  std::string target;
  if (it != _hosted.end()) target = it->second->leader_name;
  if ((target.empty() || target == _self) && it == _hosted.end()) {
    // Not hosted here: one of its peers knows the leader.
    const auto* s = _meta.find(_account, std::string(name));
    if (s && !s->assignment.peers.empty()) target = s->assignment.peers.front();
    if (!s) target = r1_home(name);  // another server's R1 stream: that server answers
  }
  if (target == _self) target.clear();
  return target;
}

void cluster_streams::api_at_leader(std::string_view what, std::string_view name, const core::inbound_msg& m,
                                    int hops) {
  auto it = _hosted.find(name);
  if (it != _hosted.end() && it->second->log->leader && it->second->replica->ready())
    return serve_at_leader(*it->second, what, m);
  const std::string target = leader_target(name);
  const std::string type = what == "INFO"         ? "stream_info_response"
                           : what == "PURGE"      ? "stream_purge_response"
                           : what == "MSG.GET"    ? "stream_msg_get_response"
                           : what == "MSG.DELETE" ? "stream_msg_delete_response"
                           : what == "PEER.REMOVE" ? "stream_remove_peer_response"
                                                  : "stream_leader_stepdown_response";
  if (target.empty() || hops >= kMaxHops) return respond_error(m.reply, type, make_error(err::cluster_unavailable));
  forward(target, "STREAM." + std::string(what) + "." + std::string(name), m, hops);
}

void cluster_streams::serve_at_leader(hosted& h, std::string_view what, const core::inbound_msg& m) {
  const std::int64_t now = _host.clk().wall_ns();
  if (what == "INFO") {
    constexpr std::string_view type = "stream_info_response";
    const ojson paged_zero = ojson{{"total", 0}, {"offset", 0}, {"limit", 0}};
    jdec::json req;
    if (auto e = jdec::decode_request(m.payload, "JSApiStreamInfoRequest",
                                      {{"deleted_details", jdec::field_kind::boolean},
                                       {"subjects_filter", jdec::field_kind::string},
                                       {"offset", jdec::field_kind::int_}},
                                      req))
      return respond_error(m.reply, type, *e, paged_zero);
    stream_info_request r;
    std::int64_t offset = 0;
    if (!get_field(req, "deleted_details", r.deleted_details) || !get_field(req, "subjects_filter", r.subjects_filter) ||
        !get_field(req, "offset", offset))
      return respond_error(m.reply, type, make_error(err::invalid_json), paged_zero);
    r.offset = std::uint64_t(std::max<std::int64_t>(offset, 0));  // Go int: negative pages from the start
    return respond(m.reply, typed_response(type, stream_info(h, now, true, r)));
  }
  if (what == "MSG.DELETE") return serve_msg_delete(h, m);
  if (what == "PEER.REMOVE") return serve_peer_remove(h, m);
  if (what == "LEADER.STEPDOWN") {
    _repl.group_stepdown(h.assignment.group_id);
    return respond(m.reply, ojson{{"type", "io.nats.jetstream.api.v1.stream_leader_stepdown_response"},
                                  {"success", true}});
  }
  if (what == "MSG.GET") {
    constexpr std::string_view type = "stream_msg_get_response";
    const auto req = nlohmann::json::parse(m.payload, nullptr, false);
    if (!req.is_object()) return respond_error(m.reply, type, make_error(err::bad_request));
    base::result<storage::stored_msg> msg = base::errc::not_found;
    if (auto l = req.find("last_by_subj"); l != req.end() && l->is_string()) msg = h.store->load_last(l->get<std::string>());
    else if (auto s = req.find("seq"); s != req.end() && s->is_number_unsigned()) msg = h.store->load(s->get<std::uint64_t>());
    else return respond_error(m.reply, type, make_error(err::bad_request));
    if (!msg.ok()) return respond_error(m.reply, type, make_error(err::no_message_found));
    ojson body;
    body["subject"] = msg->subject;
    body["seq"] = msg->seq;
    if (!msg->headers.empty()) body["hdrs"] = base64_encode(msg->headers);
    if (!msg->payload.empty()) body["data"] = base64_encode(msg->payload);
    body["time"] = base::rfc3339_nano(msg->ts);
    return respond(m.reply, ojson{{"type", "io.nats.jetstream.api.v1." + std::string(type)}, {"message", body}});
  }
  // PURGE
  constexpr std::string_view type = "stream_purge_response";
  storage::purge_request pr;
  if (!m.payload.empty()) {
    const auto req = nlohmann::json::parse(m.payload, nullptr, false);
    if (!req.is_object()) return respond_error(m.reply, type, make_error(err::invalid_json));
    pr.filter = req.value("filter", "");
    pr.seq = req.value("seq", std::uint64_t(0));
    pr.keep = req.value("keep", std::uint64_t(0));
    if (pr.seq && pr.keep) return respond_error(m.reply, type, make_error(err::bad_request));
  }
  const std::uint64_t token = h.next_token++;
  std::vector<replica_reply> out;
  const auto st = h.replica->purge(pr, token, out);
  track_api_reply(h, st, token, m.reply, type, out);
}

// STREAM.MSG.DELETE: the request checked as the hub checks an R1 one (stream_api.cc), then a
// msg_delete entry through the stream's log, so every replica removes the message; answered
// once the leader has applied it (as nats-server's leader answers from applyStreamEntries).
void cluster_streams::serve_msg_delete(hosted& h, const core::inbound_msg& m) {
  constexpr std::string_view type = "stream_msg_delete_response";
  if (trim_space(m.payload).empty()) return respond_error(m.reply, type, make_error(err::bad_request));
  jdec::json req;
  if (auto e = jdec::decode_request(m.payload, "JSApiMsgDeleteRequest",
                                    {{"seq", jdec::field_kind::u64}, {"no_erase", jdec::field_kind::boolean}}, req))
    return respond_error(m.reply, type, *e);
  std::uint64_t seq = 0;
  bool no_erase = false;
  if (!get_field(req, "seq", seq) || !get_field(req, "no_erase", no_erase))
    return respond_error(m.reply, type, make_error(err::invalid_json));
  const std::uint64_t token = h.next_token++;
  std::vector<replica_reply> out;
  const auto st = h.replica->remove(seq, !no_erase, token, out);
  track_api_reply(h, st, token, m.reply, type, out);
}

// A PURGE's or MSG.DELETE's submit: its reply waits for the entry (or goes out now), or 10008.
void cluster_streams::track_api_reply(hosted& h, submit_status st, std::uint64_t token, std::string_view reply,
                                      std::string_view type, std::vector<replica_reply>& out) {
  if (st != submit_status::proposed && st != submit_status::answered)
    return respond_error(reply, type, make_error(err::cluster_unavailable));
  h.replies[token] = std::string(reply);
  h.api_type[token] = std::string(type);
  if (st == submit_status::answered) publish_replies(h, out);
}

// ---- StreamInfo

ojson cluster_streams::cluster_json_of(hosted& h, std::int64_t now_ns) {
  return cluster_json(_repl.progress(h.assignment.group_id), _repl.meta().cluster, now_ns);
}

ojson cluster_streams::stream_info(hosted& h, std::int64_t now_ns, bool paged, const stream_info_request& req) {
  // Its consumers as the meta log assigns them (each replicated consumer has its own group).
  const auto* s = _meta.find(_account, h.cfg.name);
  // subjects_filter: one page of the matching subjects' counts, as the hub pages them
  // (no match gives total, offset and limit 0; an offset past the end is the end).
  std::map<std::string, std::uint64_t> subjects;
  std::uint64_t total = 0, offset = 0, limit = 0;
  const std::string& filter = req.subjects_filter;
  if (!filter.empty()) {
    auto all = h.store->subject_counts(filter == ">" ? "" : filter);
    total = all.size();
    offset = std::min<std::uint64_t>(req.offset, total);
    limit = total ? kSubjectDetailsLimit : 0;
    for (auto it = std::next(all.begin(), std::ptrdiff_t(offset)); it != all.end() && subjects.size() < kSubjectDetailsLimit;
         ++it)
      subjects.emplace_hint(subjects.end(), *it);
  }
  ojson state = stream_state_json(h.store->state(req.deleted_details), req.deleted_details,
                                  filter.empty() ? nullptr : &subjects, s ? s->consumers.size() : 0);
  ojson j;
  if (paged) {  // STREAM.INFO's, as the hub's (a create's reply has none)
    j["total"] = total;
    j["offset"] = offset;
    j["limit"] = limit;
  }
  j["config"] = to_json(h.cfg, true);
  j["created"] = base::rfc3339_nano(h.assignment.created_ns);
  j["state"] = std::move(state);
  if (!_domain.empty()) j["domain"] = _domain;
  j["cluster"] = cluster_json_of(h, now_ns);
  add_links_info(h, j, now_ns);
  j["ts"] = base::rfc3339_nano(now_ns);
  return j;
}

std::vector<cluster_streams::monitor_entry> cluster_streams::monitor_streams(std::int64_t now_ns, bool details) {
  std::vector<monitor_entry> out;
  for (auto& [name, h] : _hosted) {
    monitor_entry e;
    e.name = name;
    e.created_ns = h->assignment.created_ns;
    e.memory = h->cfg.storage == storage_type::memory;
    e.replicas = h->assignment.peers.size();
    e.group_id = h->assignment.group_id;
    e.state = stream_state_json(h->store->state(false), false, nullptr, 0);
    e.bytes = e.state.value("bytes", std::uint64_t{0});
    e.messages = e.state.value("messages", std::uint64_t{0});
    if (details) {
      e.cluster = cluster_json_of(*h, now_ns);
      e.config = to_json(h->cfg, false);
    }
    out.push_back(std::move(e));
  }
  return out;
}

// ---- STREAM.LIST's entries from the leaders

void cluster_streams::stream_infos(const std::vector<std::string>& names, info_done done) {
  const std::int64_t now = _host.clk().wall_ns();
  auto g = std::make_unique<info_gather>();
  g->names = names;
  g->infos.resize(names.size());
  g->answered.resize(names.size(), false);
  g->deadline_ns = now + kGatherTimeoutNs;
  g->done = std::move(done);
  std::vector<std::pair<std::size_t, std::string>> asks;  // index, server to ask
  for (std::size_t i = 0; i < names.size(); ++i) {
    auto it = _hosted.find(names[i]);
    if (it != _hosted.end() && it->second->log->leader && it->second->replica->ready()) {
      g->infos[i] = stream_info(*it->second, now, false);
      g->answered[i] = true;
    } else if (std::string target = leader_target(names[i]); !target.empty()) {
      asks.emplace_back(i, std::move(target));
    } else {
      g->answered[i] = true;  // no leader known: missing
    }
  }
  g->left = asks.size();
  const std::uint64_t id = _next_gather++;
  _gathers.emplace(id, std::move(g));
  if (asks.empty()) return finish_gather(id);
  // Every ask goes to another server, so no answer arrives inside this loop.
  for (const auto& [i, target] : asks) {
    core::inbound_msg n;
    const std::string reply = prefix_of(_self) + "0.LISTED." + std::to_string(id) + "." + std::to_string(i);
    n.reply = reply;
    forward(target, "STREAM.INFO." + names[i], n, 0);
  }
}

void cluster_streams::on_listed(std::string_view rest, const core::inbound_msg& m) {
  const auto dot = rest.find('.');
  if (dot == std::string_view::npos) return;
  const auto id = to_u64(rest.substr(0, dot));
  const auto index = to_u64(rest.substr(dot + 1));
  if (!id || !index) return;
  auto it = _gathers.find(*id);
  if (it == _gathers.end()) return;  // finished (timed out) meanwhile
  info_gather& g = *it->second;
  if (*index >= g.names.size() || g.answered[*index]) return;
  g.answered[*index] = true;
  --g.left;
  ojson j = ojson::parse(m.payload, nullptr, false);
  if (j.is_object() && !j.contains("error") && j.contains("config")) {
    for (const char* k : {"type", "total", "offset", "limit"}) j.erase(k);
    g.infos[*index] = std::move(j);
  }
  if (g.left == 0) finish_gather(*id);
}

void cluster_streams::finish_gather(std::uint64_t id) {
  auto it = _gathers.find(id);
  if (it == _gathers.end()) return;
  std::unique_ptr<info_gather> g = std::move(it->second);
  _gathers.erase(it);
  std::map<std::string, ojson> infos;
  std::vector<std::string> missing;
  for (std::size_t i = 0; i < g->names.size(); ++i) {
    if (g->infos[i].is_object()) infos.emplace(g->names[i], std::move(g->infos[i]));
    else missing.push_back(g->names[i]);
  }
  g->done(infos, missing);
}

std::size_t cluster_streams::poll_queries(std::int64_t now_ns) {
  std::vector<std::uint64_t> due;
  for (const auto& [id, g] : _gathers)
    if (g->deadline_ns <= now_ns) due.push_back(id);
  for (auto id : due) finish_gather(id);  // what has not answered is missing
  return due.size() + sync_direct(now_ns);
}

// ---- the account's limits and usage

cluster_streams::limit_usage cluster_streams::limit_usage_of(std::string_view except) const {
  limit_usage u;
  for (const auto& [k, s] : _meta.streams()) {
    if (k.first != _account || k.second == except) continue;
    ++u.streams;
    stream_config cfg;
    if (parse_stream_config(s.assignment.config_json, cfg)) continue;
    u.reserved[storage_index(cfg.storage)] += reservation(cfg) * std::int64_t(s.assignment.peers.size());
  }
  for (const auto& [key, home] : _meta.r1_streams()) {
    const std::string_view name = r1_name_in(_account, key);
    if (!name.empty() && name != except && home.server != _self) ++u.streams;
  }
  return u;
}

void cluster_streams::usage(std::function<void(const account_usage&)> done) {
  account_usage u;
  std::vector<std::string> ask;  // streams without a replica here: their leaders tell
  for (const auto& [k, s] : _meta.streams()) {
    if (k.first != _account) continue;
    ++u.streams;
    u.consumers += s.consumers.size();
    auto it = _hosted.find(k.second);
    if (it == _hosted.end()) {
      ask.push_back(k.second);
      continue;
    }
    (it->second->cfg.storage == storage_type::memory ? u.memory : u.storage) += it->second->store->stored_bytes();
  }
  // Other servers' R1 streams: their servers tell their bytes and consumers.
  std::set<std::string> r1;
  for (const auto& [key, home] : _meta.r1_streams()) {
    const std::string name(r1_name_in(_account, key));
    if (!name.empty() && !r1_home(name).empty()) {
      ++u.streams;
      ask.push_back(name);
      r1.insert(name);
    }
  }
  if (ask.empty()) return done(u);
  stream_infos(ask, [u, r1 = std::move(r1), done = std::move(done)](std::map<std::string, ojson>& infos,
                                                                    std::vector<std::string>&) mutable {
    for (const auto& [name, info] : infos) {
      const ojson state = info.value("state", ojson::object());
      const bool memory = info.value("config", ojson::object()).value("storage", "") == "memory";
      (memory ? u.memory : u.storage) += state.value("bytes", std::uint64_t{0});
      if (r1.count(name)) u.consumers += state.value("consumer_count", std::uint64_t{0});
    }
    done(u);
  });
}

}  // namespace js
