// JetStream service: start/stop, placement over owner threads, $JS.API dispatch and
// advisories. Stream storage is jetstream_storage.cc; the cross-stream and limit checks
// jetstream_checks.cc.
#include "src/js/jetstream.h"

#include <algorithm>
#include <filesystem>
#include <set>

#include "src/base/log.h"
#include "src/base/rng.h"
#include "src/core/cluster_replication.h"
#include "src/core/subject.h"
#include "src/core/subject_overlap.h"
#include "src/js/api_worker.h"
#include "src/js/big_request.h"
#include "src/js/cluster_event_router.h"
#include "src/js/cluster_streams.h"
#include "src/js/consumer_thread.h"
#include "src/js/json_util.h"
#include "src/js/stream_source.h"
#include "src/js/jetstream_service.h"
#include "src/js/jetstream_owners.h"

namespace js {

namespace fs = std::filesystem;

std::unique_ptr<core::service> make_jetstream_service() {
  return std::make_unique<jetstream>(std::make_shared<owner_set>(1), 0);
}

std::vector<std::unique_ptr<core::service>> make_jetstream_owners(std::size_t n) {
  auto owners = std::make_shared<owner_set>(std::max<std::size_t>(n, 1));
  std::vector<std::unique_ptr<core::service>> out;
  for (std::size_t i = 0; i < owners->size(); ++i) out.push_back(std::make_unique<jetstream>(owners, i));
  return out;
}

std::vector<account_service> make_jetstream_accounts(std::size_t n, const std::vector<account_limits>& enabled,
                                                     const std::vector<std::string>& disabled,
                                                     std::size_t consumer_threads) {
  n = std::max<std::size_t>(n, 1);
  auto usage = std::make_shared<server_usage>();
  auto router = enabled.empty() ? nullptr : std::make_shared<cluster_event_router>(enabled.front().account);
  std::vector<account_service> out;
  for (const auto& acc : enabled) {
    auto owners = std::make_shared<owner_set>(n, acc, usage, enabled.size());
    owners->cluster_router = router;
    for (std::size_t i = 0; i < n; ++i) out.push_back({std::make_unique<jetstream>(owners, i), acc.account, i});
    for (std::size_t i = 0; i < consumer_threads; ++i) {
      auto ct = std::make_unique<consumer_thread>(acc.account);
      owners->consumer_threads.push_back(ct.get());
      out.push_back({std::move(ct), acc.account, n + i});
    }
  }
  for (const auto& name : disabled) out.push_back({make_jetstream_disabled(), name, 0});
  return out;
}

jetstream::jetstream(std::shared_ptr<owner_set> owners, std::size_t index)
    : _owners(std::move(owners)), _index(index), _all_loaded(index != 0) {  // only the hub waits for the others
  _owners->slots[_index]->js = this;
}

// The worker goes first: a job it runs refers to _big.
jetstream::~jetstream() { _worker.reset(); }

core::inbound_msg jetstream::deferred_msg::view() const {
  core::inbound_msg m;
  m.subject = subject;
  m.reply = reply;
  m.headers = headers;
  m.payload = payload;
  m.client_id = client_id;
  m.no_responders = no_responders;
  return m;
}

bool jetstream::start(core::service_host& host, std::string& error) {
  _thread.claim();
  _host = &host;
  _domain = host.options().js_domain;
  owner_slot& slot = *_owners->slots[_index];
  slot.host = &host;
  std::error_code ec;
  fs::create_directories(streams_dir(), ec);
  if (ec) {
    error = "cannot create " + streams_dir() + ": " + ec.message();
    return false;
  }
  if (is_hub()) {  // the control plane: only owner 0 serves $JS.API
    // With consumer threads every consumer subscribes its own pulls (no owner sees them).
    const std::size_t split = _owners->consumer_threads.empty() ? _owners->size() : 2;
    for (const std::string& api : api_prefixes())
      for (const std::string& pattern : hub_api_patterns(split)) {
        const std::uint64_t id = host.subscribe(api + pattern, "", this);
        if (id == 0) {
          error = "cannot subscribe " + api + pattern;
          return false;
        }
        _api_subs.push_back(id);
      }
  }
  host.add_poller(this);
  // Every account's replicated streams: its own cluster_streams, their events routed by the
  // router the accounts share.
  if (is_hub() && host.replication()) {
    _cluster = std::make_unique<cluster_streams>(host, *host.replication(), _domain, account(),
                                                 _owners->cluster_router);
    _cluster->on_r1_scaled = [this](const std::string& name, bool drop) { r1_scaled(name, drop); };
    _cluster->set_hub_view({[this] {
                              std::vector<repl_entries::r1_stream> out;
                              out.reserve(table().size());
                              for (const auto& [name, p] : table()) out.push_back({name, p.cfg.subjects});
                              return out;
                            },
                            [this](std::string_view name) { return table().find(name) != table().end(); },
                            [this](const stream_config& cfg, std::string_view except, bool create, std::int64_t r) {
                              return check_limits(cfg, except, create, r);
                            },
                            _owners->limits.max_ack_pending, _owners->limits.max_consumers});
    _cluster->start();
  }
  load_streams();
  // What this owner restored joins the hub's table (the hub's own streams directly).
  for (const auto& [name, g] : _streams) {
    if (is_hub()) {
      _owners->subjects.set(name, g->get_stream().config().subjects);
      table_put(name, placed_stream{_index, g->get_stream().config()});
    }
    else slot.recovered.push_back(g->get_stream().config());
  }
  slot.loaded.store(true, std::memory_order_release);
  if (is_hub()) all_loaded();
  return true;
}

void jetstream::stop() {
  _worker.reset();  // a big request in flight, and what waits behind it, go unanswered
  _big.reset();
  _infos.clear();
  _deferred.clear();
  if (_snapshots) _snapshots->clear();
  // Every consumer first (409s to waiting pulls, state flushed), then every stream. The
  // consumers' states are written in one batch (many fdatasyncs at once, not one after another).
  const auto& clk = _host->clk();
  const base::nanos t0 = clk.monotonic_ns();
  std::vector<storage::snapshot_file> states;
  for (auto& [name, g] : _streams) g->shutdown_consumers(&states);
  const base::nanos t1 = clk.monotonic_ns();
  storage::write_snapshot_files(states);
  for (auto& [name, g] : _streams) g->finish_shutdown(states);
  const base::nanos t2 = clk.monotonic_ns();
  for (auto& [name, g] : _streams) g->get_stream().close();
  PG_INFO("JetStream stopped: {} consumer states written in {} ms (after {} ms waiting for earlier writes), "
          "{} streams closed in {} ms",
          states.size(), (t2 - t1) / base::kMilli, (t1 - t0) / base::kMilli, _streams.size(),
          (clk.monotonic_ns() - t2) / base::kMilli);
  for (auto id : std::exchange(_api_subs, {})) _host->unsubscribe(id);
}

std::size_t jetstream::poll(base::nanos) {
  PG_ASSERT_OWNER(_thread);
  _retired_streams.clear();
  std::size_t work = _tasks.size();
  for (auto& task : std::exchange(_tasks, {})) task();
  work += poll_groups(now());
  if (_cluster) {
    work += _cluster->poll(now());
    publish_cluster_usage();
    sync_cluster_pulls();
  }
  if (!_all_loaded && is_hub() && all_loaded()) ++work;  // what waited for the owners goes now
  work += poll_big_info();
  work += poll_big();
  maybe_report();
  return work;
}

// Thousands of idle streams (every KV bucket is one) must not cost a poll each turn: only
// the groups woken by a message, still busy, or whose deadline came.
std::size_t jetstream::poll_groups(std::int64_t t) {
  std::size_t work = 0;
  for (stream_group* g : _active.take_due(t)) {
    if (g->removed) continue;  // deleted meanwhile (alive until the next poll)
    work += g->poll(t);
    if (g->removed) continue;
    for (const auto& cname : g->take_expired())
      if (g->find_consumer(cname)) delete_consumer(*g, cname, true);
    _active.reschedule(*g, t);  // busy, then next wakeup: in that order (see there)
  }
  return work;
}

void jetstream::wake(stream_group& g) { _active.wake(g); }

consumer_thread* jetstream::pick_consumer_thread(const consumer_config& c) {
  const auto& threads = _owners->consumer_threads;
  if (threads.empty()) return nullptr;
  return threads[placement_hash(c.name) % threads.size()];
}

std::vector<std::string> jetstream::api_prefixes() const {
  std::vector<std::string> out{"$JS.API"};
  if (!_domain.empty()) out.push_back("$JS." + _domain + ".API");
  return out;
}

// One owner: the whole API. Several: every API subject except the 7-token
// CONSUMER.MSG.NEXT.<stream>.<consumer>, which each owner (the hub too) subscribes for its
// own streams, so a pull reaches only its owner's ring (no copy for the hub to parse and
// drop), and except DIRECT.>, which the streams' responders serve on their owners (where
// none is, the core's own no-responders status is what the hub would have sent). The
// patterns are disjoint: no subject is delivered twice. What they leave out besides is an
// unknown multi-token API subject (say $JS.API.FOO.BAR), which then has no responders
// instead of the hub's bad-request reply.
std::vector<std::string> hub_api_patterns(std::size_t owners) {
  if (owners <= 1) return {".>"};
  std::vector<std::string> out{".*", ".STREAM.>", ".META.>", ".ACCOUNT.>", ".SERVER.>", ".CONSUMER.*",
                               // MSG with 1, 2 or 4+ tokens after it (malformed pulls: answered as before)
                               ".CONSUMER.MSG.*", ".CONSUMER.MSG.*.*", ".CONSUMER.MSG.*.*.*.>"};
  for (const char* op : {"CREATE", "DURABLE", "INFO", "DELETE", "NAMES", "LIST", "PAUSE", "UNPIN", "RESET", "LEADER"})
    out.push_back(std::string(".CONSUMER.") + op + ".>");
  return out;
}

void jetstream::place(std::unique_ptr<stream_group> g) {
  _active.add(*g);
  const std::string name = g->name();
  if (_owners->size() > 1 && _owners->consumer_threads.empty()) {
    // Pulls go straight to the owner thread: routing carries them to its ring.
    auto& ids = _next_subs[name];
    for (const std::string& api : api_prefixes())
      if (auto id = _host->subscribe(api + ".CONSUMER.MSG.NEXT." + name + ".*", "", this); id != 0) ids.push_back(id);
  }
  _streams.emplace(name, std::move(g));
}

// With owner or consumer threads the hub subscribes neither CONSUMER.MSG.NEXT.<stream>.<consumer>
// nor DIRECT.GET (hub_api_patterns); owners subscribe their own streams'. The cluster's
// streams (replicated ones and other servers' R1 ones) have no owner here: the hub subscribes
// their pulls and direct gets, so cluster_streams sends each where it is served.
void jetstream::sync_cluster_pulls() {
  if (_owners->size() == 1 && _owners->consumer_threads.empty()) return;  // the hub's `.>` takes them
  if (_cluster->meta_version() == _pulls_version) return;
  _pulls_version = _cluster->meta_version();
  std::set<std::string, std::less<>> want;
  for (auto& [name, subjects] : _cluster->names(false))
    if (table().find(name) == table().end()) want.insert(name);
  std::erase_if(_cluster_pull_subs, [&](auto& kv) {
    if (want.count(kv.first)) return false;
    for (auto id : kv.second) _host->unsubscribe(id);
    return true;
  });
  for (const auto& name : want) {
    if (_cluster_pull_subs.count(name)) continue;
    auto& ids = _cluster_pull_subs[name];
    // Direct gets too: another server's R1 stream's go there (a replicated stream's replicas
    // answer their own; the hub stays silent, as with one owner).
    for (const std::string& api : api_prefixes())
      for (const std::string& s : {api + ".CONSUMER.MSG.NEXT." + name + ".*", api + ".DIRECT.GET." + name,
                                   api + ".DIRECT.GET." + name + ".>"})
        if (auto id = _host->subscribe(s, "", this); id != 0) ids.push_back(id);
  }
}

void jetstream::retire(const std::string& name) {
  if (auto subs = _next_subs.find(name); subs != _next_subs.end()) {
    for (auto id : subs->second) _host->unsubscribe(id);
    _next_subs.erase(subs);
  }
  auto it = _streams.find(name);
  if (it == _streams.end()) return;
  _active.remove(*it->second);
  _retired_streams.push_back(std::move(it->second));
  _streams.erase(it);
}

// ---- several owners

bool jetstream::all_loaded() {
  if (_all_loaded) return true;
  for (const auto& slot : _owners->slots)
    if (!slot->loaded.load(std::memory_order_acquire)) return false;
  for (std::size_t i = 1; i < _owners->size(); ++i)
    for (auto& cfg : _owners->slots[i]->recovered) {
      const std::string name = cfg.name;
      _owners->subjects.set(name, cfg.subjects);
      table_put(name, placed_stream{i, std::move(cfg)});
    }
  _all_loaded = true;
  return true;
}

namespace {
bool changes_stream(std::string_view rest) {
  return rest.starts_with("STREAM.CREATE.") || rest.starts_with("STREAM.UPDATE.") ||
         rest.starts_with("STREAM.DELETE.");
}
}  // namespace

bool jetstream::forward(std::string_view rest, const core::inbound_msg& m) {
  if (!is_hub()) return false;
  const std::string_view name = api_stream_of(rest);
  if (name.empty()) return false;  // account-wide (INFO, NAMES, LIST) or malformed: here
  std::size_t to = _index;
  if (auto it = table().find(name); it != table().end()) to = it->second.owner;
  else if (rest.starts_with("STREAM.CREATE.")) to = owner_of(_owners->limits.account, name, _owners->size());
  // (no such stream: answered here, as by an owner)
  const bool changes = changes_stream(rest);
  if (to == _index) {
    if (changes) report_later(name);
    return false;
  }
  // The other owner cannot see the cluster's streams: their subjects are checked here.
  if (_cluster && (rest.starts_with("STREAM.CREATE.") || rest.starts_with("STREAM.UPDATE."))) {
    stream_config cfg;
    if (!parse_stream_config(m.payload, cfg) && !normalise(cfg) && _cluster->overlaps_cluster_streams(cfg, false)) {
      respond_error(m.reply, rest.starts_with("STREAM.CREATE.") ? "stream_create_response" : "stream_update_response",
                    make_error(err::subjects_overlap));
      return true;
    }
  }
  // Counted here, where INFO is answered (as dispatch counts it).
  _api_total.fetch_add(1, std::memory_order_relaxed);
  if (changes) _inflight = std::string(name);
  jetstream* owner = _owners->slots[to]->js;
  post_task(to, [owner, d = deferred_msg(m), changes] { owner->on_forwarded(d, changes); });
  return true;
}

void jetstream::on_forwarded(const deferred_msg& d, bool changes) {
  PG_ASSERT_OWNER(_thread);
  const core::inbound_msg m = d.view();
  if (changes) {
    std::string_view rest = m.subject;
    rest.remove_prefix(8);  // "$JS.API."
    report_later(api_stream_of(rest));
  }
  on_msg(m);
  maybe_report();
}

// Through the closure queue into the target's task list, which its poll runs after the
// dispatcher drained its rings that turn: a client's SUB broadcast before the request the
// hub forwards (its reply inbox, just after a reconnect) is in the owner's sublist by then.
void jetstream::post_task(std::size_t to, std::function<void()> fn) {
  jetstream* target = _owners->slots[to]->js;
  _owners->post(to, [target, fn = std::move(fn)]() mutable { target->_tasks.push_back(std::move(fn)); });
}

void jetstream::report_later(std::string_view name) { _report.emplace_back(name); }

void jetstream::maybe_report() {
  if (_report.empty() || _big) return;
  for (const std::string& name : std::exchange(_report, {})) {
    std::optional<stream_config> cfg;
    std::vector<std::string> subjects;
    const auto copies = _report_copies.find(name);
    if (const stream* s = find(name)) {
      if (copies != _report_copies.end()) {
        cfg = std::move(copies->second.cfg);
        subjects = std::move(copies->second.subjects);
      } else {
        cfg = s->config();
        if (!is_hub()) subjects = cfg->subjects;  // the hub copies them only if they changed
      }
    }
    if (copies != _report_copies.end()) _report_copies.erase(copies);
    if (is_hub()) {
      apply_report(name, _index, std::move(cfg), std::move(subjects));
      continue;
    }
    jetstream* hub = _owners->slots[0]->js;
    post_task(0, [hub, name, owner = _index, cfg = std::move(cfg), subjects = std::move(subjects)]() mutable {
      hub->apply_report(name, owner, std::move(cfg), std::move(subjects));
    });
  }
}

void jetstream::table_put(const std::string& name, placed_stream p) {
  auto& reserved = _owners->server->reserved;
  reserved[storage_index(p.cfg.storage)].fetch_add(reservation(p.cfg), std::memory_order_relaxed);
  if (_cluster) _cluster->hub_streams_changed();
  auto it = _owners->table.find(name);
  if (it == _owners->table.end()) {
    _owners->table.emplace(name, std::move(p));
    return;
  }
  reserved[storage_index(it->second.cfg.storage)].fetch_sub(reservation(it->second.cfg), std::memory_order_relaxed);
  it->second = std::move(p);
}

void jetstream::table_erase(placement_table::iterator it) {
  if (_cluster) _cluster->hub_streams_changed();
  _owners->server->reserved[storage_index(it->second.cfg.storage)].fetch_sub(reservation(it->second.cfg),
                                                                              std::memory_order_relaxed);
  _owners->table.erase(it);
}

void jetstream::apply_report(const std::string& name, std::size_t owner, std::optional<stream_config> cfg,
                             std::vector<std::string> registry_subjects) {
  PG_ASSERT_OWNER(_thread);
  auto it = _owners->table.find(name);
  if (cfg) {
    // An update that keeps its subjects leaves the registry alone (50,000 subjects cost ms);
    // a big change goes in slices (poll_big), stream changes held back meanwhile (must_wait).
    if (it == _owners->table.end() || it->second.cfg.subjects != cfg->subjects) {
      // The reporter's copy when it sent one (empty: none, unless the stream has no subjects).
      if (registry_subjects.size() != cfg->subjects.size()) registry_subjects = cfg->subjects;
      _owners->subjects.set_sliced(name, std::move(registry_subjects), kRegistryStepsNow);
    }
    table_put(name, placed_stream{owner, std::move(*cfg)});
  } else if (it != _owners->table.end() && it->second.owner == owner) {
    _owners->subjects.erase_sliced(name, kRegistryStepsNow);
    table_erase(it);
  }
  if (_inflight && *_inflight == name) _inflight.reset();  // what waited behind it goes at the next poll
}

base::nanos jetstream::idle_limit(base::nanos) {
  if (_active.any_queued()) return base::kMilli;
  const std::int64_t next = _active.next_deadline();
  if (next == active_member::kNever) return 0;
  // A deadline poll() could not act on yet (already past) is retried each millisecond.
  return std::max<std::int64_t>(next - now(), base::kMilli);
}

stream* jetstream::find(std::string_view name) {
  auto it = _streams.find(name);
  return it == _streams.end() ? nullptr : &it->second->get_stream();
}

stream_group* jetstream::group_of(std::string_view name) {
  auto it = _streams.find(name);
  return it == _streams.end() ? nullptr : it->second.get();
}

// ---- dispatch

void jetstream::on_msg(const core::inbound_msg& in) {
  PG_ASSERT_OWNER(_thread);
  _msgs_in.fetch_add(1, std::memory_order_relaxed);
  core::inbound_msg m = in;
  std::string_view rest = m.subject;
  std::string rewritten;
  if (!_domain.empty() && rest.starts_with("$JS." + _domain + ".API.")) {
    rewritten = "$JS.API." + std::string(rest.substr(_domain.size() + 9));
    m.subject = rewritten;
    rest = rewritten;
  }
  if (!rest.starts_with("$JS.API.")) return;
  rest.remove_prefix(8);
  if (!_all_loaded && !all_loaded()) {  // hub: an owner is still restoring its streams
    _deferred.emplace_back(m);
    return;
  }
  // The cluster operator's requests come from the system account only (core/sys_js_relay.h).
  if ((rest == "META.LEADER.STEPDOWN" || rest == "SERVER.REMOVE") && _host->replication())
    return refuse_operator_request(rest);
  if (_cluster && _cluster->on_api(rest, m)) return;  // a replicated stream's request
  if (rest == "SERVER.REMOVE") return;  // nats-server without a cluster does not answer it
  if (rest.starts_with("DIRECT.")) {
    // Served by the stream's own responder (on its owner); nothing answers for a stream that
    // does not exist or does not allow direct gets (or a subject no stream subscribes).
    const stream_config* s = nullptr;
    bool mirrored = false;  // a mirror_direct mirror answers for its origin's name
    if (rest.starts_with("DIRECT.GET.")) {
      std::string_view name = rest.substr(11);
      name = name.substr(0, name.find('.'));
      if (auto it = table().find(name); it != table().end()) s = &it->second.cfg;
      // A big create being applied has no direct responder yet: the stream is not there.
      if (_big && !_big->update && _big->token == name) s = nullptr;
      if (s == nullptr || !s->allow_direct) mirrored = mirror_serves_direct(name);
    }
    if ((s == nullptr || !s->allow_direct) && !mirrored) no_responders(m);
    return;
  }
  if (must_wait(rest)) {  // behind a big request or a forwarded change in flight
    _deferred.emplace_back(m);
    return;
  }
  if (forward(rest, m)) return;
  // The outermost call reports a stream change it made to the hub's table (handlers may
  // publish to $JS.API re-entrantly).
  struct settle {
    jetstream& js;
    explicit settle(jetstream& j) : js(j) { ++js._depth; }
    ~settle() {
      if (--js._depth == 0) js.maybe_report();
    }
  } settled{*this};

  struct route {
    std::string_view prefix;
    handler fn;
    std::string_view type;
    bool takes_name;
  };
  static const route routes[] = {
      {"INFO", &jetstream::api_info, "account_info_response", false},
      {"STREAM.CREATE.", &jetstream::api_create, "stream_create_response", true},
      {"STREAM.UPDATE.", &jetstream::api_update, "stream_update_response", true},
      {"STREAM.INFO.", &jetstream::api_stream_info, "stream_info_response", true},
      {"STREAM.DELETE.", &jetstream::api_delete, "stream_delete_response", true},
      {"STREAM.NAMES", &jetstream::api_names, "stream_names_response", false},
      {"STREAM.LIST", &jetstream::api_list, "stream_list_response", false},
      {"STREAM.PURGE.", &jetstream::api_purge, "stream_purge_response", true},
      {"STREAM.MSG.GET.", &jetstream::api_msg_get, "stream_msg_get_response", true},
      {"STREAM.MSG.DELETE.", &jetstream::api_msg_delete, "stream_msg_delete_response", true},
      {"STREAM.SNAPSHOT.", &jetstream::api_snapshot, "stream_snapshot_response", true},
      {"STREAM.RESTORE.", &jetstream::api_restore, "stream_restore_response", true},
      {"STREAM.LEADER.STEPDOWN.", &jetstream::api_stream_stepdown, "stream_leader_stepdown_response", true},
      {"STREAM.PEER.REMOVE.", &jetstream::api_peer_remove, "stream_remove_peer_response", true},
  };
  for (const auto& r : routes) {
    std::string_view token;
    if (r.takes_name) {
      if (!rest.starts_with(r.prefix)) continue;
      token = rest.substr(r.prefix.size());
      if (token.empty() || token.find('.') != std::string_view::npos) break;  // bad request below
    } else if (rest != r.prefix) {
      continue;
    }
    // Counted after the reply, as nats-server does (INFO shows the calls before it).
    struct count_after {
      std::atomic<std::uint64_t>& n;
      ~count_after() { n.fetch_add(1, std::memory_order_relaxed); }
    } counter{_api_total};
    if (!m.headers.empty()) {
      if (auto lvl = find_header(m.headers, "Nats-Required-Api-Level")) {
        auto want = parse_u64(*lvl);
        if (!want || *want > static_cast<std::uint64_t>(kApiLevel)) {
          respond_error(m.reply, r.type, make_error(err::min_api_level));
          return;
        }
      }
    }
    const bool update = r.fn == &jetstream::api_update;
    if ((update || r.fn == &jetstream::api_create) && m.payload.size() >= kBigRequestBytes)
      return start_big_request(token, m, update);  // decoded on the API worker, applied in slices
    (this->*r.fn)(token, m);
    if (stream_group* g = group_of(token)) wake(*g);  // purges, deletes and updates change it
    return;
  }
  if (rest.starts_with("CONSUMER.") && dispatch_consumer(rest.substr(9), m)) return;
  _api_total.fetch_add(1, std::memory_order_relaxed);
  respond_error(m.reply, "system_response", make_error(err::bad_request));
}

// The meta group is src/repl's (repl_host); nats-server answers only on the meta leader, and
// only to the system account, which Peregrine does not have yet: any account may ask. A
// follower forwards the request to the leader over the replication link and answers itself.
void jetstream::refuse_operator_request(std::string_view rest) {
  // As nats-server: ignored, with a warning at most every 10 s.
  const std::int64_t t = now();
  if (t - _operator_warned_ns < 10 * base::kSecond && _operator_warned_ns != 0) return;
  _operator_warned_ns = t;
  PG_WARN("JetStream API {} request from non-system account \"{}\": ignored (ask as a system account user)", rest,
          account());
}

void jetstream::no_responders(const core::inbound_msg& m) {
  if (m.reply.empty() || !m.no_responders) return;
  _host->publish(m.reply, "", "NATS/1.0 503\r\n\r\n", "");
}

void jetstream::respond(std::string_view reply, const ojson& j) {
  if (reply.empty()) return;
  _host->publish(reply, "", "", j.dump());
}

void jetstream::respond_error(std::string_view reply, std::string_view type, const api_error& e,
                              const ojson& extra) {
  _api_errors.fetch_add(1, std::memory_order_relaxed);
  ojson j;
  j["type"] = "io.nats.jetstream.api.v1." + std::string(type);
  j["error"] = to_json(e);
  for (auto it = extra.begin(); it != extra.end(); ++it) j[it.key()] = it.value();
  respond(reply, j);
}

void jetstream::advisory(std::string_view action, const std::string& name) {
  static const char* kSubj[] = {"CREATED", "DELETED", "UPDATED"};
  const char* what = action == "create" ? kSubj[0] : action == "delete" ? kSubj[1] : kSubj[2];
  const std::string subject = std::string("$JS.EVENT.ADVISORY.STREAM.") + what + "." + name;
  if (!_host->has_interest(subject)) return;
  static thread_local base::rng rng(static_cast<std::uint64_t>(base::read_clock(CLOCK_REALTIME)));
  static constexpr char kAlpha[] = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
  std::string id;
  for (int i = 0; i < 22; ++i) id += kAlpha[rng.below(62)];
  ojson j;
  j["type"] = "io.nats.jetstream.advisory.v1.stream_action";
  j["id"] = id;
  j["timestamp"] = base::rfc3339_nano(now());
  j["stream"] = name;
  j["action"] = action;
  if (!_domain.empty()) j["domain"] = _domain;
  _host->publish(subject, "", "", j.dump());
}

}  // namespace js
