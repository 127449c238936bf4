#pragma once
// One client connection's protocol state, owned by its shard's thread.
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>

#include "net/transport.h"
#include "src/base/inc_map.h"
#include "src/base/clock.h"
#include "src/core/auth.h"
#include "src/core/route.h"
#include "src/core/sublist.h"

namespace core {

struct client {
  net::conn_handle handle = 0;
  std::uint64_t id = 0;
  std::string peer_ip;
  int peer_port = 0;
  std::string inbuf;  // bytes not parsed yet: an incomplete op, or input held while stalled
  std::size_t in_head = 0;  // inbuf[0, in_head) is consumed; compacted lazily, not per op
  std::size_t need = 0;  // unconsumed size worth parsing again (from the parser's hint)
  // CONNECT options (nats-server's defaults before CONNECT)
  bool connected = false;
  bool verbose = true;
  bool pedantic = true;
  bool echo = true;
  bool headers = false;
  bool no_responders = false;
  int protocol = 0;
  std::string name, lang, version;
  std::string auth_user, auth_pass, auth_token, auth_nkey, auth_sig;  // as presented: re-checked on reload
  std::string nonce;  // sent in INFO when nkey users exist; CONNECT's sig signs it
  std::shared_ptr<const user_entry> auth;  // the user it authenticated as (null: no users)
  const permissions* perms = nullptr;      // auth->perms: checked on every PUB and SUB
  response_grants replies;                 // allow_responses: reply subjects it may answer
  std::uint32_t account = kGlobalAccount;  // its subject namespace
  // monitoring (connz): plain counters, read only on this shard's thread
  std::uint64_t cid = 0;  // the id clients see (INFO client_id, connz cid); unique per server
  std::int64_t start_wall_ns = 0;
  std::uint64_t in_msgs = 0, in_bytes = 0, out_msgs = 0, out_bytes = 0;
  base::nanos rtt_ns = 0;  // INFO sent -> CONNECT arrived, as nats-server's first RTT
  // liveness
  base::nanos created_ns = 0;
  base::nanos last_in_ns = 0;
  base::nanos next_ping_ns = 0;
  int pings_out = 0;
  bool closing = false;
  std::string_view close_reason;  // connz state=closed; static text, empty: the client closed
  // back-pressure: a publisher feeding a nearly full subscriber pauses its parsing; a
  // subscriber above the stall mark for longer than write_deadline is cut as slow
  bool stalled = false;
  std::uint64_t stalled_on = 0;  // the subscriber's connection id while stalled
  base::nanos pressure_since_ns = 0;
  // multi-shard: PONGs wait at a gate (dispatcher::pong_gate) until other shards have applied
  // this client's SUB/UNSUBs and the rings are drained up to the PING
  std::uint64_t sub_seq = 0;
  int deferred_pongs = 0;
  bool pong_held = false;  // scratch while releasing: an earlier PONG of this client still waits
  // By sid (a route's: by "subject[ queue]"). Grows without a whole rehash: JetStream's
  // internal connection takes a 74,000-subject stream's subscriptions in one turn.
  base::inc_map<std::string, std::unique_ptr<subscription>> subs;
  std::unique_ptr<route_link> route;  // set: this connection is a route to another server
};

}  // namespace core
