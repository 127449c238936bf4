#pragma once
// What the HTTP monitor's endpoints share: their query options read as nats-server reads them
// (Go's strconv spellings and its 400 texts) and the replies they answer with.
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "src/core/monitor.h"

namespace core {

// Go's strconv.ParseBool spellings; nullopt for anything else.
std::optional<bool> go_bool(const std::string& v);
// The option is there and true (or "detail", connz's subs=detail).
bool truthy(const http_query& q, const char* key);
// Every boolean option in `keys` must parse (as nats-server, which answers 400 otherwise);
// `also_allowed` is one more accepted value. False with `err` set.
bool bool_args_ok(const http_query& q, std::initializer_list<const char*> keys, http_reply& err,
                  const char* also_allowed = nullptr);
// Go's strconv.Atoi-style option; false with `err` set when malformed, `out` kept when absent.
bool int_arg(const http_query& q, const char* key, std::int64_t& out, http_reply& err);

http_reply json_reply(const nlohmann::ordered_json& j);
http_reply bad_request(std::string text);

}  // namespace core
