// `peregrine sub`: a core subscription, or a read of a stream through a durable or ephemeral
// pull consumer (--stream/--durable/--all/--new/--last/--start-sequence/--since), or by direct
// get (--direct). natscli's output lines.
#include "src/cli/commands.h"

namespace peregrine::cli {
namespace {

struct sub_args {
  std::string subject, queue, stream, durable, since;
  int64_t count = 0;
  uint64_t start_seq = 0;
  bool raw = false, ack = false, all = false, new_only = false, last = false, last_per_subject = false,
       terminate_at_end = false, direct = false;
};

void core_sub(client& cl, const sub_args& a) {
  natsSubscription* sub = nullptr;
  natsStatus s = a.queue.empty() ? natsConnection_SubscribeSync(&sub, cl.nc(), a.subject.c_str())
                                 : natsConnection_QueueSubscribeSync(&sub, cl.nc(), a.subject.c_str(), a.queue.c_str());
  if (s != NATS_OK) throw cli_error("could not subscribe: " + status_text(s));
  std::unique_ptr<natsSubscription, void (*)(natsSubscription*)> guard(sub, natsSubscription_Destroy);
  natsConnection_FlushTimeout(cl.nc(), cl.timeout_ms());
  if (!a.raw) std::printf("%s Subscribing on %s\n", now_hms().c_str(), a.subject.c_str());
  std::fflush(stdout);
  for (int64_t n = 1; a.count == 0 || n <= a.count;) {
    natsMsg* m = nullptr;
    s = natsSubscription_NextMsg(&m, sub, 1000);
    if (s == NATS_TIMEOUT) continue;
    if (s != NATS_OK) throw cli_error(status_text(s));
    msg_ptr guard_m(m);
    if (a.raw) {
      std::printf("%s\n", payload_of(m).c_str());
    } else {
      const char* reply = natsMsg_GetReply(m);
      std::printf("[#%lld] Received on \"%s\"%s\n", static_cast<long long>(n), natsMsg_GetSubject(m),
                  reply ? (" with reply \"" + std::string(reply) + "\"").c_str() : "");
      const std::string hdrs = header_lines(m);
      if (!hdrs.empty()) std::printf("%s\n", hdrs.c_str());
      std::printf("%s\n\n", payload_of(m).c_str());
    }
    std::fflush(stdout);
    ++n;
  }
}

std::string stream_for_subject(client& cl, const std::string& subject) {
  ordered_json reply = cl.js_api("STREAM.NAMES", ordered_json{{"subject", subject}}, "could not find a stream: ");
  if (!reply.contains("streams") || !reply["streams"].is_array() || reply["streams"].empty())
    throw cli_error("no stream holds subject " + subject);
  return reply["streams"][0].get<std::string>();
}

// One direct-get reply printed as natscli does; false for a status reply (404, 204 EOB).
bool show_direct(natsMsg* reply, int64_t n, const sub_args& a, uint64_t& next_seq) {
  const char* status = nullptr;
  if (natsMsgHeader_Get(reply, "Status", &status) == NATS_OK) return false;
  const char *sseq = nullptr, *subj = nullptr, *ts = nullptr;
  natsMsgHeader_Get(reply, "Nats-Sequence", &sseq);
  natsMsgHeader_Get(reply, "Nats-Subject", &subj);
  natsMsgHeader_Get(reply, "Nats-Time-Stamp", &ts);
  if (sseq == nullptr) throw cli_error("direct get reply without Nats-Sequence");
  next_seq = std::stoull(sseq) + 1;
  if (a.raw) {
    std::printf("%s\n", payload_of(reply).c_str());
  } else {
    std::printf("[#%lld] Received JetStream message (direct): stream: %s seq %s / subject: %s / time: %s\n",
                static_cast<long long>(n), a.stream.c_str(), sseq, subj ? subj : "",
                ts ? short_time(parse_rfc3339(ts).value_or(0)).c_str() : "");
    const std::string hdrs = header_lines(reply);
    if (!hdrs.empty()) std::printf("%s\n", hdrs.c_str());
    std::printf("%s\n\n", payload_of(reply).c_str());
  }
  std::fflush(stdout);
  return true;
}

// With --count: one batched direct get (2.11+; replies carry Nats-Num-Pending and end with a
// 204 EOB). Returns how many were shown; a server without batches answers one plain message,
// after which the caller goes on with single gets.
int64_t direct_batch(client& cl, const sub_args& a, const std::string& filter, uint64_t& seq) {
  const std::string body = ordered_json{{"seq", seq}, {"batch", a.count}, {"next_by_subj", filter}}.dump();
  const reply_stream replies = send_for_replies(cl, "$JS.API.DIRECT.GET." + a.stream, body);
  natsSubscription* sub = replies.sub.get();
  natsStatus s = NATS_OK;
  int64_t n = 0;
  while (n < a.count) {
    natsMsg* m = nullptr;
    s = natsSubscription_NextMsg(&m, sub, cl.timeout_ms());
    if (s != NATS_OK) {
      if (n == 0) throw cli_error(status_text(s));
      break;
    }
    msg_ptr guard(m);
    if (natsMsg_IsNoResponders(m)) throw cli_error(status_text(NATS_NO_RESPONDERS));
    if (!show_direct(m, n + 1, a, seq)) {
      seq = UINT64_MAX;  // EOB / not found: nothing more
      break;
    }
    ++n;
    const char* pending = nullptr;
    if (natsMsgHeader_Get(m, "Nats-Num-Pending", &pending) != NATS_OK) break;  // no batch support
  }
  return n;
}

void direct_sub(client& cl, const sub_args& a) {
  const std::string filter = a.subject.empty() ? ">" : a.subject;
  uint64_t seq = a.start_seq > 0 ? a.start_seq : 1;
  ordered_json info = cl.js_api("STREAM.INFO." + a.stream, nullptr, "could not request Stream info: ");
  std::string subjects;
  for (const auto& s : info["config"].value("subjects", ordered_json::array()))
    subjects += (subjects.empty() ? "" : ", ") + s.get<std::string>();
  if (!a.raw)
    std::printf("Subscribing to JetStream Stream (direct) holding messages with subject %s starting with sequence %llu\n",
                subjects.c_str(), static_cast<unsigned long long>(seq));
  int64_t n = a.count > 0 ? direct_batch(cl, a, filter, seq) : 0;
  const std::string subject = "$JS.API.DIRECT.GET." + a.stream;
  for (++n; seq != UINT64_MAX && (a.count == 0 || n <= a.count); ++n) {
    const std::string body = ordered_json{{"seq", seq}, {"next_by_subj", filter}}.dump();
    natsMsg* reply = nullptr;
    const natsStatus s = natsConnection_Request(&reply, cl.nc(), subject.c_str(), body.data(), static_cast<int>(body.size()),
                                                cl.timeout_ms());
    if (s != NATS_OK) throw cli_error(status_text(s));
    msg_ptr m(reply);
    if (!show_direct(reply, n, a, seq)) break;  // 404: no more messages
  }
}

// An ephemeral pull consumer for the read; removed at the end (and by the server when idle).
std::string ephemeral_consumer(client& cl, const sub_args& a) {
  ordered_json cfg = {{"ack_policy", a.ack ? "explicit" : "none"}, {"replay_policy", "instant"},
                      {"inactive_threshold", 10'000'000'000}};
  if (a.start_seq > 0) {
    cfg["deliver_policy"] = "by_start_sequence";
    cfg["opt_start_seq"] = a.start_seq;
  } else if (!a.since.empty()) {
    auto d = parse_duration(a.since);
    if (!d) throw cli_error("invalid --since: " + a.since);
    cfg["deliver_policy"] = "by_start_time";
    cfg["opt_start_time"] = rfc3339(now_ns() - *d);
  } else {
    cfg["deliver_policy"] = a.all ? "all" : a.last ? "last" : a.last_per_subject ? "last_per_subject" : "new";
  }
  if (!a.subject.empty()) cfg["filter_subject"] = a.subject;
  ordered_json reply = cl.js_api("CONSUMER.CREATE." + a.stream, ordered_json{{"stream_name", a.stream}, {"config", cfg}},
                                 "could not create a consumer: ");
  return reply.value("name", std::string());
}

// Prints one consumer delivery natscli's way and acks it with --ack; returns its pending count.
uint64_t show_js(client& cl, natsMsg* m, int64_t n, const sub_args& a) {
  const ack_meta meta = parse_ack_subject(natsMsg_GetReply(m) ? natsMsg_GetReply(m) : "");
  if (a.raw) {
    std::printf("%s\n", payload_of(m).c_str());
  } else {
    std::printf("[#%lld] Received JetStream message: stream: %s seq: %llu / pending: %llu / subject: %s / time: %s\n",
                static_cast<long long>(n), a.stream.c_str(), static_cast<unsigned long long>(meta.stream_seq),
                static_cast<unsigned long long>(meta.pending), natsMsg_GetSubject(m), short_time(meta.timestamp_ns).c_str());
    const std::string hdrs = header_lines(m);
    if (!hdrs.empty()) std::printf("%s\n", hdrs.c_str());
    std::printf("%s\n\n", payload_of(m).c_str());
  }
  if (a.ack && natsMsg_GetReply(m) != nullptr) natsConnection_PublishString(cl.nc(), natsMsg_GetReply(m), "+ACK");
  std::fflush(stdout);
  return meta.pending;
}

// A durable push consumer: read its delivery subject (answering flow control), stop at the
// end of the stream with --terminate-at-end (pending 0, or an idle second with nothing pending).
void push_sub(client& cl, const sub_args& a, const ordered_json& cfg) {
  const std::string deliver = cfg.value("deliver_subject", std::string()), group = cfg.value("deliver_group", std::string());
  natsSubscription* sub = nullptr;
  natsStatus s = group.empty() ? natsConnection_SubscribeSync(&sub, cl.nc(), deliver.c_str())
                               : natsConnection_QueueSubscribeSync(&sub, cl.nc(), deliver.c_str(), group.c_str());
  if (s != NATS_OK) throw cli_error("could not subscribe: " + status_text(s));
  std::unique_ptr<natsSubscription, void (*)(natsSubscription*)> guard(sub, natsSubscription_Destroy);
  for (int64_t n = 1; a.count == 0 || n <= a.count;) {
    natsMsg* m = nullptr;
    s = natsSubscription_NextMsg(&m, sub, 1000);
    if (s == NATS_TIMEOUT) {
      if (a.terminate_at_end &&
          cl.js_api("CONSUMER.INFO." + a.stream + "." + a.durable, nullptr).value("num_pending", int64_t{0}) == 0)
        break;
      continue;
    }
    if (s != NATS_OK) throw cli_error(status_text(s));
    msg_ptr msg(m);
    const char* status = nullptr;
    if (natsMsgHeader_Get(m, "Status", &status) == NATS_OK) {  // 100 heartbeat / flow control
      if (natsMsg_GetReply(m) != nullptr) natsConnection_PublishString(cl.nc(), natsMsg_GetReply(m), "");
      continue;
    }
    if (show_js(cl, m, n++, a) == 0 && a.terminate_at_end) break;
  }
  natsConnection_FlushTimeout(cl.nc(), cl.timeout_ms());
}

void stream_sub(client& cl, const sub_args& a) {
  const bool ephemeral = a.durable.empty();
  const std::string consumer = ephemeral ? ephemeral_consumer(cl, a) : a.durable;
  if (!ephemeral) {
    const ordered_json info = cl.js_api("CONSUMER.INFO." + a.stream + "." + consumer, nullptr,
                                        "could not load Consumer " + a.stream + " > " + consumer + ": ");
    const ordered_json cfg = info.value("config", ordered_json::object());
    if (!cfg.value("deliver_subject", std::string()).empty()) return push_sub(cl, a, cfg);
  }
  int64_t n = 1;
  bool done = false;
  while (!done && (a.count == 0 || n <= a.count)) {
    const int batch = a.count == 0 ? 100 : static_cast<int>(std::min<int64_t>(100, a.count - n + 1));
    auto msgs = pull(cl, a.stream, consumer, batch, 1000);
    if (msgs.empty()) {
      if (!a.terminate_at_end) continue;
      const ordered_json info = cl.js_api("CONSUMER.INFO." + a.stream + "." + consumer, nullptr);
      if (info.value("num_pending", int64_t{0}) == 0) break;
      continue;
    }
    for (auto& m : msgs) {
      if (show_js(cl, m.get(), n++, a) == 0 && a.terminate_at_end) done = true;
    }
    natsConnection_FlushTimeout(cl.nc(), cl.timeout_ms());
  }
  if (ephemeral) cl.js_api_raw("CONSUMER.DELETE." + a.stream + "." + consumer, "");
}

}  // namespace

void add_sub_command(CLI::App& app, cli_context& ctx) {
  auto a = std::make_shared<sub_args>();
  CLI::App* sub = app.add_subcommand("sub", "subscribe to a subject, or read a stream (--stream, --durable, --all ...)")
                      ->alias("subscribe");
  sub->add_option("subject", a->subject, "subject (with --stream: a filter)");
  sub->add_option("--queue", a->queue, "queue group");
  sub->add_option("--count", a->count, "exit after this many messages")->check(positive());
  sub->add_flag("--raw", a->raw, "payloads only");
  sub->add_option("--stream", a->stream, "read this stream");
  sub->add_option("--durable", a->durable, "read through this durable pull consumer");
  sub->add_flag("--ack", a->ack, "acknowledge the messages read");
  sub->add_flag("--all", a->all, "from the first message of the stream");
  sub->add_flag("--new", a->new_only, "only messages arriving from now on");
  sub->add_flag("--last", a->last, "from the last message of the stream");
  sub->add_flag("--last-per-subject", a->last_per_subject, "the last message of every subject");
  sub->add_option("--start-sequence", a->start_seq, "from this stream sequence")->check(positive());
  sub->add_option("--since", a->since, "messages newer than this duration, e.g. 1h");
  sub->add_flag("--terminate-at-end", a->terminate_at_end, "exit once the stream has been read to its end");
  sub->add_flag("--direct", a->direct, "read with direct get (stream needs --allow-direct)");
  sub->callback([&ctx, a, sub] {
    client& cl = ctx.connect();
    const bool js = !a->stream.empty() || !a->durable.empty() || a->all || a->new_only || a->last ||
                    a->last_per_subject || a->start_seq > 0 || !a->since.empty() || a->direct || a->terminate_at_end;
    if (!js) {
      if (a->subject.empty()) throw cli_error("a subject is required");
      return core_sub(cl, *a);
    }
    sub_args resolved = *a;
    if (resolved.stream.empty()) {
      if (resolved.subject.empty()) throw cli_error("a subject or --stream is required");
      resolved.stream = stream_for_subject(cl, resolved.subject);
    }
    (void)sub;
    if (resolved.direct) return direct_sub(cl, resolved);
    stream_sub(cl, resolved);
  });
}

}  // namespace peregrine::cli
