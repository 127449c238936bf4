// `peregrine kv add|put|get|del|ls|rm|info`: key/value buckets as JetStream streams KV_<bucket>
// on $KV.<bucket>.<key>, laid out as the nats clients lay them out.
#include <map>

#include "src/cli/commands.h"

namespace peregrine::cli {
namespace {

struct kv_args {
  std::string bucket, key, value, ttl, storage = "file", max_value_size = "-1", max_bucket_size = "-1";
  int64_t history = 1;
  int replicas = 1;
  bool raw = false, json = false;
};

void check_name(const std::string& s, const char* what) {
  if (s.empty() || s.find_first_of(" \t.*>") != std::string::npos) throw cli_error(std::string("invalid ") + what + ": " + s);
}

// The key's latest entry ({} when the key was never written or the last entry removed it).
ordered_json last_entry(client& cl, const std::string& bucket, const std::string& key) {
  ordered_json reply = cl.js_api_raw("STREAM.MSG.GET.KV_" + bucket, ordered_json{{"last_by_subj", "$KV." + bucket + "." + key}}.dump());
  if (reply.contains("error")) {
    if (reply["error"].value("err_code", 0) == 10037) return ordered_json::object();
    throw_api_error(reply, "");
  }
  const ordered_json& m = reply["message"];
  const std::string hdrs = base64_decode(m.value("hdrs", std::string())).value_or("");
  if (hdrs.find("KV-Operation: DEL") != std::string::npos || hdrs.find("KV-Operation: PURGE") != std::string::npos ||
      hdrs.find("KV-Operation:DEL") != std::string::npos || hdrs.find("KV-Operation:PURGE") != std::string::npos)
    return ordered_json::object();
  return m;
}

void publish(client& cl, const std::string& subject, const std::string& value, const char* op) {
  natsMsg* m = nullptr;
  if (natsMsg_Create(&m, subject.c_str(), nullptr, value.data(), static_cast<int>(value.size())) != NATS_OK)
    throw cli_error("invalid key subject " + subject);
  msg_ptr guard(m);
  if (op != nullptr) natsMsgHeader_Set(m, "KV-Operation", op);
  msg_ptr reply = cl.request(m);
  const std::string data = payload_of(reply.get());
  ordered_json ack = ordered_json::parse(data, nullptr, false);
  if (ack.is_discarded()) throw cli_error("invalid PubAck: " + data);
  throw_api_error(ack, "");
}

}  // namespace

void add_kv_commands(CLI::App& app, cli_context& ctx) {
  CLI::App* kv = app.add_subcommand("kv", "key/value buckets")->require_subcommand(1);
  auto a = std::make_shared<kv_args>();

  CLI::App* add = kv->add_subcommand("add", "create a bucket")->alias("create");
  add->add_option("bucket", a->bucket, "bucket name")->required();
  add->add_option("--history", a->history, "values kept per key")->check(CLI::Range(int64_t{1}, int64_t{64}));
  add->add_option("--ttl", a->ttl, "how long values live, e.g. 1h");
  add->add_option("--storage", a->storage, "storage backend")->check(CLI::IsMember({"file", "memory"}));
  add->add_option("--replicas", a->replicas, "replicas")->check(CLI::Range(1, 5));
  add->add_option("--max-value-size", a->max_value_size, "largest value, e.g. 1MiB");
  add->add_option("--max-bucket-size", a->max_bucket_size, "largest bucket, e.g. 1GiB");
  add->add_flag("--json", a->json, "print the server's JSON reply");
  add->callback([&ctx, a] {
    check_name(a->bucket, "bucket name");
    const int64_t ttl = a->ttl.empty() ? 0 : parse_duration(a->ttl).value_or(-1);
    if (ttl < 0) throw cli_error("invalid --ttl: " + a->ttl);
    const auto vsize = parse_bytes(a->max_value_size), bsize = parse_bytes(a->max_bucket_size);
    if (!vsize || !bsize) throw cli_error("invalid size");
    ordered_json cfg = {{"name", "KV_" + a->bucket}, {"subjects", {"$KV." + a->bucket + ".>"}},
                        {"retention", "limits"}, {"max_consumers", -1}, {"max_msgs", -1}, {"max_bytes", *bsize},
                        {"max_age", ttl}, {"max_msgs_per_subject", a->history}, {"max_msg_size", *vsize},
                        {"discard", "new"}, {"storage", a->storage}, {"num_replicas", a->replicas},
                        {"duplicate_window", ttl > 0 && ttl < 120'000'000'000 ? ttl : 120'000'000'000},
                        {"allow_rollup_hdrs", true}, {"deny_delete", true}, {"allow_direct", true}};
    ordered_json reply = ctx.connect().js_api("STREAM.CREATE.KV_" + a->bucket, cfg, "could not create bucket: ");
    if (a->json) return print_json(reply);
    std::printf("Created bucket %s (history %lld, storage %s)\n", a->bucket.c_str(), static_cast<long long>(a->history),
                a->storage.c_str());
  });

  CLI::App* put = kv->add_subcommand("put", "store a value");
  put->add_option("bucket", a->bucket, "bucket name")->required();
  put->add_option("key", a->key, "key")->required();
  put->add_option("value", a->value, "value")->required();
  put->callback([&ctx, a] {
    publish(ctx.connect(), "$KV." + a->bucket + "." + a->key, a->value, nullptr);
    std::printf("%s\n", a->value.c_str());
  });

  CLI::App* get = kv->add_subcommand("get", "read a key's value");
  get->add_option("bucket", a->bucket, "bucket name")->required();
  get->add_option("key", a->key, "key")->required();
  get->add_flag("--raw", a->raw, "value only");
  get->callback([&ctx, a] {
    const ordered_json m = last_entry(ctx.connect(), a->bucket, a->key);
    if (m.empty()) throw cli_error("nats: key not found");
    const std::string value = base64_decode(m.value("data", std::string())).value_or("");
    if (a->raw) {
      std::printf("%s\n", value.c_str());
      return;
    }
    std::printf("%s > %s revision: %llu created @ %s\n\n%s\n", a->bucket.c_str(), a->key.c_str(),
                static_cast<unsigned long long>(m.value("seq", uint64_t{0})),
                short_time(parse_rfc3339(m.value("time", std::string())).value_or(0)).c_str(), value.c_str());
  });

  CLI::App* del = kv->add_subcommand("del", "delete a key (its history stays until purged)");
  del->add_option("bucket", a->bucket, "bucket name")->required();
  del->add_option("key", a->key, "key")->required();
  del->add_flag("-f,--force")->description("do not ask for confirmation (the CLI never asks)");
  del->callback([&ctx, a] { publish(ctx.connect(), "$KV." + a->bucket + "." + a->key, "", "DEL"); });

  CLI::App* ls = kv->add_subcommand("ls", "list buckets, or the keys of a bucket");
  ls->add_option("bucket", a->bucket, "bucket name");
  ls->callback([&ctx, a] {
    client& cl = ctx.connect();
    if (a->bucket.empty()) {
      ordered_json reply = cl.js_api("STREAM.NAMES", ordered_json{{"subject", "$KV.*.>"}}, "could not list buckets: ");
      bool any = false;
      for (const auto& n : reply.value("streams", ordered_json::array())) {
        const std::string name = n.get<std::string>();
        if (name.rfind("KV_", 0) == 0) std::printf("%s\n", name.substr(3).c_str()), any = true;
      }
      if (!any) std::printf("No Key-Value buckets found\n");
      return;
    }
    ordered_json info = cl.js_api("STREAM.INFO.KV_" + a->bucket, ordered_json{{"subjects_filter", "$KV." + a->bucket + ".>"}},
                                  "could not list keys: ");
    std::map<std::string, int> keys;
    const std::string prefix = "$KV." + a->bucket + ".";
    const ordered_json subjects = info["state"].value("subjects", ordered_json::object());
    for (auto it = subjects.begin(); it != subjects.end(); ++it) {
      const std::string key = it.key().substr(prefix.size());
      if (!last_entry(cl, a->bucket, key).empty()) keys[key] = 1;
    }
    if (keys.empty()) std::printf("No keys found in bucket\n");
    for (const auto& [key, n] : keys) std::printf("%s\n", key.c_str());
  });

  CLI::App* rm = kv->add_subcommand("rm", "delete a bucket and all its values");
  rm->add_option("bucket", a->bucket, "bucket name")->required();
  rm->add_flag("-f,--force")->description("do not ask for confirmation (the CLI never asks)");
  rm->callback([&ctx, a] { ctx.connect().js_api("STREAM.DELETE.KV_" + a->bucket, nullptr, "could not remove bucket: "); });

  CLI::App* info = kv->add_subcommand("info", "bucket configuration and state")->alias("status");
  info->add_option("bucket", a->bucket, "bucket name")->required();
  info->add_flag("--json", a->json, "print the server's JSON reply");
  info->callback([&ctx, a] {
    ordered_json si = ctx.connect().js_api("STREAM.INFO.KV_" + a->bucket, nullptr, "could not load bucket: ");
    if (a->json) return print_json(si);
    const auto& c = si["config"];
    const auto& st = si["state"];
    std::vector<info_line> l = {{"", "Information for Key-Value Store Bucket " + a->bucket}};
    l.push_back({"Bucket Name", a->bucket});
    l.push_back({"History Kept", comma(c.value("max_msgs_per_subject", int64_t{1}))});
    const int64_t ttl = c.value("max_age", int64_t{0});
    l.push_back({"Values Stored", comma(st.value("messages", int64_t{0}))});
    l.push_back({"Backing Store Kind", "JetStream"});
    l.push_back({"Bucket Size", ibytes(st.value("bytes", uint64_t{0}))});
    l.push_back({"Maximum Age", ttl > 0 ? human_duration(ttl) : "unlimited"});
    l.push_back({"JetStream Stream", "KV_" + a->bucket});
    l.push_back({"Storage", c.value("storage", std::string())});
    std::printf("%s", render_lines(l).c_str());
  });
}

}  // namespace peregrine::cli
