#include "src/core/nkey.h"

#include <sodium.h>

#include <cstdint>
#include <optional>
#include <vector>

namespace core {
namespace {

constexpr std::uint8_t kPrefixSeed = 18 << 3;  // 'S'
constexpr std::uint8_t kPrefixUser = 20 << 3;  // 'U'
constexpr const char* kBase32 = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";

void ensure_sodium() {
  static const int once = sodium_init();
  (void)once;
}

std::uint16_t crc16(const std::uint8_t* p, std::size_t n) {  // CRC-16/XMODEM, as nkeys use
  std::uint16_t crc = 0;
  for (std::size_t i = 0; i < n; ++i) {
    crc ^= std::uint16_t(p[i]) << 8;
    for (int b = 0; b < 8; ++b) crc = (crc & 0x8000) ? std::uint16_t((crc << 1) ^ 0x1021) : std::uint16_t(crc << 1);
  }
  return crc;
}

std::string base32_encode(const std::vector<std::uint8_t>& in) {
  std::string out;
  std::uint32_t buf = 0;
  int bits = 0;
  for (std::uint8_t b : in) {
    buf = (buf << 8) | b;
    bits += 8;
    while (bits >= 5) {
      out.push_back(kBase32[(buf >> (bits - 5)) & 31]);
      bits -= 5;
    }
  }
  if (bits > 0) out.push_back(kBase32[(buf << (5 - bits)) & 31]);
  return out;
}

std::optional<std::vector<std::uint8_t>> base32_decode(std::string_view in) {
  std::vector<std::uint8_t> out;
  std::uint32_t buf = 0;
  int bits = 0;
  for (char ch : in) {
    int v;
    if (ch >= 'A' && ch <= 'Z') v = ch - 'A';
    else if (ch >= '2' && ch <= '7') v = ch - '2' + 26;
    else return std::nullopt;
    buf = (buf << 5) | std::uint32_t(v);
    bits += 5;
    if (bits >= 8) {
      out.push_back(std::uint8_t(buf >> (bits - 8)));
      bits -= 8;
    }
  }
  return out;
}

// Decodes and checks the CRC; returns the bytes before it.
std::optional<std::vector<std::uint8_t>> decode_checked(std::string_view text) {
  auto raw = base32_decode(text);
  if (!raw || raw->size() < 3) return std::nullopt;
  const std::size_t n = raw->size() - 2;
  const std::uint16_t want = std::uint16_t((*raw)[n] | ((*raw)[n + 1] << 8));
  if (crc16(raw->data(), n) != want) return std::nullopt;
  raw->resize(n);
  return raw;
}

std::string encode_checked(std::vector<std::uint8_t> raw) {
  const std::uint16_t crc = crc16(raw.data(), raw.size());
  raw.push_back(std::uint8_t(crc & 0xff));
  raw.push_back(std::uint8_t(crc >> 8));
  return base32_encode(raw);
}

// The 32-byte ed25519 seed of a user seed ("SU...").
std::optional<std::vector<std::uint8_t>> user_seed_bytes(std::string_view seed) {
  auto raw = decode_checked(seed);
  if (!raw || raw->size() != 2 + crypto_sign_SEEDBYTES) return std::nullopt;
  const std::uint8_t b1 = (*raw)[0] & 248;
  const std::uint8_t b2 = std::uint8_t((((*raw)[0] & 7) << 5) | (((*raw)[1] & 248) >> 3));
  if (b1 != kPrefixSeed || b2 != kPrefixUser) return std::nullopt;
  return std::vector<std::uint8_t>(raw->begin() + 2, raw->end());
}

std::string to_base64url(const unsigned char* p, std::size_t n) {
  std::string out(sodium_base64_encoded_len(n, sodium_base64_VARIANT_URLSAFE_NO_PADDING), '\0');
  sodium_bin2base64(out.data(), out.size(), p, n, sodium_base64_VARIANT_URLSAFE_NO_PADDING);
  out.resize(out.size() - 1);  // the terminating NUL
  return out;
}

}  // namespace

std::string make_nonce() {
  ensure_sodium();
  unsigned char raw[11];
  randombytes_buf(raw, sizeof raw);
  return to_base64url(raw, sizeof raw);
}

bool nkey_verify(std::string_view public_key, std::string_view nonce, std::string_view sig) {
  ensure_sodium();
  auto raw = decode_checked(public_key);
  if (!raw || raw->size() != 1 + crypto_sign_PUBLICKEYBYTES || (*raw)[0] != kPrefixUser) return false;
  unsigned char sig_bin[crypto_sign_BYTES];
  std::size_t len = 0;
  const std::string s(sig);
  bool decoded = false;
  for (int variant : {sodium_base64_VARIANT_URLSAFE_NO_PADDING, sodium_base64_VARIANT_ORIGINAL,
                      sodium_base64_VARIANT_URLSAFE, sodium_base64_VARIANT_ORIGINAL_NO_PADDING}) {
    if (sodium_base642bin(sig_bin, sizeof sig_bin, s.data(), s.size(), nullptr, &len, nullptr, variant) == 0 &&
        len == sizeof sig_bin) {
      decoded = true;
      break;
    }
  }
  if (!decoded) return false;
  return crypto_sign_verify_detached(sig_bin, reinterpret_cast<const unsigned char*>(nonce.data()), nonce.size(),
                                     raw->data() + 1) == 0;
}

bool nkey_is_user_public(std::string_view public_key) {
  auto raw = decode_checked(public_key);
  return raw && raw->size() == 1 + crypto_sign_PUBLICKEYBYTES && (*raw)[0] == kPrefixUser;
}

std::string nkey_new_user_seed() {
  ensure_sodium();
  std::vector<std::uint8_t> raw(2 + crypto_sign_SEEDBYTES);
  raw[0] = std::uint8_t(kPrefixSeed | (kPrefixUser >> 5));
  raw[1] = std::uint8_t((kPrefixUser & 31) << 3);
  randombytes_buf(raw.data() + 2, crypto_sign_SEEDBYTES);
  return encode_checked(std::move(raw));
}

std::string nkey_public_from_seed(std::string_view seed) {
  ensure_sodium();
  auto s = user_seed_bytes(seed);
  if (!s) return {};
  unsigned char pk[crypto_sign_PUBLICKEYBYTES], sk[crypto_sign_SECRETKEYBYTES];
  crypto_sign_seed_keypair(pk, sk, s->data());
  sodium_memzero(sk, sizeof sk);
  std::vector<std::uint8_t> raw{kPrefixUser};
  raw.insert(raw.end(), pk, pk + sizeof pk);
  return encode_checked(std::move(raw));
}

std::string nkey_sign(std::string_view seed, std::string_view data) {
  ensure_sodium();
  auto s = user_seed_bytes(seed);
  if (!s) return {};
  unsigned char pk[crypto_sign_PUBLICKEYBYTES], sk[crypto_sign_SECRETKEYBYTES], sig[crypto_sign_BYTES];
  crypto_sign_seed_keypair(pk, sk, s->data());
  crypto_sign_detached(sig, nullptr, reinterpret_cast<const unsigned char*>(data.data()), data.size(), sk);
  sodium_memzero(sk, sizeof sk);
  return to_base64url(sig, sizeof sig);
}

}  // namespace core
