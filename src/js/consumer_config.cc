#include "src/js/consumer_config.h"

#include <algorithm>
#include <cctype>
#include <functional>
#include <unordered_map>

#include "peregrine_config.h"
#include "src/core/subject.h"
#include "src/js/ack.h"
#include "src/js/json_decode.h"
#include "src/js/json_util.h"

namespace js {

namespace {

using json = jdec::json;

using jdec::get_bool;
using jdec::get_duration;
using jdec::get_enum;
using jdec::get_int;
using jdec::get_str;
using jdec::get_strs;
using jdec::get_u64;

// *time.Time: only an RFC 3339 string decodes.
std::int64_t get_time(const json& v) {
  if (!v.is_string()) throw json_decode_error{};
  auto t = parse_time(v.get<std::string>());
  if (!t) throw json_decode_error{};
  return *t;
}

using setter = std::function<void(consumer_config&, const json&)>;

const std::unordered_map<std::string, setter>& setters() {
  static const std::unordered_map<std::string, setter> m = {
      {"durable_name", [](consumer_config& c, const json& v) { c.durable_name = get_str(v); }},
      {"name", [](consumer_config& c, const json& v) { c.name = get_str(v); }},
      {"description", [](consumer_config& c, const json& v) { c.description = get_str(v); }},
      {"deliver_policy",
       [](consumer_config& c, const json& v) {
         using d = deliver_policy;
         c.deliver = get_enum<d>(v, {{"all", d::all}, {"undefined", d::all}, {"", d::all}, {"last", d::last},
                                     {"new", d::new_}, {"by_start_sequence", d::by_start_sequence},
                                     {"by_start_time", d::by_start_time}, {"last_per_subject", d::last_per_subject}});
       }},
      {"opt_start_seq", [](consumer_config& c, const json& v) { c.opt_start_seq = get_u64(v); }},
      {"opt_start_time", [](consumer_config& c, const json& v) { c.opt_start_time = get_time(v); }},
      {"ack_policy",
       [](consumer_config& c, const json& v) {
         using a = ack_policy;
         c.ack = get_enum<a>(v, {{"none", a::none}, {"all", a::all}, {"explicit", a::explicit_},
                                 {"flow_control", a::flow_control}});
       }},
      {"ack_wait", [](consumer_config& c, const json& v) { c.ack_wait = get_duration(v); }},
      {"max_deliver", [](consumer_config& c, const json& v) { c.max_deliver = get_int(v, "int"); }},
      {"backoff",
       [](consumer_config& c, const json& v) {
         if (!v.is_array()) jdec::type_error(v, "[]time.Duration", false);
         c.backoff.clear();
         for (const auto& e : v) c.backoff.push_back(get_duration(e));
       }},
      {"filter_subject", [](consumer_config& c, const json& v) { c.filter_subject = get_str(v); }},
      {"filter_subjects", [](consumer_config& c, const json& v) { c.filter_subjects = get_strs(v); }},
      {"replay_policy",
       [](consumer_config& c, const json& v) {
         c.replay = get_enum<replay_policy>(v, {{"instant", replay_policy::instant}, {"original", replay_policy::original}});
       }},
      {"rate_limit_bps", [](consumer_config& c, const json& v) { c.rate_limit_bps = get_u64(v); }},
      {"sample_freq", [](consumer_config& c, const json& v) { c.sample_freq = get_str(v); }},
      {"max_waiting", [](consumer_config& c, const json& v) { c.max_waiting = get_int(v, "int"); }},
      {"max_ack_pending", [](consumer_config& c, const json& v) { c.max_ack_pending = get_int(v, "int"); }},
      {"flow_control", [](consumer_config& c, const json& v) { c.flow_control = get_bool(v); }},
      {"headers_only", [](consumer_config& c, const json& v) { c.headers_only = get_bool(v); }},
      {"max_batch", [](consumer_config& c, const json& v) { c.max_batch = get_int(v, "int"); }},
      {"max_expires", [](consumer_config& c, const json& v) { c.max_expires = get_duration(v); }},
      {"max_bytes", [](consumer_config& c, const json& v) { c.max_bytes = get_int(v, "int"); }},
      {"deliver_subject", [](consumer_config& c, const json& v) { c.deliver_subject = get_str(v); }},
      {"deliver_group", [](consumer_config& c, const json& v) { c.deliver_group = get_str(v); }},
      {"idle_heartbeat", [](consumer_config& c, const json& v) { c.idle_heartbeat = get_duration(v); }},
      {"inactive_threshold", [](consumer_config& c, const json& v) { c.inactive_threshold = get_duration(v); }},
      {"num_replicas", [](consumer_config& c, const json& v) { c.num_replicas = get_int(v, "int"); }},
      {"mem_storage", [](consumer_config& c, const json& v) { c.mem_storage = get_bool(v); }},
      {"direct", [](consumer_config& c, const json& v) { c.direct = get_bool(v); }},
      {"metadata",
       [](consumer_config& c, const json& v) { c.metadata = jdec::get_string_map(v); }},
      {"pause_until", [](consumer_config& c, const json& v) { c.pause_until = get_time(v); }},
      {"priority_groups", [](consumer_config& c, const json& v) { c.priority_groups = get_strs(v); }},
      {"priority_policy",
       [](consumer_config& c, const json& v) {
         using p = priority_policy;
         c.priority = get_enum<p>(v, {{"none", p::none}, {"", p::none}, {"overflow", p::overflow},
                                      {"pinned_client", p::pinned_client}, {"prioritized", p::prioritized}});
       }},
      {"priority_timeout", [](consumer_config& c, const json& v) { c.priority_timeout = get_duration(v); }},
  };
  return m;
}

// `path` is where the config sits in the request ("config." in CreateConsumerRequest): Go
// names the innermost struct and the whole field path.
std::optional<api_error> decode(const json& j, consumer_config& out, bool strict, std::string_view path = {}) {
  const auto& m = setters();
  auto e = jdec::decode_object(j, "ConsumerConfig", path, strict, [&](const std::string& key, const json& v) {
    auto s = m.find(key);
    if (s == m.end()) s = m.find(ascii_lower(key));  // Go matches keys case-insensitively
    if (s == m.end()) return false;
    s->second(out, v);
    return true;
  });
  if (e) return e;
  // The server owns these keys: never stored from a request.
  out.metadata.erase("_nats.ver");
  out.metadata.erase("_nats.level");
  return std::nullopt;
}

api_error pedantic_error(std::string_view what) { return make_error(err::pedantic, what); }

bool valid_group_name(std::string_view g) {
  if (g.empty() || g.size() > 16) return false;
  for (char ch : g)
    if (!std::isalnum(static_cast<unsigned char>(ch)) && ch != '-' && ch != '_' && ch != '/' && ch != '=')
      return false;
  return true;
}

std::optional<api_error> check_start(const consumer_config& c) {
  auto bad = [](std::string_view policy, std::string_view what) {
    return make_error(err::invalid_policy,
                      "consumer delivery policy is deliver " + std::string(policy) + ", but optional " + std::string(what));
  };
  const bool seq = c.opt_start_seq > 0, time = c.opt_start_time.has_value();
  auto plain = [&](std::string_view name) -> std::optional<api_error> {
    if (seq) return bad(name, "start sequence is also set");
    if (time) return bad(name, "start time is also set");
    return std::nullopt;
  };
  switch (c.deliver) {
    case deliver_policy::all: return plain("all");
    case deliver_policy::last: return plain("last");
    case deliver_policy::new_: return plain("new");
    case deliver_policy::last_per_subject:
      if (auto e = plain("last per subject")) return e;
      if (c.filters().empty()) return bad("last per subject", "filter subject is not set");
      return std::nullopt;
    case deliver_policy::by_start_sequence:
      if (!seq) return bad("by start sequence", "start sequence is not set");
      if (time) return bad("by start sequence", "start time is also set");
      return std::nullopt;
    case deliver_policy::by_start_time:
      if (!time) return bad("by start time", "start time is not set");
      if (seq) return bad("by start time", "start sequence is also set");
      return std::nullopt;
  }
  return std::nullopt;
}

std::optional<api_error> check_sample(std::string_view s) {
  if (s.empty()) return std::nullopt;
  std::string_view num = s;
  if (num.ends_with('%')) num.remove_suffix(1);
  auto n = parse_u64(num);
  if (!n) return make_error(err::invalid_sampling, "strconv.Atoi: parsing \"" + std::string(num) + "\": invalid syntax");
  if (*n > 100)
    return make_error(err::invalid_sampling, "sampling value must be between 0 and 100");
  return std::nullopt;
}

}  // namespace

std::vector<std::string> consumer_config::filters() const {
  if (!filter_subject.empty()) return {filter_subject};
  return filter_subjects;
}

std::vector<std::string> consumer_config::match_filters() const {
  auto f = filters();
  if (f.size() == 1 && f[0] == ">") f.clear();
  return f;
}

std::optional<api_error> parse_create_request(std::string_view body, create_request& out) {
  auto j = jdec::parse(body);
  if (!j || !j->is_object()) return make_error(err::invalid_json);
  return jdec::decode_object(*j, "CreateConsumerRequest", "", true, [&](const std::string& k, const json& v) {
    const std::string key = ascii_lower(k);
    if (key == "stream_name") {
      out.stream_name = get_str(v);
    } else if (key == "config") {
      if (!v.is_object()) jdec::type_error(v, "server.ConsumerConfig", false);
      if (auto e = decode(v, out.config, true, "config.")) throw json_decode_error{{}, {}, {}, e};
    } else if (key == "action") {
      using a = create_action;
      out.action = get_enum<a>(v, {{"", a::create_or_update}, {"create", a::create}, {"update", a::update}});
    } else if (key == "pedantic") {
      out.pedantic = get_bool(v);
    } else {
      return false;
    }
    return true;
  });
}

std::optional<api_error> check_create_subject(create_request& req, std::string_view stream_name, std::string_view name,
                                              std::string_view filter, bool durable_api, bool subject_has_name) {
  if (req.stream_name != stream_name) return make_error(err::name_mismatch);
  consumer_config& cfg = req.config;
  if (durable_api) {
    if (cfg.durable_name.empty()) return make_error(err::durable_name_not_set);
    if (cfg.durable_name != name) return make_error(err::durable_name_mismatch);
  } else if (subject_has_name) {
    if (!cfg.durable_name.empty() && cfg.durable_name != name) return make_error(err::durable_name_mismatch);
  } else if (!cfg.durable_name.empty()) {
    return make_error(err::ephemeral_with_durable);
  }
  if (!filter.empty()) {
    if (!cfg.filter_subjects.empty()) return make_error(err::multiple_filters_subject_api);
    if (cfg.filter_subject != filter) return make_error(err::create_filter_mismatch);
  }
  if (subject_has_name) {
    if (auto e = check_consumer_name(name)) return e;
    if (!cfg.name.empty() && !cfg.durable_name.empty() && cfg.name != cfg.durable_name)
      return make_error(err::durable_name_differs);
    cfg.name = std::string(name);
  }
  return std::nullopt;
}

std::optional<api_error> parse_pause_request(std::string_view body, std::optional<std::int64_t>& until) {
  json req;
  until.reset();
  if (auto e = jdec::decode_request(body, "JSApiConsumerPauseRequest", {{"pause_until", jdec::field_kind::time}}, req))
    return e;
  if (auto it = req.find("pause_until"); it != req.end() && it->is_string())
    if (auto t = parse_time(it->get<std::string>()); t && *t != 0) until = *t;
  return std::nullopt;
}

std::optional<api_error> parse_unpin_request(std::string_view body, std::string& group) {
  json req;
  if (body.find_first_not_of(" \t\r\n") == std::string_view::npos) return make_error(err::invalid_json);  // body required
  if (auto e = jdec::decode_request(body, "JSApiConsumerUnpinRequest", {{"group", jdec::field_kind::string}}, req))
    return e;
  if (auto it = req.find("group"); it != req.end() && it->is_string()) group = it->get<std::string>();
  if (group.empty()) return make_error(err::invalid_json, ": consumer group not specified");
  return std::nullopt;
}

std::optional<api_error> check_priority_group_name(std::string_view group) {
  bool valid = group.size() <= 16;
  for (char ch : group)
    valid = valid && (std::isalnum(static_cast<unsigned char>(ch)) || ch == '-' || ch == '_' || ch == '/' || ch == '=');
  if (!valid) return make_error(err::priority_group_invalid);
  return std::nullopt;
}

std::optional<consumer_config> consumer_config_from_json(const ojson& j) {
  consumer_config c;
  if (decode(j, c, false)) return std::nullopt;
  return c;
}

namespace {
// A stream's consumer_limits entry (0 = not set).
std::int64_t consumer_limit(const stream_config& s, const char* key) {
  const ojson& lim = s.consumer_limits;
  if (!lim.is_object() || !lim.contains(key) || !lim[key].is_number_integer()) return 0;
  return lim[key].get<std::int64_t>();
}
}  // namespace

// In nats-server's order (setConsumerConfigDefaults); pedantic refuses what it would adjust.
std::optional<api_error> normalise(consumer_config& c, const stream_config& s, bool pedantic,
                                   std::int64_t account_max_ack_pending) {
  if (c.max_deliver == 0 || c.max_deliver < -1) {
    if (pedantic && c.max_deliver < -1) return pedantic_error("max_deliver must be set to -1");
    c.max_deliver = -1;
  }
  auto not_negative = [&](std::int64_t& v, const char* field) -> std::optional<api_error> {
    if (v >= 0) return std::nullopt;
    if (pedantic) return pedantic_error(std::string(field) + " must not be negative");
    v = 0;
    return std::nullopt;
  };
  if (auto e = not_negative(c.max_waiting, "max_waiting")) return e;
  if (c.max_ack_pending < -1) {
    if (pedantic) return pedantic_error("max_ack_pending must be set to -1");
    c.max_ack_pending = -1;
  }
  if (auto e = not_negative(c.max_batch, "max_batch")) return e;
  if (auto e = not_negative(c.max_expires, "max_expires")) return e;
  if (auto e = not_negative(c.max_bytes, "max_bytes")) return e;
  if (auto e = not_negative(c.idle_heartbeat, "idle_heartbeat")) return e;
  if (auto e = not_negative(c.inactive_threshold, "inactive_threshold")) return e;
  if (auto e = not_negative(c.priority_timeout, "priority_timeout")) return e;
  if (!c.push() && c.max_waiting == 0) c.max_waiting = kDefaultMaxWaiting;
  // 2.14: only explicit and all get the default (flow_control must leave ack_wait unset).
  if ((c.ack == ack_policy::explicit_ || c.ack == ack_policy::all) && c.ack_wait == 0) c.ack_wait = kDefaultAckWait;
  if (!c.backoff.empty()) {
    if (pedantic && c.ack_wait != c.backoff.front())
      return pedantic_error("first backoff value has to equal batch AckWait");
    c.ack_wait = c.backoff.front();
  }
  const std::int64_t lim_pending = consumer_limit(s, "max_ack_pending");
  const std::int64_t lim_inactive = consumer_limit(s, "inactive_threshold");
  if (c.max_ack_pending == 0) {
    if (pedantic && lim_pending > 0)
      return pedantic_error("max_ack_pending must be set if it's configured in stream limits");
    c.max_ack_pending = lim_pending;
  }
  if (c.inactive_threshold == 0) {
    if (pedantic && lim_inactive > 0)
      return pedantic_error("inactive_threshold must be set if it's configured in stream limits");
    c.inactive_threshold = lim_inactive;
  }
  if (c.max_ack_pending == 0 && c.ack != ack_policy::none)
    c.max_ack_pending = account_max_ack_pending > 0 ? std::min(kDefaultMaxAckPending, account_max_ack_pending)
                                                   : kDefaultMaxAckPending;
  if (c.inactive_threshold == 0 && !c.durable()) c.inactive_threshold = kEphemeralInactive;
  if (c.priority == priority_policy::pinned_client && c.priority_timeout == 0) c.priority_timeout = kDefaultPinnedTtl;
  if (c.name.empty()) c.name = c.durable_name;
  // flow_control acks ride on flow-control replies with the sourcing heartbeat (1 s); outside
  // pedantic mode the server sets both (nats-server 2.14 setConsumerConfigDefaults).
  if (c.ack == ack_policy::flow_control && !pedantic) {
    c.flow_control = true;
    c.idle_heartbeat = kSourceHeartbeat;
  }
  return std::nullopt;
}

std::optional<api_error> check_consumer_name(std::string_view name) {
  if (name.find_first_of("\\/") != std::string_view::npos) return make_error(err::consumer_path_separators);
  if (name.find_first_of(".*> \t\r\n\f") != std::string_view::npos) return make_error(err::bad_durable_name);
  if (name.size() > 255) return make_error(err::consumer_name_too_long, "255");
  return std::nullopt;
}

std::optional<api_error> check_workqueue(const stream_config& s, const consumer_config& c,
                                         const std::vector<const consumer_config*>& others) {
  if (s.retention != retention_policy::workqueue) return std::nullopt;
  // flow_control (2.14) is what durable sourcing of a work queue uses (ADR-58).
  if (c.ack != ack_policy::explicit_ && c.ack != ack_policy::flow_control)
    return make_error(err::wq_requires_explicit_ack);
  const auto mine = c.filters();
  for (const consumer_config* other : others) {
    if (mine.empty()) return make_error(err::wq_multiple_unfiltered);
    const auto theirs = other->filters();
    if (theirs.empty()) return make_error(err::wq_consumer_not_unique);
    for (const auto& a : mine)
      for (const auto& b : theirs)
        if (core::subjects_overlap(a, b)) return make_error(err::wq_consumer_not_unique);
  }
  if (c.deliver != deliver_policy::all) return make_error(err::wq_consumer_not_deliver_all);
  return std::nullopt;
}

std::optional<api_error> validate(const consumer_config& c, const stream_config& s,
                                  std::int64_t account_max_ack_pending) {
  if (!c.durable_name.empty())
    if (auto e = check_consumer_name(c.durable_name)) return e;
  if (!c.name.empty())
    if (auto e = check_consumer_name(c.name)) return e;
  if (c.num_replicas < 0) return make_error(err::replicas_negative);
  if (c.num_replicas > 0 && c.num_replicas > std::max<std::int64_t>(1, s.num_replicas))
    return make_error(err::replicas_exceed_stream);
  if (c.ack_wait < 0) return make_error(err::ack_wait_negative);
  for (auto b : c.backoff)
    if (b < 0) return make_error(err::backoff_negative);
  if (c.ack == ack_policy::flow_control) {
    if (!c.push()) return make_error(err::ack_fc_requires_push);
    if (!c.flow_control) return make_error(err::ack_fc_requires_fc);
    if (c.idle_heartbeat != kSourceHeartbeat)
      return make_error(err::stream_invalid_config, "flow control ack policy heartbeat needs to be 1s");
    if (c.max_ack_pending <= 0) return make_error(err::ack_fc_requires_max_ack_pending);
    if (c.ack_wait != 0 || !c.backoff.empty()) return make_error(err::ack_fc_requires_no_ack_wait);
    if (c.max_deliver > 0) return make_error(err::ack_fc_requires_no_max_deliver);
  }
  // 2.11+ rule (the level this server claims): as many backoff steps as deliveries is fine;
  // 2.9 refused len(backoff) == max_deliver.
  if (!c.backoff.empty() && c.max_deliver != -1 && std::int64_t(c.backoff.size()) > c.max_deliver)
    return make_error(err::max_deliver_backoff);
  if (c.description.size() > 4096) return make_error(err::description_too_long, "4096");
  if (c.push()) {
    if (!core::valid_subject(c.deliver_subject)) return make_error(err::invalid_deliver_subject);
    if (!core::valid_literal_subject(c.deliver_subject)) return make_error(err::deliver_wildcards);
    for (const auto& subj : s.subjects)
      if (core::subject_matches(subj, c.deliver_subject)) return make_error(err::deliver_cycle);
    if (c.max_waiting != 0) return make_error(err::push_max_waiting);
    if (c.max_ack_pending > 0 && c.ack == ack_policy::none) return make_error(err::max_pending_needs_ack);
    if (c.idle_heartbeat > 0 && c.idle_heartbeat < 100 * base::kMilli) return make_error(err::small_heartbeat);
  } else {
    if (c.ack == ack_policy::none && s.retention == retention_policy::workqueue)
      return make_error(err::pull_requires_ack);
    if (c.rate_limit_bps > 0) return make_error(err::pull_with_rate_limit);
    if (c.max_waiting < 0) return make_error(err::max_waiting_negative);
    if (c.idle_heartbeat > 0) return make_error(err::hb_requires_push);
    if (c.flow_control) return make_error(err::fc_requires_push);
    if (c.max_batch < 0) return make_error(err::max_batch_negative);
    if (c.max_expires != 0 && c.max_expires < base::kMilli) return make_error(err::max_expires_too_small);
  }
  if (account_max_ack_pending > 0 && c.max_ack_pending > account_max_ack_pending)
    return make_error(err::max_ack_pending_excess, std::to_string(account_max_ack_pending));
  // The stream's consumer_limits are ceilings, not only defaults (nats-server 2.10+).
  if (const std::int64_t lim = consumer_limit(s, "max_ack_pending"); lim > 0 && c.max_ack_pending > lim)
    return make_error(err::max_ack_pending_excess, std::to_string(lim));
  if (const std::int64_t lim = consumer_limit(s, "inactive_threshold"); lim > 0 && c.inactive_threshold > lim)
    return make_error(err::inactive_threshold_excess, base::go_duration(lim));
  if (c.direct) {
    if (!c.push()) return make_error(err::direct_requires_push);
    if (c.durable()) return make_error(err::direct_requires_ephemeral);
  }
  if (!c.filter_subject.empty() && !c.filter_subjects.empty()) return make_error(err::duplicate_filters);
  if (!c.filter_subject.empty() && !core::valid_subject(c.filter_subject))
    return make_error(err::stream_invalid_config, "invalid subject");
  for (std::size_t i = 0; i < c.filter_subjects.size(); ++i) {
    const auto& f = c.filter_subjects[i];
    if (f.empty()) return make_error(err::empty_filter);
    if (!core::valid_subject(f)) return make_error(err::stream_invalid_config, "invalid subject");
    for (std::size_t k = 0; k < i; ++k)
      if (core::subjects_overlap(f, c.filter_subjects[k])) return make_error(err::overlapping_filters);
  }
  if (auto e = check_start(c)) return e;
  if (auto e = check_sample(c.sample_freq)) return e;
  if (c.flow_control && c.idle_heartbeat == 0) return make_error(err::fc_needs_heartbeats);
  if (!c.durable_name.empty() && !c.name.empty() && c.name != c.durable_name)
    return make_error(err::durable_name_differs);
  std::size_t meta = 0;
  for (const auto& [k, v] : c.metadata) meta += k.size() + v.size();
  if (meta > 128 * 1024) return make_error(err::metadata_too_large, "128KB");
  if (c.priority != priority_policy::none) {
    if (c.push()) return make_error(err::priority_push);
    if (c.priority_groups.empty()) return make_error(err::priority_needs_groups);
    for (const auto& g : c.priority_groups) {
      if (g.empty()) return make_error(err::priority_group_empty);
      if (!valid_group_name(g)) return make_error(err::priority_group_invalid);
    }
  } else {
    if (!c.priority_groups.empty()) return make_error(err::priority_groups_without_policy);
    if (c.priority_timeout != 0) return make_error(err::pinned_ttl_without_policy);
  }
  return std::nullopt;
}

std::optional<api_error> check_update(const consumer_config& o, const consumer_config& n, bool push_bound) {
  auto fail = [](const char* text) { return make_error(err::consumer_create, text); };
  if (o.deliver != n.deliver) return fail("deliver policy can not be updated");
  if (o.mem_storage != n.mem_storage) return fail("storage type can not be updated");
  if (o.direct != n.direct) return fail("direct can not be updated");
  if (o.opt_start_seq != n.opt_start_seq) return fail("start sequence can not be updated");
  if (o.opt_start_time != n.opt_start_time) return fail("start time can not be updated");
  if (o.ack != n.ack) return fail("ack policy can not be updated");
  if (o.replay != n.replay) return fail("replay policy can not be updated");
  if (o.idle_heartbeat != n.idle_heartbeat) return fail("heart beats can not be updated");
  if (o.flow_control != n.flow_control) return fail("flow control can not be updated");
  if (!o.push() && n.push()) return fail("can not update pull consumer to push based");
  if (o.push() && !n.push()) return fail("can not update push consumer to pull based");
  if (o.push() && o.deliver_subject != n.deliver_subject && push_bound)
    return make_error(err::consumer_name_in_use);
  if (o.max_waiting != n.max_waiting) return fail("max waiting can not be updated");
  return std::nullopt;
}

std::string_view to_string(deliver_policy d) {
  switch (d) {
    case deliver_policy::all: return "all";
    case deliver_policy::last: return "last";
    case deliver_policy::new_: return "new";
    case deliver_policy::by_start_sequence: return "by_start_sequence";
    case deliver_policy::by_start_time: return "by_start_time";
    case deliver_policy::last_per_subject: return "last_per_subject";
  }
  return "all";
}
std::string_view to_string(ack_policy a) {
  switch (a) {
    case ack_policy::none: return "none";
    case ack_policy::all: return "all";
    case ack_policy::flow_control: return "flow_control";
    default: return "explicit";
  }
}
std::string_view to_string(replay_policy r) { return r == replay_policy::original ? "original" : "instant"; }
std::string_view to_string(priority_policy p) {
  switch (p) {
    case priority_policy::none: return "none";
    case priority_policy::overflow: return "overflow";
    case priority_policy::pinned_client: return "pinned_client";
    case priority_policy::prioritized: return "prioritized";
  }
  return "none";
}

// Field order and omitempty exactly as nats-server's ConsumerConfig struct.
ojson to_json(const consumer_config& c, bool with_server_meta) {
  ojson j;
  if (!c.durable_name.empty()) j["durable_name"] = c.durable_name;
  if (!c.name.empty()) j["name"] = c.name;
  if (!c.description.empty()) j["description"] = c.description;
  j["deliver_policy"] = to_string(c.deliver);
  if (c.opt_start_seq != 0) j["opt_start_seq"] = c.opt_start_seq;
  if (c.opt_start_time) j["opt_start_time"] = base::rfc3339_nano(*c.opt_start_time);
  j["ack_policy"] = to_string(c.ack);
  if (c.ack_wait != 0) j["ack_wait"] = c.ack_wait;
  if (c.max_deliver != 0) j["max_deliver"] = c.max_deliver;
  if (!c.backoff.empty()) j["backoff"] = c.backoff;
  if (!c.filter_subject.empty()) j["filter_subject"] = c.filter_subject;
  if (!c.filter_subjects.empty()) j["filter_subjects"] = c.filter_subjects;
  j["replay_policy"] = to_string(c.replay);
  if (c.rate_limit_bps != 0) j["rate_limit_bps"] = c.rate_limit_bps;
  if (!c.sample_freq.empty()) j["sample_freq"] = c.sample_freq;
  if (c.max_waiting != 0) j["max_waiting"] = c.max_waiting;
  if (c.max_ack_pending != 0) j["max_ack_pending"] = c.max_ack_pending;
  if (c.idle_heartbeat != 0) j["idle_heartbeat"] = c.idle_heartbeat;
  if (c.flow_control) j["flow_control"] = true;
  if (c.headers_only) j["headers_only"] = true;
  if (c.max_batch != 0) j["max_batch"] = c.max_batch;
  if (c.max_expires != 0) j["max_expires"] = c.max_expires;
  if (c.max_bytes != 0) j["max_bytes"] = c.max_bytes;
  if (!c.deliver_subject.empty()) j["deliver_subject"] = c.deliver_subject;
  if (!c.deliver_group.empty()) j["deliver_group"] = c.deliver_group;
  if (c.inactive_threshold != 0) j["inactive_threshold"] = c.inactive_threshold;
  j["num_replicas"] = c.num_replicas;
  if (c.mem_storage) j["mem_storage"] = true;
  if (c.direct) j["direct"] = true;
  std::map<std::string, std::string> meta = c.metadata;
  if (with_server_meta) {
    const bool level1 = c.pause_until || c.priority != priority_policy::none;
    // API level 4 (2.14) for the flow_control ack policy, 1 (2.11) for pause/priority groups.
    meta["_nats.req.level"] = c.ack == ack_policy::flow_control ? "4" : level1 ? "1" : "0";
    meta["_nats.level"] = std::to_string(kApiLevel);
    meta["_nats.ver"] = PEREGRINE_NATS_LEVEL;
  }
  if (!meta.empty()) {
    ojson m = ojson::object();
    for (const auto& [k, v] : meta) m[k] = v;
    j["metadata"] = m;
  }
  if (c.pause_until) j["pause_until"] = base::rfc3339_nano(*c.pause_until);
  if (!c.priority_groups.empty()) j["priority_groups"] = c.priority_groups;
  if (c.priority != priority_policy::none) j["priority_policy"] = to_string(c.priority);
  if (c.priority_timeout != 0) j["priority_timeout"] = c.priority_timeout;
  return j;
}

bool same_config(const consumer_config& a, const consumer_config& b) {
  auto strip = [](consumer_config c) {
    c.metadata.erase("_nats.req.level");
    c.pause_until.reset();
    return to_json(c, false);
  };
  return strip(a) == strip(b);
}

consumer_params to_params(const consumer_config& c, const stream_config& s, std::string_view stream_name,
                          std::string_view consumer_name) {
  consumer_params p;
  p.stream_name = std::string(stream_name);
  p.consumer_name = std::string(consumer_name);
  p.ack = c.ack;
  p.ack_wait = c.ack_wait > 0 ? c.ack_wait : kDefaultAckWait;
  if (!c.sample_freq.empty()) {  // "N" or "N%", validated at create
    std::string_view f = c.sample_freq;
    if (f.ends_with('%')) f.remove_suffix(1);
    p.sample_pct = int(parse_u64(f).value_or(0));
  }
  p.backoff = c.backoff;
  p.max_deliver = c.max_deliver;
  p.max_ack_pending = c.max_ack_pending;
  p.max_waiting = c.max_waiting;
  p.max_batch = c.max_batch;
  p.max_bytes = c.max_bytes;
  p.max_expires = c.max_expires;
  p.headers_only = c.headers_only;
  p.replay_original = c.replay == replay_policy::original;
  p.deliver_subject = c.deliver_subject;
  p.idle_heartbeat = c.idle_heartbeat;
  p.flow_control = c.flow_control;
  p.rate_limit_bps = c.rate_limit_bps;
  p.rate_burst = s.max_msg_size > 0 ? std::uint64_t(s.max_msg_size) : 1024 * 1024;
  p.priority = c.priority;
  p.priority_groups = c.priority_groups;
  p.priority_timeout = c.priority_timeout;
  p.inactive_threshold = c.inactive_threshold;
  return p;
}

}  // namespace js
