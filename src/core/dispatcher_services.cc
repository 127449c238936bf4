// The shard as its services' host (service_host): their internal subscriptions, publishes
// and deliveries, in the global account or one account's (through its imports and exports).
#include "src/core/dispatcher.h"

#include "src/core/account_host.h"
#include "src/core/subject.h"

namespace core {

void dispatcher::stop_services() {
  for (auto it = _services.rbegin(); it != _services.rend(); ++it) (*it)->stop();
  // Their last words ($SYS.SERVER.<id>.SHUTDOWN) go to the kernel now: shutdown() right
  // after cancels sends still in flight.
  for (const auto& [h, c] : _clients) _transport->flush_now(h);
  _transport->flush();
}

void dispatcher::add_service(std::unique_ptr<service> s, std::uint32_t account) {
  _services.push_back(std::move(s));
  _service_hosts.push_back(account == kGlobalAccount ? nullptr : std::make_unique<account_host>(*this, account));
}

std::uint64_t dispatcher::subscribe(std::string_view subject, std::string_view queue,
                                    internal_handler* h) {
  return subscribe_in(kGlobalAccount, subject, queue, h);
}

std::uint64_t dispatcher::subscribe_cluster(std::string_view subject, internal_handler* h) {
  return subscribe_in(kGlobalAccount, subject, {}, h, true);
}

std::uint64_t dispatcher::subscribe_in(std::uint32_t account, std::string_view subject, std::string_view queue,
                                       internal_handler* h, bool announce) {
  auto s = std::make_unique<subscription>();
  s->account = account;
  const std::uint64_t id = _next_internal_sid++;
  s->subject = std::string(subject);
  s->queue = std::string(queue);
  s->sid = internal_sid(id);
  s->shard = _index;
  s->conn_id = 0;
  s->conn = &_internal;
  s->handler = h;
  s->announce = announce;
  if (!subs_for(account).insert(s.get()).ok()) return 0;
  ++_sub_stats.inserts;
  interest_change(*s, +1);  // counted only if announced or a $SYS one, on shard 0
  broadcast_sub(shard_msg::kind::sub_add, _internal, *s);
  _internal.subs.emplace(s->sid, std::move(s));
  return id;
}

void dispatcher::unsubscribe(std::uint64_t id) {
  remove_sub(_internal, internal_sid(id), true);
}

void dispatcher::publish(std::string_view subject, std::string_view reply, std::string_view headers,
                         std::string_view payload) {
  route(kGlobalAccount, nullptr, subject, reply, headers, payload);
}

void dispatcher::publish_owned(std::string_view subject, std::string&& payload) {
  _owned_payload = &payload;
  route(kGlobalAccount, nullptr, subject, {}, {}, payload);
  _owned_payload = nullptr;
}

// An internal publish in an account goes through its imports as a client's would
// (nats-server's internal clients pass processInboundClientMsg too): JetStream of an account
// reaches another account's $JS.API through a service import (a mirror's `external.api`), and
// its deliveries cross a stream export (an `external.deliver` prefix).
void dispatcher::publish_in(std::uint32_t account, std::string_view subject, std::string_view reply,
                            std::string_view headers, std::string_view payload) {
  if (service_response(nullptr, account, subject, reply, headers, payload)) return;  // system answers via imports
  const auto& accounts = _live->auth->accounts;
  if (account < accounts.size()) {
    const std::int64_t now_ms = _loop.clk().wall_ns() / base::kMilli;
    for (const auto& f : accounts[account].streams_out) {
      if (!subject_matches(f.subject, subject)) continue;
      _local_only = true;  // other servers import it from the RMSG in this account
      route(f.to_account, nullptr, stream_import_subject(f, subject), reply, headers, payload, {}, false);
    }
    for (const auto& f : accounts[account].services_out) {
      if (!subject_matches(f.local, subject)) continue;
      const std::string r =
          reply.empty() ? std::string() : service_reply(account, reply, now_ms, f.singleton, f.threshold_ms);
      route(f.to_account, nullptr, service_import_subject(f, subject), r, headers, payload, {}, false);
    }
  }
  route(account, nullptr, subject, reply, headers, payload);
}

void dispatcher::deliver(std::string_view to, std::string_view subject, std::string_view reply,
                         std::string_view headers, std::string_view payload) {
  route(kGlobalAccount, nullptr, to, reply, headers, payload, subject);
}

bool dispatcher::has_interest_imported(std::uint32_t account, std::string_view subject) {
  if (subs_for(account).has_match(subject)) return true;
  const auto& accounts = _live->auth->accounts;
  if (account >= accounts.size()) return false;
  for (const auto& f : accounts[account].streams_out)
    if (subject_matches(f.subject, subject) && subs_for(f.to_account).has_match(stream_import_subject(f, subject)))
      return true;
  return false;
}

void dispatcher::deliver_in(std::uint32_t account, std::string_view to, std::string_view subject,
                            std::string_view reply, std::string_view headers, std::string_view payload) {
  const auto& accounts = _live->auth->accounts;
  if (account < accounts.size())
    for (const auto& f : accounts[account].streams_out) {
      if (!subject_matches(f.subject, to)) continue;
      _local_only = true;
      route(f.to_account, nullptr, stream_import_subject(f, to), reply, headers, payload, subject, false);
    }
  route(account, nullptr, to, reply, headers, payload, subject);
}

bool dispatcher::has_interest(std::string_view subject) { return _subs.has_match(subject); }

}  // namespace core
