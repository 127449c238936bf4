// The publish path of a replicated stream on its leader (cluster_streams.h): publishes go
// to the replica (or wait in its publish_backlog while the in-flight window is full), PubAcks
// and the API replies of entries it proposed (purges, message deletes) leave as the entries
// are applied.
#include <nlohmann/json.hpp>

#include "src/js/cluster_streams.h"
#include "src/js/cluster_streams_hosted.h"
#include "src/js/fast_batch.h"

namespace js {

void cluster_streams::on_publish(hosted& h, const core::inbound_msg& m) {
  waiting_publish p{std::string(m.subject), std::string(m.headers), std::string(m.payload), std::string(m.reply)};
  switch (h.backlog.offer(h.replica->pending(), h.replica->pending_bytes(), p.bytes())) {
    case publish_backlog::verdict::submit:
      if (!submit_publish(h, p)) h.backlog.push_back(std::move(p));
      return;
    case publish_backlog::verdict::wait:
      h.backlog.push_back(std::move(p));
      return;
    case publish_backlog::verdict::refuse:
      h.backlog.count_refused();
      return refuse_publish(h, p.reply);
  }
}

bool cluster_streams::submit_publish(hosted& h, waiting_publish& p) {
  if (!p.fast_batch.empty() || is_fast_batch_reply(p.reply)) return submit_fast(h, p);
  const std::uint64_t token = h.next_token++;
  std::vector<replica_reply> out;
  const auto st = h.replica->publish(_host.clk().wall_ns(), p.subject, p.headers, p.payload, token, out);
  if (st == submit_status::busy) return false;
  if (!p.reply.empty() && (st == submit_status::proposed || st == submit_status::answered))
    h.replies[token] = std::move(p.reply);
  publish_replies(h, out);
  return true;
}

std::size_t cluster_streams::drain_backlog(hosted& h) {
  std::size_t n = 0;
  if (!h.log->leader || !h.replica->ready()) {
    // Not proposed, so safe to retry anywhere: answered rather than left to time out.
    for (auto& p : h.backlog.take_all()) {
      refuse_publish(h, p.reply);
      ++n;
    }
    return n;
  }
  while (auto p = h.backlog.next(h.replica->pending(), h.replica->pending_bytes())) {
    if (!submit_publish(h, *p)) {
      h.backlog.push_front(std::move(*p));
      break;
    }
    ++n;
  }
  return n;
}

void cluster_streams::refuse_publish(hosted& h, std::string_view reply) {
  publish_error(h, reply, make_error(err::cluster_unavailable));
}

void cluster_streams::publish_error(hosted& h, std::string_view reply, const api_error& e) {
  if (reply.empty()) return;
  ojson j;
  j["error"] = to_json(e);
  j["stream"] = h.cfg.name;
  if (!_domain.empty()) j["domain"] = _domain;
  j["seq"] = 0;
  respond(reply, j);
}

void cluster_streams::publish_replies(hosted& h, std::vector<replica_reply>& out) {
  for (auto& r : out) {
    auto it = h.replies.find(r.token);
    if (it == h.replies.end()) continue;
    const std::string reply = std::move(it->second);
    h.replies.erase(it);
    auto t = h.api_type.find(r.token);
    if (t != h.api_type.end()) {  // an API request (purge, message delete)
      const std::string type = t->second;
      h.api_type.erase(t);
      if (r.error) {
        respond_error(reply, type, *r.error);
      } else if (r.what == replica_reply::kind::purged) {
        respond(reply, ojson{{"type", "io.nats.jetstream.api.v1." + type}, {"success", true}, {"purged", r.seq}});
      } else {
        respond(reply, ojson{{"type", "io.nats.jetstream.api.v1." + type}, {"success", true}});
      }
      continue;
    }
    if (r.what == replica_reply::kind::staged) {  // an atomic batch's message: a zero-byte ack
      _host.publish(reply, "", "", "");
      continue;
    }
    ojson j;
    if (r.error) {
      j["error"] = to_json(*r.error);
      j["stream"] = h.cfg.name;
      if (!_domain.empty()) j["domain"] = _domain;
      j["seq"] = 0;
      respond(reply, j);
      continue;
    }
    std::string body = "{\"stream\":" + nlohmann::json(h.cfg.name).dump() + ",";
    if (!_domain.empty()) body += "\"domain\":" + nlohmann::json(_domain).dump() + ",";
    body += "\"seq\":" + std::to_string(r.seq);
    if (r.duplicate) body += ",\"duplicate\": true";
    if (!r.batch.empty()) body += ",\"batch\":" + nlohmann::json(r.batch).dump() + ",\"count\":" + std::to_string(r.count);
    if (!r.val.empty()) body += ",\"val\":\"" + r.val + "\"";  // decimal digits: no escaping
    body += "}";
    _host.publish(reply, "", "", body);
  }
}

}  // namespace js
