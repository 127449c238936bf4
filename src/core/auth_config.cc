#include "src/core/auth_config.h"

#include <algorithm>
#include <cctype>
#include <set>

#include "src/core/account.h"
#include "src/core/nkey.h"
#include "src/core/options.h"
#include "src/core/subject.h"

namespace core {
namespace {

bool key_is(std::string_view key, std::initializer_list<std::string_view> names) {
  for (auto n : names)
    if (key.size() == n.size() && std::equal(key.begin(), key.end(), n.begin(), [](char a, char b) {
          return std::tolower(static_cast<unsigned char>(a)) == b;
        }))
      return true;
  return false;
}

struct reader {
  std::string& error;
  std::vector<std::string>& warnings;

  bool bad(const config_value& v, const std::string& key, const std::string& what) {
    error = v.where() + ": invalid value for '" + key + "': " + what;
    return false;
  }
  void unknown(const std::string& section, const std::string& key, const config_value& v) {
    if (!v.used_as_variable) warnings.push_back(v.key_where() + ": unknown config key '" + section + key + "' ignored");
  }
  bool str(const config_value& v, const std::string& key, std::string& out) {
    if (!v.is_scalar()) return bad(v, key, "expected a string");
    out = v.text;
    return true;
  }
  // A permission entry: a subject, or "subject queue" for subscribe rules.
  bool rule(const config_value& v, const std::string& key, bool queue_ok, std::vector<std::string>& out) {
    if (!v.is_scalar()) return bad(v, key, "expected a subject or a list of subjects");
    std::string s = v.text;
    const auto sp = s.find_first_of(" \t");
    if (sp != std::string::npos) {
      std::string subject = s.substr(0, sp);
      std::string queue = s.substr(s.find_first_not_of(" \t", sp));
      if (!queue_ok || !valid_subject(subject) || !valid_queue_name(queue))
        return bad(v, key, "\"" + s + "\" is not a valid subject");
      out.push_back(subject + " " + queue);
      return true;
    }
    if (!valid_subject(s)) return bad(v, key, "\"" + s + "\" is not a valid subject");
    out.push_back(std::move(s));
    return true;
  }
  bool rules(const config_value& v, const std::string& key, bool queue_ok, std::vector<std::string>& out) {
    out.clear();
    if (v.is_scalar()) return rule(v, key, queue_ok, out);
    if (!v.is_array()) return bad(v, key, "expected a subject or a list of subjects");
    for (const auto& item : v.items)
      if (!rule(item, key, queue_ok, out)) return false;
    return true;
  }
  // "publish: x", "publish: [x, y]" (both: allow lists) or "publish: {allow: ..., deny: ...}".
  bool direction(const config_value& v, const std::string& key, bool queue_ok, subject_permission& out) {
    out = {};
    if (!v.is_map()) {
      out.allow.emplace();
      return rules(v, key, queue_ok, *out.allow);
    }
    for (const auto& [k, e] : v.entries) {
      if (key_is(k, {"allow"})) {
        out.allow.emplace();
        if (!rules(e, key + ".allow", queue_ok, *out.allow)) return false;
      } else if (key_is(k, {"deny"})) {
        if (!rules(e, key + ".deny", queue_ok, out.deny)) return false;
      } else {
        unknown(key + ".", k, e);
      }
    }
    return true;
  }
  bool responses(const config_value& v, const std::string& key, std::optional<response_permission>& out) {
    if (v.is_scalar()) {
      bool on = false;
      if (!parse_bool(v.text, on)) return bad(v, key, "expected true, false or {max, expires}");
      if (on) out = response_permission{};
      else out.reset();
      return true;
    }
    if (!v.is_map()) return bad(v, key, "expected true, false or {max, expires}");
    response_permission rp;
    for (const auto& [k, e] : v.entries) {
      if (key_is(k, {"max", "max_msgs", "max_messages", "max_responses"})) {
        std::int64_t n = 0;
        if (!e.is_scalar() || !parse_size(e.text, n)) return bad(e, k, "expected an integer");
        rp.max_msgs = n == 0 ? 1 : n;  // 0: nats-server's default
      } else if (key_is(k, {"expires", "expiration", "ttl"})) {
        std::int64_t ms = 0;
        if (!e.is_scalar()) return bad(e, k, "expected a duration such as \"1m\"");
        if (e.text.rfind('-', 0) == 0) {
          ms = -1;  // negative: never expires
        } else if (!parse_duration_ms(e.text, ms)) {
          return bad(e, k, "expected a duration such as \"1m\"");
        }
        rp.expires_ms = ms == 0 ? 120'000 : ms;
      } else {
        unknown(key + ".", k, e);
      }
    }
    out = rp;
    return true;
  }
  bool perms(const config_value& v, const std::string& key, permissions& out) {
    if (!v.is_map()) return bad(v, key, "expected a map of publish, subscribe and allow_responses");
    out = {};
    for (const auto& [k, e] : v.entries) {
      bool ok = true;
      if (key_is(k, {"publish", "pub", "import"})) {
        ok = direction(e, k, false, out.publish.emplace());
      } else if (key_is(k, {"subscribe", "sub", "export"})) {
        ok = direction(e, k, true, out.subscribe.emplace());
      } else if (key_is(k, {"allow_responses", "allow_response"})) {
        ok = responses(e, k, out.responses);
      } else {
        unknown(key + ".", k, e);
      }
      if (!ok) return false;
    }
    return true;
  }
  bool user(const config_value& v, user_config& out) {
    if (!v.is_map()) return bad(v, "users", "expected a map such as {user: name, password: secret}");
    for (const auto& [k, e] : v.entries) {
      bool ok = true;
      if (key_is(k, {"user", "username"})) {
        ok = str(e, k, out.user);
      } else if (key_is(k, {"password", "pass"})) {
        ok = str(e, k, out.password);
      } else if (key_is(k, {"nkey"})) {
        ok = str(e, k, out.nkey);
      } else if (key_is(k, {"permissions", "permission"})) {
        ok = perms(e, k, out.perms.emplace());
      } else {
        unknown("users.", k, e);
      }
      if (!ok) return false;
    }
    if (out.user.empty() && out.nkey.empty()) return bad(v, "users", "a user needs a user name or an nkey");
    if (!out.user.empty() && !out.nkey.empty()) return bad(v, "users", "a user has a user name or an nkey, not both");
    return true;
  }
  bool subject(const config_value& v, const std::string& key, std::string& out, bool wildcards_ok) {
    if (!str(v, key, out)) return false;
    if (!(wildcards_ok ? valid_subject(out) : valid_literal_subject(out)))
      return bad(v, key, "\"" + out + "\" is not a valid subject");
    return true;
  }
  bool exp(const config_value& v, account_export& out) {
    if (!v.is_map()) return bad(v, "exports", "expected {stream: subject} or {service: subject}");
    bool kind_seen = false;
    for (const auto& [k, e] : v.entries) {
      bool ok = true;
      if (key_is(k, {"stream", "service"})) {
        out.service = key_is(k, {"service"});
        kind_seen = true;
        ok = subject(e, k, out.subject, true);
      } else if (key_is(k, {"accounts"})) {
        out.accounts.clear();
        if (e.is_scalar()) {
          out.accounts.push_back(e.text);
        } else if (e.is_array()) {
          for (const auto& a : e.items) {
            if (!a.is_scalar()) return bad(a, k, "expected account names");
            out.accounts.push_back(a.text);
          }
        } else {
          return bad(e, k, "expected account names");
        }
      } else if (key_is(k, {"response_type", "response"})) {
        ok = str(e, k, out.response_type);
        std::string rt = out.response_type;
        for (char& ch : rt) ch = char(std::tolower(static_cast<unsigned char>(ch)));
        if (ok && rt != "single" && rt != "singleton" && rt != "stream" && rt != "chunk" && rt != "chunked")
          return bad(e, k, "Unknown response type: \"" + out.response_type + "\"");  // nats-server's text
      } else if (key_is(k, {"response_threshold", "response_max_time", "response_time"})) {
        if (!e.is_scalar() || !parse_duration_ms(e.text, out.response_threshold_ms) || out.response_threshold_ms <= 0)
          return bad(e, k, "Expected response threshold to be a parseable time duration, got \"" + e.text + "\"");
      } else {
        unknown("exports.", k, e);
      }
      if (!ok) return false;
    }
    if (!kind_seen) return bad(v, "exports", "an export needs a stream or a service subject");
    return true;
  }
  bool imp(const config_value& v, account_import& out) {
    if (!v.is_map()) return bad(v, "imports", "expected {stream: {account, subject}} or {service: {account, subject}}");
    bool kind_seen = false;
    for (const auto& [k, e] : v.entries) {
      bool ok = true;
      if (key_is(k, {"stream", "service"})) {
        out.service = key_is(k, {"service"});
        kind_seen = true;
        if (!e.is_map()) return bad(e, k, "expected {account: NAME, subject: SUBJECT}");
        for (const auto& [ik, ie] : e.entries) {
          if (key_is(ik, {"account"})) ok = str(ie, ik, out.account);
          else if (key_is(ik, {"subject"})) ok = subject(ie, ik, out.subject, true);
          else unknown("imports." + k + ".", ik, ie);
          if (!ok) return false;
        }
        if (out.account.empty() || out.subject.empty()) return bad(e, k, "an import needs an account and a subject");
      } else if (key_is(k, {"to", "local_subject"})) {
        ok = subject(e, k, out.to, true);
      } else if (key_is(k, {"prefix"})) {
        ok = subject(e, k, out.prefix, false);
      } else {
        unknown("imports.", k, e);
      }
      if (!ok) return false;
    }
    if (!kind_seen) return bad(v, "imports", "an import needs a stream or a service");
    if (out.service && !out.prefix.empty()) return bad(v, "imports", "a service import takes `to`, not `prefix`");
    return true;
  }
  // As nats-server's parseJetStreamForAccount: enabled/disabled (or a boolean), or a map of
  // limits (sizes take the config's suffixes); a map enables JetStream for the account.
  bool js_limits(const std::string& name, const config_value& v, account_config& out) {
    const std::string key = "accounts." + name + ".jetstream";
    if (v.is_scalar()) {
      std::string t = v.text;
      std::transform(t.begin(), t.end(), t.begin(), [](unsigned char c) { return char(std::tolower(c)); });
      if (t == "enabled" || t == "enable" || t == "true") out.jetstream = true;
      else if (t == "disabled" || t == "disable" || t == "false") out.jetstream = false;
      else return bad(v, key, "Expected 'enabled' or 'disabled' for string value, got '" + v.text + "'");
      return true;
    }
    if (!v.is_map()) return bad(v, key, "expected enabled, disabled or a map of limits");
    out.jetstream = true;
    for (const auto& [k, e] : v.entries) {
      std::int64_t* field = nullptr;
      if (key_is(k, {"max_memory", "max_mem", "mem", "memory"})) field = &out.js_max_memory;
      else if (key_is(k, {"max_file", "max_store", "max_disk", "store", "disk"})) field = &out.js_max_file;
      else if (key_is(k, {"max_streams", "streams"})) field = &out.js_max_streams;
      else if (key_is(k, {"max_consumers", "consumers"})) field = &out.js_max_consumers;
      else if (key_is(k, {"max_ack_pending"})) field = &out.js_max_ack_pending;
      else if (key_is(k, {"mem_max_stream_bytes", "memory_max_stream_bytes"})) field = &out.js_memory_max_stream_bytes;
      else if (key_is(k, {"disk_max_stream_bytes", "store_max_stream_bytes"})) field = &out.js_store_max_stream_bytes;
      if (key_is(k, {"max_bytes_required", "max_stream_bytes", "max_bytes"})) {
        std::string t = e.is_scalar() ? e.text : std::string();
        std::transform(t.begin(), t.end(), t.begin(), [](unsigned char c) { return char(std::tolower(c)); });
        if (t != "true" && t != "false" && t != "yes" && t != "no" && t != "on" && t != "off")
          return bad(e, key + "." + k, "Expected a parseable bool for \"" + k + "\", got " + e.text);
        out.js_max_bytes_required = t == "true" || t == "yes" || t == "on";
        continue;
      }
      if (!field) {
        unknown(key + ".", k, e);
        continue;
      }
      std::int64_t n = 0;
      if (!e.is_scalar() || !parse_size(e.text, n) || n < -1) return bad(e, key + "." + k, "expected an integer");
      *field = n;
    }
    return true;
  }
  bool account(const std::string& name, const config_value& v, account_config& out) {
    out.name = name;
    if (!v.is_map()) return bad(v, name, "expected a map of users, exports and imports");
    for (const auto& [k, e] : v.entries) {
      bool ok = true;
      if (key_is(k, {"users"})) {
        if (!e.is_array()) return bad(e, k, "expected a list of users");
        for (const auto& item : e.items)
          if (!user(item, out.users.emplace_back())) return false;
      } else if (key_is(k, {"exports"})) {
        if (!e.is_array()) return bad(e, k, "expected a list of exports");
        for (const auto& item : e.items)
          if (!exp(item, out.exports.emplace_back())) return false;
      } else if (key_is(k, {"imports"})) {
        if (!e.is_array()) return bad(e, k, "expected a list of imports");
        for (const auto& item : e.items)
          if (!imp(item, out.imports.emplace_back())) return false;
      } else if (key_is(k, {"default_permissions"})) {
        ok = perms(e, k, out.default_permissions.emplace());
      } else if (key_is(k, {"jetstream"})) {
        ok = js_limits(name, e, out);
      } else {
        unknown("accounts." + name + ".", k, e);
      }
      if (!ok) return false;
    }
    return true;
  }
};

}  // namespace

bool parse_accounts(const config_value& v, std::vector<account_config>& out, std::string& error,
                    std::vector<std::string>& warnings) {
  reader r{error, warnings};
  if (!v.is_map()) return r.bad(v, "accounts", "expected a map of account names");
  out.clear();
  for (const auto& [name, e] : v.entries)
    if (!r.account(name, e, out.emplace_back())) return false;
  return true;
}

bool parse_users(const config_value& v, std::vector<user_config>& out, std::string& error,
                 std::vector<std::string>& warnings) {
  reader r{error, warnings};
  if (!v.is_array()) return r.bad(v, "users", "expected a list of users");
  out.clear();
  for (const auto& item : v.items)
    if (!r.user(item, out.emplace_back())) return false;
  return true;
}

bool parse_permissions(const config_value& v, permissions& out, std::string& error,
                       std::vector<std::string>& warnings) {
  reader r{error, warnings};
  return r.perms(v, "default_permissions", out);
}

bool validate_auth(const server_options& o, std::string& error) {
  if (!o.token.empty() && !o.users.empty()) {
    error = "authorization: can not have a token and a users array";
    return false;
  }
  if (!o.user.empty() && !o.users.empty()) {
    error = "authorization: a single user can not be used together with a users array";
    return false;
  }
  std::set<std::string> seen, names;
  std::vector<const user_config*> all;
  for (const auto& u : o.users) all.push_back(&u);
  for (const auto& a : o.accounts) {
    if (a.name == "$G" || !names.insert(a.name).second) {
      error = "accounts: duplicate or reserved account name \"" + a.name + "\"";
      return false;
    }
    for (const auto& u : a.users) all.push_back(&u);
  }
  if (!o.token.empty() && !o.accounts.empty()) {
    error = "authorization: can not have a token and accounts";
    return false;
  }
  auto find_account = [&](const std::string& n) -> const account_config* {
    for (const auto& a : o.accounts)
      if (a.name == n) return &a;
    return nullptr;
  };
  for (const auto& a : o.accounts) {
    for (const auto& im : a.imports) {
      const account_config* from = find_account(im.account);
      const char* kind = im.service ? "service" : "stream";
      if (from == nullptr || from == &a) {
        error = "accounts." + a.name + ": " + kind + " import from unknown account \"" + im.account + "\"";
        return false;
      }
      bool exported = false;
      for (const auto& ex : from->exports)
        exported = exported || (ex.service == im.service && subject_is_subset(im.subject, ex.subject) &&
                                (ex.accounts.empty() || std::count(ex.accounts.begin(), ex.accounts.end(), a.name)));
      if (!exported) {
        error = "accounts." + a.name + ": " + kind + " import of \"" + im.subject + "\" is not exported by account \"" +
                im.account + "\" to it";
        return false;
      }
      // `to` may carry the subject's wildcards (mapped by position, as nats-server's import
      // transforms).
      if (!im.to.empty() && im.to != im.subject &&
          (subject_token_count(im.to) == 0 ||
           (im.service ? !import_mappable(im.to, im.subject) : !import_mappable(im.subject, im.to)))) {
        error = "accounts." + a.name + ": " + kind + " import `to` \"" + im.to + "\" must have the same wildcards as \"" +
                im.subject + "\"";
        return false;
      }
    }
  }
  for (const user_config* up : all) {
    const user_config& u = *up;
    const std::string& id = u.nkey.empty() ? u.user : u.nkey;
    if (!seen.insert(id).second) {
      error = "authorization: duplicate user \"" + id + "\"";
      return false;
    }
    if (!u.nkey.empty() && !nkey_is_user_public(u.nkey)) {
      error = "authorization: \"" + u.nkey + "\" is not a valid public user nkey";
      return false;
    }
  }
  if (!o.no_auth_user.empty() && !seen.count(o.no_auth_user)) {
    error = "no_auth_user: \"" + o.no_auth_user + "\" not present as user or nkey in authorization block";
    return false;
  }
  return true;
}

}  // namespace core
