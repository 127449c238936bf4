// $JS.API stream handlers: account info, CREATE/UPDATE/INFO/DELETE/NAMES/LIST, PURGE,
// MSG.GET and MSG.DELETE.
#include <algorithm>
#include <iterator>
#include <filesystem>
#include <initializer_list>
#include <set>

#include "src/core/subject.h"
#include "src/js/big_request.h"
#include "src/js/cluster_streams.h"
#include "src/js/jetstream_service.h"
#include "src/js/api_json.h"
#include "src/js/json_decode.h"
#include "src/js/json_util.h"

namespace js {

namespace {

using json = nlohmann::json;

constexpr std::size_t kNamesLimit = 1024;
constexpr std::size_t kListLimit = 256;

using jdec::field_kind;

// A STREAM.NAMES or STREAM.LIST request: its page offset (from 0) and subject filter.
std::optional<api_error> decode_page_request(std::string_view body, std::string_view go_struct,
                                             std::int64_t& offset, std::string& filter) {
  jdec::json req;
  if (auto e = jdec::decode_request(body, go_struct, {{"offset", field_kind::int_}, {"subject", field_kind::string}},
                                    req))
    return e;
  if (!get_field(req, "offset", offset) || !get_field(req, "subject", filter)) return make_error(err::invalid_json);
  offset = std::max<std::int64_t>(offset, 0);
  return std::nullopt;
}

// A stream with these subjects is listed for `filter` (empty: every stream).
bool matches_filter(const std::vector<std::string>& subjects, const std::string& filter) {
  bool match = filter.empty();
  for (const auto& subj : subjects) match = match || core::subjects_overlap(subj, filter);
  return match;
}

}  // namespace

ojson jetstream::stream_info_json(stream& s, bool deleted_details, std::string_view filter, std::uint64_t offset,
                                  bool paged, bool config_placeholder) {
  ojson j;
  std::map<std::string, std::uint64_t> subjects;
  std::uint64_t total = 0, limit = 0;
  if (!filter.empty()) {
    auto all = s.store().subject_counts(filter == ">" ? "" : filter);
    total = all.size();
    // As nats-server: no match gives total, offset and limit 0; an offset past the end
    // is reported as the end.
    offset = std::min<std::uint64_t>(offset, total);
    limit = total ? kSubjectDetailsLimit : 0;
    if (offset == 0 && total <= kSubjectDetailsLimit) {
      subjects = std::move(all);  // one page holds them all: no copy
    } else {
      auto it = std::next(all.begin(), std::ptrdiff_t(offset));
      for (; it != all.end() && subjects.size() < kSubjectDetailsLimit; ++it) subjects.emplace_hint(subjects.end(), *it);
    }
  }
  if (paged) {
    j["total"] = total;
    j["offset"] = filter.empty() ? 0 : offset;
    j["limit"] = limit;
  }
  j["config"] = config_placeholder ? ojson(nullptr) : to_json(s.config(), true);
  j["created"] = base::rfc3339_nano(s.created());
  j["state"] = s.state_json(deleted_details, filter.empty() ? nullptr : &subjects);
  if (!_domain.empty()) j["domain"] = _domain;
  j["cluster"] = ojson{{"leader", _host->server_name()}};
  s.add_sources_info(j, now());
  j["ts"] = base::rfc3339_nano(now());
  return j;
}

void jetstream::api_info(std::string_view, const core::inbound_msg& m) {
  // The counters the groups publish (no loop over the streams).
  const auto mem = std::uint64_t(used_bytes(storage_type::memory));
  const auto file = std::uint64_t(used_bytes(storage_type::file));
  // The table and the owners' counters (no loop over the streams or the owners' threads).
  std::int64_t consumers = 0;
  std::uint64_t errors = 0;
  for (const auto& slot : _owners->slots) {
    consumers += slot->js->_consumer_count.load(std::memory_order_relaxed);
    errors += slot->js->_api_errors.load(std::memory_order_relaxed);
  }
  // Taken now: a clustered answer waits for the replicated streams' leaders, and still
  // shows only the calls before this one.
  const std::uint64_t total = _api_total.load();
  auto answer = [this, reply = std::string(m.reply), mem, file, streams = table().size(),
                 consumers = std::uint64_t(std::max<std::int64_t>(consumers, 0)), errors,
                 total](const cluster_streams::account_usage& r) {
    const auto& o = _host->options();
    ojson j;
    j["type"] = "io.nats.jetstream.api.v1.account_info_response";
    j["memory"] = mem + r.memory;
    j["storage"] = file + r.storage;
    j["reserved_memory"] = 0;
    j["reserved_storage"] = 0;
    j["streams"] = streams + r.streams;
    j["consumers"] = consumers + r.consumers;
    // $G shows the server's storage limits (as before accounts had JetStream); an account its own.
    const account_limits& acc = _owners->limits;
    const bool global = acc.account == "$G";
    j["limits"] = ojson{{"max_memory", global && acc.max_memory < 0 ? o.max_memory_store : acc.max_memory},
                        {"max_storage", global && acc.max_file < 0 ? o.max_file_store : acc.max_file},
                        {"max_streams", acc.max_streams},
                        {"max_consumers", acc.max_consumers},
                        {"max_ack_pending", acc.max_ack_pending},
                        {"memory_max_stream_bytes", acc.memory_max_stream_bytes},
                        {"storage_max_stream_bytes", acc.store_max_stream_bytes},
                        {"max_bytes_required", acc.max_bytes_required}};
    if (!_domain.empty()) j["domain"] = _domain;
    j["api"] = ojson{{"level", kApiLevel}, {"total", total}, {"errors", errors}};
    respond(reply, j);
  };
  // Replicated streams count once each, whatever the number of their replicas here.
  if (_cluster) return _cluster->usage(std::move(answer));
  answer({});
}

void jetstream::api_create(std::string_view token, const core::inbound_msg& m) {
  constexpr std::string_view type = "stream_create_response";
  stream_config cfg;
  if (auto e = parse_stream_config(m.payload, cfg)) return respond_error(m.reply, type, *e);
  if (token.find_first_of("/\\") != std::string_view::npos)
    return respond_error(m.reply, type, make_error(err::path_separators));
  if (token != cfg.name) return respond_error(m.reply, type, make_error(err::name_mismatch));
  if (cfg.sealed)
    return respond_error(m.reply, type, make_error(err::stream_invalid_config, "stream configuration for create can not be sealed"));
  if (auto e = normalise(cfg)) return respond_error(m.reply, type, *e);
  if (auto e = validate(cfg)) return respond_error(m.reply, type, *e);
  if (auto e = check_origins(cfg)) return respond_error(m.reply, type, *e);
  if (cfg.num_replicas > 1) return respond_error(m.reply, type, make_error(err::replicas_not_supported));
  if (auto e = check_mirror_origin(cfg)) return respond_error(m.reply, type, *e);
  if (stream* s = find(cfg.name)) {
    if (!same_config(s->config(), cfg)) return respond_error(m.reply, type, make_error(err::name_in_use));
    ojson j = typed_response(type, stream_info_json(*s, false, "", 0, false));
    j["did_create"] = true;
    return respond(m.reply, j);
  }
  if (auto e = check_overlap(cfg)) return respond_error(m.reply, type, *e);
  if (auto e = check_limits(cfg, {}, true))
    return respond_error(m.reply, type, *e);
  std::string error;
  auto s = make_stream(cfg, now(), error);
  if (s && !save_meta(s->get_stream(), error)) s.reset();
  if (s && cfg.first_seq > 1) {  // the stream starts at first_seq (2.10)
    storage::purge_request pr;
    pr.seq = cfg.first_seq;
    (void)s->get_stream().store().purge(pr);
    (void)s->get_stream().store().flush();
  }
  if (!s) return respond_error(m.reply, type, make_error(err::stream_create, error));
  s->get_stream().subscribe();
  stream& ref = s->get_stream();
  place(std::move(s));
  ojson j = typed_response(type, stream_info_json(ref, false, "", 0, false));
  j["did_create"] = true;
  respond(m.reply, j);
  advisory("create", cfg.name);
}

void jetstream::api_update(std::string_view token, const core::inbound_msg& m) {
  constexpr std::string_view type = "stream_update_response";
  stream_config cfg;
  if (auto e = parse_stream_config(m.payload, cfg)) return respond_error(m.reply, type, *e);
  if (token != cfg.name) return respond_error(m.reply, type, make_error(err::name_mismatch));
  stream* s = find(token);
  if (!s) return respond_error(m.reply, type, make_error(err::stream_not_found));
  if (auto e = normalise(cfg)) return respond_error(m.reply, type, *e);
  if (cfg.sealed) apply_seal(cfg);
  if (auto e = validate(cfg)) return respond_error(m.reply, type, *e);
  if (auto e = check_origins(cfg)) return respond_error(m.reply, type, *e);
  if (cfg.num_replicas > 1 && !_cluster) return respond_error(m.reply, type, make_error(err::replicas_not_supported));
  if (auto e = check_update(s->config(), cfg)) return respond_error(m.reply, type, *e);
  if (auto e = check_overlap(cfg)) return respond_error(m.reply, type, *e);
  if (auto e = check_limits(cfg, cfg.name, false, cfg.num_replicas))  // a scale up reserves on each replica
    return respond_error(m.reply, type, *e);
  if (auto e = check_replicated_features(cfg)) return respond_error(m.reply, type, *e);
  if (cfg.num_replicas > 1) return scale_up_r1(*s, cfg, m.reply);  // a clustered hub
  const bool to_interest =
      s->config().retention == retention_policy::limits && cfg.retention == retention_policy::interest;
  s->update(cfg);
  std::string error;
  if (!save_meta(*s, error)) return respond_error(m.reply, type, make_error(err::stream_update, error));
  // The new policy applies to what is already stored (as nats-server does): messages no
  // consumer still needs go before the reply reports the state.
  if (to_interest) group_of(token)->drop_unneeded();
  respond(m.reply, typed_response(type, stream_info_json(*s, false, "", 0, false)));
  advisory("modify", cfg.name);
}

void jetstream::api_stream_info(std::string_view token, const core::inbound_msg& m) {
  constexpr std::string_view type = "stream_info_response";
  const ojson paged_zero = ojson{{"total", 0}, {"offset", 0}, {"limit", 0}};
  jdec::json req;
  if (auto e = jdec::decode_request(m.payload, "JSApiStreamInfoRequest",
                                    {{"deleted_details", field_kind::boolean},
                                     {"subjects_filter", field_kind::string},
                                     {"offset", field_kind::int_}},
                                    req))
    return respond_error(m.reply, type, *e, paged_zero);
  bool deleted = false;
  std::string filter;
  std::int64_t offset = 0;
  if (!get_field(req, "deleted_details", deleted) || !get_field(req, "subjects_filter", filter) ||
      !get_field(req, "offset", offset))
    return respond_error(m.reply, type, make_error(err::invalid_json), paged_zero);
  offset = std::max<std::int64_t>(offset, 0);  // Go int: a negative offset pages from the start
  if (stream_group* g = group_of(token)) g->settle_remote();
  stream* s = find(token);
  if (!s) return respond_error(m.reply, type, make_error(err::stream_not_found), paged_zero);
  // Many subjects: paged and serialised on the API worker (big_info.cc).
  if (wants_big_info(*s, filter))
    return start_big_info(*s, filter, std::uint64_t(offset), typed_response(type, stream_info_json(*s, deleted, "", 0, true)),
                          m.reply);
  respond(m.reply, typed_response(type, stream_info_json(*s, deleted, filter, offset, true)));
}

void jetstream::api_delete(std::string_view token, const core::inbound_msg& m) {
  constexpr std::string_view type = "stream_delete_response";
  std::string_view body = trim_space(m.payload);
  if (!body.empty() && body != "\"\"") {
    auto j = json::parse(body, nullptr, false);
    if (j.is_discarded() || !j.is_object() || !j.empty())
      return respond_error(m.reply, type, make_error(err::not_empty_request));
  }
  stream_group* g = group_of(token);
  if (!g) return respond_error(m.reply, type, make_error(err::stream_not_found));
  const std::string name = g->name();
  count_consumers(-std::int64_t(g->consumers().size()));
  g->delete_consumers();
  g = group_of(name);  // 409s to waiting pulls may have run API calls meanwhile
  if (!g) return respond(m.reply, ojson{{"type", "io.nats.jetstream.api.v1." + std::string(type)}, {"success", true}});
  if (g->get_stream().config().subjects.size() >= kBigDeleteSubjects && !_big) {
    // Its subscriptions go in slices (poll_big); requests about it, and stream changes,
    // wait behind it as behind a big create (must_wait).
    _big = std::make_unique<big_request>();
    _big->remove = _big->decoded = true;
    _big->token = name;
    _big->reply = std::string(m.reply);
    _big->s = &g->get_stream();
    return;
  }
  finish_delete(name, m.reply);
}

void jetstream::finish_delete(const std::string& name, std::string_view reply) {
  constexpr std::string_view type = "stream_delete_response";
  stream_group* g = group_of(name);
  if (!g) return respond(reply, ojson{{"type", "io.nats.jetstream.api.v1." + std::string(type)}, {"success", true}});
  const std::string dir = g->get_stream().dir();
  g->get_stream().close();
  retire(name);
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
  respond(reply, ojson{{"type", "io.nats.jetstream.api.v1." + std::string(type)}, {"success", true}});
  advisory("delete", name);
}

void jetstream::api_names(std::string_view, const core::inbound_msg& m) {
  constexpr std::string_view type = "stream_names_response";
  const ojson zero = ojson{{"total", 0}, {"offset", 0}, {"limit", 0}, {"streams", nullptr}};
  std::int64_t offset = 0;
  std::string filter;
  if (auto e = decode_page_request(m.payload, "JSApiStreamNamesRequest", offset, filter))
    return respond_error(m.reply, type, *e, zero);
  std::vector<std::string> names;
  for (const auto& [name, p] : table())
    if (matches_filter(p.cfg.subjects, filter)) names.push_back(name);
  if (_cluster) {  // replicated streams and other servers' R1 ones, from the meta log
    for (const auto& [name, subjects] : _cluster->names())
      if (matches_filter(subjects, filter)) names.push_back(name);
    std::sort(names.begin(), names.end());
  }
  ojson j;
  j["type"] = "io.nats.jetstream.api.v1." + std::string(type);
  j["total"] = names.size();
  j["offset"] = offset;
  j["limit"] = kNamesLimit;
  ojson page = ojson::array();
  for (std::size_t i = std::size_t(offset); i < names.size() && page.size() < kNamesLimit; ++i) page.push_back(names[i]);
  j["streams"] = page.empty() ? ojson(nullptr) : page;
  respond(m.reply, j);
}

void jetstream::api_list(std::string_view, const core::inbound_msg& m) {
  constexpr std::string_view type = "stream_list_response";
  const ojson zero = ojson{{"total", 0}, {"offset", 0}, {"limit", 0}, {"streams", ojson::array()}};
  std::int64_t offset = 0;
  std::string filter;
  if (auto e = decode_page_request(m.payload, "JSApiStreamListRequest", offset, filter))
    return respond_error(m.reply, type, *e, zero);
  std::vector<std::string> names;
  for (const auto& [name, p] : table())
    if (matches_filter(p.cfg.subjects, filter)) names.push_back(name);
  std::set<std::string> replicated;
  if (_cluster) {  // replicated streams and other servers' R1 ones (their servers answer for them)
    for (const auto& [name, subjects] : _cluster->names())
      if (matches_filter(subjects, filter)) {
        names.push_back(name);
        replicated.insert(name);
      }
    std::sort(names.begin(), names.end());
  }
  ojson j;
  j["type"] = "io.nats.jetstream.api.v1." + std::string(type);
  j["total"] = names.size();
  j["offset"] = offset;
  j["limit"] = kListLimit;
  std::vector<std::string> page, asked;
  for (std::size_t i = std::size_t(offset); i < names.size() && page.size() < kListLimit; ++i) {
    page.push_back(names[i]);
    if (replicated.count(names[i])) asked.push_back(names[i]);
  }
  if (asked.empty()) return list_streams(std::string(m.reply), std::move(j), std::move(page));
  // Their infos come from their leaders (cluster_stream_queries.cc), then the R1 ones' from
  // the owners; a leader that did not answer is `missing`, as in nats-server.
  _cluster->stream_infos(asked, [this, reply = std::string(m.reply), head = std::move(j), page = std::move(page)](
                                    std::map<std::string, ojson>& infos, std::vector<std::string>& missing) mutable {
    ojson prefilled = ojson::object();
    for (auto& [name, info] : infos) prefilled[name] = std::move(info);
    head["streams"] = std::move(prefilled);
    if (!missing.empty()) head["missing"] = missing;
    list_streams(std::move(reply), std::move(head), std::move(page));
  });
}

namespace {
// One STREAM.LIST page being gathered: each owner fills the infos of its streams (distinct
// slots), and whichever finishes last publishes the reply from its own thread.
struct list_gather {
  std::string reply;
  ojson head;
  std::vector<ojson> infos;  // null: the stream went meanwhile (or its leader did not answer)
  std::atomic<std::size_t> left{0};
};
}  // namespace

// `head` may come with `streams` already holding the replicated streams' entries by name
// (from their leaders) and `missing` after it; the page replaces `streams` in place.
void jetstream::list_streams(std::string reply, ojson head, std::vector<std::string> names) {
  auto g = std::make_shared<list_gather>();
  g->reply = std::move(reply);
  ojson replicated = head.contains("streams") ? std::move(head["streams"]) : ojson::object();
  g->head = std::move(head);
  g->infos.resize(names.size());
  std::vector<std::vector<std::size_t>> by_owner(_owners->size());
  for (std::size_t i = 0; i < names.size(); ++i) {
    if (auto r = replicated.find(names[i]); r != replicated.end()) {
      g->infos[i] = std::move(*r);
    } else if (auto t = table().find(names[i]); t != table().end()) {  // (an R1 stream may go meanwhile)
      by_owner[t->second.owner].push_back(i);
    }
  }
  auto part = [g, names](jetstream& js, const std::vector<std::size_t>& mine) {
    PG_ASSERT_OWNER(js._thread);
    for (std::size_t i : mine)
      if (stream* s = js.find(names[i])) g->infos[i] = js.stream_info_json(*s, false, "", 0, false);
    if (g->left.fetch_sub(1, std::memory_order_acq_rel) != 1) return;
    ojson j = std::move(g->head);
    ojson page = ojson::array();
    for (auto& info : g->infos)
      if (!info.is_null()) page.push_back(std::move(info));
    j["streams"] = std::move(page);  // before `missing`, if there is one
    js.respond(g->reply, j);
  };
  std::size_t parts = 0;
  for (std::size_t o = 0; o < by_owner.size(); ++o) parts += (o == _index || !by_owner[o].empty()) ? 1 : 0;
  g->left.store(parts, std::memory_order_relaxed);
  for (std::size_t o = 0; o < by_owner.size(); ++o)
    if (o != _index && !by_owner[o].empty()) {
      jetstream* js = _owners->slots[o]->js;
      post_task(o, [part, js, mine = std::move(by_owner[o])] { part(*js, mine); });
    }
  part(*this, by_owner[_index]);  // last: alone (one owner), the reply leaves in this call
}

void jetstream::api_purge(std::string_view token, const core::inbound_msg& m) {
  constexpr std::string_view type = "stream_purge_response";
  const ojson zero = ojson{{"purged", 0}};
  jdec::json req;
  if (auto e = jdec::decode_request(
          m.payload, "JSApiStreamPurgeRequest",
          {{"filter", field_kind::string}, {"seq", field_kind::u64}, {"keep", field_kind::u64}}, req))
    return respond_error(m.reply, type, *e, zero);
  storage::purge_request pr;
  if (!get_field(req, "filter", pr.filter) || !get_field(req, "seq", pr.seq) || !get_field(req, "keep", pr.keep))
    return respond_error(m.reply, type, make_error(err::invalid_json), zero);
  stream* s = find(token);
  if (!s) return respond_error(m.reply, type, make_error(err::stream_not_found), zero);
  if (pr.seq > 0 && pr.keep > 0) return respond_error(m.reply, type, make_error(err::bad_request), zero);
  if (s->config().sealed) return respond_error(m.reply, type, make_error(err::sealed), zero);
  if (s->config().deny_purge)
    return respond_error(m.reply, type, make_error(err::purge_failed, "stream purge not permitted"), zero);
  if (pr.filter == ">") pr.filter.clear();
  auto n = s->store().purge(pr);
  if (!n.ok()) return respond_error(m.reply, type, make_error(err::stream_general, base::errc_name(n.code())), zero);
  // Answered once the purge is as durable as a PubAck would be: a crash after the reply
  // must not bring the messages back.
  if (auto st = s->store().flush(); !st)
    return respond_error(m.reply, type, make_error(err::stream_general, base::errc_name(st.err().code)), zero);
  if (*n > 0) s->notify_removed({});
  respond(m.reply, ojson{{"type", "io.nats.jetstream.api.v1." + std::string(type)}, {"success", true}, {"purged", *n}});
}

void jetstream::api_msg_get(std::string_view token, const core::inbound_msg& m) {
  constexpr std::string_view type = "stream_msg_get_response";
  jdec::json req;
  if (trim_space(m.payload).empty()) return respond_error(m.reply, type, make_error(err::bad_request));
  if (auto e = jdec::decode_request(m.payload, "JSApiMsgGetRequest",
                                    {{"seq", field_kind::u64},
                                     {"last_by_subj", field_kind::string},
                                     {"next_by_subj", field_kind::string},
                                     {"start_time", field_kind::time},
                                     {"no_hdr", field_kind::boolean},
                                     {"batch", field_kind::int_},
                                     {"max_bytes", field_kind::int_},
                                     {"multi_last", field_kind::strings},
                                     {"up_to_seq", field_kind::u64},
                                     {"up_to_time", field_kind::time}},
                                    req))
    return respond_error(m.reply, type, *e);
  std::uint64_t seq = 0;
  std::string last_by, next_by, start_time;
  bool no_hdr = false;
  std::int64_t batch = 0, max_bytes = 0;
  if (!get_field(req, "seq", seq) || !get_field(req, "last_by_subj", last_by) ||
      !get_field(req, "next_by_subj", next_by) || !get_field(req, "start_time", start_time) ||
      !get_field(req, "no_hdr", no_hdr) || !get_field(req, "batch", batch) || !get_field(req, "max_bytes", max_bytes))
    return respond_error(m.reply, type, make_error(err::invalid_json));
  std::optional<std::int64_t> start;
  if (!start_time.empty()) {
    start = parse_time(start_time);
    if (!start) return respond_error(m.reply, type, make_error(err::invalid_json));
  }
  const bool bad = batch > 0 || max_bytes > 0 || (seq == 0 && last_by.empty() && next_by.empty() && !start) ||
                   (seq > 0 && !last_by.empty()) || (seq > 0 && start) || (start && !last_by.empty()) ||
                   (!last_by.empty() && !next_by.empty());
  if (bad) return respond_error(m.reply, type, make_error(err::bad_request));
  stream* s = find(token);
  if (!s) return respond_error(m.reply, type, make_error(err::stream_not_found));
  auto& st = s->store();
  if (start) {
    auto t = st.seq_for_time(*start);
    if (!t.ok()) return respond_error(m.reply, type, make_error(err::no_message_found));
    seq = *t;
  }
  base::result<storage::stored_msg> msg = base::errc::not_found;
  if (!last_by.empty()) msg = st.load_last(last_by);
  else if (!next_by.empty()) msg = st.load_next(next_by, seq);
  else if (start && next_by.empty() && seq > 0) msg = st.load_next("", seq);
  else msg = st.load(seq);
  if (!msg.ok()) return respond_error(m.reply, type, make_error(err::no_message_found));
  ojson body;
  body["subject"] = msg->subject;
  body["seq"] = msg->seq;
  if (!msg->headers.empty() && !no_hdr) body["hdrs"] = base64_encode(msg->headers);
  if (!msg->payload.empty()) body["data"] = base64_encode(msg->payload);
  body["time"] = base::rfc3339_nano(msg->ts);
  respond(m.reply, ojson{{"type", "io.nats.jetstream.api.v1." + std::string(type)}, {"message", body}});
}

void jetstream::api_msg_delete(std::string_view token, const core::inbound_msg& m) {
  constexpr std::string_view type = "stream_msg_delete_response";
  if (trim_space(m.payload).empty()) return respond_error(m.reply, type, make_error(err::bad_request));
  jdec::json req;
  if (auto e = jdec::decode_request(m.payload, "JSApiMsgDeleteRequest",
                                    {{"seq", field_kind::u64}, {"no_erase", field_kind::boolean}}, req))
    return respond_error(m.reply, type, *e);
  std::uint64_t seq = 0;
  bool no_erase = false;
  if (!get_field(req, "seq", seq) || !get_field(req, "no_erase", no_erase))
    return respond_error(m.reply, type, make_error(err::invalid_json));
  stream* s = find(token);
  if (!s) return respond_error(m.reply, type, make_error(err::stream_not_found));
  if (s->config().sealed) return respond_error(m.reply, type, make_error(err::sealed));
  if (s->config().deny_delete)
    return respond_error(m.reply, type, make_error(err::msg_delete_failed, "message delete not permitted"));
  auto r = s->store().remove(seq, !no_erase);
  if (!r.ok()) {
    if (r.code() == base::errc::not_found)
      return respond_error(m.reply, type, make_error(err::sequence_not_found, std::to_string(seq)));
    return respond_error(m.reply, type, make_error(err::msg_delete_failed, base::errc_name(r.code())));
  }
  if (auto st = s->store().flush(); !st)  // durable before the reply, as for a purge
    return respond_error(m.reply, type, make_error(err::msg_delete_failed, base::errc_name(st.err().code)));
  s->notify_removed({seq});
  respond(m.reply, ojson{{"type", "io.nats.jetstream.api.v1." + std::string(type)}, {"success", true}});
}

// nats-server needs clustering for both; in a cluster an R1 stream has no group to step down
// (success, as nats-server answers) and is not moved: only its own server is a member of it.
void jetstream::api_stream_stepdown(std::string_view token, const core::inbound_msg& m) {
  constexpr std::string_view type = "stream_leader_stepdown_response";
  if (!_cluster) return respond_error(m.reply, type, make_error(err::clustering_required));
  if (!find(token)) return respond_error(m.reply, type, make_error(err::stream_not_found));
  respond(m.reply, ojson{{"type", "io.nats.jetstream.api.v1." + std::string(type)}, {"success", true}});
}

void jetstream::api_peer_remove(std::string_view token, const core::inbound_msg& m) {
  constexpr std::string_view type = "stream_remove_peer_response";
  if (!_cluster) return respond_error(m.reply, type, make_error(err::clustering_required));
  const std::string_view body = trim_space(m.payload);
  if (body.empty() || body == "{}") return respond_error(m.reply, type, make_error(err::bad_request));
  jdec::json req;
  if (auto e = jdec::decode_request(m.payload, "JSApiStreamRemovePeerRequest", {{"peer", field_kind::string}}, req))
    return respond_error(m.reply, type, *e);
  std::string peer;
  if (!get_field(req, "peer", peer) || peer.empty()) return respond_error(m.reply, type, make_error(err::bad_request));
  if (!find(token)) return respond_error(m.reply, type, make_error(err::stream_not_found));
  const bool self = peer == server_name() || peer == core::server_name_hash(server_name());
  respond_error(m.reply, type, make_error(self ? err::peer_remap : err::peer_not_member));
}

}  // namespace js
