// Direct gets of replicated streams ($JS.API.DIRECT.GET.<stream>[.<subject>]): the stream's
// leader (once its leader_start is applied) subscribes the stream's two direct-get subjects,
// announced to the routes, and answers each request from its store with the standalone
// stream's code (direct_get.cc: the same headers, statuses, batches and multi-last), whichever
// server the client is on. nats-server lets every current replica answer through queue group
// `_sys_`; the core has no announced queue subscription for services yet, so here only the
// leader answers (never two answers to one request). A stream without allow_direct has no
// responder: the hub answers it as an R1 stream without direct get (503 to a client that
// asked for no-responders statuses).
#include "src/js/cluster_streams.h"
#include "src/js/cluster_streams_hosted.h"
#include "src/js/direct_get.h"
#include "src/js/cluster_constants.h"

namespace js {


namespace {


}  // namespace

bool cluster_streams::direct_allowed(std::string_view name) {
  const auto* s = _meta.find(_account, std::string(name));
  if (!s) return false;
  auto it = _direct_flags.find(name);
  if (it == _direct_flags.end()) it = _direct_flags.emplace(std::string(name), direct_flag{}).first;
  if (it->second.config_json != s->assignment.config_json) {  // new, or updated since
    stream_config cfg;
    it->second.allow = !parse_stream_config(s->assignment.config_json, cfg) && cfg.allow_direct;
    it->second.config_json = s->assignment.config_json;
  }
  return it->second.allow;
}

void cluster_streams::on_direct_get(const std::string& name, const core::inbound_msg& m) {
  auto it = _hosted.find(name);
  if (it == _hosted.end() || m.reply.empty()) return;  // dropped meanwhile (unsubscribed at the next poll)
  serve_direct_get(name, *it->second->store, m, [&](std::string_view headers, std::string_view payload) {
    _host.publish(m.reply, "", headers, payload);
  });
}

std::size_t cluster_streams::sync_direct(std::int64_t now_ns) {
  (void)now_ns;
  std::size_t work = 0;
  auto unsubscribe = [&](direct_responder& d) {
    for (auto id : d.ids) _host.unsubscribe(id);
    d.ids.clear();
  };
  // Responders of replicas that went (or were re-created in another group), or whose stream
  // no longer allows direct gets.
  for (auto it = _direct.begin(); it != _direct.end();) {
    auto h = _hosted.find(it->first);
    const bool keep = h != _hosted.end() && h->second->assignment.group_id == it->second->group_id &&
                      h->second->cfg.allow_direct && !h->second->replica->failed();
    if (keep) {
      ++it;
      continue;
    }
    unsubscribe(*it->second);
    it = _direct.erase(it);
    ++work;
  }
  for (auto& [name, h] : _hosted) {
    if (!h->cfg.allow_direct || h->replica->failed()) continue;
    auto it = _direct.find(name);
    if (it == _direct.end()) {
      auto d = std::make_unique<direct_responder>();
      d->owner = this;
      d->name = name;
      d->group_id = h->assignment.group_id;
      it = _direct.emplace(name, std::move(d)).first;
    }
    direct_responder& d = *it->second;
    const bool serving = h->log->leader && h->replica->ready() && h->replica->seeded();
    if (serving == !d.ids.empty()) continue;
    ++work;
    if (!serving) {
      unsubscribe(d);
      continue;
    }
    std::vector<std::string> prefixes{"$JS.API"};
    if (!_domain.empty()) prefixes.push_back("$JS." + _domain + ".API");
    for (const auto& prefix : prefixes) {
      const std::string base = prefix + ".DIRECT.GET." + name;
      for (const auto& subject : {base, base + ".>"})
        if (auto id = _host.subscribe_cluster(subject, &d); id != 0) d.ids.push_back(id);
    }
  }
  if (_direct_flags.size() > _meta.streams().size())  // streams removed since they were asked for
    std::erase_if(_direct_flags, [&](const auto& kv) { return !_meta.find(_account, kv.first); });
  return work;
}

}  // namespace js
