#include "src/core/auth.h"

#include <crypt.h>

#include <cctype>

#include "src/core/subject.h"

namespace core {
namespace {

bool any_matches(const std::vector<std::string>& rules, std::string_view subject) {
  for (const auto& r : rules)
    if (r.find(' ') == std::string::npos && subject_matches(r, subject)) return true;
  return false;
}

// Rules of the form "subject queue" whose subject part matches; nullopt when there are none,
// else whether one of them names `queue` (literally or by a wildcard queue pattern).
std::optional<bool> queue_rule_matches(const std::vector<std::string>& rules, std::string_view subject,
                                       std::string_view queue) {
  bool any = false;
  for (const auto& r : rules) {
    const auto sp = r.find(' ');
    if (sp == std::string::npos) continue;
    const std::string_view rs = std::string_view(r).substr(0, sp);
    const std::string_view rq = std::string_view(r).substr(sp + 1);
    if (!subject_matches(rs, subject)) continue;
    any = true;
    if (rq == queue || subject_matches(rq, queue)) return true;
  }
  if (!any) return std::nullopt;
  return false;
}

bool constant_time_equal(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;  // as Go's subtle.ConstantTimeCompare
  unsigned char diff = 0;
  for (std::size_t i = 0; i < a.size(); ++i) diff |= static_cast<unsigned char>(a[i] ^ b[i]);
  return diff == 0;
}

bool is_bcrypt(std::string_view s) {  // see is_bcrypt_hash
  return s.size() > 7 && s[0] == '$' && s[1] == '2' && (s[2] == 'a' || s[2] == 'b' || s[2] == 'y') && s[3] == '$';
}

std::string go_quote(std::string_view s) {
  static const char* hex = "0123456789abcdef";
  std::string out = "\"";
  for (unsigned char ch : s) {
    if (ch == '"' || ch == '\\') {
      out.push_back('\\');
      out.push_back(char(ch));
    } else if (ch < 0x20 || ch == 0x7f) {
      out += "\\x";
      out.push_back(hex[ch >> 4]);
      out.push_back(hex[ch & 15]);
    } else {
      out.push_back(char(ch));
    }
  }
  out.push_back('"');
  return out;
}

}  // namespace

bool auth_configured(const server_options& o) {
  if (!o.user.empty() || !o.token.empty() || !o.users.empty()) return true;
  for (const auto& a : o.accounts)
    if (!a.users.empty()) return true;
  return false;
}

bool auth_options_changed(const server_options& a, const server_options& b) {
  return a.user != b.user || a.pass != b.pass || a.token != b.token || a.users != b.users ||
         a.default_permissions != b.default_permissions || a.no_auth_user != b.no_auth_user ||
         a.tls.verify_and_map != b.tls.verify_and_map || a.accounts != b.accounts ||
         a.system_account != b.system_account || a.no_system_account != b.no_system_account;
}

std::shared_ptr<const auth_table> build_auth_table(const server_options& o) {
  auto t = std::make_shared<auth_table>();
  t->required = auth_configured(o);
  t->token = o.token;
  t->no_auth_user = o.no_auth_user;
  t->verify_and_map = o.tls.verify_and_map;
  if (!o.user.empty()) {
    auto e = std::make_shared<user_entry>();
    e->name = o.user;
    e->password = o.pass;
    t->by_user[o.user] = e;
  }
  t->accounts.push_back(account_rules{"$G", {}, {}});
  for (const auto& a : o.accounts) t->accounts.push_back(account_rules{a.name, {}, {}});
  auto id_of = [&](const std::string& name) {
    for (std::uint32_t i = 1; i < t->accounts.size(); ++i)
      if (t->accounts[i].name == name) return i;
    return kGlobalAccount;
  };
  for (std::uint32_t i = 1; i < t->accounts.size(); ++i) {
    for (const auto& im : o.accounts[i - 1].imports) {
      const std::uint32_t from = id_of(im.account);
      if (from == kGlobalAccount) continue;  // validated at load; never import from $G
      if (im.service) {
        service_forward f{im.to.empty() ? im.subject : im.to, im.subject, from};
        // The export it goes through sets how responses come back (nats-server: Singleton unless said).
        for (const auto& ex : o.accounts[from - 1].exports) {
          if (!ex.service || !subject_is_subset(im.subject, ex.subject)) continue;
          std::string rt = ex.response_type;
          for (char& ch : rt) ch = char(std::tolower(static_cast<unsigned char>(ch)));
          f.singleton = rt.empty() || rt.starts_with("single");  // not stream, chunk, chunked
          if (ex.response_threshold_ms > 0) f.threshold_ms = ex.response_threshold_ms;
          break;
        }
        t->accounts[i].services_out.push_back(std::move(f));
      } else {
        t->accounts[from].streams_out.push_back(stream_forward{im.subject, i, im.prefix, im.to});
      }
    }
  }
  std::vector<std::pair<const user_config*, std::uint32_t>> all;
  for (const auto& u : o.users) all.emplace_back(&u, kGlobalAccount);
  for (std::uint32_t i = 1; i < t->accounts.size(); ++i)
    for (const auto& u : o.accounts[i - 1].users) all.emplace_back(&u, i);
  for (const auto& [up, account] : all) {
    const user_config& u = *up;
    auto e = std::make_shared<user_entry>();
    e->account = account;
    e->name = u.nkey.empty() ? u.user : u.nkey;
    e->password = u.password;
    e->nkey = u.nkey;
    // default_permissions are per block: the authorization block's for its users, an
    // account's for its own (as nats-server).
    const std::optional<permissions>& defaults =
        account == kGlobalAccount ? o.default_permissions : o.accounts[account - 1].default_permissions;
    std::optional<permissions> p = u.perms ? u.perms : defaults;
    if (p) {
      if (p->responses && !p->publish) p->publish = subject_permission{std::vector<std::string>{}, {}};
      e->perms = std::make_shared<const permissions>(*p);
    }
    if (!u.nkey.empty()) {
      t->nkeys = true;
      t->by_nkey[u.nkey] = e;
    } else {
      t->by_user[u.user] = e;
    }
  }
  t->global_only = o.accounts.empty();
  // The system account: the configured one, or nats-server's default "$SYS" made here when
  // no account of that name exists (users may be put in it under accounts { $SYS { } }).
  if (!o.no_system_account) {
    const std::string name = o.system_account.empty() ? "$SYS" : o.system_account;
    t->system_account = id_of(name);
    if (t->system_account == kGlobalAccount && name != "$G") {
      t->accounts.push_back(account_rules{name, {}, {}});
      t->system_account = std::uint32_t(t->accounts.size() - 1);
    }
    // nats-server's system imports in every account: its own connz and statz, asked of the
    // cluster ("$SYS.REQ.ACCOUNT.PING.CONNZ" in A is "$SYS.REQ.ACCOUNT.A.CONNZ" in $SYS; every
    // server answers, so any number of responses). Not in $G: its fast path has no imports.
    for (std::uint32_t i = 1; i < t->accounts.size(); ++i) {
      if (i == t->system_account) continue;
      const std::string& acc = t->accounts[i].name;
      for (const auto& [local, ep] : {std::pair{"$SYS.REQ.ACCOUNT.PING.CONNZ", "CONNZ"},
                                      std::pair{"$SYS.REQ.SERVER.PING.CONNZ", "CONNZ"},
                                      std::pair{"$SYS.REQ.ACCOUNT.PING.STATZ", "STATZ"}})
        t->accounts[i].services_out.push_back(
            service_forward{local, "$SYS.REQ.ACCOUNT." + acc + "." + ep, t->system_account, false});
    }
  }
  return t;
}

bool is_bcrypt_hash(std::string_view s) { return is_bcrypt(s); }

bool password_matches(const std::string& stored, const std::string& given) {
  if (!is_bcrypt(stored)) return constant_time_equal(stored, given);
  thread_local std::unique_ptr<crypt_data> data;
  if (!data) data = std::make_unique<crypt_data>();
  data->initialized = 0;
  // crypt_rn, not crypt_r: ASan intercepts crypt_r, and its interceptor satisfying the symbol
  // let --as-needed drop libcrypt, so the call jumped to a null "real" crypt_r.
  const char* h = crypt_rn(given.c_str(), stored.c_str(), data.get(), sizeof(crypt_data));
  if (h == nullptr || h[0] == '*') return false;
  return constant_time_equal(stored, h);
}

auth_outcome authenticate(const auth_table& t, const connect_credentials& c, const password_checker& check_password,
                          const nkey_verifier& verify_nkey) {
  if (!t.required) return {true, nullptr};
  if (t.verify_and_map) {  // the first certificate name that is a user, as nats-server tries them
    for (const auto& name : c.tls_names)
      if (auto it = t.by_user.find(name); it != t.by_user.end()) return {true, it->second};
    return {};
  }
  if (!c.nkey.empty() && t.nkeys) {
    auto it = t.by_nkey.find(c.nkey);
    if (it == t.by_nkey.end() || !verify_nkey(c.nkey, c.sig)) return {};
    return {true, it->second};
  }
  const bool no_credentials = c.user.empty() && c.pass.empty() && c.token.empty() && c.nkey.empty();
  if (no_credentials && !t.no_auth_user.empty()) {
    if (auto it = t.by_user.find(t.no_auth_user); it != t.by_user.end()) return {true, it->second};
    if (auto it = t.by_nkey.find(t.no_auth_user); it != t.by_nkey.end()) return {true, it->second};
  }
  if (!c.user.empty()) {
    auto it = t.by_user.find(c.user);
    if (it != t.by_user.end() && check_password(it->second->password, c.pass)) return {true, it->second};
    return {};
  }
  if (!t.token.empty() && !c.token.empty() && check_password(t.token, c.token)) return {true, nullptr};
  return {};
}

bool publish_allowed(const permissions& p, std::string_view subject) {
  if (!p.publish) return true;
  const subject_permission& sp = *p.publish;
  if (sp.allow && !any_matches(*sp.allow, subject)) return false;
  return !any_matches(sp.deny, subject);
}

bool subscribe_allowed(const permissions& p, std::string_view subject, std::string_view queue) {
  if (!p.subscribe) return true;
  const subject_permission& sp = *p.subscribe;
  bool allowed = true;
  if (sp.allow) {
    allowed = any_matches(*sp.allow, subject);
    if (!queue.empty())
      if (auto q = queue_rule_matches(*sp.allow, subject, queue)) allowed = *q;
  }
  if (allowed) {
    allowed = !any_matches(sp.deny, subject);
    if (!queue.empty())
      if (auto q = queue_rule_matches(sp.deny, subject, queue); q && *q) allowed = false;
  }
  return allowed;
}

bool delivery_denied(const permissions& p, std::string_view subject) {
  return p.subscribe && any_matches(p.subscribe->deny, subject);
}

std::string publish_violation(std::string_view subject) {
  return "Permissions Violation for Publish to " + go_quote(subject);
}

std::string subscribe_violation(std::string_view subject, std::string_view queue) {
  std::string s = "Permissions Violation for Subscription to " + go_quote(subject);
  if (!queue.empty()) s += " using queue " + go_quote(queue);
  return s;
}

std::string subscribe_revoked(std::string_view subject, std::string_view sid) {
  return "Permissions Violation for Subscription to " + go_quote(subject) + " (sid " + go_quote(sid) + ")";
}

void response_grants::grant(std::string_view reply, std::int64_t now_ms, const response_permission& rp) {
  if (_grants.size() >= kPruneAbove) prune(now_ms, rp);
  _grants[std::string(reply)] = entry{now_ms, 0};
}

bool response_grants::use(std::string_view subject, std::int64_t now_ms, const response_permission& rp) {
  auto it = _grants.find(std::string(subject));
  if (it == _grants.end()) return false;
  ++it->second.used;
  const bool over = rp.max_msgs > 0 && it->second.used > rp.max_msgs;
  const bool expired = rp.expires_ms > 0 && now_ms - it->second.granted_ms > rp.expires_ms;
  if (over || expired) {
    _grants.erase(it);
    return false;
  }
  return true;
}

void response_grants::prune(std::int64_t now_ms, const response_permission& rp) {
  for (auto it = _grants.begin(); it != _grants.end();) {
    const bool spent = rp.max_msgs > 0 && it->second.used >= rp.max_msgs;
    const bool expired = rp.expires_ms > 0 && now_ms - it->second.granted_ms > rp.expires_ms;
    it = (spent || expired) ? _grants.erase(it) : std::next(it);
  }
}

}  // namespace core
