#pragma once
// The JSON body of a JetStream advisory or event, for every publisher of them (streams,
// consumers, and their replicated leaders).
#include <cstdint>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace js {

using ojson = nlohmann::ordered_json;

// {type,id,timestamp,<body>,domain}; a short type is an advisory's ("nak" ->
// io.nats.jetstream.advisory.v1.nak); the id is random, the timestamp `now_ns` in RFC 3339.
std::string event_json(std::string_view type, const ojson& body, std::string_view domain, std::int64_t now_ns);

}  // namespace js
