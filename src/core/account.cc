#include "src/core/account.h"

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

std::string mac_of(std::uint32_t account, std::int64_t issued_s, std::string_view reply) {
  const std::string data = std::to_string(account) + "." + std::to_string(issued_s) + "." + std::string(reply);
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
  if (!f.to.empty()) return f.to;
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

std::string service_import_subject(const service_forward& f, std::string_view subject) {
  return f.local == f.remote ? std::string(subject) : f.remote;
}

bool is_service_reply(std::string_view subject) { return subject.substr(0, kReplyPrefix.size()) == kReplyPrefix; }

std::string service_reply(std::uint32_t account, std::string_view reply, std::int64_t now_s) {
  return service_reply_prefix() + std::to_string(account) + "." + std::to_string(now_s) + "." +
         mac_of(account, now_s, reply) + "." + std::string(reply);
}

bool parse_service_reply(std::string_view subject, std::int64_t now_s, std::uint32_t& account, std::string& reply) {
  const std::string& prefix = service_reply_prefix();
  if (subject.substr(0, prefix.size()) != prefix) return false;  // another server's (or a fake)
  std::string_view rest = subject.substr(prefix.size());
  auto number = [&rest](auto& out) {  // "<digits>." at the front of rest
    const auto dot = rest.find('.');
    if (dot == std::string_view::npos) return false;
    const auto [p, ec] = std::from_chars(rest.data(), rest.data() + dot, out);
    if (ec != std::errc() || p != rest.data() + dot) return false;
    rest.remove_prefix(dot + 1);
    return true;
  };
  std::int64_t issued = 0;
  if (!number(account) || !number(issued)) return false;
  const auto dot = rest.find('.');
  if (dot == std::string_view::npos || dot + 1 >= rest.size()) return false;
  const std::string_view mac = rest.substr(0, dot);
  reply = std::string(rest.substr(dot + 1));
  if (mac.size() != 16 || sodium_memcmp(mac.data(), mac_of(account, issued, reply).data(), 16) != 0) return false;
  return now_s >= issued - 5 && now_s - issued <= kServiceReplyTtlS;  // 5 s of clock steps forgiven
}

}  // namespace core
