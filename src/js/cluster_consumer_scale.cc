// cluster_consumers' part of a change of a replicated stream's num_replicas (issue 11): the
// scale makes a new stream group, and every consumer moves into a new group of its own that
// starts from the state its old group had (delivered, ack floor, pending acks, redelivery
// counts), carried in the meta entry of the scale (stream_assign::consumers). Here: the
// origin collects each consumer's state from its leader, which stops working meanwhile.
#include "src/base/log.h"
#include "src/js/cluster_consumers.h"
#include "src/js/consumer_replica.h"
#include "src/js/cluster_constants.h"

namespace js {

using cluster::kMaxHops;

namespace re = repl_entries;
using ojson = nlohmann::ordered_json;

namespace {

constexpr std::int64_t kAskAgainNs = 500'000'000;
constexpr std::int64_t kGiveUpAskingNs = 3'000'000'000;

}  // namespace

ojson consumer_seed_json(const re::consumer_seed& s) {
  ojson pending = ojson::array(), redelivered = ojson::array();
  for (const auto& p : s.pending_acks) pending.push_back({p.sseq, p.dseq, p.ts});
  for (const auto& [sseq, n] : s.redelivered) redelivered.push_back({sseq, n});
  return ojson{{"delivered", {s.delivered_consumer, s.delivered_stream}},
               {"ack_floor", {s.floor_consumer, s.floor_stream}},
               {"pending", std::move(pending)},
               {"redelivered", std::move(redelivered)}};
}

std::optional<re::consumer_seed> consumer_seed_from_json(const nlohmann::json& j) {
  if (!j.is_object()) return std::nullopt;
  auto pair = [&](const char* key, std::uint64_t& c, std::uint64_t& s) {
    auto it = j.find(key);
    if (it == j.end() || !it->is_array() || it->size() != 2) return false;
    c = (*it)[0].get<std::uint64_t>();
    s = (*it)[1].get<std::uint64_t>();
    return true;
  };
  re::consumer_seed out;
  if (!pair("delivered", out.delivered_consumer, out.delivered_stream) ||
      !pair("ack_floor", out.floor_consumer, out.floor_stream))
    return std::nullopt;
  for (const auto& p : j.value("pending", nlohmann::json::array()))
    if (p.is_array() && p.size() == 3)
      out.pending_acks.push_back({p[0].get<std::uint64_t>(), p[1].get<std::uint64_t>(), p[2].get<std::int64_t>()});
  for (const auto& r : j.value("redelivered", nlohmann::json::array()))
    if (r.is_array() && r.size() == 2) out.redelivered.emplace_back(r[0].get<std::uint64_t>(), r[1].get<std::uint64_t>());
  return out;
}

re::consumer_seed to_seed(const consumer_snapshot& s) {
  re::consumer_seed out;
  out.delivered_consumer = s.delivered.consumer_seq;
  out.delivered_stream = s.delivered.stream_seq;
  out.floor_consumer = s.ack_floor.consumer_seq;
  out.floor_stream = s.ack_floor.stream_seq;
  for (const auto& [sseq, e] : s.pending) out.pending_acks.push_back({sseq, e.consumer_seq, e.delivered_at});
  out.redelivered = s.redelivered;
  return out;
}

re::consumer_seed to_seed(const storage::consumer_state& s) {
  re::consumer_seed out;
  out.delivered_consumer = s.delivered.consumer;
  out.delivered_stream = s.delivered.stream;
  out.floor_consumer = s.ack_floor.consumer;
  out.floor_stream = s.ack_floor.stream;
  for (const auto& [sseq, p] : s.pending) out.pending_acks.push_back({sseq, p.consumer_seq, p.ts});
  out.redelivered.assign(s.redelivered.begin(), s.redelivered.end());
  return out;
}


void cluster_consumers::begin_scale(const std::string& stream, std::int64_t now_ns) {
  _scales[stream] = {{}, now_ns + kAskAgainNs, now_ns + kGiveUpAskingNs};
  if (const auto* s = _meta.find(_account, stream))
    for (const auto& [name, a] : s->consumers) ask_state(stream, name);
}

// Asks the consumer's leader (as this server knows it; else its first peer, which forwards).
void cluster_consumers::ask_state(const std::string& stream, const std::string& name) {
  const key k{stream, name};
  const auto* a = assigned(k);
  if (!a) return;
  std::string target;
  if (auto it = _hosted.find(k); it != _hosted.end()) target = leader_of(*it->second);
  if (target.empty() && !a->peers.empty()) target = a->peers.front();
  if (target.empty()) return;
  const std::string payload = stream + " " + name;
  _host.publish("$PG.JSC." + target + ".1.CSTATE", "$PG.JSC." + _self + ".1.CSTATED", "", payload);
}

std::optional<ojson> cluster_consumers::scale_states(const std::string& stream, std::int64_t now_ns) {
  auto sc = _scales.find(stream);
  const auto* s = _meta.find(_account, stream);
  if (sc == _scales.end() || !s) return std::nullopt;
  ojson out = ojson::array();
  bool complete = true;
  for (const auto& [name, a] : s->consumers) {
    auto got = sc->second.got.find(name);
    if (got == sc->second.got.end() && now_ns >= sc->second.give_up_ns) {
      // Its leader does not answer (its servers are down): this server's replica's state,
      // else it starts afresh in its new group (a known gap: src/REPLICATION.md).
      auto local = local_state({stream, name});
      PG_WARN("Replicated consumer {} > {}: no answer from its leader, scaled with {}", stream, name,
              local ? "this server's replica's state" : "no state");
      got = sc->second.got.emplace(name, local ? ojson{{"state", std::move(*local)}} : ojson::object()).first;
    }
    if (got == sc->second.got.end()) {
      complete = false;
      if (now_ns >= sc->second.next_ask_ns) ask_state(stream, name);
      continue;
    }
    ojson item = got->second;
    item["name"] = name;
    item["config"] = a.config_json;
    item["created"] = a.created_ns;
    item["replicas"] = a.peers.size();
    out.push_back(std::move(item));
  }
  if (!complete) {
    if (now_ns >= sc->second.next_ask_ns) sc->second.next_ask_ns = now_ns + kAskAgainNs;
    return std::nullopt;
  }
  _scales.erase(sc);
  return out;
}

// At the consumer's leader: stop, and answer once the acks it took are applied.
void cluster_consumers::on_state_request(const core::inbound_msg& m, int hops) {
  const std::string_view p = m.payload;
  const auto sp = p.find(' ');
  if (sp == std::string_view::npos || m.reply.empty()) return;
  const key k{std::string(p.substr(0, sp)), std::string(p.substr(sp + 1))};
  auto it = _hosted.find(k);
  if (it == _hosted.end()) return;
  hosted& h = *it->second;
  const std::int64_t now = _host.clk().wall_ns();
  if (!serving(h)) {
    const std::string& leader = leader_of(h);
    if (leader.empty() || leader == _self || hops >= kMaxHops) return;  // asked again later
    return forward(leader, "CSTATE", m, hops);
  }
  freeze_for_state(h, std::string(m.reply), now);
}

void cluster_consumers::on_state_reply(const core::inbound_msg& m) {
  const auto j = nlohmann::json::parse(m.payload, nullptr, false);
  if (!j.is_object()) return;
  auto sc = _scales.find(j.value("stream", ""));
  if (sc == _scales.end()) return;
  auto st = consumer_seed_from_json(j.value("state", nlohmann::json()));
  if (!st) return;
  sc->second.got[j.value("name", "")] = ojson{{"state", consumer_seed_json(*st)}};
}

}  // namespace js
