// `peregrine consumer add|edit|info|ls|rm|pause|resume|unpin` (next: consumer_next.cc).
#include "src/cli/commands.h"

namespace peregrine::cli {
namespace {

struct consumer_flags {
  std::string stream, name;
  bool pull = false, flow_control = false, headers_only = false, defaults = false, json = false;
  std::string target, deliver_group, ack, deliver, replay, wait, heartbeat, inactive, description, backoff, backoff_min,
      backoff_max, pinned_ttl;
  std::vector<std::string> filters, overflow_groups, pinned_groups, prioritized_groups;
  int64_t max_deliver = -1, max_pending = 0, max_waiting = 0, max_pull_batch = 0, backoff_steps = 0;
  CLI::App* cmd = nullptr;
  bool given(const char* flag) const { return cmd->count(flag) > 0; }
};

void add_config_flags(CLI::App* c, consumer_flags& f) {
  f.cmd = c;
  c->add_option("stream", f.stream, "stream name")->required();
  c->add_option("name", f.name, "consumer name")->required();
  c->add_flag("--pull", f.pull, "a pull consumer (no delivery subject)");
  c->add_option("--target", f.target, "push delivery subject");
  c->add_option("--deliver-group", f.deliver_group, "push delivery queue group");
  c->add_option("--ack", f.ack, "acknowledgment policy")->check(CLI::IsMember({"none", "all", "explicit"}));
  c->add_option("--deliver", f.deliver, "where to start: all, last, new, last_per_subject, a sequence or a duration ago");
  c->add_option("--filter", f.filters, "filter subjects (repeatable)")->allow_extra_args(false);
  c->add_option("--replay", f.replay, "replay policy")->check(CLI::IsMember({"instant", "original"}));
  c->add_option("--wait", f.wait, "acknowledgment wait, e.g. 30s");
  c->add_option("--max-deliver", f.max_deliver, "maximum deliveries of a message (-1 unlimited)");
  c->add_option("--max-pending", f.max_pending, "maximum outstanding acknowledgments");
  c->add_option("--max-waiting", f.max_waiting, "maximum waiting pull requests");
  c->add_option("--max-pull-batch", f.max_pull_batch, "maximum batch of a pull request");
  c->add_option("--heartbeat", f.heartbeat, "push idle heartbeat interval");
  c->add_flag("--flow-control", f.flow_control, "push flow control");
  c->add_flag("--headers-only", f.headers_only, "deliver headers only (adds Nats-Msg-Size)");
  c->add_option("--inactive-threshold", f.inactive, "remove the consumer after this long without interest");
  c->add_option("--description", f.description, "a description of the consumer");
  c->add_option("--backoff", f.backoff, "redelivery backoff: none or linear")->check(CLI::IsMember({"none", "linear"}));
  c->add_option("--backoff-steps", f.backoff_steps, "linear backoff: number of steps")->check(CLI::Range(1, 1000));
  c->add_option("--backoff-min", f.backoff_min, "linear backoff: first delay");
  c->add_option("--backoff-max", f.backoff_max, "linear backoff: last delay");
  c->add_option("--overflow-groups", f.overflow_groups, "priority groups with the overflow policy")->allow_extra_args(false);
  c->add_option("--pinned-groups", f.pinned_groups, "priority groups with the pinned_client policy")->allow_extra_args(false);
  c->add_option("--pinned-ttl", f.pinned_ttl, "pinned client timeout");
  c->add_option("--prioritized-groups", f.prioritized_groups, "priority groups with the prioritized policy")->allow_extra_args(false);
  c->add_flag("--defaults", f.defaults, "accept the defaults for everything not given (never asks)");
  c->add_flag("--json", f.json, "print the server's JSON reply");
  c->add_flag("-f,--force")->description("do not ask for confirmation (the CLI never asks)");
}

int64_t duration_flag(const std::string& v, const char* flag) {
  auto d = parse_duration(v);
  if (!d || *d < 0) throw cli_error(std::string("invalid duration for ") + flag + ": " + v);
  return *d;
}

void apply_deliver(const std::string& d, ordered_json& cfg) {
  cfg.erase("opt_start_seq");
  cfg.erase("opt_start_time");
  if (d == "all" || d == "last" || d == "new" || d == "last_per_subject") {
    cfg["deliver_policy"] = d;
  } else if (!d.empty() && d.find_first_not_of("0123456789") == std::string::npos) {
    cfg["deliver_policy"] = "by_start_sequence";
    cfg["opt_start_seq"] = std::stoull(d);
  } else if (auto ago = parse_duration(d)) {
    cfg["deliver_policy"] = "by_start_time";
    cfg["opt_start_time"] = rfc3339(now_ns() - *ago);
  } else {
    throw cli_error("invalid --deliver: " + d + " (all, last, new, last_per_subject, a sequence or a duration)");
  }
}

void apply_flags(const consumer_flags& f, ordered_json& cfg) {
  if (f.given("--target")) cfg["deliver_subject"] = f.target;
  if (f.given("--deliver-group")) cfg["deliver_group"] = f.deliver_group;
  if (f.given("--ack")) cfg["ack_policy"] = f.ack;
  if (f.given("--deliver")) apply_deliver(f.deliver, cfg);
  if (f.given("--filter")) {
    cfg.erase("filter_subjects");
    cfg.erase("filter_subject");
    if (f.filters.size() == 1) cfg["filter_subject"] = f.filters[0];
    else cfg["filter_subjects"] = f.filters;
  }
  if (f.given("--replay")) cfg["replay_policy"] = f.replay;
  if (f.given("--wait")) cfg["ack_wait"] = duration_flag(f.wait, "--wait");
  if (f.given("--max-deliver")) cfg["max_deliver"] = f.max_deliver;
  if (f.given("--max-pending")) cfg["max_ack_pending"] = f.max_pending;
  if (f.given("--max-waiting")) cfg["max_waiting"] = f.max_waiting;
  if (f.given("--max-pull-batch")) cfg["max_batch"] = f.max_pull_batch;
  if (f.given("--heartbeat")) cfg["idle_heartbeat"] = duration_flag(f.heartbeat, "--heartbeat");
  if (f.given("--flow-control")) cfg["flow_control"] = f.flow_control;
  if (f.given("--headers-only")) cfg["headers_only"] = f.headers_only;
  if (f.given("--inactive-threshold")) cfg["inactive_threshold"] = duration_flag(f.inactive, "--inactive-threshold");
  if (f.given("--description")) cfg["description"] = f.description;
  if (f.given("--backoff")) {
    cfg.erase("backoff");
    if (f.backoff == "linear") {
      if (f.backoff_steps < 1 || f.backoff_min.empty() || f.backoff_max.empty())
        throw cli_error("--backoff=linear needs --backoff-steps, --backoff-min and --backoff-max");
      const int64_t lo = duration_flag(f.backoff_min, "--backoff-min"), hi = duration_flag(f.backoff_max, "--backoff-max");
      if (hi < lo) throw cli_error("--backoff-max must not be below --backoff-min");
      ordered_json steps = ordered_json::array();
      for (int64_t i = 0; i < f.backoff_steps; ++i)
        steps.push_back(f.backoff_steps == 1 ? lo : lo + (hi - lo) * i / (f.backoff_steps - 1));
      cfg["backoff"] = steps;
    }
  }
  auto groups = [&](const std::vector<std::string>& g, const char* policy) {
    cfg["priority_groups"] = g;
    cfg["priority_policy"] = policy;
  };
  if (f.given("--overflow-groups")) groups(f.overflow_groups, "overflow");
  if (f.given("--pinned-groups")) groups(f.pinned_groups, "pinned_client");
  if (f.given("--prioritized-groups")) groups(f.prioritized_groups, "prioritized");
  if (f.given("--pinned-ttl")) cfg["priority_timeout"] = duration_flag(f.pinned_ttl, "--pinned-ttl");
}

void show_info(const ordered_json& reply, bool json) {
  if (json) print_json(reply);
  else std::printf("%s", consumer_info_text(reply, now_ns()).c_str());
}

ordered_json consumer_info(client& cl, const std::string& stream, const std::string& name) {
  return cl.js_api("CONSUMER.INFO." + stream + "." + name, nullptr, "could not load Consumer " + stream + " > " + name + ": ");
}

void consumer_add(cli_context& ctx, const consumer_flags& f) {
  ordered_json cfg = {{"durable_name", f.name}, {"deliver_policy", "all"}, {"ack_policy", "explicit"},
                      {"replay_policy", "instant"}};
  if (!f.pull && f.target.empty() && !f.defaults && !f.given("--ack"))
    throw cli_error("give --pull or --target SUBJECT (or --defaults for a pull consumer)");
  apply_flags(f, cfg);
  ordered_json req = {{"stream_name", f.stream}, {"config", cfg}};
  ordered_json reply = ctx.connect().js_api("CONSUMER.DURABLE.CREATE." + f.stream + "." + f.name, req,
                                            "could not create Consumer: ");
  show_info(reply, f.json);
}

void consumer_edit(cli_context& ctx, const consumer_flags& f) {
  client& cl = ctx.connect();
  ordered_json cfg = consumer_info(cl, f.stream, f.name)["config"];
  const ordered_json before = cfg;
  apply_flags(f, cfg);
  if (cfg == before) {
    std::printf("No changes to the configuration of Consumer %s > %s\n", f.stream.c_str(), f.name.c_str());
    return;
  }
  ordered_json req = {{"stream_name", f.stream}, {"config", cfg}};
  ordered_json reply = cl.js_api("CONSUMER.DURABLE.CREATE." + f.stream + "." + f.name, req, "could not edit Consumer: ");
  if (!f.json) std::printf("%s\n", config_diff(before, cfg).c_str());
  show_info(reply, f.json);
}

struct target_args {
  std::string stream, name, extra;
  bool json = false;
};

}  // namespace

void add_consumer_commands(CLI::App& app, cli_context& ctx) {
  CLI::App* consumer = app.add_subcommand("consumer", "JetStream consumer management")->require_subcommand(1);
  consumer->alias("con");

  auto af = std::make_shared<consumer_flags>();
  CLI::App* add = consumer->add_subcommand("add", "create a durable consumer")->alias("create");
  add_config_flags(add, *af);
  add->callback([&ctx, af] { consumer_add(ctx, *af); });

  auto ef = std::make_shared<consumer_flags>();
  CLI::App* edit = consumer->add_subcommand("edit", "change a consumer's configuration");
  add_config_flags(edit, *ef);
  edit->callback([&ctx, ef] { consumer_edit(ctx, *ef); });

  auto ia = std::make_shared<target_args>();
  CLI::App* info = consumer->add_subcommand("info", "consumer configuration and state");
  info->add_option("stream", ia->stream, "stream name")->required();
  info->add_option("name", ia->name, "consumer name")->required();
  info->add_flag("--json", ia->json, "print the server's JSON reply");
  info->callback([&ctx, ia] { show_info(consumer_info(ctx.connect(), ia->stream, ia->name), ia->json); });

  auto la = std::make_shared<target_args>();
  CLI::App* ls = consumer->add_subcommand("ls", "list a stream's consumers")->alias("list");
  ls->add_option("stream", la->stream, "stream name")->required();
  ls->add_flag("-n,--names", [la](int64_t) { la->extra = "names"; }, "names only");
  ls->add_flag("--json", la->json, "print the server's JSON");
  ls->callback([&ctx, la] {
    client& cl = ctx.connect();
    std::vector<ordered_json> all;
    for (int64_t offset = 0;;) {
      ordered_json reply = cl.js_api("CONSUMER.LIST." + la->stream, ordered_json{{"offset", offset}}, "could not list consumers: ");
      if (!reply.contains("consumers") || !reply["consumers"].is_array() || reply["consumers"].empty()) break;
      for (auto& c : reply["consumers"]) all.push_back(c);
      offset = static_cast<int64_t>(all.size());
      if (offset >= reply.value("total", int64_t{0})) break;
    }
    if (la->json) {
      ordered_json arr = ordered_json::array();
      for (const auto& c : all) arr.push_back(la->extra == "names" ? c["name"] : c);
      return print_json(arr);
    }
    if (la->extra == "names") {
      for (const auto& c : all) std::printf("%s\n", c["name"].get<std::string>().c_str());
      return;
    }
    if (all.empty()) {
      std::printf("No Consumers defined\n");
      return;
    }
    std::vector<std::vector<std::string>> rows;
    for (const auto& c : all) {
      std::string created;
      if (auto t = parse_rfc3339(c.value("created", std::string()))) created = short_time(*t);
      rows.push_back({c["name"].get<std::string>(), c["config"].value("description", std::string()), created,
                      comma(c.value("num_ack_pending", int64_t{0})), comma(c.value("num_pending", int64_t{0}))});
    }
    std::printf("%s", box_table("Consumers", {"Name", "Description", "Created", "Ack Pending", "Unprocessed"}, rows).c_str());
  });

  auto ra = std::make_shared<target_args>();
  CLI::App* rm = consumer->add_subcommand("rm", "delete a consumer")->alias("delete");
  rm->add_option("stream", ra->stream, "stream name")->required();
  rm->add_option("name", ra->name, "consumer name")->required();
  rm->add_flag("-f,--force")->description("do not ask for confirmation (the CLI never asks)");
  rm->callback([&ctx, ra] {
    ctx.connect().js_api("CONSUMER.DELETE." + ra->stream + "." + ra->name, nullptr, "could not remove Consumer: ");
  });

  auto pa = std::make_shared<target_args>();
  CLI::App* pause = consumer->add_subcommand("pause", "pause delivery until a deadline (a duration from now or RFC 3339 time)");
  pause->add_option("stream", pa->stream, "stream name")->required();
  pause->add_option("name", pa->name, "consumer name")->required();
  pause->add_option("until", pa->extra, "e.g. 1h, or 2026-05-22T11:14:22Z")->required();
  pause->add_flag("-f,--force")->description("do not ask for confirmation (the CLI never asks)");
  pause->add_flag("--json", pa->json, "print the server's JSON reply");
  pause->callback([&ctx, pa] {
    int64_t until;
    if (auto d = parse_duration(pa->extra)) until = now_ns() + *d;
    else if (auto t = parse_rfc3339(pa->extra)) until = *t;
    else throw cli_error("invalid pause deadline: " + pa->extra);
    ordered_json reply = ctx.connect().js_api("CONSUMER.PAUSE." + pa->stream + "." + pa->name,
                                              ordered_json{{"pause_until", rfc3339(until)}}, "could not pause Consumer: ");
    if (pa->json) return print_json(reply);
    if (!reply.value("paused", false)) throw cli_error("consumer failed to pause, perhaps a time in the past was given");
    const int64_t t = parse_rfc3339(reply.value("pause_until", std::string())).value_or(until);
    std::printf("Paused %s > %s until %s (%s)\n", pa->stream.c_str(), pa->name.c_str(), short_time(t).c_str(),
                human_duration(reply.value("pause_remaining", t - now_ns())).c_str());
  });

  auto sa = std::make_shared<target_args>();
  CLI::App* resume = consumer->add_subcommand("resume", "resume a paused consumer");
  resume->add_option("stream", sa->stream, "stream name")->required();
  resume->add_option("name", sa->name, "consumer name")->required();
  resume->add_flag("-f,--force")->description("do not ask for confirmation (the CLI never asks)");
  resume->callback([&ctx, sa] {
    client& cl = ctx.connect();
    const ordered_json info = consumer_info(cl, sa->stream, sa->name);
    if (!info.value("paused", false)) throw cli_error("consumer is not paused");
    const std::string was = info["config"].value("pause_until", std::string());
    cl.js_api("CONSUMER.PAUSE." + sa->stream + "." + sa->name, ordered_json::object(), "could not resume Consumer: ");
    std::printf("Consumer %s > %s was resumed while previously paused until %s\n", sa->stream.c_str(), sa->name.c_str(),
                short_time(parse_rfc3339(was).value_or(0)).c_str());
  });

  auto ua = std::make_shared<target_args>();
  CLI::App* unpin = consumer->add_subcommand("unpin", "unpin the pinned client of a priority group");
  unpin->add_option("stream", ua->stream, "stream name")->required();
  unpin->add_option("name", ua->name, "consumer name")->required();
  unpin->add_option("group", ua->extra, "priority group")->required();
  unpin->add_flag("-f,--force")->description("do not ask for confirmation (the CLI never asks)");
  unpin->callback([&ctx, ua] {
    client& cl = ctx.connect();
    const ordered_json info = consumer_info(cl, ua->stream, ua->name);
    std::string pinned;
    if (info.contains("priority_groups") && info["priority_groups"].is_array())
      for (const auto& g : info["priority_groups"])
        if (g.value("group", std::string()) == ua->extra) pinned = g.value("pinned_client_id", std::string());
    cl.js_api("CONSUMER.UNPIN." + ua->stream + "." + ua->name, ordered_json{{"group", ua->extra}}, "could not unpin: ");
    std::printf("Unpinned client %s from Priority Group %s > %s > %s\n", pinned.c_str(), ua->stream.c_str(),
                ua->name.c_str(), ua->extra.c_str());
  });

  add_consumer_next_command(*consumer, ctx);
}

}  // namespace peregrine::cli
