// `peregrine stream add|edit|info|ls|rm` (get, rmm, view, purge, subjects: stream_msgs_cmd.cc).
#include "src/cli/commands.h"

namespace peregrine::cli {
namespace {

// Flags that make up a stream configuration; each is applied only when given (edit keeps the rest).
struct stream_flags {
  std::vector<std::string> subjects, sources;
  std::string storage, retention, discard, max_bytes, max_age, max_msg_size, dupe_window, mirror, description;
  int64_t max_msgs = -1, max_msgs_per_subject = -1, max_consumers = -1;
  int replicas = 1;
  bool allow_rollup = false, deny_delete = false, deny_purge = false, allow_direct = true, allow_batch = false,
       allow_msg_ttl = false, republish_headers = false, no_republish = false, defaults = false, json = false,
       force = false;
  std::string transform_src, transform_dest, republish_src, republish_dest;
  CLI::App* cmd = nullptr;
  bool given(const char* flag) const { return cmd->count(flag) > 0; }
};

void add_config_flags(CLI::App* c, stream_flags& f) {
  f.cmd = c;
  c->add_option("--subjects", f.subjects, "subjects the stream captures (comma separated or repeated)")->delimiter(',')->allow_extra_args(false);
  c->add_option("--description", f.description, "a description of the stream");
  c->add_option("--storage", f.storage, "storage backend")->check(CLI::IsMember({"file", "memory", "f", "m"}));
  c->add_option("--retention", f.retention, "retention policy")
      ->check(CLI::IsMember({"limits", "interest", "workq", "work", "workqueue"}));
  c->add_option("--discard", f.discard, "discard policy when the stream is full")->check(CLI::IsMember({"old", "new"}));
  c->add_option("--max-msgs", f.max_msgs, "maximum number of messages (-1 unlimited)");
  c->add_option("--max-msgs-per-subject", f.max_msgs_per_subject, "maximum messages per subject (-1 unlimited)");
  c->add_option("--max-bytes", f.max_bytes, "maximum bytes, e.g. 1GiB (-1 unlimited)");
  c->add_option("--max-age", f.max_age, "maximum message age, e.g. 7d, 1h30m (0 unlimited)");
  c->add_option("--max-msg-size", f.max_msg_size, "maximum message size (-1 unlimited)");
  c->add_option("--max-consumers", f.max_consumers, "maximum number of consumers (-1 unlimited)");
  c->add_option("--dupe-window", f.dupe_window, "duplicate tracking window, e.g. 2m");
  c->add_option("--replicas", f.replicas, "number of replicas")->check(CLI::Range(1, 5));
  c->add_flag("--allow-rollup,!--no-allow-rollup", f.allow_rollup, "allow Nats-Rollup headers");
  c->add_flag("--deny-delete,!--allow-delete", f.deny_delete, "deny deleting individual messages");
  c->add_flag("--deny-purge,!--allow-purge", f.deny_purge, "deny purging the stream");
  c->add_flag("--allow-direct,!--no-allow-direct", f.allow_direct, "allow direct get (on by default for new streams)");
  c->add_flag("--allow-batch,!--no-allow-batch", f.allow_batch, "allow atomic batch publishing (allow_atomic)");
  c->add_flag("--allow-msg-ttl", f.allow_msg_ttl, "allow per-message TTLs (Nats-TTL header; cannot be undone)");
  c->add_option("--transform-source,--subject-transform-source", f.transform_src, "subject transform source");
  c->add_option("--transform-destination,--subject-transform", f.transform_dest, "subject transform destination");
  c->add_option("--republish-source", f.republish_src, "republish messages matching this subject");
  c->add_option("--republish-destination", f.republish_dest, "republish destination subject");
  c->add_flag("--republish-headers", f.republish_headers, "republish headers only (adds Nats-Msg-Size)");
  c->add_flag("--no-republish", f.no_republish, "remove the republish configuration");
  c->add_flag("--json", f.json, "print the server's JSON reply");
  c->add_flag("-f,--force", f.force, "do not ask for confirmation");
}

int64_t duration_flag(const std::string& v, const char* flag) {
  auto d = parse_duration(v);
  if (!d || *d < 0) throw cli_error(std::string("invalid duration for ") + flag + ": " + v);
  return *d;
}
int64_t bytes_flag(const std::string& v, const char* flag) {
  auto b = parse_bytes(v);
  if (!b) throw cli_error(std::string("invalid size for ") + flag + ": " + v);
  return *b;
}

std::string retention_of(const std::string& r) {
  if (r == "work" || r == "workq" || r == "workqueue") return "workqueue";
  return r;
}

// Writes the given flags into `cfg` (a new stream's defaults or an existing configuration).
void apply_flags(const stream_flags& f, ordered_json& cfg) {
  if (f.given("--subjects")) cfg["subjects"] = f.subjects;
  if (f.given("--description")) cfg["description"] = f.description;
  if (f.given("--storage")) cfg["storage"] = f.storage[0] == 'm' ? "memory" : "file";
  if (f.given("--retention")) cfg["retention"] = retention_of(f.retention);
  if (f.given("--discard")) cfg["discard"] = f.discard;
  if (f.given("--max-msgs")) cfg["max_msgs"] = f.max_msgs;
  if (f.given("--max-msgs-per-subject")) cfg["max_msgs_per_subject"] = f.max_msgs_per_subject;
  if (f.given("--max-bytes")) cfg["max_bytes"] = bytes_flag(f.max_bytes, "--max-bytes");
  if (f.given("--max-age")) cfg["max_age"] = duration_flag(f.max_age, "--max-age");
  if (f.given("--max-msg-size")) cfg["max_msg_size"] = bytes_flag(f.max_msg_size, "--max-msg-size");
  if (f.given("--max-consumers")) cfg["max_consumers"] = f.max_consumers;
  if (f.given("--dupe-window")) cfg["duplicate_window"] = duration_flag(f.dupe_window, "--dupe-window");
  if (f.given("--replicas")) cfg["num_replicas"] = f.replicas;
  if (f.given("--allow-rollup")) cfg["allow_rollup_hdrs"] = f.allow_rollup;
  if (f.given("--deny-delete")) cfg["deny_delete"] = f.deny_delete;
  if (f.given("--deny-purge")) cfg["deny_purge"] = f.deny_purge;
  if (f.given("--allow-direct")) cfg["allow_direct"] = f.allow_direct;
  if (f.given("--allow-batch")) cfg["allow_atomic"] = f.allow_batch;
  if (f.given("--allow-msg-ttl")) cfg["allow_msg_ttl"] = true;
  if (f.given("--transform-source") || f.given("--transform-destination")) {
    if (f.transform_dest.empty()) throw cli_error("--transform-destination is required with --transform-source");
    cfg["subject_transform"] = {{"src", f.transform_src.empty() ? ">" : f.transform_src}, {"dest", f.transform_dest}};
  }
  if (f.given("--republish-source") || f.given("--republish-destination")) {
    if (f.republish_dest.empty()) throw cli_error("--republish-destination is required with --republish-source");
    cfg["republish"] = {{"src", f.republish_src.empty() ? ">" : f.republish_src}, {"dest", f.republish_dest}};
    if (f.republish_headers) cfg["republish"]["headers_only"] = true;
  } else if (f.given("--republish-headers") && cfg.contains("republish")) {
    cfg["republish"]["headers_only"] = f.republish_headers;
  }
  if (f.no_republish) cfg.erase("republish");
}

// natscli's defaults for a new stream (it asks for each; --defaults or a given flag skips that).
ordered_json new_stream_config(const std::string& name) {
  return {{"name", name},
          {"retention", "limits"},
          {"max_consumers", -1},
          {"max_msgs", -1},
          {"max_bytes", -1},
          {"max_age", 0},
          {"max_msgs_per_subject", -1},
          {"max_msg_size", -1},
          {"discard", "old"},
          {"storage", "file"},
          {"num_replicas", 1},
          {"duplicate_window", 120'000'000'000},
          {"allow_direct", true},
          {"deny_delete", false},
          {"deny_purge", false},
          {"allow_rollup_hdrs", false}};
}

void show_info(const ordered_json& reply, bool json) {
  if (json) print_json(reply);
  else std::printf("%s", stream_info_text(reply).c_str());
}

void stream_add(cli_context& ctx, const std::string& name, const stream_flags& f) {
  ordered_json cfg = new_stream_config(name);
  if (!f.mirror.empty()) cfg["mirror"] = {{"name", f.mirror}};
  for (const auto& s : f.sources) cfg["sources"].push_back({{"name", s}});
  apply_flags(f, cfg);
  ordered_json reply = ctx.connect().js_api("STREAM.CREATE." + name, cfg, "could not create Stream: ");
  if (f.json) return print_json(reply);
  std::printf("Stream %s was created\n\n", name.c_str());
  show_info(reply, false);
}

void stream_edit(cli_context& ctx, const std::string& name, const stream_flags& f) {
  client& cl = ctx.connect();
  ordered_json info = cl.js_api("STREAM.INFO." + name, nullptr, "could not request Stream info: ");
  ordered_json cfg = info["config"];
  const ordered_json before = cfg;
  apply_flags(f, cfg);
  if (cfg == before) {
    std::printf("No changes to the configuration of Stream %s\n", name.c_str());
    return;
  }
  ordered_json reply = cl.js_api("STREAM.UPDATE." + name, cfg, "could not edit Stream " + name + ": ");
  if (f.json) return print_json(reply);
  std::printf("%s\nStream %s was updated\n\n", config_diff(before, cfg).c_str(), name.c_str());
  show_info(reply, false);
}

std::vector<ordered_json> list_all(client& cl, const std::string& api, const char* key, const ordered_json& extra) {
  std::vector<ordered_json> out;
  for (int64_t offset = 0;;) {
    ordered_json req = extra;
    req["offset"] = offset;
    ordered_json reply = cl.js_api(api, req, "could not list: ");
    if (!reply.contains(key) || !reply[key].is_array() || reply[key].empty()) break;
    for (auto& s : reply[key]) out.push_back(s);
    offset = static_cast<int64_t>(out.size());
    if (offset >= reply.value("total", int64_t{0})) break;
  }
  return out;
}

}  // namespace

void add_stream_commands(CLI::App& app, cli_context& ctx) {
  CLI::App* stream = app.add_subcommand("stream", "JetStream stream management")->require_subcommand(1);
  stream->alias("str");

  auto add_flags = std::make_shared<stream_flags>();
  auto add_name = std::make_shared<std::string>();
  CLI::App* add = stream->add_subcommand("add", "create a new stream")->alias("create");
  add->add_option("name", *add_name, "stream name")->required();
  add_config_flags(add, *add_flags);
  add->add_option("--mirror", add_flags->mirror, "mirror this stream (no subjects of its own)");
  add->add_option("--source", add_flags->sources, "source messages from this stream (repeatable)")->allow_extra_args(false);
  add->add_flag("--defaults", add_flags->defaults, "accept the defaults for everything not given (never asks)");
  add->callback([&ctx, add_flags, add_name] { stream_add(ctx, *add_name, *add_flags); });

  auto edit_flags = std::make_shared<stream_flags>();
  auto edit_name = std::make_shared<std::string>();
  CLI::App* edit = stream->add_subcommand("edit", "change a stream's configuration")->alias("update");
  edit->add_option("name", *edit_name, "stream name")->required();
  add_config_flags(edit, *edit_flags);
  edit->callback([&ctx, edit_flags, edit_name] { stream_edit(ctx, *edit_name, *edit_flags); });

  auto info_name = std::make_shared<std::string>();
  auto info_json = std::make_shared<bool>(false);
  CLI::App* info = stream->add_subcommand("info", "stream configuration and state");
  info->add_option("name", *info_name, "stream name")->required();
  info->add_flag("--json", *info_json, "print the server's JSON reply");
  info->callback([&ctx, info_name, info_json] {
    show_info(ctx.connect().js_api("STREAM.INFO." + *info_name, nullptr, "could not request Stream info: "), *info_json);
  });

  auto ls_names = std::make_shared<bool>(false);
  auto ls_json = std::make_shared<bool>(false);
  auto ls_subject = std::make_shared<std::string>();
  CLI::App* ls = stream->add_subcommand("ls", "list streams")->alias("list");
  ls->add_flag("-n,--names", *ls_names, "names only");
  ls->add_flag("--json", *ls_json, "print the server's JSON");
  ls->add_option("--subject", *ls_subject, "only streams holding this subject");
  ls->callback([&ctx, ls_names, ls_json, ls_subject] {
    ordered_json extra = ordered_json::object();
    if (!ls_subject->empty()) extra["subject"] = *ls_subject;
    const auto streams = list_all(ctx.connect(), "STREAM.LIST", "streams", extra);
    if (*ls_json) {
      ordered_json arr = ordered_json::array();
      for (const auto& s : streams) arr.push_back(*ls_names ? s["config"]["name"] : s);
      return print_json(arr);
    }
    if (*ls_names) {
      for (const auto& s : streams) std::printf("%s\n", s["config"]["name"].get<std::string>().c_str());
      return;
    }
    if (streams.empty()) {
      std::printf("No Streams defined\n");
      return;
    }
    std::vector<std::vector<std::string>> rows;
    for (const auto& s : streams) {
      const auto& st = s["state"];
      std::string created, last;
      if (auto t = parse_rfc3339(s.value("created", std::string()))) created = short_time(*t);
      if (st.value("messages", 0) > 0)
        if (auto t = parse_rfc3339(st.value("last_ts", std::string()))) last = human_duration(now_ns() - *t);
      rows.push_back({s["config"]["name"].get<std::string>(), s["config"].value("description", std::string()), created,
                      comma(st.value("messages", int64_t{0})), ibytes(st.value("bytes", uint64_t{0})), last});
    }
    std::printf("%s", box_table("Streams", {"Name", "Description", "Created", "Messages", "Size", "Last Message"}, rows).c_str());
  });

  auto rm_name = std::make_shared<std::string>();
  CLI::App* rm = stream->add_subcommand("rm", "delete a stream and all its messages")->alias("delete");
  rm->add_option("name", *rm_name, "stream name")->required();
  rm->add_flag("-f,--force")->description("do not ask for confirmation (the CLI never asks)");
  rm->callback([&ctx, rm_name] {
    ctx.connect().js_api("STREAM.DELETE." + *rm_name, nullptr, "could not remove Stream: ");
  });

  add_stream_message_commands(*stream, ctx);
}

}  // namespace peregrine::cli
