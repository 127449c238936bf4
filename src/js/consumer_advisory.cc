#include "src/js/consumer_advisory.h"

#include "src/base/go_text.h"

namespace js {

consumer_event consumer_advisory_event(const advisory& a, const std::string& account, const std::string& stream,
                                       const std::string& consumer) {
  const std::string suffix = "." + stream + "." + consumer;
  using k = advisory_kind;
  const bool group = a.kind == k::pinned || a.kind == k::unpinned;
  const bool per_msg = a.kind == k::max_deliveries || a.kind == k::nak || a.kind == k::terminated ||
                       a.kind == k::ack_metric;
  // Fields in nats-server's order: [account] stream consumer [consumer_seq] [stream_seq]
  // [ack_time] [deliveries], then the kind's own.
  nlohmann::ordered_json body;
  if (group) body["account"] = account;
  body["stream"] = stream;
  body["consumer"] = consumer;
  if (per_msg && a.kind != k::max_deliveries) body["consumer_seq"] = a.consumer_seq;
  if (per_msg) body["stream_seq"] = a.stream_seq;
  if (a.kind == k::ack_metric) body["ack_time"] = a.ack_time;
  if (per_msg) body["deliveries"] = a.deliveries;
  if (group) body["group"] = a.group;
  std::string subject, type;
  switch (a.kind) {
    case k::max_deliveries:
      subject = "MAX_DELIVERIES", type = "max_deliver";
      break;
    case k::nak:
      subject = "MSG_NAKED", type = "nak";
      break;
    case k::terminated:
      subject = "MSG_TERMINATED", type = "terminated";
      if (!a.reason.empty()) body["reason"] = a.reason;
      break;
    case k::pinned:
      subject = "PINNED", type = "consumer_group_pinned";
      body["pinned_id"] = a.pin_id;
      break;
    case k::unpinned:
      subject = "UNPINNED", type = "consumer_group_unpinned";
      body["reason"] = a.reason;
      break;
    case k::pause:
      subject = "PAUSE", type = "consumer_pause";
      body["paused"] = a.paused;
      body["pause_until"] = base::rfc3339_nano(a.paused ? a.pause_until : 0);
      break;
    case k::ack_metric:
      return {"$JS.EVENT.METRIC.CONSUMER.ACK" + suffix, "io.nats.jetstream.metric.v1.consumer_ack", std::move(body)};
  }
  return {"$JS.EVENT.ADVISORY.CONSUMER." + subject + suffix, type, std::move(body)};
}

}  // namespace js
