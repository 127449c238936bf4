// $JS.API.CONSUMER.* handlers: CREATE (all subject forms),
// DURABLE.CREATE, INFO, DELETE, NAMES, LIST, MSG.NEXT, PAUSE, UNPIN, LEADER.STEPDOWN;
// consumer persistence (the work-queue rules and retention are the stream group's).
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "src/base/log.h"
#include "src/base/rng.h"
#include "src/core/subject.h"
#include "src/js/jetstream_service.h"
#include "src/js/api_json.h"
#include "src/js/json_decode.h"
#include "src/js/json_util.h"
#include "storage/file_store.h"

namespace js {

namespace {

using json = nlohmann::json;
namespace fs = std::filesystem;

constexpr std::size_t kNamesLimit = 1024;
constexpr std::size_t kListLimit = 256;

// INFO/DELETE bodies: "", "{}" or an object whose values are all empty.
bool empty_request(std::string_view body) {
  body = trim_space(body);
  if (body.empty() || body == "\"\"") return true;
  auto j = json::parse(body, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return false;
  for (auto it = j.begin(); it != j.end(); ++it)
    if (!it.value().is_null() && !(it.value().is_string() && it.value().get<std::string>().empty()) &&
        !(it.value().is_number() && it.value() == 0) && !(it.value().is_boolean() && !it.value().get<bool>()))
      return false;
  return true;
}

}  // namespace

// ---- dispatch -------------------------------------------------------------------------

bool jetstream::dispatch_consumer(std::string_view rest, const core::inbound_msg& m) {
  auto toks = core::split_tokens(rest);
  if (toks.size() < 2) return false;
  const std::string_view op = toks[0];
  if (op == "MSG" && toks.size() == 4 && toks[1] == "NEXT") {  // the consumer's own subscription: not an API call
    if (consumer_agent* c = find_consumer(toks[2], toks[3])) {
      if (c->remote()) return true;  // its consumer thread subscribed the pull itself
      group_of(toks[2])->enter();
      c->on_pull_request(m, now());
    } else {
      no_responders(m);  // as nats-server 2.11: no consumer subscribed that subject
    }
    return true;
  }
  struct count_after {
    std::atomic<std::uint64_t>& n;
    ~count_after() { n.fetch_add(1, std::memory_order_relaxed); }
  };
  // Whatever the call changed (config, pause, a new consumer), the group polls next turn.
  struct wake_after {
    jetstream& js;
    std::string_view stream_name;
    ~wake_after() {
      if (stream_group* g = js.group_of(stream_name)) js.wake(*g);
    }
  } waker{*this, toks.size() > 2 && toks[1] != "CREATE" ? toks[2] : toks[1]};
  // Nats-Required-Api-Level above ours: 412 before anything else.
  if (!m.headers.empty()) {
    if (auto lvl = find_header(m.headers, "Nats-Required-Api-Level")) {
      auto want = parse_u64(*lvl);
      if (!want || *want > static_cast<std::uint64_t>(kApiLevel)) {
        static const std::map<std::string_view, std::string_view> kTypes = {
            {"CREATE", "consumer_create_response"}, {"DURABLE", "consumer_create_response"},
            {"INFO", "consumer_info_response"},     {"DELETE", "consumer_delete_response"},
            {"NAMES", "consumer_names_response"},   {"LIST", "consumer_list_response"},
            {"PAUSE", "consumer_pause_response"},   {"UNPIN", "consumer_unpin_response"},
            {"RESET", "consumer_reset_response"},
            {"LEADER", "consumer_leader_stepdown_response"}};
        auto t = kTypes.find(op);
        if (t == kTypes.end()) return false;
        count_after c{_api_total};
        respond_error(m.reply, t->second, make_error(err::min_api_level));
        return true;
      }
    }
  }
  if (op == "CREATE") {
    count_after c{_api_total};
    std::string filter;
    for (std::size_t i = 3; i < toks.size(); ++i) filter += (i > 3 ? "." : "") + std::string(toks[i]);
    api_consumer_create(toks[1], toks.size() > 2 ? toks[2] : "", filter, false, toks.size() > 2, m);
    return true;
  }
  if (op == "DURABLE" && toks[1] == "CREATE") {
    count_after c{_api_total};
    if (toks.size() != 4) {
      respond_error(m.reply, "consumer_create_response", make_error(err::durable_name_not_in_subject));
      return true;
    }
    api_consumer_create(toks[2], toks[3], "", true, true, m);
    return true;
  }
  if ((op == "NAMES" || op == "LIST") && toks.size() == 2) {
    count_after c{_api_total};
    api_consumer_names(toks[1], m, op == "LIST");
    return true;
  }
  if (op == "LEADER" && toks.size() == 4 && toks[1] == "STEPDOWN") {
    count_after c{_api_total};
    respond_error(m.reply, "consumer_leader_stepdown_response", make_error(err::clustering_required));
    return true;
  }
  if (toks.size() != 3) return false;
  count_after c{_api_total};
  if (op == "INFO") api_consumer_info(toks[1], toks[2], m);
  else if (op == "DELETE") api_consumer_delete(toks[1], toks[2], m);
  else if (op == "PAUSE") api_consumer_pause(toks[1], toks[2], m);
  else if (op == "UNPIN") api_consumer_unpin(toks[1], toks[2], m);
  else if (op == "RESET") api_consumer_reset(toks[1], toks[2], m);
  else respond_error(m.reply, "system_response", make_error(err::bad_request));
  return true;
}

consumer_agent* jetstream::find_consumer(std::string_view stream_name, std::string_view name) {
  stream_group* g = group_of(stream_name);
  return g ? g->find_consumer(name) : nullptr;
}

// ---- create ---------------------------------------------------------------------------

void jetstream::api_consumer_create(std::string_view stream_name, std::string_view name, std::string_view filter,
                                    bool durable_api, bool subject_has_name, const core::inbound_msg& m) {
  constexpr std::string_view type = "consumer_create_response";
  create_request req;
  if (auto e = parse_create_request(m.payload, req)) return respond_error(m.reply, type, *e);
  if (auto e = check_create_subject(req, stream_name, name, filter, durable_api, subject_has_name))
    return respond_error(m.reply, type, *e);
  consumer_config& cfg = req.config;
  if (cfg.num_replicas > 1) return respond_error(m.reply, type, make_error(err::replicas_not_supported));
  stream_group* g = group_of(stream_name);
  if (!g) return respond_error(m.reply, type, make_error(err::stream_not_found));
  stream* s = &g->get_stream();
  const std::int64_t acc_pending = _owners->limits.max_ack_pending;
  if (auto e = normalise(cfg, s->config(), req.pedantic, acc_pending)) return respond_error(m.reply, type, *e);
  if (auto e = validate(cfg, s->config(), acc_pending)) return respond_error(m.reply, type, *e);
  if (cfg.name.empty()) cfg.name = random_name(8);
  const std::int64_t t = now();

  if (consumer_agent* existing = find_consumer(stream_name, cfg.name)) {
    if (req.action == create_action::create) {
      if (!same_config(existing->config(), cfg)) return respond_error(m.reply, type, make_error(err::consumer_exists));
      return respond(m.reply, typed_response(type, existing->info_json(t)));
    }
    if (existing->config().durable_name != cfg.durable_name && !cfg.durable_name.empty())
      return respond_error(m.reply, type, make_error(err::consumer_name_in_use));
    if (auto e = check_update(existing->config(), cfg, existing->push_bound()))
      return respond_error(m.reply, type, *e);
    if (auto e = g->check_workqueue(cfg, cfg.name)) return respond_error(m.reply, type, *e);
    const bool refiltered = existing->config().match_filters() != cfg.match_filters();
    existing->update(cfg, t);
    // Interest retention: what no consumer matches any more goes, as nats-server cleans up.
    if (refiltered && s->config().retention == retention_policy::interest) g->drop_unneeded();
    std::string error;
    if (!existing->state_dir().empty() && !save_consumer_meta(*s, *existing, error))
      PG_WARN("JetStream: {}", error);
    return respond(m.reply, typed_response(type, existing->info_json(t)));
  }
  if (req.action == create_action::update) return respond_error(m.reply, type, make_error(err::consumer_does_not_exist));
  if (const std::int64_t maxc = max_consumers_of(s->config()); maxc > 0 && g->consumer_count() >= std::size_t(maxc))
    return respond_error(m.reply, type, make_error(err::max_consumers));
  if (auto e = g->check_workqueue(cfg, cfg.name)) return respond_error(m.reply, type, *e);

  // Durables keep their config (their state too on file streams). Ephemerals of file streams
  // with file state are kept like durables, as nats-server does: restored after a restart,
  // they are deleted by their inactive_threshold if no client comes back.
  const bool persist =
      cfg.durable() || (s->config().storage == storage_type::file && !cfg.mem_storage && !cfg.direct);
  std::string dir = persist ? consumer_dir(*s, cfg.name) : std::string();
  if (persist) {
    std::error_code ec;
    fs::create_directories(dir, ec);
    if (ec) return respond_error(m.reply, type, make_error(err::consumer_store_failed, ec.message()));
  }
  consumer_agent& ref = g->add_consumer(cfg, t, dir, t);
  std::string error;
  if (persist && !save_consumer_meta(*s, ref, error)) {
    (void)g->take_consumer(cfg.name);  // never started: nothing subscribed
    return respond_error(m.reply, type, make_error(err::consumer_store_failed, error));
  }
  ref.start(nullptr, t);
  count_consumers(1);  // before the reply: an INFO after it counts this one
  respond(m.reply, typed_response(type, ref.info_json(t)));
  consumer_advisory("create", s->config().name, cfg.name);
}

// ---- info / delete / names / list -----------------------------------------------------

void jetstream::api_consumer_info(std::string_view stream_name, std::string_view name, const core::inbound_msg& m) {
  constexpr std::string_view type = "consumer_info_response";
  if (!empty_request(m.payload)) return respond_error(m.reply, type, make_error(err::not_empty_request));
  if (!find(stream_name)) return respond_error(m.reply, type, make_error(err::stream_not_found));
  consumer_agent* c = find_consumer(stream_name, name);
  if (!c) return respond_error(m.reply, type, make_error(err::consumer_not_found));
  respond(m.reply, typed_response(type, c->info_json(now())));
}

void jetstream::api_consumer_delete(std::string_view stream_name, std::string_view name, const core::inbound_msg& m) {
  constexpr std::string_view type = "consumer_delete_response";
  if (!empty_request(m.payload)) return respond_error(m.reply, type, make_error(err::not_empty_request));
  stream_group* g = group_of(stream_name);
  if (!g) return respond_error(m.reply, type, make_error(err::stream_not_found));
  if (!g->find_consumer(name)) return respond_error(m.reply, type, make_error(err::consumer_not_found));
  const std::string sname = g->name();
  delete_consumer(*g, std::string(name), false);
  respond(m.reply, ojson{{"type", "io.nats.jetstream.api.v1." + std::string(type)}, {"success", true}});
  consumer_advisory("delete", sname, std::string(name));
}

void jetstream::api_consumer_names(std::string_view stream_name, const core::inbound_msg& m, bool list) {
  const std::string_view type = list ? "consumer_list_response" : "consumer_names_response";
  const ojson zero = ojson{{"total", 0}, {"offset", 0}, {"limit", 0}, {"consumers", ojson::array()}};
  std::int64_t offset = 0;
  jdec::json req;
  if (auto e = jdec::decode_request(m.payload, "JSApiConsumersRequest",
                                    {{"offset", jdec::field_kind::int_}}, req))
    return respond_error(m.reply, type, *e, zero);
  if (auto it = req.find("offset"); it != req.end() && it->is_number_integer()) offset = it->get<std::int64_t>();
  if (offset < 0) offset = 0;
  if (!find(stream_name)) return respond_error(m.reply, type, make_error(err::stream_not_found), zero);
  std::vector<consumer_agent*> all;
  for (auto& [n, c] : group_of(stream_name)->consumers())
    if (!c->config().direct) all.push_back(c.get());
  const std::size_t limit = list ? kListLimit : kNamesLimit;
  ojson page = ojson::array();
  const std::int64_t t = now();
  for (std::size_t i = std::size_t(offset); i < all.size() && page.size() < limit; ++i)
    page.push_back(list ? all[i]->info_json(t) : ojson(all[i]->name()));
  ojson j;
  j["type"] = "io.nats.jetstream.api.v1." + std::string(type);
  j["total"] = all.size();
  j["offset"] = offset;
  j["limit"] = limit;
  j["consumers"] = page;
  respond(m.reply, j);
}

// ---- pause / unpin --------------------------------------------------------------------

void jetstream::api_consumer_pause(std::string_view stream_name, std::string_view name, const core::inbound_msg& m) {
  constexpr std::string_view type = "consumer_pause_response";
  const ojson extra = ojson{{"paused", false}, {"pause_until", base::rfc3339_nano(0)}};
  std::optional<std::int64_t> until;
  if (auto e = parse_pause_request(m.payload, until)) return respond_error(m.reply, type, *e, extra);
  if (!find(stream_name)) return respond_error(m.reply, type, make_error(err::stream_not_found), extra);
  consumer_agent* c = find_consumer(stream_name, name);
  if (!c) return respond_error(m.reply, type, make_error(err::consumer_not_found), extra);
  const std::int64_t t = now();
  c->pause(until, t);
  stream* s = find(stream_name);
  std::string error;
  if (!c->state_dir().empty() && !save_consumer_meta(*s, *c, error)) PG_WARN("JetStream: {}", error);
  const bool paused = c->config().pause_until.has_value();
  ojson j;
  j["type"] = "io.nats.jetstream.api.v1." + std::string(type);
  j["paused"] = paused;
  j["pause_until"] = base::rfc3339_nano(paused ? *c->config().pause_until : 0);
  if (paused) j["pause_remaining"] = *c->config().pause_until - t;
  respond(m.reply, j);
}

void jetstream::api_consumer_unpin(std::string_view stream_name, std::string_view name, const core::inbound_msg& m) {
  constexpr std::string_view type = "consumer_unpin_response";
  std::string group;
  if (auto e = parse_unpin_request(m.payload, group)) return respond_error(m.reply, type, *e);
  if (auto e = check_priority_group_name(group)) return respond_error(m.reply, type, *e);
  if (!find(stream_name)) return respond_error(m.reply, type, make_error(err::stream_not_found));
  consumer_agent* c = find_consumer(stream_name, name);
  if (!c) return respond_error(m.reply, type, make_error(err::consumer_not_found));
  const auto& groups = c->config().priority_groups;
  if (std::find(groups.begin(), groups.end(), group) == groups.end())
    return respond_error(m.reply, type, make_error(err::priority_group_unknown));
  c->unpin(group, now());
  respond(m.reply, ojson{{"type", "io.nats.jetstream.api.v1." + std::string(type)}});
}

// ---- lifecycle, retention, persistence ------------------------------------------------

void jetstream::delete_consumer(stream_group& g, const std::string& name, bool advise) {
  std::unique_ptr<consumer_agent> c = g.take_consumer(name);
  if (!c) return;
  count_consumers(-1);
  stream& s = g.get_stream();
  if (!c->state_dir().empty()) {
    std::error_code ec;
    std::string error;
    if (!forget_consumer_meta(s, name, error)) PG_WARN("JetStream: {}", error);
    c->wait_state_written();
    fs::remove_all(c->state_dir(), ec);
  }
  g.retire_consumer(std::move(c));
  if (advise) consumer_advisory("delete", s.config().name, name);
}

std::string jetstream::consumer_dir(const stream& s, const std::string& name) const {
  return s.dir() + "/obs/" + name;
}

namespace {
const std::string kConsumerMetaPrefix = "consumer/";
}  // namespace

bool jetstream::save_consumer_meta(stream& s, const consumer_agent& c, std::string& error) {
  ojson j;
  j["config"] = to_json(c.config(), false);
  j["created"] = base::rfc3339_nano(c.created());
  if (!file_store_of(s)) return write_file_atomic(c.state_dir(), "meta.inf", j.dump(), error);
  if (!write_store_meta(s, kConsumerMetaPrefix + c.config().name, j.dump(), error)) return false;
  std::error_code ec;
  fs::remove(c.state_dir() + "/meta.inf", ec);  // from an older version; the log wins at load
  return true;
}

bool jetstream::forget_consumer_meta(stream& s, const std::string& name, std::string& error) {
  if (!file_store_of(s)) return true;  // meta.inf goes with the consumer's directory
  return write_store_meta(s, kConsumerMetaPrefix + name, {}, error);
}

void jetstream::load_consumers(stream_group& g) {
  stream& s = g.get_stream();
  std::error_code ec;
  const std::int64_t t = now();
  // name -> (metadata text, where it came from); the stream's log wins over a meta.inf.
  std::map<std::string, std::pair<std::string, std::string>> found;
  for (const auto& entry : fs::directory_iterator(s.dir() + "/obs", ec)) {
    if (!entry.is_directory()) continue;
    std::ifstream in(entry.path() / "meta.inf");
    if (!in) continue;
    std::stringstream ss;
    ss << in.rdbuf();
    found[entry.path().filename().string()] = {ss.str(), entry.path().string()};
  }
  if (storage::file_store* store = file_store_of(s))
    for (const auto& [key, value] : store->meta())
      if (key.starts_with(kConsumerMetaPrefix))
        found[key.substr(kConsumerMetaPrefix.size())] = {value, s.dir() + " (log)"};
  for (const auto& [name, text_from] : found) {
    const auto& [text, from] = text_from;
    auto j = nlohmann::ordered_json::parse(text, nullptr, false);  // key order kept
    std::optional<consumer_config> cfg;
    if (!j.is_discarded() && j.is_object() && j.contains("config")) cfg = consumer_config_from_json(j["config"]);
    if (!cfg || cfg->name != name) {
      PG_WARN("JetStream: skipping consumer '{}' in {} (unreadable metadata)", name, from);
      continue;
    }
    const std::string dir = consumer_dir(s, name);
    fs::create_directories(dir, ec);  // the state file's home (absent if the create crashed early)
    std::int64_t created = t;
    if (j.contains("created") && j["created"].is_string())
      if (auto ct = parse_time(j["created"].get<std::string>())) created = *ct;
    g.add_consumer(*cfg, created, dir, t).start(nullptr, t);
  }
  g.consumers_restored();
}

void jetstream::consumer_advisory(std::string_view action, const std::string& stream, const std::string& consumer) {
  const char* what = action == "create" ? "CREATED" : "DELETED";
  publish_event(std::string("$JS.EVENT.ADVISORY.CONSUMER.") + what + "." + stream + "." + consumer, "consumer_action",
                ojson{{"stream", stream}, {"consumer", consumer}, {"action", action}});
}

}  // namespace js
