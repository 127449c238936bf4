#pragma once
// Server-side services (JetStream, the system account's) plug into the core through this
// interface. A service runs on the thread of the dispatcher that hosts it: shard 0's, or an
// owner or consumer thread of its own (--js_threads, --consumer_threads). Its internal
// subscriptions receive messages there (from any shard, over the rings), and what it
// publishes is routed from there. It never touches sockets or other shards' state.
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "src/base/clock.h"
#include "src/core/options.h"
#include "src/shard/loop.h"

namespace core {

class cluster_replication;

// A message as an internal subscriber sees it; the views are valid only during the call.
struct inbound_msg {
  std::string_view subject;
  std::string_view reply;
  std::string_view headers;  // raw "NATS/1.0..." block or empty
  std::string_view payload;
  std::uint64_t client_id = 0;  // publishing connection, 0 for internal publishes
  // The publisher takes a 503 no-responders status (headers + no_responders in CONNECT):
  // a service that finds nothing behind the subject may answer with one.
  bool no_responders = false;
};

class internal_handler {
 public:
  virtual ~internal_handler() = default;
  virtual void on_msg(const inbound_msg& m) = 0;
};

class service_host {
 public:
  virtual ~service_host() = default;
  // Subscribes an internal handler (queue may be empty). Returns an id for unsubscribe;
  // 0 if the subject is invalid.
  virtual std::uint64_t subscribe(std::string_view subject, std::string_view queue,
                                  internal_handler* h) = 0;
  // The same, and announced to the cluster's routes (RS+), so publishes on other servers reach
  // it: a replicated stream's subjects on its leader, the cluster's internal JetStream
  // requests. No queue group.
  virtual std::uint64_t subscribe_cluster(std::string_view subject, internal_handler* h) {
    return subscribe(subject, {}, h);
  }
  virtual void unsubscribe(std::uint64_t id) = 0;
  // Publishes as the server; headers may be empty.
  virtual void publish(std::string_view subject, std::string_view reply, std::string_view headers,
                       std::string_view payload) = 0;
  // The same without a reply or headers, giving the payload up: a big reply built on a
  // worker thread goes to its one subscriber without the loop copying it (what the transport
  // can take whole). Hosts that cannot take it copy it.
  virtual void publish_owned(std::string_view subject, std::string&& payload) { publish(subject, {}, {}, payload); }
  // Publishes to the subscribers of `to` while the message carries `subject` (JetStream
  // deliveries: routed to an inbox or deliver subject, shown with the stream subject).
  virtual void deliver(std::string_view to, std::string_view subject, std::string_view reply,
                       std::string_view headers, std::string_view payload) {
    (void)subject;
    publish(to, reply, headers, payload);
  }
  // True when some subscription (client or internal) matches the subject.
  virtual bool has_interest(std::string_view subject) = 0;
  // Polled by the host's loop every turn (store completions, timers).
  virtual void add_poller(shard::poller* p) = 0;
  // An eventfd whose signal ends the host loop's idle block (register it with a storage ring so a
  // completion wakes the loop instead of the loop spinning while it waits); -1 when the
  // transport cannot watch fds, and then pollers must keep reporting work while they wait.
  virtual int wake_eventfd() = 0;
  virtual const base::clock& clk() const = 0;
  // Runs `fn` on this host's thread at its next turn; callable from any thread (the
  // several owner threads of one service talk through it).
  virtual void call(std::function<void()> fn) = 0;
  virtual const server_options& options() const = 0;
  virtual const std::string& server_id() const = 0;
  virtual const std::string& server_name() const = 0;
  // The cluster's replication (meta group state, stepdown); null when not clustered.
  virtual cluster_replication* replication() { return nullptr; }
};

class service {
 public:
  virtual ~service() = default;
  // Called once on the host's thread before the server serves clients. An error stops the
  // server.
  virtual bool start(service_host& host, std::string& error) = 0;
  // Called on the host's thread when the server stops (flush stores, persist state).
  virtual void stop() = 0;
  // HTTP monitoring (/jsz, the jetstream part of /varz), on the service's thread: fills
  // `out` as nats-server's /jsz with these query options; false when not JetStream.
  virtual bool monitor_jsz(const std::map<std::string, std::string>& query, nlohmann::ordered_json& out) {
    (void)query;
    (void)out;
    return false;
  }
  // With a service on several threads, /jsz asks each (monitor_jsz) and this adds the parts
  // up; pure (runs on the monitor's thread, reads nothing of the service).
  virtual void merge_jsz(std::vector<nlohmann::ordered_json> parts, nlohmann::ordered_json& out) const {
    if (!parts.empty()) out = std::move(parts.front());
  }
  // HTTP /metrics, on the service's thread: appends Prometheus text (per stream/consumer).
  virtual void monitor_metrics(std::string& out) { (void)out; }
};

}  // namespace core
