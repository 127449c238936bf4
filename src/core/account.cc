#include "src/core/account.h"

#include <algorithm>

#include <sodium.h>

#include <charconv>

#include "src/core/subject.h"

namespace core {
namespace {

constexpr std::string_view kReplyPrefix = "_R_.";

const unsigned char* reply_key() {
  static const auto* key = [] {
    static unsigned char k[crypto_shorthash_KEYBYTES];
    if (sodium_init() < 0) randombytes_stir();  // idempotent; randombytes works either way
    randombytes_buf(k, sizeof k);
    return k;
  }();
  return key;
}

std::string mac_of(std::uint32_t account, std::int64_t expires_ms, char kind, std::string_view reply) {
  const std::string data =
      std::to_string(account) + "." + std::to_string(expires_ms) + "." + kind + "." + std::string(reply);
  unsigned char out[crypto_shorthash_BYTES];
  crypto_shorthash(out, reinterpret_cast<const unsigned char*>(data.data()), data.size(), reply_key());
  static const char* hex = "0123456789abcdef";
  std::string s;
  for (unsigned char b : out) {
    s.push_back(hex[b >> 4]);
    s.push_back(hex[b & 15]);
  }
  return s;
}

}  // namespace

const std::string& service_reply_prefix() {
  static const std::string prefix = [] {
    static const char* digits = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
    if (sodium_init() < 0) randombytes_stir();
    std::string p(kReplyPrefix);
    for (int i = 0; i < 6; ++i) p.push_back(digits[randombytes_uniform(62)]);
    return p + ".";
  }();
  return prefix;
}

std::string stream_import_subject(const stream_forward& f, std::string_view subject) {
  if (!f.to.empty()) return map_import_subject(f.subject, f.to, subject);
  if (!f.prefix.empty()) return f.prefix + "." + std::string(subject);
  return std::string(subject);
}

bool stream_import_interest(const stream_forward& f, std::string_view subscribed, std::string& exporter_subject) {
  const std::string delivered = f.to.empty() && !f.prefix.empty() ? f.prefix + "." + f.subject
                                : f.to.empty()                   ? f.subject
                                                                 : f.to;
  if (!subjects_overlap(subscribed, delivered)) return false;
  if (f.to.empty() && subject_is_subset(subscribed, delivered)) {
    if (f.prefix.empty()) {
      exporter_subject = std::string(subscribed);
      return true;
    }
    if (subscribed.size() > f.prefix.size() && subscribed.substr(0, f.prefix.size()) == f.prefix &&
        subscribed[f.prefix.size()] == '.') {
      exporter_subject = std::string(subscribed.substr(f.prefix.size() + 1));
      return true;
    }
  }
  exporter_subject = f.subject;
  return true;
}

bool import_mappable(std::string_view from, std::string_view to) {
  auto shape = [](std::string_view s, std::size_t& stars, bool& tail) {
    stars = 0;
    tail = false;
    const auto toks = split_tokens(s);
    for (std::size_t i = 0; i < toks.size(); ++i) {
      if (toks[i] == "*") ++stars;
      if (toks[i] == ">") {
        if (i + 1 != toks.size()) return false;
        tail = true;
      }
    }
    return true;
  };
  std::size_t fs = 0, ts = 0;
  bool ft = false, tt = false;
  return shape(from, fs, ft) && shape(to, ts, tt) && fs == ts && ft == tt;
}

std::string map_import_subject(std::string_view from, std::string_view to, std::string_view subject) {
  // The common literal `to` (every message of a renamed stream import) without splitting.
  if (to.find_first_of("*>") == std::string_view::npos) return std::string(to);
  const auto out_toks = split_tokens(to);
  if (std::none_of(out_toks.begin(), out_toks.end(), [](std::string_view t) { return t == "*" || t == ">"; }))
    return std::string(to);
  // `from` and `to` hold the same wildcards (import_mappable): the subject's tokens under
  // from's `*`s fill to's in order, and what from's `>` took fills its `>`.
  const auto pattern = split_tokens(from);
  const auto toks = split_tokens(subject);
  std::vector<std::string_view> stars;
  std::string tail;
  for (std::size_t i = 0; i < pattern.size() && i < toks.size(); ++i) {
    if (pattern[i] == "*") stars.push_back(toks[i]);
    if (pattern[i] == ">") {
      tail = std::string(subject.substr(std::size_t(toks[i].data() - subject.data())));
      break;
    }
  }
  std::string out;
  std::size_t next_star = 0;
  for (const auto t : out_toks) {
    if (!out.empty()) out += '.';
    if (t == "*" && next_star < stars.size()) out += stars[next_star++];
    else if (t == ">") out += tail;
    else out += t;
  }
  return out;
}

std::string service_import_subject(const service_forward& f, std::string_view subject) {
  if (f.local == f.remote) return std::string(subject);
  return map_import_subject(f.local, f.remote, subject);
}

bool is_service_reply(std::string_view subject) { return subject.substr(0, kReplyPrefix.size()) == kReplyPrefix; }

std::string service_reply(std::uint32_t account, std::string_view reply, std::int64_t now_ms, bool singleton,
                          std::int64_t threshold_ms) {
  const std::int64_t expires = now_ms + threshold_ms;
  const char kind = singleton ? 's' : 'm';
  return service_reply_prefix() + std::to_string(account) + "." + std::to_string(expires) + "." + kind +
         mac_of(account, expires, kind, reply) + "." + std::string(reply);
}

bool parse_service_reply(std::string_view subject, std::int64_t now_ms, service_reply_info& out) {
  const std::string& prefix = service_reply_prefix();
  if (subject.substr(0, prefix.size()) != prefix) return false;  // another server's (or a fake)
  std::string_view rest = subject.substr(prefix.size());
  auto number = [&rest](auto& v) {  // "<digits>." at the front of rest
    const auto dot = rest.find('.');
    if (dot == std::string_view::npos) return false;
    const auto [p, ec] = std::from_chars(rest.data(), rest.data() + dot, v);
    if (ec != std::errc() || p != rest.data() + dot) return false;
    rest.remove_prefix(dot + 1);
    return true;
  };
  if (!number(out.account) || !number(out.expires_ms)) return false;
  const auto dot = rest.find('.');
  if (dot != 17 || dot + 1 >= rest.size() || (rest[0] != 's' && rest[0] != 'm')) return false;
  const char kind = rest[0];
  const std::string_view mac = rest.substr(1, 16);
  out.reply = std::string(rest.substr(dot + 1));
  out.singleton = kind == 's';
  if (sodium_memcmp(mac.data(), mac_of(out.account, out.expires_ms, kind, out.reply).data(), 16) != 0) return false;
  return now_ms <= out.expires_ms;
}

bool response_ledger::pass(std::string_view subject, const service_reply_info& r, bool empty_payload,
                           std::int64_t now_ms) {
  if (!r.singleton && !empty_payload) {  // a stream's ordinary message: only an ended one is refused
    std::lock_guard lk(_mu);
    return _ended.empty() || !_ended.count(std::string(subject));
  }
  std::lock_guard lk(_mu);
  if (now_ms >= _next_prune_ms) {
    std::erase_if(_ended, [now_ms](const auto& e) { return e.second < now_ms; });
    _next_prune_ms = now_ms + 1000;
  }
  return _ended.emplace(std::string(subject), r.expires_ms).second;
}

std::size_t response_ledger::size() const {
  std::lock_guard lk(_mu);
  return _ended.size();
}

}  // namespace core
