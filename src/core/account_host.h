#pragma once
// A service host scoped to one account: JetStream of an account other than $G subscribes,
// publishes and looks for interest in that account's sublists (its $JS.API, stream subjects,
// acks and advisories are the account's own); everything else is the dispatcher's.
#include "src/core/dispatcher.h"

namespace core {

class account_host final : public service_host {
 public:
  account_host(dispatcher& d, std::uint32_t account) : _d(d), _account(account) {}
  std::uint64_t subscribe(std::string_view subject, std::string_view queue, internal_handler* h) override {
    return _d.subscribe_in(_account, subject, queue, h);
  }
  // Announced to the routes in this account (RS+ <account> ...): the account's replicated
  // streams' subjects and the cluster's JetStream requests reach it from other servers.
  std::uint64_t subscribe_cluster(std::string_view subject, internal_handler* h) override {
    return _d.subscribe_in(_account, subject, {}, h, true);
  }
  void unsubscribe(std::uint64_t id) override { _d.unsubscribe(id); }
  void publish(std::string_view subject, std::string_view reply, std::string_view headers,
               std::string_view payload) override {
    _d.publish_in(_account, subject, reply, headers, payload);
  }
  void deliver(std::string_view to, std::string_view subject, std::string_view reply, std::string_view headers,
               std::string_view payload) override {
    _d.deliver_in(_account, to, subject, reply, headers, payload);
  }
  bool has_interest(std::string_view subject) override { return _d.has_interest_imported(_account, subject); }
  void add_poller(shard::poller* p) override { _d.add_poller(p); }
  int wake_eventfd() override { return _d.wake_eventfd(); }
  const base::clock& clk() const override { return _d.clk(); }
  void call(std::function<void()> fn) override { _d.call(std::move(fn)); }
  const server_options& options() const override { return _d.options(); }
  const std::string& server_id() const override { return _d.server_id(); }
  const std::string& server_name() const override { return _d.server_name(); }
  cluster_replication* replication() override { return _d.replication(); }

 private:
  dispatcher& _d;
  std::uint32_t _account;
};

}  // namespace core
