#pragma once
// An account without JetStream on a server with JetStream: its $JS.API requests get
// nats-server's answer (503 10039 "JetStream not enabled for account", in the response type
// of the request, with the type's empty page fields), or none where nats-server gives none.
#include <optional>
#include <string_view>

#include <nlohmann/json.hpp>

namespace js {

// The reply to a request on `subject` ("$JS.API...."); nullopt: no reply (MSG.NEXT,
// DIRECT.GET and subjects nats-server does not answer in such an account).
std::optional<nlohmann::ordered_json> not_enabled_reply(std::string_view subject);

}  // namespace js
