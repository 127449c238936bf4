// The dispatcher's authentication and account side: CONNECT credentials against the live
// auth table, re-authorization of connected clients when a reload changes users or
// permissions, and publishing across accounts (stream exports, service imports).
#include <sodium.h>

#include "src/base/log.h"
#include "src/core/dispatcher.h"
#include "src/core/nkey.h"
#include "src/core/subject.h"
#include "src/proto/writer.h"

namespace core {

auth_outcome dispatcher::authenticate_client(const client& c) {
  connect_credentials cr{c.auth_user, c.auth_pass, c.auth_token, c.auth_nkey, c.auth_sig, {}};
  if (_live->auth->verify_and_map) cr.tls_names = _transport->tls_peer_names(c.handle);
  return authenticate(
      *_live->auth, cr, [this](const std::string& stored, const std::string& given) { return password_ok(stored, given); },
      [&c](const std::string& nkey, const std::string& sig) { return nkey_verify(nkey, c.nonce, sig); });
}

bool dispatcher::password_ok(const std::string& stored, const std::string& given) {
  if (!is_bcrypt_hash(stored)) return password_matches(stored, given);
  unsigned char digest[crypto_hash_sha256_BYTES];
  crypto_hash_sha256_state st;
  crypto_hash_sha256_init(&st);
  crypto_hash_sha256_update(&st, reinterpret_cast<const unsigned char*>(stored.data()), stored.size() + 1);
  crypto_hash_sha256_update(&st, reinterpret_cast<const unsigned char*>(given.data()), given.size());
  crypto_hash_sha256_final(&st, digest);
  std::string key(reinterpret_cast<const char*>(digest), sizeof digest);
  if (_bcrypt_ok.count(key)) return true;
  if (!password_matches(stored, given)) return false;
  if (_bcrypt_ok.size() >= 4096) _bcrypt_ok.clear();
  _bcrypt_ok.insert(std::move(key));
  return true;
}

void dispatcher::reauthorize_clients() {
  std::vector<client*> rejected, moved;
  for (auto& [h, cp] : _clients) {
    client& c = *cp;
    if (!c.connected || c.closing || c.route) continue;  // routes are not users
    if (!_live->auth_required) {  // no users any more: everyone is in the global account
      if (c.account != kGlobalAccount) {
        moved.push_back(&c);
        continue;
      }
      c.auth = nullptr;
      c.perms = nullptr;
      continue;
    }
    const auth_outcome a = authenticate_client(c);
    if (!a.ok) {
      rejected.push_back(&c);
      continue;
    }
    if ((a.user ? a.user->account : kGlobalAccount) != c.account) {
      moved.push_back(&c);  // its user is in another account now: closed, as nats-server
      continue;
    }
    c.auth = a.user;
    c.perms = a.user ? a.user->perms.get() : nullptr;
    if (!c.perms) continue;
    std::vector<std::pair<std::string, std::string>> revoked;  // sid, subject
    for (const auto& [sid, s] : c.subs)
      if (!subscribe_allowed(*c.perms, s->subject, s->queue)) revoked.emplace_back(sid, s->subject);
    for (const auto& [sid, subject] : revoked) {
      remove_sub(c, sid, true);
      send_err(c, subscribe_revoked(subject, sid));
      PG_INFO("Removed sub \"{}\" (sid \"{}\") for User \"{}\" - not authorized", subject, sid, c.auth->name);
    }
  }
  for (client* c : moved) {
    PG_INFO("{}:{} - cid:{} - account changed by config reload", c->peer_ip, c->peer_port, c->cid);
    close_client(*c, {});
  }
  for (client* c : rejected) {
    // As nats-server: a client whose user no longer exists is closed silently (it "moved
    // account"); one whose credentials stopped matching gets an Authorization Violation.
    if (c->auth && !_live->auth->by_user.count(c->auth->name) && !_live->auth->by_nkey.count(c->auth->name)) {
      PG_INFO("{}:{} - cid:{} - user \"{}\" removed by config reload", c->peer_ip, c->peer_port, c->cid, c->auth->name);
      close_client(*c, {});
      continue;
    }
    PG_INFO("{}:{} - cid:{} - Authorization Violation after config reload", c->peer_ip, c->peer_port, c->cid);
    close_client(*c, proto::err_text::auth_violation);
  }
}

sublist& dispatcher::subs_for(std::uint32_t account) {
  if (account == kGlobalAccount) return _subs;
  if (_account_subs.size() <= account) _account_subs.resize(account + 1);
  auto& s = _account_subs[account];
  if (!s) {
    s = std::make_unique<sublist>();
    // Shard 0's copy holds every subscription: its system account's changes wake the system
    // account's worker (which account that is may move with a reload, so asked each time).
    if (_index == 0)
      s->on_change([this, account] {
        if (_live && _live->auth->system_account == account) _srv.sys_wake.interest_changed();
      });
  }
  return *s;
}

void dispatcher::publish_in_account(client& from, std::string_view subject, std::string_view reply,
                                    std::string_view headers, std::string_view payload) {
  const auto& accounts = _live->auth->accounts;
  if (from.account >= accounts.size()) return;
  const std::int64_t now_ms = _loop.clk().wall_ns() / base::kMilli;  // its account went away in a reload
  // A response to an imported service travels back to the requester's account only.
  if (service_response(&from, from.account, subject, reply, headers, payload)) return;
  // An import is interest of its own (nats-server subscribes internally for it): a request
  // it carries gets no 503 even when the other account has no subscriber.
  bool imported = false;
  const account_rules& rules = accounts[from.account];
  for (const auto& f : rules.streams_out) {
    if (!subject_matches(f.subject, subject)) continue;
    imported = true;
    _local_only = true;  // other servers import it from the RMSG in this account
    route(f.to_account, &from, stream_import_subject(f, subject), reply, headers, payload, {}, false);
  }
  for (const auto& f : rules.services_out) {
    if (!subject_matches(f.local, subject)) continue;
    imported = true;
    const std::string r =
        reply.empty() ? std::string() : service_reply(from.account, reply, now_ms, f.singleton, f.threshold_ms);
    route(f.to_account, &from, service_import_subject(f, subject), r, headers, payload, {}, false);
  }
  route(from.account, &from, subject, reply, headers, payload, {}, !imported);
}

bool dispatcher::service_response(client* from, std::uint32_t account, std::string_view subject, std::string_view reply,
                                  std::string_view headers, std::string_view payload) {
  if (!is_service_reply(subject)) return false;
  const auto& accounts = _live->auth->accounts;
  const std::int64_t now_ms = _loop.clk().wall_ns() / base::kMilli;
  service_reply_info r;
  if (!parse_service_reply(subject, now_ms, r) || r.account >= accounts.size() || r.account == account) return false;
  // The export's response_type: a Singleton's first response, a stream's up to its empty one.
  if (!_srv.service_replies.pass(subject, r, headers.empty() && payload.empty(), now_ms)) {
    _from_route = nullptr;
    return true;
  }
  route(r.account, from, r.reply, reply, headers, payload, {}, false);
  return true;
}

}  // namespace core
