#include "src/js/stream_config.h"

#include <algorithm>
#include <cctype>
#include <functional>
#include <initializer_list>
#include <limits>
#include <unordered_map>
#include <unordered_set>

#include "peregrine_config.h"
#include "src/base/clock.h"
#include "src/core/subject.h"
#include "src/core/subject_overlap.h"
#include "src/js/json_decode.h"
#include "src/js/json_util.h"
#include "src/js/stream_source.h"
#include "src/js/subject_transform.h"

namespace js {

namespace {

using json = jdec::json;

using jdec::get_bool;
using jdec::get_duration;
using jdec::get_enum;
using jdec::get_i64;
using jdec::get_int;
using jdec::get_str;
using jdec::get_u64;

json get_arr(const json& v, const char* go_type) {
  if (!v.is_array()) jdec::type_error(v, go_type, false);
  return v;
}

using setter = std::function<void(stream_config&, const json&)>;

const std::unordered_map<std::string, setter>& setters() {
  static const std::unordered_map<std::string, setter> m = {
      {"name", [](stream_config& c, const json& v) { c.name = get_str(v); }},
      {"description", [](stream_config& c, const json& v) { c.description = get_str(v); }},
      {"subjects",
       [](stream_config& c, const json& v) {
         c.subjects = jdec::get_strs(v);
       }},
      {"retention",
       [](stream_config& c, const json& v) {
         using r = retention_policy;
         c.retention = get_enum<r>(v, {{"limits", r::limits}, {"interest", r::interest}, {"workqueue", r::workqueue}});
       }},
      {"max_consumers", [](stream_config& c, const json& v) { c.max_consumers = get_int(v, "int"); }},
      {"max_msgs", [](stream_config& c, const json& v) { c.max_msgs = get_i64(v); }},
      {"max_bytes", [](stream_config& c, const json& v) { c.max_bytes = get_i64(v); }},
      {"max_age", [](stream_config& c, const json& v) { c.max_age = get_duration(v); }},
      {"max_msgs_per_subject", [](stream_config& c, const json& v) { c.max_msgs_per_subject = get_i64(v); }},
      {"max_msg_size",
       [](stream_config& c, const json& v) {
         c.max_msg_size = get_int(v, "int32", std::numeric_limits<std::int32_t>::min(),
                                  std::numeric_limits<std::int32_t>::max());
       }},
      {"discard",
       [](stream_config& c, const json& v) {
         auto s = ascii_lower(get_enum(v));  // case-insensitive in nats-server
         if (s == "old") c.discard = discard_policy::old_msgs;
         else if (s == "new") c.discard = discard_policy::new_msgs;
         else jdec::enum_error(v);
       }},
      {"storage",
       [](stream_config& c, const json& v) {
         c.storage = get_enum<storage_type>(v, {{"file", storage_type::file}, {"memory", storage_type::memory}});
       }},
      {"num_replicas", [](stream_config& c, const json& v) { c.num_replicas = get_int(v, "int"); }},
      {"no_ack", [](stream_config& c, const json& v) { c.no_ack = get_bool(v); }},
      {"template_owner", [](stream_config& c, const json& v) { c.template_owner = get_str(v); }},
      {"duplicate_window", [](stream_config& c, const json& v) { c.duplicate_window = get_duration(v); }},
      {"placement", [](stream_config& c, const json& v) { c.placement = jdec::get_obj(v, "*server.Placement"); }},
      {"mirror", [](stream_config& c, const json& v) { c.mirror = jdec::get_obj(v, "*server.StreamSource"); }},
      {"sources", [](stream_config& c, const json& v) { c.sources = get_arr(v, "[]*server.StreamSource"); }},
      {"compression",
       [](stream_config& c, const json& v) {
         auto s = get_enum(v);
         if (s != "none" && s != "s2" && !s.empty()) jdec::enum_error(v);
         c.compression = s.empty() ? "none" : s;
       }},
      {"first_seq", [](stream_config& c, const json& v) { c.first_seq = get_u64(v); }},
      {"subject_transform", [](stream_config& c, const json& v) { c.subject_transform = jdec::get_obj(v, "*server.SubjectTransformConfig"); }},
      {"republish", [](stream_config& c, const json& v) { c.republish = jdec::get_obj(v, "*server.RePublish"); }},
      {"allow_direct", [](stream_config& c, const json& v) { c.allow_direct = get_bool(v); }},
      {"mirror_direct", [](stream_config& c, const json& v) { c.mirror_direct = get_bool(v); }},
      {"discard_new_per_subject", [](stream_config& c, const json& v) { c.discard_new_per_subject = get_bool(v); }},
      {"sealed", [](stream_config& c, const json& v) { c.sealed = get_bool(v); }},
      {"deny_delete", [](stream_config& c, const json& v) { c.deny_delete = get_bool(v); }},
      {"deny_purge", [](stream_config& c, const json& v) { c.deny_purge = get_bool(v); }},
      {"allow_rollup_hdrs", [](stream_config& c, const json& v) { c.allow_rollup_hdrs = get_bool(v); }},
      {"consumer_limits", [](stream_config& c, const json& v) { c.consumer_limits = jdec::get_obj(v, "server.StreamConsumerLimits"); }},
      {"allow_msg_ttl", [](stream_config& c, const json& v) { c.allow_msg_ttl = get_bool(v); }},
      {"subject_delete_marker_ttl", [](stream_config& c, const json& v) { c.subject_delete_marker_ttl = get_duration(v); }},
      {"allow_msg_counter", [](stream_config& c, const json& v) { c.allow_msg_counter = get_bool(v); }},
      {"allow_atomic", [](stream_config& c, const json& v) { c.allow_atomic = get_bool(v); }},
      {"allow_msg_schedules", [](stream_config& c, const json& v) { c.allow_msg_schedules = get_bool(v); }},
      {"persist_mode",
       [](stream_config& c, const json& v) {
         auto s = get_enum(v);
         if (s != "" && s != "default" && s != "async") jdec::enum_error(v);
         c.persist_mode = s == "default" ? "" : s;
       }},
      {"allow_batched", [](stream_config& c, const json& v) { c.allow_batched = get_bool(v); }},
      {"metadata",
       [](stream_config& c, const json& v) { c.metadata = jdec::get_string_map(v); }},
      {"pedantic", [](stream_config& c, const json& v) { c.pedantic = get_bool(v); }},
      // Returned by the server; tolerated in requests (clients echo what they read).
      {"created", [](stream_config&, const json&) {}},
  };
  return m;
}

std::optional<api_error> decode(const json& j, stream_config& out, bool strict) {
  const auto& m = setters();
  return jdec::decode_object(j, "StreamConfig", "", strict, [&](const std::string& key, const json& v) {
    auto s = m.find(key);
    if (s == m.end()) s = m.find(ascii_lower(key));  // Go matches keys case-insensitively
    if (s == m.end() || (strict && key == "created")) return false;
    s->second(out, v);
    return true;
  });
}

api_error invalid(std::string_view text) { return make_error(err::stream_invalid_config, text); }

bool overlaps_reserved(std::string_view s, std::string_view root) {
  return core::subjects_overlap(s, root);
}

// subject_transform (10155/10156) and republish (10052).
std::optional<api_error> check_transforms(const stream_config& c) {
  std::string error;
  if (c.subject_transform.is_object()) {
    const std::string src = string_field(c.subject_transform, "src");
    if (!src.empty() && !core::valid_subject(src)) return make_error(10155, "invalid subject " + src);
    if (!subject_transform::parse(src, string_field(c.subject_transform, "dest"), error)) return make_error(10156, error);
  }
  if (c.republish.is_object()) {
    const std::string src = string_field(c.republish, "src"), dest = string_field(c.republish, "dest");
    for (const auto& s : c.subjects)
      if (!dest.empty() && core::subjects_overlap(dest, s))
        return invalid("stream configuration for republish destination forms a cycle");
    if (dest.empty() || !subject_transform::parse(src, dest, error))
      return invalid("stream configuration for republish with transform from '" + src + "' to '" + dest +
                     "' not valid");
  }
  return std::nullopt;
}

// `o` with its keys in the Go struct's field order (how nats-server writes it back), whatever
// order the client sent; keys the struct lacks keep their place after them.
ojson in_go_order(const ojson& o, std::initializer_list<const char*> order) {
  if (!o.is_object()) return o;
  ojson out = ojson::object();
  for (const char* k : order)
    if (auto it = o.find(k); it != o.end()) out[k] = *it;
  for (auto it = o.begin(); it != o.end(); ++it)
    if (!out.contains(it.key())) out[it.key()] = it.value();
  return out;
}

}  // namespace

std::string string_field(const ojson& o, const char* key) {
  auto it = o.find(key);
  return it != o.end() && it->is_string() ? it->get<std::string>() : std::string();
}

std::optional<api_error> parse_stream_config(std::string_view body, stream_config& out) {
  auto j = jdec::parse(body);
  if (!j) return make_error(err::invalid_json);
  return decode(*j, out, true);
}

std::optional<stream_config> config_from_json(const ojson& j) {
  stream_config c;
  if (decode(j, c, false)) return std::nullopt;
  return c;
}

std::string check_stream_name(std::string_view name) {
  if (name.empty() || name.find_first_of(" \t\r\n\f.*>\\/") != std::string_view::npos)
    return "stream name is required and can not contain '.', '*', '>', '\\', '/'";
  if (name.size() > 255) return "stream name is too long, maximum allowed is 255";
  return {};
}

std::optional<api_error> normalise(stream_config& c) {
  auto fix_limit = [&](std::int64_t& v, const char* field) -> std::optional<api_error> {
    if (v < -1 && c.pedantic)
      return make_error(10157, std::string(field) + " must be set to -1");
    if (v == 0 || v < -1) v = -1;
    return std::nullopt;
  };
  if (auto e = fix_limit(c.max_msgs, "max_msgs")) return e;
  if (auto e = fix_limit(c.max_msgs_per_subject, "max_msgs_per_subject")) return e;
  if (auto e = fix_limit(c.max_bytes, "max_bytes")) return e;
  if (auto e = fix_limit(c.max_msg_size, "max_msg_size")) return e;
  if (auto e = fix_limit(c.max_consumers, "max_consumers")) return e;
  if (c.num_replicas == 0) c.num_replicas = 1;
  // Subject delete markers are TTL'd roll-ups: they need both features.
  if (c.subject_delete_marker_ttl > 0) {
    if (c.subject_delete_marker_ttl < base::kSecond) return invalid("subject delete marker TTL must be at least 1 second");
    if (!c.allow_msg_ttl) {
      if (c.pedantic) return invalid("subject delete marker cannot be set if message TTLs are disabled");
      c.allow_msg_ttl = true;
    }
    if (!c.allow_rollup_hdrs) {
      if (c.pedantic) return invalid("subject delete marker cannot be set if roll-ups are disabled");
      c.allow_rollup_hdrs = true;
      c.deny_purge = false;
    }
  }
  // Schedules replace themselves with Nats-Rollup: sub, and a fired one-shot purges its own
  // subject: both need roll-ups and purges.
  if (c.allow_msg_schedules && !c.allow_rollup_hdrs) {
    if (c.pedantic) return invalid("message scheduling cannot be set if roll-ups are disabled");
    c.allow_rollup_hdrs = true;
    c.deny_purge = false;
  }
  // Mirrors never de-duplicate; from 2.14 (the level claimed) sourced streams only with a
  // window of their own (2.9-2.12 gave them the 2 min default).
  if (c.duplicate_window == 0 && !c.has_mirror() && !c.has_sources()) {
    c.duplicate_window = kDefaultDuplicateWindow;
    if (c.max_age > 0 && c.max_age < c.duplicate_window) {
      if (c.pedantic) return make_error(10157, "duplicate window cannot be bigger than max age");
      c.duplicate_window = c.max_age;
    }
  }
  if (c.subjects.empty() && !c.has_mirror() && !c.has_sources()) c.subjects.push_back(c.name);
  if (c.placement.is_object() && c.placement.empty()) c.placement = nullptr;
  if (c.sources.is_array() && c.sources.empty()) c.sources = nullptr;
  if (c.republish.is_object() && (!c.republish.contains("src") || c.republish["src"] == ""))
    c.republish["src"] = ">";
  // Server-managed metadata: clients' version keys are dropped, the required level recomputed.
  c.metadata.erase("_nats.ver");
  c.metadata.erase("_nats.level");
  // The API level the stream needs: 1 for TTLs, 2 for atomic batches, counters,
  // schedules and async persistence, 4 for fast-ingest batches.
  const bool level2 = c.allow_atomic || c.allow_msg_counter || c.allow_msg_schedules || c.persist_mode == "async";
  c.metadata["_nats.req.level"] = c.allow_batched ? "4"
                                  : level2        ? "2"
                                  : c.allow_msg_ttl || c.subject_delete_marker_ttl > 0 ? "1"
                                                                                       : "0";
  return std::nullopt;
}

void apply_seal(stream_config& c) {
  c.max_age = 0;
  c.discard = discard_policy::new_msgs;
  c.deny_delete = true;
  c.deny_purge = true;
  c.allow_rollup_hdrs = false;
}

std::optional<api_error> check_replicated_features(const stream_config& c) {
  if (c.num_replicas <= 1) return std::nullopt;
  const char* what = c.allow_msg_schedules ? "message schedules" : nullptr;
  if (!what) return std::nullopt;
  return invalid(std::string("replicated streams do not support ") + what + " yet, use num_replicas 1");
}

std::optional<api_error> validate(const stream_config& c) {
  if (auto t = check_stream_name(c.name); !t.empty()) return invalid(t);
  if (c.description.size() > 4096) return invalid("stream description is too long, maximum allowed is 4096");
  std::size_t meta = 0;
  for (const auto& [k, v] : c.metadata) meta += k.size() + v.size();
  if (meta > 131072) return invalid("stream metadata exceeds maximum size of 131072 bytes");
  if (c.num_replicas < 0) return make_error(err::replicas_negative);
  if (c.num_replicas > 5) return invalid("maximum replicas is 5");
  if (c.max_age < 0) return invalid("max age can not be negative");
  if (c.max_age != 0 && c.max_age < kMinAge) return invalid("max age needs to be >= 100ms");
  if (c.duplicate_window < 0) return invalid("duplicates window can not be negative");
  if (c.max_age != 0 && c.duplicate_window > c.max_age)
    return invalid("duplicates window can not be larger then max age");
  if (c.duplicate_window != 0 && c.duplicate_window < kMinAge)
    return invalid("duplicates window needs to be >= 100ms");
  if (c.deny_purge && c.allow_rollup_hdrs) return invalid("roll-ups require the purge permission");
  if (c.discard_new_per_subject) {
    if (c.discard != discard_policy::new_msgs)
      return invalid("discard new per subject requires discard new policy to be set");
    if (c.max_msgs_per_subject <= 0) return invalid("discard new per subject requires max msgs per subject > 0");
  }
  if (c.mirror_direct && !c.has_mirror()) return invalid("stream has no mirror but does have mirror direct");
  if (c.has_mirror()) {
    if (!c.subjects.empty()) return make_error(10034);
    if (c.has_sources()) return make_error(10031);
  }
  if (c.subject_delete_marker_ttl < 0) return invalid("subject delete marker TTL must not be negative");
  if (c.placement.is_object() && c.placement.contains("preferred"))
    return invalid("preferred server not permitted in placement");
  // Hashing and a token trie, not pairwise loops: a config may list ~100,000 subjects.
  std::unordered_set<std::string_view> seen;
  seen.reserve(c.subjects.size());
  for (std::size_t i = 0; i < c.subjects.size(); ++i) {
    const auto& s = c.subjects[i];
    if (!core::valid_subject(s)) return invalid("invalid subject");
    if (!seen.insert(s).second) return invalid("duplicate subjects detected");
    if (s == ">") {
      if (!c.no_ack) return invalid("capturing all subjects requires no-ack to be true");
      if (c.num_replicas > 1) return invalid("capturing all subjects requires replicas of 1");
    }
    bool js_api = (overlaps_reserved(s, "$JS.>") && !core::subject_is_subset(s, "$JS.EVENT.>")) ||
                  overlaps_reserved(s, "$JSC.>") || overlaps_reserved(s, "$NRG.>");
    if (js_api && !c.no_ack && s != ">") return invalid("subjects that overlap with jetstream api require no-ack to be true");
    if (overlaps_reserved(s, "$SYS.>") && !core::subject_is_subset(s, "$SYS.ACCOUNT.>") && !c.no_ack && s != ">")
      return invalid("subjects that overlap with system api require no-ack to be true");
  }
  // As nats-server reports it: the first subject that overlaps a later one, and the first
  // such later one (duplicates were refused above, so this is about wildcards).
  if (auto p = core::first_overlapping_pair({c.subjects.begin(), c.subjects.end()}))
    return invalid("subject \"" + c.subjects[p->first] + "\" overlaps with \"" + c.subjects[p->second] + "\"");
  if (c.subjects.empty() && !c.has_mirror() && !c.has_sources())
    return invalid("stream needs at least one configured subject or be a source/mirror");
  if (auto e = validate_mirror_and_sources(c)) return e;
  if (auto e = check_transforms(c)) return e;
  if (c.allow_msg_counter) {  // a total is the sum of every increment: nothing may drop one
    if (c.discard == discard_policy::new_msgs) return invalid("counter stream cannot use discard new");
    if (c.allow_msg_ttl) return invalid("counter stream cannot use message TTLs");
    if (c.allow_msg_schedules) return invalid("counter stream cannot use message schedules");
    if (c.retention != retention_policy::limits) return invalid("counter stream can only use limits retention");
  }
  if (c.allow_msg_schedules && c.discard == discard_policy::new_msgs)
    return invalid("message scheduling cannot use discard new");
  // PubAck before the write (ADR-56): one copy, on disk eventually, never with atomic batches.
  if (c.persist_mode == "async") {
    if (c.storage != storage_type::file) return invalid("async persist mode is only supported on file storage");
    if (c.num_replicas > 1) return invalid("async persist mode is not supported on replicated streams");
    if (c.allow_atomic) return invalid("async persist mode is not supported with atomic batch publish");
  }
  return std::nullopt;
}

std::optional<api_error> check_update(const stream_config& o, const stream_config& n) {
  if (o.name != n.name) return invalid("stream configuration name must match original");
  if (o.storage != n.storage) return invalid("stream configuration update can not change storage type");
  if (o.retention != n.retention &&
      (o.retention == retention_policy::workqueue || n.retention == retention_policy::workqueue))
    return invalid("stream configuration update can not change retention policy to/from workqueue");
  if (o.sealed && !n.sealed) return invalid("stream configuration update can not unseal a sealed stream");
  if (o.deny_delete && !n.deny_delete) return invalid("stream configuration update can not cancel deny message deletes");
  if (o.deny_purge && !n.deny_purge) return invalid("stream configuration update can not cancel deny purge");
  if (o.mirror != n.mirror && !n.mirror.is_null()) return make_error(10055);
  if (o.allow_msg_ttl && !n.allow_msg_ttl) return invalid("message TTL status can not be disabled");
  if (o.allow_msg_counter != n.allow_msg_counter)
    return invalid("stream configuration update can not change message counter setting");
  if (o.allow_msg_schedules && !n.allow_msg_schedules) return invalid("message schedules can not be disabled");
  if (o.persist_mode != n.persist_mode) return invalid("stream configuration update can not change persist mode");
  return std::nullopt;
}

std::string_view to_string(retention_policy r) {
  switch (r) {
    case retention_policy::interest: return "interest";
    case retention_policy::workqueue: return "workqueue";
    default: return "limits";
  }
}
std::string_view to_string(discard_policy d) { return d == discard_policy::new_msgs ? "new" : "old"; }
std::string_view to_string(storage_type s) { return s == storage_type::memory ? "memory" : "file"; }

ojson to_json(const stream_config& c, bool with_server_meta) {
  ojson j;
  j["name"] = c.name;
  if (!c.description.empty()) j["description"] = c.description;
  if (!c.subjects.empty()) j["subjects"] = c.subjects;
  j["retention"] = to_string(c.retention);
  j["max_consumers"] = c.max_consumers;
  j["max_msgs"] = c.max_msgs;
  j["max_bytes"] = c.max_bytes;
  j["max_age"] = c.max_age;
  j["max_msgs_per_subject"] = c.max_msgs_per_subject;
  if (c.max_msg_size != 0) j["max_msg_size"] = c.max_msg_size;
  j["discard"] = to_string(c.discard);
  j["storage"] = to_string(c.storage);
  j["num_replicas"] = c.num_replicas;
  if (c.no_ack) j["no_ack"] = true;
  if (!c.template_owner.empty()) j["template_owner"] = c.template_owner;
  if (c.duplicate_window != 0) j["duplicate_window"] = c.duplicate_window;
  if (!c.placement.is_null()) j["placement"] = in_go_order(c.placement, {"cluster", "tags", "preferred"});
  if (!c.mirror.is_null()) j["mirror"] = c.mirror;
  if (!c.sources.is_null()) j["sources"] = c.sources;
  j["compression"] = c.compression;
  if (c.first_seq != 0) j["first_seq"] = c.first_seq;
  if (!c.subject_transform.is_null()) j["subject_transform"] = in_go_order(c.subject_transform, {"src", "dest"});
  if (!c.republish.is_null()) j["republish"] = in_go_order(c.republish, {"src", "dest", "headers_only"});
  j["allow_direct"] = c.allow_direct;
  j["mirror_direct"] = c.mirror_direct;
  if (c.discard_new_per_subject) j["discard_new_per_subject"] = true;
  j["sealed"] = c.sealed;
  j["deny_delete"] = c.deny_delete;
  j["deny_purge"] = c.deny_purge;
  j["allow_rollup_hdrs"] = c.allow_rollup_hdrs;
  j["consumer_limits"] = c.consumer_limits.is_object()
                             ? in_go_order(c.consumer_limits, {"inactive_threshold", "max_ack_pending"})
                             : ojson::object();
  j["allow_msg_ttl"] = c.allow_msg_ttl;
  if (c.subject_delete_marker_ttl != 0) j["subject_delete_marker_ttl"] = c.subject_delete_marker_ttl;
  if (c.allow_msg_counter) j["allow_msg_counter"] = true;
  if (c.allow_atomic) j["allow_atomic"] = true;
  if (c.allow_msg_schedules) j["allow_msg_schedules"] = true;
  if (!c.persist_mode.empty()) j["persist_mode"] = c.persist_mode;
  if (c.allow_batched) j["allow_batched"] = true;
  std::map<std::string, std::string> meta = c.metadata;
  if (with_server_meta) {
    meta["_nats.level"] = std::to_string(kApiLevel);
    meta["_nats.ver"] = PEREGRINE_NATS_LEVEL;
  }
  if (!meta.empty()) {
    ojson m = ojson::object();
    for (const auto& [k, v] : meta) m[k] = v;
    j["metadata"] = m;
  }
  return j;
}

bool same_config(const stream_config& a, const stream_config& b) {
  return to_json(a, false) == to_json(b, false);
}

}  // namespace js
