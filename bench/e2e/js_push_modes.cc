// JetStream push delivery latency, paced like the other latency modes: core publish into a
// stream -> delivery on a push subscription (libnats js_SubscribeSync): js-push-latency with an
// explicit-ack ephemeral consumer (each message acked, a buffered write inside the sample),
// js-ordered-latency with an ordered consumer (no acks; flow control and heartbeats are
// answered inside libnats).
#include <nats/nats.h>

#include <string>

#include "bench/e2e/client.h"
#include "bench/e2e/paced.h"

namespace peregrine::bench {

result run_js_push(const config& cfg, progress& prog, bool ordered) {
  result r;
  js_session s;
  const std::string subject = cfg.subject + (ordered ? ".ordered" : ".push");
  r.error = open_stream(cfg, cfg.file, 1, s, subject, ordered ? "ORDERED" : "PUSH");
  if (!r.error.empty()) return r;
  // The consumer side on its own connection.
  nc_ptr cons = open_conn(cfg, true, r.error);
  if (!cons) return r;
  jsCtx* raw_js = nullptr;
  if (natsConnection_JetStream(&raw_js, cons.get(), nullptr) != NATS_OK) return r.error = "no JetStream context", r;
  js_ptr cjs(raw_js);
  jsSubOptions so;
  jsSubOptions_Init(&so);
  so.Stream = s.stream.c_str();
  so.Ordered = ordered;
  so.ManualAck = true;
  natsSubscription* raw = nullptr;
  jsErrCode jerr = static_cast<jsErrCode>(0);
  const std::string filter = subject + ".>";
  natsStatus st = js_SubscribeSync(&raw, cjs.get(), filter.c_str(), nullptr, &so, &jerr);
  if (st != NATS_OK) return r.error = err_text("push subscribe", st), r;
  sub_ptr sub(raw);
  natsSubscription_SetPendingLimits(raw, -1, -1);
  natsConnection_Flush(cons.get());

  const std::string subj = subject + ".x";
  const std::string buf(cfg.size, 'p');
  config one = cfg;
  one.publishers = 1;
  return run_paced(one, prog, 1, [&](int) -> std::string {
    natsStatus pst = natsConnection_Publish(s.nc.get(), subj.c_str(), buf.data(), static_cast<int>(buf.size()));
    if (pst != NATS_OK) return err_text("publish", pst);
    natsMsg* m = nullptr;
    pst = natsSubscription_NextMsg(&m, sub.get(), 5000);
    if (pst != NATS_OK) return err_text("waiting for push delivery", pst);
    if (!ordered) natsMsg_Ack(m, nullptr);
    natsMsg_Destroy(m);
    return {};
  });
}

}  // namespace peregrine::bench
