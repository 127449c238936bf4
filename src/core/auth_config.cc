#include "src/core/auth_config.h"

#include <algorithm>
#include <cctype>
#include <set>

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
};

}  // namespace

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
  std::set<std::string> seen;
  for (const auto& u : o.users) {
    const std::string& id = u.nkey.empty() ? u.user : u.nkey;
    if (!seen.insert(id).second) {
      error = "authorization: duplicate user \"" + id + "\"";
      return false;
    }
    if (!u.nkey.empty() && (u.nkey.size() != 56 || u.nkey[0] != 'U')) {
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
