// `peregrine pub|req|reply`: core publish (and JetStream publish with its PubAck), request and
// a responder. Bodies and headers expand natscli's templates ({{Count}}, {{ID}}, {{Time}} ...).
#include <unistd.h>

#include <chrono>
#include <iostream>
#include <iterator>
#include <random>
#include <thread>

#include "src/cli/commands.h"

namespace peregrine::cli {

// Expands {{ Count }}, {{ ID }}, {{ Time }}, {{ TimeStamp }}, {{ Unix }}, {{ UnixNano }} and
// {{ Random min max }}; an unknown name is an error rather than silently sent.
std::string expand_template(const std::string& in, int64_t count) {
  std::string out;
  size_t pos = 0;
  for (size_t open; (open = in.find("{{", pos)) != std::string::npos;) {
    const size_t close = in.find("}}", open);
    if (close == std::string::npos) break;
    out += in.substr(pos, open - pos);
    std::string expr = in.substr(open + 2, close - open - 2);
    expr.erase(0, expr.find_first_not_of(' '));
    expr.erase(expr.find_last_not_of(' ') + 1);
    const int64_t now = now_ns();
    if (expr == "Count" || expr == ".Count") out += std::to_string(count);
    else if (expr == "ID" || expr == ".ID") out += random_id();
    else if (expr == "Time" || expr == ".Time") out += short_time(now).substr(11);
    else if (expr == "TimeStamp" || expr == ".TimeStamp") out += rfc3339(now);
    else if (expr == "Unix" || expr == ".Unix") out += std::to_string(now / 1'000'000'000);
    else if (expr == "UnixNano" || expr == ".UnixNano") out += std::to_string(now);
    else if (expr.rfind("Random ", 0) == 0) {
      long long lo = 0, hi = 0;
      if (std::sscanf(expr.c_str() + 7, "%lld %lld", &lo, &hi) != 2 || hi < lo) throw cli_error("bad template: {{" + expr + "}}");
      static std::mt19937_64 rng{std::random_device{}()};
      const int64_t len = lo + static_cast<int64_t>(rng() % static_cast<uint64_t>(hi - lo + 1));
      for (int64_t i = 0; i < len; ++i) out += static_cast<char>('a' + rng() % 26);
    } else {
      throw cli_error("unknown template function: {{" + expr + "}}");
    }
    pos = close + 2;
  }
  return out + in.substr(pos);
}

namespace {

struct pub_args {
  std::string subject, body, reply, sleep, send_on = "eof";
  std::vector<std::string> headers;
  int64_t count = 1;
  bool jetstream = false, atomic = false, force_stdin = false, quiet = false;
  bool body_given = false;
};

natsMsg* make_msg(const std::string& subject, const std::string& reply, const std::string& body,
                  const std::vector<std::string>& headers, int64_t count) {
  natsMsg* m = nullptr;
  const std::string data = expand_template(body, count);
  if (natsMsg_Create(&m, subject.c_str(), reply.empty() ? nullptr : reply.c_str(), data.data(),
                     static_cast<int>(data.size())) != NATS_OK)
    throw cli_error("invalid subject: " + subject);
  for (const auto& h : headers) {
    const size_t colon = h.find(':');
    if (colon == std::string::npos || colon == 0) {
      natsMsg_Destroy(m);
      throw cli_error("invalid header \"" + h + "\", expected KEY:VALUE");
    }
    std::string v = h.substr(colon + 1);
    v.erase(0, v.find_first_not_of(' '));
    natsMsgHeader_Add(m, h.substr(0, colon).c_str(), expand_template(v, count).c_str());
  }
  return m;
}

ordered_json puback_of(natsMsg* reply) {
  const std::string data = payload_of(reply);
  ordered_json j = ordered_json::parse(data, nullptr, false);
  if (j.is_discarded() || !j.is_object()) throw cli_error("invalid PubAck: " + data);
  throw_api_error(j, "");
  return j;
}

std::vector<std::string> stdin_bodies(const pub_args& a) {
  std::string all{std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>()};
  if (a.send_on != "newline") return {all};
  std::vector<std::string> lines;
  for (size_t p = 0, e; p < all.size(); p = e + 1) {
    e = all.find('\n', p);
    if (e == std::string::npos) e = all.size();
    if (e > p) lines.push_back(all.substr(p, e - p));
  }
  return lines;
}

void publish_atomic(client& cl, const pub_args& a, const std::vector<std::string>& bodies) {
  if (bodies.empty()) throw cli_error("nothing to publish: the batch is empty");
  const std::string id = random_id();
  for (size_t i = 0; i < bodies.size(); ++i) {
    std::vector<std::string> hdrs = a.headers;
    hdrs.push_back("Nats-Batch-Id:" + id);
    hdrs.push_back("Nats-Batch-Sequence:" + std::to_string(i + 1));
    const bool last = i + 1 == bodies.size();
    if (last) hdrs.push_back("Nats-Batch-Commit:1");
    natsMsg* m = make_msg(a.subject, "", bodies[i], hdrs, static_cast<int64_t>(i + 1));
    msg_ptr guard(m);
    if (!last) {
      const natsStatus s = natsConnection_PublishMsg(cl.nc(), m);
      if (s != NATS_OK) throw cli_error(status_text(s));
      continue;
    }
    const ordered_json ack = puback_of(cl.request(m).get());
    if (!ack.contains("batch")) throw cli_error("the server does not support atomic batch publishing");
    std::printf("Wrote batch ID: %s Messages: %lld Sequence: %llu\n", ack.value("batch", id).c_str(),
                static_cast<long long>(ack.value("count", int64_t{0})),
                static_cast<unsigned long long>(ack.value("seq", uint64_t{0})));
  }
}

void run_pub(cli_context& ctx, const pub_args& a) {
  client& cl = ctx.connect();
  std::vector<std::string> bodies;
  if (a.body_given && !a.force_stdin) bodies.push_back(a.body);
  else if (a.force_stdin || !isatty(STDIN_FILENO)) bodies = stdin_bodies(a);
  else bodies.push_back("");
  if (a.atomic) return publish_atomic(cl, a, bodies);
  int64_t sleep_ns = 0;
  if (!a.sleep.empty()) {
    auto d = parse_duration(a.sleep);
    if (!d || *d < 0) throw cli_error("invalid --sleep: " + a.sleep);
    sleep_ns = *d;
  }
  int64_t n = 0;
  for (int64_t i = 1; i <= a.count; ++i) {
    for (const auto& body : bodies) {
      ++n;
      natsMsg* m = make_msg(a.subject, a.reply, body, a.headers, n);
      msg_ptr guard(m);
      const int len = natsMsg_GetDataLength(m);
      if (a.jetstream) {
        const ordered_json ack = puback_of(cl.request(m).get());
        if (!a.quiet) {
          std::printf("%s Published %d bytes to \"%s\"\n", now_hms().c_str(), len, a.subject.c_str());
          std::printf("Stored in Stream: %s Sequence: %s%s\n", ack.value("stream", std::string()).c_str(),
                      comma(ack.value("seq", int64_t{0})).c_str(), ack.value("duplicate", false) ? " Duplicate: true" : "");
        }
      } else {
        const natsStatus s = natsConnection_PublishMsg(cl.nc(), m);
        if (s != NATS_OK) throw cli_error(status_text(s));
        if (!a.quiet) std::printf("%s Published %d bytes to \"%s\"\n", now_hms().c_str(), len, a.subject.c_str());
      }
      std::fflush(stdout);
    }
    if (sleep_ns > 0 && i < a.count) std::this_thread::sleep_for(std::chrono::nanoseconds(sleep_ns));
  }
  const natsStatus s = natsConnection_FlushTimeout(cl.nc(), cl.timeout_ms());
  if (s != NATS_OK) throw cli_error(status_text(s));
}

void print_received(natsMsg* m, bool raw) {
  const std::string hdrs = header_lines(m);
  if (raw) {
    std::printf("%s\n", payload_of(m).c_str());
    return;
  }
  if (!hdrs.empty()) std::printf("%s\n", hdrs.c_str());
  std::printf("%s\n\n", payload_of(m).c_str());
}

}  // namespace

void add_core_commands(CLI::App& app, cli_context& ctx) {
  auto a = std::make_shared<pub_args>();
  CLI::App* pub = app.add_subcommand("pub", "publish messages (core NATS, or JetStream with --jetstream)");
  pub->add_option("subject", a->subject, "subject")->required();
  pub->add_option("body", a->body, "message body (templates: {{Count}}, {{ID}}, {{Time}}, {{TimeStamp}}, {{Unix}})");
  pub->add_option("-H,--header", a->headers, "header KEY:VALUE (repeatable)")->allow_extra_args(false);
  pub->add_option("--count", a->count, "publish this many messages")->check(CLI::Range(int64_t{1}, int64_t{1'000'000'000}));
  pub->add_option("--sleep", a->sleep, "pause between messages, e.g. 100ms");
  pub->add_option("--reply", a->reply, "reply subject");
  pub->add_flag("-J,--jetstream", a->jetstream, "publish to JetStream and wait for the PubAck");
  pub->add_flag("--atomic", a->atomic, "publish every message as one atomic batch (stream needs --allow-batch)");
  pub->add_option("--send-on", a->send_on, "with stdin: one message per line (newline) or the whole input (eof)")
      ->check(CLI::IsMember({"eof", "newline"}));
  pub->add_flag("--force-stdin", a->force_stdin, "read the body from stdin");
  pub->add_flag("-q,--quiet", a->quiet, "no output");
  pub->callback([&ctx, a, pub] {
    a->body_given = pub->count("body") > 0;
    run_pub(ctx, *a);
  });

  struct req_args {
    std::string subject, body;
    std::vector<std::string> headers;
    bool raw = false;
  };
  auto r = std::make_shared<req_args>();
  CLI::App* req = app.add_subcommand("req", "send a request and wait for the reply")->alias("request");
  req->add_option("subject", r->subject, "subject")->required();
  req->add_option("body", r->body, "request body (templates as pub)");
  req->add_option("-H,--header", r->headers, "header KEY:VALUE (repeatable)")->allow_extra_args(false);
  req->add_flag("--raw", r->raw, "reply payload only");
  req->callback([&ctx, r] {
    client& cl = ctx.connect();
    natsMsg* m = make_msg(r->subject, "", r->body, r->headers, 1);
    msg_ptr guard(m);
    if (!r->raw) std::printf("%s Sending request on \"%s\"\n", now_hms().c_str(), r->subject.c_str());
    const auto start = std::chrono::steady_clock::now();
    msg_ptr reply = cl.request(m);
    const int64_t rtt = std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start).count();
    if (!r->raw) std::printf("%s Received with rtt %s\n", now_hms().c_str(), go_duration(rtt).c_str());
    print_received(reply.get(), r->raw);
  });

  struct reply_args {
    std::string subject, body, queue;
    std::vector<std::string> headers;
    int64_t count = 0;
    bool echo = false;
  };
  auto p = std::make_shared<reply_args>();
  CLI::App* reply = app.add_subcommand("reply", "answer requests on a subject");
  reply->add_option("subject", p->subject, "subject")->required();
  reply->add_option("body", p->body, "reply body (templates as pub; {{Count}} counts requests)");
  reply->add_option("-H,--header", p->headers, "reply header KEY:VALUE (repeatable)")->allow_extra_args(false);
  reply->add_option("--queue", p->queue, "queue group");
  reply->add_option("--count", p->count, "exit after this many requests")->check(positive());
  reply->add_flag("--echo", p->echo, "reply with the request's headers and body");
  reply->callback([&ctx, p, reply] {
    client& cl = ctx.connect();
    natsSubscription* sub = nullptr;
    natsStatus s = p->queue.empty() ? natsConnection_SubscribeSync(&sub, cl.nc(), p->subject.c_str())
                                    : natsConnection_QueueSubscribeSync(&sub, cl.nc(), p->subject.c_str(), p->queue.c_str());
    if (s != NATS_OK) throw cli_error("could not subscribe: " + status_text(s));
    std::unique_ptr<natsSubscription, void (*)(natsSubscription*)> guard(sub, natsSubscription_Destroy);
    natsConnection_FlushTimeout(cl.nc(), cl.timeout_ms());
    const bool echo = p->echo || reply->count("body") == 0;
    for (int64_t n = 0; p->count == 0 || n < p->count;) {
      natsMsg* in = nullptr;
      s = natsSubscription_NextMsg(&in, sub, 1000);
      if (s == NATS_TIMEOUT) continue;
      if (s != NATS_OK) throw cli_error(status_text(s));
      msg_ptr msg(in);
      std::printf("%s [#%lld] Received on subject \"%s\":\n", now_hms().c_str(), static_cast<long long>(n),
                  natsMsg_GetSubject(in));
      print_received(in, false);
      ++n;
      const char* to = natsMsg_GetReply(in);
      if (to == nullptr) continue;
      natsMsg* out = make_msg(to, "", echo ? payload_of(in) : p->body, p->headers, n);
      msg_ptr out_guard(out);
      if (echo) {
        const char** keys = nullptr;
        int nk = 0;
        if (natsMsgHeader_Keys(in, &keys, &nk) == NATS_OK) {
          for (int i = 0; i < nk; ++i) {
            const char* v = nullptr;
            if (natsMsgHeader_Get(in, keys[i], &v) == NATS_OK) natsMsgHeader_Set(out, keys[i], v);
          }
          free(static_cast<void*>(keys));
        }
      }
      natsConnection_PublishMsg(cl.nc(), out);
      natsConnection_FlushTimeout(cl.nc(), cl.timeout_ms());
      std::fflush(stdout);
    }
  });

  add_sub_command(app, ctx);
}

}  // namespace peregrine::cli
