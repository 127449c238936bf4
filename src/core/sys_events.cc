// Server events in the system account, published from the client's own shard. Each costs a
// sublist lookup in the system account when a client connects or leaves, and nothing more
// unless someone subscribed to it.
#include <random>

#include "src/core/dispatcher.h"
#include "src/core/system_account.h"

namespace core {

void dispatcher::sys_client_event(const client& c, bool disconnect, const conn_snapshot* closed) {
  const std::uint32_t sys = _live->auth->system_account;
  if (sys == kGlobalAccount || c.id == 0 || c.route) return;
  const std::string acc = account_name(c.account);
  const std::string subject = "$SYS.ACCOUNT." + acc + (disconnect ? ".DISCONNECT" : ".CONNECT");
  if (!subs_for(sys).has_match(subject)) return;
  thread_local std::mt19937_64 rng{std::random_device{}()};
  const std::int64_t now = _loop.clk().wall_ns();
  const auto server =
      sys_server_json(sys_info_of(_srv.opts, _srv.server_id, _srv.server_name), _srv.sys_seq.fetch_add(1) + 1, now);
  const conn_snapshot s = closed ? *closed : snap(c, false);
  const std::string body = sys_client_event_json(s, acc, server, sys_event_id(rng(), rng()), now, disconnect).dump();
  route(sys, nullptr, subject, {}, {}, body);
}

// $SYS.SERVER.<id>.CLIENT.AUTH.ERR (nats-server's sendAuthErrorEvent): a disconnect event of
// the client whose CONNECT failed authentication, in $G with the user it claimed.
void dispatcher::sys_auth_error_event(const client& c) {
  const std::uint32_t sys = _live->auth->system_account;
  if (sys == kGlobalAccount || c.id == 0 || c.route) return;
  const std::string subject = "$SYS.SERVER." + _srv.server_id + ".CLIENT.AUTH.ERR";
  if (!subs_for(sys).has_match(subject)) return;
  thread_local std::mt19937_64 rng{std::random_device{}()};
  const std::int64_t now = _loop.clk().wall_ns();
  const auto server =
      sys_server_json(sys_info_of(_srv.opts, _srv.server_id, _srv.server_name), _srv.sys_seq.fetch_add(1) + 1, now);
  conn_snapshot s = snap(c, false);
  s.stop_ns = now;
  s.reason = "Authentication Failure";
  const std::string body = sys_client_event_json(s, "$G", server, sys_event_id(rng(), rng()), now, true).dump();
  route(sys, nullptr, subject, {}, {}, body);
}

}  // namespace core
