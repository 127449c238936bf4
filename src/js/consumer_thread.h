#pragma once
// A consumer thread (--consumer_threads N, `pg-cons-<i>`): a service on a dispatcher of its
// own that hosts consumer agents apart from their stream's owner. Each agent reads its stream
// through its consumer_link (consumer_feed over two SPSC rings); its acks and pulls are its own
// subscriptions, so routing carries them from the client's shard straight here, and its
// deliveries leave from here. The owner keeps the agent object in its group (names, counts,
// checks) and runs API calls on it here through run_sync.
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "src/base/owner_check.h"
#include "src/core/service.h"
#include "src/js/consumer_link.h"
#include "src/js/group_host.h"
#include "src/shard/loop.h"

namespace js {

class consumer_thread final : public core::service, public shard::poller, public group_host, public agent_executor {
 public:
  explicit consumer_thread(std::string account) : _account(std::move(account)) {}

  // ---- core::service
  bool start(core::service_host& host, std::string& error) override;
  void stop() override;

  // ---- shard::poller: the rings, the owners' calls, the agents' timers
  std::size_t poll(base::nanos now) override;
  base::nanos idle_limit(base::nanos now) override;

  // ---- agent_executor
  bool on_thread() const override { return std::this_thread::get_id() == _tid.load() || t_standing_in == this; }
  void run_sync(const std::function<void()>& fn) override;
  void count_message() override { _msgs_in.fetch_add(1, std::memory_order_relaxed); }
  // Acks, flow-control answers and pulls its agents received (any thread reads it).
  std::uint64_t messages_in() const { return _msgs_in.load(std::memory_order_relaxed); }

  // On the owner thread: the link's agent now lives here (wake_consumer is set).
  void adopt(std::shared_ptr<consumer_link> link);
  // On the owner thread (run_sync'd here): the link's agent leaves this thread.
  void drop(consumer_link* link);

  // ---- group_host, for the agents
  std::uint64_t subscribe(std::string_view subject, std::string_view queue, core::internal_handler* h) override {
    return _host->subscribe(subject, queue, h);
  }
  std::uint64_t subscribe_cluster(std::string_view subject, core::internal_handler* h) override {
    return _host->subscribe_cluster(subject, h);
  }
  void unsubscribe(std::uint64_t id) override { _host->unsubscribe(id); }
  void publish(std::string_view subject, std::string_view reply, std::string_view headers,
               std::string_view payload) override {
    _host->publish(subject, reply, headers, payload);
  }
  void deliver(std::string_view to, std::string_view subject, std::string_view reply, std::string_view headers,
               std::string_view payload) override {
    _host->deliver(to, subject, reply, headers, payload);
  }
  bool has_interest(std::string_view subject) override { return _host->has_interest(subject); }
  const base::clock& clk() const override { return _host->clk(); }
  int wake_eventfd() override { return _host->wake_eventfd(); }
  void wake(stream_group&) override {}
  const std::string& domain() const override { return _domain; }
  const std::string& account() const override { return _account; }
  const std::string& server_name() const override { return _host->server_name(); }
  const core::server_options& options() const override { return _host->options(); }
  void report_usage(storage_type, std::int64_t) override {}
  bool storage_exhausted(storage_type) const override { return false; }
  std::size_t* fast_batch_counter() override { return &_no_batches; }

 private:
  struct task {
    const std::function<void()>* fn;
    bool done = false;
  };
  std::size_t run_tasks();
  std::size_t pump(consumer_link& l, std::int64_t now);
  void signal();

  // The thread running calls for this one once it stopped (see run_sync).
  static thread_local const consumer_thread* t_standing_in;
  core::service_host* _host = nullptr;
  std::atomic<std::thread::id> _tid{};
  std::string _domain;
  std::string _account;
  std::atomic<core::service_host*> _wake_host{nullptr};  // without an eventfd: its call() wakes
  std::size_t _no_batches = 0;
  std::atomic<std::uint64_t> _msgs_in{0};
  std::atomic<int> _wake_fd{-1};

  std::mutex _mu;  // the owners' run_sync calls
  std::condition_variable _cv;
  std::vector<task*> _tasks;
  bool _stopped = false;

  std::vector<std::shared_ptr<consumer_link>> _links;  // this thread's
  std::int64_t _next_wakeup = 0;
};

}  // namespace js
