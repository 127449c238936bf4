// /jsz for the HTTP monitor: nats-server's JSInfo (config, usage, api counters, totals) and,
// when asked, account_details with stream_detail / consumer_detail. Runs on JetStream's
// thread (the monitor asks over dispatcher::call_on_shard), so it reads streams directly.
#include <fmt/format.h>

#include <algorithm>
#include <tuple>

#include "src/core/monitor_query.h"
#include "src/js/cluster_streams.h"
#include "src/js/consumer_agent.h"
#include "src/js/consumer_thread.h"
#include "src/js/jetstream_service.h"
#include "src/js/json_util.h"
#include "src/js/stream.h"

namespace js {
namespace {
// A true option in Go's spellings (no "detail": that is connz's).
bool truthy(const std::map<std::string, std::string>& q, const char* key) {
  auto it = q.find(key);
  return it != q.end() && core::go_bool(it->second).value_or(false);
}

// nats-server's name of a stream's Raft group ("S-R3F-<hash>"), here from the group id.
std::string stream_raft_group(const cluster_streams::monitor_entry& e) {
  static constexpr char kDigits[] = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
  std::string hash;
  for (std::uint64_t v = e.group_id; hash.size() < 8; v /= 62) hash += kDigits[v % 62];
  return fmt::format("S-R{}{}-{}", e.replicas, e.memory ? 'M' : 'F', hash);
}
}  // namespace

bool jetstream::monitor_jsz(const std::map<std::string, std::string>& q, ojson& out) {
  const auto& o = _host->options();
  const bool streams = truthy(q, "streams") || truthy(q, "consumers") || truthy(q, "config");
  const bool accounts = truthy(q, "accounts") || streams;
  const bool consumers = truthy(q, "consumers");
  const bool config = truthy(q, "config");
  const bool raft = truthy(q, "raft");
  std::uint64_t mem = 0, file = 0, messages = 0, bytes = 0, consumer_total = 0;
  ojson stream_details = ojson::array();
  // In a cluster an R1 stream's cluster object names the cluster too, as nats-server's.
  core::cluster_replication* repl = _host->replication();
  const core::meta_status meta = repl ? repl->meta() : core::meta_status{};
  for (auto& [name, g] : _streams) {
    stream* s = &g->get_stream();
    const ojson state = s->state_json(false, nullptr);
    const std::uint64_t b = state.value("bytes", std::uint64_t{0});
    (s->config().storage == storage_type::memory ? mem : file) += b;
    bytes += b;
    messages += state.value("messages", std::uint64_t{0});
    const std::size_t nc = g->consumers().size();
    consumer_total += nc;
    if (!streams) continue;
    ojson d;
    d["name"] = name;
    d["created"] = base::rfc3339_nano(s->created());
    d["cluster"] = meta.cluster.empty() ? ojson{{"leader", _host->server_name()}}
                                        : ojson{{"name", meta.cluster}, {"leader", _host->server_name()}};
    if (config) d["config"] = to_json(s->config(), false);
    d["state"] = state;
    if (consumers && nc > 0) {
      ojson list = ojson::array();
      for (auto& [cname, agent] : g->consumers()) {
        ojson info = agent->info_json(now());
        info.erase("type");
        info.erase("ts");
        if (!config) info.erase("config");
        list.push_back(std::move(info));
      }
      d["consumer_detail"] = std::move(list);
    }
    stream_details.push_back(std::move(d));
  }
  // The replicated streams this server holds a replica of, counted as nats-server counts them
  // on every member; ha_assets is its count of Raft nodes here (the meta group's and theirs).
  std::size_t stream_total = _streams.size();
  std::uint64_t ha_assets = 0;
  if (_cluster) {
    ha_assets = meta.running ? 1 : 0;
    for (auto& e : _cluster->monitor_streams(now(), streams)) {
      (e.memory ? mem : file) += e.bytes;
      bytes += e.bytes;
      messages += e.messages;
      ++stream_total;
      ++ha_assets;
      if (!streams) continue;
      ojson d;
      d["name"] = e.name;
      d["created"] = base::rfc3339_nano(e.created_ns);
      d["cluster"] = std::move(e.cluster);
      if (config) d["config"] = std::move(e.config);
      d["state"] = std::move(e.state);
      if (raft) d["stream_raft_group"] = stream_raft_group(e);  // no replicated consumers yet
      stream_details.push_back(std::move(d));
    }
  }
  ojson cfg;
  cfg["max_memory"] = o.max_memory_store;
  cfg["max_storage"] = o.max_file_store;
  cfg["store_dir"] = o.store_dir + "/jetstream";
  if (!_domain.empty()) cfg["domain"] = _domain;
  out = ojson::object();
  out["config"] = cfg;
  out["memory"] = mem;
  out["storage"] = file;
  out["reserved_memory"] = 0;
  out["reserved_storage"] = 0;
  out["accounts"] = _owners->accounts;
  out["ha_assets"] = ha_assets;
  // The API counters are the hub's (it counts what it forwards; errors summed over the
  // owners); with several owners the other parts carry zeros and merge_jsz adds them up.
  std::uint64_t api_total = 0, api_errors = 0;
  if (is_hub()) {
    api_total = _api_total.load();
    for (const auto& slot : _owners->slots) api_errors += slot->js->_api_errors.load(std::memory_order_relaxed);
  }
  out["api"] = ojson{{"total", api_total}, {"errors", api_errors}};
  out["streams"] = stream_total;
  out["consumers"] = consumer_total;
  out["messages"] = messages;
  out["bytes"] = bytes;
  if (accounts) {
    ojson acc;
    acc["name"] = account();
    acc["id"] = account();
    acc["memory"] = mem;
    acc["storage"] = file;
    acc["reserved_memory"] = 0;
    acc["reserved_storage"] = 0;
    acc["accounts"] = 0;
    acc["ha_assets"] = 0;
    acc["api"] = ojson{{"total", api_total}, {"errors", api_errors}};
    if (streams && !stream_details.empty()) acc["stream_detail"] = std::move(stream_details);
    out["account_details"] = ojson::array({std::move(acc)});
  }
  return true;
}

// Adds up the parts (one per owner thread and account): counters and sizes summed, the
// accounts' details merged by name (accounts in name order, streams in name order).
void jetstream::merge_jsz(std::vector<ojson> parts, ojson& out) const {
  if (parts.empty()) return;
  out = std::move(parts.front());
  auto add = [](ojson& to, const ojson& from, const char* key) {
    if (from.contains(key) && to.contains(key)) to[key] = to[key].get<std::uint64_t>() + from[key].get<std::uint64_t>();
  };
  static const char* kSums[] = {"memory", "storage", "ha_assets", "streams", "consumers", "messages", "bytes"};
  for (std::size_t i = 1; i < parts.size(); ++i) {
    const ojson& p = parts[i];
    for (const char* k : kSums) add(out, p, k);
    for (const char* k : {"total", "errors"}) add(out["api"], p.at("api"), k);
    if (!out.contains("account_details") || !p.contains("account_details")) continue;
    for (const ojson& pacc : p.at("account_details")) {
      ojson* acc = nullptr;
      for (ojson& a : out["account_details"])
        if (a.value("name", std::string()) == pacc.value("name", std::string())) acc = &a;
      if (!acc) {
        out["account_details"].push_back(pacc);
        continue;
      }
      for (const char* k : {"memory", "storage"}) add(*acc, pacc, k);
      for (const char* k : {"total", "errors"}) add((*acc)["api"], pacc.at("api"), k);
      if (pacc.contains("stream_detail"))
        for (const auto& d : pacc.at("stream_detail")) (*acc)["stream_detail"].push_back(d);
    }
  }
  if (!out.contains("account_details")) return;
  auto by_name = [](const ojson& a, const ojson& b) {
    return a.value("name", std::string()) < b.value("name", std::string());
  };
  std::vector<ojson> accounts(out["account_details"].begin(), out["account_details"].end());
  std::sort(accounts.begin(), accounts.end(), by_name);
  for (ojson& acc : accounts) {
    if (!acc.contains("stream_detail")) continue;
    std::vector<ojson> v(acc["stream_detail"].begin(), acc["stream_detail"].end());
    std::sort(v.begin(), v.end(), by_name);
    acc["stream_detail"] = ojson(v);
  }
  out["account_details"] = ojson(accounts);
}

void jetstream::monitor_metrics(std::string& out) {
  auto family = [&](const char* name, const char* type, const char* help) {
    out += fmt::format("# HELP {} {}\n# TYPE {} {}\n", name, help, name, type);
  };
  family("peregrine_jetstream_owner_messages_total", "counter",
         "API requests and pulls this JetStream owner thread handled (its own subscriptions, and requests the control plane forwarded to it).");
  out += fmt::format("peregrine_jetstream_owner_messages_total{{owner=\"{}\"}} {}\n", _index,
                     _msgs_in.load(std::memory_order_relaxed));
  if (_index == 0 && !_owners->consumer_threads.empty()) {
    family("peregrine_jetstream_consumer_thread_messages_total", "counter",
           "Acks, flow-control answers and pulls the consumers on this consumer thread received.");
    for (std::size_t i = 0; i < _owners->consumer_threads.size(); ++i)
      out += fmt::format("peregrine_jetstream_consumer_thread_messages_total{{account=\"{}\",thread=\"{}\"}} {}\n",
                         account(), i, _owners->consumer_threads[i]->messages_in());
  }
  family("peregrine_stream_messages", "gauge", "Messages stored in the stream.");
  for (auto& [name, g] : _streams)
    out += fmt::format("peregrine_stream_messages{{stream=\"{}\"}} {}\n", name,
                       g->get_stream().state_json(false, nullptr).value("messages", std::uint64_t{0}));
  family("peregrine_stream_bytes", "gauge", "Bytes stored in the stream.");
  for (auto& [name, g] : _streams)
    out += fmt::format("peregrine_stream_bytes{{stream=\"{}\"}} {}\n", name, g->get_stream().bytes());
  auto histogram = [&](const char* name, const std::string& labels, const base::latency_histogram& h) {
    std::uint64_t cumulative = 0;
    for (int i = 0; i < base::latency_histogram::kBuckets; ++i) {
      cumulative += h.bucket(i);
      out += fmt::format("{}_bucket{{{},le=\"{}\"}} {}\n", name, labels, base::latency_histogram::bound_seconds(i),
                         cumulative);
    }
    out += fmt::format("{}_bucket{{{},le=\"+Inf\"}} {}\n", name, labels, h.count());
    out += fmt::format("{}_sum{{{}}} {}\n", name, labels, h.sum_seconds());
    out += fmt::format("{}_count{{{}}} {}\n", name, labels, h.count());
  };
  family("peregrine_stream_write_stalls_total", "counter",
         "Times a PubAck waited over 500 ms for its write to become durable (the server also logs a warning).");
  for (auto& [name, g] : _streams)
    out += fmt::format("peregrine_stream_write_stalls_total{{stream=\"{}\"}} {}\n", name, g->get_stream().write_stalls());
  family("peregrine_stream_puback_latency_seconds", "histogram",
         "From a publish reaching the stream to its PubAck leaving (includes the wait for the durability point).");
  for (auto& [name, g] : _streams)
    histogram("peregrine_stream_puback_latency_seconds", fmt::format("stream=\"{}\"", name),
              g->get_stream().puback_latency());
  struct consumer_series {
    const char* name;
    const char* field;
    const char* help;
  };
  static const consumer_series kSeries[] = {
      {"peregrine_consumer_num_pending", "num_pending", "Stream messages the consumer has not delivered yet."},
      {"peregrine_consumer_num_ack_pending", "num_ack_pending", "Deliveries waiting for an ack."},
      {"peregrine_consumer_num_redelivered", "num_redelivered", "Messages delivered more than once."},
      {"peregrine_consumer_num_waiting", "num_waiting", "Pull requests waiting."},
  };
  std::vector<std::tuple<std::string, std::string, ojson>> infos;
  for (auto& [sname, g] : _streams)
    for (auto& [cname, agent] : g->consumers()) infos.emplace_back(sname, cname, agent->info_json(now()));
  for (const auto& series : kSeries) {
    family(series.name, "gauge", series.help);
    for (const auto& [sname, cname, info] : infos)
      out += fmt::format("{}{{stream=\"{}\",consumer=\"{}\"}} {}\n", series.name, sname, cname,
                         info.value(series.field, std::uint64_t{0}));
  }
  family("peregrine_consumer_ack_latency_seconds", "histogram",
         "From a delivery (or its last +WPI) to its ack, per acked message.");
  for (auto& [sname, g] : _streams)
    for (auto& [cname, agent] : g->consumers())
      histogram("peregrine_consumer_ack_latency_seconds", fmt::format("stream=\"{}\",consumer=\"{}\"", sname, cname),
                agent->ack_latency());
}

}  // namespace js
