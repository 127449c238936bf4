// Accounts across routes, as nats-server 2.9 does them: interest and routed messages carry
// the account name (RS+ <account> ..., RMSG <account> ...). A subscription in an account that
// imports a stream is also interest in the exporter's account, so the exporter's messages
// reach this server in their own account and this server applies its imports to them; a
// service reply issued here is announced as "_R_.<tag>.>" in the exporting account, so a
// response given on another server comes back here to be mapped to the requester.
#include <algorithm>

#include "src/base/log.h"
#include "src/core/dispatcher.h"
#include "src/core/subject.h"

namespace core {

bool dispatcher::route_account_id(std::string_view name, std::uint32_t& id) const {
  if (name == "$G") {
    id = kGlobalAccount;
    return true;
  }
  const auto& accounts = _live->auth->accounts;
  for (std::uint32_t i = 1; i < accounts.size(); ++i) {
    if (accounts[i].name == name) {
      id = i;
      return true;
    }
  }
  return false;
}

void dispatcher::interest_keys(const subscription& s, std::vector<std::string>& out) const {
  const auto& accounts = _live->auth->accounts;
  out.push_back(route_interest_key(account_ref(s.account), s.subject, s.queue));
  std::string shadow;
  for (const auto& exporter : accounts)
    for (const auto& f : exporter.streams_out)
      if (f.to_account == s.account && stream_import_interest(f, s.subject, shadow))
        out.push_back(route_interest_key(exporter.name, shadow, s.queue));
}

void dispatcher::rebuild_interest() {
  _interest_stale = false;
  // A reload never renames, renumbers or re-imports accounts (plan_reload refuses it), so the
  // route subscriptions' account ids stay right; the map is recomputed all the same.
  const auto& accounts = _live->auth->accounts;
  base::inc_map<std::string, int> fresh;
  std::vector<std::string> keys;
  auto add = [&](const subscription& s) {
    if (!counts_as_interest(s)) return;
    keys.clear();
    interest_keys(s, keys);
    for (auto& k : keys) ++fresh[k];
  };
  for (const auto& [h, c] : _clients)
    if (!c->route)
      for (const auto& [sid, s] : c->subs) add(*s);
  for (const auto& [sid, s] : _internal.subs) add(*s);
  for (const auto& [conn, subs] : _remote)
    for (const auto& [sid, s] : subs)
      if (s) add(*s);
  for (const auto& [sid, s] : _internal.subs) add(*s);
  // Responses to service requests made here, answered on another server.
  const std::string replies = service_reply_prefix() + ">";
  for (const auto& importer : accounts)
    for (const auto& f : importer.services_out) ++fresh[route_interest_key(account_ref(f.to_account), replies, {})];
  for (const auto& [key, n] : _interest)
    if (!fresh.count(key))
      for (client* r : _routes) send_interest(*r, key, 0);
  for (const auto& [key, n] : fresh) {
    auto it = _interest.find(key);
    const int before = it == _interest.end() ? 0 : it->second;
    if (before == n || (!is_queue_interest_key(key) && before > 0)) continue;
    for (client* r : _routes) send_interest(*r, key, n);
  }
  _interest = std::move(fresh);
}

void dispatcher::route_forwards(client& c, const route_op& op, std::uint32_t account) {
  const auto& accounts = _live->auth->accounts;
  _from_route = &op;  // a response to a request this server mapped
  if (service_response(&c, account, op.subject, op.reply, op.headers, op.payload)) return;
  _from_route = &op;  // consumed by each route(): local receivers only
  const auto [reply, shown] = split_routed_delivery(op.reply);
  route(account, &c, op.subject, reply, op.headers, op.payload, shown, false);
  // Stream exports: what this server's importers subscribed to (its shadow interest brought it).
  // A routed request does not pass through service imports (nats-server: only responses do).
  if (account >= accounts.size()) return;
  for (const auto& f : accounts[account].streams_out) {
    if (!subject_matches(f.subject, op.subject)) continue;
    _from_route = &op;
    route(f.to_account, &c, stream_import_subject(f, op.subject), op.reply, op.headers, op.payload, {}, false);
  }
}

}  // namespace core
