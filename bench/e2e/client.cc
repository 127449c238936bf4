#include "bench/e2e/client.h"

namespace peregrine::bench {

std::string err_text(const std::string& what, natsStatus s) {
  std::string out = what + ": " + natsStatus_GetText(s);
  const char* last = nats_GetLastError(nullptr);
  if (last != nullptr && *last != '\0') out += std::string(" (") + last + ")";
  return out;
}

nc_ptr open_conn(const config& cfg, bool send_asap, std::string& err) {
  natsOptions* opts = nullptr;
  natsStatus s = natsOptions_Create(&opts);
  if (s == NATS_OK) s = natsOptions_SetURL(opts, cfg.url.c_str());
  if (s == NATS_OK) s = natsOptions_SetAllowReconnect(opts, false);
  if (s == NATS_OK) s = natsOptions_SetSendAsap(opts, send_asap);
  if (s == NATS_OK) s = natsOptions_SetTimeout(opts, 5000);
  if (s == NATS_OK && !cfg.tls_ca.empty()) s = natsOptions_SetSecure(opts, true);
  if (s == NATS_OK && !cfg.tls_ca.empty()) s = natsOptions_LoadCATrustedCertificates(opts, cfg.tls_ca.c_str());
  natsConnection* nc = nullptr;
  if (s == NATS_OK) s = natsConnection_Connect(&nc, opts);
  natsOptions_Destroy(opts);
  if (s != NATS_OK) {
    err = err_text("connect " + cfg.url, s);
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
  s.stream = "PGBENCH_" + tag;
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
  jsStreamInfo* si = nullptr;
  const natsStatus st = js_AddStream(&si, js, &sc, nullptr, &jerr);
  if (si) jsStreamInfo_Destroy(si);
  if (st != NATS_OK) return err_text("stream create", st);
  return {};
}

}  // namespace peregrine::bench
