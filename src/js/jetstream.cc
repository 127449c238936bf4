// JetStream service: start/stop, $JS.API dispatch, stream persistence and advisories.
#include "src/js/jetstream.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "src/base/log.h"
#include "src/base/rng.h"
#include "src/core/subject.h"
#include "src/core/subject_overlap.h"
#include "src/js/api_worker.h"
#include "src/js/big_request.h"
#include "src/js/json_util.h"
#include "src/js/stream_source.h"
#include "src/js/jetstream_service.h"
#include "storage/file_store.h"
#include "storage/memory_store.h"

namespace js {

namespace fs = std::filesystem;

std::unique_ptr<core::service> make_jetstream_service() { return std::make_unique<jetstream>(); }

// The worker goes first: a job it runs refers to _big.
jetstream::~jetstream() { _worker.reset(); }

bool jetstream::start(core::service_host& host, std::string& error) {
  _host = &host;
  _domain = host.options().js_domain;
  std::error_code ec;
  fs::create_directories(streams_dir(), ec);
  if (ec) {
    error = "cannot create " + streams_dir() + ": " + ec.message();
    return false;
  }
  _api_sub = host.subscribe("$JS.API.>", "", this);
  if (!_domain.empty()) _domain_sub = host.subscribe("$JS." + _domain + ".API.>", "", this);
  if (_api_sub == 0) {
    error = "cannot subscribe $JS.API.>";
    return false;
  }
  host.add_poller(this);
  load_streams();
  return true;
}

void jetstream::stop() {
  _worker.reset();  // a big request in flight, and what waits behind it, go unanswered
  _big.reset();
  _deferred.clear();
  // Every consumer first (409s to waiting pulls, state flushed), then every stream.
  for (auto& [name, g] : _streams) g->shutdown_consumers();
  for (auto& [name, g] : _streams) g->get_stream().close();
  if (_api_sub) _host->unsubscribe(_api_sub);
  if (_domain_sub) _host->unsubscribe(_domain_sub);
  _api_sub = _domain_sub = 0;
}

std::size_t jetstream::poll(base::nanos) {
  _retired_streams.clear();
  std::size_t work = poll_groups(now());
  work += poll_big();
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
    _active.reschedule(*g, g->busy(t), g->next_wakeup(t));
  }
  return work;
}

void jetstream::wake(stream_group& g) { _active.wake(g); }

void jetstream::place(std::unique_ptr<stream_group> g) {
  _active.add(*g);
  const std::string name = g->name();
  _streams.emplace(name, std::move(g));
}

void jetstream::retire(const std::string& name) {
  auto it = _streams.find(name);
  if (it == _streams.end()) return;
  _active.remove(*it->second);
  _retired_streams.push_back(std::move(it->second));
  _streams.erase(it);
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
  if (rest.starts_with("DIRECT.")) {
    // Served by the stream's own responder; nothing answers for a stream that does not
    // exist or does not allow direct gets (or a subject no stream subscribes).
    const stream* s = nullptr;
    bool mirrored = false;  // a mirror_direct mirror answers for its origin's name
    if (rest.starts_with("DIRECT.GET.")) {
      std::string_view name = rest.substr(11);
      name = name.substr(0, name.find('.'));
      s = find(name);
      // A big create being applied has no direct responder yet: the stream is not there.
      if (_big && !_big->update && _big->s == s) s = nullptr;
      if (s == nullptr || !s->config().allow_direct) mirrored = mirror_serves_direct(name);
    }
    if ((s == nullptr || !s->config().allow_direct) && !mirrored) no_responders(m);
    return;
  }
  if (must_wait(rest)) {  // behind a big request in flight (big_request.cc)
    _deferred.push_back({std::string(m.subject), std::string(m.reply), std::string(m.headers),
                         std::string(m.payload), m.client_id, m.no_responders});
    return;
  }

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
      std::uint64_t& n;
      ~count_after() { ++n; }
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
  ++_api_total;
  respond_error(m.reply, "system_response", make_error(err::bad_request));
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
  ++_api_errors;
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
  static base::rng rng(static_cast<std::uint64_t>(base::read_clock(CLOCK_REALTIME)));
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

// ---- persistence

std::string jetstream::streams_dir() const { return _host->options().store_dir + "/jetstream/$G/streams"; }

namespace {
constexpr const char* kStreamMetaKey = "stream";
}  // namespace

storage::file_store* jetstream::file_store_of(stream& s) {
  if (s.config().storage != storage_type::file) return nullptr;
  return dynamic_cast<storage::file_store*>(&s.store());
}

bool jetstream::write_store_meta(stream& s, const std::string& key, std::string value, std::string& error) {
  storage::file_store* store = file_store_of(s);
  base::status st = store ? store->set_meta(key, std::move(value)) : base::status(base::errc::internal);
  // Written before the API call is answered (it survives kill -9 from then on). A new
  // store's first-block syncs may still be running off-thread; messages wait for them.
  if (st) st = store->write_through();
  if (!st) {
    error = fmt::format("cannot write metadata '{}' of stream '{}': {}", key, s.config().name,
                        base::errc_name(st.code()));
    return false;
  }
  return true;
}

bool jetstream::save_meta(stream& s, std::string& error) {
  ojson j = to_json(s.config(), false);
  j["created"] = base::rfc3339_nano(s.created());
  return save_meta_text(s, j.dump(), error);
}

bool jetstream::save_meta_text(stream& s, std::string text, std::string& error) {
  if (!file_store_of(s)) return write_file_atomic(s.dir(), "meta.inf", text, error);
  if (!write_store_meta(s, kStreamMetaKey, std::move(text), error)) return false;
  // A meta.inf from before configs lived in the log: the log wins at load, so drop the stale copy.
  std::error_code ec;
  fs::remove(s.dir() + "/meta.inf", ec);
  return true;
}

std::unique_ptr<storage::file_store> jetstream::open_file_store(const std::string& name, const std::string& dir,
                                                                std::string& error) {
  storage::file_store_config fc;
  fc.dir = dir + "/msgs";
  fc.dur = _host->options().durability == "sync" ? storage::durability::sync : storage::durability::write;
  fc.acct = storage::byte_accounting::file;
  fc.block_size = 8ull << 20;
  fc.first_block_size = 16ull << 10;  // a small stream (a KV bucket) takes 16 KiB, not 8 MiB
  auto fsr = storage::file_store::open(fc);
  if (!fsr.ok()) {
    error = std::string("cannot open stream store: ") + std::string(base::errc_name(fsr.code()));
    return nullptr;
  }
  const auto& rep = (*fsr)->recovery();
  for (const auto& note : rep.notes) PG_WARN("JetStream stream '{}': {}", name, note);
  return std::move(*fsr);
}

std::unique_ptr<storage::stream_store> jetstream::open_store(const stream_config& cfg, const std::string& dir,
                                                             std::string& error) {
  if (cfg.storage == storage_type::memory)
    return std::make_unique<storage::memory_store>(storage::byte_accounting::memory);
  return open_file_store(cfg.name, dir, error);
}

std::unique_ptr<stream_group> jetstream::make_stream(const stream_config& cfg, std::int64_t created, std::string& error,
                                               std::unique_ptr<storage::stream_store> store) {
  const std::string dir = streams_dir() + "/" + cfg.name;
  if (!store) {
    std::error_code ec;
    fs::create_directories(dir, ec);
    if (ec) {
      error = "cannot create " + dir + ": " + ec.message();
      return nullptr;
    }
    store = open_store(cfg, dir, error);
  }
  if (!store) return nullptr;
  return std::make_unique<stream_group>(*this, cfg, created, dir, std::move(store));
}

void jetstream::load_streams() {
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(streams_dir(), ec)) {
    if (!entry.is_directory()) continue;
    const std::string name = entry.path().filename().string();
    std::string text, error;
    if (std::ifstream in(entry.path() / "meta.inf"); in) {
      std::stringstream ss;
      ss << in.rdbuf();
      text = ss.str();
    }
    // A file stream's config is in its log (a meta.inf there is from an older version).
    std::unique_ptr<storage::file_store> fstore;
    if (fs::exists(entry.path() / "msgs")) {
      fstore = open_file_store(name, entry.path().string(), error);
      if (!fstore) {
        PG_ERROR("JetStream: cannot restore stream '{}': {}", name, error);
        continue;
      }
      if (auto it = fstore->meta().find(kStreamMetaKey); it != fstore->meta().end()) text = it->second;
    }
    auto j = nlohmann::ordered_json::parse(text, nullptr, false);  // key order kept
    std::optional<stream_config> cfg;
    if (!text.empty() && !j.is_discarded()) cfg = config_from_json(j);
    if (!cfg || cfg->name != name) {
      PG_WARN("JetStream: skipping stream directory {} (unreadable metadata)", entry.path().string());
      if (fstore) (void)fstore->close();
      continue;
    }
    std::int64_t created = now();
    if (j.contains("created") && j["created"].is_string())
      if (auto t = parse_time(j["created"].get<std::string>())) created = *t;
    std::unique_ptr<storage::stream_store> store;
    if (cfg->storage == storage_type::file) store = std::move(fstore);
    if (fstore) (void)fstore->close();
    auto s = make_stream(*cfg, created, error, std::move(store));
    if (!s) {
      PG_ERROR("JetStream: cannot restore stream '{}': {}", cfg->name, error);
      continue;
    }
    s->get_stream().subscribe();
    const auto st = s->get_stream().store().state(false);
    PG_INFO("  Restored {} messages for stream '$G > {}'", st.msgs, cfg->name);
    stream_group& ref = *s;
    place(std::move(s));
    load_consumers(ref);
  }
}

std::optional<api_error> jetstream::check_overlap(const stream_config& cfg) const {
  // Tries and a hash set, not a pairwise loop (see core::sets_overlap).
  std::vector<std::string_view> others;
  for (const auto& [name, g] : _streams)
    if (name != cfg.name) {
      const auto& subjects = g->get_stream().config().subjects;
      others.insert(others.end(), subjects.begin(), subjects.end());
    }
  if (!others.empty() && core::sets_overlap({cfg.subjects.begin(), cfg.subjects.end()}, others))
    return make_error(err::subjects_overlap);
  return std::nullopt;
}

// A mirror whose origin is here: its max_msg_size may not be smaller (10030), and
// mirror_direct follows the origin's allow_direct.
std::optional<api_error> jetstream::check_mirror_origin(stream_config& cfg) {
  if (!cfg.has_mirror()) return std::nullopt;
  stream* o = find(parse_source_spec(cfg.mirror).name);
  if (!o) return std::nullopt;
  const auto origin_max = o->config().max_msg_size;
  if (cfg.max_msg_size > 0 && origin_max > 0 && cfg.max_msg_size < origin_max) return make_error(10030);
  cfg.mirror_direct = o->config().allow_direct;
  return std::nullopt;
}

bool jetstream::mirror_serves_direct(std::string_view origin) const {
  for (const auto& [name, g] : _streams) {
    const auto& c = g->get_stream().config();
    if (c.mirror_direct && c.has_mirror() && c.mirror.value("name", std::string()) == origin) return true;
  }
  return false;
}

// ---- server-wide accounting (resources.h has the rules)

std::int64_t jetstream::storage_limit(storage_type t) const {
  const auto& o = _host->options();
  return t == storage_type::memory ? o.max_memory_store : o.max_file_store;
}

storage_usage jetstream::usage(storage_type t, std::string_view except_stream) const {
  storage_usage u;
  for (const auto& [name, g] : _streams) {
    const stream& s = g->get_stream();
    if (s.config().storage != t || name == except_stream) continue;
    if (s.config().max_bytes > 0) u.reserved += s.config().max_bytes;
    u.used += g->reported_bytes();
  }
  return u;
}

bool jetstream::storage_exhausted(storage_type t) const {
  const std::int64_t limit = storage_limit(t);
  return limit >= 0 && js::storage_exhausted(limit, storage_usage{0, used_bytes(t)});
}

}  // namespace js
