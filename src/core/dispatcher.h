#pragma once
// A shard's dispatcher: owns the shard's client connections, its copy of the subscription
// index and its inbound rings; parses client bytes, routes publishes locally and to other
// shards, and answers protocol operations as nats-server does.
#include <atomic>
#include <deque>
#include <functional>
#include <mutex>
#include <memory>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "net/transport.h"
#include "src/base/spsc_ring.h"
#include "src/core/client.h"
#include "src/core/inbox_backlog.h"
#include "src/core/monitor_types.h"
#include "src/core/route_parser.h"
#include "src/core/server_shared.h"
#include "src/core/service.h"
#include "src/core/shard_msg.h"
#include "src/core/sublist.h"
#include "src/proto/parser.h"
#include "src/shard/loop.h"

namespace core {

class dispatcher final : public net::transport_handler, public shard::poller, public service_host {
 public:
  dispatcher(std::uint32_t index, server_shared& srv, std::unique_ptr<net::transport> t,
             shard::loop_config lcfg);
  ~dispatcher() override;

  // Wires the rings between every pair of shards; call on all before any runs.
  void connect(const std::vector<dispatcher*>& all);
  std::uint32_t index() const { return _index; }
  shard::loop& event_loop() { return _loop; }
  net::transport& transport() { return *_transport; }
  // Hands an accepted socket to this shard (from any thread via the rings, or locally).
  void place_connection(int fd);
  // From this shard's thread: sends an accepted socket to shard `to`.
  void post_new_connection(std::uint32_t to, int fd);

  // net::transport_handler
  void on_open(net::conn_handle h, std::string_view ip, int port) override;
  void on_data(net::conn_handle h, std::string_view bytes) override;
  void on_close(net::conn_handle h) override;
  // shard::poller: inbound rings, timers, deferred PONGs
  std::size_t poll(base::nanos now) override;

  // Cluster (route_dispatch.cc), on shard 0: takes a route socket from the route manager
  // (`url` empty: accepted; else dialed).
  void adopt_route(int fd, const std::string& url, bool implicit);
  // Before the shard runs: client INFOs carry "cluster" from now on.
  void init_cluster_info();

  // Runs `fn` on this shard's thread at its next turn (thread-safe). The HTTP monitor uses it
  // to take snapshots; the loop pays one relaxed load per turn for it.
  void call_on_shard(std::function<void(dispatcher&)> fn);
  // On this shard's thread: copies of its connections, subscriptions and counters.
  shard_snapshot snapshot(const snapshot_request& q) const;
  const std::vector<std::unique_ptr<service>>& services() const { return _services; }

  // Services run on this shard (shard 0, or the JetStream thread); started on its thread
  // before clients are served. Their host side is dispatcher_services.cc.
  // A service of another account (JetStream per account) gets a host scoped to it.
  void add_service(std::unique_ptr<service> s, std::uint32_t account = kGlobalAccount);
  // True once this shard's services have started (their subscriptions are on the rings).
  bool services_started() const { return _services_ready.load(std::memory_order_acquire); }
  void stop_services();
  // Destroys this shard's services (their teardown unsubscribes, which posts to the other
  // shards' rings): for every shard, with the loops stopped, before any shard is destroyed.
  void release_services();
  // service_host
  std::uint64_t subscribe(std::string_view subject, std::string_view queue, internal_handler* h) override;
  std::uint64_t subscribe_cluster(std::string_view subject, internal_handler* h) override;
  void unsubscribe(std::uint64_t id) override;
  void publish(std::string_view subject, std::string_view reply, std::string_view headers,
               std::string_view payload) override;
  void publish_owned(std::string_view subject, std::string&& payload) override;
  void deliver(std::string_view to, std::string_view subject, std::string_view reply, std::string_view headers,
               std::string_view payload) override;
  bool has_interest(std::string_view subject) override;
  void add_poller(shard::poller* p) override { _service_pollers.push_back(p); }
  // The services' timers bound this shard's idle block.
  base::nanos idle_limit(base::nanos now) override {
    base::nanos limit = 0;
    for (shard::poller* p : _service_pollers)
      if (const base::nanos l = p->idle_limit(now); l > 0 && (limit == 0 || l < limit)) limit = l;
    return limit;
  }
  int wake_eventfd() override;
  // The same in another account (the system account's services and events, system_account.h).
  std::uint64_t subscribe_in(std::uint32_t account, std::string_view subject, std::string_view queue,
                             internal_handler* h, bool announce = false);
  void publish_in(std::uint32_t account, std::string_view subject, std::string_view reply,
                  std::string_view headers, std::string_view payload);
  bool has_interest_in(std::uint32_t account, std::string_view subject) { return subs_for(account).has_match(subject); }
  // The same, or in an account importing `subject` from this one as a stream (nats-server's
  // shadow subscriptions count as interest): a consumer delivering across an export.
  bool has_interest_imported(std::uint32_t account, std::string_view subject);
  void deliver_in(std::uint32_t account, std::string_view to, std::string_view subject, std::string_view reply,
                  std::string_view headers, std::string_view payload);
  const base::clock& clk() const override { return _loop.clk(); }
  void call(std::function<void()> fn) override {
    call_on_shard([fn = std::move(fn)](dispatcher&) { fn(); });
  }
  const server_options& options() const override { return _srv.opts; }
  const std::string& server_id() const override { return _srv.server_id; }
  const std::string& server_name() const override { return _srv.server_name; }
  cluster_replication* replication() override { return _srv.replication; }

 private:
  void post(std::uint32_t to, shard_msg m);
  std::size_t drain_inbox();
  std::size_t drain_from(std::uint32_t from);
  void apply(shard_msg& m);
  std::size_t tick(base::nanos now);
  std::size_t resume_stalled();
  bool inbox_blocked(std::uint32_t from);
  void cut_slow_consumer(client& c, std::string_view why, std::string_view reason);
  void refresh_live();
  // Who `c`'s CONNECT credentials are under the live auth table.
  auth_outcome authenticate_client(const client& c);
  bool password_ok(const std::string& stored, const std::string& given);
  // A reload changed users or permissions: re-authenticate every client, apply its new
  // permissions and drop the subscriptions they no longer allow.
  void reauthorize_clients();
  std::size_t run_calls();
  std::size_t lame_duck(base::nanos now);
  conn_snapshot snap(const client& c, bool with_subs) const;
  // $SYS.ACCOUNT.<acc>.CONNECT/DISCONNECT when someone listens (sys_events.cc).
  void sys_client_event(const client& c, bool disconnect, const conn_snapshot* closed = nullptr);
  // $SYS.SERVER.<id>.CLIENT.AUTH.ERR when someone listens (sys_events.cc).
  void sys_auth_error_event(const client& c);
  std::string account_name(std::uint32_t account) const;
  const std::string& account_ref(std::uint32_t account) const;  // the same, without a copy

  // protocol
  // Parses and handles every complete op; returns the bytes consumed.
  std::size_t process(client& c, std::string_view data);
  // Parses the unconsumed part of c.inbuf.
  void parse_inbuf(client& c);
  bool handle_op(client& c, const proto::client_op& op);  // false: connection closed
  bool handle_connect(client& c, std::string_view json);
  void handle_pub(client& c, const proto::client_op& op);
  void handle_sub(client& c, const proto::client_op& op);
  void handle_unsub(client& c, const proto::client_op& op);
  void handle_ping(client& c);
  void protocol_error(client& c, proto::parse_error e);
  void close_client(client& c, std::string_view err_text);
  void send_err(client& c, std::string_view text);
  void send_ok(client& c);

  // routes (route_dispatch.cc)
  std::size_t process_route(client& c, std::string_view data);
  bool handle_route_op(client& c, const route_op& op);
  void adopt_route_socket(int fd, const std::string& url);
  void open_route(client& c);
  bool handle_route_info(client& c, std::string_view json);
  bool handle_route_connect(client& c, std::string_view json);
  bool register_route(client& c);
  void route_closed(client& c);
  void route_sub(client& c, const route_op& op);
  void route_msg(client& c, const route_op& op);
  // Local interest as the cluster sees it (shard 0 with a cluster): RS+/RS- on changes.
  // The system account's internal subscriptions count too (nats-server's are route interest),
  // so a $SYS.REQ.SERVER.PING reaches every server of the cluster.
  bool counts_as_interest(const subscription& s) const {
    if (_index != 0 || !_srv.routes || s.via_route) return false;
    if (s.announce) return true;  // an internal subscription the cluster must see (subscribe_cluster)
    if (s.handler) return s.account != kGlobalAccount && s.account == _live->auth->system_account;
    return s.conn_id != 0;
  }
  void interest_change(const subscription& s, int delta);
  // "account subject[ queue]": the RS+ arguments without the weight.
  void send_interest(client& r, std::string_view key, int count);
  // Accounts across routes (route_accounts.cc).
  bool route_account_id(std::string_view name, std::uint32_t& id) const;
  // The interest keys a local subscription gives the cluster: its own, and one in each
  // account it imports a matching stream from (nats-server's shadow subscription).
  void interest_keys(const subscription& s, std::vector<std::string>& out) const;
  void bump_interest(const std::string& key, int delta);
  // At start (the service-reply prefixes) and after a reload: the interest recomputed from
  // every subscription, the difference sent to the routes.
  void rebuild_interest();
  // A response (published in `account`) to a request this server sent through a service
  // import: delivered in the requester's account, or dropped past its response_type; false when
  // `subject` is no live service reply of this server.
  bool service_response(client* from, std::uint32_t account, std::string_view subject, std::string_view reply,
                        std::string_view headers, std::string_view payload);
  // A routed message in `account` through this server's stream exports and service replies.
  void route_forwards(client& c, const route_op& op, std::uint32_t account);
  bool _interest_stale = true;
  std::vector<std::string> _keys_scratch;
  bool _local_only = false;  // the next route() skips route subscriptions (an import's copy)
  // publish_owned's payload: the next route() hands it to its receiver's transport when it
  // has exactly one, a client on this shard (_take_payload while delivering to it).
  std::string* _owned_payload = nullptr;
  std::string* _take_payload = nullptr;
  void batch_for_route(client& c, const subscription& s);
  // `shown`: the subject local receivers see when it is not the routed one (a JetStream
  // delivery to an inbox); a route gets it as nats-server sends it, "<reply>@<shown>".
  void flush_route_batch(std::string_view subject, std::string_view reply, std::string_view headers,
                         std::string_view payload,
                         std::string_view shown = {});
  void publish_cluster_urls();
  std::size_t refresh_cluster_info();
  std::string client_info(const client& c) const;
  void send_route_err(client& c, std::string_view text);
  void route_auth_failed(client& c);  // -ERR 'Authorization Violation', closed
  void route_confirmed(client& c);    // a dialed route's first PONG: the peer took our CONNECT
  std::unique_ptr<route_link> _adopting_route;          // adopt_route -> on_open
  base::inc_map<std::string, int> _interest;  // "subject[ queue]" -> local subscriptions (grows a few buckets per insert)
  std::vector<client*> _routes;                         // registered routes
  struct route_batch {
    client* c;
    bool plain;
    std::string queues;
    std::uint32_t account;  // of the route subscriptions matched (one message: one account)
  };
  std::vector<route_batch> _route_batch;  // one RMSG per route for the message being routed
  const route_op* _from_route = nullptr;  // the RMSG being delivered (no forwarding to routes)
  std::uint64_t _cluster_gen = 0;
  nlohmann::ordered_json _cluster_info;   // {"cluster", "connect_urls"} for client INFOs; null: none
  std::uint64_t _next_rid = 1;

  // routing
  // A client's publish in its account: applies the account's stream exports and service
  // imports (and service replies coming back), then routes it there.
  void publish_in_account(client& from, std::string_view subject, std::string_view reply,
                          std::string_view headers, std::string_view payload);
  // Routes in one account's sublist; true when anyone matched. `shown` (when set) is the
  // subject the receivers see instead of the routed one. `notify`: answer no-responders.
  bool route(std::uint32_t account, client* from, std::string_view subject, std::string_view reply,
             std::string_view headers, std::string_view payload, std::string_view shown = {}, bool notify = true);
  sublist& subs_for(std::uint32_t account);
  bool deliver_local(subscription& s, std::string_view subject, std::string_view reply,
                     std::string_view headers, std::string_view payload);
  void remove_sub(client& c, const std::string& sid, bool broadcast);
  void broadcast_sub(shard_msg::kind k, client& c, const subscription& s);
  void send_no_responders(client& c, std::string_view reply);
  std::uint64_t min_acked() const;

  std::uint32_t _index;
  server_shared& _srv;
  // Reloadable options and INFO; swapped when _srv.live_gen moves.
  std::shared_ptr<const live_config> _live;
  std::uint64_t _live_gen = 0;
  shard_counters _counters;
  sublist_stats _sub_stats;
  std::uint64_t _slow_cut = 0;  // slow consumers this shard cut
  std::deque<conn_snapshot> _closed;  // most recent last; bounded by kClosedKept / shards
  static constexpr std::size_t kClosedKept = 10000;  // nats-server's max_closed_clients
  bool _ldm = false;                 // lame duck mode seen
  std::size_t _ldm_initial = 0;      // connections when it started
  std::size_t _ldm_closed = 0;
  std::mutex _calls_mu;
  std::vector<std::function<void(dispatcher&)>> _calls;
  std::atomic<bool> _calls_pending{false};
  std::uint64_t _calls_run = 0;  // call_on_shard functions run (/metrics)
  std::unique_ptr<net::transport> _transport;
  int _wake_fd = -2;  // -2 not created yet, -1 unsupported
  shard::loop _loop;
  sublist _subs;  // the global account's
  std::vector<std::unique_ptr<sublist>> _account_subs;  // [i]: account i's (i > 0), made on first use
  proto::parser_limits _limits;
  std::uint64_t _next_client = 1;
  std::unordered_map<net::conn_handle, std::unique_ptr<client>> _clients;
  std::unordered_map<std::uint64_t, client*> _by_id;
  // copies of other shards' subscriptions: conn_id -> sid -> subscription
  // Other threads' subscriptions by connection and sid; inc_map: a stream's 74,000 arrive in a
  // burst, and a whole-table rehash in one apply held a turn for milliseconds.
  std::unordered_map<std::uint64_t, base::inc_map<std::string, std::unique_ptr<subscription>>> _remote;
  // rings: _inbox[from] is written by shard `from`, read here
  std::vector<std::unique_ptr<base::spsc_ring<shard_msg>>> _inbox;
  std::vector<base::spsc_ring<shard_msg>*> _outbox;  // _outbox[to] = peer's _inbox[_index]
  std::vector<dispatcher*> _peers;
  std::vector<std::deque<shard_msg>> _overflow;  // ring full: retried each turn
  std::vector<inbox_backlog> _backlog;  // [from]: taken off _inbox[from], not applied yet
  sub_slice _sub_slice;                 // this turn's budget for subscription changes
  std::uint64_t _bcast_seq = 0;
  std::vector<std::uint64_t> _acked;     // highest broadcast seq each peer applied
  std::vector<std::uint64_t> _applied;   // highest seq applied from each peer (to ack)
  // A PONG promises the client that everything it sent before the PING has been done, and
  // (as in nats-server) that messages published to it before then are already queued ahead of
  // the PONG. Across shards both travel on rings, so a PONG waits at its gate until: peers
  // applied the client's SUB/UNSUBs (sub_seq), this shard pushed its overflow up to the PING
  // (posted marks), and drained each inbox up to where it stood at the PING (inbox marks).
  struct pong_gate {
    client* c;
    std::uint64_t sub_seq;
    std::vector<std::uint64_t> marks;  // [0,n): inbox produced(); [n,2n): _posted
  };
  std::deque<pong_gate> _pong_gates;
  std::vector<std::uint64_t> _posted;  // messages ever posted to each peer
  std::vector<std::uint64_t> _pushed;  // of those, pushed onto its ring
  bool pong_ready_now(const client& c) const;
  bool gate_open(const pong_gate& g, std::uint64_t acked) const;
  std::size_t release_pongs();
  std::vector<client*> _stalled;   // publishers paused by a subscriber's back-pressure
  std::uint64_t _stall_current = 0;  // subscriber whose delivery crossed the stall mark
  // Cross-shard back-pressure: a ring is not drained while the local subscriber it filled
  // is above half of max_pending; a publisher whose deliveries overflow a full ring stalls.
  std::vector<std::uint64_t> _inbox_blocked_on;
  static constexpr std::uint64_t kRemoteStall = ~0ull;
  // How long a full subscriber may hold its publishers back. Clients time out writes the
  // server does not read (nats.c after 2 s, then reconnects and loses what was in flight), so
  // the hold is short; after it the subscriber no longer stalls anyone and max_pending or
  // write_deadline cut it, as nats-server does.
  static constexpr base::nanos kMaxPublisherHold = 500 * base::kMilli;
  bool holds_publishers(const client& c, base::nanos now) const {
    return c.pressure_since_ns == 0 || now - c.pressure_since_ns < kMaxPublisherHold;
  }
  std::vector<std::vector<delivery_target>> _remote_targets;  // scratch per route
  std::vector<std::pair<client*, std::string>> _expired;       // scratch: subs hitting max
  std::uint64_t _rr = 0;
  // bcrypt is slow by design (~0.1 s at cost 11) and runs on the shard thread: digests of
  // (hash, password) pairs it accepted, so reconnects and reload re-checks pay it once.
  std::unordered_set<std::string> _bcrypt_ok;
  base::nanos _next_tick = 0;
  // services (one shard only) and their internal pseudo-client (id 0)
  std::vector<std::unique_ptr<service>> _services;
  std::vector<std::unique_ptr<service_host>> _service_hosts;  // per service; null: this dispatcher
  std::vector<shard::poller*> _service_pollers;
  bool _services_started = false;
  std::atomic<bool> _services_ready{false};
  client _internal;
  std::uint64_t _next_internal_sid = 1;
  // Every service shard's internal subscriptions are connection 0 on the other shards, so
  // the sid names the shard too ("$I<shard>.<id>"): two owner threads' sids never collide.
  std::string internal_sid(std::uint64_t id) const { return "$I" + std::to_string(_index) + "." + std::to_string(id); }
  std::uint64_t _publishing_client = 0;  // client id whose PUB is being routed
  bool _publisher_no_responders = false;  // ... and whether it takes 503 statuses
};

}  // namespace core
