// Big STREAM.CREATE/UPDATE requests (issue 15 item 5): a ~1 MB create with 74,000 subjects
// took ~190 ms of loop time (JSON decode, checks, subscribing every subject, saving the
// config, serialising the reply), and the clients served by the same loop (shard 0 by
// default) waited for all of it. Here the pure work runs on the API worker, a memory
// stream's meta.inf write too (a file stream keeps its config in its own log, written
// through its store on the loop), and a created stream's subscriptions go in slices of
// kBigSliceNs per loop turn, and so do an update's changed subjects (those both configs hold
// stay subscribed throughout). Requests that could see or change the half-made stream (any request naming it,
// any stream create, update or delete) wait until it is answered, in arrival order.
#include <algorithm>
#include <array>
#include <filesystem>

#include "src/base/clock.h"
#include "src/core/subject_overlap.h"
#include "src/js/api_worker.h"
#include "src/js/big_request.h"
#include "src/js/json_util.h"
#include "src/js/stream_source.h"

namespace js {

namespace {

constexpr std::string_view kCreateType = "stream_create_response";
constexpr std::string_view kUpdateType = "stream_update_response";

// The reply text: the info object serialised with "config": null (`head`), the worker's
// config serialisation put in its place ("type" comes first and holds no such text).
std::string splice_config(std::string head, const std::string& config_dump) {
  static constexpr std::string_view kHole = "\"config\":null";
  if (const auto at = head.find(kHole); at != std::string::npos)
    head.replace(at + kHole.size() - 4, 4, config_dump);
  return head;
}

}  // namespace

std::string_view api_stream_of(std::string_view rest) {
  std::array<std::string_view, 5> t{};  // no allocation: every clustered API request asks
  std::size_t n = 0;
  while (n < t.size()) {
    const auto dot = rest.find('.');
    t[n++] = rest.substr(0, dot);
    if (dot == std::string_view::npos) break;
    rest.remove_prefix(dot + 1);
  }
  if (n < 3 || (t[0] != "STREAM" && t[0] != "CONSUMER")) return {};
  const bool two = t[1] == "MSG" || t[1] == "DURABLE" || t[1] == "LEADER" || t[1] == "PEER";
  const std::size_t at = two ? 3 : 2;
  return at < n ? t[at] : std::string_view();
}

namespace {

std::optional<api_error> check_origins(const jetstream::big_request& job, const stream_config& cfg) {
  if (job.table == nullptr || (!cfg.has_mirror() && !cfg.has_sources())) return std::nullopt;
  return check_source_origins(cfg, [&job](std::string_view name) -> const stream_config* {
    auto it = job.table->find(name);
    return it == job.table->end() ? nullptr : &it->second.cfg;
  });
}

}  // namespace

void decode_big_request(jetstream::big_request& job) {
  stream_config& cfg = job.cfg;
  auto fail = [&](api_error e) { job.error = std::move(e); };
  if (auto e = parse_stream_config(job.payload, cfg)) return fail(*e);
  if (job.update) {
    if (job.token != cfg.name) return fail(make_error(err::name_mismatch));
    if (job.existing == nullptr) return fail(make_error(err::stream_not_found));
    if (auto e = normalise(cfg)) return fail(*e);
    if (cfg.sealed) apply_seal(cfg);
    if (auto e = validate(cfg)) return fail(*e);
    if (auto e = check_origins(job, cfg)) return fail(*e);
    if (cfg.num_replicas > 1) return fail(make_error(err::replicas_not_supported));
    if (auto e = check_update(*job.existing, cfg)) return fail(*e);
  } else {
    if (job.token.find_first_of("/\\") != std::string::npos) return fail(make_error(err::path_separators));
    if (job.token != cfg.name) return fail(make_error(err::name_mismatch));
    if (cfg.sealed)
      return fail(make_error(err::stream_invalid_config, "stream configuration for create can not be sealed"));
    if (auto e = normalise(cfg)) return fail(*e);
    if (auto e = validate(cfg)) return fail(*e);
    if (auto e = check_origins(job, cfg)) return fail(*e);
    if (cfg.num_replicas > 1) return fail(make_error(err::replicas_not_supported));
    if (job.existing != nullptr) {
      if (!same_config(*job.existing, cfg)) return fail(make_error(err::name_in_use));
      job.exists = true;
    }
  }
  if (!job.exists && !job.others.empty() &&
      core::sets_overlap({cfg.subjects.begin(), cfg.subjects.end()}, job.others))
    return fail(make_error(err::subjects_overlap));
  job.config_dump = to_json(cfg, true).dump();
  if (job.exists) return;
  if (job.update && job.existing->subjects != cfg.subjects) job.kept_from = subject_positions(job.existing->subjects, cfg.subjects);
  ojson meta = to_json(cfg, false);
  meta["created"] = base::rfc3339_nano(job.created);
  job.meta_dump = meta.dump();
  job.table_cfg = cfg;
  if (!job.update || job.existing->subjects != cfg.subjects) job.registry_subjects = cfg.subjects;
}

bool jetstream::must_wait(std::string_view rest) const {
  if (!_replaying && !_deferred.empty()) return true;  // keep arrival order behind them
  const bool changes =
      rest.starts_with("STREAM.CREATE.") || rest.starts_with("STREAM.UPDATE.") || rest.starts_with("STREAM.DELETE.");
  // A create/update/delete forwarded to an owner: its stream may change owner or vanish,
  // and the owner reads the table for its checks until it reports back.
  if (_inflight && (changes || api_stream_of(rest) == *_inflight)) return true;
  for (const auto& info : _infos)  // a STREAM.INFO being paged: answered in order after it
    if (api_stream_of(rest) == info->stream) return true;
  // The hub's subject registry is being changed in slices: the overlap checks wait for it.
  if (changes && is_hub() && _owners->subjects.busy()) return true;
  if (!_big) return false;
  if (rest.starts_with("STREAM.CREATE.") || rest.starts_with("STREAM.UPDATE.") || rest.starts_with("STREAM.DELETE."))
    return true;  // subject overlaps, and the worker reads the other streams' configs
  return api_stream_of(rest) == _big->token;
}

void jetstream::start_big_request(std::string_view token, const core::inbound_msg& m, bool update) {
  if (!_worker) _worker = std::make_unique<api_worker>(_host->wake_eventfd());
  _big = std::make_unique<big_request>();
  big_request& job = *_big;
  job.update = update;
  job.token = std::string(token);
  job.reply = std::string(m.reply);
  job.payload = std::string(m.payload);
  job.created = now();
  if (const stream* s = find(token)) {
    job.existing = &s->config();
    if (update) job.created = s->created();
  }
  job.table = &table();  // unchanged while the job runs: stream changes wait behind it
  for (const auto& [name, p] : table())  // every owner's streams (the worker reads them meanwhile)
    if (name != token) job.others.insert(job.others.end(), p.cfg.subjects.begin(), p.cfg.subjects.end());
  job.ticket = _worker->submit([&job] { decode_big_request(job); });
}

std::size_t jetstream::poll_big() {
  std::size_t work = 0;
  if (_big) work += apply_big_request();
  // A registry change begun in an earlier turn goes on (one slice a turn, not on top of
  // the turn that answered the request and began it).
  if (step_registry()) return work + 1;
  if (!_big) maybe_report();  // a finished big create/update is in the table before what waited behind it
  if (is_hub() && _owners->subjects.busy()) return work + 1;
  if (_big || _inflight || !_infos.empty() || !_all_loaded || _deferred.empty()) return work;
  // The deferred requests, in order, until one starts a big request or a forwarded change,
  // for kBigSliceNs a turn (a test's 200 small requests behind a big create, replayed in one
  // turn, held the loop 18 ms); what is left goes on next turn, still before newer requests.
  const auto& clk = _host->clk();
  const base::nanos until = clk.monotonic_ns() + kBigSliceNs;
  _replaying = true;
  while (!_big && !_inflight && _infos.empty() && !_deferred.empty() && !(is_hub() && _owners->subjects.busy()) &&
         clk.monotonic_ns() < until) {
    const deferred_msg d = std::move(_deferred.front());
    _deferred.pop_front();
    on_msg(d.view());
    ++work;
  }
  _replaying = false;
  return work;
}

bool jetstream::step_registry() {
  if (!is_hub() || !_owners->subjects.busy()) return false;
  const auto& clk = _host->clk();
  const base::nanos until = clk.monotonic_ns() + kBigSliceNs;
  while (!_owners->subjects.step(256))
    if (clk.monotonic_ns() >= until) return true;
  return false;
}

// One turn's share of the big request; returns the work done (without a wake eventfd the
// loop must keep turning while the worker runs).
std::size_t jetstream::apply_big_request() {
  big_request& job = *_big;
  const bool signalled = _host->wake_eventfd() >= 0;
  if (!job.decoded) {
    if (!_worker->done(job.ticket)) return signalled ? 0 : 1;
    job.decoded = true;
    job.payload = {};
    job.others = {};
    if (!start_applying_big_request()) _big.reset();  // answered
    return 1;
  }
  {  // the created stream's subjects, an update's changes to them, or a deleted stream's, a slice per turn
    const auto& clk = _host->clk();
    const base::nanos until = clk.monotonic_ns() + kBigSliceNs;
    bool subscribed = false;
    auto some = [&] {
      return job.remove ? job.s->unsubscribe_some(64) : job.update ? job.s->resubscribe_some(64) : job.s->subscribe_some(64);
    };
    while (!(subscribed = some()) && clk.monotonic_ns() < until) {
    }
    if (!subscribed) return 1;
  }
  if (job.remove) {
    finish_delete(job.token, job.reply);
    _big.reset();
    return 1;
  }
  if (!_worker->done(job.ticket)) return signalled ? 0 : 1;  // meta.inf, then the reply's text
  answer_big_request(false);
  return 1;
}

// The decoded request's checks against the current state, then the change itself, with
// its metadata saved (a memory stream's meta.inf on the worker). False when it was answered (an error, or the identical
// stream exists).
bool jetstream::start_applying_big_request() {
  big_request& job = *_big;
  const std::string_view type = job.update ? kUpdateType : kCreateType;
  if (job.error) return respond_error(job.reply, type, *job.error), false;
  const stream_config& cfg = job.cfg;
  if (job.exists) {
    job.s = find(job.token);  // deletes of it waited
    answer_big_request(true);
    return false;
  }
  if (auto e = check_limits(cfg, job.update ? std::string_view(cfg.name) : std::string_view(), !job.update,
                            cfg.num_replicas))
    return respond_error(job.reply, type, *e), false;
  // The config moves into the stream from here on (job.token is its name).
  if (job.update) {
    job.s = find(job.token);
    job.to_interest =
        job.s->config().retention == retention_policy::limits && cfg.retention == retention_policy::interest;
    job.s->update(std::move(job.cfg), /*sliced=*/true, &job.kept_from);  // resubscribed in apply_big_request's slices
  } else {
    std::string error;
    const std::uint64_t first_seq = cfg.first_seq;
    auto s = make_stream(std::move(job.cfg), job.created, error);
    if (!s) return respond_error(job.reply, type, make_error(err::stream_create, error)), false;
    if (first_seq > 1) {  // the stream starts at first_seq (2.10)
      storage::purge_request pr;
      pr.seq = first_seq;
      (void)s->get_stream().store().purge(pr);
      (void)s->get_stream().store().flush();
    }
    job.s = &s->get_stream();
    place(std::move(s));
  }
  if (file_store_of(*job.s)) {
    // A file stream keeps its config in its own log: one write through its store, which
    // belongs to this thread (job.ticket stays the decode's, already done).
    job.meta_written = save_meta_text(*job.s, std::move(job.meta_dump), job.meta_error);
    return true;
  }
  // A memory stream's meta.inf (fsynced) is written on the worker while the loop goes on.
  job.ticket = _worker->submit([&job, dir = job.s->dir()] {
    job.meta_written = write_file_atomic(dir, "meta.inf", job.meta_dump, job.meta_error);
  });
  return true;
}

// The reply (the info object with the worker's config serialisation), the advisory, and
// the end of the request; a create whose metadata could not be saved is undone. In two
// calls unless `splice_here`: the first builds the info and has the worker splice the
// config text into it (900 KB of fresh pages held the loop 2.5 ms), the second sends it.
void jetstream::answer_big_request(bool splice_here) {
  big_request& job = *_big;
  if (!job.answering && !start_answer(splice_here)) return;
  if (!_big) return;  // answered with an error
  if (!job.reply.empty()) _host->publish_owned(job.reply, std::move(job.answer));
  const std::string name = job.token;
  const bool advise = !job.exists, update = job.update;
  if (advise) _report_copies[name] = report_copies{std::move(job.table_cfg), std::move(job.registry_subjects)};
  _worker->dispose(std::move(_big));  // its strings and vectors are freed there
  if (advise) advisory(update ? "modify" : "create", name);
}

// False while the worker makes the reply's text.
bool jetstream::start_answer(bool splice_here) {
  big_request& job = *_big;
  job.answering = true;
  const std::string_view type = job.update ? kUpdateType : kCreateType;
  if (!job.exists && !job.meta_written) {
    if (job.update) {  // applied but not persisted, as api_update answers then
      respond_error(job.reply, type, make_error(err::stream_update, job.meta_error));
    } else {
      stream& s = *job.s;
      const std::string dir = s.dir();
      s.close();
      retire(job.token);
      std::error_code ec;
      std::filesystem::remove_all(dir, ec);
      respond_error(job.reply, type, make_error(err::stream_create, job.meta_error));
    }
    _big.reset();
    return true;
  }
  // As api_update: the new policy applies to what is stored before the reply reports it.
  if (job.to_interest) group_of(job.token)->drop_unneeded();
  ojson j = ojson::object();
  j["type"] = "io.nats.jetstream.api.v1." + std::string(type);
  ojson info = stream_info_json(*job.s, false, "", 0, false, true);
  for (auto it = info.begin(); it != info.end(); ++it) j[it.key()] = std::move(it.value());
  if (!job.update) j["did_create"] = true;
  if (job.reply.empty()) return true;
  if (splice_here) {
    job.answer = splice_config(j.dump(), job.config_dump);
    return true;
  }
  job.ticket = _worker->submit([&job, head = j.dump()]() mutable {
    job.answer = splice_config(std::move(head), job.config_dump);
  });
  return false;
}

}  // namespace js
