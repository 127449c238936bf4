#pragma once
// The cluster operator's JetStream requests, $JS.API.META.LEADER.STEPDOWN and
// $JS.API.SERVER.REMOVE, taken from the system account only, as nats-server takes them
// (`nats server cluster step-down` / `peer-remove` run as a system user). JetStream answers
// them in one account (the global one, or the first with JetStream), so this relay (on
// shard 0) subscribes the two subjects in the system account and hands each request to this
// server's JetStream as
// $PG.JSC.<server>.0.SYS.<subject after $JS.API.> in that account, with a reply subject
// of its own ($PG.SYSR.<server>.<id>, announced to the routes: the meta leader elsewhere may
// answer), whose answer it passes to the requester in the system account. $PG. subjects are
// the servers' own: no client may publish there (dispatcher::handle_pub). A request from any
// other account is ignored by JetStream with a warning, as nats-server ignores it.
#include <cstdint>
#include <memory>

#include "src/core/service.h"

namespace core {

class server;

// Null when there is no system account (the requests then have no one to come from).
// `js_account`: the account whose JetStream takes them (the first with JetStream: every
// account's instance holds the cluster-wide meta table, cluster_event_router.h).
std::unique_ptr<service> make_sys_js_relay(server& srv, std::uint32_t system_account, std::uint32_t js_account);

}  // namespace core
