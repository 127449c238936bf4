#pragma once
// What a stream group (and the stream and consumers inside it) sees of the world: the narrow
// host interface of issue 10. A group never sees the JetStream hub; the hub (or a test's
// fake) implements this for the thread that owns the group.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "src/base/clock.h"
#include "src/core/service.h"
#include "src/js/api_errors.h"
#include "src/js/stream_config.h"

namespace js {

using ojson = nlohmann::ordered_json;
class stream_group;
class consumer_thread;
struct consumer_config;

class group_host {
 public:
  virtual ~group_host() = default;
  // Internal subscriptions (0 = invalid subject) and what the server publishes.
  virtual std::uint64_t subscribe(std::string_view subject, std::string_view queue, core::internal_handler* h) = 0;
  // The same, announced to the cluster's routes: a mirror's or source's deliver and reply
  // subjects, which the origin's consumer leader on another server publishes to.
  virtual std::uint64_t subscribe_cluster(std::string_view subject, core::internal_handler* h) {
    return subscribe(subject, {}, h);
  }
  virtual void unsubscribe(std::uint64_t id) = 0;
  virtual void publish(std::string_view subject, std::string_view reply, std::string_view headers,
                       std::string_view payload) = 0;
  // To the subscribers of `to`, shown with `subject` (consumer deliveries).
  virtual void deliver(std::string_view to, std::string_view subject, std::string_view reply,
                       std::string_view headers, std::string_view payload) = 0;
  virtual bool has_interest(std::string_view subject) = 0;
  virtual const base::clock& clk() const = 0;
  // An eventfd that wakes the owner thread's loop (store and state-writer completions); -1
  // when there is none, and then a group keeps reporting work while it waits for the disk.
  virtual int wake_eventfd() = 0;
  // Group `g` needs its poll soon (a message arrived; an API call changed it). Called by
  // the group's entry point; members never need it.
  virtual void wake(stream_group& g) = 0;
  virtual const std::string& domain() const = 0;
  // The account the group's JetStream serves (advisories name it).
  virtual const std::string& account() const {
    static const std::string global = "$G";
    return global;
  }
  virtual const std::string& server_name() const = 0;
  virtual const core::server_options& options() const = 0;
  // Server-wide accounting: each group publishes the change of its stored bytes (a counter
  // per storage type, no loop over the streams), and the host answers whether the bytes
  // stored in `t` exceed the server's limit.
  virtual void report_usage(storage_type t, std::int64_t delta) = 0;
  virtual bool storage_exhausted(storage_type t) const = 0;
  // The account's limit for `t` (accounts { A { jetstream { max_memory, max_file } } }): a
  // message of `size` stored bytes that would take the account over it (nats-server 2.9:
  // 10002 "resource limits exceeded for account"); nullopt when it fits.
  virtual std::optional<api_error> account_limit_error(storage_type t, std::uint64_t size) const {
    (void)t;
    (void)size;
    return std::nullopt;
  }
  // Open fast-ingest batches across every stream (the server-wide limit).
  virtual std::size_t* fast_batch_counter() = 0;
  // --consumer_threads: the thread a new consumer `c` of the group runs on, or null (on the
  // owner, as always without consumer threads).
  virtual consumer_thread* pick_consumer_thread(const consumer_config& c) {
    (void)c;
    return nullptr;
  }
  // Runs `fn` on the owner thread at its next turn; callable from any thread (a consumer
  // thread waking its group).
  virtual void post_to_owner(std::function<void()> fn) { fn(); }
  // Each consumer subscribes its own CONSUMER.MSG.NEXT (with consumer threads: neither the
  // hub nor an owner subscribes pulls by pattern, so a pull reaches only its consumer).
  virtual bool consumers_subscribe_pulls() const { return false; }

  std::int64_t now() const { return clk().wall_ns(); }
  // Advisory/event JSON {type,id,timestamp,<body>,domain} on `subject` when someone listens;
  // a short type is an advisory's ("nak" -> io.nats.jetstream.advisory.v1.nak).
  void publish_event(const std::string& subject, std::string_view type, const ojson& body);
};

// A NUID-like random name from [0-9A-Za-z] (event ids, ephemeral consumer names).
std::string random_name(std::size_t n);

}  // namespace js
