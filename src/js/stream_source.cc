#include "src/js/stream_source.h"

#include <algorithm>
#include <deque>
#include <set>

#include "src/core/cluster_replication.h"
#include "src/core/subject.h"
#include "src/js/json_util.h"
#include "src/js/msg_ttl.h"
#include "src/js/subject_transform.h"
#include "storage/store.h"

namespace js {

namespace {

std::string str_field(const ojson& j, const char* k) {
  auto it = j.find(k);
  return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
}


// One source's transforms and filter (mirror: 10150/10151/10152/10154; source: 10144..10147).
std::optional<api_error> check_filters(const source_spec& s, bool mirror) {
  if (!s.filter_subject.empty() && !s.transforms.empty()) return make_error(mirror ? 10150 : 10144);
  if (!s.filter_subject.empty() && !core::valid_subject(s.filter_subject))
    return make_error(mirror ? 10151 : 10145, "invalid subject");
  for (std::size_t i = 0; i < s.transforms.size(); ++i) {
    const auto& [src, dest] = s.transforms[i];
    std::string why;
    if (!src.empty() && !core::valid_subject(src)) return make_error(mirror ? 10151 : 10145, "invalid subject");
    if (!dest.empty() && !subject_transform::parse(src, dest, why)) return make_error(mirror ? 10154 : 10146, why);
    for (std::size_t k = 0; k < i; ++k) {
      const std::string a = src.empty() ? ">" : src, b = s.transforms[k].first.empty() ? ">" : s.transforms[k].first;
      if (core::subjects_overlap(a, b)) return make_error(mirror ? 10152 : 10147);
    }
  }
  return std::nullopt;
}

// A durable consumer (2.14): a valid name, a literal deliver subject, and the start and the
// filter set on the consumer, not here (nats-server checkStreamCfg).
bool durable_consumer_ok(const source_spec& s, const ojson& j) {
  if (!check_stream_name(s.consumer_name).empty()) return false;
  if (!core::valid_literal_subject(s.consumer_deliver)) return false;
  if (auto it = j.find("opt_start_seq"); it != j.end() && it->is_number() && *it != 0) return false;
  if (j.contains("opt_start_time")) return false;
  return s.filter_subject.empty();
}

std::string dedup_key(const source_spec& s) {
  std::string k = s.name + "\x1f" + s.external_api + "\x1f" + s.consumer_name + "\x1f" + s.filter_subject;
  for (const auto& [a, b] : s.transforms) k += "\x1f" + a + "\x1e" + b;
  return k;
}

}  // namespace

source_spec parse_source_spec(const ojson& j) {
  source_spec s;
  if (!j.is_object()) return s;
  s.name = str_field(j, "name");
  if (auto it = j.find("opt_start_seq"); it != j.end() && it->is_number_unsigned()) s.opt_start_seq = it->get<std::uint64_t>();
  if (auto t = str_field(j, "opt_start_time"); !t.empty())
    if (auto ns = parse_time(t)) s.opt_start_time = *ns;
  s.filter_subject = str_field(j, "filter_subject");
  if (auto it = j.find("subject_transforms"); it != j.end() && it->is_array())
    for (const auto& t : *it)
      if (t.is_object()) s.transforms.emplace_back(str_field(t, "src"), str_field(t, "dest"));
  if (auto it = j.find("external"); it != j.end() && it->is_object()) {
    s.external_api = str_field(*it, "api");
    s.external_deliver = str_field(*it, "deliver");
  }
  if (auto it = j.find("consumer"); it != j.end() && it->is_object()) {
    s.consumer_name = str_field(*it, "name");
    s.consumer_deliver = str_field(*it, "deliver_subject");
    if (s.consumer_name.empty()) s.consumer_name = " ";  // present but unnamed: invalid, not absent
  }
  return s;
}

std::optional<api_error> validate_mirror_and_sources(const stream_config& c) {
  if (c.has_mirror()) {
    if (c.first_seq > 0) return make_error(10143);
    if (c.allow_msg_counter) return make_error(10173);
    if (c.allow_atomic) return make_error(10198);
    if (c.allow_batched) return make_error(10209);
    if (c.allow_msg_schedules) return make_error(10186);
    const auto m = parse_source_spec(c.mirror);
    if (m.durable() && !durable_consumer_ok(m, c.mirror)) return make_error(err::mirror_consumer_invalid);
    if (c.subject_delete_marker_ttl > 0) return make_error(10052, "subject delete markers forbidden on mirrors");
    if (!c.mirror.is_object() || !check_stream_name(m.name).empty()) return make_error(10142);
    // Both opt_start_seq and opt_start_time: accepted, the sequence wins (2.9.10 as HEAD).
    if (auto e = check_filters(m, true)) return e;
  }
  if (c.has_sources()) {
    if (c.allow_msg_schedules) return make_error(10187);
    std::vector<std::string> seen, consumers;
    for (const auto& j : c.sources) {
      const auto s = parse_source_spec(j);
      if (!j.is_object() || !check_stream_name(s.name).empty()) return make_error(10141);
      auto key = dedup_key(s);
      if (std::find(seen.begin(), seen.end(), key) != seen.end()) return make_error(10140);
      seen.push_back(std::move(key));
      if (auto e = check_filters(s, false)) return e;
      if (s.durable()) {
        if (!durable_consumer_ok(s, j)) return make_error(err::source_consumer_invalid);
        // One origin consumer feeds one source.
        auto ckey = s.name + "\x1f" + s.external_api + "\x1f" + s.consumer_name;
        if (std::find(consumers.begin(), consumers.end(), ckey) != consumers.end())
          return make_error(err::source_consumer_duplicate);
        consumers.push_back(std::move(ckey));
      }
    }
  }
  return std::nullopt;
}

std::optional<api_error> check_source_cycle(const stream_config& cfg, const config_lookup& find) {
  // Breadth first, a name marked visited when it is taken off the queue, as nats-server does
  // (so a diamond is not a cycle, and the verdicts match its own).
  std::deque<const stream_config*> to_visit{&cfg};
  std::set<std::string, std::less<>> visited;
  const auto internal_origin = [](const ojson& j) {
    return j.is_object() && !(j.contains("external") && j["external"].is_object());
  };
  while (!to_visit.empty()) {
    const stream_config* c = to_visit.front();
    to_visit.pop_front();
    visited.insert(c->name);
    if (c->has_sources())
      for (const auto& j : c->sources) {
        if (!internal_origin(j)) continue;
        const std::string name = str_field(j, "name"), filter = str_field(j, "filter_subject");
        if (visited.count(name) != 0) {
          bool overlaps = filter.empty();
          for (const auto& subj : c->subjects) overlaps = overlaps || core::subjects_overlap(subj, filter);
          if (overlaps) return make_error(10052, "detected cycle");
        } else if (const stream_config* o = find(name)) {
          to_visit.push_back(o);
        }
      }
    if (c->has_mirror() && internal_origin(c->mirror)) {
      const std::string name = str_field(c->mirror, "name");
      if (visited.count(name) != 0) return make_error(10052, "detected cycle");
      if (const stream_config* o = find(name)) to_visit.push_back(o);
    }
  }
  return std::nullopt;
}

std::optional<api_error> check_source_origins(const stream_config& cfg, const config_lookup& find) {
  std::vector<std::string> origin_subjects, deliver_prefixes, api_prefixes;
  const auto collect = [&](const ojson& j) {
    if (!j.is_object()) return;
    if (auto ext = j.find("external"); ext != j.end() && ext->is_object()) {
      if (auto d = str_field(*ext, "deliver"); !d.empty()) deliver_prefixes.push_back(std::move(d));
      if (auto a = str_field(*ext, "api"); !a.empty()) api_prefixes.push_back(std::move(a));
    } else if (const stream_config* o = find(str_field(j, "name"))) {
      origin_subjects.insert(origin_subjects.end(), o->subjects.begin(), o->subjects.end());
    }
  };
  if (cfg.has_mirror()) collect(cfg.mirror);
  if (cfg.has_sources())
    for (const auto& j : cfg.sources) collect(j);
  for (const auto& pfx : deliver_prefixes) {
    if (!core::valid_literal_subject(pfx))
      return make_error(10024, "stream external delivery prefix " + pfx + " must not contain wildcards");
    for (const auto& subj : origin_subjects)
      if (core::subjects_overlap(subj, pfx + "." + subj))
        return make_error(10022, "stream external delivery prefix " + pfx + " overlaps with stream subject " + subj);
  }
  for (const auto& pfx : api_prefixes) {
    if (!core::valid_literal_subject(pfx))
      return make_error(10052, "stream external api prefix \"" + pfx + "\" must be a valid subject without wildcards");
    if (core::subjects_overlap(pfx, "$JS.API"))
      return make_error(10021, "stream external api prefix " + pfx + " must not overlap with $JS.API");
  }
  return check_source_cycle(cfg, find);
}

std::vector<std::string> source_filters(const source_spec& s) {
  std::vector<std::string> out;
  if (!s.filter_subject.empty() && s.filter_subject != ">") out.push_back(s.filter_subject);
  for (const auto& [src, dest] : s.transforms)
    if (!src.empty() && src != ">") out.push_back(src);
  // A transform with src ">" (or empty) takes everything: no filter at all.
  for (const auto& [src, dest] : s.transforms)
    if (src.empty() || src == ">") out.clear();
  return out;
}

std::optional<std::string> apply_source_transforms(const source_spec& s, std::string_view subject) {
  if (s.transforms.empty()) {
    if (!s.filter_subject.empty() && !core::subject_matches(s.filter_subject, subject)) return std::nullopt;
    return std::string(subject);
  }
  for (const auto& [src, dest] : s.transforms) {
    const std::string from = src.empty() ? ">" : src;
    if (!core::subject_matches(from, subject)) continue;
    if (dest.empty()) return std::string(subject);
    std::string why;
    auto t = subject_transform::parse(from, dest, why);
    if (!t) return std::string(subject);
    if (auto out = t->apply(subject)) return out;
    return std::string(subject);
  }
  return std::nullopt;
}

std::string consumer_create_subject(const source_spec& s) {
  return (s.external_api.empty() ? std::string("$JS.API") : s.external_api) + ".CONSUMER.CREATE." + s.name;
}

std::string consumer_reset_subject(const source_spec& s) {
  return (s.external_api.empty() ? std::string("$JS.API") : s.external_api) + ".CONSUMER.RESET." + s.name + "." +
         s.consumer_name;
}

std::optional<api_error> check_reset_response(const ojson& j, bool mirror) {
  if (!j.is_object()) return make_error(mirror ? 10029 : 10045, "invalid consumer reset response");
  if (auto e = j.find("error"); e != j.end() && e->is_object()) {
    api_error err;
    err.code = e->value("code", 500);
    err.err_code = e->value("err_code", std::uint16_t(0));
    err.description = e->value("description", std::string());
    return err;
  }
  auto cfg = j.find("config");
  if (cfg == j.end() || !cfg->is_object() || cfg->value("ack_policy", std::string()) != "flow_control")
    return make_error(mirror ? err::mirror_consumer_needs_ack_fc : err::source_consumer_needs_ack_fc);
  return std::nullopt;
}

std::string flow_control_answer(std::uint64_t last_consumer, std::uint64_t last_stream) {
  return "NATS/1.0\r\nNats-Last-Consumer: " + std::to_string(last_consumer) + "\r\nNats-Last-Stream: " +
         std::to_string(last_stream) + "\r\n\r\n";
}

std::string consumer_create_body(const source_spec& s, std::string_view deliver_subject, std::uint64_t start_seq,
                                 std::string_view self_stream, bool mirror) {
  ojson cfg;
  cfg["deliver_subject"] = deliver_subject;
  if (start_seq > 0) {
    cfg["deliver_policy"] = "by_start_sequence";
    cfg["opt_start_seq"] = start_seq;
  } else if (s.opt_start_seq > 0) {
    cfg["deliver_policy"] = "by_start_sequence";
    cfg["opt_start_seq"] = s.opt_start_seq;
  } else if (s.opt_start_time > 0) {
    cfg["deliver_policy"] = "by_start_time";
    cfg["opt_start_time"] = base::rfc3339_nano(s.opt_start_time);
  } else {
    cfg["deliver_policy"] = "all";
  }
  cfg["ack_policy"] = "none";
  cfg["ack_wait"] = 79'200'000'000'000LL;  // 22 h, as nats-server
  cfg["max_deliver"] = 1;
  cfg["idle_heartbeat"] = 1'000'000'000;
  cfg["flow_control"] = true;
  cfg["direct"] = true;
  cfg["inactive_threshold"] = 10'000'000'000LL;
  const auto filters = source_filters(s);
  if (filters.size() == 1) cfg["filter_subject"] = filters[0];
  else if (filters.size() > 1) cfg["filter_subjects"] = filters;
  ojson meta;
  meta[mirror ? "_nats.mirror.stream" : "_nats.src.stream"] = self_stream;
  cfg["metadata"] = meta;
  ojson j;
  j["stream_name"] = s.name;
  j["config"] = cfg;
  return j.dump();
}

std::optional<delivery_meta> parse_delivery_reply(std::string_view reply) {
  if (!reply.starts_with("$JS.ACK.")) return std::nullopt;
  auto t = core::split_tokens(reply, '.');
  // v1: $JS ACK stream consumer dc sseq dseq ts pending (9); v2: $JS ACK domain acchash stream
  // consumer dc sseq dseq ts pending [token] (11+).
  std::size_t base;
  if (t.size() == 9) base = 4;
  else if (t.size() >= 11) base = 6;
  else return std::nullopt;
  delivery_meta d;
  auto dc = parse_u64(t[base]), ss = parse_u64(t[base + 1]), ds = parse_u64(t[base + 2]),
       ts = parse_u64(t[base + 3]), pend = parse_u64(t[base + 4]);
  if (!dc || !ss || !ds || !ts || !pend) return std::nullopt;
  d.delivered = *dc;
  d.stream_seq = *ss;
  d.consumer_seq = *ds;
  d.ts = static_cast<std::int64_t>(*ts);
  d.pending = *pend;
  return d;
}

std::string strip_copy_headers(std::string_view headers, bool drop_stream_source) {
  if (headers.empty()) return {};
  auto eol = headers.find("\r\n");
  if (eol == std::string_view::npos) return std::string(headers);
  std::string out(headers.substr(0, eol + 2));  // the NATS/1.0 line
  bool kept = false;
  std::size_t pos = eol + 2;
  while (pos < headers.size()) {
    auto next = headers.find("\r\n", pos);
    if (next == std::string_view::npos) next = headers.size();
    const std::string_view line = headers.substr(pos, next - pos);
    pos = next + 2;
    if (line.empty()) continue;
    const auto colon = line.find(':');
    const std::string name = ascii_lower(line.substr(0, colon == std::string_view::npos ? line.size() : colon));
    if (name.starts_with("nats-expected-") || name.starts_with("nats-batch-")) continue;
    if (drop_stream_source && name == "nats-stream-source") continue;
    out.append(line).append("\r\n");
    kept = true;
  }
  if (!kept && out == "NATS/1.0\r\n") return {};
  out += "\r\n";
  return out;
}

std::string stream_source_header(const source_spec& s, std::uint64_t origin_seq, std::string_view subject) {
  std::string filter = s.filter_subject.empty() ? ">" : s.filter_subject;
  std::string dest = ">";
  if (!s.transforms.empty()) {
    filter.clear();
    dest.clear();
    for (std::size_t i = 0; i < s.transforms.size(); ++i) {
      if (i) {
        filter += '\f';
        dest += '\f';
      }
      filter += s.transforms[i].first.empty() ? ">" : s.transforms[i].first;
      dest += s.transforms[i].second.empty() ? ">" : s.transforms[i].second;
    }
  }
  std::string origin = s.name;
  // nats-server's index name of an external source: the api prefix's getHash (2.9.10 wrote
  // "ORDERS:z0zeNTHp 1" for $JS.A.API).
  if (!s.external_api.empty()) origin += ":" + core::server_name_hash(s.external_api);
  return origin + " " + std::to_string(origin_seq) + " " + filter + " " + dest + " " + std::string(subject);
}

std::optional<std::pair<std::string, std::uint64_t>> parse_stream_source_header(std::string_view v) {
  auto t = core::split_tokens(v, ' ');
  if (t.size() < 2) return std::nullopt;
  auto seq = parse_u64(t[1]);
  if (!seq) return std::nullopt;
  std::string_view name = t[0];
  if (auto c = name.find(':'); c != std::string_view::npos) name = name.substr(0, c);
  return std::make_pair(std::string(name), *seq);
}

// ---- source_tracker --------------------------------------------------------------------

std::optional<std::uint64_t> source_tracker::due_create(std::int64_t now) {
  if (_phase == phase::creating && now - _created_at >= _create_timeout) {
    // No answer to a create is not a refusal: asked again at once, without the failures'
    // backoff (a durable source's unanswered reset backs off as a refusal does).
    create_failed(make_error(_mirror ? 10029 : 10045, "timeout"), now);
    if (!_durable) _next_attempt = _last_attempt + kMinRetryNs;
  }
  if (_phase == phase::active && _last_heard != 0 && now - _last_heard >= kStallNs) restart(now);
  if (_phase != phase::idle && _phase != phase::backoff) return std::nullopt;
  if (now < _next_attempt) return std::nullopt;
  _phase = phase::creating;
  _created_at = now;
  _last_attempt = now;
  _dseq = 0;
  return _copied > 0 ? _copied + 1 : 0;
}

void source_tracker::create_ok(std::int64_t now) {
  if (_phase != phase::creating && _phase != phase::active) return;
  if (_phase == phase::creating) _dseq = 0;
  _phase = phase::active;
  _failures = 0;
  _error.reset();
  _last_heard = now;
}

void source_tracker::create_failed(api_error e, std::int64_t now) {
  if (_phase != phase::creating) return;
  _phase = phase::backoff;
  _error = std::move(e);
  ++_failures;
  const std::int64_t wait = std::min(kMaxRetryNs, std::int64_t(5'000'000'000) * 2 * _failures);
  _next_attempt = std::max(now + wait, _last_attempt + kMinRetryNs);
}

source_tracker::decision source_tracker::on_data(const delivery_meta& d, std::int64_t now) {
  // The origin may deliver before its create response arrives: the consumer exists.
  if (_phase == phase::creating) create_ok(now);
  if (_phase != phase::active) return {verdict::ignore, 0};
  _last_heard = now;
  if (d.delivered > 1) return {verdict::ignore, 0};
  if (d.consumer_seq != _dseq + 1) {
    restart(now);
    return {verdict::recreate, 0};
  }
  _dseq = d.consumer_seq;
  _lag = d.pending == 0 ? 0 : d.pending - 1;  // as nats-server computes it
  if (d.stream_seq <= _copied) return {verdict::duplicate, 0};
  const std::uint64_t skip = _mirror && _copied + 1 < d.stream_seq ? d.stream_seq - _copied - 1 : 0;
  return {verdict::store, skip};
}

bool source_tracker::on_heartbeat(std::uint64_t last_consumer, std::uint64_t last_stream, std::int64_t now) {
  if (_phase != phase::active) return false;
  _last_heard = now;
  (void)last_stream;
  if (last_consumer != _dseq) {
    restart(now);
    return true;
  }
  return false;
}

void source_tracker::restart(std::int64_t now) {
  _phase = phase::idle;
  _dseq = 0;
  _next_attempt = std::max(now, _last_attempt + kMinRetryNs);
}

std::int64_t source_tracker::next_deadline() const {
  switch (_phase) {
    case phase::idle:
    case phase::backoff: return _next_attempt;
    case phase::creating: return _created_at + _create_timeout;
    case phase::active: return _last_heard + kStallNs;
  }
  return _next_attempt;
}

std::int64_t mirrored_ttl(bool allow_msg_ttl, std::string_view headers) {
  if (!allow_msg_ttl || headers.empty()) return storage::ttl_none;
  if (auto v = find_header(headers, "Nats-TTL"))
    if (auto parsed = parse_msg_ttl(*v)) return *parsed;
  return storage::ttl_none;
}

}  // namespace js
