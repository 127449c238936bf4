#include "bench/e2e/client.h"

#include <nlohmann/json.hpp>

#include <thread>

namespace peregrine::bench {
namespace {

std::string g_placement;  // last_placement_json(); one run per process

}  // namespace

std::vector<std::string> split_list(const std::string& text) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= text.size()) {
    const size_t comma = std::min(text.find(',', start), text.size());
    if (comma > start) out.push_back(text.substr(start, comma - start));
    start = comma + 1;
  }
  return out;
}

std::string err_text(const std::string& what, natsStatus s) {
  std::string out = what + ": " + natsStatus_GetText(s);
  const char* last = nats_GetLastError(nullptr);
  if (last != nullptr && *last != '\0') out += std::string(" (") + last + ")";
  return out;
}

natsStatus set_urls(natsOptions* opts, const std::string& urls) {
  const std::vector<std::string> list = split_list(urls);
  if (list.size() <= 1) return natsOptions_SetURL(opts, urls.c_str());
  std::vector<const char*> ptrs;
  for (const std::string& u : list) ptrs.push_back(u.c_str());
  return natsOptions_SetServers(opts, ptrs.data(), static_cast<int>(ptrs.size()));
}

nc_ptr open_conn(const config& cfg, bool send_asap, std::string& err) {
  return open_conn_to(cfg, cfg.url, send_asap, err);
}

nc_ptr open_conn_to(const config& cfg, const std::string& url, bool send_asap, std::string& err) {
  natsOptions* opts = nullptr;
  natsStatus s = natsOptions_Create(&opts);
  if (s == NATS_OK) s = set_urls(opts, url);
  if (s == NATS_OK) s = natsOptions_SetAllowReconnect(opts, false);
  if (s == NATS_OK) s = natsOptions_SetSendAsap(opts, send_asap);
  if (s == NATS_OK) s = natsOptions_SetTimeout(opts, 5000);
  if (s == NATS_OK && !cfg.tls_ca.empty()) s = natsOptions_SetSecure(opts, true);
  if (s == NATS_OK && !cfg.tls_ca.empty()) s = natsOptions_LoadCATrustedCertificates(opts, cfg.tls_ca.c_str());
  natsConnection* nc = nullptr;
  if (s == NATS_OK) s = natsConnection_Connect(&nc, opts);
  natsOptions_Destroy(opts);
  if (s != NATS_OK) {
    err = err_text("connect " + url, s);
    return nullptr;
  }
  return nc_ptr(nc);
}

sync_sub open_sync_sub(const config& cfg, const std::string& subject, std::string& err) {
  sync_sub out;
  out.nc = open_conn(cfg, true, err);
  if (!out.nc) return out;
  natsSubscription* raw = nullptr;
  const natsStatus s = natsConnection_SubscribeSync(&raw, out.nc.get(), subject.c_str());
  if (s != NATS_OK) {
    err = err_text("subscribe", s);
    return out;
  }
  out.sub.reset(raw);
  natsConnection_Flush(out.nc.get());
  return out;
}

js_session::~js_session() {
  if (js && !stream.empty()) {
    jsErrCode jerr = static_cast<jsErrCode>(0);
    js_DeleteStream(js.get(), stream.c_str(), nullptr, &jerr);
  }
}

std::string open_stream(const config& cfg, bool file, int64_t window, js_session& s,
                        const std::string& subject, const std::string& tag) {
  std::string err;
  s.nc = open_conn(cfg, window == 1, err);
  if (!s.nc) return err;
  jsOptions jo;
  jsOptions_Init(&jo);
  jo.PublishAsync.MaxPending = window;
  jsCtx* js = nullptr;
  if (natsConnection_JetStream(&js, s.nc.get(), &jo) != NATS_OK) return "no JetStream context";
  s.js.reset(js);
  s.stream = cfg.stream.empty() ? "PGBENCH_" + tag : cfg.stream;
  jsErrCode jerr = static_cast<jsErrCode>(0);
  js_DeleteStream(js, s.stream.c_str(), nullptr, &jerr);
  jsStreamConfig sc;
  jsStreamConfig_Init(&sc);
  sc.Name = s.stream.c_str();
  const std::string filter = subject + ".>";
  const char* subjects[] = {filter.c_str()};
  sc.Subjects = subjects;
  sc.SubjectsLen = 1;
  sc.Storage = file ? js_FileStorage : js_MemoryStorage;
  sc.Replicas = cfg.replicas;
  jsStreamInfo* si = nullptr;
  const natsStatus st = js_AddStream(&si, js, &sc, nullptr, &jerr);
  if (si) jsStreamInfo_Destroy(si);
  if (st != NATS_OK) return err_text("stream create (err_code " + std::to_string(jerr) + ")", st);
  s.url = cfg.url;
  g_placement.clear();
  // An R1 stream in a cluster has a leader too (its server): --place follower puts the client
  // on another server.
  if (cfg.replicas <= 1 && (cfg.place == "any" || cfg.server_names.empty())) return {};
  s.leader = wait_stream_leader(js, s.stream, 30000);
  if (s.leader.empty()) return "stream " + s.stream + ": no cluster leader within 30 s";
  const std::vector<std::string> urls = split_list(cfg.url);
  const std::vector<std::string> names = split_list(cfg.server_names);
  if (cfg.place != "any") {
    if (names.size() != urls.size()) return "--place needs --server-names naming each --url server";
    std::string target;
    for (size_t i = 0; i < urls.size() && target.empty(); ++i)
      if ((names[i] == s.leader) == (cfg.place == "leader")) target = urls[i];
    if (target.empty()) return "no " + cfg.place + " of " + s.stream + " (leader " + s.leader + ") among --url";
    // Reconnect the session to the chosen server; the stream stays where it is.
    s.js.reset();
    s.nc = open_conn_to(cfg, target, window == 1, err);
    if (!s.nc) return err;
    if (natsConnection_JetStream(&js, s.nc.get(), &jo) != NATS_OK) return "no JetStream context";
    s.js.reset(js);
    s.url = target;
  }
  nlohmann::ordered_json p;
  p["stream"] = s.stream;
  p["replicas"] = cfg.replicas;
  p["leader"] = s.leader;
  p["place"] = cfg.place;
  p["client_url"] = s.url;
  g_placement = p.dump();
  return {};
}

std::string last_placement_json() { return g_placement; }

std::string wait_stream_leader(jsCtx* js, const std::string& stream, int timeout_ms) {
  const int64_t deadline = now_ns() + static_cast<int64_t>(timeout_ms) * 1'000'000;
  do {
    jsStreamInfo* si = nullptr;
    jsErrCode jerr = static_cast<jsErrCode>(0);
    jsOptions o;
    jsOptions_Init(&o);
    o.Wait = 2000;
    std::string leader;
    if (js_GetStreamInfo(&si, js, stream.c_str(), &o, &jerr) == NATS_OK && si != nullptr && si->Cluster != nullptr &&
        si->Cluster->Leader != nullptr)
      leader = si->Cluster->Leader;
    if (si) jsStreamInfo_Destroy(si);
    if (!leader.empty()) return leader;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  } while (now_ns() < deadline);
  return {};
}

}  // namespace peregrine::bench
