// `peregrine stream get|rmm|view|purge|subjects`: reading and removing a stream's messages.
#include <algorithm>
#include <map>

#include "src/cli/commands.h"

namespace peregrine::cli {
namespace {

// A stored message from STREAM.MSG.GET's "message" object: headers (NATS/1.0 block) and data.
struct stored_msg {
  std::string subject, headers, data;
  uint64_t seq = 0;
  int64_t time_ns = 0;
};

stored_msg decode(const ordered_json& m) {
  stored_msg s;
  s.subject = m.value("subject", std::string());
  s.seq = m.value("seq", uint64_t{0});
  s.time_ns = parse_rfc3339(m.value("time", std::string())).value_or(0);
  s.data = base64_decode(m.value("data", std::string())).value_or("");
  const std::string hdr = base64_decode(m.value("hdrs", std::string())).value_or("");
  // Drop the "NATS/1.0" status line; keep "Key: Value" lines.
  size_t start = hdr.find("\r\n");
  while (start != std::string::npos && start + 2 < hdr.size()) {
    const size_t end = hdr.find("\r\n", start + 2);
    const std::string line = hdr.substr(start + 2, end == std::string::npos ? std::string::npos : end - start - 2);
    if (!line.empty()) s.headers += line + "\n";
    start = end;
  }
  return s;
}

// natscli's `Item: ORDERS#2 received 2026-05-22 10:14:25 +0000 UTC (36h2m11s) on Subject orders.created`.
void print_item(const std::string& stream, const stored_msg& m) {
  const int64_t age = (now_ns() - m.time_ns) / 1'000'000'000 * 1'000'000'000;
  std::printf("Item: %s#%llu received %s +0000 UTC (%s) on Subject %s\n\n", stream.c_str(),
              static_cast<unsigned long long>(m.seq), short_time(m.time_ns).c_str(), go_duration(age).c_str(),
              m.subject.c_str());
  if (!m.headers.empty()) {
    std::printf("Headers:\n\n");
    for (size_t p = 0, e; p < m.headers.size(); p = e + 1) {
      e = m.headers.find('\n', p);
      std::printf("  %s\n", m.headers.substr(p, e - p).c_str());
    }
    std::printf("\n");
  }
  std::printf("%s\n\n", m.data.c_str());
}

}  // namespace

void add_stream_message_commands(CLI::App& stream, cli_context& ctx) {
  struct get_args {
    std::string name, last_for;
    uint64_t seq = 0;
    bool json = false;
  };
  auto g = std::make_shared<get_args>();
  CLI::App* get = stream.add_subcommand("get", "retrieve a specific message from a stream");
  get->add_option("name", g->name, "stream name")->required();
  get->add_option("seq", g->seq, "message sequence")->check(positive());
  get->add_option("-S,--last-for", g->last_for, "the last message on this subject");
  get->add_flag("--json", g->json, "print the server's JSON reply");
  get->callback([&ctx, g] {
    ordered_json req;
    if (!g->last_for.empty()) req["last_by_subj"] = g->last_for;
    else if (g->seq > 0) req["seq"] = g->seq;
    else throw cli_error("a message sequence or --last-for is required");
    const std::string what = g->last_for.empty() ? g->name + "#" + std::to_string(g->seq) : "the last " + g->last_for;
    ordered_json reply = ctx.connect().js_api("STREAM.MSG.GET." + g->name, req, "could not retrieve " + what + ": ");
    if (g->json) return print_json(reply["message"]);
    print_item(g->name, decode(reply["message"]));
  });

  struct rmm_args {
    std::string name;
    uint64_t seq = 0;
  };
  auto r = std::make_shared<rmm_args>();
  CLI::App* rmm = stream.add_subcommand("rmm", "securely remove an individual message from a stream");
  rmm->add_option("name", r->name, "stream name")->required();
  rmm->add_option("seq", r->seq, "message sequence")->required()->check(positive());
  rmm->add_flag("-f,--force")->description("do not ask for confirmation (the CLI never asks)");
  rmm->callback([&ctx, r] {
    ctx.connect().js_api("STREAM.MSG.DELETE." + r->name, ordered_json{{"seq", r->seq}}, "could not remove message: ");
  });

  struct view_args {
    std::string name, subject;
    uint64_t start = 1;
    int64_t count = 0;
    bool json = false;
  };
  auto v = std::make_shared<view_args>();
  CLI::App* view = stream.add_subcommand("view", "view the messages of a stream in order");
  view->add_option("name", v->name, "stream name")->required();
  view->add_option("--id,--start-sequence", v->start, "first sequence to show")->check(positive());
  view->add_option("--subject", v->subject, "only messages on this subject");
  view->add_option("--count,--page", v->count, "show at most this many messages")->check(positive());
  view->add_flag("--json", v->json, "print each message's JSON");
  view->callback([&ctx, v] {
    client& cl = ctx.connect();
    uint64_t seq = v->start;
    for (int64_t shown = 0; v->count == 0 || shown < v->count; ++shown) {
      ordered_json req = {{"seq", seq}, {"next_by_subj", v->subject.empty() ? ">" : v->subject}};
      ordered_json reply = cl.js_api_raw("STREAM.MSG.GET." + v->name, req.dump());
      if (reply.contains("error")) {
        if (reply["error"].value("err_code", 0) == 10037) break;  // no more messages
        throw_api_error(reply, "could not view " + v->name + ": ");
      }
      if (v->json) print_json(reply["message"]);
      else print_item(v->name, decode(reply["message"]));
      seq = reply["message"].value("seq", seq) + 1;
    }
  });

  struct purge_args {
    std::string name, subject;
    uint64_t seq = 0, keep = 0;
    bool json = false;
  };
  auto p = std::make_shared<purge_args>();
  CLI::App* purge = stream.add_subcommand("purge", "remove messages from a stream (all, by subject, below a sequence)");
  purge->add_option("name", p->name, "stream name")->required();
  purge->add_option("--subject", p->subject, "only messages on this subject");
  auto* seq_opt = purge->add_option("--seq", p->seq, "remove messages below this sequence")->check(positive());
  purge->add_option("--keep", p->keep, "keep only this many of the newest messages")->excludes(seq_opt);
  purge->add_flag("-f,--force")->description("do not ask for confirmation (the CLI never asks)");
  purge->add_flag("--json", p->json, "print the server's JSON reply");
  purge->callback([&ctx, p, purge] {
    ordered_json req = ordered_json::object();
    if (!p->subject.empty()) req["filter"] = p->subject;
    if (purge->count("--seq")) req["seq"] = p->seq;
    if (purge->count("--keep")) req["keep"] = p->keep;
    ordered_json reply = ctx.connect().js_api("STREAM.PURGE." + p->name, req.empty() ? ordered_json() : req,
                                              "could not purge Stream: ");
    if (p->json) return print_json(reply);
    std::printf("Purged %s messages from %s\n", comma(reply.value("purged", int64_t{0})).c_str(), p->name.c_str());
  });

  struct subjects_args {
    std::string name, filter = ">";
    bool json = false;
  };
  auto s = std::make_shared<subjects_args>();
  CLI::App* subjects = stream.add_subcommand("subjects", "subjects in a stream and their message counts");
  subjects->add_option("name", s->name, "stream name")->required();
  subjects->add_option("filter", s->filter, "subject filter")->capture_default_str();
  subjects->add_flag("--json", s->json, "print the subject counts as JSON");
  subjects->callback([&ctx, s] {
    ordered_json reply = ctx.connect().js_api("STREAM.INFO." + s->name, ordered_json{{"subjects_filter", s->filter}},
                                              "could not request Stream info: ");
    const ordered_json subs = reply["state"].value("subjects", ordered_json::object());
    if (s->json) return print_json(subs);
    std::map<std::string, int64_t> sorted;
    for (auto it = subs.begin(); it != subs.end(); ++it) sorted[it.key()] = it.value().get<int64_t>();
    if (sorted.empty()) std::printf("No subjects found matching %s\n", s->filter.c_str());
    for (const auto& [subj, n] : sorted) std::printf("%s %s\n", subj.c_str(), comma(n).c_str());
  });
}

}  // namespace peregrine::cli
