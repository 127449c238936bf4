#pragma once
// One stream group: a stream, its store, its consumers' agents and their state, as one unit
// owned by one thread. The group sees the world only through its owner's group_host
// (subscribe, publish, deliver, now, wake); its stream and consumers see the group as their
// host. Every message that reaches a member passes the group's entry point, which marks the
// group active so its owner polls it (groups without work are not polled; their timers wait
// in the owner's deadline heap). Retention (interest, work queue) and interest checks are
// group members: a consumer only releases, the group decides.
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "src/base/owner_check.h"
#include "src/js/active_set.h"
#include "src/js/consumer_agent.h"
#include "src/js/consumer_link.h"
#include "src/js/group_host.h"
#include "src/js/stream.h"

namespace js {

class stream_group final : public group_host, public stream_events, public release_sink, public active_member {
 public:
  static constexpr std::int64_t kNever = stream::kNever;

  // The store is the stream's (already opened); `owner` outlives the group.
  stream_group(group_host& owner, stream_config cfg, std::int64_t created, std::string dir,
               std::unique_ptr<storage::stream_store> store);
  ~stream_group() override;

  js::stream& get_stream() { return *_stream; }
  const js::stream& get_stream() const { return *_stream; }
  const std::string& name() const { return _stream->config().name; }

  // ---- consumers
  // A new agent in this group (not started); `state_dir` empty = nothing persisted.
  consumer_agent& add_consumer(const consumer_config& cfg, std::int64_t created, std::string state_dir,
                               std::int64_t now);
  consumer_agent* find_consumer(std::string_view name);
  // Removes the agent from the group (nothing else); the caller retires it.
  std::unique_ptr<consumer_agent> take_consumer(std::string_view name);
  // A taken consumer's end: 409s to its waiting pulls, unsubscribed; it lives until the next
  // poll (its deletion may run inside one of its own calls). Interest retention drops what
  // only it needed.
  void retire_consumer(std::unique_ptr<consumer_agent> c);
  // Every consumer goes (the stream is deleted): deleted, state writes awaited.
  void delete_consumers();
  const std::map<std::string, std::unique_ptr<consumer_agent>, std::less<>>& consumers() const { return _consumers; }
  // A snapshot to iterate while handlers may add or remove consumers.
  std::vector<consumer_agent*> consumer_list() const;
  // Consumers the machines asked to delete (inactive ephemerals), taken by the owner.
  std::vector<std::string> take_expired() { return std::move(_expired); }
  // Work-queue rules for a consumer `self` is creating or updating (10099 / 10100 / 10101 / 10098).
  std::optional<api_error> check_workqueue(const consumer_config& c, const std::string& self) const;
  // Interest retention: removes every stored message no consumer still needs (after a
  // consumer is deleted, or when an update switches the stream from limits to interest);
  // work queue: every message a matching consumer no longer needs.
  void drop_unneeded();
  // The remote consumers' requests in their rings are applied now (their releases: a
  // STREAM.INFO after an ack sync sees what the ack removed).
  void settle_remote();
  // The owner restored every consumer (startup): interest and work-queue retention drop what
  // the restored states no longer need. A crash can bring back a removal that was not yet
  // durable while a consumer's snapshot kept the ack that caused it.
  void consumers_restored();

  // ---- the owner's side
  // Store completions, PubAcks, expiry, consumer timers and persistence; returns work done.
  std::size_t poll(std::int64_t now);
  // Whether the next turn must poll the group again (PubAcks or ack replies wait for the
  // disk, the last poll did work) rather than wait for its next_wakeup.
  bool busy(std::int64_t now) const;
  // Earliest wall time of timed work (kNever = none).
  std::int64_t next_wakeup(std::int64_t now) const;
  // Server stopping: 409 Server Shutdown to waiting pulls, consumer state flushed (with
  // `batch`: added to it, and finish_shutdown after the batch was written).
  void shutdown_consumers(std::vector<storage::snapshot_file>* batch = nullptr);
  void finish_shutdown(const std::vector<storage::snapshot_file>& batch);

  // ---- stream_events
  void on_stored(std::uint64_t seq, std::string_view subject) override;
  bool consumer_wants(std::string_view subject) override;
  void on_removed(const std::vector<std::uint64_t>& seqs) override;
  std::size_t consumer_count() const override;
  // ---- release_sink: limits retention keeps the message; interest drops it once no
  // consumer needs it; work queue drops it at once.
  void on_released(std::uint64_t seq) override;

  // ---- group_host, for the members: forwarded to the owner; subscriptions go through the
  // group's entry point.
  std::uint64_t subscribe(std::string_view subject, std::string_view queue, core::internal_handler* h) override;
  std::uint64_t subscribe_cluster(std::string_view subject, core::internal_handler* h) override;
  void unsubscribe(std::uint64_t id) override { _owner.unsubscribe(id); }
  void publish(std::string_view subject, std::string_view reply, std::string_view headers,
               std::string_view payload) override {
    _owner.publish(subject, reply, headers, payload);
  }
  void deliver(std::string_view to, std::string_view subject, std::string_view reply, std::string_view headers,
               std::string_view payload) override {
    _owner.deliver(to, subject, reply, headers, payload);
  }
  bool has_interest(std::string_view subject) override { return _owner.has_interest(subject); }
  const base::clock& clk() const override { return _owner.clk(); }
  int wake_eventfd() override { return _owner.wake_eventfd(); }
  void wake(stream_group& g) override { _owner.wake(g); }
  const std::string& domain() const override { return _owner.domain(); }
  const std::string& server_name() const override { return _owner.server_name(); }
  const core::server_options& options() const override { return _owner.options(); }
  void report_usage(storage_type t, std::int64_t delta) override { _owner.report_usage(t, delta); }
  bool storage_exhausted(storage_type t) const override { return _owner.storage_exhausted(t); }
  std::optional<api_error> account_limit_error(storage_type t, std::uint64_t size) const override {
    return _owner.account_limit_error(t, size);
  }
  // The stored bytes last reported to the owner.
  std::int64_t reported_bytes() const { return _reported_bytes; }
  std::size_t* fast_batch_counter() override { return _owner.fast_batch_counter(); }

  // A message for a member outside a subscription (a pull request the owner routed here).
  void enter() {
    if (!queued) _owner.wake(*this);
  }

 private:
  // The entry point in front of one member's handler.
  class entry final : public core::internal_handler {
   public:
    entry(stream_group& g, core::internal_handler* h) : _g(g), _h(h) {}
    void on_msg(const core::inbound_msg& m) override {
      PG_ASSERT_OWNER(_g._thread);  // publishes, acks and pulls arrive on the owner's thread
      _g.enter();
      _h->on_msg(m);
    }

   private:
    stream_group& _g;
    core::internal_handler* _h;
  };

  // Publishes the change of the stream's stored bytes since the last report.
  void account();

  // A consumer on a consumer thread: the owner's end of its link (consumer_thread.h).
  struct remote_consumer {
    consumer_agent* agent;
    consumer_thread* thread;
    std::shared_ptr<consumer_link> link;
    bool notify = false;  // entries went out this turn: wake the consumer thread at the poll
    bool expired_seen = false;
  };
  bool runs_remote(const consumer_config& cfg) const;
  remote_consumer* remote_of(const consumer_agent* c);
  void unlink(const consumer_agent* c);  // the agent leaves its consumer thread
  std::size_t pump_remote(remote_consumer& r);
  void apply_released(consumer_link& l, const feed_request& req);
  // Interest retention: the local agent's machine, or the owner's picture of a remote one.
  bool still_needs(const consumer_agent& c, std::uint64_t seq) const;
  static bool matches(const consumer_agent& c, std::string_view subject);
  void feed_stored(std::uint64_t seq, std::string_view subject);
  void feed_removed(const std::vector<std::uint64_t>& seqs);

  group_host& _owner;
  base::thread_owner _thread;  // debug builds: entry points run on the owner thread
  std::size_t _last_work = 0;
  std::int64_t _reported_bytes = 0;
  // Declared before the stream: the stream's subscriptions point at them.
  std::unordered_map<core::internal_handler*, std::unique_ptr<entry>> _entries;
  std::unique_ptr<js::stream> _stream;
  std::map<std::string, std::unique_ptr<consumer_agent>, std::less<>> _consumers;
  std::vector<std::unique_ptr<consumer_agent>> _retired;
  std::vector<consumer_agent*> _poll_list;
  std::vector<std::string> _expired;
  std::vector<remote_consumer> _remote;
};

}  // namespace js
