// STREAM.SNAPSHOT / STREAM.RESTORE: the API handlers and their chunk sessions.
#include "src/js/stream_snapshot.h"

#include <algorithm>
#include <charconv>
#include <ctime>
#include <filesystem>

#include "src/base/log.h"
#include "src/base/go_text.h"
#include "src/base/rng.h"
#include "src/core/subject.h"
#include "src/js/consumer_agent.h"
#include "src/js/api_json.h"
#include "src/js/json_decode.h"
#include "src/js/json_util.h"
#include "src/js/jetstream_service.h"
#include "src/js/snapshot_archive.h"
#include "storage/consumer_state.h"

namespace js {

namespace fs = std::filesystem;

namespace {
constexpr std::int64_t kMinSize = 1024;
constexpr std::int64_t kDefaultChunk = 128 * 1024, kMaxChunk = 1024 * 1024;
constexpr std::int64_t kDefaultWindow = 8 * 1024 * 1024, kMaxWindow = 32 * 1024 * 1024;
// Window full with no ack for this long ends a snapshot (408 No Flow Response); a restore
// with no chunk for this long is dropped, as nats-server drops a stalled one.
constexpr std::int64_t kStallNs = 5 * base::kSecond;
// A snapshot whose deliver subject has no subscriber for this long ends (408 No Interest).
constexpr std::int64_t kNoInterestNs = 2 * base::kSecond;
constexpr std::string_view kAckPre = "$JS.SNAPSHOT.ACK.";
constexpr std::string_view kRestorePre = "$JS.SNAPSHOT.RESTORE.";

using jdec::field_kind;


}  // namespace

snapshot_sizes clamp_snapshot_sizes(std::int64_t chunk_size, std::int64_t window_size, std::int64_t max_payload) {
  std::int64_t chunk = chunk_size == 0 ? kDefaultChunk : std::clamp(chunk_size, kMinSize, kMaxChunk);
  if (max_payload > 0) chunk = std::min(chunk, max_payload);
  const std::int64_t window = window_size == 0 ? kDefaultWindow : std::clamp(window_size, kMinSize, kMaxWindow);
  return {static_cast<std::size_t>(chunk), static_cast<std::size_t>(window)};
}

std::optional<snapshot_flow::chunk_ref> snapshot_flow::next(std::int64_t now) {
  if (done()) return std::nullopt;
  const std::size_t len = std::min(_sizes.chunk, _total - _offset);
  if (_outstanding > 0 && _outstanding + len > _sizes.window) return std::nullopt;
  if (_outstanding == 0) _last_progress = now;  // nothing owed: the stall clock starts now
  chunk_ref c{_offset, len, ++_index};
  _offset += len;
  _outstanding += len;
  return c;
}

void snapshot_flow::on_ack(std::size_t bytes, std::int64_t now) {
  _outstanding -= std::min(bytes, _outstanding);
  _last_progress = now;
}

// ---- sessions --------------------------------------------------------------------------

std::string snapshot_sessions::new_id() {
  static base::rng rng(static_cast<std::uint64_t>(base::read_clock(CLOCK_REALTIME)));
  static constexpr char kAlpha[] = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
  std::string id;
  for (int i = 0; i < 22; ++i) id += kAlpha[rng.below(62)];
  return id;
}

void snapshot_sessions::add_snapshot(const std::string& stream, std::string deliver, std::string archive,
                                     snapshot_sizes sizes) {
  if (!_polled) _js._host->add_poller(this), _polled = true;
  const std::int64_t now = _js.now();
  std::string prefix = std::string(kAckPre) + stream + "." + new_id() + ".";
  const std::uint64_t sub = _js._host->subscribe(prefix + ">", "", this);
  snapshot s{stream, std::move(deliver), prefix, std::move(archive), sub,
             snapshot_flow(0, sizes, kStallNs, now), 0};
  s.flow = snapshot_flow(s.archive.size(), sizes, kStallNs, now);
  auto [it, ok] = _snapshots.emplace(prefix, std::move(s));
  pump(it->second, now);
  if (it->second.flow.done()) end_snapshot(it, "");
}

std::size_t snapshot_sessions::pump(snapshot& s, std::int64_t now) {
  std::size_t sent = 0;
  while (auto c = s.flow.next(now)) {
    const std::string reply = s.ack_prefix + std::to_string(c->len) + "." + std::to_string(c->index);
    _js._host->publish(s.deliver, reply, "", std::string_view(s.archive).substr(c->offset, c->len));
    ++sent;
  }
  return sent;
}

void snapshot_sessions::end_snapshot(std::map<std::string, snapshot>::iterator it, std::string_view status_headers) {
  _js._host->publish(it->second.deliver, "", status_headers, "");  // EOF
  if (it->second.sub) _js._host->unsubscribe(it->second.sub);
  _snapshots.erase(it);
}

std::string snapshot_sessions::add_restore(const stream_config& cfg) {
  if (!_polled) _js._host->add_poller(this), _polled = true;
  std::string subject = std::string(kRestorePre) + cfg.name + "." + new_id();
  const std::uint64_t sub = _js._host->subscribe(subject, "", this);
  if (sub == 0) return {};
  _restores.emplace(subject, restore{cfg, sub, {}, _js.now()});
  return subject;
}

bool snapshot_sessions::restoring(std::string_view stream) const {
  for (const auto& [subject, r] : _restores)
    if (r.cfg.name == stream) return true;
  return false;
}

void snapshot_sessions::clear() {
  for (auto& [p, s] : _snapshots) _js._host->unsubscribe(s.sub);
  for (auto& [p, r] : _restores) _js._host->unsubscribe(r.sub);
  _snapshots.clear();
  _restores.clear();
}

void snapshot_sessions::on_msg(const core::inbound_msg& m) {
  if (m.subject.starts_with(kAckPre)) {
    // Prefix ends with '.', so the longest key <= subject that the subject starts with is it.
    auto it = _snapshots.upper_bound(std::string(m.subject));
    if (it == _snapshots.begin()) return;
    --it;
    if (!m.subject.starts_with(it->first)) return;
    std::string_view rest = m.subject.substr(it->first.size());
    std::size_t bytes = 0;
    std::from_chars(rest.data(), rest.data() + rest.size(), bytes);
    const std::int64_t now = _js.now();
    it->second.flow.on_ack(bytes, now);
    pump(it->second, now);
    if (it->second.flow.done()) end_snapshot(it, "");
    return;
  }
  auto it = _restores.find(std::string(m.subject));
  if (it != _restores.end()) on_chunk(it, m);
}

void snapshot_sessions::on_chunk(std::map<std::string, restore>::iterator it, const core::inbound_msg& m) {
  restore& r = it->second;
  constexpr std::string_view type = "stream_create_response";
  auto finish = [&](const ojson& answer) {
    if (!m.reply.empty()) _js.respond(m.reply, answer);
    _js._host->unsubscribe(r.sub);
    _restores.erase(it);
  };
  if (m.reply.empty()) {
    PG_WARN("JetStream: restore for stream '{} > {}' requires reply subject for each chunk", _js.account(), r.cfg.name);
    return finish({});
  }
  r.last_activity = _js.now();
  if (!m.payload.empty()) {
    const std::int64_t limit = _js.storage_limit(storage_type::file);
    if (limit >= 0 && _js.used_bytes(storage_type::file) + std::int64_t(r.data.size() + m.payload.size()) > limit) {
      ++_js._api_errors;
      return finish(typed_response(type, ojson{{"error", to_json(make_error(err::insufficient_resources))}}));
    }
    r.data.append(m.payload);
    _js._host->publish(m.reply, "", "", "");
    return;
  }
  ojson answer = _js.finish_restore(r.cfg, r.data);
  finish(answer);
}

std::size_t snapshot_sessions::poll(base::nanos) {
  if (_snapshots.empty() && _restores.empty()) return 0;
  const std::int64_t now = _js.now();
  std::size_t work = 0;
  for (auto it = _snapshots.begin(); it != _snapshots.end();) {
    auto cur = it++;
    snapshot& s = cur->second;
    if (!_js._host->has_interest(s.deliver)) {
      if (s.no_interest_since == 0) s.no_interest_since = now;
      if (now - s.no_interest_since >= kNoInterestNs) {
        PG_WARN("JetStream: snapshot of stream '{} > {}' lost interest", _js.account(), s.stream);
        end_snapshot(cur, "NATS/1.0 408 No Interest\r\n\r\n");
        ++work;
      }
      continue;
    }
    s.no_interest_since = 0;
    if (s.flow.stalled(now)) {
      PG_WARN("JetStream: snapshot of stream '{} > {}' got no flow response", _js.account(), s.stream);
      end_snapshot(cur, "NATS/1.0 408 No Flow Response\r\n\r\n");
      ++work;
    }
  }
  for (auto it = _restores.begin(); it != _restores.end();) {
    auto cur = it++;
    if (now - cur->second.last_activity >= kStallNs) {
      PG_WARN("JetStream: restore for stream '{} > {}' is stalled", _js.account(), cur->second.cfg.name);
      _js._host->unsubscribe(cur->second.sub);
      _restores.erase(cur);
      ++work;
    }
  }
  return work;
}

base::nanos snapshot_sessions::idle_limit(base::nanos) {
  if (_snapshots.empty() && _restores.empty()) return 0;
  return 100 * base::kMilli;  // timeouts are seconds; a coarse tick is enough
}

// ---- API handlers ----------------------------------------------------------------------

void jetstream::api_snapshot(std::string_view token, const core::inbound_msg& m) {
  constexpr std::string_view type = "stream_snapshot_response";
  if (trim_space(m.payload).empty()) return respond_error(m.reply, type, make_error(err::bad_request));
  stream_group* g = group_of(token);
  if (!g) return respond_error(m.reply, type, make_error(err::stream_not_found));
  jdec::json req;
  if (auto e = jdec::decode_request(m.payload, "JSApiStreamSnapshotRequest",
                                    {{"deliver_subject", field_kind::string},
                                     {"no_consumers", field_kind::boolean},
                                     {"chunk_size", field_kind::int_},
                                     {"window_size", field_kind::int_},
                                     {"jsck", field_kind::boolean}},
                                    req))
    return respond_error(m.reply, type, *e);
  std::string deliver;
  bool no_consumers = false, jsck = false;
  std::int64_t chunk_size = 0, window_size = 0;
  if (!get_field(req, "deliver_subject", deliver) || !get_field(req, "no_consumers", no_consumers) ||
      !get_field(req, "chunk_size", chunk_size) || !get_field(req, "window_size", window_size) ||
      !get_field(req, "jsck", jsck))
    return respond_error(m.reply, type, make_error(err::invalid_json));
  if (!core::valid_subject(deliver)) return respond_error(m.reply, type, make_error(err::snapshot_deliver_subject));

  stream& s = g->get_stream();
  storage::stream_store& store = s.store();
  (void)store.flush();  // what was acked is in the archive
  snapshot_writer w;
  const storage::stream_state st = store.state(false);
  ojson meta;
  meta["config"] = to_json(s.config(), false);
  meta["created"] = base::rfc3339_nano(s.created());
  meta["first_seq"] = st.first_seq;
  meta["last_seq"] = st.last_seq;
  w.stream(meta);
  // jsck (check messages) holds trivially: every record is read back through the store's
  // checksummed reads here.
  for (std::uint64_t next = st.first_seq; next <= st.last_seq && next > 0;) {
    auto msg = store.load_next("", next);
    if (!msg.ok()) break;
    next = msg->seq + 1;
    w.message(*msg);
  }
  if (!no_consumers)
    for (const auto& [name, c] : g->consumers()) {
      if (!c->config().durable()) continue;
      ojson cj;
      cj["config"] = to_json(c->config(), false);
      cj["created"] = base::rfc3339_nano(c->created());
      cj["state"] = consumer_state_json(c->durable_state());
      w.consumer(cj);
    }
  std::string archive = w.finish();
  const ojson info = stream_info_json(s, false, "", 0, false);
  ojson resp;
  resp["type"] = "io.nats.jetstream.api.v1." + std::string(type);
  resp["config"] = info["config"];
  resp["state"] = info["state"];
  respond(m.reply, resp);
  PG_INFO("JetStream: snapshot of stream '{} > {}' ({} bytes) to {}", account(), s.config().name, archive.size(), deliver);
  if (!_snapshots) _snapshots = std::make_unique<snapshot_sessions>(*this);
  _snapshots->add_snapshot(s.config().name, deliver,
                           std::move(archive), clamp_snapshot_sizes(chunk_size, window_size, _host->options().max_payload));
}

void jetstream::api_restore(std::string_view token, const core::inbound_msg& m) {
  constexpr std::string_view type = "stream_restore_response";
  if (trim_space(m.payload).empty()) return respond_error(m.reply, type, make_error(err::bad_request));
  auto j = ojson::parse(m.payload, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return respond_error(m.reply, type, make_error(err::invalid_json));
  stream_config cfg;
  const ojson config = j.contains("config") && j["config"].is_object() ? j["config"] : ojson::object();
  ojson named = config;
  if (!named.contains("name") || (named["name"].is_string() && named["name"].get<std::string>().empty()))
    named["name"] = std::string(token);
  if (auto e = parse_stream_config(named.dump(), cfg)) return respond_error(m.reply, type, *e);
  if (token != cfg.name) return respond_error(m.reply, type, make_error(err::name_mismatch));
  if (find(token) || (_snapshots && _snapshots->restoring(token)))
    return respond_error(m.reply, type, make_error(err::name_in_use_restore));
  if (auto e = normalise(cfg)) return respond_error(m.reply, type, *e);
  if (auto e = validate(cfg)) return respond_error(m.reply, type, *e);
  if (cfg.num_replicas > 1) return respond_error(m.reply, type, make_error(err::replicas_not_supported));
  if (!_snapshots) _snapshots = std::make_unique<snapshot_sessions>(*this);
  const std::string subject = _snapshots->add_restore(cfg);
  if (subject.empty()) return respond_error(m.reply, type, make_error(err::restore_subscribe, "invalid subject"));
  respond(m.reply, typed_response(type, ojson{{"deliver_subject", subject}}));
}

ojson jetstream::finish_restore(const stream_config& cfg_in, const std::string& data) {
  constexpr std::string_view type = "stream_create_response";
  auto fail = [&](const api_error& e) {
    ++_api_errors;
    return typed_response(type, ojson{{"error", to_json(e)}});
  };
  std::string error;
  auto contents = read_snapshot(data, error);
  if (!contents) return fail(make_error(err::restore_failed, error));
  stream_config cfg = cfg_in;
  if (find(cfg.name)) return fail(make_error(err::name_in_use_restore));
  if (auto e = check_overlap(cfg)) return fail(*e);
  if (auto e = check_limits(cfg, {}, true)) return fail(*e);

  const std::string dir = streams_dir() + "/" + cfg.name;
  std::error_code ec;
  fs::remove_all(dir, ec);  // nothing of a stream that does not exist may stay in the way
  fs::create_directories(dir, ec);
  if (ec) return fail(make_error(err::restore_failed, "cannot create " + dir + ": " + ec.message()));
  // Built whole before it is placed: a failure anywhere leaves no half stream.
  auto cleanup = [&](std::string why) {
    std::error_code ec2;
    fs::remove_all(dir, ec2);
    PG_WARN("JetStream: restore of stream '{} > {}' failed: {}", account(), cfg.name, why);
    return fail(make_error(err::restore_failed, why));
  };
  auto store = open_store(cfg, dir, error);
  if (!store) return cleanup(error);
  for (const auto& msg : contents->messages) {
    if (msg.seq <= store->last_seq()) {
      (void)store->close();
      return cleanup("snapshot corrupt: message sequence out of order");
    }
    if (msg.seq > store->last_seq() + 1) (void)store->skip(msg.seq - store->last_seq() - 1);
    if (auto r = store->append(msg.subject, msg.headers, msg.payload, msg.ts, msg.ttl); !r.ok()) {
      (void)store->close();
      return cleanup(std::string("cannot store message: ") + std::string(base::errc_name(r.code())));
    }
  }
  const std::uint64_t last = contents->stream.value("last_seq", std::uint64_t(0));
  if (last > store->last_seq()) (void)store->skip(last - store->last_seq());
  if (auto st = store->flush(); !st.ok()) {
    (void)store->close();
    return cleanup(std::string("cannot write stream: ") + std::string(base::errc_name(st.code())));
  }
  std::int64_t created = now();
  if (contents->stream.contains("created") && contents->stream["created"].is_string())
    if (auto t = parse_time(contents->stream["created"].get<std::string>())) created = *t;
  auto g = make_stream(cfg, created, error, std::move(store));
  if (g && !save_meta(g->get_stream(), error)) {
    (void)g->get_stream().close();
    g.reset();
  }
  if (!g) return cleanup(error);
  g->get_stream().subscribe();
  stream_group& ref = *g;
  place(std::move(g));
  report_later(cfg.name);  // into the hub's placement table (NAMES, LIST, overlap checks)
  maybe_report();

  const std::int64_t t = now();
  for (const auto& cj : contents->consumers) {
    auto ccfg = consumer_config_from_json(cj["config"]);
    auto state = cj.contains("state") ? consumer_state_from_json(cj["state"]) : std::nullopt;
    if (!ccfg || !state) {
      PG_WARN("JetStream: restore of stream '{} > {}': skipping an unreadable consumer", account(), cfg.name);
      continue;
    }
    const std::string cdir = consumer_dir(ref.get_stream(), ccfg->name);
    fs::create_directories(cdir, ec);
    // The state file first, so the consumer resumes from it after a restart too.
    if (cfg.storage == storage_type::file && !ccfg->mem_storage) {
      if (auto cs = storage::file_consumer_store::open(cdir, "state"); cs.ok()) {
        (void)(*cs)->update(*state);
        (void)(*cs)->flush();
      }
    }
    std::int64_t ccreated = t;
    if (cj.contains("created") && cj["created"].is_string())
      if (auto ct = parse_time(cj["created"].get<std::string>())) ccreated = *ct;
    consumer_agent& c = ref.add_consumer(*ccfg, ccreated, cdir, t);
    if (!save_consumer_meta(ref.get_stream(), c, error)) PG_WARN("JetStream: {}", error);
    c.start(&*state, t);
  }
  wake(ref);
  PG_INFO("JetStream: restored stream '{} > {}' ({} messages, {} consumers)", account(), cfg.name, contents->messages.size(),
          contents->consumers.size());
  return typed_response(type, stream_info_json(ref.get_stream(), false, "", 0, false));
}

}  // namespace js
