#pragma once
// NATS nkeys: ed25519 keys written as base32 with a type prefix and a CRC16 ("U..." public
// user keys, "SU..." user seeds). The server checks that CONNECT's `sig` signs the INFO nonce.
#include <string>
#include <string_view>

namespace core {

// A fresh nonce for INFO: 11 random bytes, base64url without padding (15 characters).
std::string make_nonce();
// True when `public_key` is a valid user nkey and `sig` (base64url or standard base64) is
// its ed25519 signature of `nonce`.
bool nkey_verify(std::string_view public_key, std::string_view nonce, std::string_view sig);
// True when `public_key` decodes as a user nkey ("U...", 56 characters, a good CRC).
bool nkey_is_user_public(std::string_view public_key);

// For tests and tools: a new random user seed, the public key of a seed, and a signature
// (base64url, as clients send it). Empty strings on a malformed seed.
std::string nkey_new_user_seed();
std::string nkey_public_from_seed(std::string_view seed);
std::string nkey_sign(std::string_view seed, std::string_view data);

}  // namespace core
