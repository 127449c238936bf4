// `peregrine consumer next STREAM CONSUMER`: pull messages and acknowledge them, natscli style.
#include "src/cli/commands.h"

namespace peregrine::cli {
namespace {

struct next_args {
  std::string stream, name;
  int count = 1;
  bool ack = true, nak = false, term = false, raw = false;
  std::string wait, timeout, group;
};

void respond(client& cl, natsMsg* m, const char* what) {
  const char* reply = natsMsg_GetReply(m);
  if (reply == nullptr) return;
  // Flushed, so the ack has reached the server before the CLI pulls again or exits.
  const natsStatus s = natsConnection_PublishString(cl.nc(), reply, what);
  if (s != NATS_OK || natsConnection_FlushTimeout(cl.nc(), cl.timeout_ms()) != NATS_OK)
    throw cli_error("could not acknowledge: " + status_text(s));
}

void show(client& cl, natsMsg* m, const next_args& a) {
  const ack_meta meta = parse_ack_subject(natsMsg_GetReply(m) ? natsMsg_GetReply(m) : "");
  if (a.raw) {
    std::printf("%s\n", payload_of(m).c_str());
  } else {
    std::printf("[%s] subj: %s / tries: %llu / cons seq: %llu / str seq: %llu / pending: %llu\n\n", now_hms().c_str(),
                natsMsg_GetSubject(m), static_cast<unsigned long long>(meta.delivered),
                static_cast<unsigned long long>(meta.consumer_seq), static_cast<unsigned long long>(meta.stream_seq),
                static_cast<unsigned long long>(meta.pending));
    const std::string hdrs = header_lines(m);
    if (!hdrs.empty()) std::printf("Headers:\n\n%s\n", hdrs.c_str());
    std::printf("%s\n\n", payload_of(m).c_str());
  }
  if (a.term) {
    respond(cl, m, "+TERM");
    if (!a.raw) std::printf("Terminated message\n\n");
  } else if (a.nak) {
    respond(cl, m, "-NAK");
    if (!a.raw) std::printf("NaK'ed message\n\n");
  } else if (a.ack) {
    respond(cl, m, "+ACK");
    if (!a.raw) std::printf("Acknowledged message\n\n");
  }
  std::fflush(stdout);
}

}  // namespace

void add_consumer_next_command(CLI::App& consumer, cli_context& ctx) {
  auto a = std::make_shared<next_args>();
  CLI::App* next = consumer.add_subcommand("next", "retrieve messages from a pull consumer");
  next->add_option("stream", a->stream, "stream name")->required();
  next->add_option("name", a->name, "consumer name")->required();
  next->add_option("--count", a->count, "number of messages (single pulls unless --wait)")->check(CLI::Range(1, 1000000));
  next->add_flag("--ack,!--no-ack", a->ack, "acknowledge the messages (default)");
  next->add_flag("--nak", a->nak, "negatively acknowledge: redeliver now");
  next->add_flag("--term", a->term, "terminate the messages: no redelivery");
  next->add_flag("--raw", a->raw, "payload only");
  next->add_option("--wait", a->wait, "one pull of --count messages, waiting this long (e.g. 2s)");
  next->add_option("--timeout", a->timeout, "how long each pull waits for a message (default: the global --timeout)");
  next->add_option("--group", a->group, "pull as a member of this priority group");
  next->callback([&ctx, a] {
    client& cl = ctx.connect();
    cl.js_api("CONSUMER.INFO." + a->stream + "." + a->name, nullptr,
              "could not load Consumer " + a->stream + " > " + a->name + ": ");
    int64_t timeout_ms = cl.timeout_ms();
    if (!a->timeout.empty()) {
      auto d = parse_duration(a->timeout);
      if (!d || *d <= 0) throw cli_error("invalid --timeout: " + a->timeout);
      timeout_ms = *d / 1'000'000;
    }
    int received = 0;
    if (!a->wait.empty()) {
      auto d = parse_duration(a->wait);
      if (!d || *d <= 0) throw cli_error("invalid --wait: " + a->wait);
      for (auto& m : pull(cl, a->stream, a->name, a->count, *d / 1'000'000, a->group)) {
        show(cl, m.get(), *a);
        ++received;
      }
    } else {
      for (int i = 0; i < a->count; ++i) {
        auto msgs = pull(cl, a->stream, a->name, 1, timeout_ms, a->group);
        if (msgs.empty()) break;
        show(cl, msgs[0].get(), *a);
        ++received;
      }
    }
    if (received == 0) throw cli_error("no message received: nats: timeout");
  });
}

}  // namespace peregrine::cli
