#include "src/core/account.h"

#include <sodium.h>

#include <charconv>

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

std::string mac_of(std::uint32_t account, std::string_view reply) {
  const std::string data = std::to_string(account) + "." + std::string(reply);
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

std::string stream_import_subject(const stream_forward& f, std::string_view subject) {
  if (!f.to.empty()) return f.to;
  if (!f.prefix.empty()) return f.prefix + "." + std::string(subject);
  return std::string(subject);
}

std::string service_import_subject(const service_forward& f, std::string_view subject) {
  return f.local == f.remote ? std::string(subject) : f.remote;
}

bool is_service_reply(std::string_view subject) { return subject.substr(0, kReplyPrefix.size()) == kReplyPrefix; }

std::string service_reply(std::uint32_t account, std::string_view reply) {
  return std::string(kReplyPrefix) + std::to_string(account) + "." + mac_of(account, reply) + "." + std::string(reply);
}

bool parse_service_reply(std::string_view subject, std::uint32_t& account, std::string& reply) {
  if (!is_service_reply(subject)) return false;
  std::string_view rest = subject.substr(kReplyPrefix.size());
  const auto dot1 = rest.find('.');
  if (dot1 == std::string_view::npos) return false;
  const auto [p, ec] = std::from_chars(rest.data(), rest.data() + dot1, account);
  if (ec != std::errc() || p != rest.data() + dot1) return false;
  rest.remove_prefix(dot1 + 1);
  const auto dot2 = rest.find('.');
  if (dot2 == std::string_view::npos || dot2 + 1 >= rest.size()) return false;
  const std::string_view mac = rest.substr(0, dot2);
  reply = std::string(rest.substr(dot2 + 1));
  return mac.size() == 16 && sodium_memcmp(mac.data(), mac_of(account, reply).data(), 16) == 0;
}

}  // namespace core
