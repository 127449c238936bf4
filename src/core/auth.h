#pragma once
// Authentication and permissions, as nats-server's `authorization` block defines them. Pure:
// the table is built from the options once per (re)load; the dispatcher asks it who a CONNECT
// is and what that connection may publish and subscribe to.
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>

#include "src/core/account.h"
#include "src/core/auth_types.h"
#include "src/core/options.h"

namespace core {

// Credentials as a CONNECT presents them.
struct connect_credentials {
  std::string user, pass, token, nkey, sig;
  std::vector<std::string> tls_names;  // verify_and_map: the client certificate's names
};

// The effective permissions of one user: allow_responses without publish rules means "publish
// nothing but responses", as nats-server does.
struct user_entry {
  std::string name;  // user name or nkey (connz authorized_user)
  std::string password;
  std::string nkey;
  std::shared_ptr<const permissions> perms;  // null: everything allowed
  std::uint32_t account = kGlobalAccount;
};

struct auth_table {
  bool required = false;
  bool nkeys = false;  // some user has an nkey: INFO carries a nonce to sign
  bool verify_and_map = false;  // tls.verify_and_map: a certificate name is the user, no password
  std::string token;
  std::unordered_map<std::string, std::shared_ptr<const user_entry>> by_user;
  std::unordered_map<std::string, std::shared_ptr<const user_entry>> by_nkey;
  std::string no_auth_user;
  std::vector<account_rules> accounts;  // [0] is $G; more only with an accounts block
  std::uint32_t system_account = kGlobalAccount;  // $G: none (no_system_account)
  bool global_only = true;  // no accounts block: $G publishes skip the account forwards
};

struct auth_outcome {
  bool ok = false;
  std::shared_ptr<const user_entry> user;  // null for token auth and no auth
};

// True when the options ask clients to authenticate.
bool auth_configured(const server_options& o);
// True when a reload changes who may connect or what they may do.
bool auth_options_changed(const server_options& a, const server_options& b);
std::shared_ptr<const auth_table> build_auth_table(const server_options& o);

// Compares a configured password or token with the presented one: bcrypt when `stored` is a
// bcrypt hash ($2a$, $2b$, $2y$), else a constant-time comparison.
bool password_matches(const std::string& stored, const std::string& given);
bool is_bcrypt_hash(std::string_view s);
// `check_password(stored, given)` lets the caller cache bcrypt verifications; `verify_nkey`
// checks `sig` over the nonce for a public nkey.
using password_checker = std::function<bool(const std::string& stored, const std::string& given)>;
using nkey_verifier = std::function<bool(const std::string& nkey, const std::string& sig)>;
auth_outcome authenticate(const auth_table& t, const connect_credentials& c, const password_checker& check_password,
                          const nkey_verifier& verify_nkey);

// Permission checks (sublist semantics: a wildcard in `subject` matches only the same wildcard
// or a broader one in a rule).
bool publish_allowed(const permissions& p, std::string_view subject);
bool subscribe_allowed(const permissions& p, std::string_view subject, std::string_view queue);
// A message on `subject` reaching a wildcard subscription whose narrower part is denied.
bool delivery_denied(const permissions& p, std::string_view subject);

// nats-server's -ERR texts (Go's %q around the subject).
std::string publish_violation(std::string_view subject);
std::string subscribe_violation(std::string_view subject, std::string_view queue);
std::string subscribe_revoked(std::string_view subject, std::string_view sid);

// Dynamic response grants of one connection (allow_responses): reply subjects of messages
// delivered to it that it may answer although its publish rules do not allow them.
class response_grants {
 public:
  // A delivery carried `reply`: grant it (restarting its count and clock).
  void grant(std::string_view reply, std::int64_t now_ms, const response_permission& rp);
  // A publish to `subject`: true (and counted) when a live grant allows it.
  bool use(std::string_view subject, std::int64_t now_ms, const response_permission& rp);
  std::size_t size() const { return _grants.size(); }

 private:
  struct entry {
    std::int64_t granted_ms = 0;
    std::int64_t used = 0;
  };
  void prune(std::int64_t now_ms, const response_permission& rp);
  std::unordered_map<std::string, entry> _grants;
  static constexpr std::size_t kPruneAbove = 4096;  // nats-server's replyPermLimit
};

}  // namespace core
